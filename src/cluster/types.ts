/**
 * What `lobes cluster` writes to RUN/cluster/ (or --out DIR). The report reads these.
 *
 *   cluster/settings.json   ClusterSettings
 *   cluster/coords.json     ClusterCoords     (and coords.csv: id,label,x,y)
 *   cluster/metrics.json    ClusterMetrics    (and metrics.csv: space,metric,value,ci_low,ci_high,p)
 *   cluster/sweep.json      optional: probe accuracy per layer
 *   cluster/items.json      ClusterItems: per-item predictions of the metric sample (for paired comparisons)
 */

import type { FamilyRecord } from '../util/families.js';
import type { AnalysisProvenance } from '../store/types.js';
import type { PermutationPlan, Verdict } from '../util/resolution.js';

export interface ClusterSettings {
  point: string;
  by: string;
  seed: number;
  perplexity: number;
  pcaDims: number;
  theta: number;
  /** The t-SNE repulsion used: Barnes–Hut, FFT interpolation, both by iteration ('mixed'), or exact (theta 0). */
  tsneMethod?: 'bh' | 'fft' | 'mixed' | 'exact';
  /** Iterations whose repulsion was FFT-interpolated (under 'mixed', those whose grid was small for N). */
  fftIterations?: number;
  iterations: number;
  earlyExaggeration: number;
  bootstrap: number;
  permutations: number;
  source: string;
  /** Added fields (all written by lobes cluster). */
  /** Learning rate actually used ('auto' resolved); under 'per-phase', the early phase's. */
  learningRate?: number;
  /** Learning rate after early exaggeration, when it differs ('per-phase'). */
  learningRateAfter?: number;
  /** Largest step of one point per iteration, when clipped ('per-phase'). */
  maxStepNorm?: number;
  /** 'approximate' when t-SNE's neighbours came from the forest search (absent: exact). */
  neighbours?: 'approximate';
  /** The share of the exact neighbours that search found, on `rows` sampled rows. */
  neighbourRecall?: { recall: number; rows: number };
  /** Iterations of early exaggeration. */
  exaggerationIterations?: number;
  /** Neighbours of the kNN classifier. */
  knnK?: number;
  /** Folds of the probe's stratified cross-validation. */
  probeFolds?: number;
  /** Permutations used for the probe p-value (each retrains every fold). */
  probePermutations?: number;
  /** Points the metrics were computed on (a seeded stratified subsample when N is larger). */
  metricSample?: number;
  /** PCA components the probe is fitted on (0: the space's own dimensions). */
  probePca?: number;
  /** Label permutations per layer of the sweep. */
  sweepPermutations?: number;
  /**
   * How each permutation count was set for its family before the run (src/util/resolution.ts):
   * `permutations` (silhouette and kNN) and `probePermutations` for the verdict's classifiers,
   * `sweepPermutations` for the layers of a sweep.
   */
  sizing?: { permutations?: PermutationPlan; probePermutations?: PermutationPlan; sweepPermutations?: PermutationPlan };
  /**
   * Items of the run left out of the analysis for having no value on `by` (an empty label, or a
   * row a label overlay does not list, e.g. "unevaluated" after `lobes eval label`): how many,
   * of how many rows, and how many read as each value.
   */
  leftOut?: { count: number; of: number; values: Record<string, number> };
  /**
   * The label axis the probes were grouped by (--group), the number of groups in the metric
   * sample, and how every permutation null shuffled the labels under the groups: `groups` (each
   * group has one label: whole groups' labels shuffled among the groups) or `within-groups`
   * (labels shuffled only inside each group), with the items that can move.
   */
  group?: { axis: string; groups: number; null?: 'items' | 'groups' | 'within-groups'; exchangeable?: number };
  /** Token baselines computed ([] when none could be). */
  baselines?: string[];
  /** Controls computed outside the verdict's family (`length`; absent when none could be). */
  controls?: string[];
  /** Input kind: 'run' (a run directory) or 'matrix' (.npy / .safetensors). */
  input?: 'run' | 'matrix';
  /** For a run: the run (identity), samples table and chunk files read (src/store/provenance.ts). */
  provenance?: AnalysisProvenance;
  /** For a matrix file: the sha256 of the matrix and of the labels file. */
  inputSha256?: { matrix: string; labels: string };
  lobesVersion?: string;
}

export interface ClusterCoords {
  ids: string[];
  labels: string[];
  /** Interleaved x, y per sample. */
  xy: number[];
  /** Optional hover text per sample (the item's text). */
  text?: string[];
}

export interface MetricWithCI {
  value: number;
  /** Percentile-bootstrap 95% CI over items (null without resamples). */
  ci95: [number, number] | null;
  /** Label-permutation p-value, one-sided (null without permutations). */
  p: number | null;
  /** Mean of the permutation null of the same statistic (absent or null: no null). */
  nullMean?: number | null;
  /** 2.5th and 97.5th percentiles of that null. */
  nullBand?: [number, number] | null;
  /** (value − null mean) / null sd: readable where p sits at the permutation floor 1/(R + 1). */
  z?: number | null;
  /** p adjusted by Holm within its family (metrics.families; src/cluster/multiplicity.ts). */
  pHolm?: number | null;
  /** p adjusted by Benjamini–Hochberg within its family. */
  pBH?: number | null;
  /** Permutations of the null. */
  permutations?: number;
  /** Standard deviation of the null (0: a degenerate null, every shuffle scored the same; then p is left out). */
  nullSd?: number | null;
  /** One-sided normal-approximation p of z (an approximation: it assumes a normal null). */
  pNormal?: number | null;
  /** Whether p sits at its floor 1/(R + 1). */
  atFloor?: boolean;
  /** The test's verdict within its family (members of metrics.families; src/util/resolution.ts). */
  verdict?: Verdict;
}

/** A classifier's out-of-sample predictions, scored (the kNN classifier or the linear probe). */
export interface ClassifierMetrics {
  accuracy: MetricWithCI;
  /** Mean per-class recall; chance 1/C for any predictor that ignores the input. */
  balancedAccuracy: MetricWithCI;
  /** Mean per-class F1 over the classes present in the true or predicted labels. */
  macroF1: MetricWithCI;
  /** Recall per class, in `classes` order (null for a class without items). */
  recall: (number | null)[];
  /** Rows: true class; columns: predicted class, in `classes` order (the linear probe: its first repeat). */
  confusion: number[][];
  /** The linear probe's cross-validation: repeats, folds, and the C of every repeat's folds. */
  cv?: ProbeCv;
}

/** How the linear probe was cross-validated. */
export interface ProbeCv {
  /** Repeats of the stratified k-fold CV (repeat r: fold seed + r); scores are means over them. */
  repeats: number;
  folds: number;
  /** 'fixed' or 'nested' (chosen per training fold by an inner CV over `cGrid`). */
  cMethod: 'fixed' | 'nested';
  cGrid?: number[];
  /** C of each repeat's folds. */
  chosenC: number[][];
  /** The score the nested CV chose C by (balanced accuracy unless set otherwise). */
  cScore?: 'balancedAccuracy' | 'accuracy';
  /** Folds whose chosen C sat at the grid's smallest (`low`) or largest (`high`) value, of `of`. */
  gridEdge?: { low: number; high: number; of: number };
  /** C the permutation null refits with (the most frequently chosen). */
  nullC: number;
  classWeight: 'balanced' | null;
  /** Principal components per feature block, fitted inside each training fold (0: none). */
  pca: number;
}

/**
 * One family of tests whose p-values are adjusted together: its name and its members, in order;
 * files written since the families registry (src/util/families.ts) also carry its claim, size,
 * corrections and α (FamilyRecord).
 */
export interface MetricFamily extends Partial<Omit<FamilyRecord, 'family' | 'members'>> {
  /** ('model-vs-words' and 'incremental' were two families in files written before they became one.) */
  family: 'classifiers' | 'layers' | 'representation-vs-words' | 'layers-steps' | 'model-vs-words' | 'incremental';
  members: string[];
}

/** A difference of two scores with its paired-bootstrap 95% CI and two-sided bootstrap p. */
export interface DifferenceCI {
  value: number;
  ci95: [number, number] | null;
  p: number | null;
  /** p adjusted by Holm / Benjamini–Hochberg within the comparisons of its kind. */
  pHolm?: number | null;
  pBH?: number | null;
}

/**
 * A paired comparison of two probes on the same items (src/cluster/paired.ts): the probe on `a`
 * minus the probe on `b`, each score with its CI over items and fold repeats.
 */
export interface ProbeComparison {
  /** 'model-vs-words' (the representation − a token baseline), 'incremental' ((words + representation) − words) or 'layers' (layer b − layer a of the sweep). */
  kind: 'model-vs-words' | 'incremental' | 'layers';
  /** The probe whose scores are subtracted from. */
  a: string;
  /** The probe subtracted. */
  b: string;
  accuracy: DifferenceCI;
  balancedAccuracy: DifferenceCI;
  macroF1: DifferenceCI;
  /** Items compared. */
  n: number;
}

/** The incremental probe: a token baseline's features and the representation's, together. */
export interface IncrementalMetrics {
  /** The token baseline (its name). */
  words: string;
  /** Dimensions the probe was fitted on (the in-fold PCA of each block, side by side). */
  probeDims: number;
  probe: ClassifierMetrics;
}

/** What chance looks like for the labels of the metric sample. */
export interface Chance {
  /** Expected balanced accuracy of any predictor that ignores the input: 1/C. */
  balancedAccuracy: number;
  /** Accuracy of always answering the most frequent class. */
  majorityRate: number;
  majorityClass: string;
  /** Items per class, in `classes` order. */
  counts: number[];
}

/** A probe on features computed from the tokens alone (no model), on the same items. */
export interface BaselineMetrics {
  /** 'token-counts' or 'token-embedding-mean'. */
  name: string;
  /** What the features are, in words. */
  description: string;
  /** Feature dimension before the probe's PCA. */
  dim: number;
  /** Dimensions the probe was fitted on. */
  probeDims: number;
  probe: ClassifierMetrics;
}

/** One capture point of the layer sweep. */
export interface SweepPoint {
  point: string;
  probeAccuracy: number;
  ci95: [number, number] | null;
  /** The probe's balanced accuracy and macro-F1 with CIs and their permutation null. */
  balancedAccuracy?: MetricWithCI;
  macroF1?: MetricWithCI;
  /** Accuracy with its null (probeAccuracy and ci95 repeat its value and CI). */
  accuracy?: MetricWithCI;
  /** How the probe was cross-validated. */
  cv?: ProbeCv;
}

/** Per-item predictions of the metric sample, so that two runs can be compared item by item. */
export interface ClusterItems {
  /** Item ids of the metric sample, in row order. */
  ids: string[];
  classes: string[];
  /** True class index per item. */
  y: number[];
  /**
   * `probe` is the first CV repeat's out-of-fold predictions; `probeRepeats` every repeat's, in
   * repeat order (the first is `probe`), so that a comparison resamples repeats as the probe's
   * own CI does (absent in files of earlier versions, which kept the first repeat only).
   */
  spaces: { space: string; knn: number[]; probe: number[] | null; probeRepeats?: number[][]; silhouette: number[] }[];
  baselines: { name: string; probe: number[]; probeRepeats?: number[][] }[];
  /** The controls' probes (`length`), as `baselines`. */
  controls?: { name: string; probe: number[]; probeRepeats?: number[][] }[];
  sweep?: { point: string; probe: number[]; probeRepeats?: number[][] }[];
}

export interface SpaceMetrics {
  /** 'original-cosine' | 'original-euclidean' | 'embedding'. */
  space: string;
  silhouette: MetricWithCI;
  /** The kNN classifier's accuracy (the same numbers as knn.accuracy). */
  knnAccuracy: MetricWithCI;
  /** The probe's accuracy (the same numbers as probe.accuracy), null without a probe. */
  probeAccuracy: MetricWithCI | null;
  /** Leave-one-out kNN: accuracy, balanced accuracy, macro-F1, per-class recall. */
  knn?: ClassifierMetrics;
  /** The cross-validated linear probe, null in a space without one. */
  probe?: ClassifierMetrics | null;
  /** Dimensions the probe was fitted on (PCA components, or the space's own). */
  probeDims?: number;
  daviesBouldin: MetricWithCI;
  perClass: { label: string; n: number; silhouette: number; knnRecall: number; probeRecall?: number | null }[];
  /** Confusion matrix of the kNN classifier: rows true, columns predicted, in `classes` order. */
  confusion: number[][];
}

export interface ClusterMetrics {
  classes: string[];
  n: number;
  dim: number;
  pcaExplainedVariance: number;
  klDivergence: number;
  spaces: SpaceMetrics[];
  sweep?: SweepPoint[];
  /** Chance levels of the metric sample's labels. */
  chance?: Chance;
  /** Probes on token features of the same items (run input only). */
  baselines?: BaselineMetrics[];
  /**
   * Controls through the same probe, outside the verdict's family: `length` (the item's token
   * count and its log; run input only). Its incremental probe is in `incremental` and its paired
   * comparison in `comparisons` (the representation-vs-words family).
   */
  controls?: BaselineMetrics[];
  /** Notes on what could not be computed (e.g. a baseline without the model's tokenizer). */
  notes?: string[];
  /** Probes on a token baseline's features and the representation's together (run input). */
  incremental?: IncrementalMetrics[];
  /** Paired differences: representation − words, (words + representation) − words, layer to layer. */
  comparisons?: ProbeComparison[];
  /** The families whose p-values carry pHolm and pBH (src/cluster/multiplicity.ts). */
  families?: MetricFamily[];
  /** Added fields. */
  /** 'exact' (exact Z, N ≤ 5000) or 'barnes-hut' (Z from the quadtree, as scikit-learn reports). */
  klMethod?: 'exact' | 'barnes-hut' | 'fft-interpolation';
  /** Dimensions fed to t-SNE (after PCA; equals `dim` when PCA was off). */
  pcaDims?: number;
  /** Points the metrics were computed on. */
  metricSample?: number;
  /** Seconds per stage. */
  timings?: Record<string, number>;
  /** CPU seconds of the process (all threads) per stage: a load-independent view of the same stages. */
  cpuTimings?: Record<string, number>;
}
