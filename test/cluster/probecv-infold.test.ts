/**
 * The probe's in-fold PCA on the two routes that replace the plain dense one
 * (src/cluster/probecv.ts): a dense block with its Gram matrix (Block.gram, the randomized PCA
 * from the double-centred Gram matrix of the training rows, src/cluster/pca.ts gramPcaProject)
 * and a sparse block (d > 256, under 10% non-zero: src/cluster/pca-sparse.ts). Each is checked
 * through prepareFold against the plain route, and for fitting on the training rows only: test
 * rows changed far off the data leave the training features bit for bit as they were.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { gramRows } from '../../src/cluster/metrics.js';
import { csrProject, csrRows, pcaCsr } from '../../src/cluster/pca-sparse.js';
import { blockKey, gramPays, prepareFold, repeatedCv, splitFold, standardize } from '../../src/cluster/probecv.js';
import { stratifiedFolds } from '../../src/cluster/probe.js';

/** n rows of d dims with a decaying spectrum (sd 3 / √(1 + j)) plus a class offset on the first 6 dims. */
function decaying(n: number, d: number, seed: number): { X: Float64Array; lab: Int32Array } {
  const rng = new Rng(seed);
  const lab = Int32Array.from({ length: n }, (_, i) => i % 3);
  const X = Float64Array.from({ length: n * d }, (_, t) => {
    const i = Math.floor(t / d);
    const j = t % d;
    return (3 * rng.normal()) / Math.sqrt(1 + j) + (j < 6 ? 0.8 * (lab[i] - 1) : 0);
  });
  return { X, lab };
}

function gramOf(X: Float64Array, n: number, d: number): Float64Array {
  const G = new Float64Array(n * n);
  gramRows(X, n, d, G, 0, n);
  return G;
}

const maxAbsDiff = (a: Float64Array, b: Float64Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe('the in-fold PCA from the Gram matrix (n < d)', () => {
  const n = 150;
  const d = 400;
  const k = 8;
  const { X, lab } = decaying(n, d, 3);
  const { train, test } = splitFold(stratifiedFolds(lab, 3, 5, 1), 0);

  it('gives the plain route’s standardized features to rounding (max abs difference under 2e-6; 5.3e-7 here)', () => {
    const plain = prepareFold([{ X, d }], train, test, k, 4);
    const viaGram = prepareFold([{ X, d, gram: gramOf(X, n, d) }], train, test, k, 4);
    expect(viaGram.d).toBe(plain.d);
    // the plain route centres a float32 copy (relative rounding 6e-8); the two agree to that,
    // amplified by the gaps between the sketch's eigenvalues
    const err = Math.max(maxAbsDiff(plain.Xtr, viaGram.Xtr), maxAbsDiff(plain.Xte, viaGram.Xte));
    expect(err).toBeLessThan(2e-6);
    // and the features are not trivially equal: the components carry the data
    expect(maxAbsDiff(plain.Xtr, new Float64Array(plain.Xtr.length))).toBeGreaterThan(1);
  });

  it('fits on the training rows only: test rows moved far off leave the training features bit for bit', () => {
    const a = prepareFold([{ X, d, gram: gramOf(X, n, d) }], train, test, k, 4);
    const Y = Float64Array.from(X);
    // the test rows get a huge variance along coordinate 7: a PCA (or centring) that saw them
    // would turn a component towards it
    test.forEach((i, t) => (Y[i * d + 7] += 40 * (t % 2 ? 1 : -1) + 25));
    const b = prepareFold([{ X: Y, d, gram: gramOf(Y, n, d) }], train, test, k, 4);
    expect(Array.from(b.Xtr)).toEqual(Array.from(a.Xtr));
    expect(maxAbsDiff(a.Xte, b.Xte)).toBeGreaterThan(0.1);
  });

  it('gives the plain route’s repeated CV, on worker threads too', async () => {
    const opts = { repeats: 2, seed: 2, pca: k, cGrid: [0.01, 1] };
    const G = gramOf(X, n, d);
    const plain = repeatedCv([{ X, d }], n, lab, 3, opts);
    const viaGram = repeatedCv([{ X, d, gram: G }], n, lab, 3, opts);
    expect(viaGram.preds.map((p) => Array.from(p))).toEqual(plain.preds.map((p) => Array.from(p)));
    expect(viaGram.chosenC).toEqual(plain.chosenC);
    const { ClusterPool } = await import('../../src/cluster/pool.js');
    const pool = await ClusterPool.start(2);
    try {
      const b = await pool.repeatedCv([{ X, d, gram: G }], n, lab, 3, opts);
      expect(b.preds.map((p) => Array.from(p))).toEqual(viaGram.preds.map((p) => Array.from(p)));
      expect(b.prepared.map((f) => Array.from(f.Xte))).toEqual(viaGram.prepared.map((f) => Array.from(f.Xte)));
    } finally {
      await pool.close();
    }
  });
});

describe('the in-fold PCA of a sparse block (token counts)', () => {
  const n = 120;
  const d = 500;
  const k = 6;
  const rng = new Rng(8);
  // ~15 counts per row over 500 ids, low ids more often (under 3% non-zero)
  const X = new Float64Array(n * d);
  for (let i = 0; i < n; i++) for (let t = 0; t < 15; t++) X[i * d + Math.floor(d * rng.next() ** 3)] += 1;
  const lab = Int32Array.from({ length: n }, (_, i) => i % 3);
  const { train, test } = splitFold(stratifiedFolds(lab, 3, 4, 5), 0);

  it('runs on the sparse rows of the training fold: test rows moved far off leave the training features bit for bit', () => {
    const nz = X.reduce((a, v) => a + (v !== 0 ? 1 : 0), 0);
    expect(nz / X.length).toBeLessThan(0.1);
    const a = prepareFold([{ X, d }], train, test, k, 2);
    const Y = Float64Array.from(X);
    // every test row gets 60 counts of one rare id: a PCA fitted on them would make it a component
    for (const i of test) Y[i * d + 450] += 60;
    const b = prepareFold([{ X: Y, d }], train, test, k, 2);
    expect(Array.from(b.Xtr)).toEqual(Array.from(a.Xtr));
    expect(maxAbsDiff(a.Xte, b.Xte)).toBeGreaterThan(0.1);
  });

  it('projects the test rows on the training fold’s components, standardized by the training rows', () => {
    const pf = prepareFold([{ X, d }], train, test, k, 2);
    const A = csrRows(X, d, train);
    const p = pcaCsr(A, k, 2);
    const tr = csrProject(A, p);
    const te = csrProject(csrRows(X, d, test), p);
    standardize(tr, train.length, p.k, te, test.length);
    expect(maxAbsDiff(pf.Xtr, tr)).toBeLessThan(1e-12);
    expect(maxAbsDiff(pf.Xte, te)).toBeLessThan(1e-12);
  });
});

describe('which blocks get a Gram matrix (gramPays: a layer of the sweep, the original space)', () => {
  it('a dense block wider than the sample; not a sparse, keyed, narrow or unreduced one', () => {
    const n = 40;
    const rng = new Rng(1);
    const dense = { X: Float64Array.from({ length: n * 300 }, () => rng.normal()), d: 300 };
    const sparse = { X: Float64Array.from({ length: n * 300 }, (_, t) => (t % 50 === 0 ? 1 : 0)), d: 300 };
    expect(gramPays(dense, n, 8)).toBe(true);
    expect(gramPays(sparse, n, 8)).toBe(false);
    expect(gramPays({ ...dense, key: blockKey('state') }, n, 8)).toBe(false);
    expect(gramPays(dense, n, 0)).toBe(false);
    expect(gramPays({ X: dense.X.subarray(0, n * 30), d: 30 }, n, 8)).toBe(false);
    expect(gramPays(dense, 300, 8)).toBe(false);
  });
});
