/**
 * Linear probe: multinomial logistic regression with an L2 penalty, fitted by L-BFGS
 * (deterministic), evaluated by (repeated) stratified k-fold cross-validation. The CV loop is in
 * src/cluster/probecv.ts.
 *
 * Objective (scikit-learn's LogisticRegression convention, C = 1 by default):
 *   Σ_i s_i · −log softmax(W x_i + b)_{y_i}  +  ‖W‖² / (2C)      (the bias is not penalized)
 * with sample weights s_i (1, or the class weights n / (K · n_c) of class_weight='balanced').
 */
import { Rng } from '../util/rng.js';
import { logisticObjective } from './logistic.js';

export interface ProbeOptions {
  /** Folds (default 5; lowered to the smallest class size, at least 2). */
  folds?: number;
  /** Inverse regularization strength when there is no `cGrid` (default 1). */
  C?: number;
  /**
   * C chosen by nested CV inside each training fold over these values (stratified
   * `innerFolds`-fold CV, highest `cScore`, ties to the earlier value); none: `C` throughout.
   */
  cGrid?: number[];
  /** The score the inner CV chooses C by: 'balancedAccuracy' (default: the score the probe reports) or 'accuracy'. */
  cScore?: 'balancedAccuracy' | 'accuracy';
  /** Folds of the inner CV that chooses C (default 3). */
  innerFolds?: number;
  /** 'balanced': sample weights n / (K · n_c) of the training fold's class counts. */
  classWeight?: 'balanced' | null;
  /** Principal components of each feature block fitted inside each training fold (0 or absent: none). */
  pca?: number;
  /**
   * The group of each sample (0..G-1; e.g. its SocialEval world tree): the folds keep every
   * group whole (stratifiedGroupFolds), the inner folds that choose C too, so no item is tested
   * beside a sibling it was trained on. Absent: items are folded one by one.
   */
  groups?: Int32Array;
  /** Repeats of the k-fold CV with different fold seeds (default 1; repeat r uses seed + r). */
  repeats?: number;
  /** L-BFGS iterations at most (default 100). */
  maxIter?: number;
  seed?: number;
}

/** Stratified fold of each sample: within each class, shuffled (seeded) and dealt round-robin. */
export function stratifiedFolds(labels: Int32Array, nClasses: number, folds: number, seed: number): Int32Array {
  const rng = new Rng(seed);
  const fold = new Int32Array(labels.length);
  let offset = 0;
  for (let c = 0; c < nClasses; c++) {
    const idx: number[] = [];
    for (let i = 0; i < labels.length; i++) if (labels[i] === c) idx.push(i);
    rng.shuffle(idx);
    idx.forEach((i, t) => (fold[i] = (t + offset) % folds));
    offset += idx.length;
  }
  return fold;
}

/**
 * Stratified group folds (scikit-learn's StratifiedGroupKFold): every group's items go to one
 * fold, and the folds' class proportions are kept as even as the groups allow. `groups` holds a
 * group index per sample (0..G-1). The groups are taken in order of the spread (population sd)
 * of their class counts, largest first (a stable sort; with `seed` not null, of a seeded shuffle
 * of the groups first, as StratifiedGroupKFold(shuffle=True) does with its own generator), and
 * each goes to the fold that, with it, has the smallest mean over classes of the sd over folds of
 * the fold's share of the class; ties (within numpy's isclose) go to the fold with fewer items,
 * then the first. With `seed` null the folds are scikit-learn's (shuffle=False) exactly, given
 * groups and classes numbered in sorted order of their values.
 */
export function stratifiedGroupFolds(labels: Int32Array, groups: Int32Array, nClasses: number, folds: number,
  seed: number | null): Int32Array
{
  const n = labels.length;
  let G = 0;
  for (let i = 0; i < n; i++) G = Math.max(G, groups[i] + 1);
  const K = nClasses;
  const counts = new Float64Array(G * K);
  const total = new Float64Array(K);
  for (let i = 0; i < n; i++) {
    counts[groups[i] * K + labels[i]]++;
    total[labels[i]]++;
  }
  const sd = (len: number, at: (i: number) => number) => {
    let m = 0;
    for (let i = 0; i < len; i++) m += at(i);
    m /= len;
    let ss = 0;
    for (let i = 0; i < len; i++) ss += (at(i) - m) ** 2;
    return Math.sqrt(ss / len);
  };
  const order = Array.from({ length: G }, (_, g) => g);
  if (seed !== null) new Rng(seed).shuffle(order);
  const spread = Float64Array.from({ length: G }, (_, g) => sd(K, (c) => counts[g * K + c]));
  // a stable sort by decreasing spread (numpy's argsort(-spread, kind='mergesort'))
  const ranked = order.map((g, pos) => ({ g, pos })).sort((a, b) => spread[b.g] - spread[a.g] || a.pos - b.pos).map((
    x,
  ) => x.g);
  const perFold = new Float64Array(folds * K);
  const size = new Float64Array(folds);
  const foldOf = new Int32Array(G);
  const share = (f: number, c: number) => (total[c] > 0 ? perFold[f * K + c] / total[c] : 0);
  for (const g of ranked) {
    let best = -1;
    let bestEval = Infinity;
    let bestSize = Infinity;
    for (let f = 0; f < folds; f++) {
      for (let c = 0; c < K; c++) perFold[f * K + c] += counts[g * K + c];
      let ev = 0;
      for (let c = 0; c < K; c++) ev += sd(folds, (h) => share(h, c));
      ev /= K;
      for (let c = 0; c < K; c++) perFold[f * K + c] -= counts[g * K + c];
      const close = Math.abs(ev - bestEval) <= 1e-8 + 1e-5 * Math.abs(bestEval);
      if (ev < bestEval || (close && size[f] < bestSize)) {
        best = f;
        bestEval = ev;
        bestSize = size[f];
      }
    }
    foldOf[g] = best;
    for (let c = 0; c < K; c++) perFold[best * K + c] += counts[g * K + c];
    size[best] += counts.subarray(g * K, g * K + K).reduce((a, v) => a + v, 0);
  }
  return Int32Array.from(groups, (g) => foldOf[g]);
}

export interface FitResult {
  /** Weights [(d + 1), C]: rows 0..d-1 features, row d bias. */
  W: Float64Array;
  iterations: number;
}

/**
 * Fit multinomial logistic regression on X [n, d] (already standardized).
 *
 * Stops when the largest gradient entry is below tol·max(1, loss) or the loss changes by less
 * than 1e-3·tol relative (tol default 1e-4: far tighter than argmax predictions need). `start`
 * (same layout as the result) starts L-BFGS there instead of at zero (the cross-validation never
 * does: every fit starts cold, so no fold sees a solution trained on its own test items).
 */
export function fitLogistic(X: Float64Array, n: number, d: number, y: Int32Array, C: number, nClasses: number,
  maxIter = 200, tol = 1e-4, start?: Float64Array, useKernel = true, sampleWeights?: Float64Array): FitResult
{
  const K = nClasses;
  const bo = K * d;
  // Weights class-major inside the solver ([K][d], then the K biases; see logistic.ts).
  const f = logisticObjective(X, n, d, y, K, 1 / C, useKernel, sampleWeights);
  const Wt = new Float64Array((d + 1) * K);
  if (start) {
    for (let j = 0; j <= d; j++) for (let c = 0; c < K; c++) Wt[j < d ? c * d + j : bo + c] = start[j * K + c];
  }
  const iterations = lbfgs(f, Wt, maxIter, 10, tol);
  // back to the feature-major layout of FitResult
  const W = new Float64Array((d + 1) * K);
  for (let j = 0; j <= d; j++) for (let c = 0; c < K; c++) W[j * K + c] = Wt[j < d ? c * d + j : bo + c];
  return { W, iterations };
}

/** Predicted class for each row of X. */
export function predictLogistic(W: Float64Array, X: Float64Array, n: number, d: number, K: number): Int32Array {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let best = -Infinity;
    let arg = 0;
    for (let c = 0; c < K; c++) {
      let s = W[d * K + c];
      for (let j = 0; j < d; j++) s += X[i * d + j] * W[j * K + c];
      if (s > best) {
        best = s;
        arg = c;
      }
    }
    out[i] = arg;
  }
  return out;
}

/** Minimize f (returns loss, fills gradient) from x in place; returns iterations used. */
export function lbfgs(f: (x: Float64Array, g: Float64Array) => number, x: Float64Array, maxIter: number, mem = 10,
  tol = 1e-6): number
{
  const relTol = 1e-3 * tol;
  const m = x.length;
  const g = new Float64Array(m);
  let fx = f(x, g);
  const S: Float64Array[] = [];
  const Yv: Float64Array[] = [];
  const rho: number[] = [];
  const dir = new Float64Array(m);
  const xNew = new Float64Array(m);
  const gNew = new Float64Array(m);
  const alpha = new Float64Array(mem);
  let it = 0;
  for (; it < maxIter; it++) {
    let gmax = 0;
    for (let t = 0; t < m; t++) gmax = Math.max(gmax, Math.abs(g[t]));
    if (gmax < tol * Math.max(1, Math.abs(fx))) break;
    // two-loop recursion
    for (let t = 0; t < m; t++) dir[t] = -g[t];
    for (let h = S.length - 1; h >= 0; h--) {
      let a = 0;
      for (let t = 0; t < m; t++) a += S[h][t] * dir[t];
      a *= rho[h];
      alpha[h] = a;
      for (let t = 0; t < m; t++) dir[t] -= a * Yv[h][t];
    }
    if (S.length > 0) {
      const h = S.length - 1;
      let yy = 0;
      let sy = 0;
      for (let t = 0; t < m; t++) {
        yy += Yv[h][t] * Yv[h][t];
        sy += S[h][t] * Yv[h][t];
      }
      const gamma = sy / yy;
      for (let t = 0; t < m; t++) dir[t] *= gamma;
    } else {
      const gn = Math.sqrt(g.reduce((a, v) => a + v * v, 0));
      for (let t = 0; t < m; t++) dir[t] /= Math.max(gn, 1);
    }
    for (let h = 0; h < S.length; h++) {
      let b = 0;
      for (let t = 0; t < m; t++) b += Yv[h][t] * dir[t];
      b *= rho[h];
      for (let t = 0; t < m; t++) dir[t] += S[h][t] * (alpha[h] - b);
    }
    let slope = 0;
    for (let t = 0; t < m; t++) slope += g[t] * dir[t];
    if (slope >= 0) {
      // not a descent direction: restart from steepest descent
      S.length = 0;
      Yv.length = 0;
      rho.length = 0;
      for (let t = 0; t < m; t++) dir[t] = -g[t];
      slope = -g.reduce((a, v) => a + v * v, 0);
    }
    // backtracking line search (Armijo)
    let step = 1;
    let fNew = 0;
    let ok = false;
    for (let ls = 0; ls < 40; ls++) {
      for (let t = 0; t < m; t++) xNew[t] = x[t] + step * dir[t];
      fNew = f(xNew, gNew);
      if (fNew <= fx + 1e-4 * step * slope) {
        ok = true;
        break;
      }
      step *= 0.5;
    }
    if (!ok) break;
    const s = new Float64Array(m);
    const yv = new Float64Array(m);
    let sy = 0;
    for (let t = 0; t < m; t++) {
      s[t] = xNew[t] - x[t];
      yv[t] = gNew[t] - g[t];
      sy += s[t] * yv[t];
    }
    x.set(xNew);
    g.set(gNew);
    const rel = Math.abs(fx - fNew) / Math.max(1, Math.abs(fx));
    fx = fNew;
    if (sy > 1e-12) {
      S.push(s);
      Yv.push(yv);
      rho.push(1 / sy);
      if (S.length > mem) {
        S.shift();
        Yv.shift();
        rho.shift();
      }
    }
    if (rel < relTol) {
      it++;
      break;
    }
  }
  return it;
}
