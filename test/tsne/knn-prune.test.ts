import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knn, type KnnResult } from '../../src/tsne/knn.js';
import { knnPruned, prunable, pruneJob, PRUNE_MIN_ROWS } from '../../src/tsne/knn-prune.js';
import { ClusterPool } from '../../src/cluster/pool.js';
import { OUT_STRIDE } from '../../src/util/dot-simd.js';
import { Rng } from '../../src/util/rng.js';
import { blobs } from '../cluster/blobs.js';

// The oracle is knnRows' float64 pass over every pair (knn): the pruned search must give its lists to the bit.

/** C Gaussian clusters in d dimensions, centres N(0, sep²) per coordinate, unit spread (test/cluster/blobs.ts). */
function clusters(n: number, d: number, seed: number, C = 8, sep = 3): Float64Array {
  return blobs(n, d, C, sep, seed).X;
}

function expectSame(a: KnnResult, b: KnnResult): void {
  expect(a.indices.length).toBe(b.indices.length);
  let bad = 0;
  for (let t = 0; t < a.indices.length; t++)
    if (a.indices[t] !== b.indices[t] || !Object.is(a.dist2[t], b.dist2[t])) bad++;
  expect(bad).toBe(0);
}

describe('exact kNN with block bounds (narrow data)', () => {
  let pool: ClusterPool;
  beforeAll(async () => {
    pool = await ClusterPool.start(1);
  });
  afterAll(async () => {
    await pool.close();
  });

  it('gives knn’s lists on clustered data while computing a small part of the pairs', () => {
    const n = 5000;
    const d = 20;
    const X = clusters(n, d, 1);
    const ref = knn(X, n, d, 30);
    const r = knnPruned(X, n, d, 30);
    expectSame(r, ref);
    expect(r.pairsFraction).toBeLessThan(0.25);
    expect(r.pairsFraction).toBeGreaterThan(0);
  });

  it('gives knn’s lists on data without clusters, where few blocks can be skipped', () => {
    const n = 4500;
    const d = 12;
    const rng = new Rng(2);
    const X = Float64Array.from({ length: n * d }, () => rng.next());
    const r = knnPruned(X, n, d, 15);
    expectSame(r, knn(X, n, d, 15));
    expect(r.pairsFraction).toBeGreaterThan(0.05);
  });

  it('is exact on adversarial data: duplicates (ties broken by index), huge offsets and norms, float32 input; steps aside for a NaN', () => {
    const n = PRUNE_MIN_ROWS + 100;
    const d = 8;
    const X = clusters(n, d, 3, 5, 4);
    // 400 copies of one row: every copy's nearest are other copies at distance 0, ties by index
    for (let i = 1000; i < 1400; i++) X.copyWithin(i * d, 7 * d, 8 * d);
    expectSame(knnPruned(X, n, d, 40), knn(X, n, d, 40));
    const Y = X.map((v, t) => (Math.floor(t / d) % 3 === 0 ? v * 1e5 : v) + 1e6);
    expectSame(knnPruned(Y, n, d, 10), knn(Y, n, d, 10));
    const F = Float32Array.from(X);
    expectSame(knnPruned(F, n, d, 10), knn(F, n, d, 10));
    // a NaN has no place in the order: those data keep knnRows' pass
    const B = X.slice();
    B[50 * d + 3] = NaN;
    expect(prunable(B, n, d, 10)).toBe(false);
    expect(prunable(X, n, d, 10)).toBe(true);
    expect(prunable(X, PRUNE_MIN_ROWS - 1, d, 10)).toBe(false);
  });

  it('blocks: compact parts of at most OUT_STRIDE rows that tile a permutation of the rows', () => {
    const n = 6000;
    const d = 6;
    const X = clusters(n, d, 4);
    const job = pruneJob(X, n, d, 5);
    expect(job.start[0]).toBe(0);
    expect(job.start[job.nb]).toBe(n);
    for (let b = 0; b < job.nb; b++) {
      const size = job.start[b + 1] - job.start[b];
      expect(size).toBeGreaterThan(0);
      expect(size).toBeLessThanOrEqual(OUT_STRIDE);
    }
    expect([...job.perm].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
    // every row of a block lies within its radius of the centroid
    for (let b = 0; b < job.nb; b++)
      for (let p = job.start[b]; p < job.start[b + 1]; p++) {
        let s = 0;
        for (let c = 0; c < d; c++) s += (job.Xp[p * d + c] - job.cent[b * d + c]) ** 2;
        expect(Math.sqrt(s)).toBeLessThanOrEqual(job.rad[b] * (1 + 1e-12));
        expect(job.Xp[p * d]).toBe(X[job.perm[p] * d]);
      }
  });

  it('the pool splits the query blocks over two threads and gives the same lists', async () => {
    const n = 6000;
    const d = 16;
    const X = clusters(n, d, 5);
    let last = 0;
    const r = await pool.knn(X, n, d, 25, (done) => (last = done));
    expectSame(r, knn(X, n, d, 25));
    expect(last).toBe(n);
  });

  it('radii taken at half their size skip blocks that hold neighbours (the bound is what makes it exact)', () => {
    const n = 5000;
    const d = 4;
    const X = clusters(n, d, 1, 8, 3);
    const ref = knn(X, n, d, 30);
    const planted = knnPruned(X, n, d, 30, 0.5);
    let differ = 0;
    for (let t = 0; t < ref.indices.length; t++) if (planted.indices[t] !== ref.indices[t]) differ++;
    expect(differ).toBeGreaterThan(0);
    expectSame(knnPruned(X, n, d, 30, 1), ref);
  });
});
