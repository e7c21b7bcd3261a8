/**
 * The probe's in-fold PCA from the Gram matrix (src/cluster/probecv.ts, Block.gram): the
 * randomized PCA of src/cluster/pca.ts for a fold's training rows, computed from X Xᵀ instead
 * of X, and the packed products it runs on.
 */
import { dotKernel } from '../util/dot-simd.js';
import { jacobiEigen, orthonormalize } from './linalg.js';
import { mulXBRows, mulXtBCols, productByQuads } from './pca.js';

/**
 * The randomized PCA of pcaSteps for the training rows `train` of X [*, d], with the rows
 * `train` and `test` projected on its top k components, computed from the Gram matrix
 * K = X Xᵀ of all rows (`gram` [n, n], at least its upper triangle j ≥ i, as gramRows writes it;
 * `full`: both triangles are filled, so no symmetric copy is made) instead of from X: with Xc the
 * centred training rows, Kc = Xc Xcᵀ is K double-centred (K_ij − r_i − r_j + s, r_i = x_i·μ,
 * s = μ·μ, all from K), and every step of the sketch is
 *   Q₀ = orth(Xc Ω),  Q ← orth(Xc Xcᵀ Q) = orth(Kc Q)  (each power iteration),
 *   B Bᵀ = Qᵀ Xc Xcᵀ Q = Qᵀ Kc Q,   rows on the components: Xc V = Kc Q U S⁻¹,
 *   test rows: (z − μ) V = Kc(test, train) Q U S⁻¹,
 * (orth: the Q factor of a QR, which Xcᵀ's orthonormalization R⁻¹ between the two products does
 * not change), the same subspace and the same components as pcaSteps up to rounding; signs as
 * fixSigns leaves them (each column of Q U S's largest-magnitude entry positive). Only Q₀ needs
 * X: `XOmega` [n, l] = X Ω for all rows (Ω drawn as pcaSteps draws it from `seed`, see
 * sketchOmega). An [m, m] product costs m² l against pcaSteps' 2 m d l per power iteration, so
 * this pays when the training rows are fewer than about 2d.
 *
 * Every value is formed by the same operations in the same order as the first version of this
 * function (kept as test/cluster/reference/gram-pca-before.ts), so the results are bit for bit
 * the same; only the memory order changed: the Gram entries are read along rows of a symmetric
 * copy, Kc and Kc(test, train) are written once in the dot kernel's packed layout (packedRows)
 * instead of being repacked for each of their products, and Qᵀ Kc Q and the projections on U run
 * in the kernel (each a sum in the same index order as the loops they replace).
 */
export function gramPcaProject(gram: Float64Array, n: number, XOmega: Float64Array, l: number, train: Int32Array,
  test: Int32Array, k: number, powerIterations = 2, full = false): { tr: Float64Array; te: Float64Array; k: number }
{
  const m = train.length;
  const mt = test.length;
  k = Math.max(1, Math.min(k, l));
  const S = full ? gram : symmetricGram(gram, n);
  // r_i = x_i · μ (every row of the training and the test part, summed in training order), s = μ · μ
  const r = (i: number) => {
    let v = 0;
    const o = i * n;
    for (let t = 0; t < m; t++) v += S[o + train[t]];
    return v / m;
  };
  const rTr = Float64Array.from(train, r);
  const rTe = Float64Array.from(test, r);
  let s = 0;
  for (let t = 0; t < m; t++) s += rTr[t];
  s /= m;
  // Kc: entry (a, b) with a ≤ b is K − r_a − r_b + s, and (b, a) the same value (the upper
  // triangle's, mirrored): along row a, the entries left of the diagonal subtract r_b first
  const Kc = packedRows(m, m, (a, row) => {
    const o = train[a] * n;
    const ra = rTr[a];
    for (let b = 0; b < a; b++) row[b] = S[o + train[b]] - rTr[b] - ra + s;
    for (let b = a; b < m; b++) row[b] = S[o + train[b]] - ra - rTr[b] + s;
  });
  const Ks = packedRows(mt, m, (a, row) => {
    const o = test[a] * n;
    const ra = rTe[a];
    for (let b = 0; b < m; b++) row[b] = S[o + train[b]] - ra - rTr[b] + s;
  });
  // Q₀ = orth(Xc Ω) = orth(X_train Ω − 1 (μᵀ Ω))
  const muO = new Float64Array(l);
  for (let t = 0; t < m; t++) for (let c = 0; c < l; c++) muO[c] += XOmega[train[t] * l + c];
  for (let c = 0; c < l; c++) muO[c] /= m;
  let Q = new Float64Array(m * l);
  for (let t = 0; t < m; t++) for (let c = 0; c < l; c++) Q[t * l + c] = XOmega[train[t] * l + c] - muO[c];
  orthonormalize(Q, m, l);
  const mul = (A: Float64Array, rows: number, B: Float64Array, cols: number) => {
    const out = new Float64Array(rows * cols);
    mulPackedRows(A, m, B, cols, out, rows);
    return out;
  };
  for (let it = 0; it < powerIterations; it++) {
    Q = mul(Kc, m, Q, l);
    orthonormalize(Q, m, l);
  }
  const KQ = mul(Kc, m, Q, l);
  // Qᵀ Kc Q: G[a, b] = Σ_t Q[t, a] · KQ[t, b] in t order; the upper triangle, mirrored
  const G = new Float64Array(l * l);
  mulXtBCols(Q, m, l, KQ, l, G, 0, l);
  for (let a = 0; a < l; a++) for (let b = 0; b < a; b++) G[a * l + b] = G[b * l + a];
  const { values, vectors } = jacobiEigen(G, l);
  const KsQ = mul(Ks, mt, Q, l);
  // U's first k columns [l, k]; Q U, Kc Q U and Kc(test, train) Q U as sums over the sketch's columns in order
  const U = new Float64Array(l * k);
  for (let a = 0; a < l; a++) for (let c = 0; c < k; c++) U[a * k + c] = vectors[a * l + c];
  const byU = (A: Float64Array, rows: number) => {
    const out = new Float64Array(rows * k);
    mulXBRows(A, l, U, k, out, 0, rows);
    return out;
  };
  const QU = byU(Q, m);
  const tr = byU(KQ, m);
  const te = byU(KsQ, mt);
  for (let c = 0; c < k; c++) {
    const sv = Math.sqrt(Math.max(values[c], 0));
    if (!(sv > 0)) {
      for (let i = 0; i < m; i++) tr[i * k + c] = 0;
      for (let i = 0; i < mt; i++) te[i * k + c] = 0;
      continue;
    }
    // the sign fixSigns gives: the largest-magnitude entry of the score column Q U s positive
    let best = 0;
    for (let i = 0; i < m; i++) {
      const v = QU[i * k + c] * sv;
      if (Math.abs(v) > Math.abs(best)) best = v;
    }
    const scale = (best < 0 ? -1 : 1) / sv;
    for (let i = 0; i < m; i++) tr[i * k + c] *= scale;
    for (let i = 0; i < mt; i++) te[i * k + c] *= scale;
  }
  return { tr, te, k };
}

/** Symmetric copies of upper-triangular Gram matrices (this thread's, one per matrix). */
const symmetric = new WeakMap<Float64Array, Float64Array>();

/** `gram` [n, n] with its lower triangle filled from its upper one (a copy, made once per matrix and thread). */
export function symmetricGram(gram: Float64Array, n: number): Float64Array {
  let S = symmetric.get(gram);
  if (!S) {
    S = symmetricCopy(gram, n, new Float64Array(n * n));
    symmetric.set(gram, S);
  }
  return S;
}

/** `gram`'s upper triangle [n, n] into `out`, mirrored into its lower one; returns `out`. */
export function symmetricCopy(gram: Float64Array, n: number, out: Float64Array): Float64Array {
  out.set(gram.subarray(0, n * n));
  // in tiles, so that the column reads stay in cache
  const T = 64;
  for (let i0 = 0; i0 < n; i0 += T)
    for (let j0 = 0; j0 <= i0; j0 += T)
      for (let i = i0; i < Math.min(i0 + T, n); i++)
        for (let j = j0; j < Math.min(j0 + T, i); j++) out[i * n + j] = gram[j * n + i];
  return out;
}

/**
 * A [rows, len] matrix in the dot kernel's packed row layout, rows in quads [⌈rows/4⌉][len][4]
 * (zero rows pad the last quad), each row written by `fill(a, row)` into a scratch row.
 */
export function packedRows(rows: number, len: number, fill: (a: number, row: Float64Array) => void): Float64Array {
  const P = new Float64Array(Math.ceil(rows / 4) * 4 * len);
  const row = new Float64Array(len);
  for (let a = 0; a < rows; a++) {
    fill(a, row);
    const o = (a >> 2) * 4 * len + (a & 3);
    for (let b = 0; b < len; b++) P[o + 4 * b] = row[b];
  }
  return P;
}

/**
 * out [rows, l] (zeroed) = A · B for A [rows, len] packed by packedRows and B [len, l]: each
 * output the sum over j of A[i, j] · B[j, c] in j order, as mulXBRows computes it from the
 * unpacked rows (bit for bit); the quads are copied to the kernel as they are.
 */
export function mulPackedRows(P: Float64Array, len: number, B: Float64Array, l: number, out: Float64Array,
  rows: number): void
{
  const k = dotKernel();
  const quad = (M: Float64Array, at: number, q: number) => M.set(P.subarray(q * len, (q + 4) * len), at);
  if (!k || rows <= 0 || len <= 0 || !productByQuads(k, len, B, l, out, 0, rows, quad))
    mulPackedRowsJs(P, len, B, l, out, rows);
}

/** The JavaScript loop of mulPackedRows (one product per j, in order, as mulXBRowsJs). */
export function mulPackedRowsJs(P: Float64Array, len: number, B: Float64Array, l: number, out: Float64Array,
  rows: number): void
{
  for (let i = 0; i < rows; i++) {
    const po = (i >> 2) * 4 * len + (i & 3);
    const oo = i * l;
    for (let j = 0; j < len; j++) {
      const x = P[po + 4 * j];
      const bo = j * l;
      for (let c = 0; c < l; c++) out[oo + c] += x * B[bo + c];
    }
  }
}
