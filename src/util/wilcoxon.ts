/**
 * The Wilcoxon signed-rank test of paired differences d_i (scipy.stats.wilcoxon with
 * zero_method "wilcox", no continuity correction): zeros are dropped, |d| ranked (ties get
 * their mean rank), and W⁺ = the sum of the positive differences' ranks. Under the null (d
 * symmetric about 0) each rank's sign is a fair coin:
 *
 * - exact (n ≤ 50 non-zero differences, no ties): the distribution of W⁺ over the 2ⁿ sign
 *   assignments, counted by dynamic programming over the ranks;
 * - otherwise the normal approximation: z = (W⁺ − n(n+1)/4) / σ with
 *   σ² = n(n+1)(2n+1)/24 − Σ(t³ − t)/48 over tie groups of size t.
 *
 * `less`: the differences sit below 0 (P(W⁺ ≤ observed)); `greater`: above; `two-sided`: twice
 * the smaller tail, at most 1. Checked against scipy by test/util/wilcoxon.test.ts.
 */
import { normalUpper } from './resolution.js';

export type Alternative = 'less' | 'greater' | 'two-sided';

export interface SignedRankResult {
  /** W⁺, the sum of the positive differences' ranks. */
  rPlus: number;
  /** Non-zero differences. */
  n: number;
  p: number;
  method: 'exact' | 'approx';
}

/** P(W⁺ = s) for s = 0 … n(n+1)/2 without ties. */
function exactCounts(n: number): Float64Array {
  const max = (n * (n + 1)) / 2;
  const c = new Float64Array(max + 1);
  c[0] = 1;
  for (let r = 1; r <= n; r++) for (let s = (r * (r + 1)) / 2; s >= r; s--) c[s]! += c[s - r]!;
  const total = 2 ** n;
  return c.map((v) => v / total);
}

/** The test of the differences; null when no difference is non-zero. */
export function signedRank(d: ArrayLike<number>, alternative: Alternative,
  method: 'auto' | 'exact' | 'approx' = 'auto'): SignedRankResult | null
{
  const nz = Array.from(d).filter((v) => v !== 0);
  const n = nz.length;
  if (!n) return null;
  const order = nz.map((_, i) => i).sort((i, j) => Math.abs(nz[i]!) - Math.abs(nz[j]!));
  const rank = new Float64Array(n);
  let tieTerm = 0;
  for (let s = 0; s < n;) {
    let e = s;
    while (e + 1 < n && Math.abs(nz[order[e + 1]!]!) === Math.abs(nz[order[s]!]!)) e++;
    const t = e - s + 1;
    for (let k = s; k <= e; k++) rank[order[k]!] = (s + e) / 2 + 1;
    tieTerm += t ** 3 - t;
    s = e + 1;
  }
  let rPlus = 0;
  for (let i = 0; i < n; i++) if (nz[i]! > 0) rPlus += rank[i]!;
  const exact = method === 'exact' || (method === 'auto' && n <= 50 && tieTerm === 0);
  let lower: number;
  let upper: number;
  if (exact) {
    const c = exactCounts(n);
    const k = Math.round(rPlus);
    lower = 0;
    for (let s = 0; s <= k && s < c.length; s++) lower += c[s]!;
    upper = 0;
    for (let s = Math.max(0, k); s < c.length; s++) upper += c[s]!;
  } else {
    const sd = Math.sqrt((n * (n + 1) * (2 * n + 1)) / 24 - tieTerm / 48);
    const z = (rPlus - (n * (n + 1)) / 4) / sd;
    lower = normalUpper(-z);
    upper = normalUpper(z);
  }
  const p = alternative === 'less'
    ? lower
    : alternative === 'greater'
    ? upper
    : Math.min(1, 2 * Math.min(lower, upper));
  return { rPlus, n, p: Math.min(1, p), method: exact ? 'exact' : 'approx' };
}
