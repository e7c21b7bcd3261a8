/**
 * Provenance: what a run is (its identity) and what an analysis consumed.
 *
 * - modelFiles / hashModelFiles: the files of a model folder that shape a run's numbers
 *   (the graph, its external data, the tokenizer files) with their sha256;
 * - runIdentity: one sha256 over every setting and input hash of a run (identity.ts lists
 *   them); shards of one extraction and their merged run share it;
 * - analysisProvenance / checkProvenance: an analysis (wanda, cluster, eval, attend)
 *   records the run identity, the samples table and the chunk files it read; report and
 *   compare refuse an analysis whose record does not match the run in front of them;
 * - resolveRunModel: the run's model folder, verified by hash before an analysis uses it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { loadModel, resolveModelFile } from '../onnx/index.js';
import type { AnalysisProvenance, RunManifest, RunReader, ModelFile } from './types.js';

export type { AnalysisProvenance } from './types.js';
import { identity } from './identity.js';
import { readChunkIndex, type ChunkIndex } from './chunks.js';
import { hashFileCached } from './filehash.js';
import { INDEX, SAMPLES } from './layout.js';

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

/** A file of a model folder, before hashing. */
export interface ModelFileRef {
  /** Absolute path. */
  path: string;
  /** Path relative to the model folder (the name recorded). */
  name: string;
  role: ModelFile['role'];
}

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

/** Hash model files (through the file-hash cache); `onBytes` reports progress over all of them. */
export function hashModelFiles(refs: ModelFileRef[], onBytes?: (done: number, total: number) => void): ModelFile[] {
  let total = 0;
  for (const r of refs) total += statSync(r.path).size;
  let before = 0;
  return refs.map((r) => {
    const h = hashFileCached(r.path, { what: r.role === 'graph' ? 'model graph' : r.role === 'data' ? 'external weight data file' : 'tokenizer file', onBytes: onBytes ? (d) => onBytes(before + d, total) : undefined });
    before += h.bytes;
    return { name: r.name, role: r.role, bytes: h.bytes, sha256: h.sha256 };
  });
}

/** sha256 over the items in order: id, text and labels (sorted keys) of every sample. */
export function hashItems(samples: readonly { id: string; text?: string; labels: Record<string, string> }[]): string {
  const h = createHash('sha256');
  for (const s of samples) {
    const labels = Object.keys(s.labels)
      .sort()
      .map((k) => [k, s.labels[k]]);
    h.update(JSON.stringify([s.id, s.text, labels]) + '\n');
  }
  return h.digest('hex');
}

/**
 * The run identity: sha256 over the identity record (identity.ts, without the shard), so
 * that every shard of one extraction, and the merged run, have the same identity.
 */
export function runIdentity(m: RunManifest): string {
  const id = identity(m, { includeShard: false });
  const keys = Object.keys(id).sort();
  return createHash('sha256')
    .update(JSON.stringify(keys.map((k) => [k, id[k]])))
    .digest('hex');
}

/** sha256 over a hook's chunk files (chunk number and sha256 of each, in chunk order). */
export function chunkDigest(index: ChunkIndex, hook: string): string {
  const h = createHash('sha256');
  for (const c of index.chunks) h.update(`${c.chunk} ${c.files[hook]?.sha256 ?? 'none'}\n`);
  return h.digest('hex');
}

/**
 * The provenance record of an analysis of `run`: its identity, its samples table and the
 * chunk files of the capture points it read. `hooks` defaults to the points the reader
 * actually read (readers from openRun track them), else every point of the run.
 */
export function analysisProvenance(run: RunReader, hooks?: string[]): AnalysisProvenance {
  const r = run as RunReader & { consumedHooks?: () => string[]; index?: ChunkIndex };
  const used = hooks ?? (typeof r.consumedHooks === 'function' ? r.consumedHooks() : run.hooks().map((h) => h.name));
  let index: ChunkIndex | null = r.index ?? null;
  if (!index) {
    try {
      index = readChunkIndex(run.dir);
    } catch {
      index = null;
    }
  }
  const chunks: Record<string, string> = {};
  for (const h of [...used].sort()) chunks[h] = index ? chunkDigest(index, h) : 'unknown';
  return {
    run: run.manifest?.model ? (run.manifest.identity ?? runIdentity(run.manifest)) : 'unknown',
    runDir: path.resolve(run.dir),
    samplesSha256: run.manifest?.samplesSha256 ?? null,
    rows: run.samples.length,
    chunks,
  };
}

const short = (h: string | null | undefined) => (typeof h === 'string' ? `${h.slice(0, 12)}…` : String(h));

/**
 * Check that an analysis belongs to the run in `runDir`: same run identity, same samples
 * table, and (when the run still has its chunk index) the same chunk files of every capture
 * point it read. Throws a one-line LobesError naming `file` (the analysis' settings.json)
 * and saying to run `rerun` again otherwise.
 */
export function checkProvenance(runDir: string, manifest: RunManifest, recorded: unknown, what: string, file: string, rerun: string): void {
  const hint = `run ${rerun} on this run again`;
  const p = recorded as Partial<AnalysisProvenance> | undefined;
  if (!p || typeof p !== 'object' || typeof p.run !== 'string') {
    throw new LobesError(`${what} record no run provenance (made by an older lobes, by hand, or from a matrix file), so they cannot be shown as this run's`, { file, hint });
  }
  const id = manifest.identity ?? runIdentity(manifest);
  if (p.run !== id) {
    throw new LobesError(`${what} belong to another run (run identity ${short(p.run)}${p.runDir ? ` of ${p.runDir}` : ''}, this run is ${short(id)})`, { file, hint });
  }
  const samplesFile = path.join(runDir, SAMPLES);
  const nowSamples = existsSync(samplesFile) ? createHash('sha256').update(readFileSync(samplesFile)).digest('hex') : manifest.samplesSha256 ?? null;
  if ((p.samplesSha256 ?? null) !== null && nowSamples !== null && p.samplesSha256 !== nowSamples) {
    throw new LobesError(`${what} were computed from another samples table (samples.jsonl sha256 ${short(p.samplesSha256)}, now ${short(nowSamples)})`, { file, hint });
  }
  if (existsSync(path.join(runDir, INDEX))) {
    const index = readChunkIndex(runDir);
    for (const [hook, digest] of Object.entries(p.chunks ?? {})) {
      if (digest === 'unknown') continue;
      const now = chunkDigest(index, hook);
      if (now !== digest) throw new LobesError(`${what} were computed from other chunk files of ${hook} than the run holds now (re-extracted or edited since)`, { file, hint });
    }
  }
}

/**
 * The run's model folder, checked by hash before an analysis reads its weights: the graph
 * file and every external data file must have the sha256 the manifest records. A relative
 * folder (runs written by older lobes) is tried from the working directory and from the run
 * folder. Throws naming the folder and both hashes when the model is not the run's.
 */
export function resolveRunModel(manifest: RunManifest, runDir: string): string {
  const given = manifest.model.dir;
  const candidates = path.isAbsolute(given) ? [given] : [...new Set([path.resolve(given), path.resolve(runDir, given)])];
  const problems: string[] = [];
  for (const dir of candidates) {
    if (!existsSync(dir)) {
      problems.push(`${dir} does not exist`);
      continue;
    }
    const graph = graphFileOf(dir);
    const got = hashFileCached(graph, { what: 'model graph' }).sha256;
    if (got !== manifest.model.graphSha256) {
      problems.push(`${graph} has sha256 ${short(got)} but the run was extracted from a graph with sha256 ${short(manifest.model.graphSha256)}`);
      continue;
    }
    const base = statSync(dir).isDirectory() ? dir : path.dirname(graph);
    for (const f of manifest.model.files ?? []) {
      if (f.role !== 'data') continue;
      const p = path.resolve(base, f.name);
      const h = existsSync(p) ? hashFileCached(p, { what: 'external weight data file' }).sha256 : null;
      if (h !== f.sha256) {
        throw new LobesError(`the model's weight data file ${f.name} ${h ? `has sha256 ${short(h)}` : 'is missing'}; the run was extracted with sha256 ${short(f.sha256)}`, {
          file: p,
          hint: 'restore the model the run was extracted with, or pass --weights explicitly',
        });
      }
    }
    return dir;
  }
  throw new LobesError(`the run's model is not the one it was extracted with: ${problems.join('; ')}`, {
    file: path.join(runDir, 'manifest.json'),
    hint: 'restore the model folder the run was extracted with, or pass --weights explicitly',
  });
}
