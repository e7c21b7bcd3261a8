/**
 * The ablation statistics (src/ablate/stats.ts) against independent computations: numpy's
 * linear-interpolation percentiles (worked by hand here), the normal-theory interval a bootstrap
 * of a mean approaches, the null p with ties, and Holm.
 */
import { describe, it, expect } from 'vitest';
import { ablationStats, bootstrapContrast, bootstrapMean, costP, costRatio, lowerP,
  percentileCi } from '../../src/ablate/stats.js';
import { holm, predictionP } from '../../src/util/stats.js';
import { Rng } from '../../src/util/rng.js';

describe('ablation statistics', () => {
  it('percentiles interpolate as numpy does (np.percentile([1..10], [2.5, 97.5]) = [1.225, 9.775])', () => {
    const [lo, hi] = percentileCi(Float64Array.from({ length: 10 }, (_, i) => 10 - i));
    expect(lo).toBeCloseTo(1.225, 12);
    expect(hi).toBeCloseTo(9.775, 12);
  });

  it('the bootstrap CI of a mean approaches mean ± 1.96 sd/√n, and of a contrast the two-sample one', () => {
    const rng = new Rng(3);
    const xs = Float64Array.from({ length: 800 }, () => 2 + 3 * rng.normal());
    const idx = Array.from({ length: 400 }, (_, i) => i);
    const jdx = Array.from({ length: 400 }, (_, i) => 400 + i);
    const m = (ix: number[]) => ix.reduce((a, i) => a + xs[i]!, 0) / ix.length;
    const v = (ix: number[]) => ix.reduce((a, i) => a + (xs[i]! - m(ix)) ** 2, 0) / (ix.length - 1);
    const se = Math.sqrt(v(idx) / 400);
    const [lo, hi] = bootstrapMean(xs, idx, 4000, new Rng(1));
    expect(lo).toBeCloseTo(m(idx) - 1.96 * se, 1);
    expect(hi).toBeCloseTo(m(idx) + 1.96 * se, 1);
    const se2 = Math.sqrt(v(idx) / 400 + v(jdx) / 400);
    const [a, b] = bootstrapContrast(xs, idx, jdx, 4000, new Rng(2));
    expect((b - a) / (2 * 1.96 * se2)).toBeGreaterThan(0.9);
    expect((b - a) / (2 * 1.96 * se2)).toBeLessThan(1.1);
    expect((a + b) / 2).toBeCloseTo(m(idx) - m(jdx), 1);
  });

  it('p counts the random regions at least as low, ties included, with the +1 correction', () => {
    expect(lowerP(-3, [-1, -2, -0.5])).toBeCloseTo(1 / 4, 12);
    expect(lowerP(-1, [-1, -2, -0.5])).toBeCloseTo(3 / 4, 12);
    expect(lowerP(0, [0, 0])).toBe(1);
  });

  it('cells and contrasts from per-item numbers; Holm over the regions', () => {
    // 2 labels × 2 items; region X lowers X's items by 1, Y's by 0; random regions lower all by 0.25 (exact in binary, so ties are ties).
    const before = Float64Array.from([-5, -6, -7, -8]);
    const labelOf = Int32Array.from([0, 0, 1, 1]);
    const shift = (d: number[]) => Float64Array.from(before, (b, i) => b + d[i]!);
    const s = ablationStats({
      labels: ['X', 'Y'],
      labelOf,
      before,
      regions: [
        { name: 'X', minus: null, after: shift([-1, -1, 0, 0]),
          random: [shift([-0.25, -0.25, -0.25, -0.25]), shift([-0.5, 0, -0.25, -0.25])] },
        { name: 'Y', minus: null, after: shift([0, 0, 0, 0]), random: [shift([-0.25, -0.25, -0.25, -0.25])] },
      ],
      bootstrap: 200,
      seed: 0,
    });
    const xx = s.cells.find((c) => c.region === 'X' && c.label === 'X')!;
    expect(xx.delta).toBeCloseTo(-1, 12);
    expect(xx.before).toBeCloseTo(-5.5, 12);
    expect(xx.nullDelta).toEqual([expect.closeTo(-0.25, 12), expect.closeTo(-0.25, 12)]);
    expect(xx.p).toBeCloseTo(1 / 3, 12);
    const sx = s.specificity.find((r) => r.region === 'X')!;
    expect(sx.contrast).toBeCloseTo(-1, 12);
    expect(sx.nullContrast[1]).toBeCloseTo(0, 12);
    expect(sx.p).toBeCloseTo(1 / 3, 12);
    const sy = s.specificity.find((r) => r.region === 'Y')!;
    expect(sy.p).toBe(1);
    // Holm: sorted p (1/3, 1) -> (2/3, 1).
    expect(sx.pHolm).toBeCloseTo(2 / 3, 12);
    expect(sy.pHolm).toBe(1);
  });

  it('a region whose damage scales with response length looks specific by the contrast, not by the cost ratio; a region that costs its own items a larger share does', () => {
    // 3 labels of 30, 50 and 40 items; A's responses are 3× longer. Every region costs c nats per token of every
    // item (times a shared item difficulty and a little per-region noise); "Long" is such a region
    // with c = 1 (random regions: c ≈ 0.2); "Own" costs A's items twice its rate on the others.
    const rng = new Rng(11);
    const n = 120;
    const labelOf = Int32Array.from({ length: n }, (_, i) => (i < 30 ? 0 : i < 80 ? 1 : 2));
    const len = Array.from({ length: n }, (_, i) => (labelOf[i] === 0 ? 30 : 10));
    const hard = Array.from({ length: n }, () => 0.8 + 0.4 * rng.next());
    const before = Float64Array.from({ length: n }, (_, i) => -2 * len[i]!);
    const cost = (c: number, ownFactor = 1) =>
      Float64Array.from(before,
        (b, i) => b - c * len[i]! * hard[i]! * (labelOf[i] === 0 ? ownFactor : 1) * (1 + 0.05 * (rng.next() - 0.5)));
    const random = Array.from({ length: 10 }, () => cost(0.2 * (1 + 0.2 * (rng.next() - 0.5))));
    const longAfter = cost(1);
    const s = ablationStats({ labels: ['A', 'B', 'C'], labelOf, before,
      regions: [{ name: 'A', minus: null, after: longAfter, random }, { name: 'B', minus: null, after: cost(1, 2),
        random }], bootstrap: 100, seed: 0 });
    const [long, own] = s.specificity;
    // the ratio from the cells equals the one over items: mean cost of A's items / mean cost of all the others
    const itemMean = (after: Float64Array, own: boolean) => {
      let t = 0;
      let k = 0;
      for (let i = 0; i < n; i++) {
        if ((labelOf[i] === 0) !== own) continue;
        t += after[i]! - before[i]!;
        k++;
      }
      return t / k;
    };
    expect(long!.ratio!).toBeCloseTo(itemMean(longAfter, true) / itemMean(longAfter, false), 10);
    expect(long!.nullRatio[3]!).toBeCloseTo(itemMean(random[3]!, true) / itemMean(random[3]!, false), 10);
    // the contrast: far below every random region's for both (A's items lose more nats), at the rank floor
    expect(long!.p).toBeCloseTo(1 / 11, 12);
    expect(long!.pT).toBe(predictionP(long!.contrast, long!.nullContrast, 'lower'));
    expect(long!.pT!).toBeLessThan(1e-4);
    // the ratio: "Long" costs A's items the same share as random regions do; B's region (target B) is checked below
    expect(long!.ratio!).toBeCloseTo(3, 0);
    expect(long!.ratioP!).toBeGreaterThan(0.01);
    expect(long!.nullRatio.every((r) => r !== null && Math.abs(r - long!.ratio!) < 0.1)).toBe(true);
    // B's region doubles A's cost, so for its own target (B) the ratio falls: B's items lose a smaller share
    expect(own!.target).toBe('B');
    expect(own!.ratio!).toBeLessThan(long!.nullRatio[0]! / 3);
    expect(own!.ratioP!).toBeGreaterThan(0.99);
    expect([long!.ratioPHolm, own!.ratioPHolm]).toEqual(holm([long!.ratioP, own!.ratioP]));
    // the cells' t-test p, and Holm over every cell of the run
    for (const c of s.cells) {
      // every change here is a cost: the test is on the logarithms
      expect(c.pTScale).toBe('log');
      expect(c.pT).toBe(predictionP(Math.log(-c.delta), c.nullDelta.map((v) => Math.log(-v)), 'upper'));
    }
    expect(s.cells.map((c) => c.pTHolm)).toEqual(holm(s.cells.map((c) => c.pT)));
  });
  it('a region that costs its own items a larger share than random regions do has a small ratio p', () => {
    const rng = new Rng(12);
    const n = 90;
    const labelOf = Int32Array.from({ length: n }, (_, i) => i % 3);
    const before = Float64Array.from({ length: n }, () => -20);
    const cost = (c: number, own: number) =>
      Float64Array.from(before, (b, i) => b - c * (labelOf[i] === 0 ? own : 1) * (0.9 + 0.2 * rng.next()));
    const random = Array.from({ length: 10 }, () => cost(0.3, 1));
    const s = ablationStats({ labels: ['A', 'B', 'C'], labelOf, before,
      regions: [{ name: 'A', minus: null, after: cost(1, 1.5), random }, { name: 'B', minus: null, after: cost(1, 1),
        random }], bootstrap: 100, seed: 0 });
    expect(s.specificity[0]!.ratio!).toBeGreaterThan(1.3);
    expect(s.specificity[0]!.ratioP!).toBeLessThan(1e-4);
    expect(s.specificity[0]!.ratioPHolm!).toBeLessThan(1e-3);
    // no cost, no ratio
    expect(costRatio(0.5, -1)).toBeNull();
    expect(costRatio(-2, -1)).toBe(2);
  });

  it("the cells' t test is calibrated on costs that spread multiplicatively (lognormal, K = 10), where the raw t test rejects too often", () => {
    const rng = new Rng(13);
    const normal = () => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
    const cost = () => -100 * Math.exp(0.4 * normal());
    const sims = 20000;
    let hits = 0;
    let raw = 0;
    for (let s = 0; s < sims; s++) {
      const nulls = Array.from({ length: 10 }, cost);
      const v = cost();
      if (costP(v, nulls).p! <= 0.05) hits++;
      if (predictionP(v, nulls, 'lower')! <= 0.05) raw++;
    }
    // binomial sd 0.0015 at 20,000 sims; scipy's simulation of the raw test gives 0.076 here
    expect(Math.abs(hits / sims - 0.05), `log: ${hits / sims}`).toBeLessThan(0.0055);
    expect(raw / sims, `raw: ${raw / sims}`).toBeGreaterThan(0.065);
    // a gain anywhere: the raw changes
    expect(costP(-5, [-1, 2, -3]).scale).toBe('raw');
    expect(costP(-5, [-1, 2, -3]).p).toBe(predictionP(-5, [-1, 2, -3], 'lower'));
    expect(costP(-5, [-1, -2, -3]).scale).toBe('log');
  });
});
