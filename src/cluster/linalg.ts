/**
 * Dense linear algebra of the PCA (src/cluster/pca.ts) and the sparse PCA (pca-sparse.ts):
 * in-place orthonormalization of the columns of a matrix and the symmetric eigendecomposition
 * of the small sketch matrices.
 */
import { dotKernel, OUT_STRIDE } from '../util/dot-simd.js';

/**
 * In-place orthonormalization of the columns of A [rows, cols] by Cholesky QR applied twice
 * (row-wise passes, cache friendly); falls back to modified Gram–Schmidt when the Gram
 * matrix is not numerically positive definite.
 */
export function orthonormalize(A: Float64Array, rows: number, cols: number): void {
  for (let pass = 0; pass < 2; pass++) {
    const G = gramUpper(A, rows, cols);
    // Cholesky G = Rᵀ R (upper R stored in G's upper triangle)
    let ok = true;
    const R = new Float64Array(cols * cols);
    for (let j = 0; j < cols && ok; j++) {
      let s = G[j * cols + j];
      for (let t = 0; t < j; t++) s -= R[t * cols + j] * R[t * cols + j];
      if (!(s > 1e-12 * (G[j * cols + j] || 1))) {
        ok = false;
        break;
      }
      const rjj = Math.sqrt(s);
      R[j * cols + j] = rjj;
      for (let c = j + 1; c < cols; c++) {
        let v = G[j * cols + c];
        for (let t = 0; t < j; t++) v -= R[t * cols + j] * R[t * cols + c];
        R[j * cols + c] = v / rjj;
      }
    }
    if (!ok) {
      gramSchmidt(A, rows, cols);
      return;
    }
    solveUpperRows(A, rows, cols, R);
  }
}

/**
 * The upper triangle of Aᵀ A [cols, cols] for A [rows, cols]: G[a, b] = Σ_r A[r, a] · A[r, b]
 * summed in row order, in the dot kernel when it is available (gramUpperKernel), else in
 * gramUpperJs; the two give the same sums bit for bit.
 */
export function gramUpper(A: Float64Array, rows: number, cols: number): Float64Array {
  return gramUpperKernel(A, rows, cols) ?? gramUpperJs(A, rows, cols);
}

/**
 * gramUpper in the dot kernel (src/util/dot-simd.ts): the columns of A packed in quads
 * [⌈cols/4⌉][rows][4] (zero columns pad the last), each quad of columns against the quads from
 * its own on; every entry is a product per row added in row order from +0, as in gramUpperJs.
 * Null when the kernel is unavailable or its memory cannot hold the packed columns.
 */
function gramUpperKernel(A: Float64Array, rows: number, cols: number): Float64Array | null {
  const k = dotKernel();
  if (!k || rows === 0 || cols === 0) return null;
  const nb = Math.ceil(cols / 4);
  const outAt = nb * 4 * rows;
  if (!k.ensure((outAt + 4 * OUT_STRIDE) * 8)) return null;
  const M = new Float64Array(k.memory.buffer);
  M.fill(0, 0, outAt);
  for (let i = 0; i < rows; i++) {
    const o = i * cols;
    for (let c = 0; c < cols; c++) M[(c >> 2) * 4 * rows + 4 * i + (c & 3)] = A[o + c];
  }
  const G = new Float64Array(cols * cols);
  const perCall = OUT_STRIDE / 4;
  for (let q = 0; q < nb; q++) {
    for (let b0 = q; b0 < nb; b0 += perCall) {
      const blocks = Math.min(perCall, nb - b0);
      k.dots(q * 4 * rows * 8, b0 * 4 * rows * 8, blocks, rows, outAt * 8, 0, 0);
      for (let r = 0; r < 4; r++) {
        const a = 4 * q + r;
        if (a >= cols) break;
        for (let b = Math.max(a, 4 * b0); b < Math.min(cols, 4 * (b0 + blocks)); b++)
          G[a * cols + b] = M[outAt + r * OUT_STRIDE + b - 4 * b0];
      }
    }
  }
  return G;
}

/**
 * gramUpper's JavaScript loop: four rows per pass over G (each entry still takes its rows'
 * products one at a time in row order, so the sums are those of one row at a time, bit for bit:
 * a zero entry adds an exact zero, which leaves a sum that starts at +0 unchanged).
 */
export function gramUpperJs(A: Float64Array, rows: number, cols: number): Float64Array {
  const G = new Float64Array(cols * cols);
  let r = 0;
  for (; r + 4 <= rows; r += 4) {
    const o0 = r * cols;
    const o1 = o0 + cols;
    const o2 = o1 + cols;
    const o3 = o2 + cols;
    for (let a = 0; a < cols; a++) {
      const v0 = A[o0 + a];
      const v1 = A[o1 + a];
      const v2 = A[o2 + a];
      const v3 = A[o3 + a];
      const go = a * cols;
      for (let b = a; b < cols; b++) {
        let g = G[go + b];
        g += v0 * A[o0 + b];
        g += v1 * A[o1 + b];
        g += v2 * A[o2 + b];
        g += v3 * A[o3 + b];
        G[go + b] = g;
      }
    }
  }
  for (; r < rows; r++) {
    const o = r * cols;
    for (let a = 0; a < cols; a++) {
      const v = A[o + a];
      if (v === 0) continue;
      for (let b = a; b < cols; b++) G[a * cols + b] += v * A[o + b];
    }
  }
  return G;
}

/**
 * A ← A R⁻¹ for upper-triangular R: each row x solves x R = a by forward substitution over the
 * columns. Four rows at a time (each row's operations in the order of one row alone).
 */
function solveUpperRows(A: Float64Array, rows: number, cols: number, R: Float64Array): void {
  let r = 0;
  for (; r + 4 <= rows; r += 4) {
    const o0 = r * cols;
    const o1 = o0 + cols;
    const o2 = o1 + cols;
    const o3 = o2 + cols;
    for (let c = 0; c < cols; c++) {
      let v0 = A[o0 + c];
      let v1 = A[o1 + c];
      let v2 = A[o2 + c];
      let v3 = A[o3 + c];
      for (let t = 0; t < c; t++) {
        const rt = R[t * cols + c];
        v0 -= A[o0 + t] * rt;
        v1 -= A[o1 + t] * rt;
        v2 -= A[o2 + t] * rt;
        v3 -= A[o3 + t] * rt;
      }
      const rcc = R[c * cols + c];
      A[o0 + c] = v0 / rcc;
      A[o1 + c] = v1 / rcc;
      A[o2 + c] = v2 / rcc;
      A[o3 + c] = v3 / rcc;
    }
  }
  for (; r < rows; r++) {
    const o = r * cols;
    for (let c = 0; c < cols; c++) {
      let v = A[o + c];
      for (let t = 0; t < c; t++) v -= A[o + t] * R[t * cols + c];
      A[o + c] = v / R[c * cols + c];
    }
  }
}

/** Modified Gram–Schmidt (twice) on the columns of A [rows, cols]. */
function gramSchmidt(A: Float64Array, rows: number, cols: number): void {
  for (let pass = 0; pass < 2; pass++) {
    for (let c = 0; c < cols; c++) {
      for (let p = 0; p < c; p++) {
        let dot = 0;
        for (let r = 0; r < rows; r++) dot += A[r * cols + c] * A[r * cols + p];
        for (let r = 0; r < rows; r++) A[r * cols + c] -= dot * A[r * cols + p];
      }
      let norm = 0;
      for (let r = 0; r < rows; r++) norm += A[r * cols + c] * A[r * cols + c];
      norm = Math.sqrt(norm);
      if (norm < 1e-300) {
        for (let r = 0; r < rows; r++) A[r * cols + c] = 0;
      } else {
        for (let r = 0; r < rows; r++) A[r * cols + c] /= norm;
      }
    }
  }
}

/**
 * Eigendecomposition of a symmetric matrix [m, m] by cyclic Jacobi rotations.
 * Returns eigenvalues in decreasing order and eigenvectors as columns of `vectors` [m, m].
 */
export function jacobiEigen(S: Float64Array, m: number): { values: Float64Array; vectors: Float64Array } {
  const A = Float64Array.from(S);
  const V = new Float64Array(m * m);
  for (let i = 0; i < m; i++) V[i * m + i] = 1;
  let scale = 0;
  for (let i = 0; i < m * m; i++) scale += A[i] * A[i];
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let p = 0; p < m; p++) for (let r = p + 1; r < m; r++) off += A[p * m + r] * A[p * m + r];
    if (off <= 1e-30 * scale || off === 0) break;
    for (let p = 0; p < m; p++) {
      for (let r = p + 1; r < m; r++) {
        const apr = A[p * m + r];
        if (Math.abs(apr) < 1e-300) continue;
        const app = A[p * m + p];
        const arr = A[r * m + r];
        const theta = (arr - app) / (2 * apr);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < m; k++) {
          const akp = A[k * m + p];
          const akr = A[k * m + r];
          A[k * m + p] = c * akp - s * akr;
          A[k * m + r] = s * akp + c * akr;
        }
        for (let k = 0; k < m; k++) {
          const apk = A[p * m + k];
          const ark = A[r * m + k];
          A[p * m + k] = c * apk - s * ark;
          A[r * m + k] = s * apk + c * ark;
        }
        for (let k = 0; k < m; k++) {
          const vkp = V[k * m + p];
          const vkr = V[k * m + r];
          V[k * m + p] = c * vkp - s * vkr;
          V[k * m + r] = s * vkp + c * vkr;
        }
      }
    }
  }
  const order = Array.from({ length: m }, (_, i) => i).sort((a, b) => A[b * m + b] - A[a * m + a] || a - b);
  const values = new Float64Array(m);
  const vectors = new Float64Array(m * m);
  order.forEach((src, dst) => {
    values[dst] = A[src * m + src];
    for (let k = 0; k < m; k++) vectors[k * m + dst] = V[k * m + src];
  });
  return { values, vectors };
}
