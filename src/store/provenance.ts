/**
 * Provenance: what a run is (its identity) and what an analysis consumed.
 *
 * - hashModelFiles: the sha256 of the files of a model folder that shape a run's numbers
 *   (the graph, its external data, the tokenizer files; listed by src/runtime/modelfiles.ts);
 * - runIdentity: one sha256 over every setting and input hash of a run (identity.ts lists
 *   them); shards of one extraction and their merged run share it;
 * - analysisProvenance / checkProvenance: an analysis (wanda, cluster, eval, attend)
 *   records the run identity, the samples table and the chunk files it read; report and
 *   compare refuse an analysis whose record does not match the run in front of them.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import type { AnalysisProvenance, RunManifest, RunReader, ModelFile } from './types.js';

export type { AnalysisProvenance } from './types.js';

/** A file of a model folder, before hashing. */
export interface ModelFileRef {
  /** Absolute path. */
  path: string;
  /** Path relative to the model folder (the name recorded). */
  name: string;
  role: ModelFile['role'];
}

import { identity } from './identity.js';
import { readChunkIndex, type ChunkIndex } from './chunks.js';
import { hashFileCached } from './filehash.js';
import { INDEX, SAMPLES } from './layout.js';
import { overlaySha256 } from './labels.js';

/** Hash model files (through the file-hash cache); `onBytes` reports progress over all of them. */
export function hashModelFiles(refs: ModelFileRef[], onBytes?: (done: number, total: number) => void): ModelFile[] {
  let total = 0;
  for (const r of refs) total += statSync(r.path).size;
  let before = 0;
  return refs.map((r) => {
    const h = hashFileCached(r.path, {
      what: r.role === 'graph' ? 'model graph' : r.role === 'data' ? 'external weight data file' : 'tokenizer file',
      onBytes: onBytes ? (d) => onBytes(before + d, total) : undefined,
    });
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
  const r = run as RunReader & { consumedHooks?: () => string[]; consumedOverlayHashes?: () => Record<string, string>;
    index?: ChunkIndex };
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
    ...(typeof r.consumedOverlayHashes === 'function' && Object.keys(r.consumedOverlayHashes()).length
      ? { overlays: r.consumedOverlayHashes() }
      : {}),
  };
}

const short = (h: string | null | undefined) => (typeof h === 'string' ? `${h.slice(0, 12)}…` : String(h));

/**
 * Check that an analysis belongs to the run in `runDir`: same run identity, same samples
 * table, and (when the run still has its chunk index) the same chunk files of every capture
 * point it read. Throws a one-line LobesError naming `file` (the analysis' settings.json)
 * and saying to run `rerun` again otherwise.
 */
/**
 * An analysis (or a section of the report) does not belong to the run as it is now: another
 * run, another samples table, re-extracted chunks, a changed label overlay. The report leaves
 * such a section out with this one-line reason; library callers may catch it the same way.
 */
export class ProvenanceError extends LobesError {
  constructor(message: string, place: { file?: string; hint?: string }) {
    super(message, { ...place, code: 'E_STALE' });
    this.name = 'ProvenanceError';
  }
}

export function checkProvenance(runDir: string, manifest: RunManifest, recorded: unknown, what: string, file: string,
  rerun: string): void
{
  const hint = `run ${rerun} on this run again`;
  const p = recorded as Partial<AnalysisProvenance> | undefined;
  if (!p || typeof p !== 'object' || typeof p.run !== 'string') {
    throw new ProvenanceError(
      `${what} record no run provenance (made by an older lobes, by hand, or from a matrix file), so they cannot be shown as this run's`,
      { file, hint },
    );
  }
  const id = manifest.identity ?? runIdentity(manifest);
  if (p.run !== id) {
    throw new ProvenanceError(
      `${what} belong to another run (run identity ${short(p.run)}${p.runDir ? ` of ${p.runDir}` : ''}, this run is ${
        short(id)
      })`,
      { file, hint },
    );
  }
  const samplesFile = path.join(runDir, SAMPLES);
  const nowSamples = existsSync(samplesFile)
    ? createHash('sha256').update(readFileSync(samplesFile)).digest('hex')
    : manifest.samplesSha256 ?? null;
  if ((p.samplesSha256 ?? null) !== null && nowSamples !== null && p.samplesSha256 !== nowSamples) {
    throw new ProvenanceError(
      `${what} were computed from another samples table (samples.jsonl sha256 ${short(p.samplesSha256)}, now ${
        short(nowSamples)
      })`,
      { file, hint },
    );
  }
  if (existsSync(path.join(runDir, INDEX))) {
    const index = readChunkIndex(runDir);
    for (const [hook, digest] of Object.entries(p.chunks ?? {})) {
      if (digest === 'unknown') continue;
      const now = chunkDigest(index, hook);
      if (now !== digest)
        throw new ProvenanceError(
          `${what} were computed from other chunk files of ${hook} than the run holds now (re-extracted or edited since)`,
          { file, hint },
        );
    }
  }
  for (const [axis, sha] of Object.entries(p.overlays ?? {})) {
    const now = overlaySha256(runDir, axis);
    if (now !== sha) {
      throw new ProvenanceError(
        `${what} are stale: they grouped by the label overlay ${JSON.stringify(axis)}, which ${
          now === null ? 'is gone' : 'has changed since (lobes eval label was run again)'
        }`,
        { file, hint },
      );
    }
  }
}

/** What names a model across commands: its graph, and the GGUF it was converted from, if any. */
export interface ModelRef {
  graphSha256?: string | null;
  /** sha256 over every model file (graph, weights, tokenizer), where recorded (eval, attend). */
  filesSha256?: string | null;
  /** Every model file with its sha256 (a run's manifest); filesSha256 is computed from it when not recorded. */
  files?: readonly Pick<ModelFile, 'name' | 'sha256'>[] | null;
  source?: { size?: number; headerSha256?: string; identity?: string } | null;
  /** Set when the model is a random-weights control of the model `source` names (extract and eval --control random). */
  control?: { kind: string; seed: number; version?: number } | null;
}

/** One sha256 over a model's files, names and hashes in their recorded order (what eval and attend record as filesSha256). */
export function filesSha256(files: readonly Pick<ModelFile, 'name' | 'sha256'>[]): string {
  return createHash('sha256').update(JSON.stringify(files.map((f) => [f.name, f.sha256]))).digest('hex');
}

/** A model record's control as one string ('none' for a trained model): kind, seed and version of the draw (absent version: 1). */
export function controlKey(c: { kind: string; seed: number; version?: number } | null | undefined): string {
  return c ? `${c.kind} seed ${c.seed} v${c.version ?? 1}` : 'none';
}

/**
 * Whether two records name the same model, by content:
 * - a random-weights control (model.control) is another model than the trained one, and than a
 *   control of another seed or draw version;
 * - conversions of a GGUF are compared by their conversion identity (the GGUF's sha256, dtype and
 *   weight storage, not the layout) where both recorded one: extract, eval and attend may convert
 *   one GGUF into different layouts, and a modified copy of the GGUF is another model even when
 *   its converted graph is byte-identical;
 * - otherwise the same graph with the same weight and tokenizer files (filesSha256, or the files
 *   of a run's manifest), where both records hold them;
 * - records of older lobes without either: the GGUF's size and header bytes.
 */
export function sameModel(a: ModelRef | null | undefined, b: ModelRef | null | undefined): boolean {
  if (!a || !b) return false;
  if (controlKey(a.control) !== controlKey(b.control)) return false;
  const x = a.source;
  const y = b.source;
  if (x?.identity && y?.identity) return x.identity === y.identity;
  if (a.graphSha256 && a.graphSha256 === b.graphSha256) {
    const fa = a.filesSha256 ?? (a.files?.length ? filesSha256(a.files) : null);
    const fb = b.filesSha256 ?? (b.files?.length ? filesSha256(b.files) : null);
    return !(fa && fb && fa !== fb);
  }
  return !!x && !!y && x.size !== undefined && x.size === y.size && !!x.headerSha256 &&
    x.headerSha256 === y.headerSha256;
}
