/**
 * The comparison of two runs in words (src/report/compare.ts builds its rows): each run's own
 * verdict on its headline classifiers, the headline (the differences whose 95% CI lies farthest
 * from 0), the summary lines of the probe, kNN and token baselines, and one line per evaluation
 * task.
 */
import type { ReportModel } from './load.js';
import type { MetricWithCI } from '../cluster/types.js';
import type { ComparisonRow } from './types.js';
import type { EvalSummary } from '../eval/summary-types.js';
import { scoringOf } from '../eval/headline.js';
import { formatP, verdictNumbers, verdictWords } from '../util/resolution.js';

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
