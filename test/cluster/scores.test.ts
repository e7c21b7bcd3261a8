import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { bootstrapScores, classScores, majorityRate, nullSummary, perClassRecall,
  percentileSorted } from '../../src/cluster/scores.js';
import { fitLogistic } from '../../src/cluster/probe.js';
import { logisticObjective } from '../../src/cluster/logistic.js';
import { cases } from '../goldens/cases.js';

// Reference numbers from scikit-learn and numpy: test/cluster/reference/make_scores_reference.py.
const REF = JSON.parse(readFileSync(path.join(__dirname, 'reference', 'scores_reference.json'), 'utf8'));

describe('classification scores by hand', () => {
  // y    = 0 0 0 0 1 1 2 2 2 2
  // pred = 0 0 1 2 1 0 2 2 2 0
  // class 0: 4 true, 2 hit, 4 predicted -> recall 2/4, F1 = 2·2/(4 + 4)
  // class 1: 2 true, 1 hit, 2 predicted -> recall 1/2, F1 = 2·1/(2 + 2)
  // class 2: 4 true, 3 hit, 4 predicted -> recall 3/4, F1 = 2·3/(4 + 4)
  const y = Int32Array.from([0, 0, 0, 0, 1, 1, 2, 2, 2, 2]);
  const p = Int32Array.from([0, 0, 1, 2, 1, 0, 2, 2, 2, 0]);
  it('accuracy, balanced accuracy, macro-F1, recall', () => {
    const s = classScores(y, p, 3);
    expect(s.accuracy).toBeCloseTo(6 / 10, 15);
    expect(s.balancedAccuracy).toBeCloseTo((2 / 4 + 1 / 2 + 3 / 4) / 3, 15);
    expect(s.macroF1).toBeCloseTo((4 / 8 + 2 / 4 + 6 / 8) / 3, 15);
    expect(perClassRecall(y, p, 3)).toEqual([0.5, 0.5, 0.75]);
  });
  it('a majority-class guess: high accuracy, balanced accuracy at chance', () => {
    const yy = Int32Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    const s = classScores(yy, new Int32Array(10), 2);
    expect(s.accuracy).toBe(0.9);
    expect(s.balancedAccuracy).toBe(0.5); // (9/9 + 0/1) / 2
    expect(s.macroF1).toBeCloseTo((2 * 9) / (9 + 10) / 2, 15); // class 1 has F1 0
    expect(majorityRate(yy, 2)).toEqual({ rate: 0.9, cls: 0 });
  });
});

describe('classification scores against scikit-learn', () => {
  for (const c of cases(REF, 'cases')) {
    it(c.name, () => {
      const y = Int32Array.from(c.y);
      const p = Int32Array.from(c.pred);
      const s = classScores(y, p, c.C);
      expect(s.accuracy).toBeCloseTo(c.accuracy, 12);
      expect(s.balancedAccuracy).toBeCloseTo(c.balancedAccuracy, 12);
      expect(s.macroF1).toBeCloseTo(c.macroF1, 12);
      const r = perClassRecall(y, p, c.C);
      c.recall.forEach((v: number | null,
        k: number) => (v === null ? expect(r[k]).toBeNaN() : expect(r[k]).toBeCloseTo(v, 12))
      );
    });
  }
});

describe('null summary', () => {
  it('mean and 95% band equal numpy.mean and numpy.percentile(v, [2.5, 97.5])', () => {
    for (const nl of cases(REF, 'nulls')) {
      const s = nullSummary(nl.values);
      expect(s.nullMean).toBeCloseTo(nl.mean, 12);
      expect(s.nullBand![0]).toBeCloseTo(nl.band[0], 12);
      expect(s.nullBand![1]).toBeCloseTo(nl.band[1], 12);
    }
  });
  it('no permutations: no null', () => {
    expect(nullSummary([])).toEqual({ nullMean: null, nullBand: null });
  });
  it('percentile interpolates between order statistics', () => {
    // 5 values: position q/100·4; 2.5% -> 0.1 between the first two
    expect(percentileSorted([1, 2, 3, 4, 5], 2.5)).toBeCloseTo(1.1, 15);
    expect(percentileSorted([1, 2, 3, 4, 5], 97.5)).toBeCloseTo(4.9, 15);
  });
});

describe('bootstrap CIs of the scores', () => {
  it('equal a percentile bootstrap written from the definition, on the same random stream', () => {
    const c = REF.cases[4];
    const y = Int32Array.from(c.y);
    const p = Int32Array.from(c.pred);
    const B = 300;
    const ci = bootstrapScores(y, p, c.C, B, new Rng(5));
    const rng = new Rng(5);
    const vals = { accuracy: [] as number[], balancedAccuracy: [] as number[], macroF1: [] as number[] };
    for (let b = 0; b < B; b++) {
      const idx = Array.from({ length: y.length }, () => rng.int(y.length));
      const s = classScores(Int32Array.from(idx, (i) => y[i]), Int32Array.from(idx, (i) => p[i]), c.C);
      vals.accuracy.push(s.accuracy);
      vals.balancedAccuracy.push(s.balancedAccuracy);
      vals.macroF1.push(s.macroF1);
    }
    for (const k of ['accuracy', 'balancedAccuracy', 'macroF1'] as const) {
      const sorted = vals[k].sort((a, b) => a - b);
      expect(ci[k]![0]).toBeCloseTo(percentileSorted(sorted, 2.5), 14);
      expect(ci[k]![1]).toBeCloseTo(percentileSorted(sorted, 97.5), 14);
      expect(ci[k]![0]).toBeLessThanOrEqual(c[k]);
      expect(ci[k]![1]).toBeGreaterThanOrEqual(c[k]);
    }
  });
});

describe('logistic regression (the probe) against scikit-learn', () => {
  const L = REF.logistic;
  const X = Float64Array.from(L.X);
  const y = Int32Array.from(L.y);
  it('reaches scikit-learn’s coefficients and predictions', () => {
    const { W } = fitLogistic(X, L.n, L.d, y, 1, L.C, 5000, 1e-12);
    for (let c = 0; c < L.C; c++) for (let j = 0; j < L.d; j++) expect(W[j * L.C + c]).toBeCloseTo(L.coef[c][j], 4);
    // intercepts are defined up to a common shift (softmax): compare them centred
    const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
    const ours = Array.from({ length: L.C }, (_, c) => W[L.d * L.C + c]);
    const m1 = mean(ours);
    const m2 = mean(L.intercept);
    ours.forEach((v, c) => expect(v - m1).toBeCloseTo(L.intercept[c] - m2, 4));
    for (let i = 0; i < L.n; i++) {
      let best = 0;
      let arg = 0;
      for (let c = 0; c < L.C; c++) {
        let s = W[L.d * L.C + c];
        for (let j = 0; j < L.d; j++) s += X[i * L.d + j] * W[j * L.C + c];
        if (c === 0 || s > best) [best, arg] = [s, c];
      }
      expect(arg).toBe(L.pred[i]);
    }
  });
  it('the SIMD kernel and the JavaScript loops give bit-identical losses, gradients and fits', () => {
    const rng = new Rng(3);
    const n = 203;
    const d = 37;
    const K = 6;
    const Xr = Float64Array.from({ length: n * d }, () => rng.normal());
    const yr = Int32Array.from({ length: n }, () => rng.int(K));
    const Wt = Float64Array.from({ length: (d + 1) * K }, () => rng.normal() * 0.1);
    const g1 = new Float64Array(Wt.length);
    const g2 = new Float64Array(Wt.length);
    const f1 = logisticObjective(Xr, n, d, yr, K, 1, true)(Wt, g1);
    const f2 = logisticObjective(Xr, n, d, yr, K, 1, false)(Wt, g2);
    expect(f1).toBe(f2);
    expect(Array.from(g1)).toEqual(Array.from(g2));
    const a = fitLogistic(Xr, n, d, yr, 1, K, 50, 1e-4, undefined, true);
    const b = fitLogistic(Xr, n, d, yr, 1, K, 50, 1e-4, undefined, false);
    expect(Array.from(a.W)).toEqual(Array.from(b.W));
  });
});
