/**
 * PCA of a sparse matrix (the token counts: each item holds a few dozen of thousands of ids),
 * by the same seeded randomized SVD as src/cluster/pca.ts, without ever forming the centred
 * dense matrix: with the column means μ,
 *   Xc · B = X · B − 1 (μᵀ B)      and      Xcᵀ · B = Xᵀ · B − μ (1ᵀ B),
 * so every product costs O(nnz · l) instead of O(n · d · l). The Gaussian sketch is drawn in the
 * same order as the dense PCA's, so both find the same subspace up to rounding.
 */
import { Rng } from '../util/rng.js';
import { orthonormalize } from './linalg.js';
import { sketchComponents, sketchEigen } from './pca.js';

/** Compressed sparse rows [n, d]. */
export interface Csr {
  n: number;
  d: number;
  ptr: Int32Array;
  idx: Int32Array;
  val: Float64Array;
}

/** Rows `rows` of the dense X [*, d] as CSR (exact zeros left out). */
export function csrRows(X: Float64Array | Float32Array, d: number, rows: Int32Array): Csr {
  let nnz = 0;
  for (const r of rows) for (let j = 0; j < d; j++) if (X[r * d + j] !== 0) nnz++;
  const ptr = new Int32Array(rows.length + 1);
  const idx = new Int32Array(nnz);
  const val = new Float64Array(nnz);
  let t = 0;
  rows.forEach((r, i) => {
    for (let j = 0; j < d; j++) {
      const v = X[r * d + j];
      if (v !== 0) {
        idx[t] = j;
        val[t++] = v;
      }
    }
    ptr[i + 1] = t;
  });
  return { n: rows.length, d, ptr, idx, val };
}

/** Xc · B for B [d, l]: [n, l]. */
function mulCentred(A: Csr, mean: Float64Array, B: Float64Array, l: number): Float64Array {
  const out = new Float64Array(A.n * l);
  const mB = new Float64Array(l);
  for (let j = 0; j < A.d; j++) for (let c = 0; c < l; c++) mB[c] += mean[j] * B[j * l + c];
  for (let i = 0; i < A.n; i++) {
    const o = i * l;
    for (let t = A.ptr[i]; t < A.ptr[i + 1]; t++) {
      const v = A.val[t];
      const bo = A.idx[t] * l;
      for (let c = 0; c < l; c++) out[o + c] += v * B[bo + c];
    }
    for (let c = 0; c < l; c++) out[o + c] -= mB[c];
  }
  return out;
}

/** Xcᵀ · Q for Q [n, l]: [d, l]. */
function mulCentredT(A: Csr, mean: Float64Array, Q: Float64Array, l: number): Float64Array {
  const out = new Float64Array(A.d * l);
  const colSum = new Float64Array(l);
  for (let i = 0; i < A.n; i++) {
    const qo = i * l;
    for (let c = 0; c < l; c++) colSum[c] += Q[qo + c];
    for (let t = A.ptr[i]; t < A.ptr[i + 1]; t++) {
      const v = A.val[t];
      const o = A.idx[t] * l;
      for (let c = 0; c < l; c++) out[o + c] += v * Q[qo + c];
    }
  }
  for (let j = 0; j < A.d; j++) for (let c = 0; c < l; c++) out[j * l + c] -= mean[j] * colSum[c];
  return out;
}

/** The top k components [d, k] and the column means of a sparse matrix (randomized SVD, as pca()). */
export function pcaCsr(A: Csr, k: number, seed = 0, powerIterations = 2,
  oversample = 10): { k: number; mean: Float64Array; components: Float64Array }
{
  const { n, d } = A;
  k = Math.max(1, Math.min(k, n, d));
  const l = Math.min(k + oversample, n, d);
  const rng = new Rng(seed);
  const mean = new Float64Array(d);
  for (let t = 0; t < A.ptr[n]; t++) mean[A.idx[t]] += A.val[t];
  for (let j = 0; j < d; j++) mean[j] /= n;
  const omega = new Float64Array(d * l);
  for (let i = 0; i < omega.length; i++) omega[i] = rng.normal();
  let Q = mulCentred(A, mean, omega, l);
  orthonormalize(Q, n, l);
  for (let it = 0; it < powerIterations; it++) {
    const Z = mulCentredT(A, mean, Q, l);
    orthonormalize(Z, d, l);
    Q = mulCentred(A, mean, Z, l);
    orthonormalize(Q, n, l);
  }
  const Zt = mulCentredT(A, mean, Q, l);
  const { values, vectors } = sketchEigen(Zt, d, l);
  const components = sketchComponents(Zt, d, l, k, values, vectors);
  return { k, mean, components };
}

/** Sparse rows projected on components: (x − mean) · components, [n, k]. */
export function csrProject(A: Csr, p: { k: number; mean: Float64Array; components: Float64Array }): Float64Array {
  return mulCentred(A, p.mean, p.components, p.k);
}
