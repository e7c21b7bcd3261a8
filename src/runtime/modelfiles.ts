/**
 * The files of a model folder that shape a run's numbers, and the check that a run's model
 * is still the one it was extracted with:
 *
 * - modelFiles: the graph file (the one the capture engine loads), every external data file
 *   it references, and the tokenizer files; hashed by src/store/provenance.ts hashModelFiles
 *   into the run's identity;
 * - resolveRunModel: the run's model folder, verified by hash (graph and external data)
 *   before an analysis reads its weights.
 */
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { loadModel, resolveModelFile } from '../onnx/index.js';
import { hashFileCached } from '../store/filehash.js';
import { manifestPath } from '../store/layout.js';
import { filesSha256, hashModelFiles, type ModelFileRef } from '../store/provenance.js';
import type { ModelFile, RunManifest } from '../store/types.js';
import { tokenizerDir } from './tokenize.js';

const short = (h: string | null | undefined) => (typeof h === 'string' ? `${h.slice(0, 12)}…` : String(h));

/** Tokenizer files hashed into a run's identity when the tokenizer folder has them. */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'added_tokens.json',
  'vocab.json',
  'merges.txt',
  'tokenizer.model',
  'chat_template.jinja',
  'chat_template.json',
];

/** The graph file of a model folder or .onnx file (the same choice the capture engine makes). */
export function graphFileOf(model: string): string {
  return resolveModelFile(model);
}

/**
 * The files that shape a run's numbers: the graph file, every external data file it
 * references (validated by the ONNX loader), and the tokenizer files present in
 * `tokenizerDir`. Names are relative to the model folder.
 */
export function modelFiles(model: string, tokenizerDir: string | null): ModelFileRef[] {
  const graph = path.resolve(graphFileOf(model));
  const base = existsSync(model) && statSync(model).isDirectory() ? path.resolve(model) : path.dirname(graph);
  const rel = (p: string) => path.relative(base, p).split(path.sep).join('/');
  const out: ModelFileRef[] = [{ path: graph, name: rel(graph), role: 'graph' }];
  const data = new Set<string>();
  for (const ref of loadModel(graph).external.values()) data.add(path.resolve(ref.path));
  for (const p of [...data].sort()) out.push({ path: p, name: rel(p), role: 'data' });
  if (tokenizerDir) {
    for (const f of TOKENIZER_FILES) {
      const p = path.resolve(tokenizerDir, f);
      if (existsSync(p)) out.push({ path: p, name: rel(p), role: 'tokenizer' });
    }
  }
  return out;
}

/**
 * A model's identity as lobes eval and attend record it: every file that shapes the numbers
 * (graph, external weights, tokenizer) hashed through the file-hash cache, the graph's sha256,
 * and one sha256 over the files' names and hashes.
 */
export function modelIdentity(model: string): { files: ModelFile[]; graphSha256: string; filesSha256: string } {
  const files = hashModelFiles(modelFiles(model, tokenizerDir(model)));
  const graphSha256 = files.find((f) => f.role === 'graph')!.sha256;
  return { files, graphSha256, filesSha256: filesSha256(files) };
}

/** Where a run's model folder may be: its recorded path; a relative one (older runs) from the working directory and from the run folder. */
export function runModelCandidates(manifest: RunManifest, runDir: string): string[] {
  const given = manifest.model.dir;
  return path.isAbsolute(given) ? [given] : [...new Set([path.resolve(given), path.resolve(runDir, given)])];
}

/**
 * The first recorded model file (of `roles`) that the folder `dir` does not hold with the same
 * sha256 (hashed through the file-hash cache), as a message and the file; null when every one
 * matches. `recorded` is a run's manifest.model.files (names relative to the model folder).
 */
export function modelFolderDifference(dir: string, recorded: readonly ModelFile[],
  roles: readonly ModelFile['role'][] = ['graph', 'data', 'tokenizer']): { file: string; message: string } | null
{
  const base = existsSync(dir) && statSync(dir).isDirectory() ? dir : path.dirname(dir);
  const what = { graph: 'model graph', data: 'weight data file', tokenizer: 'tokenizer file' } as const;
  for (const f of recorded) {
    if (!roles.includes(f.role)) continue;
    const p = path.resolve(base, f.name);
    const h = existsSync(p) ? hashFileCached(p, { what: what[f.role] }).sha256 : null;
    if (h !== f.sha256)
      return { file: p,
        message: `the model's ${what[f.role]} ${f.name} ${
          h ? `has sha256 ${short(h)}` : 'is missing'
        }; the run was extracted with sha256 ${short(f.sha256)}` };
  }
  return null;
}

export interface ResolveRunModelOptions {
  /** The files that must be the run's (default: graph and weight data; add 'tokenizer' when the tokenizer is used). */
  roles?: ModelFile['role'][];
  /** What to do when the model is not the run's, for the message (default: wanda's). */
  hint?: string;
}

/**
 * The run's model folder, checked by hash before an analysis reads it: the graph file, every
 * external data file and (with `roles`) the tokenizer files must have the sha256 the manifest
 * records. A relative folder (runs written by older lobes) is tried from the working directory
 * and from the run folder. Throws naming the file and both hashes when the model is not the run's.
 */
export function resolveRunModel(manifest: RunManifest, runDir: string, opts: ResolveRunModelOptions = {}): string {
  const hint = opts.hint ?? `restore the model the run was extracted with, or name it with ${opt('model')}`;
  const roles = opts.roles ?? ['graph', 'data'];
  const candidates = runModelCandidates(manifest, runDir);
  const problems: string[] = [];
  for (const dir of candidates) {
    if (!existsSync(dir)) {
      problems.push(`${dir} does not exist`);
      continue;
    }
    const graph = graphFileOf(dir);
    const got = hashFileCached(graph, { what: 'model graph' }).sha256;
    if (got !== manifest.model.graphSha256) {
      problems.push(
        `${graph} has sha256 ${short(got)} but the run was extracted from a graph with sha256 ${
          short(manifest.model.graphSha256)
        }`,
      );
      continue;
    }
    const diff = modelFolderDifference(dir, manifest.model.files ?? [], roles);
    if (diff) throw new LobesError(diff.message, { file: diff.file, hint });
    return dir;
  }
  throw new LobesError(`the run's model is not the one it was extracted with: ${problems.join('; ')}`, {
    file: manifestPath(runDir),
    hint,
  });
}
