/**
 * PCA by seeded randomized SVD (Halko, Martinsson & Tropp 2011): a Gaussian sketch of the
 * centred matrix, a few power iterations with re-orthonormalization, then the exact SVD
 * of the small projected matrix (through a Jacobi eigendecomposition of B·Bᵀ).
 * When k + oversampling reaches min(n, d) the sketch spans the whole space and the
 * result is exact. Component signs are fixed so that each score column's largest-magnitude
 * entry is positive, so results do not depend on the sketch.
 */
import { Rng } from '../util/rng.js';
import { dotKernel, OUT_STRIDE, type DotSimd } from '../util/dot-simd.js';
import { jacobiEigen, orthonormalize } from './linalg.js';

export interface PcaResult {
  /** Scores [n, k] row-major (float64). Columns ordered by decreasing variance. */
  scores: Float64Array;
  k: number;
  /** Variance of each component (divided by n - 1). */
  variances: Float64Array;
  /** Fraction of the total variance captured by the k components. */
  explainedVariance: number;
  totalVariance: number;
  /** Column means of X [d] (the centre the scores are measured from). */
  mean: Float64Array;
  /**
   * The components [d, k] row-major (unit columns, signs as the scores'): new rows x project to
   * (x − mean) · components (pcaProject). For the randomized method these are the right singular
   * vectors of the sketch's projection, so the projection of X itself agrees with `scores` to the
   * sketch's accuracy, not bit for bit.
   */
  components: Float64Array;
}

export interface PcaOptions {
  seed?: number;
  /** Power iterations (default 2). */
  powerIterations?: number;
  /** Extra sketch columns (default 10). */
  oversample?: number;
  /** 'auto' (default): exact through the covariance when d ≤ 256, randomized otherwise. */
  method?: 'auto' | 'exact' | 'randomized';
}

/** A matrix product the PCA needs: Xc·B ('xb', B [d, l]) or Xcᵀ·B ('xtb', B [n, l]). */
export interface MulRequest {
  op: 'xb' | 'xtb';
  X: Float32Array;
  n: number;
  d: number;
  B: Float64Array;
  l: number;
}

/** Something that computes MulRequests in parallel (ClusterPool). */
export interface MatMulPool {
  matmul(req: MulRequest): Promise<Float64Array>;
}

/** PCA of X [n, d] (row-major) to k components, in this thread. */
export function pca(X: Float32Array | Float64Array, n: number, d: number, k: number, opts: PcaOptions = {}): PcaResult {
  const gen = pcaSteps(X, n, d, k, opts, false);
  let r = gen.next();
  while (!r.done) {
    const q = r.value;
    r = gen.next(q.op === 'xb' ? mulXB(q.X, q.n, q.d, q.B, q.l) : mulXtB(q.X, q.n, q.d, q.B, q.l));
  }
  return r.value;
}

/** PCA with the large matrix products split across a pool's threads (identical results). */
export async function pcaParallel(X: Float32Array | Float64Array, n: number, d: number, k: number, opts: PcaOptions,
  pool: MatMulPool): Promise<PcaResult>
{
  const gen = pcaSteps(X, n, d, k, opts, true);
  let r = gen.next();
  while (!r.done) r = gen.next(await pool.matmul(r.value));
  return r.value;
}

/** The algorithm, yielding each large product to the driver. */
function* pcaSteps(X: Float32Array | Float64Array, n: number, d: number, k: number, opts: PcaOptions,
  shared: boolean): Generator<MulRequest, PcaResult, Float64Array>
{
  k = Math.max(1, Math.min(k, n, d));
  const rng = new Rng(opts.seed ?? 0);
  const q = opts.powerIterations ?? 2;
  const l = Math.min(k + (opts.oversample ?? 10), n, d);
  // Centre (float32 copy keeps memory at n·d·4 bytes).
  const mean = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    const o = i * d;
    for (let j = 0; j < d; j++) mean[j] += X[o + j];
  }
  for (let j = 0; j < d; j++) mean[j] /= n;
  const Xc = new Float32Array(shared ? new SharedArrayBuffer(n * d * 4) : new ArrayBuffer(n * d * 4));
  let total = 0;
  for (let i = 0; i < n; i++) {
    const o = i * d;
    for (let j = 0; j < d; j++) {
      const v = X[o + j] - mean[j];
      Xc[o + j] = v;
      total += v * v;
    }
  }
  const denom = Math.max(n - 1, 1);
  const method = opts.method ?? 'auto';
  if (method === 'exact' || (method === 'auto' && (d <= 256 || k + (opts.oversample ?? 10) >= d)))
    return exactPca(Xc, n, d, k, total, denom, mean);
  // Sketch: Yk = Xc · Omega  [n, l]
  const omega = new Float64Array(d * l);
  for (let i = 0; i < omega.length; i++) omega[i] = rng.normal();
  let Q: Float64Array = yield { op: 'xb', X: Xc, n, d, B: omega, l };
  orthonormalize(Q, n, l);
  for (let it = 0; it < q; it++) {
    const Z: Float64Array = yield { op: 'xtb', X: Xc, n, d, B: Q, l }; // [d, l]
    orthonormalize(Z, d, l);
    Q = yield { op: 'xb', X: Xc, n, d, B: Z, l };
    orthonormalize(Q, n, l);
  }
  // B = Qᵀ Xc [l, d]; B Bᵀ = (Xcᵀ Q)ᵀ (Xcᵀ Q)
  const Zt: Float64Array = yield { op: 'xtb', X: Xc, n, d, B: Q, l }; // [d, l] = Bᵀ
  const { values, vectors } = sketchEigen(Zt, d, l);
  // scores = Q · U[:, :k] · S  (S = sqrt(eigenvalue)); Xc·v = Q·Bv = Q·u·s
  const scores = new Float64Array(n * k);
  const variances = new Float64Array(k);
  for (let c = 0; c < k; c++) {
    const s = Math.sqrt(Math.max(values[c], 0));
    variances[c] = values[c] / denom;
    for (let i = 0; i < n; i++) {
      let acc = 0;
      const o = i * l;
      for (let a = 0; a < l; a++) acc += Q[o + a] * vectors[a * l + c];
      scores[i * k + c] = acc * s;
    }
  }
  const components = sketchComponents(Zt, d, l, k, values, vectors);
  fixSigns(scores, n, k, components, d);
  let captured = 0;
  for (let c = 0; c < k; c++) captured += Math.max(values[c], 0);
  return { scores, k, variances, explainedVariance: total > 0 ? captured / total : 0, totalVariance: total / denom,
    mean, components };
}

/**
 * The eigen-decomposition of B Bᵀ for the sketch B = Zᵀ [l, d], given Zt [d, l] row-major
 * (B Bᵀ = Ztᵀ Zt, accumulated over the upper triangle and mirrored): the last step of a
 * randomized PCA, dense or sparse (pca-sparse.ts).
 */
export function sketchEigen(Zt: Float64Array, d: number, l: number): { values: Float64Array; vectors: Float64Array } {
  const G = new Float64Array(l * l);
  for (let r = 0; r < d; r++) {
    const o = r * l;
    for (let a = 0; a < l; a++) {
      const v = Zt[o + a];
      if (v === 0) continue;
      for (let b = a; b < l; b++) G[a * l + b] += v * Zt[o + b];
    }
  }
  for (let a = 0; a < l; a++) for (let b = 0; b < a; b++) G[a * l + b] = G[b * l + a];
  const { values, vectors } = jacobiEigen(G, l);
  return { values, vectors };
}

/** The top k components [d, k] from the sketch and its eigen-decomposition: V = Bᵀ U S⁻¹ = Zt · U / s. */
export function sketchComponents(Zt: Float64Array, d: number, l: number, k: number, values: Float64Array,
  vectors: Float64Array): Float64Array
{
  const components = new Float64Array(d * k);
  for (let c = 0; c < k; c++) {
    const s = Math.sqrt(Math.max(values[c], 0));
    if (!(s > 0)) continue;
    for (let r = 0; r < d; r++) {
      let acc = 0;
      const o = r * l;
      for (let a = 0; a < l; a++) acc += Zt[o + a] * vectors[a * l + c];
      components[r * k + c] = acc / s;
    }
  }
  return components;
}

/** The Gaussian sketch Ω [d, l] that pcaSteps draws from `seed` (the same numbers in the same order). */
export function sketchOmega(d: number, l: number, seed: number): Float64Array {
  const rng = new Rng(seed);
  const omega = new Float64Array(d * l);
  for (let i = 0; i < omega.length; i++) omega[i] = rng.normal();
  return omega;
}

/**
 * Rows Z [m, d] projected on a PCA's components: (z − mean) · components, [m, k]. The centred rows
 * are a float32 copy (as the PCA's own), multiplied in the dot kernel (mulXBRows).
 */
export function pcaProject(p: Pick<PcaResult, 'mean' | 'components' | 'k'>, Z: Float64Array | Float32Array, m: number,
  d: number): Float64Array
{
  const { k, mean, components } = p;
  const Zc = new Float32Array(m * d);
  for (let i = 0; i < m; i++) for (let j = 0; j < d; j++) Zc[i * d + j] = Z[i * d + j] - mean[j];
  const out = new Float64Array(m * k);
  mulXBRows(Zc, d, components, k, out, 0, m);
  return out;
}

/** Exact PCA through the covariance matrix (for small d). */
function exactPca(Xc: Float32Array, n: number, d: number, k: number, total: number, denom: number,
  mean: Float64Array): PcaResult
{
  const G = new Float64Array(d * d);
  const row = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) row[j] = Xc[i * d + j];
    for (let a = 0; a < d; a++) {
      const v = row[a];
      if (v === 0) continue;
      const o = a * d;
      for (let b = a; b < d; b++) G[o + b] += v * row[b];
    }
  }
  for (let a = 0; a < d; a++) for (let b = 0; b < a; b++) G[a * d + b] = G[b * d + a];
  const { values, vectors } = jacobiEigen(G, d);
  const scores = new Float64Array(n * k);
  const variances = new Float64Array(k);
  let captured = 0;
  for (let c = 0; c < k; c++) {
    variances[c] = values[c] / denom;
    captured += Math.max(values[c], 0);
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) row[j] = Xc[i * d + j];
    for (let c = 0; c < k; c++) {
      let acc = 0;
      for (let j = 0; j < d; j++) acc += row[j] * vectors[j * d + c];
      scores[i * k + c] = acc;
    }
  }
  const components = new Float64Array(d * k);
  for (let j = 0; j < d; j++) for (let c = 0; c < k; c++) components[j * k + c] = vectors[j * d + c];
  fixSigns(scores, n, k, components, d);
  return { scores, k, variances, explainedVariance: total > 0 ? captured / total : 0, totalVariance: total / denom,
    mean, components };
}

/** Make each score column's largest-magnitude entry positive (flipping its component with it). */
function fixSigns(scores: Float64Array, n: number, k: number, components: Float64Array, d: number): void {
  for (let c = 0; c < k; c++) {
    let best = 0;
    for (let i = 0; i < n; i++) if (Math.abs(scores[i * k + c]) > Math.abs(best)) best = scores[i * k + c];
    if (best < 0) {
      for (let i = 0; i < n; i++) scores[i * k + c] = -scores[i * k + c];
      for (let j = 0; j < d; j++) components[j * k + c] = -components[j * k + c];
    }
  }
}

/** X [n, d] float32 times B [d, l] -> [n, l]. */
function mulXB(X: Float32Array, n: number, d: number, B: Float64Array, l: number): Float64Array {
  const out = new Float64Array(n * l);
  mulXBRows(X, d, B, l, out, 0, n);
  return out;
}

/**
 * Rows [r0, r1) of X·B into out (zeroed): out[i, c] = Σ_j X[i, j] · B[j, c], one product per j
 * in order. Runs in the WebAssembly SIMD dot kernel (four rows of X against four columns of B
 * per step) when available, bit-identical to the JavaScript loop; each row's sums do not depend
 * on the range.
 */
export function mulXBRows(X: Float32Array | Float64Array, d: number, B: Float64Array, l: number, out: Float64Array,
  r0: number, r1: number): void
{
  const k = dotKernel();
  const quad = (M: Float64Array, at: number, i0: number, m: number) => {
    for (let r = 0; r < m; r++) {
      const xo = (i0 + r) * d;
      for (let j = 0; j < d; j++) M[at + 4 * j + r] = X[xo + j];
    }
  };
  if (!k || r1 <= r0 || d === 0 || !productByQuads(k, d, B, l, out, r0, r1, quad)) mulXBRowsJs(X, d, B, l, out, r0, r1);
}

/**
 * Output rows [q0, q1) of V·B for B [len, l], where row q of V is a vector of length len that
 * `quad` packs (vectors q..q+m−1 as [len][4] at float64 offset `at`), through the dot kernel:
 * B in blocks of four columns [⌈l/4⌉][len][4], then the quad, then the sums [4][OUT_STRIDE].
 * False, with nothing written, when the kernel's memory cannot hold that.
 */
export function productByQuads(k: DotSimd, len: number, B: Float64Array, l: number, out: Float64Array, q0: number,
  q1: number, quad: (M: Float64Array, at: number, q: number, m: number) => void): boolean
{
  const qpAt = Math.ceil(l / 4) * 4 * len;
  const outAt = qpAt + 4 * len;
  if (!k.ensure((outAt + 4 * OUT_STRIDE) * 8)) return false;
  const M = new Float64Array(k.memory.buffer);
  M.fill(0, 0, qpAt);
  for (let j = 0; j < len; j++) {
    const bo = j * l;
    for (let c = 0; c < l; c++) M[(c >> 2) * 4 * len + 4 * j + (c & 3)] = B[bo + c];
  }
  for (let q = q0; q < q1; q += 4) {
    const m = Math.min(4, q1 - q);
    M.fill(0, qpAt, outAt);
    quad(M, qpAt, q, m);
    for (let cs = 0; cs < l; cs += OUT_STRIDE) {
      const w = Math.min(OUT_STRIDE, l - cs);
      k.dots(qpAt * 8, cs * len * 8, Math.ceil(w / 4), len, outAt * 8, 0, 0);
      for (let r = 0; r < m; r++)
        out.set(M.subarray(outAt + r * OUT_STRIDE, outAt + r * OUT_STRIDE + w), (q + r) * l + cs);
    }
  }
  return true;
}

/** The JavaScript loop of mulXBRows, four rows at a time (B streamed once per block). */
export function mulXBRowsJs(X: Float32Array | Float64Array, d: number, B: Float64Array, l: number, out: Float64Array,
  r0: number, r1: number): void
{
  const n = r1;
  let i = r0;
  for (; i + 4 <= n; i += 4) {
    const x0 = i * d;
    const x1 = x0 + d;
    const x2 = x1 + d;
    const x3 = x2 + d;
    const o0 = i * l;
    const o1 = o0 + l;
    const o2 = o1 + l;
    const o3 = o2 + l;
    for (let j = 0; j < d; j++) {
      const a0 = X[x0 + j];
      const a1 = X[x1 + j];
      const a2 = X[x2 + j];
      const a3 = X[x3 + j];
      const bo = j * l;
      for (let c = 0; c < l; c++) {
        const b = B[bo + c];
        out[o0 + c] += a0 * b;
        out[o1 + c] += a1 * b;
        out[o2 + c] += a2 * b;
        out[o3 + c] += a3 * b;
      }
    }
  }
  for (; i < n; i++) {
    const xo = i * d;
    const oo = i * l;
    for (let j = 0; j < d; j++) {
      const x = X[xo + j];
      const bo = j * l;
      for (let c = 0; c < l; c++) out[oo + c] += x * B[bo + c];
    }
  }
}

/** Xᵀ [d, n] times B [n, l] -> [d, l]. */
function mulXtB(X: Float32Array, n: number, d: number, B: Float64Array, l: number): Float64Array {
  const out = new Float64Array(d * l);
  mulXtBCols(X, n, d, B, l, out, 0, d);
  return out;
}

/**
 * Output rows [j0, j1) (columns of X) of Xᵀ·B into out (zeroed): out[j, c] = Σ_i X[i, j] · B[i, c],
 * one product per i in order. Runs in the WebAssembly SIMD dot kernel (four columns of X against
 * four columns of B per step) when available, bit-identical to the JavaScript loop; each output
 * row's sums do not depend on the range.
 */
export function mulXtBCols(X: Float32Array | Float64Array, n: number, d: number, B: Float64Array, l: number,
  out: Float64Array, j0: number, j1: number): void
{
  const k = dotKernel();
  const quad = (M: Float64Array, at: number, jq: number, m: number) => {
    for (let i = 0; i < n; i++) {
      const xo = i * d + jq;
      for (let r = 0; r < m; r++) M[at + 4 * i + r] = X[xo + r];
    }
  };
  if (!k || j1 <= j0 || n === 0 || !productByQuads(k, n, B, l, out, j0, j1, quad))
    mulXtBColsJs(X, n, d, B, l, out, j0, j1);
}

/** The JavaScript loop of mulXtBCols: rows of X in order, each adding its products to every output. */
export function mulXtBColsJs(X: Float32Array | Float64Array, n: number, d: number, B: Float64Array, l: number,
  out: Float64Array, j0: number, j1: number): void
{
  for (let i = 0; i < n; i++) {
    const xo = i * d;
    const bo = i * l;
    for (let j = j0; j < j1; j++) {
      const x = X[xo + j];
      const oo = j * l;
      for (let c = 0; c < l; c++) out[oo + c] += x * B[bo + c];
    }
  }
}
