/**
 * Worker threads for the t-SNE stages: exact and approximate kNN, perplexity calibration, the
 * Barnes–Hut and FFT-interpolated gradients and the optimizer step over row ranges, on
 * SharedArrayBuffers (the worker side is pool.worker.ts, the jobs work.ts). This thread always
 * takes one range itself. Each result depends only on the inputs, never on the split, so results
 * are identical with any number of threads.
 */
import type { Worker } from 'node:worker_threads';
import { sharedF64, startWorker } from '../util/worker.js';
import { knnRows, type KnnResult } from './knn.js';
import { knnScreened, screenRows, type ScreenJob } from './knn-screen.js';
import { prunable, prunedBlocks, pruneJob } from './knn-prune.js';
import { approxRows, approxSearch, type ApproxKnnOptions } from './knn-approx.js';
import { groupRanges, repulsion, type QuadTree } from './quadtree.js';
import { attraction } from './attraction.js';
import { stepRange, type StepParams } from './step.js';
import { interpWork, sortRows, type InterpRepulsion } from './interp.js';
import { blockCount } from './fft-block.js';
import { conditionalRows, type SparseP } from './affinity.js';

/**
 * A fixed set of worker threads for the t-SNE stages; close() ends them. The workers run
 * src/tsne/pool.worker.ts; src/cluster's ClusterPool extends this class with its own jobs and a
 * worker that takes both kinds of message (tsneTask, src/tsne/work.ts).
 */
export class TsnePool {
  protected constructor(protected workers: Worker[]) {}

  static async start(count: number): Promise<TsnePool> {
    return new TsnePool(startWorkers(new URL('./pool.worker.js', import.meta.url), count));
  }

  get size(): number {
    return this.workers.length;
  }

  /** Each worker's calls waiting for their replies, oldest first, and an error it raised with none waiting. */
  private waiting = new Map<Worker,
    { queue: { resolve: () => void; reject: (e: Error) => void }[]; failed: Error | null }>();

  /**
   * Post `msg` to worker `w`; resolves at its reply. A worker handles its messages one at a time
   * in order and answers each (but those sent with noReply), so the replies are matched to the
   * calls in order: two computations may have calls out on one worker at once (the cluster
   * command's two probes do).
   */
  protected call(w: Worker, msg: unknown): Promise<void> {
    let state = this.waiting.get(w);
    if (!state) {
      const st: { queue: { resolve: () => void; reject: (e: Error) => void }[]; failed: Error | null } = { queue: [],
        failed: null };
      w.on('message', (m: any) => {
        const p = st.queue.shift();
        if (!p) return;
        if (m && m.error) p.reject(new Error(m.error));
        else p.resolve();
      });
      w.on('error', (e: Error) => {
        if (st.queue.length === 0) st.failed ??= e;
        for (const p of st.queue.splice(0)) p.reject(e);
      });
      this.waiting.set(w, st);
      state = st;
    }
    const st = state;
    return new Promise((resolve, reject) => {
      if (st.failed) {
        reject(st.failed);
        return;
      }
      st.queue.push({ resolve, reject });
      w.postMessage(msg);
    });
  }

  /** Split [0, n) into workers + 1 contiguous ranges. */
  protected ranges(n: number): [number, number][] {
    const parts = this.workers.length + 1;
    const out: [number, number][] = [];
    for (let p = 0; p < parts; p++) out.push([Math.floor((p * n) / parts), Math.floor(((p + 1) * n) / parts)]);
    return out;
  }

  /** Rows [r0, r1) in about `perThread` blocks per thread (default 8): even load, and progress at a useful grain. */
  protected blocksOf(r0: number, r1: number, perThread = 8): [number, number][] {
    const rows = r1 - r0;
    const parts = Math.min(rows, perThread * (this.workers.length + 1));
    return Array.from({ length: parts },
      (_, p) => [r0 + Math.floor((p * rows) / parts), r0 + Math.floor(((p + 1) * rows) / parts)]);
  }

  /**
   * Tasks 0 … count − 1, each taken by whichever thread is free: a worker runs the message
   * `remote(i)`, this thread runs `local(i)` between awaits; `after(i)` follows each task, on this thread.
   */
  protected async tasks(count: number, remote: (i: number) => object, local: (i: number) => void,
    after?: (i: number) => void): Promise<void>
  {
    let next = 0;
    const runWorker = async (w: Worker) => {
      while (next < count) {
        const i = next++;
        await this.call(w, remote(i));
        after?.(i);
      }
    };
    const mine = (async () => {
      while (next < count) {
        const i = next++;
        local(i);
        after?.(i);
        await new Promise((res) => setImmediate(res));
      }
    })();
    await Promise.all([...this.workers.map(runWorker), mine]);
  }

  /**
   * Exact k nearest neighbours of every row, in row blocks taken by whichever thread is free;
   * `onRows(done)` reports the rows finished so far. `prune` false runs the full pass on narrow
   * data too (benches compare the two).
   */
  async knn(X: Float64Array | Float32Array, n: number, d: number, k: number, onRows?: (done: number) => void,
    prune = true): Promise<KnnResult>
  {
    // wide data: the float32 screen (identical result; null where it does not apply). It puts
    // what the threads read on shared memory itself, so X is not copied here first.
    const screened = await knnScreened(X, n, d, k, { threads: this.workers.length + 1, onRows,
      split: (job, r0, r1) => this.screenSplit(job, r0, r1) });
    if (screened) return screened;
    const Xs = sharedF64(X.subarray(0, n * d));
    if (prune && prunable(X, n, d, k)) {
      // narrow data, enough rows: the search with block bounds (src/tsne/knn-prune.ts; the same lists)
      const job = pruneJob(Xs, n, d, k, true);
      // small tasks: a worker whose task ends waits for this thread's task to end before it gets the next
      const groups = this.blocksOf(0, job.nb, 64);
      let rowsDone = 0;
      await this.tasks(
        groups.length,
        (p) => ({ cmd: 'knnp', job, b0: groups[p][0], b1: groups[p][1] }),
        (p) => prunedBlocks(job, groups[p][0], groups[p][1]),
        (p) => onRows?.(rowsDone += job.start[groups[p][1]] - job.start[groups[p][0]]),
      );
      return { k, indices: job.indices, dist2: job.dist2 };
    }
    const indices = new Int32Array(new SharedArrayBuffer(n * k * 4));
    const dist2 = new Float64Array(new SharedArrayBuffer(n * k * 8));
    const blocks = this.blocksOf(0, n);
    let done = 0;
    await this.tasks(
      blocks.length,
      (p) => ({ cmd: 'knn', X: Xs, n, d, k, start: blocks[p][0], end: blocks[p][1], indices, dist2 }),
      (p) => knnRows(Xs, n, d, k, blocks[p][0], blocks[p][1], indices, dist2),
      (p) => onRows?.(done += blocks[p][1] - blocks[p][0]),
    );
    // left on the shared memory: conditionalP hands dist2 to the workers as it is
    return { k, indices, dist2 };
  }

  /**
   * The approximate neighbour search (src/tsne/knn-approx.ts) with each pass's rows in blocks
   * taken by whichever thread is free: the same lists as knnApprox on one thread.
   */
  async knnApprox(X: Float64Array | Float32Array, n: number, d: number, k: number,
    opts: ApproxKnnOptions = {}): Promise<KnnResult>
  {
    const blocks = this.blocksOf(0, n);
    return approxSearch(X, n, d, k, opts, this.workers.length + 1, async (job, pass) => {
      const changed = new Int32Array(new SharedArrayBuffer(4 * blocks.length));
      let done = 0;
      await this.tasks(
        blocks.length,
        (p) => ({ cmd: 'approx', job, pass, start: blocks[p][0], end: blocks[p][1], changed, slot: p }),
        (p) => (changed[p] = approxRows(job, pass, blocks[p][0], blocks[p][1])),
        (p) => pass === 'forest' && opts.onProgress?.('forest rows', done += blocks[p][1] - blocks[p][0], n),
      );
      return changed.reduce((a, b) => a + b, 0);
    });
  }

  /** screenRows over rows [r0, r1) in small ranges taken by whichever thread is free. */
  private async screenSplit(job: ScreenJob, r0: number, r1: number): Promise<void> {
    const blocks = this.blocksOf(r0, r1);
    await this.tasks(
      blocks.length,
      (p) => ({ cmd: 'screen', job, start: blocks[p][0], end: blocks[p][1] }),
      (p) => screenRows(job, blocks[p][0], blocks[p][1]),
    );
  }

  /** conditionalP over row ranges (identical to the single-thread result). */
  async conditionalP(nn: KnnResult, n: number, perplexity: number): Promise<Float64Array> {
    const k = nn.k;
    const dist2 = nn.dist2.buffer instanceof SharedArrayBuffer ? nn.dist2 : sharedF64(nn.dist2);
    const P = new Float64Array(new SharedArrayBuffer(n * k * 8));
    const betas = new Float64Array(new SharedArrayBuffer(n * 8));
    const rs = this.ranges(n);
    const pending = this.workers.map((w, i) =>
      this.call(w, { cmd: 'condp', dist2, k, perplexity, start: rs[i][0], end: rs[i][1], P, betas })
    );
    const [s, e] = rs[rs.length - 1];
    conditionalRows(dist2, k, perplexity, s, e, P, betas);
    await Promise.all(pending);
    return Float64Array.from(P);
  }

  /**
   * One Barnes–Hut gradient whose tree is built on this thread while the workers start on the
   * attraction: the workers take rows [0, split) of the attraction (the scaled sums into A) in
   * equal shares as soon as the call begins (split 0: the even split of all threads), this thread
   * runs `build`, then the repulsion's groups go to all threads in equal shares of points and this
   * thread adds the attraction of rows [split, n). Every sum is computed as on one thread, so the
   * split changes no number. Returns this thread's build and attraction milliseconds, for overlapSplit.
   */
  async bhGradient(build: () => void, tree: QuadTree, split: number, Y: Float64Array, n: number, theta: number,
    F: Float64Array, Zi: Float64Array, P: SparseP, ex: number,
    A: Float64Array): Promise<{ buildMs: number; attrMs: number; split: number }>
  {
    const W = this.workers.length;
    const s = split > 0 ? Math.min(split, n) : this.ranges(n)[W][0];
    // no reply: a worker handles its messages in order, so the reply to 'grad' below means both are done
    this.workers.forEach((w, i) =>
      w.postMessage({ cmd: 'attr', noReply: true, P, Y, ex, A, start: Math.floor((i * s) / W),
        end: Math.floor(((i + 1) * s) / W) })
    );
    const t0 = performance.now();
    build();
    const t1 = performance.now();
    const t = tree.t;
    const gs = groupRanges(t, W + 1);
    const pending = this.workers.map((w, i) =>
      this.call(w, { cmd: 'grad', tree: t, Y, F, Zi, theta, g0: gs[i][0], g1: gs[i][1] })
    );
    let t2 = 0;
    let t3 = 0;
    await settled(pending, () => {
      repulsion(t, Y, gs[W][0], gs[W][1], theta, F, Zi);
      t2 = performance.now();
      attraction(P, Y, ex, A, s, n);
      t3 = performance.now();
    });
    return { buildMs: t1 - t0, attrMs: t3 - t2, split: s };
  }

  /** One optimizer step (src/tsne/step.ts) over all points, split by points across the threads (the same numbers on any split). */
  async step(Y: Float64Array, update: Float64Array, gains: Float64Array, A: Float64Array, F: Float64Array,
    sp: StepParams, n: number): Promise<void>
  {
    const rs = this.ranges(n);
    const pending = this.workers.map((w, i) =>
      this.call(w, { cmd: 'step', Y, update, gains, A, F, sp, i0: rs[i][0], i1: rs[i][1] })
    );
    const [a, b] = rs[rs.length - 1];
    await settled(pending, () => stepRange(Y, update, gains, A, F, sp, a, b));
  }

  /**
   * The FFT-interpolated repulsion (src/tsne/interp.ts) and the attractive sums (A, scaled by
   * `ex`) for all points, in phases split by columns, rows and points across the threads (every
   * value is computed by the same operations whatever the split); all arrays shared.
   */
  async interpGradient(rep: InterpRepulsion, Y: Float64Array, n: number, F: Float64Array, Zi: Float64Array, P: SparseP,
    ex: number, A: Float64Array): Promise<void>
  {
    const g = rep.size(Y, false);
    const parts = this.workers.length + 1;
    const split = (len: number) =>
      Array.from({ length: parts },
        (_, p): [number, number] => [Math.floor((p * len) / parts), Math.floor(((p + 1) * len) / parts)]);
    const phase = (msg: (i: number) => object, mine: () => void) =>
      settled(this.workers.map((w, i) => this.call(w, { cmd: 'interp', g, ...msg(i) })), mine);
    const last = parts - 1;
    // the kernel's spectrum when L or h changed: its columns beside the weights, its rows beside the spread
    const kb = split(rep.needsSpectrum() ? blockCount(g.L) : 0);
    // the charges: boxes and weights by points (and the panels zeroed), the points sorted by box
    // row here, then spread by bands of box rows with about equal numbers of points (a node gets
    // its points in point order, as from the single-thread spread)
    const pr = split(n);
    const zr = split(blockCount(g.M));
    await phase(
      (i) => ({ phase: 'weights', a: pr[i][0], b: pr[i][1], za: zr[i][0], zb: zr[i][1], ka: kb[i][0], kb: kb[i][1],
        Y }),
      () => {
        interpWork.weights(g, Y, pr[last][0], pr[last][1]);
        interpWork.zeroPanels(g, zr[last][0], zr[last][1]);
        if (kb[last][1] > kb[last][0]) interpWork.kernelColumns(g, kb[last][0], kb[last][1]);
      },
    );
    sortRows(g, n);
    const bands: [number, number][] = [];
    for (let p = 0, b = 0; p < parts; p++) {
      const b0 = b;
      const target = Math.round(((p + 1) * n) / parts);
      while (b < g.nb && (p === last || g.rowStart[b + 1] <= target)) b++;
      bands.push([b0, b]);
    }
    await phase(
      (i) => ({ phase: 'spread', a: bands[i][0], b: bands[i][1], ka: kb[i][0], kb: kb[i][1], Y }),
      () => {
        interpWork.spreadRows(g, Y, bands[last][0], bands[last][1]);
        if (kb[last][1] > kb[last][0]) interpWork.kernelRows(g, kb[last][0], kb[last][1]);
      },
    );
    g.kL = g.L;
    g.kh = g.h;
    const pc = split(blockCount(g.M)), rb = split(blockCount(g.L));
    await phase((i) => ({ phase: 'pass1', a: pc[i][0], b: pc[i][1] }),
      () => interpWork.pass1(g, pc[last][0], pc[last][1]));
    await phase((i) => ({ phase: 'middle', a: rb[i][0], b: rb[i][1] }),
      () => interpWork.middle(g, rb[last][0], rb[last][1]));
    await phase((i) => ({ phase: 'pass2', a: pc[i][0], b: pc[i][1] }),
      () => interpWork.pass2(g, pc[last][0], pc[last][1]));
    await phase(
      (i) => ({ phase: 'points', a: pr[i][0], b: pr[i][1], Y, F, Zi, P, ex, A }),
      () => {
        interpWork.interpolate(g, Y, pr[last][0], pr[last][1], F, Zi);
        attraction(P, Y, ex, A, pr[last][0], pr[last][1]);
      },
    );
  }

  async close(): Promise<void> {
    const ws = this.workers;
    this.workers = [];
    await Promise.all(ws.map((w) => w.terminate()));
  }
}

/** `count` unreferenced worker threads running the module at `url` (named as its .js file; util/worker.ts startWorker). */
export function startWorkers(url: URL, count: number): Worker[] {
  const workers: Worker[] = [];
  for (let i = 0; i < count; i++) {
    const w = startWorker(url);
    w.unref();
    workers.push(w);
  }
  return workers;
}

/**
 * This thread's part (`mine`) while the workers' calls run; then every call is waited for before
 * the first error (this thread's, else a worker's) is thrown, so no reply is left unawaited.
 */
export async function settled(pending: Promise<void>[], mine: () => void): Promise<void> {
  let err: unknown = null;
  try {
    mine();
  } catch (e) {
    err = e;
  }
  const done = await Promise.allSettled(pending);
  if (err !== null) throw err;
  for (const d of done) if (d.status === 'rejected') throw d.reason;
}

/**
 * The rows of the attraction the workers should take in bhGradient so that they finish it as this
 * thread finishes the tree build plus the rest: with W workers, a share x = (1 + build / attraction)
 * · W / (W + 1) of the rows (build and attraction in milliseconds, the attraction for all n rows),
 * at least the even split and at most 0.95, rounded to 256 rows so that the threads' copies of P
 * (src/tsne/attraction.ts) are not redone for small changes.
 */
export function overlapSplit(buildMs: number, attrMs: number, n: number, workers: number): number {
  const even = workers / (workers + 1);
  const x = attrMs > 0 ? Math.min(0.95, Math.max(even, (1 + buildMs / attrMs) * even)) : even;
  return Math.min(n, Math.round((x * n) / 256) * 256);
}
