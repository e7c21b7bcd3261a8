/**
 * The tests an ablation reads its random regions with, against scipy
 * (test/goldens/ablate-null/make_null_goldens.py): Shapiro–Wilk W and p (Royston's algorithm,
 * scipy.stats.shapiro) on normal, lognormal, skewed, tied and n = 3 samples; the Wilcoxon
 * signed-rank test (scipy.stats.wilcoxon), exact and normal-approximated, each tail; Student's
 * t quantiles (scipy.stats.t.ppf).
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { shapiroWilk } from '../../src/util/shapiro.js';
import { signedRank } from '../../src/util/wilcoxon.js';
import { studentTQuantile } from '../../src/util/stats.js';

const G = JSON.parse(readFileSync(path.resolve(__dirname, '../goldens/ablate-null/null_goldens.json'), 'utf8')) as {
  shapiro: { name: string; x: number[]; w: number; p: number }[];
  wilcoxon: { name: string; d: number[]; method: 'exact' | 'approx'; less: number; greater: number; 'two-sided': number;
    rplus: number }[];
  tq: { df: number; q95: number; q80: number; q975: number }[];
};

describe('Shapiro–Wilk against scipy.stats.shapiro', () => {
  for (const g of G.shapiro) {
    it(`${g.name} (n = ${g.x.length}): W ${g.w.toFixed(4)}, p ${g.p.toPrecision(3)}`, () => {
      const r = shapiroWilk(g.x)!;
      // scipy's swilk computes the normal quantiles to 7 digits (ppnd7); lobes' to 9
      expect(Math.abs(r.w - g.w)).toBeLessThan(2e-6);
      expect(Math.abs(r.p - g.p)).toBeLessThan(Math.max(2e-5 * g.p, 1e-9));
    });
  }
  it('the order of the values does not matter; a sample without spread or under 3 values has no W', () => {
    const g = G.shapiro.find((s) => s.name === 'lognormal20')!;
    expect(shapiroWilk([...g.x].reverse())!.w).toBeCloseTo(g.w, 6);
    expect(shapiroWilk([1, 1, 1, 1])).toBeNull();
    expect(shapiroWilk([1, 2])).toBeNull();
  });
});

describe('Wilcoxon signed-rank against scipy.stats.wilcoxon', () => {
  for (const g of G.wilcoxon) {
    it(`${g.name} (${g.method}, n = ${g.d.length})`, () => {
      for (const alt of ['less', 'greater', 'two-sided'] as const) {
        const r = signedRank(g.d, alt, g.method)!;
        expect(r.method).toBe(g.method);
        expect(r.rPlus).toBe(g.rplus);
        expect(Math.abs(r.p - g[alt]), alt).toBeLessThan(Math.max(1e-6 * g[alt], 1e-12));
      }
    });
  }
});

describe('signed-rank method', () => {
  it('auto is exact up to 50 non-zero differences without ties, else the normal approximation', () => {
    const by = (n: string) => G.wilcoxon.find((g) => g.name === n)!.d;
    expect(signedRank(by('exact20'), 'less')!.method).toBe('exact');
    expect(signedRank(by('approx-zeros'), 'less')!.method).toBe('exact'); // 26 non-zero, distinct
    expect(signedRank(by('approx-ties'), 'less')!.method).toBe('approx');
    expect(signedRank(by('approx80'), 'less')!.method).toBe('approx');
    expect(signedRank([0, 0], 'less')).toBeNull();
  });
});

describe('Student t quantiles against scipy.stats.t.ppf', () => {
  it('0.8, 0.95 and 0.975 for 2 to 99 degrees of freedom', () => {
    for (const g of G.tq) {
      expect(studentTQuantile(0.95, g.df)).toBeCloseTo(g.q95, 8);
      expect(studentTQuantile(0.8, g.df)).toBeCloseTo(g.q80, 8);
      expect(studentTQuantile(0.975, g.df)).toBeCloseTo(g.q975, 8);
    }
  });
});
