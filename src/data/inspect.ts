import type { Dataset, Excluded } from './types.js';

export interface TokenLengths {
  source: string;
  /** Token count of each sample, in dataset order. */
  lengths: Int32Array;
}

export interface AxisCounts {
  /** value → count over all samples. */
  total: Record<string, number>;
  /** language → value → count (only when the dataset has a language axis). */
  byLanguage?: Record<string, Record<string, number>>;
}

export interface TokenStats {
  source: string;
  min: number;
  max: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  /** Histogram: bins [edges[i], edges[i+1]) with counts[i]. */
  edges: number[];
  counts: number[];
  byLanguage?: Record<string, { n: number; min: number; max: number; mean: number; p50: number }>;
}

export interface DatasetSummary {
  spec: string;
  samples: number;
  axes: string[];
  languages?: Record<string, number>;
  counts: Record<string, AxisCounts>;
  tokens?: TokenStats;
  excluded: Excluded[];
  /** Reason (with label text folded) → count. */
  excludedByReason: Record<string, number>;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const k = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[k];
}

function stats(xs: Int32Array) {
  const s = Int32Array.from(xs).sort();
  let sum = 0;
  for (const x of s) sum += x;
  return { n: s.length, min: s[0], max: s[s.length - 1], mean: sum / s.length, p50: percentile(s, 0.5),
    p90: percentile(s, 0.9), p99: percentile(s, 0.99), sorted: s };
}

export function reasonKey(reason: string): string {
  if (reason.startsWith('invalid:')) return 'invalid input';
  return reason
    .replace(/^label "[^"]*": /, 'label: ')
    .replace(/^composite: .*$/, 'composite ability')
    .replace(/^labels disagree.*$/, 'choice and question labels disagree');
}

export function summarize(ds: Dataset, tokens?: TokenLengths): DatasetSummary {
  const hasLang = ds.axes.includes('language');
  const counts: Record<string, AxisCounts> = {};
  for (const axis of ds.axes) {
    const c: AxisCounts = { total: {} };
    if (hasLang && axis !== 'language') c.byLanguage = {};
    for (const s of ds.samples) {
      const v = s.labels[axis];
      c.total[v] = (c.total[v] ?? 0) + 1;
      if (c.byLanguage) {
        const l = s.labels.language;
        const m = (c.byLanguage[l] ??= {});
        m[v] = (m[v] ?? 0) + 1;
      }
    }
    counts[axis] = c;
  }
  const out: DatasetSummary = { spec: ds.spec, samples: ds.samples.length, axes: ds.axes, counts, excluded: ds.excluded,
    excludedByReason: {} };
  if (hasLang) out.languages = counts.language.total;
  for (const e of ds.excluded) {
    const k = reasonKey(e.reason);
    out.excludedByReason[k] = (out.excludedByReason[k] ?? 0) + 1;
  }
  if (tokens) {
    const all = stats(tokens.lengths);
    const bins = 10;
    const lo = all.min;
    const hi = all.max + 1;
    const width = Math.max(1, Math.ceil((hi - lo) / bins));
    const edges: number[] = [];
    for (let b = 0; b <= bins; b++) edges.push(lo + b * width);
    while (edges.length > 2 && edges[edges.length - 2] >= hi) edges.pop();
    const cnt = new Array(edges.length - 1).fill(0);
    for (const x of tokens.lengths) cnt[Math.min(cnt.length - 1, Math.floor((x - lo) / width))]++;
    out.tokens = { source: tokens.source, min: all.min, max: all.max, mean: all.mean, p50: all.p50, p90: all.p90,
      p99: all.p99, edges, counts: cnt };
    if (hasLang) {
      out.tokens.byLanguage = {};
      const langs = [...new Set(ds.samples.map((s) => s.labels.language))].sort();
      for (const l of langs) {
        const xs = Int32Array.from(ds.samples.flatMap((s, i) => (s.labels.language === l ? [tokens.lengths[i]] : [])));
        const st = stats(xs);
        out.tokens.byLanguage[l] = { n: st.n, min: st.min, max: st.max, mean: st.mean, p50: st.p50 };
      }
    }
  }
  return out;
}

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ').trimEnd();
  return [fmt(head), ...rows.map(fmt)].map((l) => '  ' + l).join('\n') + '\n';
}

/** The text form of a summary; `verbose` lists every excluded item (else they are counted by reason). */
export function formatSummary(s: DatasetSummary, opts: { verbose?: boolean } = {}): string {
  let o = `dataset ${s.spec}\n  ${s.samples} samples, ${s.excluded.length} excluded; label axes: ${
    s.axes.join(', ')
  }\n`;
  const langs = s.languages ? Object.keys(s.languages).sort() : [];
  for (const axis of s.axes) {
    const c = s.counts[axis];
    const values = Object.keys(c.total).sort();
    o += `\n${axis} (${values.length} value${values.length === 1 ? '' : 's'}):\n`;
    if (c.byLanguage) {
      o += table([axis, ...langs, 'total'],
        values.map((v) => [v, ...langs.map((l) => String(c.byLanguage![l]?.[v] ?? 0)), String(c.total[v])]));
    } else {
      o += table([axis, 'count'], values.map((v) => [v, String(c.total[v])]));
    }
  }
  if (s.tokens) {
    const t = s.tokens;
    o +=
      `\ntoken lengths (${t.source}): min ${t.min}, median ${t.p50}, p90 ${t.p90}, p99 ${t.p99}, max ${t.max}, mean ${
        t.mean.toFixed(1)
      }\n`;
    const peak = Math.max(...t.counts);
    for (let i = 0; i < t.counts.length; i++) {
      const bar = '#'.repeat(peak ? Math.round((40 * t.counts[i]) / peak) : 0);
      o += `  ${`${t.edges[i]}-${t.edges[i + 1] - 1}`.padStart(11)}  ${String(t.counts[i]).padStart(6)}  ${bar}\n`;
    }
    if (t.byLanguage) {
      for (const [l, x] of Object.entries(t.byLanguage))
        o += `  ${l}: n ${x.n}, min ${x.min}, median ${x.p50}, max ${x.max}, mean ${x.mean.toFixed(1)}\n`;
    }
  }
  if (s.excluded.length) {
    o += `\nexcluded (${s.excluded.length}):\n`;
    o += table(['reason', 'count'],
      Object.entries(s.excludedByReason).sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, String(n)]));
    if (opts.verbose) {
      for (const e of s.excluded) o += `  ${e.id}  ${[e.file, e.where].filter(Boolean).join(': ')}: ${e.reason}\n`;
    } else o += `  (--verbose lists each excluded item with its reason; --json has them too)\n`;
  }
  return o;
}
