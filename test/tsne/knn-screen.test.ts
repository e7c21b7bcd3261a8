import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knn, type KnnResult } from '../../src/tsne/knn.js';
import { knnScreened } from '../../src/tsne/knn-screen.js';
import { ClusterPool } from '../../src/cluster/pool.js';
import { Rng } from '../../src/util/rng.js';

// The oracle is knnRows' float64 pass (knn): the screen must give its result to the bit.

function clusters(n: number, d: number, seed: number, spread = 0.3): Float64Array {
  const rng = new Rng(seed);
  const C = 4;
  const centres = Array.from({ length: C * d }, () => rng.normal() * spread);
  const X = new Float64Array(n * d);
  for (let i = 0; i < n; i++) {
    const c = rng.int(C);
    for (let j = 0; j < d; j++) X[i * d + j] = centres[c * d + j] + rng.normal();
  }
  return X;
}

/**
 * Shells of near-ties: a few centres, each with rows at squared distance R²·(1 + 10⁻⁹·t) from it
 * (t a small integer), far closer together than float32's rounding (10⁻⁷ relative), so the
 * selection around the k-th neighbour of a centre hinges on the float64 values alone.
 */
function shells(d: number, seed: number, centres = 3): { X: Float64Array; n: number } {
  const rng = new Rng(seed);
  const per = 70;
  const n = centres * (per + 1);
  const X = new Float64Array(n * d);
  let row = 0;
  for (let c = 0; c < centres; c++) {
    const base = Array.from({ length: d }, () => rng.normal() * 10);
    X.set(base, row++ * d);
    for (let t = 0; t < per; t++) {
      const u = Array.from({ length: d }, () => rng.normal());
      const norm = Math.hypot(...u);
      const r = 3 * Math.sqrt(1 + 1e-9 * rng.int(5));
      for (let j = 0; j < d; j++) X[row * d + j] = base[j] + (r * u[j]) / norm;
      row++;
    }
  }
  return { X, n };
}

function same(a: KnnResult, b: KnnResult): boolean {
  if (a.indices.length !== b.indices.length) return false;
  for (let t = 0; t < a.indices.length; t++)
    if (a.indices[t] !== b.indices[t] || !Object.is(a.dist2[t], b.dist2[t])) return false;
  return true;
}

function expectSame(a: KnnResult, b: KnnResult): void {
  expect(Array.from(a.indices)).toEqual(Array.from(b.indices));
  expect(Array.from(a.dist2)).toEqual(Array.from(b.dist2));
}

describe('kNN through the float32 screen', () => {
  let pool: ClusterPool;
  beforeAll(async () => {
    pool = await ClusterPool.start(1);
  });
  afterAll(async () => {
    await pool.close();
  });

  it('gives knnRows’ neighbours and distances on clustered data, on 1 and 2 ORT threads and through the pool', async () => {
    const n = 300;
    const d = 96;
    const k = 25;
    const X = clusters(n, d, 1);
    const ref = knn(X, n, d, k);
    const stats = { candidates: 0 };
    const one = await knnScreened(X, n, d, k, { threads: 1, stats });
    expect(one).not.toBeNull();
    expectSame(one!, ref);
    expect(stats.candidates).toBeGreaterThanOrEqual(n * k);
    expectSame((await knnScreened(X, n, d, k, { threads: 2 }))!, ref);
    expectSame(await pool.knn(X, n, d, k), ref);
  });

  it('is exact on adversarial data: near-tie shells, duplicates, huge norm differences, a large offset, float32-valued data', async () => {
    const d = 80;
    const { X, n } = shells(d, 2);
    X.copyWithin(5 * d, 7 * d, 8 * d); // row 5 duplicates row 7
    X.copyWithin(6 * d, 7 * d, 8 * d); // and so does row 6: distance 0, tie broken by index
    const k = 30;
    const shellRef = knn(X, n, d, k);
    expectSame((await knnScreened(X, n, d, k, { threads: 2 }))!, shellRef);
    expectSame(await pool.knn(X, n, d, k), shellRef); // rows split over two threads: mutual pairs' values cross threads
    // more rows than one strip of the float32 product (256): the rows after it read mirrored values
    const big = shells(d, 8, 5);
    expect(big.n).toBeGreaterThan(300);
    expectSame((await knnScreened(big.X, big.n, d, k, { threads: 1 }))!, knn(big.X, big.n, d, k));

    const m = 260;
    const Y = clusters(m, d, 3);
    for (let i = 0; i < m; i++) {
      const s = i % 3 === 0 ? 1e5 : i % 3 === 1 ? 1e-5 : 1;
      for (let j = 0; j < d; j++) Y[i * d + j] = Y[i * d + j] * s + 1e4; // offset: |x|² ≫ the distances
    }
    expectSame((await knnScreened(Y, m, d, 12, { threads: 1 }))!, knn(Y, m, d, 12));

    const F = Float64Array.from(clusters(m, 70, 4), Math.fround); // float32 values: read from a float32 copy
    expectSame(await pool.knn(F, m, 70, 17), knn(F, m, 70, 17));
    const F32 = Float32Array.from(F);
    expectSame((await knnScreened(F32, m, 70, 17, { threads: 1 }))!, knn(F32, m, 70, 17));
  });

  it('gives the same result with the float64 sums in JavaScript (no WebAssembly SIMD), and reuses mutual pairs’ values', async () => {
    const n = 300;
    const d = 96;
    const k = 25;
    const X = clusters(n, d, 7);
    const ref = knn(X, n, d, k);
    const before = process.env.LOBES_NO_SIMD;
    process.env.LOBES_NO_SIMD = '1';
    try {
      expectSame((await knnScreened(X, n, d, k, { threads: 1 }))!, ref);
    } finally {
      if (before === undefined) delete process.env.LOBES_NO_SIMD;
      else process.env.LOBES_NO_SIMD = before;
    }
    expectSame((await knnScreened(X, n, d, k, { threads: 1 }))!, ref);
    // the data has mutual pairs to reuse (most pairs are): what the reuse rests on
    let mutual = 0;
    for (let i = 0; i < n; i++)
      for (let t = 0; t < k; t++) {
        const j = ref.indices[i * k + t];
        for (let u = 0; u < k; u++) if (ref.indices[j * k + u] === i) mutual++;
      }
    expect(mutual).toBeGreaterThan(n * k * 0.3);
  });

  it('a margin far below the bound picks other neighbours at near-ties (the bound is what makes it exact)', async () => {
    const d = 80;
    const { X, n } = shells(d, 2);
    const k = 30;
    const ref = knn(X, n, d, k);
    const planted = (await knnScreened(X, n, d, k, { threads: 1, marginScale: 1e-6 }))!;
    expect(same(planted, ref)).toBe(false);
    expectSame((await knnScreened(X, n, d, k, { threads: 1, marginScale: 1 }))!, ref);
  });

  it('steps aside (null) where it does not apply: narrow data, k ≥ n, non-finite or huge values', async () => {
    expect(await knnScreened(clusters(50, 10, 5), 50, 10, 5, { threads: 1 })).toBeNull();
    const X = clusters(40, 64, 6);
    expect(await knnScreened(X, 40, 64, 40, { threads: 1 })).toBeNull();
    const bad = X.slice();
    bad[100] = NaN;
    expect(await knnScreened(bad, 40, 64, 5, { threads: 1 })).toBeNull();
    bad[100] = 2 ** 45;
    expect(await knnScreened(bad, 40, 64, 5, { threads: 1 })).toBeNull();
  });
});
