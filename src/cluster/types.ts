/**
 * What `lobes cluster` writes to RUN/cluster/ (or --out DIR). The report reads these.
 *
 *   cluster/settings.json   ClusterSettings
 *   cluster/coords.json     ClusterCoords     (and coords.csv: id,label,x,y)
 *   cluster/metrics.json    ClusterMetrics    (and metrics.csv: space,metric,value,ci_low,ci_high,p)
 *   cluster/sweep.json      optional: probe accuracy per layer
 */

import type { AnalysisProvenance } from '../store/types.js';

export interface ClusterSettings {
  point: string;
  by: string;
  seed: number;
  perplexity: number;
  pcaDims: number;
  theta: number;
  iterations: number;
  earlyExaggeration: number;
  bootstrap: number;
  permutations: number;
  source: string;
  /** Added fields (all written by lobes cluster). */
  /** Learning rate actually used ('auto' resolved). */
  learningRate?: number;
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
  ci95: [number, number] | null;
  p: number | null;
}

export interface SpaceMetrics {
  /** 'original-cosine' | 'original-euclidean' | 'embedding'. */
  space: string;
  silhouette: MetricWithCI;
  knnAccuracy: MetricWithCI;
  probeAccuracy: MetricWithCI | null;
  daviesBouldin: MetricWithCI;
  perClass: { label: string; n: number; silhouette: number; knnRecall: number }[];
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
  sweep?: { point: string; probeAccuracy: number; ci95: [number, number] | null }[];
  /** Added fields. */
  /** 'exact' (exact Z, N ≤ 5000) or 'barnes-hut' (Z from the quadtree, as scikit-learn reports). */
  klMethod?: 'exact' | 'barnes-hut';
  /** Dimensions fed to t-SNE (after PCA; equals `dim` when PCA was off). */
  pcaDims?: number;
  /** Points the metrics were computed on. */
  metricSample?: number;
  /** Seconds per stage. */
  timings?: Record<string, number>;
}
