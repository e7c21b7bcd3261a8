/**
 * The attractive part of the t-SNE gradient, over rows of the sparse joint P. Shared by
 * src/tsne/tsne.ts and the worker threads of src/tsne/pool.ts.
 */
import type { SparseP } from './affinity.js';
import { attractionSimd, type AttractionSimd } from './attraction-simd.js';

let attrKernel: AttractionSimd | null | undefined;
/** The P rows this thread last copied into the kernel's memory, and where they are (byte addresses). */
let attrCache: { P: SparseP; start: number; end: number; outAt: number; exAt: number; rpAt: number; cpAt: number;
  vpAt: number } | null = null;

/**
 * A breadth-first order of P's graph (from row 0, a row's columns in their order, then the
 * smallest row not reached): rows linked by P come close together in it. In this order the
 * attraction's reads of y_j stay within a small part of Y, which at 100,000 points makes the
 * kernel about a quarter faster (bench/RESULTS.md); the sums themselves do not change.
 */
export function bfsOrder(P: SparseP, shared = false): Int32Array {
  const n = P.n;
  const order = new Int32Array(shared ? new SharedArrayBuffer(4 * n) : new ArrayBuffer(4 * n));
  const seen = new Uint8Array(n);
  let head = 0;
  let tail = 0;
  for (let s = 0; s < n; s++) {
    if (seen[s]) continue;
    seen[s] = 1;
    order[tail++] = s;
    while (head < tail) {
      const i = order[head++];
      for (let t = P.rowPtr[i]; t < P.rowPtr[i + 1]; t++) {
        const j = P.cols[t];
        if (!seen[j]) {
          seen[j] = 1;
          order[tail++] = j;
        }
      }
    }
  }
  return order;
}

/**
 * Attractive part: out_i = ex · Σ_j p_ij w_ij (y_i − y_j) for rows [start, end), or, where P
 * has an order, for rows order[start], …, order[end − 1]. Runs in a WebAssembly SIMD kernel
 * (src/tsne/attraction-simd.ts) when available, bit-identical to attractionJs; the rows of P
 * are copied into the kernel's memory once per P and range (relabelled by the order: the kernel
 * sees row order[r] as row r and Y in that order, so every row's sum is the same).
 */
export function attraction(P: SparseP, Y: Float64Array, ex: number, out: Float64Array, start = 0, end = P.n): void {
  if (attrKernel === undefined) attrKernel = attractionSimd();
  const k = attrKernel;
  if (!k || end <= start) {
    attractionJs(P, Y, ex, out, start, end);
    return;
  }
  const order = P.order;
  let c = attrCache;
  if (!c || !(c.P === P || (P.id !== undefined && c.P.id === P.id)) || c.start !== start || c.end !== end) {
    const rows = end - start;
    let t0 = P.rowPtr[start];
    let nnz = P.rowPtr[end] - t0;
    if (order) {
      t0 = 0;
      nnz = 0;
      for (let r = start; r < end; r++) nnz += P.rowPtr[order[r] + 1] - P.rowPtr[order[r]];
    }
    const up16 = (b: number) => Math.ceil(b / 16) * 16;
    const outAt = up16(16 * P.n);
    const exAt = outAt + 16 * rows;
    const rpAt = exAt + 16;
    const cpAt = up16(rpAt + 4 * (rows + 1));
    const vpAt = up16(cpAt + 4 * nnz);
    if (!k.ensure(vpAt + 8 * nnz)) {
      attrCache = null;
      attractionJs(P, Y, ex, out, start, end);
      return;
    }
    const buf = k.memory.buffer;
    const rp = new Int32Array(buf, rpAt, rows + 1);
    const cp = new Int32Array(buf, cpAt, nnz);
    const vp = new Float64Array(buf, vpAt, nnz);
    if (order) {
      const inv = new Int32Array(P.n);
      for (let r = 0; r < P.n; r++) inv[order[r]] = r;
      let q = 0;
      for (let r = 0; r < rows; r++) {
        const i = order[start + r];
        rp[r] = q;
        for (let t = P.rowPtr[i]; t < P.rowPtr[i + 1]; t++, q++) {
          cp[q] = inv[P.cols[t]];
          vp[q] = P.vals[t];
        }
      }
      rp[rows] = q;
    } else {
      for (let r = 0; r <= rows; r++) rp[r] = P.rowPtr[start + r] - t0;
      cp.set(P.cols.subarray(t0, t0 + nnz));
      vp.set(P.vals.subarray(t0, t0 + nnz));
    }
    c = attrCache = { P, start, end, outAt, exAt, rpAt, cpAt, vpAt };
  }
  const M = new Float64Array(k.memory.buffer);
  if (order) {
    for (let r = 0; r < P.n; r++) {
      M[2 * r] = Y[2 * order[r]];
      M[2 * r + 1] = Y[2 * order[r] + 1];
    }
  } else M.set(Y.subarray(0, 2 * P.n), 0);
  M[c.exAt / 8] = ex;
  k.attract(0, c.rpAt, c.cpAt, c.vpAt, end - start, c.outAt, c.exAt, start);
  const o = c.outAt / 8;
  if (order) {
    for (let r = start; r < end; r++) {
      out[2 * order[r]] = M[o + 2 * (r - start)];
      out[2 * order[r] + 1] = M[o + 2 * (r - start) + 1];
    }
  } else out.set(M.subarray(o, o + 2 * (end - start)), 2 * start);
}

/**
 * The JavaScript loop of attraction(): each row summed as two interleaved partial sums (even
 * and odd nonzeros; more independent work per step), added at the end.
 */
export function attractionJs(P: SparseP, Y: Float64Array, ex: number, out: Float64Array, start = 0, end = P.n): void {
  const { rowPtr, cols, vals, order } = P;
  for (let r = start; r < end; r++) {
    const i = order ? order[r] : r;
    let t = rowPtr[i];
    const xi = Y[2 * i];
    const yi = Y[2 * i + 1];
    let fx = 0;
    let fy = 0;
    let gx = 0;
    let gy = 0;
    const e = rowPtr[i + 1];
    for (; t + 1 < e; t += 2) {
      const j = cols[t];
      const k = cols[t + 1];
      const dx = xi - Y[2 * j];
      const dy = yi - Y[2 * j + 1];
      const ex2 = xi - Y[2 * k];
      const ey2 = yi - Y[2 * k + 1];
      const pw = vals[t] / (1 + dx * dx + dy * dy);
      const qw = vals[t + 1] / (1 + ex2 * ex2 + ey2 * ey2);
      fx += pw * dx;
      fy += pw * dy;
      gx += qw * ex2;
      gy += qw * ey2;
    }
    if (t < e) {
      const j = cols[t];
      const dx = xi - Y[2 * j];
      const dy = yi - Y[2 * j + 1];
      const pw = vals[t] / (1 + dx * dx + dy * dy);
      fx += pw * dx;
      fy += pw * dy;
    }
    out[2 * i] = ex * (fx + gx);
    out[2 * i + 1] = ex * (fy + gy);
  }
}
