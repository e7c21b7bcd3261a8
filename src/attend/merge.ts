/**
 * `lobes attend merge`: join the complete shard folders of one attend job into one folder,
 * after proving they are the same job (every identity entry but the shard) and cover every
 * chunk exactly once. The items are the shards' items in shard order, so the merged
 * items.jsonl is the file a single unsharded run writes; the summary is computed again over
 * all of them.
 */
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { writeOutputMarker } from '../util/io.js';
import { checkOutputPlace } from '../util/output.js';
import { chunkCount } from '../store/layout.js';
import { withJobFolder, isFreshFolder } from '../store/job.js';
import { concatAtomic, readVerifiedJsonl, tileShards } from '../store/records.js';
import { ITEMS, readAttendResults, writeAttendManifest, writeAttendSummary, type AttendManifest } from './store.js';
import { attendDifferences } from './identity.js';
import { summarize } from './summary.js';
import type { AttendItem } from './types.js';
import { jobIO, type JobIOOptions } from '../util/jobio.js';

/** Merge shard attend folders into `out`; returns the merged manifest. */
export async function mergeAttend(dirs: string[], out: string, opts: JobIOOptions = {}): Promise<AttendManifest> {
  if (dirs.length === 0) throw new UsageError('nothing to merge');
  checkOutputPlace(out, 'output folder');
  if (!isFreshFolder(out))
    throw new LobesError('output folder exists and is not empty', { file: out, hint: 'give a new folder',
      code: 'E_EXISTS' });
  // Each shard complete, its files verified against its attend.json.
  const shards = dirs.map((d) => ({ dir: d, m: readAttendResults(d).manifest }));
  const a = shards[0]!;
  for (const b of shards.slice(1)) {
    const diff = attendDifferences(a.m.identity, b.m.identity, a.dir, b.dir, false);
    if (diff.length)
      throw new LobesError(
        `these are not shards of one attend job: ${diff[0]}${diff.length > 1 ? ` (and ${diff.length - 1} more)` : ''}`,
      );
  }
  const total = chunkCount(a.m.units, a.m.chunkUnits);
  const tiled = tileShards(shards.map((s) => ({ ...s, layout: s.m.layout })), total, 'the attend job');
  shards.splice(0, shards.length, ...tiled);
  const merged = await withJobFolder(out, { command: 'lobes attend merge', isJob: () => false, what: 'empty' },
    () => writeMerged(shards, out, total));
  jobIO(opts).log(`attend merge: ${shards.length} shards -> ${out}`);
  return merged;
}

function writeMerged(shards: { dir: string; m: AttendManifest }[], out: string, total: number): AttendManifest {
  const a = shards[0]!;
  writeOutputMarker(out, 'attend');
  const items = concatAtomic(path.join(out, ITEMS), shards.map((s) => path.join(s.dir, s.m.files!.items.path)),
    shards.map((s) => s.m.files!.items));
  const all = readVerifiedJsonl<AttendItem>(out, items, 'the shards');
  const sum = (f: (m: AttendManifest) => number) => shards.reduce((t, s) => t + f(s.m), 0);
  const merged: AttendManifest = {
    ...a.m,
    createdAt: new Date().toISOString(),
    identity: { ...a.m.identity, '--shard': 'none' },
    shard: null,
    layout: { chunkStart: 0, chunkEnd: total, rowStart: 0, rowEnd: a.m.units },
    timings: { tokenizeMs: sum((m) => m.timings.tokenizeMs), modelLoadMs: sum((m) => m.timings.modelLoadMs),
      computeMs: sum((m) => m.timings.computeMs), wallMs: sum((m) => m.timings.wallMs),
      attempts: sum((m) => m.timings.attempts) },
    complete: true,
  };
  merged.files = { items, summary: writeAttendSummary(out, summarize(all, merged)) };
  writeAttendManifest(out, merged);
  return merged;
}
