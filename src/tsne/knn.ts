/**
 * Exact k-nearest neighbours by squared euclidean distance: brute force, four query rows
 * per pass over the data. Ties are broken by the smaller index, and every row's result
 * depends only on the data, so results are identical however rows are split across threads.
 */

import { dotKernel, OUT_STRIDE } from '../util/dot-simd.js';
import { pairSumsJs } from './knn-simd.js';

export interface KnnResult {
  k: number;
  /** [n, k] neighbour indices, nearest first. */
  indices: Int32Array;
  /** [n, k] squared euclidean distances, ascending. */
  dist2: Float64Array;
}

/**
 * knnRows in plain JavaScript (used when WebAssembly SIMD is unavailable): the dot products of
 * four query rows at a time, the same values as the SIMD kernel's.
 */
function knnRowsJs(
  X: Float64Array | Float32Array,
  n: number,
  d: number,
  k: number,
  start: number,
  end: number,
  indices: Int32Array,
  dist2: Float64Array,
  relative = false,
): void {
  const sq = squaredNorms(X, n, d);
  // Tiles: QB query rows against JB data rows at a time, so a data tile is reused from cache
  // by every query of the block.
  const QB = 64;
  const JB = 256;
  const heaps = Array.from({ length: QB }, () => ({ hd: new Float64Array(k), hi: new Int32Array(k), size: 0 }));
  for (let qs = start; qs < end; qs += QB) {
    const qe = Math.min(qs + QB, end);
    for (const h of heaps) h.size = 0;
    for (let js = 0; js < n; js += JB) {
      const je = Math.min(js + JB, n);
      for (let i0 = qs; i0 < qe; i0 += 4) {
        const m = Math.min(4, qe - i0);
        const h0 = heaps[i0 - qs];
        const h1 = heaps[Math.min(i0 - qs + 1, QB - 1)];
        const h2 = heaps[Math.min(i0 - qs + 2, QB - 1)];
        const h3 = heaps[Math.min(i0 - qs + 3, QB - 1)];
        const q0 = i0 * d;
        const q1 = m > 1 ? q0 + d : q0;
        const q2 = m > 2 ? q0 + 2 * d : q0;
        const q3 = m > 3 ? q0 + 3 * d : q0;
        const sq0 = sq[i0];
        const sq1 = m > 1 ? sq[i0 + 1] : 0;
        const sq2 = m > 2 ? sq[i0 + 2] : 0;
        const sq3 = m > 3 ? sq[i0 + 3] : 0;
        let j = js;
        for (; j + 2 <= je; j += 2) {
          const ja = j * d;
          const jb = ja + d;
          let a0 = 0;
          let a1 = 0;
          let a2 = 0;
          let a3 = 0;
          let b0 = 0;
          let b1 = 0;
          let b2 = 0;
          let b3 = 0;
          for (let c = 0; c < d; c++) {
            const x = X[ja + c];
            const y = X[jb + c];
            const v0 = X[q0 + c];
            const v1 = X[q1 + c];
            const v2 = X[q2 + c];
            const v3 = X[q3 + c];
            a0 += v0 * x;
            a1 += v1 * x;
            a2 += v2 * x;
            a3 += v3 * x;
            b0 += v0 * y;
            b1 += v1 * y;
            b2 += v2 * y;
            b3 += v3 * y;
          }
          const sa = sq[j];
          const sb = sq[j + 1];
          const jn = j + 1;
          if (j !== i0) push(h0, k, Math.max(sq0 + sa - 2 * a0, 0), j);
          if (jn !== i0) push(h0, k, Math.max(sq0 + sb - 2 * b0, 0), jn);
          if (m > 1) {
            if (j !== i0 + 1) push(h1, k, Math.max(sq1 + sa - 2 * a1, 0), j);
            if (jn !== i0 + 1) push(h1, k, Math.max(sq1 + sb - 2 * b1, 0), jn);
          }
          if (m > 2) {
            if (j !== i0 + 2) push(h2, k, Math.max(sq2 + sa - 2 * a2, 0), j);
            if (jn !== i0 + 2) push(h2, k, Math.max(sq2 + sb - 2 * b2, 0), jn);
          }
          if (m > 3) {
            if (j !== i0 + 3) push(h3, k, Math.max(sq3 + sa - 2 * a3, 0), j);
            if (jn !== i0 + 3) push(h3, k, Math.max(sq3 + sb - 2 * b3, 0), jn);
          }
        }
        for (; j < je; j++) {
          const jo = j * d;
          let s0 = 0;
          let s1 = 0;
          let s2 = 0;
          let s3 = 0;
          for (let c = 0; c < d; c++) {
            const x = X[jo + c];
            s0 += X[q0 + c] * x;
            s1 += X[q1 + c] * x;
            s2 += X[q2 + c] * x;
            s3 += X[q3 + c] * x;
          }
          const sj = sq[j];
          if (j !== i0) push(h0, k, Math.max(sq0 + sj - 2 * s0, 0), j);
          if (m > 1 && j !== i0 + 1) push(h1, k, Math.max(sq1 + sj - 2 * s1, 0), j);
          if (m > 2 && j !== i0 + 2) push(h2, k, Math.max(sq2 + sj - 2 * s2, 0), j);
          if (m > 3 && j !== i0 + 3) push(h3, k, Math.max(sq3 + sj - 2 * s3, 0), j);
        }
      }
    }
    finish(X, d, k, qs, qe, start, heaps, indices, dist2, relative);
  }
}

/**
 * Neighbours of rows [start, end) of X [n, d]; writes into `indices`/`dist2` at row offsets
 * (relative to `start` when `relative`). Distances come from |x|² + |y|² − 2 x·y with the dot
 * products of four query rows against blocks of four data rows computed by a WebAssembly SIMD
 * kernel (src/util/dot-simd.ts; bit-identical to the scalar loop, which runs when SIMD is
 * unavailable); the selected candidates are then re-checked with the direct difference formula
 * so reported distances are exact.
 */
export function knnRows(
  X: Float64Array | Float32Array,
  n: number,
  d: number,
  k: number,
  start: number,
  end: number,
  indices: Int32Array,
  dist2: Float64Array,
  relative = false,
): void {
  const simd = dotKernel();
  if (!simd || d === 0 || end <= start) {
    knnRowsJs(X, n, d, k, start, end, indices, dist2, relative);
    return;
  }
  const sq = squaredNorms(X, n, d);
  const JB = OUT_STRIDE;
  const rows = end - start;
  const nq = Math.ceil(rows / 4);
  // wasm memory (float64 offsets): the query rows [start, end) in quads [nq][d][4] and their |q|²;
  // one block of JB data rows [JB/4][d][4] and their |y|²; distances [4][JB]. That is
  // O((rows + JB)·d) per thread whatever n, so many threads do not each hold a copy of X.
  const sqqAt = nq * 4 * d;
  const ypAt = sqqAt + nq * 4;
  const sqyAt = ypAt + JB * d;
  const outAt = sqyAt + JB;
  if (!simd.ensure((outAt + 4 * JB) * 8)) {
    knnRowsJs(X, n, d, k, start, end, indices, dist2, relative);
    return;
  }
  const M = new Float64Array(simd.memory.buffer);
  M.fill(0, 0, outAt);
  packQuads(M, 0, sqqAt, X, d, sq, start, end);
  const dist = simd.dist;
  const hd = new Float64Array(rows * k);
  const hi = new Int32Array(rows * k);
  const heaps = Array.from({ length: rows },
    (_, r) => ({ hd: hd.subarray(r * k, (r + 1) * k), hi: hi.subarray(r * k, (r + 1) * k), size: 0 }));
  // data blocks outside, query quads inside: each heap keeps the k smallest (distance, index)
  // pairs, a total order, so the selection does not depend on the order candidates arrive in
  for (let js = 0; js < n; js += JB) {
    const je = Math.min(js + JB, n);
    M.fill(0, ypAt, outAt);
    packQuads(M, ypAt, sqyAt, X, d, sq, js, je);
    const nblk = Math.ceil((je - js) / 4);
    for (let i0 = start; i0 < end; i0 += 4) {
      const m = Math.min(4, end - i0);
      dist((i0 - start) * d * 8, ypAt * 8, nblk, d, outAt * 8, (sqqAt + i0 - start) * 8, sqyAt * 8);
      for (let r = 0; r < m; r++) scan(M, outAt + r * JB - js, js, je, i0 + r, heaps[i0 - start + r], k);
    }
  }
  finish(X, d, k, start, end, start, heaps, indices, dist2, relative);
}

/** |x_j|² of every row, summed in column order (both kNN paths use these same values). */
export function squaredNorms(X: Float64Array | Float32Array, n: number, d: number): Float64Array {
  const sq = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    let s = 0;
    for (let c = 0; c < d; c++) s += X[j * d + c] * X[j * d + c];
    sq[j] = s;
  }
  return sq;
}

export type Heap = { hd: Float64Array; hi: Int32Array; size: number };

/**
 * Rows [r0, r1) of X into the kernel's layout at float64 offset `at` (quads [4][d] interleaved
 * by column: at[q][4 c + s] = x_{r0+4q+s}[c]), and their |x|² at `sqAt`. The caller zeroes the
 * slots of a last, partial quad.
 */
export function packQuads(M: Float64Array, at: number, sqAt: number, X: Float64Array | Float32Array, d: number,
  sq: Float64Array, r0: number, r1: number): void
{
  for (let r = r0; r < r1; r++) {
    const b = at + ((r - r0) >> 2) * 4 * d + ((r - r0) & 3);
    for (let c = 0; c < d; c++) M[b + 4 * c] = X[r * d + c];
    M[sqAt + r - r0] = sq[r];
  }
}

/**
 * Offer candidates j in [js, je) with distances M[o + j] to the heap of row i (skipping j = i);
 * with `ids`, candidate j enters as ids[j] (row i's own position is still i).
 */
export function scan(M: Float64Array, o: number, js: number, je: number, i: number, h: Heap, k: number,
  ids: Int32Array | null = null): void
{
  // candidates beyond the current k-th distance cannot enter (push re-checks ties)
  let top = h.size === k ? h.hd[0] : Infinity;
  for (let j = js; j < je; j++) {
    const v = M[o + j];
    if (v > top || j === i) continue;
    push(h, k, v, ids ? ids[j] : j);
    if (h.size === k) top = h.hd[0];
  }
}

/** Exact re-check and ordering of rows [qs, qe). */
function finish(
  X: Float64Array | Float32Array,
  d: number,
  k: number,
  qs: number,
  qe: number,
  start: number,
  heaps: Heap[],
  indices: Int32Array,
  dist2: Float64Array,
  relative: boolean,
): void {
  for (let i = qs; i < qe; i++) finishRow(X, d, i, heaps[i - qs], (relative ? i - start : i) * k, indices, dist2);
}

/**
 * Row i: exact distances of its selected neighbours (Σ_c (x_i[c] − x_j[c])² in column order,
 * pairSumsJs; the float32 screen of src/tsne/knn-screen.ts gets the same values from its SIMD
 * twin), then ascending order (ties by index).
 */
export function finishRow(X: Float64Array | Float32Array, d: number, i: number, h: Heap, ro: number,
  indices: Int32Array, dist2: Float64Array): void
{
  pairSumsJs(X, d, i, h.hi, h.size, 'diff', h.hd);
  orderRow(h, ro, indices, dist2);
}

/** The heap's (distance, index) pairs in ascending order (ties by index) into indices/dist2 at ro. */
export function orderRow(h: Heap, ro: number, indices: Int32Array, dist2: Float64Array): void {
  const { hd, hi, size } = h;
  let t: number;
  // insertion sort by (distance, index): a total order, so the result is unique
  for (t = 1; t < size; t++) {
    const a = hd[t];
    const b = hi[t];
    let u = t - 1;
    while (u >= 0 && (hd[u] > a || (hd[u] === a && hi[u] > b))) {
      hd[u + 1] = hd[u];
      hi[u + 1] = hi[u];
      u--;
    }
    hd[u + 1] = a;
    hi[u + 1] = b;
  }
  for (t = 0; t < size; t++) {
    indices[ro + t] = hi[t];
    dist2[ro + t] = hd[t];
  }
}

export function push(h: Heap, k: number, s: number, j: number): void {
  const { hd, hi } = h;
  if (h.size < k) {
    let p = h.size++;
    while (p > 0) {
      const parent = (p - 1) >> 1;
      if (greater(hd[parent], hi[parent], s, j)) break;
      hd[p] = hd[parent];
      hi[p] = hi[parent];
      p = parent;
    }
    hd[p] = s;
    hi[p] = j;
    return;
  }
  if (!(s < hd[0] || (s === hd[0] && j < hi[0]))) return;
  let p = 0;
  for (;;) {
    const l = 2 * p + 1;
    if (l >= k) break;
    const r = l + 1;
    let c = l;
    if (r < k && greater(hd[r], hi[r], hd[l], hi[l])) c = r;
    if (!greater(hd[c], hi[c], s, j)) break;
    hd[p] = hd[c];
    hi[p] = hi[c];
    p = c;
  }
  hd[p] = s;
  hi[p] = j;
}

/** (da, ia) ranks after (db, ib): larger distance, or equal distance and larger index. */
function greater(da: number, ia: number, db: number, ib: number): boolean {
  return da > db || (da === db && ia > ib);
}

/** Exact kNN of all rows (single thread). */
export function knn(X: Float64Array | Float32Array, n: number, d: number, k: number): KnnResult {
  const indices = new Int32Array(n * k);
  const dist2 = new Float64Array(n * k);
  knnRows(X, n, d, k, 0, n, indices, dist2);
  return { k, indices, dist2 };
}
