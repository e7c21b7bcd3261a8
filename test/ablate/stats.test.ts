/**
 * The ablation statistics (src/ablate/stats.ts) against independent computations: numpy's
 * linear-interpolation percentiles (worked by hand here), the normal-theory interval a bootstrap
 * of a mean approaches, the null p with ties, and Holm.
 */
import { describe, it, expect } from 'vitest';
import { ablationStats, bootstrapContrast, bootstrapMean, lowerP, percentileCi } from '../../src/ablate/stats.js';
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
        { name: 'X', minus: null, after: shift([-1, -1, 0, 0]), random: [shift([-0.25, -0.25, -0.25, -0.25]), shift([-0.5, 0, -0.25, -0.25])] },
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
});
