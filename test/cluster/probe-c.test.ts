/**
 * The probe's choice of C against scikit-learn (test/goldens/probe-c/make_probe_c_goldens.py):
 * on a planted imbalanced problem and fixed inner folds, LogisticRegression(class_weight=
 * 'balanced') scored by balanced accuracy in GridSearchCV chooses C = 0.1, while plain accuracy
 * without weights chooses the grid's smallest C, which answers the majority class. The default
 * probe settings are the former; a choice at the grid's edge is warned about.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseCOnFolds, fitPredict, gridEdge, PROBE_C_GRID, probeSettings } from '../../src/cluster/probecv.js';
import { gridEdgeNotes } from '../../src/cluster/run.js';

const G = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '..', 'goldens', 'probe-c', 'probe_c_goldens.json'), 'utf8'),
);
const X = Float64Array.from(G.X as number[]);
const y = Int32Array.from(G.y as number[]);
const fold = Int32Array.from(G.fold as number[]);

describe('choosing C for the score the probe reports', () => {
  it('balanced class weights and balanced accuracy choose what GridSearchCV chooses, score by score', () => {
    const r = chooseCOnFolds(X, G.d, y, G.K, G.grid, { classWeight: 'balanced', maxIter: 500 }, fold, 3);
    r.scores.forEach((v, g) => expect(Math.abs(v - G.balanced.scores[g]), `C = ${G.grid[g]}`).toBeLessThan(0.01));
    expect(r.C).toBe(G.balanced.chosen);
    expect(G.balanced.chosen).toBe(0.1);
  });

  it('plain accuracy without weights goes to the grid edge, as scikit-learn does (the choice the default no longer makes)', () => {
    const r = chooseCOnFolds(X, G.d, y, G.K, G.grid, { cScore: 'accuracy', classWeight: null, maxIter: 500 }, fold, 3);
    r.scores.forEach((v, g) => expect(Math.abs(v - G.accuracy.scores[g]), `C = ${G.grid[g]}`).toBeLessThan(0.01));
    expect(r.C).toBe(G.accuracy.chosen);
    expect(G.accuracy.chosen).toBe(0.0001);
  });

  it("the balanced fit predicts as scikit-learn's at every C of the grid", () => {
    for (const C of G.grid as number[]) {
      const p = fitPredict(X, G.n, G.d, y, X, G.n, G.K, C, { classWeight: 'balanced', maxIter: 500 });
      // Python writes 1.0 and 10.0 where JavaScript writes 1 and 10
      const ref = G.fullPredictions[C >= 1 ? C.toFixed(1) : String(C)] as number[];
      const agree = ref.filter((v, i) => v === p[i]).length;
      expect(agree, `C = ${C}`).toBeGreaterThanOrEqual(G.n - 1);
    }
  });

  it('the defaults: balanced weights, a grid below 0.01, and the choice scored by balanced accuracy', () => {
    const s = probeSettings();
    expect(s.classWeight).toBe('balanced');
    expect(s.cGrid).toEqual(PROBE_C_GRID);
    expect(Math.min(...PROBE_C_GRID)).toBeLessThan(0.01);
    expect(chooseCOnFolds(X, G.d, y, G.K, G.grid, { ...s, maxIter: 500 }, fold, 3).C).toBe(0.1);
    expect(probeSettings(5, 5, 'nested', null).classWeight).toBeNull();
  });

  it("a choice at the grid's edge in most folds is warned about", () => {
    const grid = PROBE_C_GRID;
    const cv = (cs: number[]) => ({
      cv: { repeats: 1, folds: cs.length, cMethod: 'nested', cGrid: grid, chosenC: [cs], nullC: cs[0],
        classWeight: 'balanced', pca: 0, gridEdge: gridEdge({ chosenC: [cs] }, grid)! },
    });
    const space = (cs: number[]) => ({ space: 'original-euclidean', probe: cv(cs) }) as any;
    expect(gridEdge({ chosenC: [[0.0001, 0.0001, 0.1, 10, 0.0001]] }, grid)).toEqual({ low: 3, high: 1, of: 5 });
    expect(gridEdgeNotes([space([0.0001, 0.0001, 0.1, 0.01, 0.0001])], [])).toEqual([
      'the probe in original-euclidean chose C = 0.0001, the smallest of its grid, in 3 of 5 folds: the best C may lie beyond the grid (--probe-c C fixes it)',
    ]);
    expect(gridEdgeNotes([space([0.001, 0.01, 0.1, 0.01, 10])], [])).toEqual([]);
  });
});
