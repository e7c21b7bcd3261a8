/**
 * t-SNE input affinities. For each point i, a Gaussian kernel over its k nearest neighbours
 * (squared distances) whose precision beta_i is found by binary search so that the
 * entropy of p_{j|i} equals log(perplexity) (van der Maaten 2014; scikit-learn uses the
 * same rule, tolerance 1e-5, at most 100 steps). The joint P = (P_cond + P_condᵀ) / (2N)
 * is stored as a symmetric CSR matrix with sorted columns.
 */
import { LobesError, opt } from '../util/errors.js';
import type { KnnResult } from './knn.js';

export interface SparseP {
  n: number;
  rowPtr: Int32Array;
  cols: Int32Array;
  vals: Float64Array;
  /** Identifies a P that crosses to worker threads (a copy arrives with each message); P is never changed after it is made. */
  id?: number;
  /**
   * An order of the rows in which a row's columns sit near it (src/tsne/attraction.ts
   * bfsOrder): where it is set, the attraction takes rows order[start], …, order[end − 1] for a
   * range [start, end), with every row's sum unchanged.
   */
  order?: Int32Array;
}

/** Number of neighbours used for a perplexity (scikit-learn: min(n - 1, floor(3·perplexity + 1))). */
export function neighboursFor(perplexity: number, n: number): number {
  return Math.min(n - 1, Math.floor(3 * perplexity + 1));
}

/** Fewest points a t-SNE with the smallest allowed perplexity (1) can embed: N - 1 ≥ 3. */
export const MIN_POINTS = 4;

/** Check a perplexity against N with an error that names the limit (and a value that is allowed). */
export function checkPerplexity(perplexity: number, n: number): void {
  if (!(perplexity > 0) || !Number.isFinite(perplexity))
    throw new LobesError(`perplexity must be a positive number, got ${perplexity}`);
  const max = (n - 1) / 3;
  if (perplexity > max) {
    // --perplexity is at least 1 (src/cluster/run.ts): below 4 points no allowed value fits
    const hint = max >= 1
      ? `pass ${opt('perplexity', Math.floor(max))} or fewer`
      : `t-SNE needs at least ${MIN_POINTS} points (perplexity 1, the smallest allowed, needs N - 1 ≥ 3); add points`;
    throw new LobesError(
      `perplexity ${perplexity} is too large for ${n} points (at most (N - 1) / 3 = ${Math.floor(max * 100) / 100})`,
      { hint },
    );
  }
}

/** Conditional probabilities p_{j|i} over each row's neighbours: [n, k], rows sum to 1. */
export function conditionalP(nn: KnnResult, n: number, perplexity: number): { P: Float64Array; betas: Float64Array } {
  const P = new Float64Array(n * nn.k);
  const betas = new Float64Array(n);
  conditionalRows(nn.dist2, nn.k, perplexity, 0, n, P, betas);
  return { P, betas };
}

/**
 * Rows [r0, r1) of conditionalP into P and betas (each row on its own: any split of the rows
 * gives the same numbers). A bisection on the precision β brings the row's entropy to
 * log(perplexity) within 1e-5, from β = 1, doubling or halving until bracketed.
 */
export function conditionalRows(dist2: Float64Array, k: number, perplexity: number, r0: number, r1: number,
  P: Float64Array, betas: Float64Array): void
{
  const target = Math.log(perplexity);
  const row = new Float64Array(k);
  for (let i = r0; i < r1; i++) {
    const o = i * k;
    let beta = 1;
    let lo = -Infinity;
    let hi = Infinity;
    const dmin = dist2[o];
    let sum = 0;
    for (let step = 0; step < 100; step++) {
      sum = 0;
      let wsum = 0;
      for (let t = 0; t < k; t++) {
        const dd = dist2[o + t] - dmin;
        const v = Math.exp(-dd * beta);
        row[t] = v;
        sum += v;
        wsum += dd * v;
      }
      if (sum === 0) sum = 1e-300;
      const H = Math.log(sum) + (beta * wsum) / sum;
      const diff = H - target;
      if (Math.abs(diff) <= 1e-5) break;
      if (diff > 0) {
        lo = beta;
        beta = hi === Infinity ? beta * 2 : (beta + hi) / 2;
      } else {
        hi = beta;
        beta = lo === -Infinity ? beta / 2 : (beta + lo) / 2;
      }
    }
    // P is the row of the last evaluation
    for (let t = 0; t < k; t++) P[o + t] = row[t] / sum;
    betas[i] = beta;
  }
}

/**
 * Symmetrize conditional probabilities into the joint P = (Pc + Pcᵀ) / Σ, rows sorted by column.
 * Row r of Pcᵀ is built by visiting the rows i in order, so it is already sorted by i; row r of
 * Pc (its k neighbours) is sorted by column; the two are merged, adding a pair that appears in
 * both (two values, so the sum does not depend on their order).
 */
export function jointP(nn: KnnResult, Pc: Float64Array, n: number): SparseP {
  const k = nn.k;
  const nbr = nn.indices;
  // Pcᵀ in CSR form: row j lists (i, p_{j|i}) for every i with j among its neighbours, i ascending
  const tPtr = new Int32Array(n + 1);
  for (let t = 0; t < n * k; t++) tPtr[nbr[t] + 1]++;
  for (let j = 0; j < n; j++) tPtr[j + 1] += tPtr[j];
  const tCol = new Int32Array(n * k);
  const tVal = new Float64Array(n * k);
  const fill = tPtr.slice(0, n);
  for (let i = 0; i < n; i++) {
    for (let t = 0; t < k; t++) {
      const j = nbr[i * k + t];
      tCol[fill[j]] = i;
      tVal[fill[j]++] = Pc[i * k + t];
    }
  }
  const rowPtr = new Int32Array(n + 1);
  const cols = new Int32Array(2 * n * k);
  const vals = new Float64Array(2 * n * k);
  const keys = new Float64Array(k);
  let m = 0;
  for (let i = 0; i < n; i++) {
    // own neighbours by column (column·k + position: distinct, exact in float64)
    for (let t = 0; t < k; t++) keys[t] = nbr[i * k + t] * k + t;
    keys.sort();
    let a = 0;
    let b = tPtr[i];
    const be = tPtr[i + 1];
    while (a < k || b < be) {
      const ca = a < k ? Math.floor(keys[a] / k) : Infinity;
      const cb = b < be ? tCol[b] : Infinity;
      if (ca < cb) {
        cols[m] = ca;
        vals[m++] = Pc[i * k + (keys[a] - ca * k)];
        a++;
      } else if (cb < ca) {
        cols[m] = cb;
        vals[m++] = tVal[b];
        b++;
      } else {
        cols[m] = ca;
        vals[m++] = Pc[i * k + (keys[a] - ca * k)] + tVal[b];
        a++;
        b++;
      }
    }
    rowPtr[i + 1] = m;
  }
  let total = 0;
  for (let t = 0; t < m; t++) total += vals[t];
  const norm = Math.max(total, Number.EPSILON);
  const out = vals.slice(0, m);
  for (let t = 0; t < m; t++) out[t] /= norm;
  return { n, rowPtr, cols: cols.slice(0, m), vals: out };
}

/** Dense joint P (for small N and tests). */
export function denseP(P: SparseP): Float64Array {
  const out = new Float64Array(P.n * P.n);
  for (let i = 0; i < P.n; i++)
    for (let t = P.rowPtr[i]; t < P.rowPtr[i + 1]; t++) out[i * P.n + P.cols[t]] = P.vals[t];
  return out;
}
