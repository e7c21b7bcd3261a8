/**
 * What `lobes cluster` writes to RUN/cluster/ (or --out DIR). The report reads these.
 *
 *   cluster/settings.json   ClusterSettings
 *   cluster/coords.json     ClusterCoords     (and coords.csv: id,label,x,y)
 *   cluster/metrics.json    ClusterMetrics    (and metrics.csv: space,metric,value,ci_low,ci_high,p)
 *   cluster/sweep.json      optional: probe accuracy per layer
 */

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
}
