/**
 * The attractive part of the t-SNE gradient, over rows of the sparse joint P. Shared by
 * src/cluster/tsne.ts and the worker threads of src/cluster/pool.ts.
 */
import type { SparseP } from './affinity.js';
import { attractionSimd, type AttractionSimd } from './attraction-simd.js';

let attrKernel: AttractionSimd | null | undefined;
/** The P rows this thread last copied into the kernel's memory, and where they are (byte addresses). */
let attrCache: { P: SparseP; start: number; end: number; outAt: number; exAt: number; rpAt: number; cpAt: number; vpAt: number } | null = null;

/**
 * Attractive part: out_i = ex · Σ_j p_ij w_ij (y_i − y_j) for rows [start, end). Runs in a
 * WebAssembly SIMD kernel (src/cluster/attraction-simd.ts) when available, bit-identical to
 * attractionJs; the rows of P are copied into the kernel's memory once per P and range.
 */
export function attraction(P: SparseP, Y: Float64Array, ex: number, out: Float64Array, start = 0, end = P.n): void {
  if (attrKernel === undefined) attrKernel = attractionSimd();
  const k = attrKernel;
  if (!k || end <= start) {
    attractionJs(P, Y, ex, out, start, end);
    return;
  }
  let c = attrCache;
  if (!c || !(c.P === P || (P.id !== undefined && c.P.id === P.id)) || c.start !== start || c.end !== end) {
    const rows = end - start;
    const t0 = P.rowPtr[start];
    const nnz = P.rowPtr[end] - t0;
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
    for (let r = 0; r <= rows; r++) rp[r] = P.rowPtr[start + r] - t0;
    new Int32Array(buf, cpAt, nnz).set(P.cols.subarray(t0, t0 + nnz));
    new Float64Array(buf, vpAt, nnz).set(P.vals.subarray(t0, t0 + nnz));
    c = attrCache = { P, start, end, outAt, exAt, rpAt, cpAt, vpAt };
  }
  const M = new Float64Array(k.memory.buffer);
  M.set(Y.subarray(0, 2 * P.n), 0);
  M[c.exAt / 8] = ex;
  k.attract(0, c.rpAt, c.cpAt, c.vpAt, end - start, c.outAt, c.exAt, start);
  out.set(M.subarray(c.outAt / 8, c.outAt / 8 + 2 * (end - start)), 2 * start);
}

/**
 * The JavaScript loop of attraction(): each row summed as two interleaved partial sums (even
 * and odd nonzeros; more independent work per step), added at the end.
 */
export function attractionJs(P: SparseP, Y: Float64Array, ex: number, out: Float64Array, start = 0, end = P.n): void {
  const { rowPtr, cols, vals } = P;
  let t = rowPtr[start];
  for (let i = start; i < end; i++) {
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
      t++;
    }
    out[2 * i] = ex * (fx + gx);
    out[2 * i + 1] = ex * (fy + gy);
  }
}
