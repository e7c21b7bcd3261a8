/**
 * The loss and gradient of L2-penalized multinomial logistic regression, the inner loop of the
 * linear probe (src/cluster/probe.ts):
 *
 *   f(W, b) = Σ_i s_i · −log softmax(W x_i + b)_{y_i} + (λ/2) ‖W‖²,   λ = 1/C, b not penalized,
 *   ∂f/∂W_c = Σ_i r_ic x_i + λ W_c,   ∂f/∂b_c = Σ_i r_ic,   r_ic = s_i (p_ic − [y_i = c]),
 *
 * with sample weights s_i (1 unless given; class weights give every item of class c the weight
 * of its class, as scikit-learn's class_weight does).
 *
 * Parameters are class-major: W as [K][d], then the K biases. The two products, the logits
 * X Wᵀ and the gradient Rᵀ X, run in the dot-product WebAssembly SIMD kernel
 * (src/util/dot-simd.ts) when it is available: the training matrix is packed for it once per
 * fit, sample rows in quads (for the logits) and feature columns in quads (for the gradient).
 * Every logit is Σ_j x_ij w_cj summed in j order plus the bias, every gradient entry Σ_i r_ic x_ij
 * summed in i order, in the kernel and in the JavaScript loops alike, so the two paths give
 * bit-identical losses, gradients and fits.
 */
import { dotKernel, OUT_STRIDE, type DotSimd } from '../util/dot-simd.js';

/** Loss at (W, b) with the gradient written to g (both class-major, length (d + 1)·K). */
export type Objective = (Wt: Float64Array, g: Float64Array) => number;

/** Use the kernel from this many multiply-adds per product (below, packing costs more than it saves). */
const KERNEL_MIN_WORK = 4096;

/**
 * The objective for standardized X [n, d], labels y in 0..K−1 and λ = 1/C; `useKernel: false`
 * forces the JavaScript loops; `weights` [n] are the sample weights s_i.
 */
export function logisticObjective(X: Float64Array, n: number, d: number, y: Int32Array, K: number, lambda: number,
  useKernel = true, weights?: Float64Array): Objective
{
  const k = useKernel && n * d * K >= KERNEL_MIN_WORK ? dotKernel() : null;
  const products = (k && kernelProducts(k, X, n, d, K)) || jsProducts(X, n, d, K);
  const logits = new Float64Array(n * K);
  const R = new Float64Array(n * K);
  const bias = new Float64Array(K);
  const bo = K * d;
  return (Wt, g) => {
    products.logits(Wt, logits);
    let loss = 0;
    bias.fill(0);
    for (let i = 0; i < n; i++) {
      const o = i * K;
      let mx = -Infinity;
      for (let c = 0; c < K; c++) {
        const v = logits[o + c] + Wt[bo + c];
        logits[o + c] = v;
        if (v > mx) mx = v;
      }
      const yi = y[i];
      // −log softmax_y = log Σ_c exp(v_c − max) + max − v_y; exp(v_c − max) is exp(+0) = 1 where
      // v_c is the (finite) maximum
      const vy = logits[o + yi];
      const finite = mx > -Infinity && mx < Infinity;
      let se = 0;
      for (let c = 0; c < K; c++) {
        const v = logits[o + c];
        const e = finite && v === mx ? 1 : Math.exp(v - mx);
        logits[o + c] = e;
        se += e;
      }
      const w = weights ? weights[i] : 1;
      loss += w * (Math.log(se) + mx - vy);
      const inv = 1 / se;
      // the residuals, and the bias gradient Σ_i r_ic summed in i order as they are made
      for (let c = 0; c < K; c++) {
        const r = w * (logits[o + c] * inv - (c === yi ? 1 : 0));
        R[o + c] = r;
        bias[c] += r;
      }
    }
    products.gradient(R, g);
    for (let c = 0; c < K; c++) g[bo + c] = bias[c];
    for (let t = 0; t < bo; t++) {
      loss += 0.5 * lambda * Wt[t] * Wt[t];
      g[t] += lambda * Wt[t];
    }
    return loss;
  };
}

interface Products {
  /** out[i·K + c] = Σ_j X[i, j] · Wt[c·d + j] (no bias). */
  logits(Wt: Float64Array, out: Float64Array): void;
  /** g[c·d + j] = Σ_i R[i·K + c] · X[i, j] (the first K·d entries of g). */
  gradient(R: Float64Array, g: Float64Array): void;
}

/** The JavaScript loops: one accumulator per sum, in the kernel's order. */
function jsProducts(X: Float64Array, n: number, d: number, K: number): Products {
  return {
    logits(Wt, out) {
      for (let i = 0; i < n; i++) {
        const xo = i * d;
        for (let c = 0; c < K; c++) {
          const wo = c * d;
          let s = 0;
          for (let j = 0; j < d; j++) s += X[xo + j] * Wt[wo + j];
          out[i * K + c] = s;
        }
      }
    },
    gradient(R, g) {
      g.fill(0, 0, K * d);
      for (let i = 0; i < n; i++) {
        const xo = i * d;
        for (let c = 0; c < K; c++) {
          const r = R[i * K + c];
          const go = c * d;
          for (let j = 0; j < d; j++) g[go + j] += r * X[xo + j];
        }
      }
    },
  };
}

/**
 * The kernel's products; null when its memory cannot hold the packed matrix. Memory layout
 * (float64 offsets): sample quads [⌈n/4⌉][d][4], feature quads [⌈d/4⌉][n][4], the weights as
 * class quads [⌈K/4⌉][d][4], the residuals as class quads [⌈K/4⌉][n][4], and the output [4][OUT_STRIDE].
 * Zero padding adds exact zeros, so it changes no sum.
 */
function kernelProducts(k: DotSimd, X: Float64Array, n: number, d: number, K: number): Products | null {
  const nq = Math.ceil(n / 4);
  const dq = Math.ceil(d / 4);
  const kq = Math.ceil(K / 4);
  if (kq > OUT_STRIDE / 4) return null;
  const xqAt = 0;
  const xtAt = xqAt + nq * 4 * d;
  const wAt = xtAt + dq * 4 * n;
  const rAt = wAt + kq * 4 * d;
  const outAt = rAt + kq * 4 * n;
  if (!k.ensure((outAt + 4 * OUT_STRIDE) * 8)) return null;
  let M = new Float64Array(k.memory.buffer);
  M.fill(0, 0, outAt);
  for (let i = 0; i < n; i++) {
    const q = (i >> 2) * 4 * d + (i & 3);
    const t = i * 4 + xtAt;
    const xo = i * d;
    for (let j = 0; j < d; j++) {
      const v = X[xo + j];
      M[xqAt + q + 4 * j] = v;
      M[t + (j >> 2) * 4 * n + (j & 3)] = v;
    }
  }
  // Another user of this thread's kernel may have grown (and so replaced) the memory meanwhile.
  const view = () => (M.buffer === k.memory.buffer ? M : (M = new Float64Array(k.memory.buffer)));
  return {
    logits(Wt, out) {
      const m = view();
      for (let c = 0; c < K; c++) {
        const b = wAt + (c >> 2) * 4 * d + (c & 3);
        const wo = c * d;
        for (let j = 0; j < d; j++) m[b + 4 * j] = Wt[wo + j];
      }
      for (let q = 0; q < nq; q++) {
        k.dots((xqAt + q * 4 * d) * 8, wAt * 8, kq, d, outAt * 8, 0, 0);
        const rows = Math.min(4, n - 4 * q);
        for (let r = 0; r < rows; r++) {
          const src = outAt + r * OUT_STRIDE;
          const dst = (4 * q + r) * K;
          for (let c = 0; c < K; c++) out[dst + c] = m[src + c];
        }
      }
    },
    gradient(R, g) {
      const m = view();
      for (let i = 0; i < n; i++) {
        const o = i * K;
        for (let c = 0; c < K; c++) m[rAt + (c >> 2) * 4 * n + 4 * i + (c & 3)] = R[o + c];
      }
      const perCall = OUT_STRIDE / 4;
      for (let cq = 0; cq < kq; cq++) {
        for (let b0 = 0; b0 < dq; b0 += perCall) {
          const nb = Math.min(perCall, dq - b0);
          k.dots((rAt + cq * 4 * n) * 8, (xtAt + b0 * 4 * n) * 8, nb, n, outAt * 8, 0, 0);
          const cls = Math.min(4, K - 4 * cq);
          const j0 = 4 * b0;
          const w = Math.min(4 * nb, d - j0);
          for (let r = 0; r < cls; r++) {
            const src = outAt + r * OUT_STRIDE;
            const dst = (4 * cq + r) * d + j0;
            for (let j = 0; j < w; j++) g[dst + j] = m[src + j];
          }
        }
      }
    },
  };
}
