/**
 * The group sums of x² (groupSquareSums) and the pooled maps they give (poolHook) of several
 * capture points at once, on worker threads. The permutation null of `lobes wanda` is work
 * proportional to samples × captured values × labellings (at Llama-3.1-8B's shape, 2,000
 * samples and 100 permutations, about 10¹¹ additions) plus the pooling, labellings × groups ×
 * blocks; capture points are independent, so each worker takes one capture point of the
 * current batch of labellings, reads it from the run directory itself and returns its
 * matrices' pooled maps. The numbers are those of the calling thread (same operations, same
 * order).
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../util/worker.js';
import { LobesError } from '../util/errors.js';
import { groupSquareSums, poolHook, type ActivationSource, type PoolMatrix, type HookPooled } from './stats.js';
import { hookNull, type HookNullJob, type HookNullResult } from './hooknull.js';
import { createSimd, type SimdKernel } from './simd.js';
import { placementNull } from './placement.js';
import type { WandaMatrix } from './types.js';

/** One set's random-placement null: R placements of counts[k] blocks in matrix k, from seed. */
export interface PlacementJob {
  counts: Int32Array;
  matrices: WandaMatrix[];
  R: number;
  seed: number;
}

/** Pooled maps per capture point, possibly on worker threads. */
export interface HookPooler {
  /** Threads computing (1 = the calling thread). */
  readonly threads: number;
  /** The pooled maps of `mats` (all fed by `hook`) for each labelling, [labelling][group][matrix], and each labelling's group RMS. */
  pooled(hook: string, labelings: Int32Array[], counts: number[], mats: PoolMatrix[], rb: number,
    cb: number): Promise<HookPooled>;
  /** The whole null of one capture point (src/wanda/hooknull.ts); jobs run one per thread, in the order they are asked for. */
  hookNull(job: HookNullJob): Promise<HookNullResult>;
  /** The random-placement null of one set (placementNull). */
  placement(job: PlacementJob): Promise<{ density: Float64Array; components: Float64Array }>;
  close(): Promise<void>;
}

/**
 * Pooled maps for `src` on `threads` worker threads, or on the calling thread when threads < 2
 * or the source is not a run directory (activations in memory cannot be shared).
 */
export function hookPooler(src: ActivationSource, threads: number): HookPooler {
  const runDir = src.runDir;
  if (threads < 2 || !runDir) {
    // One capture point at a time (each holds a batch of group sums while it runs).
    let last: Promise<unknown> = Promise.resolve();
    let kernel: SimdKernel | null | undefined;
    return {
      threads: 1,
      pooled: async (hook, labelings, counts, mats, rb, cb) =>
        poolHook(await groupSquareSums(src, hook, labelings, counts.length), src.dim(hook)!, counts, mats, rb, cb),
      placement: async (p) => placementNull(p.counts, p.matrices, p.R, p.seed),
      hookNull: (job) => {
        const p = last.then(() => hookNull(src, job, kernel ??= createSimd()));
        last = p.catch(() => {});
        return p;
      },
      close: async () => {
        kernel = null;
      },
    };
  }

  const workers: Worker[] = [];
  const idle: Worker[] = [];
  const waiting: { resolve: (w: Worker) => void; reject: (e: Error) => void }[] = [];
  const pending = new Map<number, { resolve: (s: any) => void; reject: (e: Error) => void }>();
  let failed: Error | null = null;
  let nextId = 0;

  const release = (w: Worker) => {
    const take = waiting.shift();
    if (take) take.resolve(w);
    else idle.push(w);
  };
  const fail = (e: Error) => {
    failed ??= e;
    for (const p of pending.values()) p.reject(failed);
    pending.clear();
    for (const q of waiting.splice(0)) q.reject(failed);
  };
  for (let t = 0; t < threads; t++) {
    const w = startWorker(new URL('./sums.worker.js', import.meta.url));
    workers.push(w);
    w.on('message', (msg: any) => {
      if (msg.ready) return release(w);
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error)
        p?.reject(
          msg.error.lobes
            ? new LobesError(msg.error.message, { exitCode: msg.error.exitCode })
            : new Error(msg.error.message),
        );
      else p?.resolve(msg.result);
      release(w);
    });
    w.on('error', fail);
    w.on('exit', (code) => {
      if (code !== 0) fail(new Error(`a worker thread of the permutation null exited with code ${code}`));
    });
  }
  const acquire = () =>
    new Promise<Worker>((resolve, reject) => (idle.length ? resolve(idle.pop()!) : waiting.push({ resolve, reject })));

  const submit = async <T>(msg: object): Promise<T> => {
    if (failed) throw failed;
    const w = await acquire();
    if (failed) throw failed;
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      w.postMessage({ id, runDir, n: src.n, ...msg });
    });
  };

  return {
    threads,
    pooled: (hook, labelings, counts, mats, rb, cb) =>
      submit<HookPooled>({ kind: 'pooled', hook, labelings, counts, mats, rb, cb }),
    hookNull: (job) => submit<HookNullResult>({ kind: 'hook', job }),
    placement: (placement) =>
      submit<{ density: Float64Array; components: Float64Array }>({ kind: 'placement', placement }),
    async close() {
      failed ??= new Error("the permutation null's worker threads were closed");
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
