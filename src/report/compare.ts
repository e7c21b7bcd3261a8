/**
 * Metric-by-metric comparison of two runs: every separation metric (cluster/metrics.json),
 * every region metric (wanda/metrics.json) and every benchmark accuracy (lobes eval) of both, the difference (run 2 − run 1),
 * a 95% CI of the difference where both runs carry bootstrap CIs, and which run is ahead.
 *
 * CI of a difference: the metric files hold each run's percentile-bootstrap 95% CI, not the
 * bootstrap samples. The two runs are independent, so we read each CI as ±1.96 standard
 * errors (se = (high − low) / 3.92) and report diff ± 1.96·sqrt(se1² + se2²): a normal
 * approximation, stated in the report. Region metrics carry permutation p-values only, so
 * their differences have no CI.
 */
import type { ReportModel } from './load.js';
import type { MetricWithCI, SpaceMetrics } from '../cluster/types.js';
import type { NullTested, WandaPairMetrics } from '../wanda/types.js';
import type { ComparisonRow, Comparison } from './types.js';
import type { Accuracy, AccuracyTable } from '../eval/summary-types.js';

export type Direction = 'higher' | 'lower' | 'neutral';

export type { ComparisonRow, Comparison } from './types.js';

const Z = 1.959963984540054;

/** 95% CI of b − a from two independent 95% CIs (normal approximation). */
export function diffCI(a: number, ciA: [number, number], b: number, ciB: [number, number]): [number, number] {
  const seA = (ciA[1] - ciA[0]) / (2 * Z);
  const seB = (ciB[1] - ciB[0]) / (2 * Z);
  const se = Math.sqrt(seA * seA + seB * seB);
  const d = b - a;
  return [d - Z * se, d + Z * se];
}

function aheadOf(dir: Direction, a: number | null, b: number | null, ci: [number, number] | null, names: [string, string]): string {
  if (a === null || b === null) return '—';
  if (a === b) return 'tie';
  const bigger = b > a ? names[1] : names[0];
  if (dir === 'neutral') return `${bigger} higher`;
  const winner = (dir === 'higher') === b > a ? names[1] : names[0];
  if (!ci) return winner;
  const excludesZero = ci[0] > 0 || ci[1] < 0;
  return excludesZero ? `${winner} (CI excludes 0)` : `${winner} (within CI)`;
}

function row(
  section: string, metric: string, dir: Direction, names: [string, string],
  a: { value: number; ci?: [number, number] | null } | null, b: { value: number; ci?: [number, number] | null } | null, note?: string,
): ComparisonRow {
  const av = a && Number.isFinite(a.value) ? a.value : null;
  const bv = b && Number.isFinite(b.value) ? b.value : null;
  const diff = av !== null && bv !== null ? bv - av : null;
  const ci = av !== null && bv !== null && a?.ci && b?.ci ? diffCI(av, a.ci, bv, b.ci) : null;
  return { section, metric, a: av, b: bv, diff, ci, ahead: aheadOf(dir, av, bv, ci, names), ...(note ? { note } : {}) };
}

const detail = (r: ComparisonRow): ComparisonRow => ({ ...r, detail: true });
const mc = (m: MetricWithCI | null | undefined) => (m ? { value: m.value, ci: m.ci95 } : null);
const nt = (m: NullTested | null | undefined) => (m ? { value: m.value } : null);
const num = (v: number | null | undefined) => (typeof v === 'number' ? { value: v } : null);

/** Compare two loaded runs. */
export function compareRuns(r1: ReportModel, r2: ReportModel): Comparison {
  const names: [string, string] = [r1.name, r2.name];
  if (names[0] === names[1]) names[1] = `${names[1]} (2)`;
  const rows: ComparisonRow[] = [];
  const notes: string[] = [];
  const c1 = r1.cluster?.metrics;
  const c2 = r2.cluster?.metrics;
  if (c1 || c2) {
    const spaces = [...new Set([...(c1?.spaces ?? []), ...(c2?.spaces ?? [])].map((s) => s.space))];
    for (const sp of spaces) {
      const s1: SpaceMetrics | undefined = c1?.spaces.find((s) => s.space === sp);
      const s2: SpaceMetrics | undefined = c2?.spaces.find((s) => s.space === sp);
      const sec = `separation (${sp})`;
      rows.push(row(sec, 'silhouette', 'higher', names, mc(s1?.silhouette), mc(s2?.silhouette)));
      rows.push(row(sec, 'kNN accuracy', 'higher', names, mc(s1?.knnAccuracy), mc(s2?.knnAccuracy)));
      rows.push(row(sec, 'probe accuracy', 'higher', names, mc(s1?.probeAccuracy), mc(s2?.probeAccuracy)));
      rows.push(row(sec, 'Davies–Bouldin', 'lower', names, mc(s1?.daviesBouldin), mc(s2?.daviesBouldin)));
      const classes = [...new Set([...(s1?.perClass ?? []), ...(s2?.perClass ?? [])].map((c) => c.label))];
      for (const cl of classes) {
        const p1 = s1?.perClass.find((c) => c.label === cl);
        const p2 = s2?.perClass.find((c) => c.label === cl);
        rows.push({ ...row(sec, `silhouette of ${cl}`, 'higher', names, num(p1?.silhouette), num(p2?.silhouette)), detail: true });
        rows.push({ ...row(sec, `kNN recall of ${cl}`, 'higher', names, num(p1?.knnRecall), num(p2?.knnRecall)), detail: true });
      }
    }
    notes.push(
      'CI of a difference: each run\'s 95% bootstrap CI is read as ±1.96 standard errors and the runs are treated as independent, ' +
        'giving diff ± 1.96·sqrt(se₁² + se₂²) (a normal approximation; the metric files hold CIs, not bootstrap samples). ' +
        '"CI excludes 0" marks differences whose interval does not contain zero.',
    );
  }
  const w1 = r1.wanda?.metrics;
  const w2 = r2.wanda?.metrics;
  if (w1 || w2) {
    const total = (r: ReportModel) => r.wanda?.regions.matrices.reduce((s, m) => s + m.rowBlocks * m.colBlocks, 0) ?? 0;
    const t1 = total(r1);
    const t2 = total(r2);
    const share = (v: number | undefined, t: number) => (typeof v === 'number' && t > 0 ? { value: v / t } : null);
    const groups = [...new Set([...(w1?.groups ?? []), ...(w2?.groups ?? [])].map((g) => g.group))];
    for (const g of groups) {
      const g1 = w1?.groups.find((x) => x.group === g);
      const g2 = w2?.groups.find((x) => x.group === g);
      const sec = `region of ${g}`;
      rows.push(row(sec, 'share of all blocks', 'neutral', names, share(g1?.regionSize, t1), share(g2?.regionSize, t2)));
      rows.push(row(sec, 'density', 'higher', names, num(g1?.density), num(g2?.density), 'higher: more densely packed'));
      rows.push(row(sec, 'components', 'neutral', names, num(g1?.components), num(g2?.components)));
    }
    const key = (p: WandaPairMetrics) => `${p.a}\u0000${p.b}`;
    const pairs = [...new Set([...(w1?.pairs ?? []), ...(w2?.pairs ?? [])].map(key))];
    for (const k of pairs) {
      const p1 = w1?.pairs.find((p) => key(p) === k);
      const p2 = w2?.pairs.find((p) => key(p) === k);
      const [a, b] = k.split('\u0000');
      const sec = `pair ${a} vs ${b}`;
      rows.push(detail(row(sec, 'Jaccard of regions', 'lower', names, nt(p1?.jaccard), nt(p2?.jaccard), 'lower: more distinct regions')));
      rows.push(detail(row(sec, 'isolation |A∖B|/|A|', 'higher', names, nt(p1?.isolationAB), nt(p2?.isolationAB))));
      rows.push(detail(row(sec, 'isolation |B∖A|/|B|', 'higher', names, nt(p1?.isolationBA), nt(p2?.isolationBA))));
      rows.push(detail(row(sec, 'share of blocks in A∖B', 'neutral', names, share(p1?.sizeAminusB, t1), share(p2?.sizeAminusB, t2))));
      rows.push(detail(row(sec, 'share of blocks in B∖A', 'neutral', names, share(p1?.sizeBminusA, t1), share(p2?.sizeBminusA, t2))));
      rows.push(detail(row(sec, 'density of A∖B', 'higher', names, nt(p1?.densityAminusB), nt(p2?.densityAminusB), 'higher: more densely packed')));
      rows.push(detail(row(sec, 'density of B∖A', 'higher', names, nt(p1?.densityBminusA), nt(p2?.densityBminusA), 'higher: more densely packed')));
      rows.push(detail(row(sec, 'components of A∖B', 'neutral', names, num(p1?.componentsAminusB), num(p2?.componentsAminusB))));
      rows.push(detail(row(sec, 'components of B∖A', 'neutral', names, num(p1?.componentsBminusA), num(p2?.componentsBminusA))));
    }
    notes.push(
      'Region metrics carry permutation p-values (shown in each run\'s tables), not bootstrap CIs, so their differences have no CI. ' +
        'Sizes are compared as shares of all scored blocks, since the two models have different numbers of blocks.',
    );
  }
  evalRows(r1, r2, names, rows, notes);
  return { runs: names, rows, notes };
}

const acc = (a: Accuracy | null | undefined) => (a && Number.isFinite(a.accuracy) ? { value: a.accuracy, ci: a.ci95 } : null);

/** Rows of one accuracy table of both evaluations (detail rows), matched by key. */
function tableRows(sec: string, t1: AccuracyTable | undefined, t2: AccuracyTable | undefined, names: [string, string]): ComparisonRow[] {
  const keys = [...new Set([...(t1?.rows ?? []), ...(t2?.rows ?? [])].map((r) => r.key))];
  return keys.map((k) => detail(row(sec, `accuracy, ${t1?.by ?? t2?.by} = ${k}`, 'higher', names, acc(t1?.rows.find((r) => r.key === k)), acc(t2?.rows.find((r) => r.key === k)))));
}

/** Benchmark deltas: every accuracy of both evaluations (lobes eval) with the CI of the difference. */
function evalRows(r1: ReportModel, r2: ReportModel, names: [string, string], rows: ComparisonRow[], notes: string[]): void {
  const e1 = r1.eval?.summary;
  const e2 = r2.eval?.summary;
  if (!e1 && !e2) return;
  for (const task of ['iae', 'mcq'] as const) {
    const a = e1?.[task];
    const b = e2?.[task];
    if (!a && !b) continue;
    const sec = `evaluation (${task.toUpperCase()})`;
    rows.push(row(sec, 'accuracy, every item once (voted)', 'higher', names, acc(a?.overall), acc(b?.overall)));
    if (a?.macro || b?.macro) rows.push(row(sec, 'accuracy, mean over abilities', 'higher', names, acc(a?.macro), acc(b?.macro)));
    for (const l of [...new Set([...Object.keys(a?.macroByLanguage ?? {}), ...Object.keys(b?.macroByLanguage ?? {})])].sort()) {
      rows.push(row(sec, `accuracy, mean over abilities, ${l}`, 'higher', names, acc(a?.macroByLanguage[l]), acc(b?.macroByLanguage[l])));
    }
    rows.push(row(sec, 'accuracy of single shuffles (before the vote)', 'higher', names, acc(a?.unvoted), acc(b?.unvoted)));
    const bys = [...new Set([...(a?.tables ?? []), ...(b?.tables ?? [])].map((t) => t.by))];
    for (const by of bys) rows.push(...tableRows(sec, a?.tables.find((t) => t.by === by), b?.tables.find((t) => t.by === by), names));
  }
  const g1 = e1?.gae;
  const g2 = e2?.gae;
  if (g1 || g2) {
    const sec = 'evaluation (GAE)';
    rows.push(row(sec, 'success rate, every tree once', 'higher', names, acc(g1?.overall), acc(g2?.overall)));
    rows.push(row(sec, 'success rate, mean over world categories', 'higher', names, acc(g1?.macro), acc(g2?.macro)));
    for (const l of [...new Set([...Object.keys(g1?.macroByLanguage ?? {}), ...Object.keys(g2?.macroByLanguage ?? {})])].sort()) {
      rows.push(row(sec, `success rate, mean over categories, ${l}`, 'higher', names, acc(g1?.macroByLanguage[l]), acc(g2?.macroByLanguage[l])));
    }
    const bys = [...new Set([...(g1?.tables ?? []), ...(g2?.tables ?? [])].map((t) => t.by))];
    for (const by of bys) rows.push(...tableRows(sec, g1?.tables.find((t) => t.by === by), g2?.tables.find((t) => t.by === by), names));
  }
  const d1 = r1.eval?.manifest.dataset?.unitsSha256;
  const d2 = r2.eval?.manifest.dataset?.unitsSha256;
  notes.push(
    'Evaluation: accuracies from lobes eval (answer-letter logits, options shuffled and voted), each with its bootstrap 95% CI; the CI of a difference uses the same normal approximation as above, treating the two evaluations as independent samples.' +
      (d1 && d2 && d1 !== d2 ? ' The two evaluations did not score the same items (their unit hashes differ: another --limit, seed or dataset), so differences mix model and item effects.' : ''),
  );
}
