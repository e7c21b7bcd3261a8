/**
 * The probe's cross-validation (src/cluster/probecv.ts) and its bootstraps (src/cluster/paired.ts):
 * PCA and standardization fitted on the training rows only, cold starts, repeats, class weights,
 * the bootstrap over items and repeats, and the paired bootstrap against a hand computation.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { orthonormalize } from '../../src/cluster/linalg.js';
import { pca, pcaProject } from '../../src/cluster/pca.js';
import { fitLogistic, stratifiedFolds } from '../../src/cluster/probe.js';
import { blockKey, crossValidatedPredictions, cvRun, predictFold, prepareFold, repeatedCv, sampleWeights, splitFold,
  type Block, type RepeatedCv } from '../../src/cluster/probecv.js';
import { bootstrapRepeated, pairedBootstrap } from '../../src/cluster/paired.js';
import { bootstrapScores } from '../../src/cluster/scores.js';
import { blobs } from './blobs.js';

describe('the fold pipeline', () => {
  it('fits PCA and standardization on the training rows only', () => {
    const n = 90;
    const d = 12;
    const rng = new Rng(5);
    const X = Float64Array.from({ length: n * d }, () => rng.normal());
    const lab = Int32Array.from({ length: n }, (_, i) => i % 3);
    const { train, test } = splitFold(stratifiedFolds(lab, 3, 3, 1), 0);
    // the test rows get a huge extra variance along coordinate 0: a PCA that saw them would
    // make it the first component
    for (const i of test) X[i * d] *= 50;
    const pf = prepareFold([{ X, d }], train, test, 4, 0);
    const tr = Float64Array.from({ length: train.length * d }, (_, t) => X[train[Math.floor(t / d)] * d + (t % d)]);
    const te = Float64Array.from({ length: test.length * d }, (_, t) => X[test[Math.floor(t / d)] * d + (t % d)]);
    const p = pca(tr, train.length, d, 4, { seed: 0 });
    const Ptr = pcaProject(p, tr, train.length, d);
    const Pte = pcaProject(p, te, test.length, d);
    for (let c = 0; c < 4; c++) {
      let mu = 0;
      let v = 0;
      for (let i = 0; i < train.length; i++) mu += Ptr[i * 4 + c] / train.length;
      for (let i = 0; i < train.length; i++) v += (Ptr[i * 4 + c] - mu) ** 2 / train.length;
      const sd = Math.sqrt(v);
      for (let i = 0; i < train.length; i++) expect(pf.Xtr[i * 4 + c]).toBeCloseTo((Ptr[i * 4 + c] - mu) / sd, 9);
      for (let i = 0; i < test.length; i++) expect(pf.Xte[i * 4 + c]).toBeCloseTo((Pte[i * 4 + c] - mu) / sd, 9);
    }
  });
  it('projects new rows on the components consistently with the scores (exact and randomized PCA)', () => {
    const rng = new Rng(2);
    for (const [n, d] of [[60, 20], [80, 300]]) {
      const X = Float64Array.from({ length: n * d }, (_, t) => rng.normal() / Math.sqrt(1 + (t % d)));
      const p = pca(X, n, d, 5, { seed: 1 });
      const P = pcaProject(p, X, n, d);
      let err = 0;
      let scale = 0;
      for (let t = 0; t < n * 5; t++) {
        err = Math.max(err, Math.abs(P[t] - p.scores[t]));
        scale = Math.max(scale, Math.abs(p.scores[t]));
      }
      // the PCA centres a float32 copy: agreement to float32 precision when exact
      expect(err / scale).toBeLessThan(d > 256 ? 0.05 : 1e-6);
    }
  });
  it('starts every fold cold: a fold fitted alone predicts what it predicts inside the CV', () => {
    const { X, lab } = blobs(120, 6, 3, 0.8, 4);
    // few iterations: the fit stops far from the optimum, so where it starts shows in the predictions
    const run = cvRun([{ X, d: 6 }], 120, lab, 3, { pca: 3, maxIter: 2 }, 9);
    for (const pf of [...run.folds].reverse()) {
      const alone = predictFold(pf, lab, 3, { maxIter: 2 }, 0).pred;
      pf.test.forEach((i, t) => expect(alone[t]).toBe(run.pred[i]));
    }
  });
  it('repeats use other folds; repeat 0 is the single CV with the same seed', () => {
    const { X, lab } = blobs(150, 5, 3, 0.6, 6);
    const cv = repeatedCv([{ X, d: 5 }], 150, lab, 3, { repeats: 3, seed: 11 });
    expect(cv.preds.length).toBe(3);
    expect(Array.from(cv.preds[0])).toEqual(Array.from(crossValidatedPredictions(X, 150, 5, lab, 3, { seed: 11 })));
    expect(Array.from(cv.preds[1])).toEqual(Array.from(crossValidatedPredictions(X, 150, 5, lab, 3, { seed: 12 })));
    // with overlapping classes some items change prediction with the folds
    expect(cv.preds[1].some((v, i) => v !== cv.preds[0][i])).toBe(true);
  });
});

/** Everything a repeated CV gives, as plain arrays (for exact comparison). */
const cvArrays = (r: RepeatedCv) => ({ preds: r.preds.map((p) => Array.from(p)), chosenC: r.chosenC, folds: r.folds,
  prepared: r.prepared.map((f) => ({ train: Array.from(f.train), Xtr: Array.from(f.Xtr), Xte: Array.from(f.Xte),
    d: f.d })
  ) });

describe('keyed blocks (the in-fold PCA shared between probes)', () => {
  // a state X and word features W of the same items, two labellings of them (other folds)
  const n = 120;
  const { X, lab } = blobs(n, 20, 3, 0.6, 21);
  const rng = new Rng(8);
  const W = Float64Array.from({ length: n * 15 },
    (_, t) => rng.normal() + (lab[Math.floor(t / 15)] === t % 3 ? 0.8 : 0));
  const lab2 = Int32Array.from(lab, (c, i) => (i % 4 === 0 ? (c + 1) % 3 : c));
  const opts = { repeats: 3, seed: 4, pca: 5, cGrid: [0.1, 1] };

  it('give exactly the unkeyed probes, in the order a swap analysis fits them', () => {
    const plain = (blocks: Block[], y: Int32Array) =>
      cvArrays(repeatedCv(blocks.map((b) => ({ X: b.X, d: b.d })), n, y, 3, opts));
    const w: Block = { X: W, d: 15, key: blockKey('words') };
    const x: Block = { X, d: 20, key: blockKey('state') };
    for (const [blocks, y] of [[[w], lab], [[w], lab2], [[x], lab], [[w, x], lab], [[x], lab2], [[w, x], lab2], [[x, w],
      lab]] as [Block[], Int32Array][])
    {
      expect(cvArrays(repeatedCv(blocks, n, y, 3, opts))).toEqual(plain(blocks, y));
    }
  });

  it('are reduced once: values changed under a key already seen change nothing (a key names one matrix)', () => {
    const Xc = Float64Array.from(X);
    const x: Block = { X: Xc, d: 20, key: blockKey('state') };
    const first = cvArrays(repeatedCv([x], n, lab, 3, opts));
    Xc.fill(0);
    // the same folds: every reduction is the kept one
    expect(cvArrays(repeatedCv([x], n, lab, 3, opts))).toEqual(first);
    // other folds (another labelling): reduced anew, from the zeros
    const other = repeatedCv([x], n, lab2, 3, opts);
    expect(other.prepared.every((f) => f.Xtr.every((v) => v === 0))).toBe(true);
  });

  it('on worker threads give exactly the single-thread probes', async () => {
    const { ClusterPool } = await import('../../src/cluster/pool.js');
    const pool = await ClusterPool.start(2);
    try {
      const w: Block = { X: W, d: 15, key: blockKey('words') };
      const x: Block = { X, d: 20, key: blockKey('state') };
      const o = { ...opts, repeats: 5 };
      for (const [blocks, y] of [[[w], lab], [[x], lab], [[w, x], lab], [[w, x], lab2]] as [Block[], Int32Array][]) {
        const b = await pool.repeatedCv(blocks, n, y, 3, o);
        expect(cvArrays(b)).toEqual(cvArrays(repeatedCv(blocks.map((k) => ({ X: k.X, d: k.d })), n, y, 3, o)));
      }
    } finally {
      await pool.close();
    }
  });
});

describe('orthonormalize', () => {
  it('gives the thin QR factor: orthonormal columns, A = Q R with R upper triangular, positive diagonal', () => {
    const rng = new Rng(3);
    for (const [rows, cols] of [[39, 7], [40, 12], [6, 6], [3, 2]]) {
      const A = Float64Array.from({ length: rows * cols }, () => (rng.next() < 0.25 ? 0 : rng.normal()));
      const Q = Float64Array.from(A);
      orthonormalize(Q, rows, cols);
      const dot = (M: Float64Array, a: number, N: Float64Array, b: number) => {
        let s = 0;
        for (let r = 0; r < rows; r++) s += M[r * cols + a] * N[r * cols + b];
        return s;
      };
      for (let a = 0; a < cols; a++) {
        for (let b = 0; b < cols; b++) {
          expect(dot(Q, a, Q, b)).toBeCloseTo(a === b ? 1 : 0, 10);
          // R = Qᵀ A: zero below the diagonal, positive on it
          if (a > b) expect(dot(Q, a, A, b)).toBeCloseTo(0, 10);
          if (a === b) expect(dot(Q, a, A, b)).toBeGreaterThan(0);
        }
      }
      // Q R = A
      for (let r = 0; r < rows; r++) {
        for (let b = 0; b < cols; b++) {
          let s = 0;
          for (let a = 0; a <= b; a++) s += Q[r * cols + a] * dot(Q, a, A, b);
          expect(s).toBeCloseTo(A[r * cols + b], 9);
        }
      }
    }
  });
});

describe('class weights', () => {
  it("are scikit-learn's n / (K · n_c), and a weight of 2 fits like a duplicated row", () => {
    const y = Int32Array.from([0, 0, 0, 1, 2, 2]);
    expect(Array.from(sampleWeights(y, 3, 'balanced')!)).toEqual([6 / 9, 6 / 9, 6 / 9, 2, 1, 1]);
    expect(sampleWeights(y, 3, null)).toBeUndefined();
    const { X, lab } = blobs(40, 3, 2, 1, 3);
    const w = Float64Array.from({ length: 40 }, (_, i) => (i < 10 ? 2 : 1));
    const a = fitLogistic(X, 40, 3, lab, 1, 2, 2000, 1e-12, undefined, true, w);
    const Xd = new Float64Array(50 * 3);
    Xd.set(X);
    Xd.set(X.subarray(0, 30), 120);
    const yd = Int32Array.from({ length: 50 }, (_, i) => lab[i < 40 ? i : i - 40]);
    const b = fitLogistic(Xd, 50, 3, yd, 1, 2, 2000, 1e-12);
    // softmax weights are defined up to a shift per feature across classes: compare differences
    for (let j = 0; j <= 3; j++) expect(a.W[j * 2 + 1] - a.W[j * 2]).toBeCloseTo(b.W[j * 2 + 1] - b.W[j * 2], 5);
  });
  it('raise the balanced accuracy on imbalanced classes', () => {
    const rng = new Rng(8);
    const n = 400;
    const d = 4;
    const lab = Int32Array.from({ length: n }, (_, i) => (i % 10 === 0 ? 1 : 0));
    const X = Float64Array.from({ length: n * d },
      (_, t) => rng.normal() + (t % d === 0 && lab[Math.floor(t / d)] === 1 ? 1.2 : 0));
    const bal = (p: Int32Array) => {
      const r = [0, 1].map((c) =>
        Array.from(lab).filter((v, i) => v === c && p[i] === c).length / Array.from(lab).filter((v) => v === c).length
      );
      return (r[0] + r[1]) / 2;
    };
    const plain = bal(crossValidatedPredictions(X, n, d, lab, 2, { seed: 1 }));
    const weighted = bal(crossValidatedPredictions(X, n, d, lab, 2, { seed: 1, classWeight: 'balanced' }));
    expect(weighted).toBeGreaterThan(plain + 0.1);
  });
});

describe('the bootstrap over items and repeats', () => {
  it('with one repeat is the plain bootstrap of the predictions, draw for draw', () => {
    const { X, lab } = blobs(100, 4, 3, 0.7, 2);
    const p = crossValidatedPredictions(X, 100, 4, lab, 3, { seed: 3 });
    const a = bootstrapRepeated(lab, [p], 3, 300, new Rng(7));
    const b = bootstrapScores(lab, p, 3, 300, new Rng(7));
    expect(a.ci).toEqual(b);
  });
  it('covers the spread between repeats, which a bootstrap of one repeat leaves out', () => {
    // two repeats of 1,000 items, one 60% right and one 80% right
    const n = 1000;
    const y = new Int32Array(n);
    const p1 = Int32Array.from({ length: n }, (_, i) => (i % 10 < 6 ? 0 : 1));
    const p2 = Int32Array.from({ length: n }, (_, i) => (i % 10 < 8 ? 0 : 1));
    const r = bootstrapRepeated(y, [p1, p2], 2, 4000, new Rng(1));
    expect(r.value.accuracy).toBeCloseTo(0.7, 12);
    // the mixture of the two item bootstraps: from below 0.6 to above 0.8
    expect(r.ci.accuracy![0]).toBeLessThan(0.6);
    expect(r.ci.accuracy![1]).toBeGreaterThan(0.8);
    const one = bootstrapScores(y, p1, 2, 4000, new Rng(1)).accuracy!;
    expect(one[1] - one[0]).toBeLessThan(0.07);
  });
});

describe('the paired bootstrap', () => {
  // 6 items; A right on items 0-3 and 5, B right on items 1 and 3: the per-item difference of hits
  // is 1 on items 0, 2, 5 and 0 on the others, so a resample's accuracy difference is K/6 with
  // K ~ Binomial(6, 1/2). By hand: P(K = 0) = 1/64, P(K ≤ 1) = 7/64, P(K ≤ 4) = 57/64,
  // P(K ≤ 5) = 63/64, so the 2.5th percentile is 1/6 and the 97.5th is 5/6, and the two-sided
  // p is 2 · P(K = 0) = 1/32.
  const y = new Int32Array(6);
  const A = Int32Array.from([0, 0, 0, 0, 1, 0]);
  const B = Int32Array.from([1, 0, 1, 0, 1, 1]);
  it('gives the exact bootstrap distribution of the difference (hand computation)', () => {
    const r = pairedBootstrap(y, [A], [B], 2, 20000, new Rng(3)).accuracy;
    expect(r.value).toBeCloseTo(0.5, 12);
    expect(r.ci95![0]).toBeCloseTo(1 / 6, 12);
    expect(r.ci95![1]).toBeCloseTo(5 / 6, 12);
    expect(r.p!).toBeGreaterThan(1 / 32 - 0.006);
    expect(r.p!).toBeLessThan(1 / 32 + 0.006);
  });
  it('is paired: the same items for both (independent resamples would reach below 0)', () => {
    // independently, acc(A) ~ Bin(6, 5/6)/6 and acc(B) ~ Bin(6, 2/6)/6: P(diff ≤ 0) ≈ 0.05,
    // so their 2.5th percentile would be at or below 0
    const r = pairedBootstrap(y, [A], [B], 2, 20000, new Rng(4)).accuracy;
    expect(r.ci95![0]).toBeGreaterThan(0);
  });
  it('averages the difference over repeats and draws a repeat per resample', () => {
    const A2 = Int32Array.from([0, 0, 0, 0, 0, 0]);
    const r = pairedBootstrap(y, [A, A2], [B, B], 2, 20000, new Rng(5)).accuracy;
    // repeat 0: 3/6; repeat 1: 4/6 (A2 right everywhere, B wrong on 4 items)
    expect(r.value).toBeCloseTo((3 / 6 + 4 / 6) / 2, 12);
    // repeat 1's resampled difference is K'/6 with K' ~ Bin(6, 4/6) ≥ 1 unless all 6 draws miss
    // its 4 items: the mixture's 97.5th percentile is 1 (P(K' = 6) = 0.088, half of it 0.044)
    expect(r.ci95![1]).toBeCloseTo(1, 12);
    expect(r.ci95![0]).toBeCloseTo(1 / 6, 12);
  });
  it('scores B against its own labels when given (two labels of the same items)', () => {
    // A predicts labels y (all 0) and is right on items 0-3 and 5; B predicts the labels yB and is
    // right on items 1 and 3 of yB: the same per-item hits as above, so the same distribution
    const yB = Int32Array.from([0, 1, 0, 1, 0, 0]);
    const Bq = Int32Array.from([1, 1, 1, 1, 1, 1]);
    const r = pairedBootstrap(y, [A], [Bq], 2, 20000, new Rng(3), yB).accuracy;
    expect(r.value).toBeCloseTo(0.5, 12);
    expect(r.ci95![0]).toBeCloseTo(1 / 6, 12);
    expect(r.ci95![1]).toBeCloseTo(5 / 6, 12);
    // against y instead, B would be wrong everywhere
    expect(pairedBootstrap(y, [A], [Bq], 2, 100, new Rng(3)).accuracy.value).toBeCloseTo(5 / 6, 12);
  });
});

describe('repeats on worker threads', () => {
  it('give exactly the single-thread repeated CV', async () => {
    const { ClusterPool } = await import('../../src/cluster/pool.js');
    const { X, lab } = blobs(90, 7, 3, 0.5, 13);
    const opts = { repeats: 4, seed: 2, pca: 3, cGrid: [0.1, 1] };
    const a = repeatedCv([{ X, d: 7 }], 90, lab, 3, opts);
    const pool = await ClusterPool.start(2);
    try {
      const b = await pool.repeatedCv([{ X, d: 7 }], 90, lab, 3, opts);
      expect(b.preds.map((p) => Array.from(p))).toEqual(a.preds.map((p) => Array.from(p)));
      expect(b.chosenC).toEqual(a.chosenC);
      expect(b.folds).toBe(a.folds);
      expect(b.prepared.map((f) => Array.from(f.Xte))).toEqual(a.prepared.map((f) => Array.from(f.Xte)));
    } finally {
      await pool.close();
    }
  });
  it('two at once on one pool (the cluster command starts the embedding’s beside the original space’s) each give their single-thread CV', async () => {
    const { ClusterPool } = await import('../../src/cluster/pool.js');
    const { X, lab } = blobs(90, 7, 3, 0.5, 13);
    const Y = Float64Array.from({ length: 180 }, (_, t) => X[Math.floor(t / 2) * 7 + (t % 2)]);
    const opts = { repeats: 5, seed: 4, pca: 3, cGrid: [0.01, 0.1, 1, 10] };
    const a = repeatedCv([{ X, d: 7 }], 90, lab, 3, opts);
    const b = repeatedCv([{ X: Y, d: 2 }], 90, lab, 3, opts);
    const pool = await ClusterPool.start(1);
    try {
      const [pa, pb] = await Promise.all([pool.repeatedCv([{ X, d: 7 }], 90, lab, 3, opts),
        pool.repeatedCv([{ X: Y, d: 2 }], 90, lab, 3, opts)]);
      for (const [got, want] of [[pa, a], [pb, b]] as const) {
        expect(got.preds.map((p) => Array.from(p))).toEqual(want.preds.map((p) => Array.from(p)));
        expect(got.chosenC).toEqual(want.chosenC);
      }
      // the two probes differ, so a reply matched to the wrong call would show
      expect(a.preds.map((p) => Array.from(p))).not.toEqual(b.preds.map((p) => Array.from(p)));
    } finally {
      await pool.close();
    }
  });
});

describe('the PCA of a sparse block', () => {
  it('finds the dense PCA’s subspace without forming the centred matrix', async () => {
    const { csrRows, pcaCsr, csrProject } = await import('../../src/cluster/pca-sparse.js');
    const rng = new Rng(21);
    const n = 150;
    const d = 400;
    // counts: each row holds ~12 ids, ids of low index more often (a decaying spectrum)
    const X = new Float64Array(n * d);
    for (let i = 0; i < n; i++) for (let t = 0; t < 12; t++) X[i * d + Math.floor(d * rng.next() ** 3)] += 1;
    const rows = Int32Array.from({ length: n }, (_, i) => i);
    const A = csrRows(X, d, rows);
    expect(A.ptr[n]).toBeLessThan(0.05 * n * d);
    const s = pcaCsr(A, 5, 3);
    const dense = pca(X, n, d, 5, { seed: 3, method: 'randomized' });
    const Ps = csrProject(A, s);
    const Pd = pcaProject(dense, X, n, d);
    for (let c = 0; c < 5; c++) {
      // the same component up to its sign
      let dot = 0;
      let ns = 0;
      let nd = 0;
      for (let i = 0; i < n; i++) {
        dot += Ps[i * 5 + c] * Pd[i * 5 + c];
        ns += Ps[i * 5 + c] ** 2;
        nd += Pd[i * 5 + c] ** 2;
      }
      expect(Math.abs(dot) / Math.sqrt(ns * nd)).toBeGreaterThan(1 - 1e-6);
      expect(ns).toBeCloseTo(nd, 3);
    }
  });
});
