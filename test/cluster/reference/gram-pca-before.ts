/**
 * The in-fold PCA from the Gram matrix as it was written before its loops were reorganized for
 * speed (src/cluster/pca-gram.ts gramPcaProject; src/cluster/pca.ts at commit e7b2f58): every value by
 * closures over the upper triangle, every small product in a JavaScript loop. The tests compare
 * the current function with this one bit for bit (test/cluster/pca-gram-exact.test.ts).
 */
import { jacobiEigen, orthonormalize } from '../../../src/cluster/linalg.js';
import { mulXBRows } from '../../../src/cluster/pca.js';

export function gramPcaProjectBefore(gram: Float64Array, n: number, XOmega: Float64Array, l: number, train: Int32Array,
  test: Int32Array, k: number, powerIterations = 2): { tr: Float64Array; te: Float64Array; k: number }
{
  const m = train.length;
  const mt = test.length;
  k = Math.max(1, Math.min(k, l));
  const at = (i: number, j: number) => (i <= j ? gram[i * n + j] : gram[j * n + i]);
  // r_i = x_i · μ (every row of the training and the test part), s = μ · μ
  const r = (i: number) => {
    let v = 0;
    for (let t = 0; t < m; t++) v += at(i, train[t]);
    return v / m;
  };
  const rTr = Float64Array.from(train, r);
  const rTe = Float64Array.from(test, r);
  let s = 0;
  for (let t = 0; t < m; t++) s += rTr[t];
  s /= m;
  const Kc = new Float64Array(m * m);
  for (let a = 0; a < m; a++) {
    const ia = train[a];
    for (let b = a; b < m; b++) {
      const v = at(ia, train[b]) - rTr[a] - rTr[b] + s;
      Kc[a * m + b] = v;
      Kc[b * m + a] = v;
    }
  }
  const Ks = new Float64Array(mt * m);
  for (let a = 0; a < mt; a++) for (let b = 0; b < m; b++) Ks[a * m + b] = at(test[a], train[b]) - rTe[a] - rTr[b] + s;
  // Q₀ = orth(Xc Ω) = orth(X_train Ω − 1 (μᵀ Ω))
  const muO = new Float64Array(l);
  for (let t = 0; t < m; t++) for (let c = 0; c < l; c++) muO[c] += XOmega[train[t] * l + c];
  for (let c = 0; c < l; c++) muO[c] /= m;
  let Q = new Float64Array(m * l);
  for (let t = 0; t < m; t++) for (let c = 0; c < l; c++) Q[t * l + c] = XOmega[train[t] * l + c] - muO[c];
  orthonormalize(Q, m, l);
  const mulK = (A: Float64Array, rows: number, B: Float64Array) => {
    const out = new Float64Array(rows * l);
    mulXBRows(A, m, B, l, out, 0, rows);
    return out;
  };
  for (let it = 0; it < powerIterations; it++) {
    Q = mulK(Kc, m, Q);
    orthonormalize(Q, m, l);
  }
  const KQ = mulK(Kc, m, Q);
  // Qᵀ Kc Q (upper triangle, mirrored)
  const G = new Float64Array(l * l);
  for (let t = 0; t < m; t++) {
    const o = t * l;
    for (let a = 0; a < l; a++) {
      const v = Q[o + a];
      if (v === 0) continue;
      for (let b = a; b < l; b++) G[a * l + b] += v * KQ[o + b];
    }
  }
  for (let a = 0; a < l; a++) for (let b = 0; b < a; b++) G[a * l + b] = G[b * l + a];
  const { values, vectors } = jacobiEigen(G, l);
  const KsQ = mulK(Ks, mt, Q);
  const tr = new Float64Array(m * k);
  const te = new Float64Array(mt * k);
  const project = (A: Float64Array, rows: number, out: Float64Array, c: number, scale: number) => {
    for (let i = 0; i < rows; i++) {
      let acc = 0;
      const o = i * l;
      for (let a = 0; a < l; a++) acc += A[o + a] * vectors[a * l + c];
      out[i * k + c] = acc * scale;
    }
  };
  for (let c = 0; c < k; c++) {
    const sv = Math.sqrt(Math.max(values[c], 0));
    if (!(sv > 0)) continue;
    // the sign fixSigns gives: the largest-magnitude entry of the score column Q U s positive
    let best = 0;
    for (let i = 0; i < m; i++) {
      let acc = 0;
      const o = i * l;
      for (let a = 0; a < l; a++) acc += Q[o + a] * vectors[a * l + c];
      const v = acc * sv;
      if (Math.abs(v) > Math.abs(best)) best = v;
    }
    const scale = (best < 0 ? -1 : 1) / sv;
    project(KQ, m, tr, c, scale);
    project(KsQ, mt, te, c, scale);
  }
  return { tr, te, k };
}
