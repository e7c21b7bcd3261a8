/**
 * The probe's nested cross-validation against scikit-learn on a planted problem where C matters
 * (reference: test/cluster/reference/make_probecv_reference.py, which fits PCA and the scaler on
 * each outer training fold and runs GridSearchCV inside it, over 20 fold seeds).
 *
 * Agreement is statistical: lobes draws its folds with its own generator, so the two sets of 20
 * repeats differ by the fold draws alone. The scikit-learn repeats' sd is s ≈ 0.02, so each mean
 * over 20 repeats has a standard error ≈ s/√20 ≈ 0.0046 and their difference ≈ 0.0065; the
 * tolerance 0.02 is about 3 of those. Fitting C = 10 throughout instead of choosing it (the bug
 * this guards against) costs 0.031 here, outside the tolerance. The reference scores GridSearchCV
 * by accuracy without class weights, so the probe is run so too (cScore 'accuracy'; the default
 * chooses by balanced accuracy with balanced weights: test/cluster/probe-c.test.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repeatedCv } from '../../src/cluster/probecv.js';
import { fitLogistic } from '../../src/cluster/probe.js';
import { sampleWeights } from '../../src/cluster/probecv.js';

const REF = JSON.parse(readFileSync(new URL('./reference/probecv_reference.json', import.meta.url), 'utf8'));
const P = REF.planted;
const X = Float64Array.from(P.X as number[]);
const y = Int32Array.from(P.y as number[]);
const accuracies = (preds: Int32Array[]) => preds.map((p) => p.reduce((a, v, i) => a + (v === y[i] ? 1 : 0), 0) / P.n);
const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
const R = REF.sklearn.repeats as number;

describe('nested CV against scikit-learn (planted problem)', () => {
  const base = { folds: P.folds, innerFolds: P.innerFolds, pca: P.pca, repeats: R, seed: 0 };
  it('matches the accuracy of PCA + scaler + GridSearchCV inside each outer fold', () => {
    const cv = repeatedCv([{ X, d: P.d }], P.n, y, P.K, { ...base, cGrid: P.grid, cScore: 'accuracy' });
    const ours = mean(accuracies(cv.preds));
    expect(Math.abs(ours - REF.sklearn.mean)).toBeLessThan(0.02);
    // and chooses C the way GridSearchCV does: mostly the strong penalties, which fit best here
    const all = cv.chosenC.flat();
    const sk = REF.sklearn.chosenC as Record<string, number>;
    const skSmall = (sk['0.01'] + sk['0.1']) / Object.values(sk).reduce((a, v) => a + v, 0);
    const oursSmall = all.filter((c) => c <= 0.1).length / all.length;
    expect(skSmall).toBeGreaterThan(0.6);
    expect(oursSmall).toBeGreaterThan(0.6);
    // the planted problem makes C matter: C = 10 throughout is clearly worse than the choice
    expect(REF.sklearn.mean - REF.sklearn.fixed['10.0'].mean).toBeGreaterThan(0.025);
  });
  it('matches scikit-learn with each C fixed (the in-fold PCA and scaling alone)', () => {
    for (const C of P.grid as number[]) {
      const cv = repeatedCv([{ X, d: P.d }], P.n, y, P.K, { ...base, C });
      const key = C === 1 || C === 10 ? C.toFixed(1) : String(C);
      expect(Math.abs(mean(accuracies(cv.preds)) - REF.sklearn.fixed[key].mean)).toBeLessThan(0.02);
    }
  });
});

describe("class_weight='balanced' against scikit-learn", () => {
  it('reaches the same coefficients', () => {
    const W = REF.classWeight;
    const Xw = Float64Array.from(W.X as number[]);
    const yw = Int32Array.from(W.y as number[]);
    const { W: w } = fitLogistic(Xw, W.n, W.d, yw, 1, W.K, 5000, 1e-12, undefined, true,
      sampleWeights(yw, W.K, 'balanced'));
    for (let c = 0; c < W.K; c++) for (let j = 0; j < W.d; j++) expect(w[j * W.K + c]).toBeCloseTo(W.coef[c][j], 4);
    const ours = Array.from({ length: W.K }, (_, c) => w[W.d * W.K + c]);
    const m1 = mean(ours);
    const m2 = mean(W.intercept);
    ours.forEach((v, c) => expect(v - m1).toBeCloseTo(W.intercept[c] - m2, 4));
  });
});
