/**
 * Classification scores that account for class imbalance and chance, as scikit-learn defines
 * them, plus the summaries every separation number carries (its permutation null's mean and
 * 95% band, its percentile-bootstrap CI).
 *
 *  - accuracy: share of items predicted correctly.
 *  - balanced accuracy (sklearn.metrics.balanced_accuracy_score): the mean over classes of the
 *    recall TP_c / n_c, over the classes present among the true labels. Any predictor that
 *    ignores the input scores 1/C in expectation, whatever it predicts: that is its chance level.
 *  - macro-F1 (sklearn.metrics.f1_score, average='macro'): the mean over the classes present
 *    among the true or the predicted labels of F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c).
 *  - majority-class rate: the accuracy of always answering the most frequent class (what a
 *    plain accuracy has to beat before it says anything).
 *  - null band: the 2.5 and 97.5 percentiles of the permutation values (linear interpolation
 *    between order statistics, numpy.percentile's default).
 */
import { Rng } from '../util/rng.js';
import { resampleRows } from './resample.js';

/** The three scores of one set of predictions. */
export interface Scores {
  accuracy: number;
  balancedAccuracy: number;
  macroF1: number;
}

/** Names of the scores, in the order they are reported. */
export const SCORE_NAMES = ['accuracy', 'balancedAccuracy', 'macroF1'] as const;
export type ScoreName = (typeof SCORE_NAMES)[number];

/**
 * Confusion counts [C, C] (rows true, columns predicted) over the items `rows` (all items when
 * omitted; a row may repeat, as in a bootstrap resample). `out` is reused when given.
 */
export function confusionCounts(yTrue: Int32Array, yPred: Int32Array, C: number, rows?: ArrayLike<number>,
  out?: Float64Array): Float64Array
{
  const M = out ?? new Float64Array(C * C);
  M.fill(0);
  if (rows) {
    for (let t = 0; t < rows.length; t++) {
      const i = rows[t];
      M[yTrue[i] * C + yPred[i]]++;
    }
  } else {
    for (let i = 0; i < yTrue.length; i++) M[yTrue[i] * C + yPred[i]]++;
  }
  return M;
}

/** Accuracy, balanced accuracy and macro-F1 of a confusion matrix [C, C] (scikit-learn's definitions). */
export function scoresFromConfusion(M: Float64Array, C: number): Scores {
  let n = 0;
  let hits = 0;
  let recallSum = 0;
  let present = 0;
  let f1Sum = 0;
  let labels = 0;
  for (let c = 0; c < C; c++) {
    let row = 0;
    let col = 0;
    for (let k = 0; k < C; k++) {
      row += M[c * C + k];
      col += M[k * C + c];
    }
    const tp = M[c * C + c];
    n += row;
    hits += tp;
    if (row > 0) {
      recallSum += tp / row;
      present++;
    }
    if (row > 0 || col > 0) {
      // 2TP / (2TP + FP + FN) with FP = col − TP and FN = row − TP
      f1Sum += (2 * tp) / (row + col);
      labels++;
    }
  }
  return {
    accuracy: n > 0 ? hits / n : 0,
    balancedAccuracy: present > 0 ? recallSum / present : 0,
    macroF1: labels > 0 ? f1Sum / labels : 0,
  };
}

/** Accuracy, balanced accuracy and macro-F1 of predictions. */
export function classScores(yTrue: Int32Array, yPred: Int32Array, C: number): Scores {
  return scoresFromConfusion(confusionCounts(yTrue, yPred, C), C);
}

/** Recall of each class (NaN for a class with no true items). */
export function perClassRecall(yTrue: Int32Array, yPred: Int32Array, C: number): number[] {
  const M = confusionCounts(yTrue, yPred, C);
  return Array.from({ length: C }, (_, c) => {
    let row = 0;
    for (let k = 0; k < C; k++) row += M[c * C + k];
    return row > 0 ? M[c * C + c] / row : NaN;
  });
}

/** The share of the most frequent class and its index (the first in class order on ties). */
export function majorityRate(y: Int32Array, C: number): { rate: number; cls: number } {
  const counts = new Int32Array(C);
  for (let i = 0; i < y.length; i++) counts[y[i]]++;
  let best = 0;
  for (let c = 1; c < C; c++) if (counts[c] > counts[best]) best = c;
  return { rate: y.length ? counts[best] / y.length : 0, cls: best };
}

/** The q-th percentile (0..100) of sorted values, interpolating linearly (numpy's default). */
export function percentileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const pos = (q / 100) * (n - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, n - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Mean and 95% band (2.5 and 97.5 percentiles) of a null distribution; nulls when it is empty. */
export function nullSummary(values: ArrayLike<number>): { nullMean: number | null; nullBand: [number, number] | null } {
  const n = values.length;
  if (n === 0) return { nullMean: null, nullBand: null };
  const s = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += s[i];
  return { nullMean: sum / n, nullBand: [percentileSorted(s, 2.5), percentileSorted(s, 97.5)] };
}

/**
 * Percentile-bootstrap 95% CIs of the three scores: B resamples of the items with
 * replacement (the same resamples for all three), each score recomputed on every resample. With
 * `members` (the items of each group, src/cluster/resample.ts groupMembers) each resample draws
 * groups, then items within them.
 */
export function bootstrapScores(yTrue: Int32Array, yPred: Int32Array, C: number, B: number, rng: Rng,
  members: Int32Array[] | null = null): Record<ScoreName, [number, number] | null>
{
  const n = yTrue.length;
  if (B <= 0 || n === 0) return { accuracy: null, balancedAccuracy: null, macroF1: null };
  const vals: Record<ScoreName, Float64Array> = { accuracy: new Float64Array(B), balancedAccuracy: new Float64Array(B),
    macroF1: new Float64Array(B) };
  let rows: Int32Array = new Int32Array(n);
  const M = new Float64Array(C * C);
  for (let b = 0; b < B; b++) {
    rows = resampleRows(n, rng, members, rows);
    const s = scoresFromConfusion(confusionCounts(yTrue, yPred, C, rows, M), C);
    for (const k of SCORE_NAMES) vals[k][b] = s[k];
  }
  const ci = (v: Float64Array): [number, number] => {
    v.sort();
    return [percentileSorted(v, 2.5), percentileSorted(v, 97.5)];
  };
  return { accuracy: ci(vals.accuracy), balancedAccuracy: ci(vals.balancedAccuracy), macroF1: ci(vals.macroF1) };
}
