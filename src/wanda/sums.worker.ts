/**
 * Worker thread for the permutation null: the group sums of x² of one capture point for a
 * batch of labellings (groupSquareSums), reading the capture point from the run directory
 * itself (verified reads, like the main thread's reader), and the pooled maps of the
 * matrices it feeds (poolHook); or the whole null of one capture point (hookNull,
 * src/wanda/hooknull.ts), or the random-placement null of one set. One job at a time.
 */
import { parentPort } from 'node:worker_threads';
import { openRun } from '../store/index.js';
import { groupSquareSums, poolHook, runSource, type ActivationSource, type PoolMatrix } from './stats.js';
import { hookNull, type HookNullJob } from './hooknull.js';
import { placementNull } from './placement.js';
import type { PlacementJob } from './sumpool.js';
import { createSimd, type SimdKernel } from './simd.js';
import { LobesError } from '../util/errors.js';

interface Job {
  id: number;
  runDir: string;
  n: number;
  kind: 'pooled' | 'hook' | 'placement';
  /** kind 'placement': the random-placement null of one set. */
  placement?: PlacementJob;
  /** kind 'hook': the whole null of one capture point. */
  job?: HookNullJob;
  hook: string;
  labelings: Int32Array[];
  counts: number[];
  mats: PoolMatrix[];
  rb: number;
  cb: number;
}

const sources = new Map<string, Promise<ActivationSource>>();
/** The group sums' SIMD memory, reused by every capture point this thread does. */
let kernel: SimdKernel | null | undefined;

parentPort!.on('message', (job: Job) => {
  void run(job);
});
parentPort!.postMessage({ ready: true });

async function run(job: Job): Promise<void> {
  try {
    if (job.kind === 'placement') {
      const p = job.placement!;
      const res = placementNull(p.counts, p.matrices, p.R, p.seed);
      parentPort!.postMessage({ id: job.id, result: res }, [res.density.buffer as ArrayBuffer,
        res.components.buffer as ArrayBuffer]);
      return;
    }
    let src = sources.get(job.runDir);
    if (!src) {
      src = openRun(job.runDir).then((r) => runSource(r));
      sources.set(job.runDir, src);
    }
    const s = await src;
    if (s.n !== job.n)
      throw new LobesError(`the run has ${s.n} samples in this thread, ${job.n} in the analysis`, { file: job.runDir,
        hint: 'the run changed while it was analysed; run the analysis again' });
    if (job.kind === 'hook') {
      kernel ??= createSimd();
      const res = await hookNull(s, job.job!, kernel);
      parentPort!.postMessage({ id: job.id, result: res },
        [res.counts, ...res.observed.flat()].map((x) => x.buffer as ArrayBuffer));
      return;
    }
    const sums = await groupSquareSums(s, job.hook, job.labelings, job.counts.length);
    const out = poolHook(sums, s.dim(job.hook)!, job.counts, job.mats, job.rb, job.cb);
    parentPort!.postMessage({ id: job.id, result: out },
      [...out.pooled.flat(2), ...out.scalers].map((x) => x.buffer as ArrayBuffer));
  } catch (e: any) {
    parentPort!.postMessage({ id: job.id,
      error: { message: String(e?.message ?? e), lobes: e instanceof LobesError, exitCode: e?.exitCode ?? 1 } });
  }
}
