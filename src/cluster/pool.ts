/**
 * Worker threads for `lobes cluster`: the t-SNE stages' jobs (TsnePool, src/tsne/pool.ts) and
 * the command's own, PCA matrix products, Gram-matrix distances, and the probe and silhouette
 * permutation nulls, on SharedArrayBuffers (the worker side is pool.worker.ts). This thread
 * always takes one range itself. Each result depends only on the inputs, never on the split, so
 * results are identical with any number of threads.
 */
import type { Worker } from 'node:worker_threads';
import { sharedF64 } from '../util/worker.js';
import { TsnePool, settled, startWorkers } from '../tsne/pool.js';
import { mulXBRows, mulXtBCols, type MatMulPool, type MulRequest } from './pca.js';
import { symmetricCopy } from './pca-gram.js';
import type { ProbeOptions } from './probe.js';
import { cvFold, cvRun, foldCount, foldSplits, type Block, type PreparedFold, type RepeatedCv } from './probecv.js';
import { probeNullScores } from './space.js';
import { silhouetteMeans, gramRows, distancesFromGram } from './metrics.js';

export { overlapSplit } from '../tsne/pool.js';

/** A fixed set of worker threads for the cluster computations, t-SNE's included; close() ends them. */
export class ClusterPool extends TsnePool implements MatMulPool {
  static override async start(count: number): Promise<ClusterPool> {
    return new ClusterPool(startWorkers(new URL('./pool.worker.js', import.meta.url), count));
  }

  /** A PCA matrix product, split by output rows (identical to the single-thread result). */
  async matmul(req: MulRequest): Promise<Float64Array> {
    const { op, X, n, d, l } = req;
    const rowsOut = op === 'xb' ? n : d;
    const B = sharedF64(req.B);
    const out = new Float64Array(new SharedArrayBuffer(rowsOut * l * 8));
    const rs = this.ranges(rowsOut);
    const pending = this.workers.map((w, i) =>
      this.call(w, { cmd: 'mul', op, X, n, d, B, l, out, start: rs[i][0], end: rs[i][1] })
    );
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
  async probeScores(folds: PreparedFold[], n: number, perms: Int32Array[], nClasses: number, opts: ProbeOptions,
    seed: number, onDone?: () => void): Promise<Float64Array>
  {
    // the fold matrices go to shared memory once; each task then only names a labelling
    const shared = folds.map((f) => ({ train: f.train, test: f.test, d: f.d, Xtr: sharedF64(f.Xtr),
      Xte: sharedF64(f.Xte) })
    );
    // each task's three scores land in its own slice of one shared array
    const res = new Float64Array(new SharedArrayBuffer(3 * 8 * perms.length));
    await this.tasks(
      perms.length,
      (r) => ({ cmd: 'probe', folds: shared, n, labels: perms[r], nClasses, opts, seed,
        res: res.subarray(3 * r, 3 * r + 3) }),
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
  async repeatedCv(blocks: Block[], n: number, labels: Int32Array, nClasses: number, opts: ProbeOptions,
    onDone?: () => void): Promise<RepeatedCv>
  {
    const R = Math.max(1, opts.repeats ?? 1);
    const seed = opts.seed ?? 0;
    const share = (
      a: Float64Array | Float32Array,
    ) => (a instanceof Float64Array && a.buffer instanceof SharedArrayBuffer ? a : sharedF64(a));
    // a Gram matrix goes with both triangles filled, once for all threads (gramPcaProject reads it along rows)
    const shared = blocks.map((b) => ({ X: share(b.X), d: b.d, key: b.key,
      ...(b.gram
        ? {
          gram: b.gramFull
            ? share(b.gram)
            : symmetricCopy(b.gram, n, new Float64Array(new SharedArrayBuffer(n * n * 8))),
          gramFull: true,
        }
        : {}) })
    );
    const preds: Int32Array[] = new Array(R);
    const chosenC: number[][] = new Array(R);
    let prepared: PreparedFold[] = [];
    const folds = foldCount(labels, nClasses, opts.folds ?? 5);
    const T = this.workers.length + 1;
    const fixed = blocks.some((b) => b.key !== undefined);
    if (!fixed && this.workers.length > 0)
      return this.repeatedCvByFolds(shared, n, labels, nClasses, opts, R, seed, folds, onDone);
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
  private async repeatedCvByFolds(blocks: Block[], n: number, labels: Int32Array, nClasses: number, opts: ProbeOptions,
    R: number, seed: number, folds: number, onDone?: () => void): Promise<RepeatedCv>
  {
    const counts = Array.from({ length: R }, (_, r) => foldSplits(labels, nClasses, opts, seed + r).length);
    const F = Math.max(...counts);
    const all: [number, number][] = [];
    for (let r = 0; r < R; r++) for (let j = 0; j < counts[r]; j++) all.push([r, j]);
    const W = this.workers.length;
    const mineCount = Math.max(counts[0], Math.floor(all.length / (W + 1)));
    const rest = all.slice(mineCount);
    const shares = Array.from({ length: W },
      (_, w) => rest.slice(Math.floor((w * rest.length) / W), Math.floor(((w + 1) * rest.length) / W)));
    const preds = new Int32Array(new SharedArrayBuffer(R * n * 4));
    const cs = new Float64Array(new SharedArrayBuffer(R * F * 8));
    const pending = this.workers.map((w, i) => (shares[i].length
      ? this.call(w, { cmd: 'cvfolds', blocks, labels, nClasses, opts, seed, tasks: shares[i], preds, cs, n, F })
      : Promise.resolve())
    );
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
  async gramDistances(X: Float64Array, n: number,
    d: number): Promise<{ euclidean: Float64Array; cosine: Float64Array; gram: Float64Array }>
  {
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
    const pending = this.workers.map((w, i) =>
      this.call(w, { cmd: 'gram', X: Xs, n, d, G, start: rs[i][0], end: rs[i][1] })
    );
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
    const pending = this.workers.map((w, i) =>
      this.call(w, { cmd: 'sil', D: Ds, n, perms: perms.slice(rs[i][0], rs[i][1]), offset: rs[i][0], nClasses, out })
    );
    const [s, e] = rs[rs.length - 1];
    out.set(silhouetteMeans(Ds, n, perms.slice(s, e), nClasses), s);
    await Promise.all(pending);
    return Float64Array.from(out);
  }
}
