/**
 * The probe's cross-validation (the model is in src/cluster/probe.ts).
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
import { mulXBRows, pca, pcaProject, sketchOmega } from './pca.js';
import { gramPcaProject } from './pca-gram.js';
import { csrProject, csrRows, pcaCsr } from './pca-sparse.js';
import { fitLogistic, predictLogistic, stratifiedFolds, stratifiedGroupFolds, type ProbeOptions } from './probe.js';
import { classScores } from './scores.js';

/** A feature matrix [n, d] row-major. */
export interface Block {
  X: Float64Array | Float32Array;
  d: number;
  /**
   * A name unique to this matrix within the process (blockKey): its in-fold PCA is then kept
   * (reducedParts) and reused by every probe that reduces it on the same training rows with the
   * same seed and components, on whichever thread meets it again. Absent: computed every time.
   */
  key?: string;
  /**
   * X Xᵀ [n, n] of the same rows (at least its upper triangle j ≥ i, as gramRows writes it): a
   * dense block's randomized in-fold PCA then runs on the training rows' double-centred Gram
   * matrix (gramPcaProject, the same components up to rounding) when the training rows are
   * fewer than its dimension.
   */
  gram?: Float64Array;
  /** `gram` has both triangles filled (ClusterPool.repeatedCv shares it so): no thread makes its own symmetric copy. */
  gramFull?: boolean;
}

/** One fold's training and test rows, reduced and standardized as the probe sees them. */
export interface PreparedFold {
  train: Int32Array;
  test: Int32Array;
  /** [train.length, d] and [test.length, d]. */
  Xtr: Float64Array;
  Xte: Float64Array;
  d: number;
}

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

/** Below this share of non-zero entries a block's PCA runs on its sparse rows (src/cluster/pca-sparse.ts). */
const SPARSE_DENSITY = 0.1;
const densities = new WeakMap<object, number>();

/** The share of non-zero entries of a block (computed once per matrix). */
function density(b: Block): number {
  let v = densities.get(b.X);
  if (v === undefined) {
    let nz = 0;
    for (let t = 0; t < b.X.length; t++) if (b.X[t] !== 0) nz++;
    v = nz / Math.max(b.X.length, 1);
    densities.set(b.X, v);
  }
  return v;
}

function rowsOf(X: Float64Array | Float32Array, d: number, rows: Int32Array): Float64Array {
  const out = new Float64Array(rows.length * d);
  rows.forEach((r, i) => {
    for (let j = 0; j < d; j++) out[i * d + j] = X[r * d + j];
  });
  return out;
}

/** One block of one split, reduced by the training rows' PCA: [train, d] and [test, d], before standardization. */
interface ReducedPart {
  tr: Float64Array;
  te: Float64Array;
  d: number;
}

/** A block reduced to its top k components of the training rows, the test rows projected on them. */
function reduceBlock(b: Block, train: Int32Array, test: Int32Array, k: number, seed: number): ReducedPart {
  if (b.d > 256 && k + 10 < b.d && density(b) < SPARSE_DENSITY) {
    // a sparse block (token counts): the same randomized PCA on the sparse rows
    const A = csrRows(b.X, b.d, train);
    const p = pcaCsr(A, k, seed);
    return { tr: csrProject(A, p), te: csrProject(csrRows(b.X, b.d, test), p), d: p.k };
  }
  // randomized unless the sketch would span the space: the exact route's Jacobi sweeps on a
  // d × d covariance cost O(d³) per fold, far more than the sketch for d near 256
  const randomized = k + 10 < Math.min(b.d, train.length);
  if (randomized && b.gram && train.length < b.d) return gramReduce(b, b.gram, train, test, k, seed);
  const tr = rowsOf(b.X, b.d, train);
  const te = rowsOf(b.X, b.d, test);
  const p = pca(tr, train.length, b.d, k, { seed, method: randomized ? 'randomized' : 'exact' });
  return { tr: pcaProject(p, tr, train.length, b.d), te: pcaProject(p, te, test.length, b.d), d: p.k };
}

/**
 * Whether a block's in-fold PCA would take the Gram route (reduceBlock) if it had its Gram
 * matrix: dense, unkeyed (a keyed block's reductions are shared with probes that may not have
 * one), a randomized PCA, and fewer rows than dimensions, so that the [n, n] Gram matrix is
 * smaller than the block itself and each fold's products cost m² l instead of 2 m d l.
 */
export function gramPays(b: Block, n: number, k: number): boolean {
  if (b.key !== undefined || b.gram || !(k > 0) || n >= b.d || k + 10 >= Math.min(b.d, n)) return false;
  return !(b.d > 256 && k + 10 < b.d && density(b) < SPARSE_DENSITY);
}

/** X Ω of every row of a block for the last sketch seed it was reduced with (the folds of one repeat share it). */
const sketched = new WeakMap<object, { seed: number; l: number; XO: Float64Array }>();

/**
 * reduceBlock through the Gram matrix (gramPcaProject): X Ω is computed once per block and
 * seed for all its rows (each fold's training rows take theirs), the rest from the Gram matrix.
 */
function gramReduce(b: Block, gram: Float64Array, train: Int32Array, test: Int32Array, k: number,
  seed: number): ReducedPart
{
  const n = b.X.length / b.d;
  const l = k + 10;
  let s = sketched.get(b.X);
  if (!s || s.seed !== seed || s.l !== l) {
    const XO = new Float64Array(n * l);
    mulXBRows(b.X, b.d, sketchOmega(b.d, l, seed), l, XO, 0, n);
    s = { seed, l, XO };
    sketched.set(b.X, s);
  }
  const r = gramPcaProject(gram, n, s.XO, l, train, test, k, 2, b.gramFull === true);
  return { tr: r.tr, te: r.te, d: r.k };
}

/** Kept reductions of keyed blocks in this thread, oldest first (Map order), and their size. */
const kept = new Map<string, { train: Int32Array; test: Int32Array; part: ReducedPart }>();
let keptBytes = 0;
/** The most this thread keeps (the oldest go first): a swap analysis needs its word features' and one point's. */
const KEPT_BYTES = 256 * 2 ** 20;

const sameRows = (a: Int32Array, b: Int32Array) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * reduceBlock of a keyed block, computed once per (key, d, k, seed, rows) in this thread: the
 * folds of every probe on one labelling and fold seed are the same rows, so the probes that share
 * a block (a state's probe and its incremental probe with the words; the words in every
 * incremental probe) share its reductions. The parts are never written to after (prepareFold
 * copies them), so sharing them changes no number.
 */
function reducedParts(b: Block, key: string, train: Int32Array, test: Int32Array, k: number,
  seed: number): ReducedPart
{
  let h = 0x811c9dc5;
  for (let i = 0; i < train.length; i++) h = Math.imul(h ^ train[i], 0x01000193) >>> 0;
  const id = `${key}\u0000${b.d}\u0000${k}\u0000${seed}\u0000${train.length}\u0000${test.length}\u0000${h}`;
  const hit = kept.get(id);
  if (hit && sameRows(hit.train, train) && sameRows(hit.test, test)) {
    kept.delete(id);
    kept.set(id, hit);
    return hit.part;
  }
  const part = reduceBlock(b, train, test, k, seed);
  if (hit) forget(id);
  kept.set(id, { train: Int32Array.from(train), test: Int32Array.from(test), part });
  keptBytes += bytesOf(part, train, test);
  for (const old of kept.keys()) {
    if (keptBytes <= KEPT_BYTES || old === id) break;
    forget(old);
  }
  return part;
}

const bytesOf = (p: ReducedPart, train: Int32Array, test: Int32Array) =>
  8 * (p.tr.length + p.te.length) + 4 * (train.length + test.length);

function forget(id: string): void {
  const e = kept.get(id);
  if (!e) return;
  kept.delete(id);
  keptBytes -= bytesOf(e.part, e.train, e.test);
}

/** A key for Block.key unique to one matrix of this process (prefix: what it is, for reading). */
let keys = 0;
export function blockKey(prefix: string): string {
  return `${prefix}#${++keys}`;
}

/**
 * The training and test matrices of one split: each block reduced by a PCA of the training rows
 * (when `k` is below its dimension and the training size), concatenated, standardized with the
 * training rows' mean and standard deviation (a constant column keeps sd 1).
 */
export function prepareFold(blocks: Block[], train: Int32Array, test: Int32Array, k: number,
  seed: number): PreparedFold
{
  const parts: ReducedPart[] = [];
  for (const b of blocks) {
    const reduce = k > 0 && k < b.d && k < train.length;
    if (!reduce) parts.push({ tr: rowsOf(b.X, b.d, train), te: rowsOf(b.X, b.d, test), d: b.d });
    else
      parts.push(
        b.key === undefined ? reduceBlock(b, train, test, k, seed) : reducedParts(b, b.key, train, test, k, seed),
      );
  }
  const d = parts.reduce((a, p) => a + p.d, 0);
  const glue = (m: number, pick: (p: (typeof parts)[number]) => Float64Array) => {
    const out = new Float64Array(m * d);
    let off = 0;
    for (const p of parts) {
      const M = pick(p);
      for (let i = 0; i < m; i++) for (let j = 0; j < p.d; j++) out[i * d + off + j] = M[i * p.d + j];
      off += p.d;
    }
    return out;
  };
  const Xtr = glue(train.length, (p) => p.tr);
  const Xte = glue(test.length, (p) => p.te);
  standardize(Xtr, train.length, d, Xte, test.length);
  return { train, test, Xtr, Xte, d };
}

/** Standardize A [n, d] in place by its own column mean and sd (population), and B [m, d] by the same. */
export function standardize(A: Float64Array, n: number, d: number, B?: Float64Array, m = 0): void {
  const mean = new Float64Array(d);
  const sd = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) mean[j] += A[i * d + j];
  for (let j = 0; j < d; j++) mean[j] /= Math.max(n, 1);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) sd[j] += (A[i * d + j] - mean[j]) ** 2;
  for (let j = 0; j < d; j++) sd[j] = Math.sqrt(sd[j] / Math.max(n, 1)) || 1;
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) A[i * d + j] = (A[i * d + j] - mean[j]) / sd[j];
  if (B) { for (let i = 0; i < m; i++) for (let j = 0; j < d; j++) B[i * d + j] = (B[i * d + j] - mean[j]) / sd[j]; }
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
