import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { blobs } from '../cluster/blobs.js';
import { ClusterPool } from '../../src/cluster/pool.js';
import { overlapSplit } from '../../src/tsne/pool.js';
import { QuadTree, repulsionAll } from '../../src/tsne/quadtree.js';
import { attraction } from '../../src/tsne/attraction.js';
import { conditionalP, jointP, neighboursFor, type SparseP } from '../../src/tsne/affinity.js';
import { knn } from '../../src/tsne/knn.js';
import { stepRange, type StepParams } from '../../src/tsne/step.js';
import { sharedF64, sharedI32 } from '../../src/util/worker.js';
import { Tsne } from '../../src/cluster/tsne-pca.js';
import { tsneGradient } from '../../src/tsne/tsne.js';

let pool: ClusterPool;
beforeAll(async () => {
  pool = await ClusterPool.start(2);
});
afterAll(async () => {
  await pool.close();
});

const n = 2500;
function setup(): { P: SparseP; Y: Float64Array } {
  const { X } = blobs(n, 8, 4, 3, 21);
  const k = neighboursFor(20, n);
  const nn = knn(X, n, 8, k);
  const P0 = jointP(nn, conditionalP(nn, n, 20).P, n);
  const P: SparseP = { n, rowPtr: sharedI32(P0.rowPtr), cols: sharedI32(P0.cols), vals: sharedF64(P0.vals), id: 9001 };
  const rng = new Rng(4);
  const Y = sharedF64(new Float64Array(2 * n).map(() => rng.normal() * 6));
  return { P, Y };
}

describe('the overlapped Barnes–Hut gradient and the threaded step', () => {
  it('give the single-thread sums for every split of the attraction, including none and all', async () => {
    const { P, Y } = setup();
    const tree1 = new QuadTree(n);
    tree1.build(Y, n);
    const F1 = new Float64Array(2 * n);
    const Z1 = new Float64Array(n);
    repulsionAll(tree1, Y, 0.5, F1, Z1);
    const A1 = new Float64Array(2 * n);
    attraction(P, Y, 12, A1);
    const tree = new QuadTree(n, true);
    for (const split of [0, 1, 777, n - 1, n]) {
      const F = sharedF64(new Float64Array(2 * n).fill(NaN));
      const Zi = sharedF64(new Float64Array(n).fill(NaN));
      const A = sharedF64(new Float64Array(2 * n).fill(NaN));
      let built = 0;
      const took = await pool.bhGradient(() => (built++, tree.build(Y, n)), tree, split, Y, n, 0.5, F, Zi, P, 12, A);
      expect(built).toBe(1);
      expect(took.split).toBe(split === 0 ? Math.floor((2 * n) / 3) : split);
      expect(Array.from(F)).toEqual(Array.from(F1));
      expect(Array.from(Zi)).toEqual(Array.from(Z1));
      expect(Array.from(A)).toEqual(Array.from(A1));
    }
  });

  it('the step on three threads equals one thread’s, for both gains rules, with clipped points', async () => {
    const { Y } = setup();
    const rng = new Rng(8);
    const mk = (s: number) => sharedF64(new Float64Array(2 * n).map(() => rng.normal() * s));
    const A = mk(1);
    const F = mk(30);
    const up0 = mk(2);
    up0.fill(0, 0, 100); // zero updates: openTSNE's rule counts them as a change of sign
    const gains0 = sharedF64(new Float64Array(2 * n).map(() => 0.02 + rng.next() * 2));
    for (const additiveGain of [false, true]) {
      const sp: StepParams = { invZ: 1 / 40, momentum: 0.8, learningRate: 300, maxStepNorm: 5, additiveGain };
      const y1 = Float64Array.from(Y), u1 = Float64Array.from(up0), g1 = Float64Array.from(gains0);
      stepRange(y1, u1, g1, A, F, sp, 0, n);
      const y2 = sharedF64(Y), u2 = sharedF64(up0), g2 = sharedF64(gains0);
      await pool.step(y2, u2, g2, A, F, sp, n);
      expect(Array.from(y2)).toEqual(Array.from(y1));
      expect(Array.from(u2)).toEqual(Array.from(u1));
      expect(Array.from(g2)).toEqual(Array.from(g1));
      // some points were clipped, and none is above the largest step
      let clipped = 0;
      for (let i = 0; i < n; i++) {
        const s = Math.hypot(u1[2 * i], u1[2 * i + 1]);
        expect(s).toBeLessThanOrEqual(5 * (1 + 1e-12));
        if (s > 5 - 1e-9) clipped++;
      }
      expect(clipped).toBeGreaterThan(10);
    }
  });

  it('the gains rules against their definitions (scikit-learn: ×0.8 floored at 0.01; openTSNE: ×0.8 + 0.01, sign changes by np.sign)', () => {
    const cases: [number, number, number][] = [
      // update, gradient, gain
      [1, 1, 1],
      [1, -1, 1],
      [0, 1, 1],
      [0, 0, 1],
      [-2, 3, 0.011],
      [2, 3, 0.011],
    ];
    for (const [u, gr, g0] of cases) {
      for (const additiveGain of [false, true]) {
        const Y = new Float64Array(2);
        const up = Float64Array.of(u, 0);
        const gains = Float64Array.of(g0, 1);
        // A − F/Z with F = 0: the gradient is 4A
        stepRange(Y, up, gains, Float64Array.of(gr / 4, 0), new Float64Array(2), { invZ: 1, momentum: 0.5,
          learningRate: 1, maxStepNorm: Infinity, additiveGain }, 0, 1);
        const flipped = additiveGain ? Math.sign(u) !== Math.sign(gr) : u * gr < 0;
        const want = flipped ? g0 + 0.2 : additiveGain ? g0 * 0.8 + 0.01 : Math.max(g0 * 0.8, 0.01);
        expect(gains[0]).toBeCloseTo(want, 15);
        expect(up[0]).toBeCloseTo(0.5 * u - want * gr, 14);
        expect(Y[0]).toBe(up[0]);
      }
    }
  });

  it('an error in a worker’s attraction (sent without a reply) reaches the caller, and the pool goes on', async () => {
    const { P, Y } = setup();
    const tree = new QuadTree(n, true);
    const F = sharedF64(new Float64Array(2 * n));
    const Zi = sharedF64(new Float64Array(n));
    const A = sharedF64(new Float64Array(2 * n));
    const broken = { ...P, rowPtr: null, id: 9002 } as unknown as SparseP;
    // the workers take every row (this thread none), so the error is theirs alone
    await expect(pool.bhGradient(() => tree.build(Y, n), tree, n, Y, n, 0.5, F, Zi, broken, 1, A)).rejects.toThrow(
      /null/,
    );
    // this thread's error is thrown after the workers' replies are in
    await expect(pool.bhGradient(() => tree.build(Y, n), tree, 1, Y, n, 0.5, F, Zi, broken, 1, A)).rejects.toThrow(
      /null/,
    );
    await pool.bhGradient(() => tree.build(Y, n), tree, 0, Y, n, 0.5, F, Zi, P, 1, A);
    const A1 = new Float64Array(2 * n);
    attraction(P, Y, 1, A1);
    expect(Array.from(A)).toEqual(Array.from(A1));
  });

  it('overlapSplit: the even split without a build, (1 + build / attraction) of it with one, at most 0.95, in steps of 256 rows', () => {
    expect(overlapSplit(0, 40, 100_000, 1)).toBe(Math.round(50_000 / 256) * 256);
    expect(overlapSplit(10, 40, 100_000, 1)).toBe(Math.round(62_500 / 256) * 256);
    expect(overlapSplit(500, 40, 100_000, 1)).toBe(Math.round(95_000 / 256) * 256);
    expect(overlapSplit(10, 0, 100_000, 1)).toBe(Math.round(50_000 / 256) * 256);
    expect(overlapSplit(8, 40, 90_000, 2)).toBe(Math.round((1.2 * (2 / 3) * 90_000) / 256) * 256);
    expect(overlapSplit(0, 40, 100, 1)).toBe(0);
  });
});

describe('the optimizer rules, against a transcription of each library’s loop on the exact gradient', () => {
  const m = 80;
  const { X } = blobs(m, 6, 3, 4, 31);
  const rng = new Rng(6);
  const Y0 = new Float64Array(2 * m).map(() => rng.normal() * 1e-2);
  const iterations = 40;
  const early = 20;
  /** scikit-learn: momentum 0.5 then 0.8, gains +0.2 / ×0.8 floored at 0.01, fresh state when the exaggeration ends; openTSNE: momentum 0.8, gains +0.2 / ×0.8 + 0.01 by np.sign, state kept. */
  function transcribe(P: SparseP, rule: 'scikit-learn' | 'openTSNE'): Float64Array {
    const Y = Float64Array.from(Y0);
    let up = new Float64Array(2 * m);
    let gains = new Float64Array(2 * m).fill(1);
    for (let it = 0; it < iterations; it++) {
      if (it === early && rule === 'scikit-learn') {
        up = new Float64Array(2 * m);
        gains = new Float64Array(2 * m).fill(1);
      }
      const g = tsneGradient(P, Y, 0, it < early ? 12 : 1);
      const mom = rule === 'openTSNE' || it >= early ? 0.8 : 0.5;
      const lr = Math.max(m / (it < early ? 12 : 1) / 4, 50);
      for (let t = 0; t < 2 * m; t++) {
        if (rule === 'openTSNE')
          gains[t] = Math.sign(up[t]) !== Math.sign(g[t]) ? gains[t] + 0.2 : gains[t] * 0.8 + 0.01;
        else gains[t] = up[t] * g[t] < 0 ? gains[t] + 0.2 : Math.max(gains[t] * 0.8, 0.01);
        up[t] = mom * up[t] - lr * gains[t] * g[t];
      }
      for (let i = 0; i < m; i++) {
        const s = Math.hypot(up[2 * i], up[2 * i + 1]);
        if (s > 5) {
          up[2 * i] = (up[2 * i] / s) * 5;
          up[2 * i + 1] = (up[2 * i + 1] / s) * 5;
        }
      }
      for (let t = 0; t < 2 * m; t++) Y[t] += up[t];
    }
    return Y;
  }
  it('each optimizer follows its own transcription and not the other', async () => {
    const runs: Record<string, Float64Array> = {};
    let P: SparseP | null = null;
    for (const optimizer of ['scikit-learn', 'openTSNE'] as const) {
      const t = await Tsne.create(X, m, 6, { affinity: { perplexity: 10 },
        optimizer: { theta: 0, iterations, exaggerationIterations: early, learningRate: 'per-phase', rule: optimizer,
          init: Y0 } });
      t.init();
      await t.run();
      runs[optimizer] = t.embedding;
      P = t.P;
    }
    const dist = (a: Float64Array, b: Float64Array) => Math.max(...Array.from(a, (v, i) => Math.abs(v - b[i])));
    const sk = transcribe(P!, 'scikit-learn');
    const ot = transcribe(P!, 'openTSNE');
    const scale = Math.max(...Array.from(ot, Math.abs));
    expect(dist(runs['scikit-learn'], sk)).toBeLessThan(1e-9 * scale);
    expect(dist(runs.openTSNE, ot)).toBeLessThan(1e-9 * scale);
    expect(dist(runs.openTSNE, sk)).toBeGreaterThan(1e-3 * scale);
    expect(dist(sk, ot)).toBeGreaterThan(1e-3 * scale);
    await expect(Tsne.create(X, m, 6, { affinity: { perplexity: 10 }, optimizer: { rule: 'adam' as 'openTSNE' } }))
      .rejects.toThrow(/optimizer rule must be scikit-learn or openTSNE, got adam/);
  });
});
