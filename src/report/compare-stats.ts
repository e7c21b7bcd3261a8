/**
 * The CIs of differences of the comparison of two runs (src/report/compare.ts): one run's per-item
 * series of a statistic (cluster/items.json: predictions against true classes, or per-item
 * values), the statistic on them, the paired or independent bootstrap of B − A over items, and
 * the normal approximation from two runs' own 95% CIs when no items are known.
 */
import type { ClusterItems } from '../cluster/types.js';
import { Rng } from '../util/rng.js';
import { confusionCounts, percentileSorted, scoresFromConfusion, type ScoreName } from '../cluster/scores.js';

const Z = 1.959963984540054;
/** Bootstrap resamples of the CIs of differences. */
export const COMPARE_BOOTSTRAP = 1000;

/** 95% CI of b − a from two independent 95% CIs (normal approximation). */
export function diffCI(a: number, ciA: [number, number], b: number, ciB: [number, number]): [number, number] {
  const seA = (ciA[1] - ciA[0]) / (2 * Z);
  const seB = (ciB[1] - ciB[0]) / (2 * Z);
  const se = Math.sqrt(seA * seA + seB * seB);
  const d = b - a;
  return [d - Z * se, d + Z * se];
}

/**
 * One run's per-item series of one statistic: predictions against true classes (`pred`, and for
 * a probe `preds`, every CV repeat's, the first being `pred`), or per-item values.
 */
export type ItemSeries = { ids: string[]; y: Int32Array; C: number; pred: Int32Array; preds?: Int32Array[] } | {
  ids: string[];
  values: Float64Array;
};

/** The repeats of a series: its CV repeats' predictions, or one (kNN, a file that kept one). */
const repeatsOf = (s: ItemSeries): number => ('values' in s ? 1 : s.preds?.length || 1);

/** The statistic of repeat `r` of a series on the items `rows` (all when null). */
function statOn(s: ItemSeries, stat: ScoreName | 'mean', rows: Int32Array | null, M: Float64Array | null,
  r = 0): number
{
  if ('values' in s) {
    const v = s.values;
    let sum = 0;
    const n = rows ? rows.length : v.length;
    for (let t = 0; t < n; t++) sum += v[rows ? rows[t] : t];
    return n ? sum / n : 0;
  }
  const pred = s.preds?.length ? s.preds[r % s.preds.length]! : s.pred;
  const sc = scoresFromConfusion(confusionCounts(s.y, pred, s.C, rows ?? undefined, M ?? undefined), s.C);
  return sc[stat as ScoreName];
}

/** The statistic of a series over all its items, the mean over its repeats (what metrics.json shows). */
export function seriesValue(s: ItemSeries, stat: ScoreName | 'mean'): number {
  const R = repeatsOf(s);
  let v = 0;
  for (let r = 0; r < R; r++) v += statOn(s, stat, null, null, r) / R;
  return v;
}

/**
 * 95% bootstrap CI of stat(s2) − stat(s1): paired over the items when both series hold the same
 * item ids, else each resampled on its own. `kind` says which. Probes with several CV repeats
 * are resampled over repeats and items together, as their own CIs are (src/cluster/paired.ts):
 * each resample draws a repeat r (paired: the same r for both, modulo each one's repeat count;
 * independent: one for each) and then the items, so the interval covers the point estimate, the
 * mean over repeats.
 */
export function bootstrapDiff(s1: ItemSeries, s2: ItemSeries, stat: ScoreName | 'mean', B: number, seed: number): {
  ci: [number, number];
  kind: 'paired' | 'independent';
  n: number;
} | null {
  const n1 = s1.ids.length;
  const n2 = s2.ids.length;
  if (B <= 0 || n1 === 0 || n2 === 0) return null;
  const rng = new Rng(seed);
  const M1 = 'pred' in s1 ? new Float64Array(s1.C * s1.C) : null;
  const M2 = 'pred' in s2 ? new Float64Array(s2.C * s2.C) : null;
  const pos2 = new Map(s2.ids.map((id, i) => [id, i]));
  const paired = n1 === n2 && pos2.size === n2 && s1.ids.every((id) => pos2.has(id));
  const diffs = new Float64Array(B);
  const r1 = new Int32Array(n1);
  const r2 = new Int32Array(n2);
  const map = paired ? Int32Array.from(s1.ids, (id) => pos2.get(id)!) : null;
  const R1 = repeatsOf(s1);
  const R2 = repeatsOf(s2);
  const Rp = Math.max(R1, R2);
  for (let b = 0; b < B; b++) {
    let q1 = 0;
    let q2 = 0;
    if (map) {
      // one repeat for both (repeat r of each used the same folds), drawn only when there are several
      if (Rp > 1) q1 = q2 = rng.int(Rp);
      for (let t = 0; t < n1; t++) {
        const i = rng.int(n1);
        r1[t] = i;
        r2[t] = map[i];
      }
    } else {
      if (R1 > 1) q1 = rng.int(R1);
      for (let t = 0; t < n1; t++) r1[t] = rng.int(n1);
      if (R2 > 1) q2 = rng.int(R2);
      for (let t = 0; t < n2; t++) r2[t] = rng.int(n2);
    }
    diffs[b] = statOn(s2, stat, r2, M2, q2) - statOn(s1, stat, r1, M1, q1);
  }
  diffs.sort();
  return { ci: [percentileSorted(diffs, 2.5), percentileSorted(diffs, 97.5)], kind: paired ? 'paired' : 'independent',
    n: paired ? n1 : n1 + n2 };
}

/** Series of one run's items.json: a classifier's predictions, or a space's silhouettes. */
export function itemSeries(items: ClusterItems | null | undefined,
  what: { space: string; of: 'knn' | 'probe' | 'silhouette' } | { baseline: string } | { sweep: string }
): ItemSeries | null {
  if (!items) return null;
  const base = { ids: items.ids, y: Int32Array.from(items.y), C: items.classes.length };
  // a probe's every CV repeat when the file keeps them (earlier files: the first only)
  const probe = (first: number[], all: number[][] | undefined) => ({ ...base, pred: Int32Array.from(first),
    ...(all?.length ? { preds: all.map((p) => Int32Array.from(p)) } : {}) });
  if ('baseline' in what) {
    const b = items.baselines.find((x) => x.name === what.baseline);
    return b ? probe(b.probe, b.probeRepeats) : null;
  }
  if ('sweep' in what) {
    const w = items.sweep?.find((x) => x.point === what.sweep);
    return w ? probe(w.probe, w.probeRepeats) : null;
  }
  const s = items.spaces.find((x) => x.space === what.space);
  if (!s) return null;
  if (what.of === 'silhouette') return { ids: items.ids, values: Float64Array.from(s.silhouette) };
  if (what.of === 'knn') return { ...base, pred: Int32Array.from(s.knn) };
  return s.probe ? probe(s.probe, s.probeRepeats) : null;
}
