/**
 * The cloze metrics of an evaluation (--scoring cloze; summary.json "cloze"): per task with
 * answers (IAE, multiple choice), acc (argmax log-likelihood), acc_norm (per character),
 * acc_bytes (per UTF-8 byte) and, with --mutual-info, acc_mutual_info, each over the scored
 * items with an exact (Clopper–Pearson) 95% interval and its chance level (mean 1/k over the
 * items). Also how often the correct option's continuation is the greedy one (lm-eval's
 * exact_match for multiple choice) and the mean continuation length in tokens.
 *
 * Clopper–Pearson for k successes in n: lower = Beta⁻¹(α/2; k, n − k + 1) (0 when k = 0),
 * upper = Beta⁻¹(1 − α/2; k + 1, n − k) (1 when k = n), with α = 0.05; the beta quantile is
 * found by bisection on the regularized incomplete beta function (continued fraction).
 */
import type { EvalRecord } from './types.js';
import type { ClozeMetric, ClozeSummary } from './summary-types.js';

export type { ClozeMetric, ClozeSummary, ClozeTaskSummary } from './summary-types.js';

/** ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms). */
export function logGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let a = c[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the incomplete beta (modified Lentz). */
function betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 500; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b). */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const lnFront = logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x);
  if (x < (a + 1) / (a + b + 2)) return (Math.exp(lnFront) * betaFraction(x, a, b)) / a;
  return 1 - (Math.exp(lnFront) * betaFraction(1 - x, b, a)) / b;
}

/** The p-quantile of Beta(a, b), by bisection. */
export function betaQuantile(p: number, a: number, b: number): number {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (regularizedBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Exact (Clopper–Pearson) 1 − alpha interval for k successes in n trials; null for n = 0. */
export function clopperPearson(k: number, n: number, alpha = 0.05): [number, number] | null {
  if (n === 0) return null;
  const lo = k === 0 ? 0 : betaQuantile(alpha / 2, k, n - k + 1);
  const hi = k === n ? 1 : betaQuantile(1 - alpha / 2, k + 1, n - k);
  return [lo, hi];
}

function metric(hits: boolean[], chance: number): ClozeMetric {
  const n = hits.length;
  const correct = hits.filter(Boolean).length;
  return { n, correct, accuracy: n ? correct / n : NaN, ci95: clopperPearson(correct, n), chance };
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
      acc: metric(rs.map((r) => r.cloze!.pick === r.answer), chance),
      acc_norm: metric(rs.map((r) => r.cloze!.pickNorm === r.answer), chance),
      acc_bytes: metric(rs.map((r) => r.cloze!.pickBytes === r.answer), chance),
      acc_mutual_info: withMi ? metric(rs.map((r) => r.cloze!.pickMutualInfo === r.answer), chance) : null,
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
    out.push(`### ${titles[task]}`, '', '| metric | n | accuracy % | exact 95% CI | chance % |', '|---|---:|---:|---:|---:|');
    const row = (name: string, m: ClozeMetric) => out.push(`| ${name} | ${m.n} | ${pct(m.accuracy)} | ${m.ci95 ? `[${pct(m.ci95[0])}, ${pct(m.ci95[1])}]` : '—'} | ${pct(m.chance)} |`);
    row('acc (log-likelihood)', t.acc);
    row('acc_norm (per character)', t.acc_norm);
    row('acc_bytes (per UTF-8 byte)', t.acc_bytes);
    if (t.acc_mutual_info) row('acc_mutual_info', t.acc_mutual_info);
    out.push('', `- correct option is the greedy continuation: ${pct(t.exactMatch)}%; ${t.meanTokens.toFixed(1)} tokens per option on average`, '');
  }
  return out;
}
