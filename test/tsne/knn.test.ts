import { describe, expect, it } from 'vitest';
import { knn, knnRows } from '../../src/tsne/knn.js';
import { Rng } from '../../src/util/rng.js';

/** Integer-valued points on a small grid, so that many distances tie exactly. */
function gridPoints(n: number, d: number, seed: number): Float64Array {
  const rng = new Rng(seed);
  const X = new Float64Array(n * d);
  for (let t = 0; t < n * d; t++) X[t] = rng.int(4) - 1.5;
  return X;
}

function sortedNeighbours(X: Float64Array, n: number, d: number, i: number): { idx: number[]; dist: number[] } {
  const dist = (j: number) => {
    let s = 0;
    for (let c = 0; c < d; c++) {
      const a = X[i * d + c] - X[j * d + c];
      s += a * a;
    }
    return s;
  };
  const idx = Array.from({ length: n }, (_, j) => j).filter((j) => j !== i);
  idx.sort((a, b) => dist(a) - dist(b) || a - b);
  return { idx, dist: idx.map(dist) };
}

describe('exact kNN kernel', () => {
  it('matches a full sort with exact ties (odd d, n not a multiple of 4, duplicates)', () => {
    const n = 203;
    const d = 7;
    const k = 11;
    const X = gridPoints(n, d, 5);
    X.copyWithin(10 * d, 3 * d, 4 * d); // row 10 duplicates row 3: distance 0
    const r = knn(X, n, d, k);
    for (let i = 0; i < n; i++) {
      const ref = sortedNeighbours(X, n, d, i);
      expect(Array.from(r.indices.subarray(i * k, (i + 1) * k))).toEqual(ref.idx.slice(0, k));
      expect(Array.from(r.dist2.subarray(i * k, (i + 1) * k))).toEqual(ref.dist.slice(0, k));
    }
    expect(r.indices[3 * k]).toBe(10);
    expect(r.dist2[3 * k]).toBe(0);
  });

  it('gives the same result for any split of the rows', () => {
    const n = 150;
    const d = 12;
    const k = 9;
    const rng = new Rng(2);
    const X = new Float64Array(n * d);
    for (let t = 0; t < n * d; t++) X[t] = rng.normal();
    const whole = knn(X, n, d, k);
    for (const cuts of [[0, 1, 67, 150], [0, 5, 6, 7, 99, 150]]) {
      const indices = new Int32Array(n * k);
      const dist2 = new Float64Array(n * k);
      for (let p = 0; p + 1 < cuts.length; p++) {
        const part = cuts[p + 1] - cuts[p];
        const pi = new Int32Array(part * k);
        const pd = new Float64Array(part * k);
        knnRows(X, n, d, k, cuts[p], cuts[p + 1], pi, pd, true);
        indices.set(pi, cuts[p] * k);
        dist2.set(pd, cuts[p] * k);
      }
      expect(indices).toEqual(whole.indices);
      expect(dist2).toEqual(whole.dist2);
    }
    const ref = sortedNeighbours(X, n, d, 77);
    expect(Array.from(whole.indices.subarray(77 * k, 78 * k))).toEqual(ref.idx.slice(0, k));
  });
});
