/**
 * The cloze metrics of an evaluation (--scoring cloze; summary.json "cloze"): per task with
 * answers (IAE, multiple choice), acc (argmax log-likelihood), acc_norm (per character),
 * acc_bytes (per UTF-8 byte) and, with --mutual-info, acc_mutual_info, each over the scored
 * items with an exact (Clopper–Pearson) 95% interval and its chance level (mean 1/k over the
 * items). Also how often the correct option's continuation is the greedy one (lm-eval's
 * exact_match for multiple choice) and the mean continuation length in tokens.
 * The interval is src/util/stats.ts's Clopper–Pearson, as for every other eval count.
 */
import { clopperPearson } from '../util/stats.js';
import type { EvalRecord } from './types.js';
import type { ClozeMetric, ClozeSummary } from './summary-types.js';

export type { ClozeMetric, ClozeSummary, ClozeTaskSummary } from './summary-types.js';

/** The exact interval (src/util/stats.ts, the one every eval count uses); re-exported for callers of this module. */
export { clopperPearson };

function metric(hits: boolean[], chance: number): ClozeMetric {
  const n = hits.length;
  const correct = hits.filter(Boolean).length;
  return { n, correct, accuracy: n ? correct / n : NaN, ci95: clopperPearson(correct, n), chance };
}

/** The cloze metrics a record's picks answer: acc, acc_norm, acc_bytes, acc_mutual_info. */
export const CLOZE_METRICS = ['acc', 'acc_norm', 'acc_bytes', 'acc_mutual_info'] as const;
export type ClozeMetricName = (typeof CLOZE_METRICS)[number];

/**
 * Whether a scored cloze record's pick under `metric` is its answer (null when the record has
 * no answer, was skipped, or lacks the metric's pick: acc_mutual_info without --mutual-info).
 */
export function clozeHit(r: EvalRecord, metric: ClozeMetricName): boolean | null {
  if (r.skipped || r.answer === null) return null;
  const pick = clozePick(r, metric);
  return pick === null ? null : pick === r.answer;
}

/** The option a cloze record picks under `metric` (null without a cloze record or without the metric's pick). */
export function clozePick(r: EvalRecord, metric: ClozeMetricName): number | null {
  const c = r.cloze;
  if (!c) return null;
  return metric === 'acc'
    ? c.pick
    : metric === 'acc_norm'
    ? c.pickNorm
    : metric === 'acc_bytes'
    ? c.pickBytes
    : c.pickMutualInfo;
}

/** The cloze summary of scored records (those with answers and a cloze record). */
export function summarizeCloze(records: readonly EvalRecord[]): ClozeSummary {
  const out: ClozeSummary = {};
  for (const task of ['iae', 'mcq'] as const) {
    const rs = records.filter((r) => r.task === task && r.cloze && !r.skipped && r.answer !== null);
    if (rs.length === 0) continue;
    const chance = rs.reduce((a, r) => a + 1 / r.options.length, 0) / rs.length;
    const withMi = rs.every((r) => r.cloze!.pickMutualInfo !== null);
    let toks = 0;
    let opts = 0;
    for (const r of rs) {
      for (const o of r.cloze!.options) {
        toks += o.tokens;
        opts++;
      }
    }
    out[task] = {
      items: rs.length,
      acc: metric(rs.map((r) => clozeHit(r, 'acc')!), chance),
      acc_norm: metric(rs.map((r) => clozeHit(r, 'acc_norm')!), chance),
      acc_bytes: metric(rs.map((r) => clozeHit(r, 'acc_bytes')!), chance),
      acc_mutual_info: withMi ? metric(rs.map((r) => clozeHit(r, 'acc_mutual_info')!), chance) : null,
      exactMatch: rs.filter((r) => r.cloze!.options[r.answer!]!.greedy).length / rs.length,
      meanTokens: toks / opts,
    };
  }
  return out;
}

/** Markdown lines of a cloze summary (printed by `lobes eval --scoring cloze`). */
export function formatCloze(s: ClozeSummary): string[] {
  const pct = (x: number) => (Number.isFinite(x) ? (100 * x).toFixed(1) : '—');
  const out: string[] = [];
  const titles = { iae: 'IAE, cloze scoring', mcq: 'Multiple choice, cloze scoring' } as const;
  for (const task of ['iae', 'mcq'] as const) {
    const t = s[task];
    if (!t) continue;
    out.push(`### ${titles[task]}`, '', '| metric | n | accuracy % | exact 95% CI | chance % |',
      '|---|---:|---:|---:|---:|');
    const row = (name: string, m: ClozeMetric) =>
      out.push(
        `| ${name} | ${m.n} | ${pct(m.accuracy)} | ${m.ci95 ? `[${pct(m.ci95[0])}, ${pct(m.ci95[1])}]` : '—'} | ${
          pct(m.chance)
        } |`,
      );
    row('acc (log-likelihood)', t.acc);
    row('acc_norm (per character)', t.acc_norm);
    row('acc_bytes (per UTF-8 byte)', t.acc_bytes);
    if (t.acc_mutual_info) row('acc_mutual_info', t.acc_mutual_info);
    out.push('',
      `- correct option is the greedy continuation: ${pct(t.exactMatch)}%; ${
        t.meanTokens.toFixed(1)
      } tokens per option on average`, '');
  }
  return out;
}
