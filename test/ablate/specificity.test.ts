/**
 * What an ablation's specificity rows say about their random regions: the rank p on constructed
 * nulls (ties, the +1 of both counts), the normality check on the scale the t test reads
 * (Shapiro–Wilk against scipy's W for the same values) and the headline it picks, the minimum
 * detectable effect against its formula with scipy's t quantiles and against a simulation of
 * the t test's power, and the per-item paired tests against an enumeration of every sign flip.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ablationStats, lowerP, pairedSide, predictionMde, upperP } from '../../src/ablate/stats.js';
import { predictionP } from '../../src/util/stats.js';
import { Rng } from '../../src/util/rng.js';

const G = JSON.parse(readFileSync(path.resolve(__dirname, '../goldens/ablate-null/null_goldens.json'), 'utf8')) as {
  shapiro: { name: string; x: number[]; w: number; p: number }[];
  tq: { df: number; q95: number; q80: number }[];
};
const sample = (name: string) => G.shapiro.find((s) => s.name === name)!;

/** Labels A (items 0..nA-1) and B; `cost(i)` per item under a pass. */
function stats(nA: number, nB: number, region: (i: number) => number, randoms: ((i: number) => number)[]) {
  const n = nA + nB;
  const before = Float64Array.from({ length: n }, (_, i) => -10 - i * 0.01);
  const after = (c: (i: number) => number) => Float64Array.from(before, (b, i) => b - c(i));
  return ablationStats({
    labels: ['A', 'B'],
    labelOf: Int32Array.from({ length: n }, (_, i) => (i < nA ? 0 : 1)),
    before,
    regions: [{ name: 'A', minus: null, after: after(region), random: randoms.map(after) }],
    bootstrap: 100,
    seed: 0,
  });
}

describe('rank p', () => {
  it('counts the random regions at least as extreme, ties included, plus one, over K + 1', () => {
    expect(lowerP(-3, [-4, -3, -1, 0])).toBeCloseTo(3 / 5, 15);
    expect(upperP(1.5, [1, 1.5, 2, 0.9])).toBeCloseTo(3 / 5, 15);
    expect(upperP(9, [1, 2, 3])).toBeCloseTo(1 / 4, 15);
    expect(upperP(0, [1, 2, 3])).toBe(1);
  });
  it('of a ratio beyond all but two of 20 random regions is 3/21', () => {
    // random region k costs A's items r_k times what it costs B's; the region 1.5 times; two random regions more
    const r = Array.from({ length: 20 }, (_, k) => (k === 4 ? 1.7 : k === 11 ? 1.5 : 0.9 + 0.01 * k));
    const s = stats(6, 8, (i) => (i < 6 ? 1.5 : 1), r.map((rk) => (i: number) => (i < 6 ? rk : 1))).specificity[0]!;
    expect(s.ratio).toBeCloseTo(1.5, 12);
    expect(s.ratioRankP).toBeCloseTo(3 / 21, 12);
    // and the contrast (A's items lose 0.5 more than B's; the same two random regions as much or more)
    expect(s.p).toBeCloseTo(3 / 21, 12);
  });
});

describe('the normality check and the headline', () => {
  it("reads ln(cost) for cells: costs exp(z) of a normal z pass (scipy's W of z) though the costs themselves are skewed", () => {
    const z = sample('normal20').x;
    const s = stats(4, 4, () => 30, z.map((zk) => () => Math.exp(zk)));
    const cell = s.cells.find((c) => c.label === 'A')!;
    expect(cell.pTScale).toBe('log');
    expect(cell.normality!.w).toBeCloseTo(sample('normal20').w, 5);
    expect(cell.head).toBe('t');
    expect(cell.pHead).toBe(cell.pT);
  });
  it('a null that fails Shapiro–Wilk (an outlier among 20) heads with the rank p, and says so', () => {
    const z = sample('outlier20').x;
    const s = stats(4, 4, (i) => (i < 4 ? 3 : 1), z.map((zk) => (i: number) => (i < 4 ? 1 + 0.05 * zk : 1)))
      .specificity[0]!;
    // the contrast's null is −0.05 z: Shapiro is invariant to scale and sign
    expect(s.normality!.w).toBeCloseTo(sample('outlier20').w, 5);
    expect(s.normality!.p).toBeLessThan(0.05);
    expect(s.head).toBe('rank');
    expect(s.pHead).toBe(s.p);
    expect(s.p).toBeCloseTo(1 / 21, 12);
    // the ratio's null is ln(1 + 0.05 z), which fails too
    expect(s.ratioNormality!.p).toBeLessThan(0.05);
    expect(s.ratioHead).toBe('rank');
    expect(s.ratioPHead).toBe(s.ratioRankP);
  });
});

describe('minimum detectable effect', () => {
  it("is (t_{0.95,K−1} + t_{0.8,K−1}) · sd · √(1 + 1/K) with scipy's quantiles (K = 20, 10)", () => {
    for (const K of [20, 10]) {
      const nulls = sample('normal20').x.slice(0, K);
      const m = nulls.reduce((a, b) => a + b, 0) / K;
      const sd = Math.sqrt(nulls.reduce((a, v) => a + (v - m) ** 2, 0) / (K - 1));
      const q = G.tq.find((t) => t.df === K - 1)!;
      expect(predictionMde(nulls)).toBeCloseTo((q.q95 + q.q80) * sd * Math.sqrt(1 + 1 / K), 8);
    }
    expect(predictionMde([1, 1, 1])).toBeNull();
  });
  it('is the shift the t test detects about 80% of the time (simulated, K = 20)', () => {
    const rng = new Rng(7);
    const K = 20;
    const q = G.tq.find((t) => t.df === K - 1)!;
    const shift = (q.q95 + q.q80) * Math.sqrt(1 + 1 / K);
    let hits = 0;
    const sims = 4000;
    for (let s = 0; s < sims; s++) {
      const nulls = Array.from({ length: K }, () => rng.normal());
      if (predictionP(-shift + rng.normal(), nulls, 'lower')! <= 0.05) hits++;
    }
    // the approximation's power at K = 20 is 0.78–0.80; binomial sd 0.0065
    expect(hits / sims).toBeGreaterThan(0.76);
    expect(hits / sims).toBeLessThan(0.83);
  });
  it('is printed for the contrast as mean(null) − δ and for the ratio as exp(mean ln null + δ)', () => {
    const z = sample('normal20').x;
    const s = stats(5, 5, (i) => (i < 5 ? 2 : 1), z.map((zk) => (i: number) => (i < 5 ? Math.exp(0.1 * zk) : 1)))
      .specificity[0]!;
    const nc = s.nullContrast;
    expect(s.mde).toBeCloseTo(nc.reduce((a, b) => a + b, 0) / nc.length - predictionMde(nc)!, 10);
    const ln = s.nullRatio.map((r) => Math.log(r!));
    expect(s.ratioMde).toBeCloseTo(Math.exp(ln.reduce((a, b) => a + b, 0) / ln.length + predictionMde(ln)!), 10);
  });
});

describe('per-item paired tests', () => {
  /** The exact one-sided p of the paired differences by enumerating every sign flip of their ranks. */
  function enumerated(diff: number[]): number {
    const abs = diff.map(Math.abs);
    const ranks = abs.map((v) => 1 + abs.filter((u) => u < v).length);
    const obs = diff.reduce((a, v, i) => a + (v > 0 ? ranks[i]! : 0), 0);
    let le = 0;
    for (let mask = 0; mask < 1 << diff.length; mask++) {
      let s = 0;
      for (let i = 0; i < diff.length; i++) if (mask & (1 << i)) s += ranks[i]!;
      if (s <= obs) le++;
    }
    return le / (1 << diff.length);
  }
  it('pair each item with itself under the random region: p as every sign flip of d_region − d_random gives', () => {
    const rng = new Rng(5);
    const n = 12;
    // item difficulties spread far more than the region's effect: only the pairing sees it
    const hard = Array.from({ length: n }, () => 1 + 5 * rng.next());
    const d = Float64Array.from(hard, (h) => -h - 0.3 * rng.next());
    const nd = Array.from({ length: 3 }, () => Float64Array.from(hard, (h) => -h + 0.2 * (rng.next() - 0.6)));
    const idx = Array.from({ length: n }, (_, i) => i);
    const side = pairedSide(d, nd, idx);
    nd.forEach((v, k) => expect(side.p[k]).toBeCloseTo(enumerated(idx.map((i) => d[i]! - v[i]!)), 12));
    expect(side.p.every((p) => p! < 0.05)).toBe(true);
    // Holm over the 3 random regions: the smallest p times 3, the next times 2 (monotone), the largest as it is
    const order = [0, 1, 2].sort((i, j) => side.p[i]! - side.p[j]!);
    const want: number[] = [];
    order.forEach((k, r) => (want[k] = Math.min(1, Math.max(r ? want[order[r - 1]!]! : 0, (3 - r) * side.p[k]!))));
    expect(side.pHolm).toEqual(want);
  });
  it('a planted region that costs its own items more than every random region does, and the others no more', () => {
    const rng = new Rng(9);
    const nA = 14;
    const nB = 20;
    const noise = () => 0.02 * (rng.next() - 0.5);
    const randoms = Array.from({ length: 20 }, () => {
      const e = Array.from({ length: nA + nB }, noise);
      return (i: number) => 1 + e[i]!;
    });
    const s = stats(nA, nB, (i) => (i < nA ? 1.5 : 1 + noise()), randoms).specificity[0]!;
    expect(s.paired!.own.n).toBe(nA);
    expect(s.paired!.own.beaten).toBe(20);
    // 14 positive ranks of 14: 2^-14 each, times at most 20 by Holm
    expect(Math.max(...s.paired!.own.pHolm.map((p) => p!))).toBeLessThan(20 * 2 ** -14 + 1e-12);
    expect(s.paired!.others.beaten).toBeLessThanOrEqual(1);
  });
});
