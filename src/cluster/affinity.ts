/**
 * t-SNE input affinities. For each point i, a Gaussian kernel over its k nearest neighbours
 * (squared distances) whose precision beta_i is found by binary search so that the
 * entropy of p_{j|i} equals log(perplexity) (van der Maaten 2014; scikit-learn uses the
 * same rule, tolerance 1e-5, at most 100 steps). The joint P = (P_cond + P_condᵀ) / (2N)
 * is stored as a symmetric CSR matrix with sorted columns.
 */
import { LobesError } from '../util/errors.js';
import type { KnnResult } from './knn.js';

export interface SparseP {
  n: number;
  rowPtr: Int32Array;
  cols: Int32Array;
  vals: Float64Array;
  /** Identifies a P that crosses to worker threads (a copy arrives with each message); P is never changed after it is made. */
  id?: number;
}

/** Number of neighbours used for a perplexity (scikit-learn: min(n - 1, floor(3·perplexity + 1))). */
export function neighboursFor(perplexity: number, n: number): number {
  return Math.min(n - 1, Math.floor(3 * perplexity + 1));
}

/** Check a perplexity against N with an error that names the limit. */
export function checkPerplexity(perplexity: number, n: number): void {
  if (!(perplexity > 0) || !Number.isFinite(perplexity)) throw new LobesError(`perplexity must be a positive number, got ${perplexity}`);
  const max = (n - 1) / 3;
  if (perplexity > max) {
    throw new LobesError(`perplexity ${perplexity} is too large for ${n} points (at most (N - 1) / 3 = ${Math.floor(max * 100) / 100})`, {
      hint: `pass --perplexity ${Math.max(1, Math.floor(max))} or fewer`,
    });
  }
}

/** Conditional probabilities p_{j|i} over each row's neighbours: [n, k], rows sum to 1. */
export function conditionalP(nn: KnnResult, n: number, perplexity: number): { P: Float64Array; betas: Float64Array } {
  const k = nn.k;
  const P = new Float64Array(n * k);
  const betas = new Float64Array(n);
  const target = Math.log(perplexity);
  const row = new Float64Array(k);
  for (let i = 0; i < n; i++) {
    const o = i * k;
    let beta = 1;
    let lo = -Infinity;
    let hi = Infinity;
    const dmin = nn.dist2[o];
    for (let step = 0; step < 100; step++) {
      let sum = 0;
      let wsum = 0;
      for (let t = 0; t < k; t++) {
        const dd = nn.dist2[o + t] - dmin;
        const v = Math.exp(-dd * beta);
        row[t] = v;
        sum += v;
        wsum += dd * v;
      }
      if (sum === 0) sum = 1e-300;
      const H = Math.log(sum) + (beta * wsum) / sum;
      const diff = H - target;
      for (let t = 0; t < k; t++) P[o + t] = row[t] / sum;
      if (Math.abs(diff) <= 1e-5) break;
      if (diff > 0) {
        lo = beta;
        beta = hi === Infinity ? beta * 2 : (beta + hi) / 2;
      } else {
        hi = beta;
        beta = lo === -Infinity ? beta / 2 : (beta + lo) / 2;
      }
    }
    betas[i] = beta;
  }
  return { P, betas };
}

/** Symmetrize conditional probabilities into the joint P (sums to 1). */
export function jointP(nn: KnnResult, Pc: Float64Array, n: number): SparseP {
  const k = nn.k;
  // Count entries per row of (Pc + Pcᵀ) after merging duplicates.
  const counts = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    for (let t = 0; t < k; t++) {
      counts[i]++;
      counts[nn.indices[i * k + t]]++;
    }
  }
  const ptr = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) ptr[i + 1] = ptr[i] + counts[i];
  const tmpC = new Int32Array(ptr[n]);
  const tmpV = new Float64Array(ptr[n]);
  const fill = ptr.slice(0, n);
  for (let i = 0; i < n; i++) {
    for (let t = 0; t < k; t++) {
      const j = nn.indices[i * k + t];
      const v = Pc[i * k + t];
      tmpC[fill[i]] = j;
      tmpV[fill[i]++] = v;
      tmpC[fill[j]] = i;
      tmpV[fill[j]++] = v;
    }
  }
  // Sort each row by column and merge duplicates.
  const rowPtr = new Int32Array(n + 1);
  const outC: number[] = [];
  const outV: number[] = [];
  let total = 0;
  for (let i = 0; i < n; i++) {
    const a = ptr[i];
    const b = ptr[i + 1];
    const idx = Array.from({ length: b - a }, (_, t) => a + t).sort((x, y) => tmpC[x] - tmpC[y] || x - y);
    let last = -1;
    for (const t of idx) {
      if (tmpC[t] === last) {
        outV[outV.length - 1] += tmpV[t];
      } else {
        outC.push(tmpC[t]);
        outV.push(tmpV[t]);
        last = tmpC[t];
      }
    }
    rowPtr[i + 1] = outC.length;
  }
  const vals = Float64Array.from(outV);
  for (let t = 0; t < vals.length; t++) total += vals[t];
  const norm = Math.max(total, Number.EPSILON);
  for (let t = 0; t < vals.length; t++) vals[t] /= norm;
  return { n, rowPtr, cols: Int32Array.from(outC), vals };
}

/** Dense joint P (for small N and tests). */
export function denseP(P: SparseP): Float64Array {
  const out = new Float64Array(P.n * P.n);
  for (let i = 0; i < P.n; i++) for (let t = P.rowPtr[i]; t < P.rowPtr[i + 1]; t++) out[i * P.n + P.cols[t]] = P.vals[t];
  return out;
}
