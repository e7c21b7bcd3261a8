/**
 * How well labels separate in one space: silhouette, the leave-one-out kNN classifier and the
 * cross-validated linear probe (each scored by accuracy, balanced accuracy and macro-F1, with
 * per-class recall and a confusion matrix), and Davies–Bouldin. Every statistic except
 * Davies–Bouldin carries a percentile-bootstrap 95% CI over items and the mean, 95% band and
 * one-sided p-value of its own label-permutation null (the same statistic recomputed on
 * shuffled labels). Definitions: src/cluster/metrics.ts (silhouette, kNN, Davies–Bouldin),
 * src/cluster/scores.ts (the classification scores), src/cluster/probe.ts (the probe).
 */
import { Rng } from '../util/rng.js';
import { nullZ } from '../util/stats.js';
import { normalUpper } from '../util/resolution.js';
import type { ProbeOptions } from './probe.js';
import { gridEdge, modalC, probeNullPrepared, repeatedCv, type PreparedFold, type RepeatedCv } from './probecv.js';
import { bootstrapRepeated } from './paired.js';
import { groupMembers } from './resample.js';
import { bootstrapCI, daviesBouldin, designShuffle, distanceMatrix, knnPredict, largestGroup, mean,
  neighboursFromDistances, normalizeRows, permutationDesign, permutationP, probePermutationLabels, silhouetteMeans,
  silhouetteSamples, type Distance } from './metrics.js';
import { bootstrapScores, classScores, confusionCounts, nullSummary, perClassRecall, SCORE_NAMES } from './scores.js';
import type { ClassifierMetrics, MetricWithCI, ProbeCv, SpaceMetrics } from './types.js';

export interface SpaceInput {
  /** Space name: 'original-cosine' | 'original-euclidean' | 'embedding'. */
  space: string;
  /** Points [n, d] for distances. */
  X: Float64Array | Float32Array;
  d: number;
  distance: Distance;
  /** Features for the probe [n, probeDim] (null: no probe in this space). */
  probe: { X: Float64Array; d: number } | null;
  /** Precomputed distance matrix [n, n] for `distance` (computed when absent). */
  D?: Float64Array;
  /** Precomputed probe null scores for probePermutationLabels(...) ([R][3], see probeNullScores). */
  probeNull?: Float64Array;
  /** Precomputed repeated CV of the probe (computed from `probe` when absent). */
  probeCv?: RepeatedCv;
  /** Precomputed mean silhouettes for permutationLabels(...) (e.g. from worker threads). */
  silhouetteNull?: Float64Array;
}

export interface MetricOptions {
  /** Neighbours for the kNN classifier (default 10). */
  k?: number;
  bootstrap?: number;
  permutations?: number;
  /** Permutations for the probe (retrains every fold each time; default min(permutations, 100)). */
  probePermutations?: number;
  seed?: number;
  probe?: ProbeOptions;
}

/**
 * A statistic with its CI and its null's p-value, mean, band, sd and R; z and the normal
 * approximation of z's p beside the permutation p; no p (nor z) when the null has no spread.
 */
export function withNull(value: number, ci95: [number, number] | null, nulls: ArrayLike<number>): MetricWithCI {
  const R = nulls.length;
  const sd = nullSd(nulls);
  // a null without spread (every shuffle scored the same) gives no p: it would only count ties
  const p = sd === 0 ? null : permutationP(value, nulls);
  const z = sd === 0 ? null : nullZ(value, nulls);
  return { value, ci95, p, ...nullSummary(nulls), z,
    ...(R
      ? { permutations: R, nullSd: sd, pNormal: z === null ? null : normalUpper(z),
        atFloor: p !== null && Math.abs(p - 1 / (R + 1)) < 1e-12 }
      : {}) };
}

/** Standard deviation of a null sample (n − 1); null when it has fewer than two values. */
function nullSd(v: ArrayLike<number>): number | null {
  const n = v.length;
  if (n < 2) return null;
  let s = 0;
  for (let i = 0; i < n; i++) s += v[i];
  const mu = s / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (v[i] - mu) ** 2;
  // a spread below rounding noise of the scores is none
  return ss / (n - 1) > 1e-24 ? Math.sqrt(ss / (n - 1)) : 0;
}

/** Accuracy, balanced accuracy and macro-F1 of predictions, one row [3] per labelling in `out`. */
function scoreRow(y: Int32Array, pred: Int32Array, C: number, out: Float64Array, r: number): void {
  const s = classScores(y, pred, C);
  SCORE_NAMES.forEach((k, t) => (out[3 * r + t] = s[k]));
}

/**
 * The probe's scores under each labelling of `perms` ([R][3]: accuracy, balanced accuracy,
 * macro-F1), refitting every prepared fold for each one (src/cluster/probecv.ts).
 */
export function probeNullScores(folds: PreparedFold[], n: number, perms: Int32Array[], C: number, opts: ProbeOptions,
  seed: number, onOne?: () => void): Float64Array
{
  return probeNullPrepared(folds, n, perms, C, opts, seed, onOne);
}

/** The options the permutation null refits with: C fixed at the most frequently chosen one. */
export function nullOptions(opts: ProbeOptions, cv: RepeatedCv): ProbeOptions {
  return { ...opts, cGrid: undefined, C: modalC(cv.chosenC, opts.C ?? 1) };
}

/** How a repeated CV was run, as recorded with its scores. */
export function probeCvInfo(opts: ProbeOptions, cv: RepeatedCv): ProbeCv {
  const nested = !!opts.cGrid?.length;
  return {
    repeats: cv.preds.length,
    folds: cv.folds,
    cMethod: nested ? 'nested' : 'fixed',
    ...(nested ? { cGrid: opts.cGrid } : {}),
    chosenC: cv.chosenC,
    ...(nested ? { cScore: opts.cScore ?? 'balancedAccuracy', gridEdge: gridEdge(cv, opts.cGrid)! } : {}),
    nullC: modalC(cv.chosenC, opts.C ?? 1),
    classWeight: opts.classWeight ?? null,
    pca: opts.pca ?? 0,
  };
}

/**
 * Score a repeated CV: each score's mean over repeats with its bootstrap CI over items and
 * repeats (src/cluster/paired.ts) and its null from `nullScores`; recall is the mean over
 * repeats, the confusion matrix the first repeat's.
 */
export function scoreProbe(y: Int32Array, cv: RepeatedCv, C: number, nullScores: Float64Array, B: number, rng: Rng,
  opts: ProbeOptions): ClassifierMetrics
{
  const bs = bootstrapRepeated(y, cv.preds, C, B, rng, opts.groups);
  const M = confusionCounts(y, cv.preds[0], C);
  const confusion = Array.from({ length: C }, (_, a) => Array.from({ length: C }, (_, b) => M[a * C + b]));
  const recalls = cv.preds.map((p) => perClassRecall(y, p, C));
  const recall = Array.from({ length: C }, (_, c) => {
    const v = recalls.reduce((a, r) => a + r[c], 0) / recalls.length;
    return Number.isNaN(v) ? null : v;
  });
  return {
    accuracy: withNull(bs.value.accuracy, bs.ci.accuracy, column(nullScores, 0)),
    balancedAccuracy: withNull(bs.value.balancedAccuracy, bs.ci.balancedAccuracy, column(nullScores, 1)),
    macroF1: withNull(bs.value.macroF1, bs.ci.macroF1, column(nullScores, 2)),
    recall,
    confusion,
    cv: probeCvInfo(opts, cv),
  };
}

/** Column t of a [R][3] score table. */
function column(t: Float64Array, k: number): Float64Array {
  const R = t.length / 3;
  return Float64Array.from({ length: R }, (_, r) => t[3 * r + k]);
}

/**
 * Score predictions against the true labels: each score with its bootstrap CI (B resamples from
 * `rng`; with `groups`, of groups, then items within them) and its null from `nullScores` ([R][3]; empty: no null), per-class recall and confusion.
 */
export function scoreClassifier(y: Int32Array, pred: Int32Array, C: number, nullScores: Float64Array, B: number,
  rng: Rng, groups?: Int32Array | null): ClassifierMetrics
{
  const s = classScores(y, pred, C);
  const ci = bootstrapScores(y, pred, C, B, rng, groupMembers(groups));
  const M = confusionCounts(y, pred, C);
  const confusion = Array.from({ length: C }, (_, a) => Array.from({ length: C }, (_, b) => M[a * C + b]));
  return {
    accuracy: withNull(s.accuracy, ci.accuracy, column(nullScores, 0)),
    balancedAccuracy: withNull(s.balancedAccuracy, ci.balancedAccuracy, column(nullScores, 1)),
    macroF1: withNull(s.macroF1, ci.macroF1, column(nullScores, 2)),
    recall: perClassRecall(y, pred, C).map((v) => (Number.isNaN(v) ? null : v)),
    confusion,
  };
}

/** Everything spaceMetrics computes, plus the per-item values behind it (for items.json). */
export interface SpaceResult {
  metrics: SpaceMetrics;
  knnPred: Int32Array;
  probePred: Int32Array | null;
  /** Every CV repeat's out-of-fold predictions (the first is probePred). */
  probePreds: Int32Array[] | null;
  silhouette: Float64Array;
}

/** All metrics of one space for labels coded 0..C-1 (`classes` gives names). */
export function spaceMetrics(input: SpaceInput, n: number, labels: Int32Array, classes: string[],
  opts: MetricOptions = {}): SpaceMetrics
{
  return spaceResult(input, n, labels, classes, opts).metrics;
}

/** spaceMetrics with the per-item predictions and silhouettes. */
export function spaceResult(input: SpaceInput, n: number, labels: Int32Array, classes: string[],
  opts: MetricOptions = {}): SpaceResult
{
  const C = classes.length;
  const groups = opts.probe?.groups ?? null;
  // with groups, neighbours come from other groups only (leave-one-group-out), as the probe's folds keep groups whole
  const k = Math.max(1, Math.min(opts.k ?? 10, n - (groups ? largestGroup(groups) : 1)));
  const B = opts.bootstrap ?? 1000;
  const R = opts.permutations ?? 200;
  const Rp = opts.probePermutations ?? Math.min(R, 100);
  const seed = opts.seed ?? 0;
  const rng = new Rng(seed);
  const D = input.D ?? distanceMatrix(input.X, n, input.d, input.distance);
  const sil = silhouetteSamples(D, n, labels, C);
  const nbrs = neighboursFromDistances(D, n, k, groups);
  const pred = knnPredict(nbrs, n, k, labels, C);
  const dbX = input.distance === 'cosine' ? normalizeRows(input.X, n, input.d) : input.X;
  const db = daviesBouldin(dbX, n, input.d, labels, C);
  const popts: ProbeOptions = { ...opts.probe, seed };
  const cv = input.probe
    ? input.probeCv ?? repeatedCv([{ X: input.probe.X, d: input.probe.d }], n, labels, C, popts)
    : null;
  const probePred = cv ? cv.preds[0] : null;
  // permutation nulls: silhouette and kNN share the shuffles
  const nullKnn = new Float64Array(3 * R);
  const perm = Int32Array.from(labels);
  const permRng = rng.fork();
  const perms: Int32Array[] = [];
  // shuffled within what the design allows (metrics.ts permutationDesign: items, or by the groups)
  const design = permutationDesign(labels, opts.probe?.groups);
  for (let r = 0; r < R; r++) {
    designShuffle(permRng, perm, design);
    if (!input.silhouetteNull) perms.push(Int32Array.from(perm));
    scoreRow(perm, knnPredict(nbrs, n, k, perm, C), C, nullKnn, r);
  }
  const nullSil = input.silhouetteNull ?? silhouetteMeans(D, n, perms, C);
  let nullProbe: Float64Array = new Float64Array(0);
  if (input.probe && Rp > 0) {
    rng.fork(); // the probe permutations' generator (see probePermutationLabels)
    nullProbe = input.probeNull ??
      probeNullScores(cv!.prepared, n, probePermutationLabels(labels, Rp, seed, opts.probe?.groups), C,
        nullOptions(popts, cv!), seed);
  }
  const bootRng = rng.fork();
  // the CIs resample as the probe's do: groups, then items within them, when the run has groups
  const silhouette = withNull(mean(sil), bootstrapCI(sil, B, bootRng, groupMembers(opts.probe?.groups)), nullSil);
  const knn = scoreClassifier(labels, pred, C, nullKnn, B, bootRng, opts.probe?.groups);
  const probe = cv ? scoreProbe(labels, cv, C, nullProbe, B, bootRng, popts) : null;
  const perClass = classes.map((label, c) => {
    let cnt = 0;
    let s = 0;
    for (let i = 0; i < n; i++) {
      if (labels[i] !== c) continue;
      cnt++;
      s += sil[i];
    }
    return { label, n: cnt, silhouette: cnt ? s / cnt : 0, knnRecall: knn.recall[c] ?? 0,
      ...(probe ? { probeRecall: probe.recall[c] } : {}) };
  });
  const metrics: SpaceMetrics = {
    space: input.space,
    silhouette,
    knnAccuracy: knn.accuracy,
    probeAccuracy: probe ? probe.accuracy : null,
    knn,
    probe,
    ...(input.probe ? { probeDims: input.probe.d } : {}),
    daviesBouldin: { value: db, ci95: null, p: null },
    perClass,
    confusion: knn.confusion,
  };
  return { metrics, knnPred: pred, probePred, probePreds: cv ? cv.preds : null, silhouette: sil };
}

/** The probe's repeated CV scored with bootstrap CIs and, given `nullScores`, their null (the layer sweep, the baselines). */
export function probeScores(cv: RepeatedCv, labels: Int32Array, C: number, B: number, seed: number,
  probe: ProbeOptions = {},
  nullScores: Float64Array = new Float64Array(0)): { metrics: ClassifierMetrics; pred: Int32Array }
{
  return { metrics: scoreProbe(labels, cv, C, nullScores, B, new Rng(seed), { ...probe, seed }), pred: cv.preds[0] };
}
