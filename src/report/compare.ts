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
 *
 * The bootstraps and the normal approximation are in src/report/compare-stats.ts, the comparison's
 * lines in words (headline, summary, own verdicts, evaluation lines) in src/report/compare-lines.ts.
 */
import type { ReportModel } from './load.js';
import type { ClusterItems, MetricWithCI, SpaceMetrics } from '../cluster/types.js';
import type { NullTested, WandaPairMetrics } from '../wanda/types.js';
import type { ComparisonRow, Comparison } from './types.js';
import { SCORE_NAMES, type ScoreName } from '../cluster/scores.js';
import type { Accuracy, AccuracyTable, ClozeMetric } from '../eval/summary-types.js';
import { distinctNames } from './naming.js';
import { bootstrapDiff, COMPARE_BOOTSTRAP, diffCI, itemSeries, seriesValue, type ItemSeries } from './compare-stats.js';
import { comparisonSummary, evalCompareLines, headlineDifferences, ownVerdicts } from './compare-lines.js';

export type Direction = 'higher' | 'lower' | 'neutral';

export type { ComparisonRow, Comparison } from './types.js';
export { bootstrapDiff, diffCI, itemSeries, seriesValue };

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
