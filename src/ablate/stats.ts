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
 * - per-token ratio of R for A (`perToken`, src/ablate/pertoken.ts, given the continuations'
 *   token counts): the same ratio, null and tests on d_i / tokens_i, so that a label whose
 *   continuations are longer does not look costlier for being longer.
 */
import { Rng, hash32 } from '../util/rng.js';
import { nullZ, predictionP, studentTQuantile } from '../util/stats.js';
import { declareFamily, type Family, type FamilyRecord } from '../util/families.js';
import { shapiroWilk } from '../util/shapiro.js';
import { signedRank } from '../util/wilcoxon.js';
import { regionKey } from './regions.js';
import { ablationPlan, adjustRows, cellFamily, cellId, specFamily, specId } from './plan.js';
export { ablationPlan, adjustRows, cellFamily, cellId, specFamily, specId } from './plan.js';

/**
 * Random regions per region by default: at K = 20 the rank p's floor 1/21 ≈ 0.048 is below 0.05,
 * and Shapiro–Wilk on 20 values has some power against the skew of costs.
 */
export const ABLATE_RANDOM = 20;

/** The level of the normality check, of the paired tests' verdicts and of the minimum detectable effect. */
export const ABLATE_ALPHA = 0.05;
/** The power the minimum detectable effect is computed for. */
export const ABLATE_POWER = 0.8;

/** Shapiro–Wilk on the random regions' values a t test reads (its scale: log costs, log ratios or raw). */
export interface NullNormality {
  w: number;
  p: number;
}

/**
 * Which p heads a row: `t` (the prediction t test) when the random regions' values on its scale
 * pass Shapiro–Wilk at 0.05, else `rank` (no normality assumed; floor 1/(K + 1)).
 */
export type HeadTest = 't' | 'rank';

/** The per-item paired tests of a region against each of its random regions, on one set of items. */
export interface PairedSide {
  /** Items compared (non-zero differences are what the test counts). */
  n: number;
  /** Per random region k: the one-sided signed-rank p of d_region − d_random (lower: the region costs these items more). */
  p: (number | null)[];
  /** Holm over the K random regions of this region. */
  pHolm: (number | null)[];
  /** Random regions the region beats: pHolm ≤ 0.05. */
  beaten: number;
  /** The family of this side's Holm correction, its members the K random regions (absent in summaries written before it). */
  family?: FamilyRecord;
}

export interface PairedTests {
  test: 'wilcoxon-signed-rank';
  alternative: 'less';
  /** The family of each Holm correction. */
  family: 'random-regions-of-region';
  alpha: number;
  /** The region's own (target) items, and every other item. */
  own: PairedSide;
  others: PairedSide;
}

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
  /** Shapiro–Wilk on the random regions' values on pT's scale (null: fewer than 3 or no spread). */
  normality?: NullNormality | null;
  /** The headline test: t when the null passes the normality check, else the rank p. */
  head?: HeadTest;
  pHead?: number;
  /** Holm over every cell of the run. */
  pHeadHolm?: number | null;
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
  /** Shapiro–Wilk on nullContrast; the headline test of the contrast and its p (Holm over the regions). */
  normality?: NullNormality | null;
  head?: HeadTest;
  pHead?: number;
  pHeadHolm?: number | null;
  /** The contrast the t test detects with power 0.8 at 0.05 (mean(nullContrast) − δ, docs/ablate.md "Power"); null when K < 3 or no spread. */
  mde?: number | null;
  /** (1 + #{nullRatio ≥ ratio}) / (K + 1), upper tail; null without a ratio or when a random region's ratio is undefined. */
  ratioRankP?: number | null;
  /** Shapiro–Wilk on ln nullRatio; the headline test of the ratio and its p (Holm over the regions). */
  ratioNormality?: NullNormality | null;
  ratioHead?: HeadTest;
  ratioPHead?: number | null;
  ratioPHeadHolm?: number | null;
  /** The cost ratio the t test on ln ratio detects with power 0.8 at 0.05 (exp(mean ln nullRatio + δ)). */
  ratioMde?: number | null;
  /** Per-item paired tests against each random region (absent in summaries written before them). */
  paired?: PairedTests;
  /** The cost ratio on per-token changes, d / continuation tokens (absent without the token counts, and in summaries written before it). */
  perToken?: PerTokenRatio;
}

/**
 * The cost ratio of a specificity row on per-token changes: each item's d divided by its
 * continuation's token count, so that items whose continuations are longer (more tokens, more
 * nats under any region) weigh as much as short ones. The same random regions and tests as the
 * row's ratio; Holm over the regions.
 */
export interface PerTokenRatio {
  /** Mean d / continuation tokens over the target's items and over every other item (nats per token). */
  own: number;
  others: number;
  /** own / others when both are costs, else null; nullRatio the same under each random region. */
  ratio: number | null;
  nullRatio: (number | null)[];
  /** The prediction t test of ln ratio against the ln nullRatio, upper tail; Holm over the regions. */
  ratioP: number | null;
  ratioPHolm: number | null;
  /** (1 + #{nullRatio ≥ ratio}) / (K + 1). */
  ratioRankP: number | null;
  ratioNormality: NullNormality | null;
  ratioHead: HeadTest;
  ratioPHead: number | null;
  ratioPHeadHolm: number | null;
  /** The per-token ratio the t test detects with power 0.8 at 0.05. */
  ratioMde: number | null;
}

/** The mean of xs over the indices idx (NaN when idx is empty). */
export const mean = (xs: ArrayLike<number>, idx: ArrayLike<number>): number => {
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
export function bootstrapContrast(xs: ArrayLike<number>, a: readonly number[], b: readonly number[], B: number,
  rng: Rng): [number, number]
{
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
  if (delta < 0 && nulls.length && nulls.every((v) => v < 0))
    return { p: predictionP(Math.log(-delta), nulls.map((v) => Math.log(-v)), 'upper'), scale: 'log' };
  return { p: predictionP(delta, nulls, 'lower'), scale: 'raw' };
}

/** The values the cells' t test reads: ln of the costs when the change and every random change are costs, else the raw changes. */
function costScale(delta: number, nulls: readonly number[]): number[] {
  return delta < 0 && nulls.length && nulls.every((v) => v < 0) ? nulls.map((v) => Math.log(-v)) : [...nulls];
}

/**
 * The shift a prediction t test against K null draws detects with power `power` at level
 * `alpha` (one-sided): δ = (t_{1−α,K−1} + t_{power,K−1}) · s · √(1 + 1/K), s the draws' sd (the
 * usual approximation of the noncentral t; docs/ablate.md "Power"). null when K < 3 or s = 0.
 */
export function predictionMde(nulls: readonly number[], alpha = ABLATE_ALPHA, power = ABLATE_POWER): number | null {
  const K = nulls.length;
  if (K < 3) return null;
  const m = nulls.reduce((a, b) => a + b, 0) / K;
  const sd = Math.sqrt(nulls.reduce((a, v) => a + (v - m) ** 2, 0) / (K - 1));
  if (!(sd > 0)) return null;
  return (studentTQuantile(1 - alpha, K - 1) + studentTQuantile(power, K - 1)) * sd * Math.sqrt(1 + 1 / K);
}

/** Shapiro–Wilk of null draws, as summary.json keeps it. */
export function nullNormality(nulls: readonly number[]): NullNormality | null {
  const r = shapiroWilk(nulls);
  return r && { w: r.w, p: r.p };
}

/** The headline of a t p and a rank p: the t p only when it exists and its null passes the normality check. */
export function headTest(pT: number | null, normality: NullNormality | null): HeadTest {
  return pT !== null && normality !== null && normality.p >= ABLATE_ALPHA ? 't' : 'rank';
}

/** p = (1 + #{null ≥ observed}) / (K + 1): the observed value is at least as high as the nulls. */
export function upperP(observed: number, nulls: readonly number[]): number {
  let c = 0;
  for (const v of nulls) if (v >= observed) c++;
  return (1 + c) / (nulls.length + 1);
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
export function predictionTests(cells: AblateCell[], spec: AblateSpecificity[],
  declared?: { cells: Family; spec: Family }): FamilyRecord[]
{
  // declared by ablationStats from its plan before any test; a summary read back (src/report/ablate.ts) from its rows
  const cellFam = declared?.cells ?? cellFamily(cells);
  const specFam = declared?.spec ?? specFamily(spec);
  for (const c of cells) {
    const t = costP(c.delta, c.nullDelta);
    c.pT = t.p;
    c.pTScale = t.scale;
    c.normality = nullNormality(costScale(c.delta, c.nullDelta));
    c.head = headTest(c.pT, c.normality);
    c.pHead = c.head === 't' ? c.pT! : c.p;
  }
  const adjC = adjustRows(cellFam, cells, cellId, (c) => c.pT);
  cells.forEach((c, i) => (c.pTHolm = adjC[i]!));
  const adjH = adjustRows(cellFam, cells, cellId, (c) => c.pHead);
  cells.forEach((c, i) => (c.pHeadHolm = adjH[i]!));
  for (const s of spec) {
    s.pT = predictionP(s.contrast, s.nullContrast, 'lower');
    s.normality = nullNormality(s.nullContrast);
    s.head = headTest(s.pT, s.normality);
    s.pHead = s.head === 't' ? s.pT! : s.p;
    const mde = predictionMde(s.nullContrast);
    s.mde = mde === null ? null : s.nullContrast.reduce((a, b) => a + b, 0) / s.nullContrast.length - mde;
    s.ratioRankP = null;
    s.ratioNormality = null;
    s.ratioHead = 'rank';
    s.ratioPHead = null;
    s.ratioMde = null;
    const own = cells.filter((c) => c.region === s.region && c.minus === s.minus);
    const target = own.find((c) => c.label === s.target);
    const others = own.filter((c) => c.label !== s.target);
    const n = others.reduce((t, c) => t + c.n, 0);
    if (!target || !n) continue;
    const pooled = (v: (c: AblateCell) => number) => others.reduce((t, c) => t + c.n * v(c), 0) / n;
    s.ratio = costRatio(target.delta, pooled((c) => c.delta));
    s.nullRatio = target.nullDelta.map((v, k) => costRatio(v, pooled((c) => c.nullDelta[k]!)));
    Object.assign(s, ratioTests(s.ratio, s.nullRatio));
  }
  const adjT = adjustRows(specFam, spec, specId, (s) => s.pT);
  const adjR = adjustRows(specFam, spec, specId, (s) => s.ratioP);
  const adjSH = adjustRows(specFam, spec, specId, (s) => s.pHead);
  const adjRH = adjustRows(specFam, spec, specId, (s) => s.ratioPHead);
  spec.forEach((s, i) => {
    s.pTHolm = adjT[i]!;
    s.ratioPHolm = adjR[i]!;
    s.pHeadHolm = adjSH[i]!;
    s.ratioPHeadHolm = adjRH[i]!;
  });
  return [cellFam.record(), specFam.record()];
}

/**
 * The tests of a cost ratio against its random regions' ratios: the prediction t test of ln ratio
 * against the ln nullRatio (upper), the rank p, Shapiro–Wilk on the ln nullRatio, the headline
 * and the detectable ratio. The t and rank p are null without a ratio or when a random region's
 * ratio is undefined.
 */
export function ratioTests(ratio: number | null,
  nullRatio: (number | null)[]
): Pick<PerTokenRatio, 'ratioP' | 'ratioRankP' | 'ratioNormality' | 'ratioHead' | 'ratioPHead' | 'ratioMde'> {
  const logNull = nullRatio.every((v) => v !== null) ? (nullRatio as number[]).map(Math.log) : null;
  const ratioP = ratio === null ? null : predictionP(Math.log(ratio), logNull, 'upper');
  const ratioRankP = ratio === null || logNull === null ? null : upperP(ratio, nullRatio as number[]);
  const ratioNormality = logNull && nullNormality(logNull);
  const ratioHead = headTest(ratioP, ratioNormality);
  const rm = logNull && predictionMde(logNull);
  return { ratioP, ratioRankP, ratioNormality, ratioHead, ratioPHead: ratioHead === 't' ? ratioP : ratioRankP,
    ratioMde: rm === null || logNull === null
      ? null
      : Math.exp(logNull.reduce((a, b) => a + b, 0) / logNull.length + rm) };
}

/**
 * The paired tests of a region against each random region on the items `idx`: per item,
 * d_region − d_random_k (the same item scored under both), the one-sided Wilcoxon signed-rank
 * test (lower: the region costs the item more), Holm over the K random regions.
 */
export function pairedSide(d: Float64Array, nd: Float64Array[], idx: readonly number[], side?: string): PairedSide {
  // declared from the K random regions (the settings) before any test runs; named by its region and side when given
  const fam = declareFamily({ name: side ? `random-regions-of-region ${side}` : 'random-regions-of-region',
    claim: 'a region costs the items more than each random region does (paired, per item)',
    members: nd.map((_, k) => `random ${k}`) });
  const p = nd.map((v) => signedRank(idx.map((i) => d[i]! - v[i]!), 'less')?.p ?? null);
  const pHolm = fam.adjust(p);
  return { n: idx.length, p, pHolm, beaten: pHolm.filter((q) => q !== null && q <= ABLATE_ALPHA).length,
    family: fam.record() };
}

/** Cells and specificity rows of an ablation. */
export function ablationStats(
  x: StatsInput,
): { cells: AblateCell[]; specificity: AblateSpecificity[]; families: FamilyRecord[] } {
  const N = x.before.length;
  const byLabel = x.labels.map((_, l) => {
    const idx: number[] = [];
    for (let i = 0; i < N; i++) if (x.labelOf[i] === l) idx.push(i);
    return idx;
  });
  const delta = (after: Float64Array) => Float64Array.from(after, (a, i) => a - x.before[i]!);
  // the families, declared from the plan (the regions and the items' labels) before any test runs
  const plan = ablationPlan(x);
  const rank = declareFamily({ name: 'specificity-rank',
    claim:
      "zeroing a region costs its own label's items more than the others' (rank p against the random regions, every region)",
    members: plan.spec.map(specId) });
  const declared = { cells: cellFamily(plan.cells), spec: specFamily(plan.spec) };
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
      cells.push({ region: r.name, minus: r.minus, label, n: idx.length, before: mean(x.before, idx), delta: m,
        ci: bootstrapMean(d, idx, x.bootstrap, rng), nullDelta, p: lowerP(m, nullDelta), z: nullZ(m, nullDelta),
        pT: null, pTHolm: null });
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
      region: r.name,
      minus: r.minus,
      target: r.name,
      contrast,
      ci: bootstrapContrast(d, a, b, x.bootstrap, rng),
      nullContrast,
      p: lowerP(contrast, nullContrast),
      pHolm: NaN,
      pT: null,
      pTHolm: null,
      ratio: null,
      nullRatio: [],
      ratioP: null,
      ratioPHolm: null,
      paired: {
        test: 'wilcoxon-signed-rank',
        alternative: 'less',
        family: 'random-regions-of-region',
        alpha: ABLATE_ALPHA,
        own: pairedSide(d, nd, a, `${specId({ region: r.name, minus: r.minus })} (own items)`),
        others: pairedSide(d, nd, b, `${specId({ region: r.name, minus: r.minus })} (other items)`),
      },
    });
  }
  const adj = adjustRows(rank, spec, specId, (s) => s.p);
  spec.forEach((s, i) => (s.pHolm = adj[i]!));
  const families = predictionTests(cells, spec, declared);
  return { cells, specificity: spec, families: [rank.record(), ...families] };
}
