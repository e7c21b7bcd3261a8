import { describe, it, expect } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { blobs } from './blobs.js';
import {
  distanceMatrix,
  silhouetteSamples,
  neighboursFromDistances,
  knnPredict,
  daviesBouldin,
  bootstrapCI,
  permutationP,
} from '../../src/cluster/metrics.js';
import { stratifiedFolds, fitLogistic } from '../../src/cluster/probe.js';
import { crossValidatedPredictions, repeatedCv } from '../../src/cluster/probecv.js';
import { spaceMetrics } from '../../src/cluster/space.js';

// Six points on a line: class A = {0, 2, 4}, class B = {5, 9, 10}.
const X6 = Float64Array.from([0, 2, 4, 5, 9, 10]);
const L6 = Int32Array.from([0, 0, 0, 1, 1, 1]);

describe('metrics on a 6-point example computed by hand', () => {
  const D = distanceMatrix(X6, 6, 1, 'euclidean');
  it('silhouette', () => {
    // point 0: a = (2+4)/2 = 3, b = (5+9+10)/3 = 8, s = 5/8
    // point 2: a = (2+2)/2 = 2, b = (3+7+8)/3 = 6, s = 4/6
    // point 4: a = (4+2)/2 = 3, b = (1+5+6)/3 = 4, s = 1/4
    // point 5: a = (4+5)/2 = 4.5, b = (5+3+1)/3 = 3, s = (3-4.5)/4.5 = -1/3
    // point 9: a = (4+1)/2 = 2.5, b = (9+7+5)/3 = 7, s = 4.5/7
    // point 10: a = (5+1)/2 = 3, b = (10+8+6)/3 = 8, s = 5/8
    const hand = [5 / 8, 4 / 6, 1 / 4, -1 / 3, 4.5 / 7, 5 / 8];
    const s = silhouetteSamples(D, 6, L6, 2);
    hand.forEach((v, i) => expect(s[i]).toBeCloseTo(v, 12));
  });
  it('Davies–Bouldin', () => {
    // centroids 2 and 8; S_A = (2+0+2)/3 = 4/3, S_B = (3+1+2)/3 = 2; R = (4/3+2)/6 = 5/9 for both
    expect(daviesBouldin(X6, 6, 1, L6, 2)).toBeCloseTo(5 / 9, 12);
  });
  it('leave-one-out kNN (k = 3) and its confusion', () => {
    // 0: 2(A) 4(A) 5(B) -> A;  2: 0(A) 4(A) 5(B) -> A;  4: 5(B) 2(A) 0(A) -> A
    // 5: 4(A) 2(A) 9(B) -> A (wrong);  9: 10(B) 5(B) 4(A) -> B;  10: 9(B) 5(B) 4(A) -> B
    const nb = neighboursFromDistances(D, 6, 3);
    expect(Array.from(nb.subarray(6, 9))).toEqual([3, 1, 0]); // point 4 (row 2): 5, 2, 0 at distances 1, 2, 4
    const pred = knnPredict(nb, 6, 3, L6, 2);
    expect(Array.from(pred)).toEqual([0, 0, 0, 0, 1, 1]);
    const m = spaceMetrics({ space: 'x', X: X6, d: 1, distance: 'euclidean', probe: null }, 6, L6, ['A', 'B'], { k: 3,
      bootstrap: 0, permutations: 0 });
    expect(m.knnAccuracy.value).toBeCloseTo(5 / 6, 12);
    expect(m.confusion).toEqual([[3, 0], [1, 2]]);
    expect(m.perClass[1]).toEqual({ label: 'B', n: 3, silhouette: expect.closeTo((-1 / 3 + 4.5 / 7 + 5 / 8) / 3, 12),
      knnRecall: expect.closeTo(2 / 3, 12) });
    expect(m.silhouette.value).toBeCloseTo((5 / 8 + 4 / 6 + 1 / 4 - 1 / 3 + 4.5 / 7 + 5 / 8) / 6, 12);
    expect(m.daviesBouldin.value).toBeCloseTo(5 / 9, 12);
  });
  it('a kNN tie goes to the class with the nearest member', () => {
    // point 4 with k = 2: 5 (B, distance 1) and 2 (A, distance 2) -> tie 1:1 -> B
    const nb = neighboursFromDistances(D, 6, 2);
    expect(knnPredict(nb, 6, 2, L6, 2)[2]).toBe(1);
  });
  it('cosine distances', () => {
    const X = Float64Array.from([1, 0, 0, 2, 1, 1]); // rows (1,0), (0,2), (1,1)
    const C = distanceMatrix(X, 3, 2, 'cosine');
    expect(C[0 * 3 + 1]).toBeCloseTo(1, 12);
    expect(C[0 * 3 + 2]).toBeCloseTo(1 - Math.SQRT1_2, 12);
    expect(C[1 * 3 + 2]).toBeCloseTo(1 - Math.SQRT1_2, 12);
  });
});

function naiveSilhouette(X: Float64Array, n: number, d: number, lab: Int32Array): number {
  let total = 0;
  for (let i = 0; i < n; i++) {
    const sums = new Map<number, [number, number]>();
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      let s = 0;
      for (let c = 0; c < d; c++) s += (X[i * d + c] - X[j * d + c]) ** 2;
      const e = sums.get(lab[j]) ?? [0, 0];
      e[0] += Math.sqrt(s);
      e[1]++;
      sums.set(lab[j], e);
    }
    const own = sums.get(lab[i]);
    if (!own) continue;
    const a = own[0] / own[1];
    let b = Infinity;
    for (const [c, [s, k]] of sums) if (c !== lab[i]) b = Math.min(b, s / k);
    total += (b - a) / Math.max(a, b);
  }
  return total / n;
}

describe('metrics on synthetic data', () => {
  it('silhouette agrees with a naive implementation', () => {
    const { X, lab } = blobs(90, 7, 3, 1, 1);
    const s = silhouetteSamples(distanceMatrix(X, 90, 7, 'euclidean'), 90, lab, 3);
    expect(s.reduce((a, b) => a + b, 0) / 90).toBeCloseTo(naiveSilhouette(X, 90, 7, lab), 10);
  });
  it('well-separated clusters: high silhouette, kNN and probe accuracy, small p-values', () => {
    const n = 150;
    const { X, lab } = blobs(n, 10, 3, 4, 2);
    const m = spaceMetrics({ space: 'original-euclidean', X, d: 10, distance: 'euclidean', probe: { X, d: 10 } }, n,
      lab, ['a', 'b', 'c'], {
      bootstrap: 200,
      permutations: 99,
      probePermutations: 19,
      seed: 3,
    });
    expect(m.silhouette.value).toBeGreaterThan(0.5);
    expect(m.knnAccuracy.value).toBe(1);
    expect(m.probeAccuracy!.value).toBeGreaterThan(0.97);
    expect(m.silhouette.p).toBeCloseTo(1 / 100, 12); // no permutation reaches it
    expect(m.knnAccuracy.p).toBeCloseTo(1 / 100, 12);
    expect(m.probeAccuracy!.p).toBeCloseTo(1 / 20, 12);
    const [lo, hi] = m.silhouette.ci95!;
    expect(lo).toBeLessThan(m.silhouette.value);
    expect(hi).toBeGreaterThan(m.silhouette.value);
  });
  it('pure noise: p-values are not small (null calibration over 20 noise data sets)', () => {
    const n = 120;
    const small = { silhouette: 0, knn: 0, probe: 0 };
    let probeSum = 0;
    for (let rep = 0; rep < 20; rep++) {
      const rng = new Rng(100 + rep);
      const X = new Float64Array(n * 6).map(() => rng.normal());
      const lab = Int32Array.from({ length: n }, (_, i) => i % 3);
      const m = spaceMetrics({ space: 'noise', X, d: 6, distance: 'euclidean', probe: rep < 6 ? { X, d: 6 } : null }, n,
        lab, ['a', 'b', 'c'], {
        bootstrap: 0,
        permutations: 39,
        probePermutations: 19,
        seed: rep,
      });
      if (m.silhouette.p! < 0.05) small.silhouette++;
      if (m.knnAccuracy.p! < 0.05) small.knn++;
      if (m.probeAccuracy) {
        if (m.probeAccuracy.p! < 0.05) small.probe++;
        probeSum += m.probeAccuracy.value;
      }
      expect(Math.abs(m.silhouette.value)).toBeLessThan(0.05);
    }
    // under the null each p is uniform: about 1 in 20 below 0.05 (4 or more has probability 1.6%)
    expect(small.silhouette).toBeLessThanOrEqual(3);
    expect(small.knn).toBeLessThanOrEqual(3);
    expect(small.probe).toBeLessThanOrEqual(2);
    expect(probeSum / 6).toBeLessThan(0.45); // chance is 1/3
  });
  it('permutation p follows its definition', () => {
    expect(permutationP(0.5, [0.1, 0.6, 0.5, 0.2])).toBeCloseTo(3 / 5, 12);
    expect(permutationP(0.5, [])).toBeNull();
  });
});

/**
 * Percentile bootstrap of the mean, written here from its definition: B resamples of n
 * indices each, drawn as floor(u · n) from the uniform stream `u`; the CI is the 2.5th and
 * 97.5th percentiles of the B resample means, by linear interpolation between order
 * statistics at rank p · (B − 1) (numpy's default percentile).
 */
function referenceBootstrap(values: ArrayLike<number>, B: number, u: () => number): [number, number] {
  const n = values.length;
  const means: number[] = [];
  for (let b = 0; b < B; b++) {
    let s = 0;
    for (let t = 0; t < n; t++) s += values[Math.floor(u() * n)];
    means.push(s / n);
  }
  means.sort((a, b) => a - b);
  const pct = (p: number) => {
    const r = p * (B - 1);
    const k = Math.floor(r);
    return k + 1 < B ? means[k] + (r - k) * (means[k + 1] - means[k]) : means[k];
  };
  return [pct(0.025), pct(0.975)];
}

/** Plug-in standard error of a mean (the standard deviation of the bootstrap distribution of the mean). */
function plugInSe(v: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < v.length; i++) m += v[i] / v.length;
  let s = 0;
  for (let i = 0; i < v.length; i++) s += (v[i] - m) ** 2 / v.length;
  return Math.sqrt(s / v.length);
}

describe('bootstrap 95% CI', () => {
  it('equals a percentile bootstrap written from its definition, on the same random stream', () => {
    const rng = new Rng(9);
    const skewed = Float64Array.from({ length: 150 }, () => Math.exp(rng.normal())); // lognormal: asymmetric CI
    const binary = Float64Array.from({ length: 200 }, (_, i) => (i % 4 === 0 ? 1 : 0));
    for (const [v, B, seed] of [[skewed, 1000, 1], [binary, 2000, 2], [skewed, 7, 3]] as const) {
      const got = bootstrapCI(v, B, new Rng(seed))!;
      const stream = new Rng(seed);
      const want = referenceBootstrap(v, B, () => stream.next());
      expect(got[0]).toBeCloseTo(want[0], 12);
      expect(got[1]).toBeCloseTo(want[1], 12);
    }
    expect(bootstrapCI(skewed, 0, new Rng(1))).toBeNull();
    expect(bootstrapCI([], 100, new Rng(1))).toBeNull();
  });

  it('is as wide as ±1.96 standard errors of the mean (normal data, many resamples)', () => {
    // For normal data the bootstrap distribution of the mean is close to N(mean, se²) with the
    // plug-in se; its 2.5/97.5 percentiles lie 1.96 se either side (a 90% CI: 1.645 se, 16% narrower).
    // Monte Carlo error of the width at B = 4000: about 1.5%.
    for (const seed of [4, 5, 6]) {
      const rng = new Rng(100 + seed);
      const v = Float64Array.from({ length: 400 }, () => 3 + 2 * rng.normal());
      const se = plugInSe(v);
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      const [lo, hi] = bootstrapCI(v, 4000, new Rng(seed))!;
      expect((hi - lo) / (2 * 1.96 * se)).toBeGreaterThan(0.95);
      expect((hi - lo) / (2 * 1.96 * se)).toBeLessThan(1.05);
      expect(Math.abs((lo + hi) / 2 - mean)).toBeLessThan(0.15 * se);
    }
  });

  it("spaceMetrics' CIs have the width of a 95% interval of each per-sample value", () => {
    const n = 300;
    const { X, lab } = blobs(n, 6, 3, 0.8, 17); // overlapping classes: silhouettes and kNN hits vary
    const m = spaceMetrics({ space: 's', X, d: 6, distance: 'euclidean', probe: null }, n, lab, ['a', 'b', 'c'], {
      bootstrap: 4000,
      permutations: 0,
      seed: 8,
    });
    const sil = silhouetteSamples(distanceMatrix(X, n, 6, 'euclidean'), n, lab, 3);
    const nb = neighboursFromDistances(distanceMatrix(X, n, 6, 'euclidean'), n, 10);
    const pred = knnPredict(nb, n, 10, lab, 3);
    const hit = Float64Array.from(pred, (p, i) => (p === lab[i] ? 1 : 0));
    expect(m.knnAccuracy.value).toBeGreaterThan(0.5);
    expect(m.knnAccuracy.value).toBeLessThan(0.95);
    for (const [ci, v] of [[m.silhouette.ci95!, sil], [m.knnAccuracy.ci95!, hit]] as const) {
      const ratio = (ci[1] - ci[0]) / (2 * 1.96 * plugInSe(v));
      // the kNN hits are 0/1, so the bootstrap means sit on a grid of 1/n: allow a little more
      expect(ratio).toBeGreaterThan(0.93);
      expect(ratio).toBeLessThan(1.07);
    }
  });
});

describe('linear probe', () => {
  it('stratified folds keep class proportions and are seeded', () => {
    const lab = Int32Array.from({ length: 50 }, (_, i) => (i < 30 ? 0 : 1));
    const f = stratifiedFolds(lab, 2, 5, 7);
    for (let k = 0; k < 5; k++) {
      const inFold = Array.from(lab).filter((_, i) => f[i] === k);
      expect(inFold.filter((c) => c === 0).length).toBe(6);
      expect(inFold.filter((c) => c === 1).length).toBe(4);
    }
    expect(Array.from(stratifiedFolds(lab, 2, 5, 7))).toEqual(Array.from(f));
  });
  it('logistic regression reaches the optimum: the gradient vanishes', () => {
    const { X, lab } = blobs(120, 4, 3, 1, 6);
    const { W } = fitLogistic(X, 120, 4, lab, 1, 3, 500, 1e-9);
    // recompute the gradient independently
    const g = new Float64Array(W.length);
    for (let i = 0; i < 120; i++) {
      const z = [0, 1, 2].map((c) => W[4 * 3 + c] + [0, 1, 2, 3].reduce((a, j) => a + X[i * 4 + j] * W[j * 3 + c], 0));
      const mx = Math.max(...z);
      const e = z.map((v) => Math.exp(v - mx));
      const s = e.reduce((a, b) => a + b, 0);
      for (let c = 0; c < 3; c++) {
        const r = e[c] / s - (lab[i] === c ? 1 : 0);
        for (let j = 0; j < 4; j++) g[j * 3 + c] += r * X[i * 4 + j];
        g[12 + c] += r;
      }
    }
    for (let t = 0; t < 12; t++) g[t] += W[t];
    expect(Math.max(...Array.from(g, Math.abs))).toBeLessThan(1e-3);
  });
  it('cross-validated predictions separate linearly separable classes', () => {
    const { X, lab } = blobs(100, 5, 2, 3, 8);
    const p = crossValidatedPredictions(X, 100, 5, lab, 2, { seed: 1 });
    const acc = Array.from(p).filter((v, i) => v === lab[i]).length / 100;
    expect(acc).toBeGreaterThan(0.95);
  });
});

describe('Gram-based distances', () => {
  it('equal the direct euclidean and cosine distances', async () => {
    const { gramDistances } = await import('../../src/cluster/metrics.js');
    const { X } = blobs(37, 9, 3, 2, 11);
    const g = gramDistances(X, 37, 9);
    const e = distanceMatrix(X, 37, 9, 'euclidean');
    const c = distanceMatrix(X, 37, 9, 'cosine');
    for (let t = 0; t < 37 * 37; t++) {
      expect(g.euclidean[t]).toBeCloseTo(e[t], 9);
      expect(g.cosine[t]).toBeCloseTo(c[t], 12);
    }
  });
});

describe('Gram rows through the WebAssembly SIMD kernel', () => {
  it('are bit-identical to the JavaScript loop for any row range, across output blocks', async () => {
    const { gramRows, gramRowsJs } = await import('../../src/cluster/metrics.js');
    const n = 301; // more than one 256-wide output block, not a multiple of 4
    const d = 13;
    const { X } = blobs(n, d, 4, 3, 31);
    for (const [r0, r1] of [[0, n], [5, 77], [77, n], [298, n]]) {
      const a = new Float64Array(n * n).fill(NaN);
      const b = new Float64Array(n * n).fill(NaN);
      gramRows(X, n, d, a, r0, r1);
      gramRowsJs(X, n, d, b, r0, r1);
      expect(Array.from(a)).toEqual(Array.from(b));
      // and the entries are the dot products
      for (const [i, j] of [[r0, r0], [r0, n - 1], [r1 - 1, n - 1]]) {
        let s = 0;
        for (let c = 0; c < d; c++) s += X[i * d + c] * X[j * d + c];
        expect(a[i * n + j]).toBeCloseTo(s, 10);
      }
    }
  });
});

describe('permutations on worker threads', () => {
  it('give exactly the single-thread p-values (probe, silhouette)', async () => {
    const { ClusterPool } = await import('../../src/cluster/pool.js');
    const { probePermutationLabels } = await import('../../src/cluster/metrics.js');
    const { X, lab } = blobs(60, 4, 3, 0.4, 21);
    const opts = { bootstrap: 50, permutations: 9, probePermutations: 6, seed: 4 };
    const a = spaceMetrics({ space: 's', X, d: 4, distance: 'euclidean', probe: { X, d: 4 } }, 60, lab, ['a', 'b', 'c'],
      opts);
    const pool = await ClusterPool.start(2);
    try {
      const cv = repeatedCv([{ X, d: 4 }], 60, lab, 3, { seed: 4 });
      const probeNull = await pool.probeScores(cv.prepared, 60, probePermutationLabels(lab, 6, 4), 3, { seed: 4 }, 4);
      const { permutationLabels } = await import('../../src/cluster/metrics.js');
      const silhouetteNull = await pool.silhouettes(distanceMatrix(X, 60, 4, 'euclidean'), 60,
        permutationLabels(lab, 9, 4), 3);
      const b = spaceMetrics({ space: 's', X, d: 4, distance: 'euclidean', probe: { X, d: 4 }, probeNull,
        silhouetteNull }, 60, lab, ['a', 'b', 'c'], opts);
      expect(b).toEqual(a);
      expect(a.probeAccuracy!.p).not.toBeNull();
      const { gramDistances } = await import('../../src/cluster/metrics.js');
      const g1 = gramDistances(X, 60, 4);
      const g2 = await pool.gramDistances(X, 60, 4);
      expect(Array.from(g2.euclidean)).toEqual(Array.from(g1.euclidean));
      expect(Array.from(g2.cosine)).toEqual(Array.from(g1.cosine));
    } finally {
      await pool.close();
    }
  });
});

describe('silhouette null through the WebAssembly gather kernel', () => {
  it('is bit-identical to meanSilhouette for every labelling (imbalanced classes, a singleton)', async () => {
    const { silhouetteMeansWasm } = await import('../../src/cluster/silhouette-wasm.js');
    const { permutationLabels, meanSilhouette, silhouetteMeans } = await import('../../src/cluster/metrics.js');
    const rng = new Rng(12);
    const n = 203;
    const X = Float64Array.from({ length: n * 7 }, () => rng.normal());
    const lab = Int32Array.from({ length: n }, (_, i) => (i === 0 ? 3 : i % 10 === 0 ? 2 : i % 3 === 0 ? 1 : 0));
    const D = distanceMatrix(X, n, 7, 'euclidean');
    const perms = permutationLabels(lab, 23, 5);
    const js = perms.map((p) => meanSilhouette(D, n, p, 4));
    const wasm = silhouetteMeansWasm(D, n, perms, 4);
    if (wasm) expect(Array.from(wasm)).toEqual(js);
    else console.log('silhouette kernel test: WebAssembly unavailable, only the JavaScript path checked');
    expect(Array.from(silhouetteMeans(D, n, perms, 4))).toEqual(js);
  });
});
