/**
 * Metric-by-metric comparison of two runs: every separation metric (cluster/metrics.json), every
 * token baseline, the layer sweep, every region metric (wanda/metrics.json) and every benchmark
 * accuracy (lobes eval) of both, their difference with a 95% CI where the data allow one, and
 * which run is ahead.
 *
 * Runs are A and B in the order given, and every difference is B − A, said once in the first line
 * (with the runs' names, src/report/naming.ts). When one run is a random-weights control
 * (`extract --control random`) that line also says which sign means the trained model is ahead.
 *
 * CIs of differences, in order of preference:
 *  - paired bootstrap over items: both runs wrote cluster/items.json (per-item predictions and
 *    silhouettes) for the same item ids; each of B = 1000 seeded resamples draws items with
 *    replacement (and for a probe one of its CV repeats, the same for both runs), recomputes the
 *    statistic in both runs on the same items and takes the difference; the CI is its 2.5 and
 *    97.5 percentiles. Same items through two models (trained
 *    and control, 8B and 70B on one dataset) are the usual case.
 *  - independent bootstrap: per-item data for different items (e.g. English and Chinese): each
 *    run is resampled on its own.
 *  - normal approximation: only the runs' CIs are known (results without items.json); each CI is
 *    read as ±1.96 standard errors and the runs as independent.
 * Region metrics carry permutation p-values only, so their differences have no CI.
 */
import type { ReportModel } from './load.js';
import type { ClusterItems, MetricWithCI, SpaceMetrics } from '../cluster/types.js';
import type { NullTested, WandaPairMetrics } from '../wanda/types.js';
import type { ComparisonRow, Comparison } from './types.js';
import { Rng } from '../util/rng.js';
import { confusionCounts, percentileSorted, scoresFromConfusion, SCORE_NAMES,
  type ScoreName } from '../cluster/scores.js';
import type { Accuracy, AccuracyTable, ClozeMetric, EvalSummary } from '../eval/summary-types.js';
import { scoringOf } from '../eval/headline.js';
import { distinctNames } from './naming.js';
import { formatP, verdictNumbers, verdictWords } from '../util/resolution.js';

export type Direction = 'higher' | 'lower' | 'neutral';

export type { ComparisonRow, Comparison } from './types.js';

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

function aheadOf(dir: Direction, a: number | null, b: number | null, ci: [number, number] | null,
  names: [string, string]): string
{
  if (a === null || b === null) return '—';
  if (a === b) return 'tie';
  const bigger = b > a ? names[1] : names[0];
  if (dir === 'neutral') return `${bigger} higher`;
  const winner = (dir === 'higher') === b > a ? names[1] : names[0];
  if (!ci) return winner;
  const excludesZero = ci[0] > 0 || ci[1] < 0;
  return excludesZero ? `${winner} (CI excludes 0)` : `${winner} (within CI)`;
}

/** How the comparison builds its rows: what the runs are called in the rows, the items of both runs. */
interface Ctx {
  /** 'A' and 'B': the first line of the comparison says which run is which. */
  names: [string, string];
  items: [ClusterItems | null, ClusterItems | null];
  /** Which CI methods were used (for the notes). */
  used: Set<string>;
}

type Val = { value: number; ci?: [number, number] | null } | null;

function row(ctx: Ctx, section: string, metric: string, dir: Direction, a: Val, b: Val,
  opts: { note?: string; series?: [ItemSeries | null, ItemSeries | null]; stat?: ScoreName | 'mean' } =
    {}): ComparisonRow
{
  const av = a && Number.isFinite(a.value) ? a.value : null;
  const bv = b && Number.isFinite(b.value) ? b.value : null;
  const raw = av !== null && bv !== null ? bv - av : null;
  let ci: [number, number] | null = null;
  let how = '';
  const [s1, s2] = opts.series ?? [null, null];
  if (raw !== null && s1 && s2 && opts.stat) {
    const r = bootstrapDiff(s1, s2, opts.stat, COMPARE_BOOTSTRAP, 0);
    if (r) {
      ci = r.ci;
      how = r.kind === 'paired' ? `paired bootstrap over ${r.n} items` : 'independent bootstraps';
      ctx.used.add(r.kind);
    }
  }
  if (!ci && av !== null && bv !== null && a?.ci && b?.ci) {
    ci = diffCI(av, a.ci, bv, b.ci);
    how = 'normal approximation';
    ctx.used.add('normal');
  }
  const diff = raw;
  const shown = ci;
  const note = [opts.note, how].filter(Boolean).join('; ');
  return { section, metric, a: av, b: bv, diff, ci: shown, ahead: aheadOf(dir, av, bv, ci, ctx.names),
    ...(note ? { note } : {}) };
}

const detail = (r: ComparisonRow): ComparisonRow => ({ ...r, detail: true });
const mc = (m: MetricWithCI | null | undefined) => (m ? { value: m.value, ci: m.ci95 } : null);
const nt = (m: NullTested | null | undefined) => (m ? { value: m.value } : null);
const num = (v: number | null | undefined) => (typeof v === 'number' ? { value: v } : null);
const SCORE_LABEL: Record<ScoreName, string> = { accuracy: 'accuracy', balancedAccuracy: 'balanced accuracy',
  macroF1: 'macro-F1' };

/** Separation rows of every space, baseline and sweep point. */
function clusterRows(ctx: Ctx, r1: ReportModel, r2: ReportModel, rows: ComparisonRow[]): void {
  const c1 = r1.cluster?.metrics;
  const c2 = r2.cluster?.metrics;
  const [i1, i2] = ctx.items;
  const spaces = [...new Set([...(c1?.spaces ?? []), ...(c2?.spaces ?? [])].map((s) => s.space))];
  for (const sp of spaces) {
    const s1: SpaceMetrics | undefined = c1?.spaces.find((s) => s.space === sp);
    const s2: SpaceMetrics | undefined = c2?.spaces.find((s) => s.space === sp);
    const sec = `separation (${sp})`;
    const ser = (
      of: 'knn' | 'probe' | 'silhouette',
    ): [ItemSeries | null, ItemSeries | null] => [itemSeries(i1, { space: sp, of }), itemSeries(i2, { space: sp, of })];
    rows.push(
      row(ctx, sec, 'silhouette', 'higher', mc(s1?.silhouette), mc(s2?.silhouette), { series: ser('silhouette'),
        stat: 'mean' }),
    );
    for (const cl of ['knn', 'probe'] as const) {
      const m1 = s1?.[cl];
      const m2 = s2?.[cl];
      const old1 = cl === 'knn' ? s1?.knnAccuracy : s1?.probeAccuracy;
      const old2 = cl === 'knn' ? s2?.knnAccuracy : s2?.probeAccuracy;
      if (!m1 && !m2 && !old1 && !old2) continue;
      for (const k of SCORE_NAMES) {
        const v1 = m1 ? m1[k] : k === 'accuracy' ? old1 : null;
        const v2 = m2 ? m2[k] : k === 'accuracy' ? old2 : null;
        if (!v1 && !v2) continue;
        rows.push(
          row(ctx, sec, `${cl === 'knn' ? 'kNN' : 'probe'} ${SCORE_LABEL[k]}`, 'higher', mc(v1), mc(v2), {
            series: ser(cl),
            stat: k,
          }),
        );
      }
    }
    rows.push(row(ctx, sec, 'Davies–Bouldin', 'lower', mc(s1?.daviesBouldin), mc(s2?.daviesBouldin)));
    const classes = [...new Set([...(s1?.perClass ?? []), ...(s2?.perClass ?? [])].map((c) => c.label))];
    for (const cl of classes) {
      const p1 = s1?.perClass.find((c) => c.label === cl);
      const p2 = s2?.perClass.find((c) => c.label === cl);
      rows.push(detail(row(ctx, sec, `silhouette of ${cl}`, 'higher', num(p1?.silhouette), num(p2?.silhouette))));
      rows.push(detail(row(ctx, sec, `kNN recall of ${cl}`, 'higher', num(p1?.knnRecall), num(p2?.knnRecall))));
      if (p1?.probeRecall !== undefined || p2?.probeRecall !== undefined)
        rows.push(detail(row(ctx, sec, `probe recall of ${cl}`, 'higher', num(p1?.probeRecall), num(p2?.probeRecall))));
    }
  }
  const bnames = [...new Set([...(c1?.baselines ?? []), ...(c2?.baselines ?? [])].map((b) => b.name))];
  for (const bn of bnames) {
    const b1 = c1?.baselines?.find((b) => b.name === bn);
    const b2 = c2?.baselines?.find((b) => b.name === bn);
    const series: [ItemSeries | null, ItemSeries | null] = [itemSeries(i1, { baseline: bn }),
      itemSeries(i2, { baseline: bn })];
    for (const k of SCORE_NAMES)
      rows.push(
        row(ctx, `tokens alone (${bn})`, `probe ${SCORE_LABEL[k]}`, 'higher', mc(b1?.probe[k]), mc(b2?.probe[k]), {
          series,
          stat: k,
        }),
      );
  }
  const points = [...new Set([...(c1?.sweep ?? []), ...(c2?.sweep ?? [])].map((w) => w.point))];
  for (const pt of points) {
    const w1 = c1?.sweep?.find((w) => w.point === pt);
    const w2 = c2?.sweep?.find((w) => w.point === pt);
    const series: [ItemSeries | null, ItemSeries | null] = [itemSeries(i1, { sweep: pt }),
      itemSeries(i2, { sweep: pt })];
    const v = (w: typeof w1) => (w ? w.balancedAccuracy ?? null : null);
    if (v(w1) || v(w2))
      rows.push(
        detail(
          row(ctx, 'layer sweep', `probe balanced accuracy at ${pt}`, 'higher', mc(v(w1)), mc(v(w2)), { series,
            stat: 'balancedAccuracy' }),
        ),
      );
    else
      rows.push(
        detail(
          row(ctx, 'layer sweep', `probe accuracy at ${pt}`, 'higher',
            w1 ? { value: w1.probeAccuracy, ci: w1.ci95 } : null, w2 ? { value: w2.probeAccuracy, ci: w2.ci95 } : null,
            { series, stat: 'accuracy' }),
        ),
      );
  }
}

/** Region rows of every group and pair. */
function wandaRows(ctx: Ctx, r1: ReportModel, r2: ReportModel, rows: ComparisonRow[]): void {
  const w1 = r1.wanda?.metrics;
  const w2 = r2.wanda?.metrics;
  const total = (r: ReportModel) => r.wanda?.regions.matrices.reduce((s, m) => s + m.rowBlocks * m.colBlocks, 0) ?? 0;
  const t1 = total(r1);
  const t2 = total(r2);
  const share = (v: number | undefined, t: number) => (typeof v === 'number' && t > 0 ? { value: v / t } : null);
  const groups = [...new Set([...(w1?.groups ?? []), ...(w2?.groups ?? [])].map((g) => g.group))];
  for (const g of groups) {
    const g1 = w1?.groups.find((x) => x.group === g);
    const g2 = w2?.groups.find((x) => x.group === g);
    const sec = `region of ${g}`;
    rows.push(row(ctx, sec, 'share of all blocks', 'neutral', share(g1?.regionSize, t1), share(g2?.regionSize, t2)));
    rows.push(
      row(ctx, sec, 'density', 'higher', num(g1?.density), num(g2?.density), { note: 'higher: more densely packed' }),
    );
    rows.push(row(ctx, sec, 'components', 'neutral', num(g1?.components), num(g2?.components)));
  }
  const key = (p: WandaPairMetrics) => `${p.a}\u0000${p.b}`;
  const pairs = [...new Set([...(w1?.pairs ?? []), ...(w2?.pairs ?? [])].map(key))];
  for (const k of pairs) {
    const p1 = w1?.pairs.find((p) => key(p) === k);
    const p2 = w2?.pairs.find((p) => key(p) === k);
    const [a, b] = k.split('\u0000');
    const sec = `pair ${a} vs ${b}`;
    rows.push(
      detail(
        row(ctx, sec, 'Jaccard of regions', 'lower', nt(p1?.jaccard), nt(p2?.jaccard), {
          note: 'lower: more distinct regions',
        }),
      ),
    );
    // Isolation is not compared: with |A| = |B| it moves only with |A∩B|, as Jaccard does.
    rows.push(
      detail(
        row(ctx, sec, 'share of blocks in A∖B', 'neutral', share(p1?.sizeAminusB, t1), share(p2?.sizeAminusB, t2)),
      ),
    );
    rows.push(
      detail(
        row(ctx, sec, 'share of blocks in B∖A', 'neutral', share(p1?.sizeBminusA, t1), share(p2?.sizeBminusA, t2)),
      ),
    );
    rows.push(
      detail(
        row(ctx, sec, 'density of A∖B', 'higher', nt(p1?.densityAminusB), nt(p2?.densityAminusB), {
          note: 'higher: more densely packed',
        }),
      ),
    );
    rows.push(
      detail(
        row(ctx, sec, 'density of B∖A', 'higher', nt(p1?.densityBminusA), nt(p2?.densityBminusA), {
          note: 'higher: more densely packed',
        }),
      ),
    );
    const ratio = (x: number | null | undefined) => (x === null || x === undefined ? null : { value: x });
    if (p1?.placementAminusB || p2?.placementAminusB) {
      rows.push(
        detail(
          row(ctx, sec, "density of A∖B over a random set's", 'higher', ratio(p1?.placementAminusB?.densityRatio),
            ratio(p2?.placementAminusB?.densityRatio), { note: "normalised for the set's size; 1 = as random" }),
        ),
      );
      rows.push(
        detail(
          row(ctx, sec, "density of B∖A over a random set's", 'higher', ratio(p1?.placementBminusA?.densityRatio),
            ratio(p2?.placementBminusA?.densityRatio), { note: "normalised for the set's size; 1 = as random" }),
        ),
      );
    }
    rows.push(
      detail(row(ctx, sec, 'components of A∖B', 'neutral', num(p1?.componentsAminusB), num(p2?.componentsAminusB))),
    );
    rows.push(
      detail(row(ctx, sec, 'components of B∖A', 'neutral', num(p1?.componentsBminusA), num(p2?.componentsBminusA))),
    );
  }
}

/** Compare two loaded runs. */
export function compareRuns(r1: ReportModel, r2: ReportModel): Comparison {
  const names = distinctNames([r1.name, r2.name], [r1.dir, r2.dir]);
  const ctl1 = !!r1.control;
  const ctl2 = !!r2.control;
  const diffLabel = 'B − A';
  let order = `A is ${names[0]}, B is ${names[1]}. Every difference is B − A.`;
  if (ctl1 !== ctl2)
    order += ctl2
      ? ' B is a random-weights control, so a negative difference means the trained model A is ahead.'
      : ' A is a random-weights control, so a positive difference means the trained model B is ahead.';
  const ctx: Ctx = { names: ['A', 'B'], items: [r1.cluster?.items ?? null, r2.cluster?.items ?? null],
    used: new Set() };
  const rows: ComparisonRow[] = [];
  const notes: string[] = [];
  if (r1.cluster?.metrics || r2.cluster?.metrics) clusterRows(ctx, r1, r2, rows);
  if (r1.wanda?.metrics || r2.wanda?.metrics) {
    wandaRows(ctx, r1, r2, rows);
    notes.push(
      "Region metrics carry permutation p-values (shown in each run's tables), not bootstrap CIs, so their differences have no CI. " +
        'Sizes are compared as shares of all scored blocks, since the two models have different numbers of blocks.',
    );
  }
  if (ctx.used.has('paired'))
    notes.push(
      `CI of a difference, paired: ${COMPARE_BOOTSTRAP} bootstrap resamples of the items both runs measured (the same items through both models), the statistic recomputed in each run on the same resample; 2.5 and 97.5 percentiles of the differences.`,
    );
  if (ctx.used.has('independent'))
    notes.push(
      `CI of a difference, independent: the runs measured different items, so each run's items are resampled on their own (${COMPARE_BOOTSTRAP} resamples).`,
    );
  if (ctx.used.has('normal'))
    notes.push(
      "CI of a difference, normal approximation (results without items.json): each run's 95% bootstrap CI is read as ±1.96 standard errors and the runs are treated as independent, giving diff ± 1.96·sqrt(se₁² + se₂²).",
    );
  evalRows(ctx, r1, r2, rows, notes);
  notes.push('"CI excludes 0" marks differences whose interval does not contain zero.');
  const evalLines = evalCompareLines(r1, r2, rows);
  return { runs: names, rows, notes, diffLabel, order,
    headline: [...evalLines, ...headlineDifferences(rows, diffLabel)],
    summary: [order, ...evalLines, ...comparisonSummary(rows, ['A', 'B'], diffLabel), ...ownVerdicts(r1, r2)] };
}

/** Differences the comparison's headline names. */
export const HEADLINE_DIFFERENCES = 4;

/**
 * Each run's own verdict on its headline classifiers, as its metrics.json records it (one
 * Verdict per test, src/util/resolution.ts), so that a difference is read beside what each
 * run could show: "not testable at R = 50" in one run is not "not above chance".
 */
export function ownVerdicts(r1: ReportModel, r2: ReportModel): string[] {
  const out: string[] = [];
  const pick = (r: ReportModel, space: string, of: 'probe' | 'knn') =>
    r.cluster?.metrics?.spaces.find((s) => s.space === space)?.[of]?.balancedAccuracy ?? null;
  const words = (m: MetricWithCI | null) => {
    if (!m) return 'not measured';
    const v = m.verdict;
    if (!v)
      return m.p === null
        ? 'no permutation null'
        : `p = ${formatP(m.p)} (no verdict recorded: an older cluster output)`;
    return v.status === 'degenerate' || v.status === 'untested'
      ? verdictWords(v)
      : `${verdictWords(v, 'above chance', 'not above chance')} (${verdictNumbers(v, 'classifiers')})`;
  };
  for (const [space, of, label] of [['original-euclidean', 'probe', 'Linear probe'], ['original-cosine', 'knn',
    'kNN (cosine)']] as const)
  {
    const a = pick(r1, space, of);
    const b = pick(r2, space, of);
    if (!a && !b) continue;
    out.push(`${label}, each run against its own null: A ${words(a)}; B ${words(b)}.`);
  }
  return out;
}

/**
 * The comparison's headline: of the rows whose 95% CI of B − A excludes 0, the `n` whose interval
 * lies farthest from 0 in its own half-widths (a scale-free order: Jaccard, accuracy and
 * silhouette differences compare), each with A, B, the difference and its CI, A before B.
 */
export function headlineDifferences(rows: ComparisonRow[], diffLabel: string, n = HEADLINE_DIFFERENCES): string[] {
  const f2 = (
    v: number,
  ) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 0.01 || v === 0 ? v.toFixed(2) : v.toExponential(1));
  const half = (r: ComparisonRow) => (r.ci![1] - r.ci![0]) / 2;
  const clear = rows.filter((r) =>
    r.a !== null && r.b !== null && r.diff !== null && r.ci && (r.ci[0] > 0 || r.ci[1] < 0)
  );
  if (!clear.length) {
    const withCi = rows.filter((r) => r.ci && r.diff !== null).length;
    return [
      withCi
        ? `No difference's 95% CI excludes 0 (${withCi} differences with a CI; ${diffLabel}).`
        : 'No difference here has a CI (the runs carry no bootstrap CIs to compare).',
    ];
  }
  // how far the interval lies from 0, in its own half-widths: comparable across scales
  const far = (
    r: ComparisonRow,
  ) => (half(r) > 0 ? Math.min(Math.abs(r.ci![0]), Math.abs(r.ci![1])) / half(r) : Infinity);
  const top = clear.slice().sort((x, y) => far(y) - far(x) || Math.abs(y.diff!) - Math.abs(x.diff!)).slice(0, n);
  const lines = top.map((r) =>
    `${r.section}, ${r.metric}: A ${f2(r.a!)}, B ${f2(r.b!)}; ${diffLabel} ${r.diff! >= 0 ? '+' : ''}${f2(r.diff!)} [${
      f2(r.ci![0])
    }, ${f2(r.ci![1])}]${r.detail ? ' (a detail row)' : ''}.`
  );
  return [
    `${clear.length} of ${
      rows.filter((r) => r.ci && r.diff !== null).length
    } differences have a 95% CI that excludes 0 (no correction across them); the ${top.length} whose CI lies farthest from 0 in its own half-widths:`,
    ...lines,
  ];
}

/**
 * The comparison's lines after headlineDifferences, in words: the balanced accuracy of the probe
 * and kNN on the representation and of the token baselines in both runs, with the CI of the difference.
 */
export function comparisonSummary(rows: ComparisonRow[], names: [string, string], diffLabel: string): string[] {
  const f2 = (v: number) => v.toFixed(2);
  const pick = (sec: string, metric: string) => rows.find((r) => r.section === sec && r.metric === metric && !r.detail);
  const wanted: [string, string, string][] = [
    ['separation (original-euclidean)', 'probe balanced accuracy', 'Linear probe on the representation'],
    ['separation (original-cosine)', 'kNN balanced accuracy', 'kNN (cosine) on the representation'],
  ];
  for (const r of rows)
    if (r.section.startsWith('tokens alone (') && r.metric === 'probe balanced accuracy')
      wanted.push([r.section, r.metric, `Tokens alone, ${r.section.slice('tokens alone ('.length, -1)} probe`]);
  const out: string[] = [];
  for (const [sec, metric, label] of wanted) {
    const r = pick(sec, metric);
    if (!r || r.a === null || r.b === null || r.diff === null) continue;
    const ci = r.ci ? ` [${f2(r.ci[0])}, ${f2(r.ci[1])}]` : '';
    const verdict = r.ci
      ? (r.ci[0] > 0 || r.ci[1] < 0 ? 'the CI excludes 0' : 'the CI includes 0: no difference shown')
      : 'no CI';
    out.push(
      `${label}: balanced accuracy ${names[0]} ${f2(r.a)}, ${names[1]} ${f2(r.b)}; ${diffLabel}: ${
        r.diff >= 0 ? '+' : ''
      }${f2(r.diff)}${ci} (${[r.note, verdict].filter(Boolean).join('; ')}).`,
    );
  }
  return out;
}

const cloze = (
  m: ClozeMetric | null | undefined,
) => (m && Number.isFinite(m.accuracy) ? { value: m.accuracy, ci: m.ci95 } : null);
const acc = (
  a: Accuracy | null | undefined,
) => (a && Number.isFinite(a.accuracy) ? { value: a.accuracy, ci: a.ci95 } : null);

/** Rows of one accuracy table of both evaluations (detail rows), matched by key. */
function tableRows(ctx: Ctx, sec: string, t1: AccuracyTable | undefined,
  t2: AccuracyTable | undefined): ComparisonRow[]
{
  const keys = [...new Set([...(t1?.rows ?? []), ...(t2?.rows ?? [])].map((r) => r.key))];
  return keys.map((k) =>
    detail(
      row(ctx, sec, `accuracy, ${t1?.by ?? t2?.by} = ${k}`, 'higher', acc(t1?.rows.find((r) => r.key === k)),
        acc(t2?.rows.find((r) => r.key === k))),
    )
  );
}

/**
 * The evaluations' result in words, one line per task: the scoring each was compared by, both
 * accuracies with their CIs, and B − A with its CI (from the comparison's own rows).
 */
export function evalCompareLines(r1: ReportModel, r2: ReportModel, rows: ComparisonRow[]): string[] {
  const e1 = r1.eval?.summary;
  const e2 = r2.eval?.summary;
  if (!e1 || !e2) return [];
  const p1 = (x: number) => (100 * x).toFixed(1);
  const ci = (c: [number, number] | null) => (c ? ` [${p1(c[0])}, ${p1(c[1])}]` : '');
  const out: string[] = [];
  for (const task of ['iae', 'mcq', 'gae'] as const) {
    const cz = task !== 'gae' && !!e1.cloze?.[task] && !!e2.cloze?.[task];
    const has = (e: EvalSummary): boolean => (task === 'gae' ? !!e.gae : !!e[task] || !!e.cloze?.[task]);
    if (!has(e1) || !has(e2)) continue;
    const s1 = scoringOf(e1, task);
    const s2 = scoringOf(e2, task);
    const r = cz
      ? rows.find((x) => x.section === `evaluation, cloze (${task.toUpperCase()})` && x.metric === 'acc')
      : rows.find((x) => x.section === `evaluation (${task.toUpperCase()})` && /every (item|tree) once/.test(x.metric));
    const scoring = s1 === s2 ? `scored by ${s1} in both` : `A scored by ${s1}, B by ${s2}: not the same measurement`;
    if (!r || r.a === null || r.b === null || r.diff === null) {
      out.push(`Evaluation (${task.toUpperCase()}), ${scoring}: no accuracy in both.`);
      continue;
    }
    const what = task === 'gae' ? 'success rate' : 'accuracy';
    const verdict = r.ci
      ? (r.ci[0] > 0 || r.ci[1] < 0
        ? `the CI excludes 0: ${r.diff > 0 ? 'B' : 'A'} is ahead`
        : 'the CI includes 0: no difference shown')
      : 'no CI';
    const va = cz ? e1.cloze![task as 'iae' | 'mcq']!.acc.ci95 : null;
    const vb = cz ? e2.cloze![task as 'iae' | 'mcq']!.acc.ci95 : null;
    out.push(
      `Evaluation (${task.toUpperCase()}), ${scoring}: ${what} A ${p1(r.a)}%${ci(va)}, B ${p1(r.b)}%${ci(vb)}; B − A ${
        r.diff >= 0 ? '+' : ''
      }${p1(r.diff)} points${ci(r.ci)} (${verdict}).`,
    );
  }
  return out;
}

/** Benchmark deltas: every accuracy of both evaluations (lobes eval) with the CI of the difference. */
function evalRows(ctx: Ctx, r1: ReportModel, r2: ReportModel, rows: ComparisonRow[], notes: string[]): void {
  const e1 = r1.eval?.summary;
  const e2 = r2.eval?.summary;
  if (!e1 && !e2) return;
  for (const task of ['iae', 'mcq'] as const) {
    const a = e1?.[task];
    const b = e2?.[task];
    if (!a && !b) continue;
    // both scored by cloze: the letter tables (votes, shuffles) do not exist for them; their cloze rows follow
    if (e1?.cloze?.[task] && e2?.cloze?.[task]) continue;
    const sec = `evaluation (${task.toUpperCase()})`;
    rows.push(row(ctx, sec, 'accuracy, every item once (voted)', 'higher', acc(a?.overall), acc(b?.overall)));
    if (a?.macro || b?.macro)
      rows.push(row(ctx, sec, 'accuracy, mean over abilities', 'higher', acc(a?.macro), acc(b?.macro)));
    for (const l of [...new Set([...Object.keys(a?.macroByLanguage ?? {}), ...Object.keys(b?.macroByLanguage ?? {})])]
      .sort())
    {
      rows.push(
        row(ctx, sec, `accuracy, mean over abilities, ${l}`, 'higher', acc(a?.macroByLanguage[l]),
          acc(b?.macroByLanguage[l])),
      );
    }
    rows.push(
      row(ctx, sec, 'accuracy of single shuffles (before the vote)', 'higher', acc(a?.unvoted), acc(b?.unvoted)),
    );
    const bys = [...new Set([...(a?.tables ?? []), ...(b?.tables ?? [])].map((t) => t.by))];
    for (const by of bys)
      rows.push(...tableRows(ctx, sec, a?.tables.find((t) => t.by === by), b?.tables.find((t) => t.by === by)));
  }
  // cloze scoring (--scoring cloze): each metric with its exact interval
  for (const task of ['iae', 'mcq'] as const) {
    const a = e1?.cloze?.[task];
    const b = e2?.cloze?.[task];
    if (!a && !b) continue;
    const sec = `evaluation, cloze (${task.toUpperCase()})`;
    for (const m of ['acc', 'acc_norm', 'acc_bytes', 'acc_mutual_info'] as const) {
      if (a?.[m] || b?.[m]) rows.push(row(ctx, sec, m, 'higher', cloze(a?.[m]), cloze(b?.[m])));
    }
  }
  const g1 = e1?.gae;
  const g2 = e2?.gae;
  if (g1 || g2) {
    const sec = 'evaluation (GAE)';
    rows.push(row(ctx, sec, 'success rate, every tree once', 'higher', acc(g1?.overall), acc(g2?.overall)));
    if (g1?.macro || g2?.macro)
      rows.push(row(ctx, sec, 'success rate, mean over world categories', 'higher', acc(g1?.macro), acc(g2?.macro)));
    for (const l of [...new Set([...Object.keys(g1?.macroByLanguage ?? {}), ...Object.keys(g2?.macroByLanguage ?? {})])]
      .sort())
    {
      rows.push(
        row(ctx, sec, `success rate, mean over categories, ${l}`, 'higher', acc(g1?.macroByLanguage[l]),
          acc(g2?.macroByLanguage[l])),
      );
    }
    const bys = [...new Set([...(g1?.tables ?? []), ...(g2?.tables ?? [])].map((t) => t.by))];
    for (const by of bys)
      rows.push(...tableRows(ctx, sec, g1?.tables.find((t) => t.by === by), g2?.tables.find((t) => t.by === by)));
  }
  const d1 = r1.eval?.manifest.dataset?.unitsSha256;
  const d2 = r2.eval?.manifest.dataset?.unitsSha256;
  notes.push(
    "Evaluation: accuracies from lobes eval (answer-letter logits, options shuffled and voted, or with --scoring cloze each option's log-likelihood), each with its bootstrap or exact 95% CI; the CI of a difference is the normal approximation (each CI read as ±1.96 standard errors), treating the two evaluations as independent samples." +
      (d1 && d2 && d1 !== d2
        ? ' The two evaluations did not score the same items (their unit hashes differ: another --limit, seed or dataset), so differences mix model and item effects.'
        : ''),
  );
}
