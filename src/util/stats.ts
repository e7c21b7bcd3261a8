/**
 * Small exact statistics shared by the analyses: multiplicity corrections (Holm,
 * Benjamini–Hochberg), binomial intervals (Wilson, Clopper–Pearson), the exact upper tail of
 * a Poisson-binomial count (successes of units with unequal chances), the z-score of a value
 * against a null sample, the smallest p a permutation test can give, Student's t (through the
 * regularized incomplete beta) and the prediction-interval t test of a value against K null draws.
 *
 * Checked against scipy and statsmodels by test/util/stats.test.ts, whose figures come from
 * test/goldens/stats/make_stats_goldens.py.
 */

/** A p-value that may be missing (no null): missing values are left out of a family and stay null. */
export type MaybeP = number | null | undefined;

/** Indices of the non-missing p-values, sorted by p ascending (ties by index). */
function order(p: readonly MaybeP[]): number[] {
  const idx: number[] = [];
  p.forEach((v, i) => {
    if (v !== null && v !== undefined && Number.isFinite(v)) idx.push(i);
  });
  return idx.sort((a, b) => (p[a] as number) - (p[b] as number) || a - b);
}

/**
 * Holm's step-down adjusted p-values (family-wise error): with the m p-values sorted
 * ascending, p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)). Missing values stay null and do
 * not count toward m. Rejecting p̃ ≤ α controls the chance of any false rejection at α.
 */
export function holm(p: readonly MaybeP[]): (number | null)[] {
  const idx = order(p);
  const m = idx.length;
  const out: (number | null)[] = p.map(() => null);
  let run = 0;
  idx.forEach((i, r) => {
    run = Math.max(run, Math.min(1, (m - r) * (p[i] as number)));
    out[i] = run;
  });
  return out;
}

/**
 * Benjamini–Hochberg adjusted p-values (false discovery rate): with the m p-values sorted
 * ascending, q_(i) = min_{j ≥ i} min(1, m · p_(j) / j). Missing values stay null.
 */
export function benjaminiHochberg(p: readonly MaybeP[]): (number | null)[] {
  const idx = order(p);
  const m = idx.length;
  const out: (number | null)[] = p.map(() => null);
  let run = 1;
  for (let r = m - 1; r >= 0; r--) {
    const i = idx[r]!;
    run = Math.min(run, Math.min(1, (m * (p[i] as number)) / (r + 1)));
    out[i] = run;
  }
  return out;
}

/** The smallest p-value a permutation test with R permutations can give: 1 / (R + 1). */
export function permutationFloor(R: number): number {
  return 1 / (R + 1);
}

/**
 * Permutations needed for the smallest possible p to pass Holm in a family of m at level α:
 * 1/(R+1) ≤ α/m, so R = ceil(m/α) − 1 (199 for m = 10, α = 0.05).
 */
export function permutationsForFamily(m: number, alpha = 0.05): number {
  return Math.max(0, Math.ceil(m / alpha - 1e-9) - 1);
}

/** (value − mean) / sd of a null sample (sd with n − 1); null when the sample is empty or constant. */
export function nullZ(value: number, nulls: ArrayLike<number> | null | undefined): number | null {
  if (!nulls || nulls.length < 2) return null;
  let s = 0;
  for (let i = 0; i < nulls.length; i++) s += nulls[i]!;
  const mean = s / nulls.length;
  let ss = 0;
  for (let i = 0; i < nulls.length; i++) ss += (nulls[i]! - mean) ** 2;
  const sd = Math.sqrt(ss / (nulls.length - 1));
  return sd > 0 ? (value - mean) / sd : null;
}

/** Standard normal quantile (Acklam's rational approximation; relative error below 1.2e-9). */
export function normalQuantile(q: number): number {
  if (!(q > 0 && q < 1)) return q === 0 ? -Infinity : q === 1 ? Infinity : NaN;
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1,
    2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1,
    -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const lo = 0.02425;
  let x: number;
  if (q < lo) {
    const t = Math.sqrt(-2 * Math.log(q));
    x = (((((c[0]! * t + c[1]!) * t + c[2]!) * t + c[3]!) * t + c[4]!) * t + c[5]!) /
      ((((d[0]! * t + d[1]!) * t + d[2]!) * t + d[3]!) * t + 1);
  } else if (q > 1 - lo) {
    const t = Math.sqrt(-2 * Math.log(1 - q));
    x = -(((((c[0]! * t + c[1]!) * t + c[2]!) * t + c[3]!) * t + c[4]!) * t + c[5]!) /
      ((((d[0]! * t + d[1]!) * t + d[2]!) * t + d[3]!) * t + 1);
  } else {
    const u = q - 0.5;
    const r = u * u;
    x = ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * u) /
      (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
  }
  return x;
}

/** Wilson score interval for k successes of n at confidence `conf` (null when n = 0). */
export function wilson(k: number, n: number, conf = 0.95): [number, number] | null {
  if (n <= 0) return null;
  const z = normalQuantile(1 - (1 - conf) / 2);
  const p = k / n;
  const z2 = z * z;
  const den = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / den;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / den;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/** log Γ(x) for x > 0 (Lanczos, g = 7, nine coefficients; about 15 significant digits). */
export function logGamma(x: number): number {
  const g = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const y = x - 1;
  let a = g[0]!;
  const t = y + 7.5;
  for (let i = 1; i < 9; i++) a += g[i]! / (y + i);
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(a);
}

/** log of the binomial coefficient C(n, k). */
function logChoose(n: number, k: number): number {
  return logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1);
}

/** P(X ≥ k) for X ~ Binomial(n, p), summed exactly over the tail's terms in log space. */
export function binomialUpper(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  const lp = Math.log(p);
  const lq = Math.log1p(-p);
  // Sum from the smaller side for accuracy.
  let s = 0;
  for (let i = k; i <= n; i++) s += Math.exp(logChoose(n, i) + i * lp + (n - i) * lq);
  return Math.min(1, s);
}

/** P(X ≤ k) for X ~ Binomial(n, p). */
export function binomialLower(k: number, n: number, p: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  const lp = Math.log(p);
  const lq = Math.log1p(-p);
  let s = 0;
  for (let i = 0; i <= k; i++) s += Math.exp(logChoose(n, i) + i * lp + (n - i) * lq);
  return Math.min(1, s);
}

/** The p in [0, 1] where a monotone f crosses `target` (bisection to machine precision). */
function solve(f: (p: number) => number, target: number, increasing: boolean): number {
  let lo = 0;
  let hi = 1;
  for (let it = 0; it < 200 && hi - lo > 1e-15; it++) {
    const mid = (lo + hi) / 2;
    const above = f(mid) > target;
    if (above === increasing) hi = mid;
    else lo = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Clopper–Pearson ("exact") interval for k successes of n: the lower end is the p at which
 * P(X ≥ k) = (1 − conf)/2 (0 when k = 0), the upper the p at which P(X ≤ k) = (1 − conf)/2
 * (1 when k = n). Null when n = 0.
 */
export function clopperPearson(k: number, n: number, conf = 0.95): [number, number] | null {
  if (n <= 0) return null;
  const a = (1 - conf) / 2;
  const lo = k <= 0 ? 0 : solve((p) => binomialUpper(k, n, p), a, true);
  const hi = k >= n ? 1 : solve((p) => binomialLower(k, n, p), a, false);
  return [lo, hi];
}

/**
 * Distribution of the number of successes of independent units with chances ps (the
 * Poisson-binomial), by dynamic programming over the units: out[j] = P(X = j), j = 0..n.
 */
export function poissonBinomialPmf(ps: ArrayLike<number>): Float64Array {
  const n = ps.length;
  const f = new Float64Array(n + 1);
  f[0] = 1;
  for (let i = 0; i < n; i++) {
    const p = ps[i]!;
    for (let j = i + 1; j >= 1; j--) f[j] = f[j]! * (1 - p) + f[j - 1]! * p;
    f[0] = f[0]! * (1 - p);
  }
  return f;
}

/** P(X ≥ k) for X the number of successes of independent units with chances ps: an exact one-sided test against chance. */
export function poissonBinomialUpper(ps: ArrayLike<number>, k: number): number {
  if (k <= 0) return 1;
  const f = poissonBinomialPmf(ps);
  let s = 0;
  for (let j = Math.max(0, k); j < f.length; j++) s += f[j]!;
  return Math.min(1, s);
}

/** The continued fraction of the incomplete beta function (modified Lentz), for x < (a + 1)/(a + b + 2). */
function betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  const guard = (v: number) => (Math.abs(v) < tiny ? tiny : v);
  let c = 1;
  let d = 1 / guard(1 - ((a + b) * x) / (a + 1));
  let h = d;
  for (let m = 1; m <= 500; m++) {
    const m2 = 2 * m;
    const even = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 / guard(1 + even * d);
    c = guard(1 + even / c);
    h *= d * c;
    const odd = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 / guard(1 + odd * d);
    c = guard(1 + odd / c);
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b), a, b > 0 (the continued fraction on whichever side converges). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0) || Number.isNaN(x)) return NaN;
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  return x < (a + 1) / (a + b + 2) ? (front * betaFraction(x, a, b)) / a : 1 - (front * betaFraction(1 - x, b, a)) / b;
}

/** P(T ≤ t) for Student's t with df degrees of freedom (df > 0). */
export function studentTCdf(t: number, df: number): number {
  if (Number.isNaN(t) || !(df > 0)) return NaN;
  if (!Number.isFinite(t)) return t > 0 ? 1 : 0;
  const tail = 0.5 * incompleteBeta(df / (df + t * t), df / 2, 0.5);
  return t < 0 ? tail : 1 - tail;
}

/**
 * The prediction-interval t test of one value against a sample of K draws from its null (here:
 * K random regions): under the null the value is one more draw from a normal distribution whose
 * mean and sd the K draws estimate, so t = (value − mean) / (sd · √(1 + 1/K)) follows Student's
 * t with K − 1 degrees of freedom. Unlike the rank p (1 + #{null ≤ value}) / (K + 1), whose floor
 * is 1/(K + 1), this p can be small with few draws, at the price of assuming the null draws are
 * normal. `lower`: the value is below its null (P(T ≤ t)); `upper`: above it. null when K < 3 or
 * the draws have no spread.
 */
export function predictionP(value: number, nulls: ArrayLike<number> | null | undefined, tail: 'lower' | 'upper'): number
  | null
{
  if (!nulls || nulls.length < 3 || !Number.isFinite(value)) return null;
  const K = nulls.length;
  const z = nullZ(value, nulls);
  if (z === null) return null;
  const t = z / Math.sqrt(1 + 1 / K);
  return studentTCdf(tail === 'lower' ? t : -t, K - 1);
}

/** The q-quantile of Student's t with df degrees of freedom (0 < q < 1; bisection on studentTCdf to 1e-12). */
export function studentTQuantile(q: number, df: number): number {
  if (!(q > 0 && q < 1) || !(df > 0)) return NaN;
  if (q === 0.5) return 0;
  let lo = -1;
  let hi = 1;
  while (studentTCdf(lo, df) > q) lo *= 2;
  while (studentTCdf(hi, df) < q) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, Math.abs(lo)); i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < q) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
