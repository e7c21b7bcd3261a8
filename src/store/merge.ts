/**
 * Merging shard runs. Shards are contiguous ranges of whole chunks of the same dataset, so
 * the merged run is the shards' chunk files copied (each verified against its sha256 while
 * copied), the samples tables concatenated and renumbered, and one index. The result is
 * byte-identical in its activation files, index and samples table to a single run.
 */
import { realpathSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { RangeFile, writeFileAtomicSync } from '../util/io.js';
import { Progress } from '../util/progress.js';
import { jobIO, type JobIOOptions } from '../util/jobio.js';
import type { RunManifest, SampleRow } from './types.js';
import { ACTIVATIONS, MANIFEST, SAMPLES, chunkCount } from './layout.js';
import { readManifest, writeManifest, readSamples, writeSamples, samplesSha256 } from './manifest.js';
import { ChunkWriter } from './writer.js';
import { withJobFolder, isFreshFolder } from './job.js';
import { readChunkIndex, checkChunkBytes, type ChunkIndex } from './chunks.js';
import { differences } from './identity.js';
import { hashItems, runIdentity } from './provenance.js';

/** Its IO (`io`: the progress and the last line) and the deprecated `quiet` (src/util/jobio.ts). */
export type MergeOptions = JobIOOptions;

interface Shard {
  dir: string;
  manifest: RunManifest;
  index: ChunkIndex;
  samples: SampleRow[];
  rowStart: number;
  rowEnd: number;
}

function describe(s: Shard): string {
  return `${s.dir}${s.manifest.shard ? ` (shard ${s.manifest.shard.index}/${s.manifest.shard.count})` : ''}`;
}

function idsOf(s: Shard, from: number, to: number): string {
  const a = s.samples[from - s.rowStart]?.id;
  const b = s.samples[to - 1 - s.rowStart]?.id;
  return a === undefined ? '' : to - from === 1 ? ` (sample ${a})` : ` (samples ${a} … ${b})`;
}

function loadShard(dir: string): Shard {
  const manifest = readManifest(dir);
  const mfile = path.join(dir, MANIFEST);
  if (!manifest.layout || !manifest.settings)
    throw new LobesError('run has no layout/settings (written by an older lobes)', { file: mfile });
  if (manifest.identity !== undefined && manifest.identity !== runIdentity(manifest)) {
    throw new LobesError('manifest was edited: its run identity does not match the settings and hashes it lists', {
      file: mfile,
      hint: "rerun that shard's extract command in a new folder",
    });
  }
  const index = readChunkIndex(dir);
  const samples = readSamples(dir, manifest.samplesSha256);
  const { rowStart, rowEnd } = manifest.layout;
  const have = index.chunks.reduce((a, c) => a + c.rows, 0);
  if (!manifest.complete || have !== rowEnd - rowStart) {
    throw new LobesError(`shard is incomplete: ${have} of ${rowEnd - rowStart} rows extracted`, { file: mfile,
      hint: 'rerun its lobes extract command to finish it before merging' });
  }
  if (samples.length !== rowEnd - rowStart)
    throw new LobesError(`samples.jsonl has ${samples.length} rows but the shard holds ${rowEnd - rowStart}`, {
      file: path.join(dir, SAMPLES),
    });
  return { dir, manifest, index, samples, rowStart, rowEnd };
}

/** Merge shard runs into `outDir`, proving they are one extraction covering every row once. */
export async function mergeRuns(shardDirs: string[], outDir: string, opts: MergeOptions = {}): Promise<RunManifest> {
  return mergeChecked(shardDirs, outDir, opts);
}

async function mergeChecked(shardDirs: string[], outDir: string, opts: MergeOptions): Promise<RunManifest> {
  const t0 = Date.now();
  if (shardDirs.length === 0) throw new LobesError('no shard runs given');
  const seen = new Map<string, string>();
  for (const d of shardDirs) {
    let real: string;
    try {
      real = realpathSync(d);
    } catch {
      throw new LobesError('shard run folder does not exist', { file: d });
    }
    if (seen.has(real)) throw new LobesError(`shard run is given twice (also as ${seen.get(real)})`, { file: d });
    seen.set(real, d);
  }
  const shards = shardDirs.map(loadShard);
  const first = shards[0];
  for (const s of shards.slice(1)) {
    const diff = differences(first.manifest, s.manifest, first.dir, s.dir, { includeShard: false });
    if (diff.length)
      throw new LobesError(`shards are not the same extraction: ${diff.join('; ')}`, { file: s.dir,
        hint: `merge only shards made by one command with different ${opt('shard')} values` });
  }
  const N = first.manifest.dataset.count;
  const chunkRows = first.manifest.settings!.chunkRows;
  const sorted = shards.filter((s) => s.rowEnd > s.rowStart).sort((a, b) => a.rowStart - b.rowStart);
  // Overlaps.
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1];
    const b = sorted[i];
    if (b.rowStart < a.rowEnd) {
      const to = Math.min(a.rowEnd, b.rowEnd);
      throw new LobesError(
        `shards overlap: ${describe(a)} and ${describe(b)} both hold dataset rows ${b.rowStart}..${to - 1}${
          idsOf(b, b.rowStart, to)
        }`,
        {
          hint: 'each sample must come from exactly one shard',
        },
      );
    }
  }
  // Gaps.
  const gaps: string[] = [];
  let at = 0;
  for (const s of sorted) {
    if (s.rowStart > at) gaps.push(`${at}..${s.rowStart - 1}`);
    at = s.rowEnd;
  }
  if (at < N) gaps.push(`${at}..${N - 1}`);
  if (gaps.length) {
    const counts = new Set(shards.map((s) => s.manifest.shard?.count ?? 1));
    let missing = '';
    if (counts.size === 1) {
      const n = [...counts][0];
      const have = new Set(shards.map((s) => s.manifest.shard?.index ?? 0));
      const miss = [...Array(n).keys()].filter((i) => !have.has(i));
      if (miss.length)
        missing = `; missing shard${miss.length > 1 ? 's' : ''} ${miss.map((i) => `${i}/${n}`).join(', ')}`;
    }
    throw new LobesError(`shards do not cover the dataset: rows ${gaps.join(', ')} of ${N} are in no shard${missing}`, {
      hint: 'give every shard run of the extraction',
    });
  }

  if (!isFreshFolder(outDir))
    throw new LobesError('output folder exists and is not empty', { file: outDir, hint: 'merge into a new folder',
      code: 'E_EXISTS' });
  return withJobFolder(outDir, { command: 'lobes merge', isJob: () => false, what: 'an empty folder' }, () => {
    try {
      return writeMerged(shards, sorted, outDir, N, chunkRows, first, t0, opts);
    } catch (e) {
      // Leave nothing half-written: remove what the merge wrote (the folder was new or empty, and locked).
      for (const f of [MANIFEST, SAMPLES, ACTIVATIONS]) rmSync(path.join(outDir, f), { recursive: true, force: true });
      throw e;
    }
  });
}

function writeMerged(shards: Shard[], sorted: Shard[], outDir: string, N: number, chunkRows: number, first: Shard,
  t0: number, opts: MergeOptions): RunManifest
{
  const rows: SampleRow[] = [];
  for (const s of sorted) for (const r of s.samples) rows.push({ ...r, index: rows.length });
  const ids = new Set<string>();
  for (const r of rows) {
    if (ids.has(r.id)) throw new LobesError(`sample id ${JSON.stringify(r.id)} appears twice across the shards`);
    ids.add(r.id);
  }
  // Together the shards hold every item: their ids, texts and labels must hash to the items sha256.
  if (rows.every((r) => typeof r.text === 'string') && hashItems(rows) !== first.manifest.dataset.itemsSha256) {
    throw new LobesError(
      "the shards' samples tables do not hold the dataset's items (an id, text or label differs from the items sha256 every shard records)",
      {
        hint: `a shard's samples.jsonl was edited: rerun that shard's extract command with ${opt('repair')}`,
      },
    );
  }

  const timings: Record<string, number> = {};
  for (const s of shards) for (const [k, v] of Object.entries(s.manifest.timings)) timings[k] = (timings[k] ?? 0) + v;
  const C = chunkCount(N, chunkRows);
  const manifest: RunManifest = {
    ...first.manifest,
    createdAt: new Date().toISOString(),
    shard: null,
    counts: {
      samples: rows.length,
      truncated: rows.reduce((a, r) => a + (r.truncated ? 1 : 0), 0),
      tokens: rows.reduce((a, r) => a + r.tokens, 0),
    },
    timings,
    complete: false,
    layout: { datasetRows: N, rowStart: 0, rowEnd: N, chunkStart: 0, chunkEnd: C },
    samplesSha256: samplesSha256(rows),
  };
  manifest.identity = runIdentity(manifest);
  writeManifest(outDir, manifest);
  writeSamples(outDir, rows);
  const writer = ChunkWriter.create(outDir, first.index.hooks, chunkRows);
  const total = sorted.reduce((a, s) => a + s.index.chunks.length, 0);
  const io = jobIO(opts);
  const progress = new Progress({ label: 'merge', total, unit: 'chunks', io });
  for (const s of sorted) {
    for (const c of s.index.chunks) {
      for (const h of s.index.hooks) {
        const f = c.files[h.name];
        const src = path.join(s.dir, ACTIVATIONS, f.path);
        const data = readChunk(src, f.bytes);
        try {
          checkChunkBytes(data, src, h, c);
        } catch (e) {
          if (!(e instanceof LobesError)) throw e;
          throw new LobesError(e.message.replace(/ \(rerun the lobes extract.*\)$/, ''), {
            hint: `rerun that shard's extract command with ${opt('repair')}, then merge again`,
          });
        }
        writeFileAtomicSync(path.join(outDir, ACTIVATIONS, f.path), data);
      }
      writer.commit({ chunk: c.chunk, start: c.start, rows: c.rows, files: c.files });
      progress.tick(1);
    }
  }
  manifest.timings = { ...timings, mergeMs: Date.now() - t0 };
  manifest.complete = true;
  writeManifest(outDir, manifest);
  progress.finish(
    `merged ${shards.length} shard${
      shards.length > 1 ? 's' : ''
    }: ${rows.length} samples, ${total} chunks -> ${outDir}`,
  );
  return manifest;
}

/** A shard's chunk file, which must hold exactly the `bytes` its index records. */
function readChunk(file: string, bytes: number): Uint8Array {
  const f = RangeFile.open(file, 'chunk file');
  try {
    if (f.size !== bytes) {
      throw new LobesError(
        `chunk file has ${f.size} bytes but the shard's index records ${bytes} (truncated or overwritten)`,
        {
          file,
          hint: `rerun that shard's extract command with ${opt('repair')}, then merge again`,
        },
      );
    }
    return f.read(0, bytes);
  } finally {
    f.close();
  }
}
