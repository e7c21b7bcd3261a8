/**
 * The null distributions of the region metrics: which metrics are tested against the label
 * permutations, and their arrays (one value per permutation), per pair of groups and per group.
 */

/** Metrics tested against the null, per pair (NullTested fields of WandaPairMetrics). */
export const NULL_METRICS = ['jaccard', 'isolationAB', 'isolationBA', 'densityAminusB', 'densityBminusA'] as const;
/** Also tested per pair; reported as `${name}Null` next to the plain count. */
export const NULL_COUNTS = ['componentsAminusB', 'componentsBminusA'] as const;
export type NullMetric = (typeof NULL_METRICS)[number] | (typeof NULL_COUNTS)[number];
export const PAIR_NULLS = [...NULL_METRICS, ...NULL_COUNTS] as const;
/** Tested per group: its region's density and number of components. */
export type GroupNullMetric = 'density' | 'components';

/** Null distributions (length R each), per pair and per group. */
export interface Nulls {
  pairs: Record<NullMetric, Float64Array>[];
  groups: Record<GroupNullMetric, Float64Array>[];
}

export function pairList(G: number): [number, number][] {
  const pairs: [number, number][] = [];
  for (let a = 0; a < G; a++) for (let b = a + 1; b < G; b++) pairs.push([a, b]);
  return pairs;
}

export function emptyNulls(nPairs: number, G: number, R: number): Nulls {
  return {
    pairs: Array.from({ length: nPairs },
      () => Object.fromEntries(PAIR_NULLS.map((k) => [k, new Float64Array(R)])) as Record<NullMetric, Float64Array>),
    groups: Array.from({ length: G }, () => ({ density: new Float64Array(R), components: new Float64Array(R) })),
  };
}
