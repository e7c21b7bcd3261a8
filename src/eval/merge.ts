/**
 * `lobes eval merge`: join the complete shard folders of one evaluation into one folder,
 * after proving they are the same evaluation (every identity setting but the shard) and
 * cover every chunk exactly once. The records are the shards' records in shard order, so the
 * merged records.jsonl is the file a single unsharded evaluation writes.
 */
import { LobesError, UsageError } from '../util/errors.js';
import { chunkCount } from '../store/layout.js';
import { withJobFolder, isFreshFolder } from '../store/job.js';
import { concatAtomic, readVerifiedJsonl, tileShards } from '../store/records.js';
import { SUMMARY, evalFile, readEvalManifest, readEvalResults, writeEvalManifest, writeEvalSummary } from './store.js';
import { evalDifferences } from './run.js';
import type { EvalManifest } from './manifest.js';
import { summarize } from './summary.js';
import type { EpisodeRecord, EvalRecord } from './types.js';
import { jobIO, type JobIOOptions } from '../util/jobio.js';

/** Merge shard evaluation folders into `out`; returns the merged manifest. */
export async function mergeEvals(dirs: string[], out: string, opts: JobIOOptions = {}): Promise<EvalManifest> {
  if (dirs.length === 0) throw new UsageError('nothing to merge');
  if (!isFreshFolder(out))
    throw new LobesError('output folder exists and is not empty', { file: out, hint: 'give a new folder',
      code: 'E_EXISTS' });
  const shards = dirs.map((d) => {
    const m = readEvalManifest(d);
    if (!m.complete)
      throw new LobesError('shard is incomplete', { file: evalFile(d, 'manifest'),
        hint: 'rerun its lobes eval command to finish it' });
    readEvalResults(d); // checks the files against the manifest
    return { dir: d, m };
  });
  const a = shards[0]!;
  for (const b of shards.slice(1)) {
    const diff = evalDifferences(a.m, b.m, a.dir, b.dir, false);
    if (diff.length)
      throw new LobesError(
        `these are not shards of one evaluation: ${diff[0]}${diff.length > 1 ? ` (and ${diff.length - 1} more)` : ''}`,
      );
  }
  const total = chunkCount(a.m.dataset.units, a.m.settings.chunkUnits);
  const tiled = tileShards(shards.map((s) => ({ ...s, layout: s.m.layout })), total, 'the evaluation');
  shards.splice(0, shards.length, ...tiled);
  const merged = await withJobFolder(out, { command: 'lobes eval merge', isJob: () => false, what: 'empty' },
    () => writeMerged(shards, out, total));
  jobIO(opts).log(`eval merge: ${shards.length} shards -> ${out}`);
  return merged;
}

function writeMerged(shards: { dir: string; m: EvalManifest }[], out: string, total: number): EvalManifest {
  const a = shards[0]!;
  const rec = concatAtomic(evalFile(out, 'records'), shards.map((s) => evalFile(s.dir, 'records')),
    shards.map((s) => s.m.files!.records));
  const withEp = shards.some((s) => s.m.files!.episodes);
  const ep = withEp
    ? concatAtomic(
      evalFile(out, 'episodes'),
      shards.filter((s) => s.m.files!.episodes).map((s) => evalFile(s.dir, 'episodes')),
      shards.flatMap((s) => (s.m.files!.episodes ? [s.m.files!.episodes] : [])),
    )
    : null;
  const records = readVerifiedJsonl<EvalRecord>(out, rec, 'the shards');
  const episodes = ep ? readVerifiedJsonl<EpisodeRecord>(out, ep, 'the shards') : [];
  writeEvalSummary(out, summarize(records, episodes, { bootstrap: a.m.settings.bootstrap, seed: a.m.settings.seed }));
  const sum = (f: (m: EvalManifest) => number) => shards.reduce((t, s) => t + f(s.m), 0);
  const th = a.m.throughput;
  const merged: EvalManifest = {
    ...a.m,
    createdAt: new Date().toISOString(),
    shard: null,
    layout: { chunkStart: 0, chunkEnd: total, rowStart: 0, rowEnd: a.m.dataset.units, datasetUnits: a.m.dataset.units },
    throughput: Object.fromEntries(
      Object.keys(th).map((k) => [k, sum((m) => (m.throughput as any)[k])]),
    ) as unknown as EvalManifest['throughput'],
    timings: { loadMs: sum((m) => m.timings.loadMs), modelLoadMs: sum((m) => m.timings.modelLoadMs),
      wallMs: sum((m) => m.timings.wallMs), attempts: sum((m) => m.timings.attempts) },
    complete: true,
    files: { records: rec, episodes: ep, summary: SUMMARY },
  };
  writeEvalManifest(out, merged);
  return merged;
}
