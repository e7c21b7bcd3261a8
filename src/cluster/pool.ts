/**
 * Worker threads for `lobes cluster`: exact kNN, perplexity calibration and the t-SNE
 * gradient over row ranges, PCA matrix products, Gram-matrix distances, and the probe and
 * silhouette permutation nulls, on SharedArrayBuffers (the worker side is pool.worker.ts).
 * This thread always takes one range itself. Each result depends only on the inputs, never
 * on the split, so results are identical with any number of threads.
 */
import { Worker } from 'node:worker_threads';
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
import { mulXBRows, mulXtBCols, type MatMulPool, type MulRequest } from './pca.js';
import { symmetricCopy } from './pca-gram.js';
import type { ProbeOptions } from './probe.js';
import { cvFold, cvRun, foldCount, foldSplits, type Block, type PreparedFold, type RepeatedCv } from './probecv.js';
import { probeNullScores } from './space.js';
import { silhouetteMeans, gramRows, distancesFromGram } from './metrics.js';

/** A fixed set of worker threads for the cluster computations; close() ends them. */
export class ClusterPool implements MatMulPool {
  private constructor(private workers: Worker[]) {}

  static async start(count: number): Promise<ClusterPool> {
    const workers: Worker[] = [];
    for (let i = 0; i < count; i++) {
      const w = spawn();
      w.unref();
      workers.push(w);
    }
    return new ClusterPool(workers);
  }

  get size(): number {
    return this.workers.length;
  }

  /** Each worker's calls waiting for their replies, oldest first, and an error it raised with none waiting. */
  private waiting = new Map<Worker, { queue: { resolve: () => void; reject: (e: Error) => void }[]; failed: Error | null }>();

  /**
   * Post `msg` to worker `w`; resolves at its reply. A worker handles its messages one at a time
   * in order and answers each (but those sent with noReply), so the replies are matched to the
   * calls in order: two computations may have calls out on one worker at once (the cluster
   * command's two probes do).
   */
  private call(w: Worker, msg: unknown): Promise<void> {
    let state = this.waiting.get(w);
    if (!state) {
      const st: { queue: { resolve: () => void; reject: (e: Error) => void }[]; failed: Error | null } = { queue: [], failed: null };
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
  private ranges(n: number): [number, number][] {
    const parts = this.workers.length + 1;
    const out: [number, number][] = [];
    for (let p = 0; p < parts; p++) out.push([Math.floor((p * n) / parts), Math.floor(((p + 1) * n) / parts)]);
    return out;
  }

  /** Rows [r0, r1) in about `perThread` blocks per thread (default 8): even load, and progress at a useful grain. */
  private blocksOf(r0: number, r1: number, perThread = 8): [number, number][] {
    const rows = r1 - r0;
    const parts = Math.min(rows, perThread * (this.workers.length + 1));
    return Array.from({ length: parts }, (_, p) => [r0 + Math.floor((p * rows) / parts), r0 + Math.floor(((p + 1) * rows) / parts)]);
  }

  /**
   * Tasks 0 … count − 1, each taken by whichever thread is free: a worker runs the message
   * `remote(i)`, this thread runs `local(i)` between awaits; `after(i)` follows each task, on this thread.
   */
  private async tasks(count: number, remote: (i: number) => object, local: (i: number) => void, after?: (i: number) => void): Promise<void> {
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
  async knn(X: Float64Array | Float32Array, n: number, d: number, k: number, onRows?: (done: number) => void, prune = true): Promise<KnnResult> {
    // wide data: the float32 screen (identical result; null where it does not apply). It puts
    // what the threads read on shared memory itself, so X is not copied here first.
    const screened = await knnScreened(X, n, d, k, { threads: this.workers.length + 1, onRows, split: (job, r0, r1) => this.screenSplit(job, r0, r1) });
    if (screened) return screened;
    const Xs = sharedF64(X.subarray(0, n * d));
    if (prune && prunable(X, n, d, k)) {
      // narrow data, enough rows: the search with block bounds (src/cluster/knn-prune.ts; the same lists)
      const job = pruneJob(Xs, n, d, k, true);
      // small tasks: a worker whose task ends waits for this thread's task to end before it gets the next
      const groups = this.blocksOf(0, job.nb, 64);
      let rowsDone = 0;
      await this.tasks(
        groups.length,
        (p) => ({ cmd: 'knnp', job, b0: groups[p][0], b1: groups[p][1] }),
        (p) => prunedBlocks(job, groups[p][0], groups[p][1]),
        (p) => onRows?.((rowsDone += job.start[groups[p][1]] - job.start[groups[p][0]])),
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
      (p) => onRows?.((done += blocks[p][1] - blocks[p][0])),
    );
    // left on the shared memory: conditionalP hands dist2 to the workers as it is
    return { k, indices, dist2 };
  }

  /**
   * The approximate neighbour search (src/cluster/knn-approx.ts) with each pass's rows in blocks
   * taken by whichever thread is free: the same lists as knnApprox on one thread.
   */
  async knnApprox(X: Float64Array | Float32Array, n: number, d: number, k: number, opts: ApproxKnnOptions = {}): Promise<KnnResult> {
    const blocks = this.blocksOf(0, n);
    return approxSearch(X, n, d, k, opts, this.workers.length + 1, async (job, pass) => {
      const changed = new Int32Array(new SharedArrayBuffer(4 * blocks.length));
      let done = 0;
      await this.tasks(
        blocks.length,
        (p) => ({ cmd: 'approx', job, pass, start: blocks[p][0], end: blocks[p][1], changed, slot: p }),
        (p) => (changed[p] = approxRows(job, pass, blocks[p][0], blocks[p][1])),
        (p) => pass === 'forest' && opts.onProgress?.('forest rows', (done += blocks[p][1] - blocks[p][0]), n),
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
    const pending = this.workers.map((w, i) => this.call(w, { cmd: 'condp', dist2, k, perplexity, start: rs[i][0], end: rs[i][1], P, betas }));
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
  async bhGradient(build: () => void, tree: QuadTree, split: number, Y: Float64Array, n: number, theta: number, F: Float64Array, Zi: Float64Array, P: SparseP, ex: number, A: Float64Array): Promise<{ buildMs: number; attrMs: number; split: number }> {
    const W = this.workers.length;
    const s = split > 0 ? Math.min(split, n) : this.ranges(n)[W][0];
    // no reply: a worker handles its messages in order, so the reply to 'grad' below means both are done
    this.workers.forEach((w, i) => w.postMessage({ cmd: 'attr', noReply: true, P, Y, ex, A, start: Math.floor((i * s) / W), end: Math.floor(((i + 1) * s) / W) }));
    const t0 = performance.now();
    build();
    const t1 = performance.now();
    const t = tree.t;
    const gs = groupRanges(t, W + 1);
    const pending = this.workers.map((w, i) => this.call(w, { cmd: 'grad', tree: t, Y, F, Zi, theta, g0: gs[i][0], g1: gs[i][1] }));
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

  /** One optimizer step (src/cluster/step.ts) over all points, split by points across the threads (the same numbers on any split). */
  async step(Y: Float64Array, update: Float64Array, gains: Float64Array, A: Float64Array, F: Float64Array, sp: StepParams, n: number): Promise<void> {
    const rs = this.ranges(n);
    const pending = this.workers.map((w, i) => this.call(w, { cmd: 'step', Y, update, gains, A, F, sp, i0: rs[i][0], i1: rs[i][1] }));
    const [a, b] = rs[rs.length - 1];
    await settled(pending, () => stepRange(Y, update, gains, A, F, sp, a, b));
  }

  /**
   * The FFT-interpolated repulsion (src/cluster/interp.ts) and the attractive sums (A, scaled by
   * `ex`) for all points, in phases split by columns, rows and points across the threads (every
   * value is computed by the same operations whatever the split); all arrays shared.
   */
  async interpGradient(rep: InterpRepulsion, Y: Float64Array, n: number, F: Float64Array, Zi: Float64Array, P: SparseP, ex: number, A: Float64Array): Promise<void> {
    const g = rep.size(Y, false);
    const parts = this.workers.length + 1;
    const split = (len: number) => Array.from({ length: parts }, (_, p): [number, number] => [Math.floor((p * len) / parts), Math.floor(((p + 1) * len) / parts)]);
    const phase = (msg: (i: number) => object, mine: () => void) => settled(this.workers.map((w, i) => this.call(w, { cmd: 'interp', g, ...msg(i) })), mine);
    const last = parts - 1;
    // the kernel's spectrum when L or h changed: its columns beside the weights, its rows beside the spread
    const kb = split(rep.needsSpectrum() ? blockCount(g.L) : 0);
    // the charges: boxes and weights by points (and the panels zeroed), the points sorted by box
    // row here, then spread by bands of box rows with about equal numbers of points (a node gets
    // its points in point order, as from the single-thread spread)
    const pr = split(n);
    const zr = split(blockCount(g.M));
    await phase(
      (i) => ({ phase: 'weights', a: pr[i][0], b: pr[i][1], za: zr[i][0], zb: zr[i][1], ka: kb[i][0], kb: kb[i][1], Y }),
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
    await phase((i) => ({ phase: 'pass1', a: pc[i][0], b: pc[i][1] }), () => interpWork.pass1(g, pc[last][0], pc[last][1]));
    await phase((i) => ({ phase: 'middle', a: rb[i][0], b: rb[i][1] }), () => interpWork.middle(g, rb[last][0], rb[last][1]));
    await phase((i) => ({ phase: 'pass2', a: pc[i][0], b: pc[i][1] }), () => interpWork.pass2(g, pc[last][0], pc[last][1]));
    await phase(
      (i) => ({ phase: 'points', a: pr[i][0], b: pr[i][1], Y, F, Zi, P, ex, A }),
      () => {
        interpWork.interpolate(g, Y, pr[last][0], pr[last][1], F, Zi);
        attraction(P, Y, ex, A, pr[last][0], pr[last][1]);
      },
    );
  }

  /** A PCA matrix product, split by output rows (identical to the single-thread result). */
  async matmul(req: MulRequest): Promise<Float64Array> {
    const { op, X, n, d, l } = req;
    const rowsOut = op === 'xb' ? n : d;
    const B = sharedF64(req.B);
    const out = new Float64Array(new SharedArrayBuffer(rowsOut * l * 8));
    const rs = this.ranges(rowsOut);
    const pending = this.workers.map((w, i) => this.call(w, { cmd: 'mul', op, X, n, d, B, l, out, start: rs[i][0], end: rs[i][1] }));
    const [s, e] = rs[rs.length - 1];
    if (op === 'xb') mulXBRows(X, d, B, l, out, s, e);
    else mulXtBCols(X, n, d, B, l, out, s, e);
    await Promise.all(pending);
    return Float64Array.from(out);
  }

  /**
   * The cross-validated probe's scores for each label permutation on fixed prepared folds ([R][3]:
   * accuracy, balanced accuracy, macro-F1; one task per permutation); `onDone` is called after each.
   */
  async probeScores(folds: PreparedFold[], n: number, perms: Int32Array[], nClasses: number, opts: ProbeOptions, seed: number, onDone?: () => void): Promise<Float64Array> {
    // the fold matrices go to shared memory once; each task then only names a labelling
    const shared = folds.map((f) => ({ train: f.train, test: f.test, d: f.d, Xtr: sharedF64(f.Xtr), Xte: sharedF64(f.Xte) }));
    // each task's three scores land in its own slice of one shared array
    const res = new Float64Array(new SharedArrayBuffer(3 * 8 * perms.length));
    await this.tasks(
      perms.length,
      (r) => ({ cmd: 'probe', folds: shared, n, labels: perms[r], nClasses, opts, seed, res: res.subarray(3 * r, 3 * r + 3) }),
      (r) => res.set(probeNullScores(shared, n, [perms[r]], nClasses, opts, seed), 3 * r),
      () => onDone?.(),
    );
    return Float64Array.from(res);
  }

  /**
   * Repeats of the probe's k-fold CV (src/cluster/probecv.ts). Unkeyed blocks: one task per
   * fold of every repeat (repeatedCvByFolds). Keyed blocks (Block.key): one task per repeat, this
   * thread running repeat 0 (whose prepared folds the permutation null refits), and every thread
   * taking the same repeats each time (thread t of T: the repeats r ≡ t mod T), so each finds the
   * in-fold reductions it kept for an earlier probe on the same labels. Identical to repeatedCv
   * in one thread.
   */
  async repeatedCv(blocks: Block[], n: number, labels: Int32Array, nClasses: number, opts: ProbeOptions, onDone?: () => void): Promise<RepeatedCv> {
    const R = Math.max(1, opts.repeats ?? 1);
    const seed = opts.seed ?? 0;
    const share = (a: Float64Array | Float32Array) => (a instanceof Float64Array && a.buffer instanceof SharedArrayBuffer ? a : sharedF64(a));
    // a Gram matrix goes with both triangles filled, once for all threads (gramPcaProject reads it along rows)
    const shared = blocks.map((b) => ({ X: share(b.X), d: b.d, key: b.key, ...(b.gram ? { gram: b.gramFull ? share(b.gram) : symmetricCopy(b.gram, n, new Float64Array(new SharedArrayBuffer(n * n * 8))), gramFull: true } : {}) }));
    const preds: Int32Array[] = new Array(R);
    const chosenC: number[][] = new Array(R);
    let prepared: PreparedFold[] = [];
    const folds = foldCount(labels, nClasses, opts.folds ?? 5);
    const T = this.workers.length + 1;
    const fixed = blocks.some((b) => b.key !== undefined);
    if (!fixed && this.workers.length > 0) return this.repeatedCvByFolds(shared, n, labels, nClasses, opts, R, seed, folds, onDone);
    // the next repeat for thread t (0: this one): the shared queue, or its own residue class
    let next = 1;
    const own = Array.from({ length: T }, (_, t) => (t === 0 ? T : t));
    const claim = (t: number): number | null => {
      if (!fixed) return next < R ? next++ : null;
      const r = own[t];
      own[t] += T;
      return r < R ? r : null;
    };
    const runWorker = async (w: Worker, t: number) => {
      for (let r = claim(t); r !== null; r = claim(t)) {
        const pred = new Int32Array(new SharedArrayBuffer(n * 4));
        const cs = new Float64Array(new SharedArrayBuffer((folds + 1) * 8));
        await this.call(w, { cmd: 'cv', blocks: shared, n, labels, nClasses, opts, seed: seed + r, pred, cs });
        preds[r] = Int32Array.from(pred);
        chosenC[r] = Array.from(cs.subarray(0, cs[folds]));
        onDone?.();
      }
    };
    const mine = (async () => {
      for (let r: number | null = 0; r !== null; r = claim(0)) {
        const run = cvRun(shared, n, labels, nClasses, opts, seed + r);
        preds[r] = run.pred;
        chosenC[r] = run.chosenC;
        if (r === 0) prepared = run.folds;
        onDone?.();
        await new Promise((res) => setImmediate(res));
      }
    })();
    await Promise.all([...this.workers.map((w, i) => runWorker(w, i + 1)), mine]);
    return { preds, chosenC, folds, prepared };
  }

  /**
   * repeatedCv of unkeyed blocks by folds: every fold of every repeat is one task (cvFold), so
   * the threads split R × folds tasks evenly instead of R repeats (5 repeats on 2 threads: 13 and
   * 12 folds, not 3 and 2 repeats). This thread runs all of repeat 0 (whose prepared folds the
   * permutation null refits) and as many more as it takes to an even share, rounded down (the
   * workers take the odd fold: this thread has the scoring after, and its messages); each worker gets its
   * share in one message (a worker that asked for the next task would wait while this thread
   * computes). Identical to repeatedCv in one thread.
   */
  private async repeatedCvByFolds(blocks: Block[], n: number, labels: Int32Array, nClasses: number, opts: ProbeOptions, R: number, seed: number, folds: number, onDone?: () => void): Promise<RepeatedCv> {
    const counts = Array.from({ length: R }, (_, r) => foldSplits(labels, nClasses, opts, seed + r).length);
    const F = Math.max(...counts);
    const all: [number, number][] = [];
    for (let r = 0; r < R; r++) for (let j = 0; j < counts[r]; j++) all.push([r, j]);
    const W = this.workers.length;
    const mineCount = Math.max(counts[0], Math.floor(all.length / (W + 1)));
    const rest = all.slice(mineCount);
    const shares = Array.from({ length: W }, (_, w) => rest.slice(Math.floor((w * rest.length) / W), Math.floor(((w + 1) * rest.length) / W)));
    const preds = new Int32Array(new SharedArrayBuffer(R * n * 4));
    const cs = new Float64Array(new SharedArrayBuffer(R * F * 8));
    const pending = this.workers.map((w, i) => (shares[i].length ? this.call(w, { cmd: 'cvfolds', blocks, labels, nClasses, opts, seed, tasks: shares[i], preds, cs, n, F }) : Promise.resolve()));
    const prepared: PreparedFold[] = [];
    const left = Int32Array.from(counts);
    const finished = (r: number) => {
      if (--left[r] === 0) onDone?.();
    };
    await settled(pending, () => {
      for (const [r, j] of all.slice(0, mineCount)) {
        const f = cvFold(blocks, labels, nClasses, opts, seed + r, j);
        f.fold.test.forEach((i, t) => (preds[r * n + i] = f.pred[t]));
        cs[r * F + j] = f.C;
        if (r === 0) prepared.push(f.fold);
        finished(r);
      }
    });
    for (const sh of shares) for (const [r] of sh) finished(r);
    return {
      preds: Array.from({ length: R }, (_, r) => preds.slice(r * n, (r + 1) * n)),
      chosenC: counts.map((c, r) => Array.from(cs.subarray(r * F, r * F + c))),
      folds,
      prepared,
    };
  }

  /** Euclidean and cosine distance matrices through a Gram matrix split by rows (balanced by triangle area). */
  async gramDistances(X: Float64Array, n: number, d: number): Promise<{ euclidean: Float64Array; cosine: Float64Array; gram: Float64Array }> {
    const G = await this.gram(X, n, d);
    return { ...distancesFromGram(G, n), gram: G };
  }

  /** The upper triangle of the Gram matrix X Xᵀ [n, n] (gramRows) on shared memory, split by rows (balanced by triangle area). */
  async gram(X: Float64Array | Float32Array, n: number, d: number): Promise<Float64Array> {
    const Xs = sharedF64(X.subarray(0, n * d));
    const G = new Float64Array(new SharedArrayBuffer(n * n * 8));
    const parts = this.workers.length + 1;
    const cut = (p: number) => Math.round(n - n * Math.sqrt(1 - p / parts));
    const rs: [number, number][] = Array.from({ length: parts }, (_, p) => [cut(p), cut(p + 1)]);
    const pending = this.workers.map((w, i) => this.call(w, { cmd: 'gram', X: Xs, n, d, G, start: rs[i][0], end: rs[i][1] }));
    const [s, e] = rs[rs.length - 1];
    gramRows(Xs, n, d, G, s, e);
    await Promise.all(pending);
    return G;
  }

  /** Mean silhouette for each label permutation from a distance matrix [n, n]. */
  async silhouettes(D: Float64Array, n: number, perms: Int32Array[], nClasses: number): Promise<Float64Array> {
    const Ds = sharedF64(D);
    const out = new Float64Array(new SharedArrayBuffer(perms.length * 8));
    const rs = this.ranges(perms.length);
    const pending = this.workers.map((w, i) => this.call(w, { cmd: 'sil', D: Ds, n, perms: perms.slice(rs[i][0], rs[i][1]), offset: rs[i][0], nClasses, out }));
    const [s, e] = rs[rs.length - 1];
    out.set(silhouetteMeans(Ds, n, perms.slice(s, e), nClasses), s);
    await Promise.all(pending);
    return Float64Array.from(out);
  }

  async close(): Promise<void> {
    const ws = this.workers;
    this.workers = [];
    await Promise.all(ws.map((w) => w.terminate()));
  }
}

function spawn(): Worker {
  return startWorker(new URL('./pool.worker.js', import.meta.url));
}

/**
 * This thread's part (`mine`) while the workers' calls run; then every call is waited for before
 * the first error (this thread's, else a worker's) is thrown, so no reply is left unawaited.
 */
async function settled(pending: Promise<void>[], mine: () => void): Promise<void> {
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
 * (src/cluster/attraction.ts) are not redone for small changes.
 */
export function overlapSplit(buildMs: number, attrMs: number, n: number, workers: number): number {
  const even = workers / (workers + 1);
  const x = attrMs > 0 ? Math.min(0.95, Math.max(even, (1 + buildMs / attrMs) * even)) : even;
  return Math.min(n, Math.round((x * n) / 256) * 256);
}
