/**
 * `lobes eval merge`: join the complete shard folders of one evaluation into one folder,
 * after proving they are the same evaluation (every identity setting but the shard) and
 * cover every chunk exactly once. The records are the shards' records in shard order, so the
 * merged records.jsonl is the file a single unsharded evaluation writes.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { makeDirs, writeFileAtomicSync } from '../util/io.js';
import { isEmptyOrMissing } from '../store/writer.js';
import { chunkCount } from '../store/layout.js';
import { concatAtomic, EPISODES, EVAL_MANIFEST, RECORDS, SUMMARY, readJsonl } from './store.js';
import { evalDifferences, readEvalManifest, readEvalResults, type EvalManifest } from './run.js';
import { summarize } from './summary.js';
import type { EpisodeRecord, EvalRecord } from './types.js';

/** Merge shard evaluation folders into `out`; returns the merged manifest. */
export async function mergeEvals(dirs: string[], out: string, opts: { quiet?: boolean } = {}): Promise<EvalManifest> {
  if (dirs.length === 0) throw new UsageError('nothing to merge');
  if (!isEmptyOrMissing(out)) throw new LobesError('output folder exists and is not empty', { file: out, hint: 'give a new folder' });
  const shards = dirs.map((d) => {
    const m = readEvalManifest(d);
    if (!m.complete) throw new LobesError('shard is incomplete', { file: path.join(d, EVAL_MANIFEST), hint: 'rerun its lobes eval command to finish it' });
    readEvalResults(d); // checks the files against the manifest
    return { dir: d, m };
  });
  const a = shards[0]!;
  for (const b of shards.slice(1)) {
    const diff = evalDifferences(a.m, b.m, a.dir, b.dir, false);
    if (diff.length) throw new LobesError(`these are not shards of one evaluation: ${diff[0]}${diff.length > 1 ? ` (and ${diff.length - 1} more)` : ''}`);
  }
  shards.sort((x, y) => x.m.layout.chunkStart - y.m.layout.chunkStart);
  const total = chunkCount(a.m.dataset.units, a.m.settings.chunkUnits);
  let next = 0;
  for (const s of shards) {
    if (s.m.layout.chunkStart !== next) {
      throw new LobesError(s.m.layout.chunkStart < next ? `shards overlap: ${s.dir} starts at chunk ${s.m.layout.chunkStart}, before chunk ${next}` : `chunks ${next}..${s.m.layout.chunkStart - 1} are in no shard (next shard: ${s.dir})`);
    }
    next = s.m.layout.chunkEnd;
  }
  if (next !== total) throw new LobesError(`chunks ${next}..${total - 1} of ${total} are in no shard`, { hint: 'merge every shard of the evaluation' });
  makeDirs(out);
  const rec = concatAtomic(path.join(out, RECORDS), shards.map((s) => path.join(s.dir, RECORDS)), shards.map((s) => s.m.files!.records));
  const withEp = shards.some((s) => s.m.files!.episodes);
  const ep = withEp
    ? concatAtomic(
        path.join(out, EPISODES),
        shards.filter((s) => s.m.files!.episodes).map((s) => path.join(s.dir, EPISODES)),
        shards.flatMap((s) => (s.m.files!.episodes ? [s.m.files!.episodes] : [])),
      )
    : null;
  const records = readJsonl<EvalRecord>(path.join(out, RECORDS));
  const episodes = ep ? readJsonl<EpisodeRecord>(path.join(out, EPISODES)) : [];
  writeFileAtomicSync(path.join(out, SUMMARY), JSON.stringify(summarize(records, episodes, { bootstrap: a.m.settings.bootstrap, seed: a.m.settings.seed }), null, 2) + '\n');
  const sum = (f: (m: EvalManifest) => number) => shards.reduce((t, s) => t + f(s.m), 0);
  const th = a.m.throughput;
  const merged: EvalManifest = {
    ...a.m,
    createdAt: new Date().toISOString(),
    shard: null,
    layout: { chunkStart: 0, chunkEnd: total, rowStart: 0, rowEnd: a.m.dataset.units, datasetUnits: a.m.dataset.units },
    throughput: Object.fromEntries(Object.keys(th).map((k) => [k, sum((m) => (m.throughput as any)[k])])) as unknown as EvalManifest['throughput'],
    timings: { loadMs: sum((m) => m.timings.loadMs), modelLoadMs: sum((m) => m.timings.modelLoadMs), wallMs: sum((m) => m.timings.wallMs), attempts: sum((m) => m.timings.attempts) },
    complete: true,
    files: { records: rec, episodes: ep, summary: SUMMARY },
  };
  writeFileAtomicSync(path.join(out, EVAL_MANIFEST), JSON.stringify(merged, null, 2) + '\n');
  if (!opts.quiet) process.stderr.write(`eval merge: ${shards.length} shards, ${records.length} records -> ${out}\n`);
  if (!existsSync(path.join(out, RECORDS))) throw new LobesError('merge wrote no records', { file: out });
  return merged;
}
