/**
 * The statistics of an ablation (docs/ablate.md, "Statistics"). For item i, d_i = after_i −
 * before_i (nats; negative: the ablation lowered the continuation's log-likelihood).
 *
 * - cell (region R, label L): the mean of d over L's items, a percentile bootstrap CI over
 *   those items (paired: each resampled item brings its own before and after), and the same
 *   mean under each of the K random regions (nullDelta). p = (1 + #{k: nullDelta_k ≤ delta}) /
 *   (K + 1), one-sided: R lowers these items' LL more than random regions of its size do; its
 *   floor is 1/(K + 1). z = (delta − mean(nullDelta)) / sd(nullDelta). pT: the prediction-interval
 *   t test of delta against the K nullDelta (util/stats.ts predictionP, lower tail; assumes the
 *   random regions' deltas are normal, and can fall below 1/(K + 1)); pTHolm: Holm over every cell
 *   of the run. The test is on ln(cost) when the change and every random change are costs
 *   (pTScale "log"; costP), else on the raw changes.
 * - specificity of R for its target label A: contrast = mean d over A's items − mean d over
 *   every other item (pooled), CI by a bootstrap resampling A's items and the others separately;
 *   nullContrast the same contrast under each random region; p as above (lower: more specific);
 *   pHolm: Holm over the regions of the run; pT and pTHolm as for cells.
 * - ratio of R for A: mean d over A's items / mean d over the others (both must be costs, d < 0;
 *   else null). Unlike the contrast it does not grow with the region's overall damage, so a
 *   region that costs every item the same share (long responses lose more nats under any region)
 *   gives the same ratio as random regions. nullRatio per random region; ratioP the prediction t
 *   test of ln ratio against the ln nullRatio, upper tail (A's items lose a larger share than under
 *   random regions); ratioPHolm: Holm over the regions.
 */
import { Rng, hash32 } from '../util/rng.js';
import { holm, nullZ, predictionP } from '../util/stats.js';
import { regionKey } from './regions.js';

export interface AblateCell {
  region: string;
  minus: string | null;
  label: string;
  n: number;
  before: number;
  delta: number;
  ci: [number, number];
  nullDelta: number[];
  p: number;
  z: number | null;
  pT: number | null;
  pTHolm: number | null;
  /** The scale pT was taken on: "log" (ln of the costs, when the change and every random change are costs), else "raw". */
  pTScale?: 'log' | 'raw';
}

export interface AblateSpecificity {
  region: string;
  minus: string | null;
  target: string;
  contrast: number;
  ci: [number, number];
  nullContrast: number[];
  p: number;
  pHolm: number;
  pT: number | null;
  pTHolm: number | null;
  ratio: number | null;
  nullRatio: (number | null)[];
  ratioP: number | null;
  ratioPHolm: number | null;
}

const mean = (xs: ArrayLike<number>, idx: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < idx.length; i++) s += xs[idx[i]!]!;
  return idx.length ? s / idx.length : NaN;
};

/** The [2.5%, 97.5%] percentiles of a sample (linear interpolation, as numpy's default). */
export function percentileCi(xs: Float64Array): [number, number] {
  const s = Float64Array.from(xs).sort();
  const q = (p: number) => {
    const h = (s.length - 1) * p;
    const lo = Math.floor(h);
    const hi = Math.min(lo + 1, s.length - 1);
    return s[lo]! + (h - lo) * (s[hi]! - s[lo]!);
  };
  return [q(0.025), q(0.975)];
}

/** Bootstrap of the mean of xs over idx (B resamples). */
export function bootstrapMean(xs: ArrayLike<number>, idx: readonly number[], B: number, rng: Rng): [number, number] {
  const out = new Float64Array(B);
  const n = idx.length;
  for (let b = 0; b < B; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += xs[idx[rng.int(n)]!]!;
    out[b] = s / n;
  }
  return percentileCi(out);
}

/** Bootstrap of mean(xs over a) − mean(xs over b), resampling a and b separately. */
export function bootstrapContrast(xs: ArrayLike<number>, a: readonly number[], b: readonly number[], B: number, rng: Rng): [number, number] {
  const out = new Float64Array(B);
  for (let r = 0; r < B; r++) {
    let sa = 0;
    for (let i = 0; i < a.length; i++) sa += xs[a[rng.int(a.length)]!]!;
    let sb = 0;
    for (let i = 0; i < b.length; i++) sb += xs[b[rng.int(b.length)]!]!;
    out[r] = sa / a.length - sb / b.length;
  }
  return percentileCi(out);
}

/**
 * The t test of a cell's change against its random regions' changes (lower: costlier than
 * random). Costs spread multiplicatively (a few random regions cost far more than the rest), and
 * on such a skewed null the raw t test rejects too often (a lognormal null with log-sd 0.2–0.4:
 * 6–9% at a nominal 5% for K = 5–10). So when the change and every random change are costs, the
 * test is on their logarithms (ln of the cost, upper tail: a larger cost); otherwise on the raw
 * changes.
 */
export function costP(delta: number, nulls: readonly number[]): { p: number | null; scale: 'log' | 'raw' } {
  if (delta < 0 && nulls.length && nulls.every((v) => v < 0)) return { p: predictionP(Math.log(-delta), nulls.map((v) => Math.log(-v)), 'upper'), scale: 'log' };
  return { p: predictionP(delta, nulls, 'lower'), scale: 'raw' };
}

/** A / B of two mean changes when both are costs (negative), else null. */
export function costRatio(a: number, b: number): number | null {
  return a < 0 && b < 0 ? a / b : null;
}

/** p = (1 + #{null ≤ observed}) / (K + 1): the observed value is at least as low as the nulls. */
export function lowerP(observed: number, nulls: readonly number[]): number {
  let c = 0;
  for (const v of nulls) if (v <= observed) c++;
  return (1 + c) / (nulls.length + 1);
}

export interface StatsInput {
  /** Labels in output order; items[i] has label labelOf[i] (an index into labels). */
  labels: string[];
  labelOf: Int32Array;
  before: Float64Array;
  /** Per region: its spec, its after, and the after of each of its random regions. */
  regions: { name: string; minus: string | null; after: Float64Array; random: Float64Array[] }[];
  bootstrap: number;
  seed: number;
}

/**
 * Fill the t tests and cost ratios of an ablation's cells and specificity rows (in place) from
 * what the summary holds: pT (lower tail against nullDelta, Holm over every cell) for cells; pT
 * against nullContrast, the cost ratio and ratioP, each with Holm over the regions, for the
 * specificity rows. The "others" of a ratio are the n-weighted mean of the region's other cells,
 * which is the mean over every other item because each item has one label. Summaries written
 * before these fields existed get them the same way (src/report/ablate.ts).
 */
export function predictionTests(cells: AblateCell[], spec: AblateSpecificity[]): void {
  for (const c of cells) {
    const t = costP(c.delta, c.nullDelta);
    c.pT = t.p;
    c.pTScale = t.scale;
  }
  const adjC = holm(cells.map((c) => c.pT));
  cells.forEach((c, i) => (c.pTHolm = adjC[i]!));
  for (const s of spec) {
    s.pT = predictionP(s.contrast, s.nullContrast, 'lower');
    const own = cells.filter((c) => c.region === s.region && c.minus === s.minus);
    const target = own.find((c) => c.label === s.target);
    const others = own.filter((c) => c.label !== s.target);
    const n = others.reduce((t, c) => t + c.n, 0);
    if (!target || !n) continue;
    const pooled = (v: (c: AblateCell) => number) => others.reduce((t, c) => t + c.n * v(c), 0) / n;
    s.ratio = costRatio(target.delta, pooled((c) => c.delta));
    s.nullRatio = target.nullDelta.map((v, k) => costRatio(v, pooled((c) => c.nullDelta[k]!)));
    const logNull = s.nullRatio.every((v) => v !== null) ? (s.nullRatio as number[]).map(Math.log) : null;
    s.ratioP = s.ratio === null ? null : predictionP(Math.log(s.ratio), logNull, 'upper');
  }
  const adjT = holm(spec.map((s) => s.pT));
  const adjR = holm(spec.map((s) => s.ratioP));
  spec.forEach((s, i) => {
    s.pTHolm = adjT[i]!;
    s.ratioPHolm = adjR[i]!;
  });
}

/** Cells and specificity rows of an ablation. */
export function ablationStats(x: StatsInput): { cells: AblateCell[]; specificity: AblateSpecificity[] } {
  const N = x.before.length;
  const byLabel = x.labels.map((_, l) => {
    const idx: number[] = [];
    for (let i = 0; i < N; i++) if (x.labelOf[i] === l) idx.push(i);
    return idx;
  });
  const delta = (after: Float64Array) => Float64Array.from(after, (a, i) => a - x.before[i]!);
  const cells: AblateCell[] = [];
  const spec: AblateSpecificity[] = [];
  for (const r of x.regions) {
    const d = delta(r.after);
    const nd = r.random.map(delta);
    const key = regionKey(r);
    x.labels.forEach((label, l) => {
      const idx = byLabel[l]!;
      if (!idx.length) return;
      const m = mean(d, idx);
      const nullDelta = nd.map((v) => mean(v, idx));
      const rng = new Rng(hash32(`${x.seed}:cell:${key}:${label}`));
      cells.push({ region: r.name, minus: r.minus, label, n: idx.length, before: mean(x.before, idx), delta: m, ci: bootstrapMean(d, idx, x.bootstrap, rng), nullDelta, p: lowerP(m, nullDelta), z: nullZ(m, nullDelta), pT: null, pTHolm: null });
    });
    const t = x.labels.indexOf(r.name);
    if (t < 0 || !byLabel[t]!.length) continue;
    const a = byLabel[t]!;
    const b: number[] = [];
    for (let i = 0; i < N; i++) if (x.labelOf[i] !== t) b.push(i);
    if (!b.length) continue;
    const contrast = mean(d, a) - mean(d, b);
    const nullContrast = nd.map((v) => mean(v, a) - mean(v, b));
    const rng = new Rng(hash32(`${x.seed}:specificity:${key}`));
    spec.push({
      region: r.name, minus: r.minus, target: r.name, contrast, ci: bootstrapContrast(d, a, b, x.bootstrap, rng), nullContrast, p: lowerP(contrast, nullContrast), pHolm: NaN,
      pT: null, pTHolm: null, ratio: null, nullRatio: [], ratioP: null, ratioPHolm: null,
    });
  }
  const adj = holm(spec.map((s) => s.p));
  spec.forEach((s, i) => (s.pHolm = adj[i]!));
  predictionTests(cells, spec);
  return { cells, specificity: spec };
}
