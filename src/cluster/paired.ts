/**
 * Bootstrap CIs of the probe's scores under repeated cross-validation, and of the difference
 * between two probes on the same items (paired).
 *
 * Repeated CV gives R sets of out-of-fold predictions of the same n items (repeat r: folds drawn
 * with seed + r). The reported score is the mean over repeats. Each bootstrap resample draws a
 * repeat r uniformly and n items with replacement, and scores repeat r's predictions on those
 * items. The resampled distribution is the mixture over repeats of each repeat's item bootstrap,
 * so its variance is the item variance plus the variance between repeats: the CI covers what a
 * new draw of the items and a new draw of the folds would change. (A bootstrap of one repeat's
 * fixed predictions, the earlier CI, leaves out the second part.)
 *
 * Paired difference of probes A and B (e.g. the representation − the words): both were scored on
 * the same items, and repeat r of both used the same folds (folds depend only on the labels and
 * the seed). Each resample draws one repeat r and one set of items and takes score(A_r) −
 * score(B_r) on them, so what the items share cancels. Value: the mean over repeats of the
 * difference; 95% CI: the 2.5 and 97.5 percentiles; p: the two-sided bootstrap p-value
 * min(1, 2 · (1 + min(#{diff ≤ 0}, #{diff ≥ 0})) / (B + 1)), never 0 from B resamples.
 */
import { Rng } from '../util/rng.js';
import { confusionCounts, percentileSorted, scoresFromConfusion, SCORE_NAMES, type ScoreName } from './scores.js';
import type { DifferenceCI } from './types.js';
import { groupMembers, resampleRows } from './resample.js';

export { groupMembers, resampleRows } from './resample.js';

function meanScores(y: Int32Array, preds: Int32Array[], C: number): Record<ScoreName, number> {
  const out = { accuracy: 0, balancedAccuracy: 0, macroF1: 0 };
  for (const p of preds) {
    const s = scoresFromConfusion(confusionCounts(y, p, C), C);
    for (const k of SCORE_NAMES) out[k] += s[k] / preds.length;
  }
  return out;
}

function ci(v: Float64Array): [number, number] {
  v.sort();
  return [percentileSorted(v, 2.5), percentileSorted(v, 97.5)];
}

/**
 * Scores of repeated-CV predictions: the mean over repeats, and the percentile-bootstrap 95% CI
 * over items and repeats (B resamples from `rng`); with `groups`, over groups, then items within
 * them (resampleRows).
 */
export function bootstrapRepeated(y: Int32Array, preds: Int32Array[], C: number, B: number, rng: Rng,
  groups?: Int32Array | null): { value: Record<ScoreName, number>; ci: Record<ScoreName, [number, number] | null> }
{
  const value = meanScores(y, preds, C);
  const n = y.length;
  if (B <= 0 || n === 0 || preds.length === 0)
    return { value, ci: { accuracy: null, balancedAccuracy: null, macroF1: null } };
  const vals = { accuracy: new Float64Array(B), balancedAccuracy: new Float64Array(B), macroF1: new Float64Array(B) };
  const members = groupMembers(groups);
  let rows: Int32Array = new Int32Array(n);
  const M = new Float64Array(C * C);
  for (let b = 0; b < B; b++) {
    const r = preds.length > 1 ? rng.int(preds.length) : 0;
    rows = resampleRows(n, rng, members, rows);
    const s = scoresFromConfusion(confusionCounts(y, preds[r], C, rows, M), C);
    for (const k of SCORE_NAMES) vals[k][b] = s[k];
  }
  return { value,
    ci: { accuracy: ci(vals.accuracy), balancedAccuracy: ci(vals.balancedAccuracy), macroF1: ci(vals.macroF1) } };
}

/**
 * The paired bootstrap of score(A) − score(B) for every score: A and B are repeated-CV
 * predictions of the same items (repeat r of each on the same folds; with unequal repeat counts,
 * repeat r of the shorter list is r modulo its length). `yB`, when given, is the labelling B is
 * scored against (two labels of the same items, e.g. the question's and the response's aspect:
 * each resample then scores A against y and B against yB on the same items). With `groups`, the
 * items are resampled by group, then within each group (resampleRows).
 */
export function pairedBootstrap(y: Int32Array, A: Int32Array[], Bp: Int32Array[], C: number, B: number, rng: Rng,
  yB: Int32Array = y, groups?: Int32Array | null): Record<ScoreName, DifferenceCI>
{
  const n = y.length;
  const R = Math.max(A.length, Bp.length);
  const value = { accuracy: 0, balancedAccuracy: 0, macroF1: 0 };
  for (let r = 0; r < R; r++) {
    const a = scoresFromConfusion(confusionCounts(y, A[r % A.length], C), C);
    const b = scoresFromConfusion(confusionCounts(yB, Bp[r % Bp.length], C), C);
    for (const k of SCORE_NAMES) value[k] += (a[k] - b[k]) / R;
  }
  const out = {} as Record<ScoreName, DifferenceCI>;
  if (B <= 0 || n === 0) {
    for (const k of SCORE_NAMES) out[k] = { value: value[k], ci95: null, p: null };
    return out;
  }
  const diffs = { accuracy: new Float64Array(B), balancedAccuracy: new Float64Array(B), macroF1: new Float64Array(B) };
  const members = groupMembers(groups);
  let rows: Int32Array = new Int32Array(n);
  const Ma = new Float64Array(C * C);
  const Mb = new Float64Array(C * C);
  for (let b = 0; b < B; b++) {
    const r = R > 1 ? rng.int(R) : 0;
    rows = resampleRows(n, rng, members, rows);
    const sa = scoresFromConfusion(confusionCounts(y, A[r % A.length], C, rows, Ma), C);
    const sb = scoresFromConfusion(confusionCounts(yB, Bp[r % Bp.length], C, rows, Mb), C);
    for (const k of SCORE_NAMES) diffs[k][b] = sa[k] - sb[k];
  }
  for (const k of SCORE_NAMES) {
    const v = diffs[k];
    let le = 0;
    let ge = 0;
    for (let b = 0; b < B; b++) {
      if (v[b] <= 0) le++;
      if (v[b] >= 0) ge++;
    }
    out[k] = { value: value[k], ci95: ci(v), p: Math.min(1, (2 * (1 + Math.min(le, ge))) / (B + 1)) };
  }
  return out;
}
