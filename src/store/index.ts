/**
 * The run directory store (format: docs/run-format.md).
 *   openRun(dir)        typed, read-only access for every later stage
 *   verifyRun(dir)      hash every chunk file against the index
 *   mergeRuns(...)      join shard runs into one (used by `lobes merge`)
 *   analysisProvenance(run) / checkProvenance(...)   what an analysis read, and whether
 *                       an analysis belongs to a run (src/store/provenance.ts)
 */
import type { RunReader } from './types.js';
import { openRunDir, type OpenRunOptions } from './reader.js';

export { readChunkIndex, type ChunkIndex, type ChunkEntry, type ChunkFile } from './chunks.js';
export { hashFileCached, hashCacheFile, type FileHash } from './filehash.js';
export { differences } from './identity.js';
export { parseShard, shardRange, expandOut, chunkRelPath, FORMAT_VERSION, type ShardSpec,
  type ShardRange } from './layout.js';
export { readManifest, readSamples } from './manifest.js';
export { mergeRuns, type MergeOptions } from './merge.js';
export { analysisProvenance, checkProvenance, runIdentity, chunkDigest, hashItems, hashModelFiles,
  type AnalysisProvenance, type ModelFileRef } from './provenance.js';
export type { OpenRunOptions } from './reader.js';
export { Run } from './reader.js';

/** Open a finished run directory (or an unfinished one with allowIncomplete). */
export async function openRun(dir: string, opts?: OpenRunOptions): Promise<RunReader> {
  return openRunDir(dir, opts);
}

/** Hash every chunk file of a run against its index; throws naming each bad file. Returns the number of files checked. */
export async function verifyRun(dir: string): Promise<number> {
  const r = await openRunDir(dir, { allowIncomplete: true });
  return r.verify();
}
