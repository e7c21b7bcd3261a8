/**
 * src/util/stats.ts against scipy and statsmodels (test/goldens/stats/make_stats_goldens.py
 * wrote stats_goldens.json): Holm and Benjamini–Hochberg adjusted p-values, Wilson and
 * Clopper–Pearson intervals (k = 0 and k = n included), binomial tails, and the
 * Poisson-binomial upper tail (brute-force enumeration and a numpy convolution).
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import {
  holm,
  benjaminiHochberg,
  wilson,
  clopperPearson,
  binomialUpper,
  binomialLower,
  poissonBinomialUpper,
  poissonBinomialPmf,
  permutationFloor,
  permutationsForFamily,
  nullZ,
  normalQuantile,
  logGamma,
  incompleteBeta,
  studentTCdf,
  predictionP,
} from '../../src/util/stats.js';
import { cases } from '../goldens/cases.js';

const G = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '..', 'goldens', 'stats', 'stats_goldens.json'), 'utf8'),
);

const close = (a: readonly (number | null)[], b: readonly number[], tol: number) => {
  expect(a.length).toBe(b.length);
  a.forEach((x, i) => expect(Math.abs((x as number) - b[i]!), `index ${i}: ${x} vs ${b[i]}`).toBeLessThan(tol));
};

describe('multiplicity corrections (statsmodels multipletests)', () => {
  it('Holm and BH adjusted p-values', () => {
    for (const f of cases(G, 'multiplicity')) {
      close(holm(f.p), f.holm, 1e-12);
      close(benjaminiHochberg(f.p), f.bh, 1e-12);
    }
  });
  it("the issue's example: 10 p-values of 0.048 (the floor of 20 shuffles) pass neither", () => {
    const p = new Array(10).fill(1 / 21);
    expect(Math.min(...(holm(p) as number[]))).toBeGreaterThan(0.05);
    expect(Math.min(...(benjaminiHochberg(p) as number[]))).toBeCloseTo(1 / 21, 12);
  });
  it('missing p-values stay missing and do not count toward the family', () => {
    expect(holm([0.01, null, 0.04, undefined])).toEqual([0.02, null, 0.04, null]);
    expect(benjaminiHochberg([0.01, null, 0.04])).toEqual([0.02, null, 0.04]);
  });
  it('the permutation floor and the permutations a family needs', () => {
    expect(permutationFloor(199)).toBe(0.005);
    expect(permutationsForFamily(10, 0.05)).toBe(199);
    // With that many, the smallest p survives Holm in a family of 10; with one fewer it does not.
    expect(holm(new Array(10).fill(permutationFloor(199)))[0]).toBeLessThanOrEqual(0.05);
    expect(holm(new Array(10).fill(permutationFloor(198)))[0]).toBeGreaterThan(0.05);
  });
});

describe('binomial intervals (statsmodels proportion_confint)', () => {
  it('Wilson and Clopper–Pearson, k = 0 and k = n included', () => {
    for (const c of cases(G, 'intervals')) {
      close(wilson(c.k, c.n, c.conf)!, c.wilson, 1e-8);
      close(clopperPearson(c.k, c.n, c.conf)!, c.clopperPearson, 1e-9);
    }
  });
  it('the ends at k = 0 and k = n are exactly 0 and 1, and n = 0 gives no interval', () => {
    expect(clopperPearson(0, 8)![0]).toBe(0);
    expect(clopperPearson(8, 8)![1]).toBe(1);
    expect(clopperPearson(0, 8)![1]).toBeCloseTo(1 - 0.025 ** (1 / 8), 12);
    expect(wilson(0, 0)).toBeNull();
    expect(clopperPearson(0, 0)).toBeNull();
  });
  it('binomial tails (scipy binom.sf / cdf)', () => {
    for (const b of cases(G, 'binomial')) {
      expect(binomialUpper(b.k, b.n, b.p)).toBeCloseTo(b.upper, 12);
      expect(binomialLower(b.k, b.n, b.p)).toBeCloseTo(b.lower, 12);
    }
  });
  it('normal quantile and log-gamma', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 8);
    expect(normalQuantile(0.001)).toBeCloseTo(-3.090232306167813, 7);
    expect(logGamma(10)).toBeCloseTo(Math.log(362880), 12);
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 12);
  });
});

describe('Poisson-binomial upper tail (enumeration, numpy convolution)', () => {
  it('P(X ≥ k) for units with unequal chances', () => {
    for (const c of cases(G, 'poissonBinomial'))
      expect(Math.abs(poissonBinomialUpper(c.ps, c.k) - c.upper), `${c.method} k=${c.k}`).toBeLessThan(1e-12);
  });
  it('the distribution sums to 1', () => {
    const f = poissonBinomialPmf([0.1, 0.9, 0.5, 0.3]);
    expect(f.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 14);
  });
});

describe('nullZ', () => {
  it('is (value − mean) / sample sd', () => {
    expect(nullZ(5, [1, 2, 3, 4])).toBeCloseTo((5 - 2.5) / Math.sqrt(5 / 3), 12);
    expect(nullZ(1, [2, 2, 2])).toBeNull();
    expect(nullZ(1, [])).toBeNull();
  });
});

describe("Student's t and the prediction-interval test (scipy t.cdf, special.betainc)", () => {
  it('the regularized incomplete beta on both sides of its switch, and the t CDF in both tails', () => {
    for (const c of cases(G, 'incompleteBeta'))
      expect(Math.abs(incompleteBeta(c.x, c.a, c.b) - c.value), `I_${c.x}(${c.a}, ${c.b})`).toBeLessThan(1e-12);
    for (const c of cases(G, 'studentT')) {
      const got = studentTCdf(c.t, c.df);
      // relative in the far tails, where the CDF is tiny
      expect(Math.abs(got - c.cdf), `t=${c.t} df=${c.df}`).toBeLessThan(1e-12 + 1e-9 * Math.min(c.cdf, 1 - c.cdf));
    }
  });
  it('the p of a value against K null draws, lower and upper', () => {
    for (const c of cases(G, 'prediction')) {
      expect(predictionP(c.value, c.nulls, 'lower')!, `K=${c.nulls.length}`).toBeCloseTo(c.lower, 10);
      expect(predictionP(c.value, c.nulls, 'upper')!, `K=${c.nulls.length}`).toBeCloseTo(c.upper, 10);
    }
  });
  it('is null with fewer than 3 draws or none with spread', () => {
    expect(predictionP(1, [2, 3], 'lower')).toBeNull();
    expect(predictionP(1, [2, 2, 2, 2], 'lower')).toBeNull();
    expect(predictionP(NaN, [1, 2, 3], 'lower')).toBeNull();
  });
  it('is calibrated: a value drawn like its K normal nulls is rejected at 5% about 5% of the time, for K = 3 and 10', () => {
    for (const K of [3, 10]) {
      const rng = new Rng(7 + K);
      const normal = () => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
      let hits = 0;
      const sims = 20000;
      for (let s = 0; s < sims; s++) {
        const nulls = Array.from({ length: K }, () => 3 + 2 * normal());
        if (predictionP(3 + 2 * normal(), nulls, 'lower')! <= 0.05) hits++;
      }
      // binomial sd at 20,000 sims: 0.0015. Leaving out √(1 + 1/K) rejects 0.064 at K = 3; the
      // normal's tails instead of t's reject 0.13 at K = 3 and 0.07 at K = 10
      expect(Math.abs(hits / sims - 0.05), `K=${K}: ${hits / sims}`).toBeLessThan(0.0055);
    }
  });
});
