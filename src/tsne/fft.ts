/**
 * Complex fast Fourier transforms for the FFT-interpolated t-SNE repulsion
 * (src/tsne/interp.ts): mixed-radix (4, 3, 2) Stockham autosort, decimation in frequency,
 * on split real/imaginary float64 arrays.
 *
 * A transform runs along the first index of an array [n][B] (row-major, B complex values per
 * row) for the columns c in [c0, c1): for each such column, X_k = Σ_j x_j · e^{∓2πi jk/n}
 * (− forward, + inverse; no 1/n). Each stage of radix r with current length n_s = r·m and
 * stride s maps element (q + s(p + j m)) to (q + s(r p + k)) with the twiddle e^{∓2πi pk/n_s};
 * the column index is the innermost loop. The interpolated repulsion runs these stages on blocks
 * of 8 columns (src/tsne/fft-block.ts; as WebAssembly SIMD in src/tsne/fft-simd.ts). Every
 * column is transformed with the same operations whatever [c0, c1) is, so splitting the columns
 * across threads gives bit-identical results.
 */

export interface FftStage {
  r: number;
  m: number;
  s: number;
  /** cos / sin of 2π pk / n_s for p in [0, m), k in [1, r): index p·(r−1) + k−1. */
  cos: Float64Array;
  sin: Float64Array;
}

export interface FftPlan {
  n: number;
  stages: FftStage[];
}

/** True when n > 0 has no prime factor but 2 and 3. */
export function isSmooth(n: number): boolean {
  if (!(n >= 1) || !Number.isInteger(n)) return false;
  while (n % 2 === 0) n /= 2;
  while (n % 3 === 0) n /= 3;
  return n === 1;
}

/** The smallest 2^a·3^b that is at least `min`. */
export function smoothSize(min: number): number {
  let n = Math.max(1, Math.ceil(min));
  while (!isSmooth(n)) n++;
  return n;
}

const plans = new Map<number, FftPlan>();

/** The plan for length n (a 2^a·3^b), cached. */
export function fftPlan(n: number): FftPlan {
  const hit = plans.get(n);
  if (hit) return hit;
  if (!isSmooth(n)) throw new Error(`FFT length ${n} is not of the form 2^a·3^b`);
  const radices: number[] = [];
  let rest = n;
  while (rest % 4 === 0) {
    radices.push(4);
    rest /= 4;
  }
  while (rest % 3 === 0) {
    radices.push(3);
    rest /= 3;
  }
  while (rest % 2 === 0) {
    radices.push(2);
    rest /= 2;
  }
  const stages: FftStage[] = [];
  let len = n;
  let s = 1;
  for (const r of radices) {
    const m = len / r;
    const cos = new Float64Array(m * (r - 1));
    const sin = new Float64Array(m * (r - 1));
    for (let p = 0; p < m; p++)
      for (let k = 1; k < r; k++) {
        const a = (2 * Math.PI * ((p * k) % len)) / len;
        cos[p * (r - 1) + k - 1] = Math.cos(a);
        sin[p * (r - 1) + k - 1] = Math.sin(a);
      }
    stages.push({ r, m, s, cos, sin });
    len = m;
    s *= r;
  }
  const plan = { n, stages };
  plans.set(n, plan);
  return plan;
}

const SQRT3_2 = Math.sqrt(3) / 2;

/**
 * Transform columns [c0, c1) of re/im [n][B] along the first index, in place (tre/tim: scratch
 * of the same size). `inverse` uses e^{+2πi jk/n}.
 */
export function fftColumns(plan: FftPlan, re: Float64Array, im: Float64Array, tre: Float64Array, tim: Float64Array,
  B: number, c0: number, c1: number, inverse: boolean): void
{
  let xr = re, xi = im, yr = tre, yi = tim;
  const sg = inverse ? 1 : -1;
  for (const st of plan.stages) {
    fftStage(st, xr, xi, yr, yi, B, c0, c1, sg);
    const tr = xr;
    xr = yr;
    yr = tr;
    const ti = xi;
    xi = yi;
    yi = ti;
  }
  if (xr !== re) {
    const n = plan.n;
    for (let row = 0; row < n; row++) {
      const b = row * B;
      for (let c = c0; c < c1; c++) {
        re[b + c] = xr[b + c];
        im[b + c] = xi[b + c];
      }
    }
  }
}

/** One stage of the transform (sg −1 forward, +1 inverse) from x into y, columns [c0, c1) of [n][B]. */
export function fftStage(st: FftStage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array,
  B: number, c0: number, c1: number, sg: number): void
{
  if (st.r === 4) radix4(st, xr, xi, yr, yi, B, c0, c1, sg);
  else if (st.r === 3) radix3(st, xr, xi, yr, yi, B, c0, c1, sg);
  else radix2(st, xr, xi, yr, yi, B, c0, c1, sg);
}

function radix4(st: FftStage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array, B: number,
  c0: number, c1: number, sg: number): void
{
  const { m, s, cos, sin } = st;
  const inStep = s * m * B;
  const outStep = s * B;
  for (let p = 0; p < m; p++) {
    const tw = 3 * p;
    const w1r = cos[tw], w1i = sg * sin[tw];
    const w2r = cos[tw + 1], w2i = sg * sin[tw + 1];
    const w3r = cos[tw + 2], w3i = sg * sin[tw + 2];
    for (let q = 0; q < s; q++) {
      const a = (q + s * p) * B;
      const o = (q + 4 * s * p) * B;
      for (let c = c0; c < c1; c++) {
        const i0 = a + c, i1 = i0 + inStep, i2 = i1 + inStep, i3 = i2 + inStep;
        const t0r = xr[i0] + xr[i2], t0i = xi[i0] + xi[i2];
        const t1r = xr[i0] - xr[i2], t1i = xi[i0] - xi[i2];
        const t2r = xr[i1] + xr[i3], t2i = xi[i1] + xi[i3];
        // (a1 − a3) · (sg · i)
        const dr = xr[i1] - xr[i3], di = xi[i1] - xi[i3];
        const t3r = -sg * di, t3i = sg * dr;
        const o0 = o + c, o1 = o0 + outStep, o2 = o1 + outStep, o3 = o2 + outStep;
        yr[o0] = t0r + t2r;
        yi[o0] = t0i + t2i;
        const u1r = t1r + t3r, u1i = t1i + t3i;
        const u2r = t0r - t2r, u2i = t0i - t2i;
        const u3r = t1r - t3r, u3i = t1i - t3i;
        yr[o1] = u1r * w1r - u1i * w1i;
        yi[o1] = u1r * w1i + u1i * w1r;
        yr[o2] = u2r * w2r - u2i * w2i;
        yi[o2] = u2r * w2i + u2i * w2r;
        yr[o3] = u3r * w3r - u3i * w3i;
        yi[o3] = u3r * w3i + u3i * w3r;
      }
    }
  }
}

function radix3(st: FftStage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array, B: number,
  c0: number, c1: number, sg: number): void
{
  const { m, s, cos, sin } = st;
  const inStep = s * m * B;
  const outStep = s * B;
  const h = sg * SQRT3_2;
  for (let p = 0; p < m; p++) {
    const tw = 2 * p;
    const w1r = cos[tw], w1i = sg * sin[tw];
    const w2r = cos[tw + 1], w2i = sg * sin[tw + 1];
    for (let q = 0; q < s; q++) {
      const a = (q + s * p) * B;
      const o = (q + 3 * s * p) * B;
      for (let c = c0; c < c1; c++) {
        const i0 = a + c, i1 = i0 + inStep, i2 = i1 + inStep;
        const sr = xr[i1] + xr[i2], si = xi[i1] + xi[i2];
        const dr = xr[i1] - xr[i2], di = xi[i1] - xi[i2];
        const mr = xr[i0] - 0.5 * sr, mi = xi[i0] - 0.5 * si;
        // X1 = m + (sg·i·√3/2)·d, X2 = m − (sg·i·√3/2)·d
        const u1r = mr - h * di, u1i = mi + h * dr;
        const u2r = mr + h * di, u2i = mi - h * dr;
        const o0 = o + c, o1 = o0 + outStep, o2 = o1 + outStep;
        yr[o0] = xr[i0] + sr;
        yi[o0] = xi[i0] + si;
        yr[o1] = u1r * w1r - u1i * w1i;
        yi[o1] = u1r * w1i + u1i * w1r;
        yr[o2] = u2r * w2r - u2i * w2i;
        yi[o2] = u2r * w2i + u2i * w2r;
      }
    }
  }
}

function radix2(st: FftStage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array, B: number,
  c0: number, c1: number, sg: number): void
{
  const { m, s, cos, sin } = st;
  const inStep = s * m * B;
  const outStep = s * B;
  for (let p = 0; p < m; p++) {
    const w1r = cos[p], w1i = sg * sin[p];
    for (let q = 0; q < s; q++) {
      const a = (q + s * p) * B;
      const o = (q + 2 * s * p) * B;
      for (let c = c0; c < c1; c++) {
        const i0 = a + c, i1 = i0 + inStep;
        const o0 = o + c, o1 = o0 + outStep;
        const ur = xr[i0] - xr[i1], ui = xi[i0] - xi[i1];
        yr[o0] = xr[i0] + xr[i1];
        yi[o0] = xi[i0] + xi[i1];
        yr[o1] = ur * w1r - ui * w1i;
        yi[o1] = ur * w1i + ui * w1r;
      }
    }
  }
}

/** A naive DFT along the first index of [n][B], every column (for tests). */
export function naiveDft(re: Float64Array, im: Float64Array, n: number, B: number,
  inverse: boolean): { re: Float64Array; im: Float64Array }
{
  const or = new Float64Array(n * B);
  const oi = new Float64Array(n * B);
  const sg = inverse ? 1 : -1;
  for (let c = 0; c < B; c++)
    for (let k = 0; k < n; k++) {
      let sr = 0;
      let si = 0;
      for (let j = 0; j < n; j++) {
        const a = (2 * Math.PI * ((j * k) % n)) / n;
        const cr = Math.cos(a);
        const ci = sg * Math.sin(a);
        sr += re[j * B + c] * cr - im[j * B + c] * ci;
        si += re[j * B + c] * ci + im[j * B + c] * cr;
      }
      or[k * B + c] = sr;
      oi[k * B + c] = si;
    }
  return { re: or, im: oi };
}
