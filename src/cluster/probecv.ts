/**
 * The probe's cross-validation (the model is in src/cluster/probe.ts; one fold's reduction and
 * standardization, steps 1 and 2, in src/cluster/probe-fold.ts).
 *
 * Everything fitted is fitted on the training part of each fold, never on its test items:
 *  1. each feature block (the representation; for the incremental probe, the words and the
 *     representation) is reduced to its top `pca` principal components of the training rows, and
 *     the test rows are projected on those components (a sparse block, under 10% non-zero such as
 *     the token counts, through src/cluster/pca-sparse.ts);
 *  2. the blocks are concatenated and standardized with the training rows' mean and standard
 *     deviation;
 *  3. C is fixed, or chosen by an inner stratified CV on the training rows over `cGrid` (the
 *     inner folds see the outer training fold's PCA and standardization, never the test fold);
 *  4. logistic regression is fitted from zero (a cold start) and predicts the test rows.
 * Repeated CV runs all of this for `repeats` fold seeds (seed, seed + 1, ...): the spread of the
 * scores over repeats is the part of the uncertainty that comes from the choice of folds.
 */
import { fitLogistic, predictLogistic, stratifiedFolds, stratifiedGroupFolds, type ProbeOptions } from './probe.js';
import { classScores } from './scores.js';
import { prepareFold, rowsOf, type Block, type PreparedFold } from './probe-fold.js';

export { blockKey, gramPays, prepareFold, standardize, type Block, type PreparedFold } from './probe-fold.js';

/** What one repeat of the CV gives. */
export interface CvRun {
  /** Out-of-fold prediction of every item. */
  pred: Int32Array;
  /** C used in each fold (the fixed C, or the one the inner CV chose). */
  chosenC: number[];
}

/** What the repeated CV gives. */
export interface RepeatedCv {
  /** Out-of-fold predictions, one array per repeat (repeat r's folds use seed + r). */
  preds: Int32Array[];
  /** C per repeat and fold. */
  chosenC: number[][];
  /** Folds per repeat. */
  folds: number;
  /** The prepared folds of repeat 0 (what the permutation null refits). */
  prepared: PreparedFold[];
}

/** The number of folds for these labels: `folds`, lowered to the smallest class size, at least 2. */
export function foldCount(labels: Int32Array, nClasses: number, folds = 5, groups?: Int32Array): number {
  const counts = new Int32Array(nClasses);
  for (let i = 0; i < labels.length; i++) counts[labels[i]]++;
  let smallest = Infinity;
  for (let c = 0; c < nClasses; c++) if (counts[c] > 0) smallest = Math.min(smallest, counts[c]);
  // with groups, no more folds than groups
  if (groups) smallest = Math.min(smallest, new Set(groups).size);
  return Math.max(2, Math.min(folds, smallest));
}

/** The fold of each sample: stratified, or with `groups` stratified group folds (groups kept whole). */
export function foldsOf(labels: Int32Array, nClasses: number, folds: number, seed: number,
  groups?: Int32Array): Int32Array
{
  return groups
    ? stratifiedGroupFolds(labels, groups, nClasses, folds, seed)
    : stratifiedFolds(labels, nClasses, folds, seed);
}

/** Rows of `fold` equal to f (test) and the others (train). */
export function splitFold(fold: Int32Array, f: number): { train: Int32Array; test: Int32Array } {
  const train: number[] = [];
  const test: number[] = [];
  for (let i = 0; i < fold.length; i++) (fold[i] === f ? test : train).push(i);
  return { train: Int32Array.from(train), test: Int32Array.from(test) };
}

/** Class weights n / (K · n_c) of labels y (K: the classes present), per sample; null unless 'balanced'. */
export function sampleWeights(y: Int32Array, nClasses: number, mode: ProbeOptions['classWeight']): Float64Array
  | undefined
{
  if (mode !== 'balanced') return undefined;
  const counts = new Float64Array(nClasses);
  for (let i = 0; i < y.length; i++) counts[y[i]]++;
  const present = counts.filter((c) => c > 0).length;
  return Float64Array.from(y, (c) => y.length / (present * counts[c]));
}

/**
 * Fit on X [n, d] with labels y, predict Z [m, d]. A cold start (L-BFGS from zero). The stopping
 * tolerance shrinks with C below 1: under a strong penalty the weights are small and the
 * predictions turn on their small differences, which a loose stop leaves at their first steps
 * (at C = 1e-4 on test/goldens/probe-c, 87 of 96 predictions as scikit-learn's at 1e-4, all 96
 * at 1e-4 · C).
 */
export function fitPredict(X: Float64Array, n: number, d: number, y: Int32Array, Z: Float64Array, m: number,
  nClasses: number, C: number, opts: ProbeOptions): Int32Array
{
  const { W } = fitLogistic(X, n, d, y, C, nClasses, opts.maxIter ?? 100, 1e-4 * Math.min(1, C), undefined, true,
    sampleWeights(y, nClasses, opts.classWeight));
  return predictLogistic(W, Z, m, d, nClasses);
}

/**
 * The C of `grid` with the highest score under a stratified `inner`-fold CV of X [n, d] (the
 * inner folds use seed `seed`): the score the probe reports, balanced accuracy, unless
 * `opts.cScore` says accuracy; ties go to the earlier value, as scikit-learn's GridSearchCV.
 */
export function chooseC(X: Float64Array, n: number, d: number, y: Int32Array, nClasses: number, grid: number[],
  opts: ProbeOptions, seed: number): number
{
  if (grid.length === 1) return grid[0];
  const folds = foldCount(y, nClasses, opts.innerFolds ?? 3, opts.groups);
  return chooseCOnFolds(X, d, y, nClasses, grid, opts, foldsOf(y, nClasses, folds, seed, opts.groups), folds).C;
}

/**
 * chooseC on a given fold assignment (`fold[i]` in 0..folds-1): each C's score is the mean over
 * the folds of that fold's score (GridSearchCV's mean_test_score), with the fold's training rows
 * weighted as `opts.classWeight` says.
 */
export function chooseCOnFolds(X: Float64Array, d: number, y: Int32Array, nClasses: number, grid: number[],
  opts: ProbeOptions, fold: Int32Array, folds: number): { C: number; scores: number[] }
{
  const score = opts.cScore ?? 'balancedAccuracy';
  const sums = new Float64Array(grid.length);
  let used = 0;
  for (let f = 0; f < folds; f++) {
    const { train, test } = splitFold(fold, f);
    if (test.length === 0) continue;
    used++;
    const Xt = rowsOf(X, d, train);
    const Xs = rowsOf(X, d, test);
    const yt = Int32Array.from(train, (i) => y[i]);
    const ys = Int32Array.from(test, (i) => y[i]);
    grid.forEach((C, g) => {
      const p = fitPredict(Xt, train.length, d, yt, Xs, test.length, nClasses, C, opts);
      sums[g] += classScores(ys, p, nClasses)[score];
    });
  }
  const scores = Array.from(sums, (v) => v / Math.max(used, 1));
  let best = 0;
  for (let g = 1; g < grid.length; g++) if (scores[g] > scores[best]) best = g;
  return { C: grid[best], scores };
}

/** Predictions of one prepared fold's test rows for labels `labels` (C fixed, or chosen by nested CV). */
export function predictFold(pf: PreparedFold, labels: Int32Array, nClasses: number, opts: ProbeOptions,
  seed: number): { pred: Int32Array; C: number }
{
  const yt = Int32Array.from(pf.train, (i) => labels[i]);
  const g = opts.groups;
  const inner = g ? { ...opts, groups: Int32Array.from(pf.train, (i) => g[i]!) } : opts;
  const C = opts.cGrid?.length
    ? chooseC(pf.Xtr, pf.train.length, pf.d, yt, nClasses, opts.cGrid, inner, seed)
    : opts.C ?? 1;
  return { pred: fitPredict(pf.Xtr, pf.train.length, pf.d, yt, pf.Xte, pf.test.length, nClasses, C, opts), C };
}

/** The prepared folds of one repeat (seed `seed`): the fold assignment and each fold's matrices. */
export function prepareFolds(blocks: Block[], labels: Int32Array, nClasses: number, opts: ProbeOptions,
  seed: number): PreparedFold[]
{
  const folds = foldCount(labels, nClasses, opts.folds ?? 5, opts.groups);
  const fold = foldsOf(labels, nClasses, folds, seed, opts.groups);
  const out: PreparedFold[] = [];
  for (let f = 0; f < folds; f++) {
    const { train, test } = splitFold(fold, f);
    if (test.length === 0) continue;
    out.push(prepareFold(blocks, train, test, opts.pca ?? 0, seed));
  }
  return out;
}

/** Out-of-fold predictions over prepared folds. */
export function predictPrepared(folds: PreparedFold[], n: number, labels: Int32Array, nClasses: number,
  opts: ProbeOptions, seed: number): CvRun
{
  const pred = new Int32Array(n);
  const chosenC: number[] = [];
  folds.forEach((pf, f) => {
    const r = predictFold(pf, labels, nClasses, opts, seed + 7919 * (f + 1));
    pf.test.forEach((i, t) => (pred[i] = r.pred[t]));
    chosenC.push(r.C);
  });
  return { pred, chosenC };
}

/** The non-empty folds of one repeat (fold seed `seed`): each fold's training and test rows, in fold order. */
export function foldSplits(labels: Int32Array, nClasses: number, opts: ProbeOptions,
  seed: number): { train: Int32Array; test: Int32Array }[]
{
  const folds = foldCount(labels, nClasses, opts.folds ?? 5, opts.groups);
  const fold = foldsOf(labels, nClasses, folds, seed, opts.groups);
  const out: { train: Int32Array; test: Int32Array }[] = [];
  for (let f = 0; f < folds; f++) {
    const s = splitFold(fold, f);
    if (s.test.length > 0) out.push(s);
  }
  return out;
}

/**
 * Fold j (of foldSplits) of one repeat with fold seed `seed`, alone: its prepared matrices, the
 * predictions of its test rows and its C, exactly as cvRun computes that fold (the folds of a
 * repeat do not depend on each other, so they can run on any thread in any order).
 */
export function cvFold(blocks: Block[], labels: Int32Array, nClasses: number, opts: ProbeOptions, seed: number,
  j: number): { fold: PreparedFold; pred: Int32Array; C: number }
{
  const { train, test } = foldSplits(labels, nClasses, opts, seed)[j];
  const fold = prepareFold(blocks, train, test, opts.pca ?? 0, seed);
  const r = predictFold(fold, labels, nClasses, opts, seed + 7919 * (j + 1));
  return { fold, pred: r.pred, C: r.C };
}

/** One repeat of the stratified k-fold CV with fold seed `seed`. */
export function cvRun(blocks: Block[], n: number, labels: Int32Array, nClasses: number, opts: ProbeOptions,
  seed: number): CvRun & { folds: PreparedFold[] }
{
  const folds = prepareFolds(blocks, labels, nClasses, opts, seed);
  return { ...predictPrepared(folds, n, labels, nClasses, opts, seed), folds };
}

/** Out-of-fold predictions of one k-fold CV of X [n, d] (fold seed opts.seed). */
export function crossValidatedPredictions(X: Float64Array, n: number, d: number, labels: Int32Array, nClasses: number,
  opts: ProbeOptions = {}): Int32Array
{
  return cvRun([{ X, d }], n, labels, nClasses, opts, opts.seed ?? 0).pred;
}

/**
 * The probe's scores ([R][3]: accuracy, balanced accuracy, macro-F1) for each labelling of
 * `perms` on fixed prepared folds (the permutation null: the features, their in-fold PCA and the
 * fold partition stay; only the labels move).
 */
export function probeNullPrepared(folds: PreparedFold[], n: number, perms: Int32Array[], nClasses: number,
  opts: ProbeOptions, seed: number, onOne?: () => void): Float64Array
{
  const out = new Float64Array(3 * perms.length);
  perms.forEach((pl, r) => {
    const s = classScores(pl, predictPrepared(folds, n, pl, nClasses, opts, seed).pred, nClasses);
    out[3 * r] = s.accuracy;
    out[3 * r + 1] = s.balancedAccuracy;
    out[3 * r + 2] = s.macroF1;
    onOne?.();
  });
  return out;
}

/** `opts.repeats` repeats of the stratified k-fold CV (repeat r: fold seed opts.seed + r). */
export function repeatedCv(blocks: Block[], n: number, labels: Int32Array, nClasses: number, opts: ProbeOptions = {},
  onRepeat?: () => void): RepeatedCv
{
  const R = Math.max(1, opts.repeats ?? 1);
  const seed = opts.seed ?? 0;
  const preds: Int32Array[] = [];
  const chosenC: number[][] = [];
  let prepared: PreparedFold[] = [];
  for (let r = 0; r < R; r++) {
    const run = cvRun(blocks, n, labels, nClasses, opts, seed + r);
    preds.push(run.pred);
    chosenC.push(run.chosenC);
    if (r === 0) prepared = run.folds;
    onRepeat?.();
  }
  return { preds, chosenC, folds: foldCount(labels, nClasses, opts.folds ?? 5), prepared };
}

/** The most frequent C of a repeated CV (ties: the smaller); `fallback` when there is none. */
export function modalC(chosen: number[][], fallback = 1): number {
  const counts = new Map<number, number>();
  for (const row of chosen) for (const c of row) counts.set(c, (counts.get(c) ?? 0) + 1);
  let best = fallback;
  let bestN = 0;
  for (const [c, k] of [...counts.entries()].sort((a, b) => a[0] - b[0])) {
    if (k > bestN) {
      best = c;
      bestN = k;
    }
  }
  return best;
}

/** The default repeats of the probe's k-fold CV. */
export const DEFAULT_PROBE_REPEATS = 5;

/**
 * The values of C the nested CV chooses from: down to 1e-4, since with the penalty ‖W‖²/(2C)
 * summed over items the strongest useful penalty falls as the training fold grows, and a
 * choice at 0.01, the earlier grid's edge, was the most frequent one.
 */
export const PROBE_C_GRID = [0.0001, 0.001, 0.01, 0.1, 1, 10];

/**
 * The probe's CV options from the cluster command's (C: a number, or 'nested' over
 * PROBE_C_GRID, the default; class weights 'balanced' by default, so that the fit serves the
 * balanced accuracy it is chosen and reported by).
 */
export function probeSettings(folds = 5, repeats = DEFAULT_PROBE_REPEATS, c: number | 'nested' = 'nested',
  classWeight: 'balanced' | null = 'balanced'): ProbeOptions & { folds: number }
{
  return { folds, repeats, ...(c === 'nested' ? { cGrid: PROBE_C_GRID } : { C: c }), classWeight };
}

/**
 * How often a nested choice of C sat at an edge of its grid (the smallest or the largest C):
 * null when C was fixed or the grid has one value. A choice there may mean the best C lies
 * beyond the grid.
 */
export function gridEdge(cv: { chosenC: number[][] }, grid: number[] | undefined): { low: number; high: number;
  of: number } | null
{
  if (!grid || grid.length < 2) return null;
  const all = cv.chosenC.flat();
  const lo = Math.min(...grid);
  const hi = Math.max(...grid);
  return { low: all.filter((c) => c === lo).length, high: all.filter((c) => c === hi).length, of: all.length };
}
