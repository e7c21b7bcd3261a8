/**
 * The Shapiro–Wilk test of normality, by Royston's algorithm (AS R94, 1995: the coefficients'
 * polynomial approximations and the normalising transformation of W), the algorithm
 * scipy.stats.shapiro uses. test/util/shapiro.test.ts checks W and p against scipy
 * (test/goldens/ablate-null/make_null_goldens.py).
 *
 * For x sorted ascending (n ≥ 3), m_i = Φ⁻¹((i − 3/8)/(n + 1/4)); the coefficients a are m
 * normalised, the two outermost (one for n ≤ 5) replaced by polynomials in 1/√n; W is the
 * squared correlation between x and a. p: for n = 3 the exact 6/π (asin √W − asin √(3/4)); for
 * 4 ≤ n ≤ 11, −ln(γ − ln(1 − W)) with γ = −2.273 + 0.459 n is normal with a mean and log-sd
 * polynomial in n; for n ≥ 12, ln(1 − W) is normal with a mean and log-sd polynomial in ln n.
 */
import { normalQuantile } from './stats.js';
import { normalUpper } from './resolution.js';

const C1 = [0, 0.221157, -0.147981, -2.07119, 4.434685, -2.706056];
const C2 = [0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633];
const C3 = [0.544, -0.39978, 0.025054, -6.714e-4];
const C4 = [1.3822, -0.77857, 0.062767, -0.0020322];
const C5 = [-1.5861, -0.31082, -0.083751, 0.0038915];
const C6 = [-0.4803, -0.082676, 0.0030302];
const G = [-2.273, 0.459];

/** c0 + c1 x + c2 x² + … */
const poly = (c: readonly number[], x: number): number => c.reduceRight((acc, v) => acc * x + v, 0);

/** The coefficients a_1 … a_⌊n/2⌋ (positive; the full vector is antisymmetric: a_{n+1−i} = −a_i). */
export function shapiroCoefficients(n: number): Float64Array {
  const half = Math.floor(n / 2);
  const a = new Float64Array(half);
  if (n === 3) {
    a[0] = Math.SQRT1_2;
    return a;
  }
  const m = Float64Array.from({ length: half }, (_, i) => normalQuantile((i + 1 - 0.375) / (n + 0.25)));
  const summ2 = 2 * m.reduce((s, v) => s + v * v, 0);
  const ssumm2 = Math.sqrt(summ2);
  const rsn = 1 / Math.sqrt(n);
  const a1 = poly(C1, rsn) - m[0]! / ssumm2;
  let first: number;
  let fac: number;
  if (n > 5) {
    const a2 = -m[1]! / ssumm2 + poly(C2, rsn);
    fac = Math.sqrt((summ2 - 2 * m[0]! ** 2 - 2 * m[1]! ** 2) / (1 - 2 * a1 ** 2 - 2 * a2 ** 2));
    a[1] = a2;
    first = 2;
  } else {
    fac = Math.sqrt((summ2 - 2 * m[0]! ** 2) / (1 - 2 * a1 ** 2));
    first = 1;
  }
  a[0] = a1;
  for (let i = first; i < half; i++) a[i] = -m[i]! / fac;
  return a;
}

export interface ShapiroResult {
  w: number;
  p: number;
}

/**
 * Shapiro–Wilk W and p of a sample (3 ≤ n ≤ 5000); null when the sample is shorter or has no
 * spread (W is undefined).
 */
export function shapiroWilk(values: ArrayLike<number>): ShapiroResult | null {
  const n = values.length;
  if (n < 3 || n > 5000) return null;
  const x = Float64Array.from(values).sort();
  if (!x.every(Number.isFinite)) return null;
  const range = x[n - 1]! - x[0]!;
  if (!(range > 0)) return null;
  const half = Math.floor(n / 2);
  const a = shapiroCoefficients(n);
  // W: the squared correlation of x (scaled by its range) with the antisymmetric a.
  let mx = 0;
  for (let i = 0; i < n; i++) mx += x[i]! / range;
  mx /= n;
  let ssa = 0;
  let ssx = 0;
  let sax = 0;
  for (let i = 0; i < n; i++) {
    const ai = i < half ? -a[i]! : i >= n - half ? a[n - 1 - i]! : 0;
    const xi = x[i]! / range - mx;
    ssa += ai * ai;
    ssx += xi * xi;
    sax += ai * xi;
  }
  const r = Math.sqrt(ssa * ssx);
  const w = Math.min(1, 1 - ((r - sax) * (r + sax)) / (ssa * ssx));
  if (n === 3) return { w, p: Math.max(0, (6 / Math.PI) * (Math.asin(Math.sqrt(w)) - Math.PI / 3)) };
  let y = Math.log(1 - w);
  let mean: number;
  let sd: number;
  if (n <= 11) {
    const gamma = poly(G, n);
    if (y >= gamma) return { w, p: 1e-99 };
    y = -Math.log(gamma - y);
    mean = poly(C3, n);
    sd = Math.exp(poly(C4, n));
  } else {
    const ln = Math.log(n);
    mean = poly(C5, ln);
    sd = Math.exp(poly(C6, ln));
  }
  return { w, p: normalUpper((y - mean) / sd) };
}
