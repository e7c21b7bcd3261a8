/**
 * The t-SNE repulsion by FFT-accelerated interpolation (Linderman, Rachh, Hoskins,
 * Steinerberger & Kluger, "Fast interpolation-based t-SNE", Nature Methods 2019), in O(N + G log G)
 * per iteration for a G-node grid instead of Barnes–Hut's O(N log N).
 *
 * With w_ij = 1/(1+|y_i−y_j|²) and the one kernel K(d) = w² = 1/(1+|d|²)², four potentials
 *   φ_c(i) = Σ_j K(y_i − y_j) q_c(j),   q = [1, x_j, y_j, x_j² + y_j²]
 * give every sum the gradient needs (coordinates taken relative to the grid centre):
 *   F_i = Σ_j w_ij² (y_i − y_j) = (x_i φ_0 − φ_1,  y_i φ_0 − φ_2)
 *   Z_i = Σ_{j≠i} w_ij = (1 + x_i² + y_i²) φ_0 − 2 (x_i φ_1 + y_i φ_2) + φ_3 − 1
 * (the self term j = i adds K(0)·… = 1 to the Z sum and nothing to F).
 *
 * The square bounding box of the embedding is cut into nb × nb boxes of width h (nb = the
 * smallest 2^a·3^b at least max(minBoxes, span / boxWidth); defaults 50 and 1, as FIt-SNE and
 * openTSNE; h = boxWidth once the span needs more than minBoxes boxes, span / nb before), each
 * with p = 3 equispaced Lagrange nodes per axis at (k + ½)·h/3, so the nodes form one
 * equispaced M × M grid (M = 3 nb, spacing δ = h/3). The kernel's spectrum depends on L and h
 * only, so it is computed again only when they change (every iteration while the span is below
 * minBoxes · boxWidth, rarely after). Per iteration:
 *   1. spread: each point adds L_a(x)·L_b(y)·q_c to the 3 × 3 nodes of its box (in point order);
 *   2. convolve: the node grid with K on the node offsets, as a circulant of size L = 2M
 *      (zero-padded 2-D FFT: column pass, transpose, column pass; multiply by the kernel's
 *      spectrum, which is real because the circulant kernel is even; inverse likewise);
 *   3. interpolate: φ_c(i) = Σ L_a(x_i) L_b(y_i) φ_c(node).
 * The four charges travel as two complex grids (q0 + i q1, q2 + i q3): the kernel is real.
 *
 * Every value depends on Y only: the spreading runs in point order on one thread, the
 * transforms column by column and the interpolation point by point, so splitting the columns
 * and points across threads (src/cluster/pool.ts) gives bit-identical results.
 */
import { fftColumns, fftPlan, smoothSize, transposeRows, type FftPlan } from './fft.js';
import { bounds, type Bounds } from './bounds.js';

export interface InterpOptions {
  /** Boxes per axis at least (default 50). */
  minBoxes?: number;
  /** Box width at most, in embedding units (default 1). */
  boxWidth?: number;
}

/** The grid of one iteration and its buffers (on SharedArrayBuffers when shared). */
export interface InterpGrid {
  /** Boxes per axis; nodes per axis M = 3 nb; FFT size L = 2M. */
  nb: number;
  M: number;
  L: number;
  /** Lower corner and box width of the square box; node spacing δ = h / 3. */
  lox: number;
  loy: number;
  h: number;
  /** The kernel's spectrum / L² (real; transposed layout) for kL and kh. */
  Kh: Float64Array;
  kL: number;
  kh: number;
  /** Kernel, charge grids (q0 + i q1 in A, q2 + i q3 in B) and scratch, [L][L] each; capacity may exceed L². */
  Kr: Float64Array;
  Ki: Float64Array;
  Ar: Float64Array;
  Ai: Float64Array;
  Br: Float64Array;
  Bi: Float64Array;
  Tr: Float64Array;
  Ti: Float64Array;
  /** Per point: box (bx, by) and the three Lagrange weights per axis. */
  box: Int32Array;
  wx: Float64Array;
  wy: Float64Array;
  /**
   * The points by box row, in point order within a row (byRow[rowStart[b] … rowStart[b+1]) are
   * row b's): threads that spread disjoint box rows write disjoint node rows, each node in the
   * order of the single-thread spread. rowStart has room for nb + 1 entries.
   */
  byRow: Int32Array;
  rowStart: Int32Array;
}

/** Lagrange weights of the nodes 1/6, 1/2, 5/6 at t ∈ [0, 1], into w[o..o+2]. */
export function lagrange3(t: number, w: Float64Array, o: number): void {
  const a = t - 1 / 6;
  const b = t - 0.5;
  const c = t - 5 / 6;
  w[o] = 4.5 * b * c;
  w[o + 1] = -9 * a * c;
  w[o + 2] = 4.5 * a * b;
}

/** Per-thread work on a grid: the ranges each call takes are set by the caller. */
export const interpWork = {
  /** Kernel grid rows [r0, r1): K[r][c] = 1/(1 + δ²(dr² + dc²))², dr = min(r, L−r); imaginary part 0. */
  kernelRows(g: InterpGrid, r0: number, r1: number): void {
    const { L } = g;
    const d2 = (g.h / 3) * (g.h / 3);
    for (let r = r0; r < r1; r++) {
      const dr = Math.min(r, L - r);
      const b = r * L;
      for (let c = 0; c < L; c++) {
        const dc = Math.min(c, L - c);
        const v = 1 / (1 + d2 * (dr * dr + dc * dc));
        g.Kr[b + c] = v * v;
        g.Ki[b + c] = 0;
      }
    }
  },
  /** The kernel's spectrum / L² into Kh (this thread; the same layout as the charges' spectra). */
  kernelSpectrum(g: InterpGrid): void {
    const { L } = g;
    const plan = fftPlan(L);
    interpWork.kernelRows(g, 0, L);
    fftColumns(plan, g.Kr, g.Ki, g.Tr, g.Ti, L, 0, L, false);
    transposeRows(g.Kr, L, 0, L);
    transposeRows(g.Ki, L, 0, L);
    fftColumns(plan, g.Kr, g.Ki, g.Tr, g.Ti, L, 0, L, false);
    const s = 1 / (L * L);
    for (let t = 0; t < L * L; t++) g.Kh[t] = g.Kr[t] * s;
    g.kL = L;
    g.kh = g.h;
  },
  /** Forward first pass of the charge columns [a0, a1) of M (the others are zero). */
  pass1(g: InterpGrid, a0: number, a1: number): void {
    const plan = fftPlan(g.L);
    fftColumns(plan, g.Ar, g.Ai, g.Tr, g.Ti, g.L, a0, a1, false);
    fftColumns(plan, g.Br, g.Bi, g.Tr, g.Ti, g.L, a0, a1, false);
  },
  /** Transpose rows [r0, r1) of the charge grids. */
  transpose(g: InterpGrid, r0: number, r1: number): void {
    for (const a of [g.Ar, g.Ai, g.Br, g.Bi]) transposeRows(a, g.L, r0, r1);
  },
  /** Columns [c0, c1): forward second pass, product with the kernel's spectrum / L², inverse first pass. */
  middle(g: InterpGrid, c0: number, c1: number): void {
    const { L } = g;
    const plan = fftPlan(L);
    fftColumns(plan, g.Ar, g.Ai, g.Tr, g.Ti, L, c0, c1, false);
    fftColumns(plan, g.Br, g.Bi, g.Tr, g.Ti, L, c0, c1, false);
    for (let r = 0; r < L; r++) {
      const b = r * L;
      for (let c = c0; c < c1; c++) {
        const k = g.Kh[b + c];
        g.Ar[b + c] *= k;
        g.Ai[b + c] *= k;
        g.Br[b + c] *= k;
        g.Bi[b + c] *= k;
      }
    }
    fftColumns(plan, g.Ar, g.Ai, g.Tr, g.Ti, L, c0, c1, true);
    fftColumns(plan, g.Br, g.Bi, g.Tr, g.Ti, L, c0, c1, true);
  },
  /** Inverse second pass, columns [c0, c1) of M. */
  pass2(g: InterpGrid, c0: number, c1: number): void {
    const plan = fftPlan(g.L);
    fftColumns(plan, g.Ar, g.Ai, g.Tr, g.Ti, g.L, c0, c1, true);
    fftColumns(plan, g.Br, g.Bi, g.Tr, g.Ti, g.L, c0, c1, true);
  },
  /** Zero rows [r0, r1) of the four charge grids (all L columns). */
  zeroRows(g: InterpGrid, r0: number, r1: number): void {
    for (const a of [g.Ar, g.Ai, g.Br, g.Bi]) a.fill(0, r0 * g.L, r1 * g.L);
  },
  /** Points [i0, i1): their boxes and Lagrange weights. */
  weights(g: InterpGrid, Y: Float64Array, i0: number, i1: number): void {
    const { nb, h, box, wx, wy } = g;
    for (let i = i0; i < i1; i++) {
      const ux = (Y[2 * i] - g.lox) / h;
      const uy = (Y[2 * i + 1] - g.loy) / h;
      const bx = Math.min(nb - 1, Math.max(0, Math.floor(ux)));
      const by = Math.min(nb - 1, Math.max(0, Math.floor(uy)));
      box[2 * i] = bx;
      box[2 * i + 1] = by;
      lagrange3(ux - bx, wx, 3 * i);
      lagrange3(uy - by, wy, 3 * i);
    }
  },
  /** The points of box rows [b0, b1) (byRow, after sortRows) spread onto their nodes, in point order. */
  spreadRows(g: InterpGrid, Y: Float64Array, b0: number, b1: number): void {
    const { nb, L, h, Ar, Ai, Br, Bi, box, wx, wy, byRow, rowStart } = g;
    const cx = g.lox + (nb * h) / 2;
    const cy = g.loy + (nb * h) / 2;
    for (let p = rowStart[b0]; p < rowStart[b1]; p++) {
      const i = byRow[p];
      const xc = Y[2 * i] - cx;
      const yc = Y[2 * i + 1] - cy;
      spreadPoint(L, box[2 * i], box[2 * i + 1], wx, wy, i, xc, yc, xc * xc + yc * yc, Ar, Ai, Br, Bi);
    }
  },
  /** Interpolate the potentials back to points [i0, i1) and form F and Z_i. */
  interpolate(g: InterpGrid, Y: Float64Array, i0: number, i1: number, F: Float64Array, Zi: Float64Array): void {
    const { L, box, wx, wy, Ar, Ai, Br, Bi } = g;
    const cx = g.lox + (g.nb * g.h) / 2;
    const cy = g.loy + (g.nb * g.h) / 2;
    for (let i = i0; i < i1; i++) {
      const gx = 3 * box[2 * i];
      const gy = 3 * box[2 * i + 1];
      let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
      for (let b = 0; b < 3; b++) {
        const row = (gy + b) * L + gx;
        const vy = wy[3 * i + b];
        for (let a = 0; a < 3; a++) {
          const w = vy * wx[3 * i + a];
          p0 += w * Ar[row + a];
          p1 += w * Ai[row + a];
          p2 += w * Br[row + a];
          p3 += w * Bi[row + a];
        }
      }
      const x = Y[2 * i] - cx;
      const y = Y[2 * i + 1] - cy;
      F[2 * i] = x * p0 - p1;
      F[2 * i + 1] = y * p0 - p2;
      Zi[i] = (1 + x * x + y * y) * p0 - 2 * (x * p1 + y * p2) + p3 - 1;
    }
  },
};

/** Point i's charges onto the 3 × 3 nodes of its box (bx, by): the one loop of both spreads. */
function spreadPoint(L: number, bx: number, by: number, wx: Float64Array, wy: Float64Array, i: number, xc: number, yc: number, r2: number, Ar: Float64Array, Ai: Float64Array, Br: Float64Array, Bi: Float64Array): void {
  for (let b = 0; b < 3; b++) {
    const row = (3 * by + b) * L + 3 * bx;
    const vy = wy[3 * i + b];
    for (let a = 0; a < 3; a++) {
      const w = vy * wx[3 * i + a];
      Ar[row + a] += w;
      Ai[row + a] += w * xc;
      Br[row + a] += w * yc;
      Bi[row + a] += w * r2;
    }
  }
}

/** byRow and rowStart of g from the boxes (a counting sort by box row; stable, so point order within a row). */
export function sortRows(g: InterpGrid, n: number): void {
  const { nb, box, byRow, rowStart } = g;
  rowStart.fill(0, 0, nb + 1);
  for (let i = 0; i < n; i++) rowStart[box[2 * i + 1] + 1]++;
  for (let b = 0; b < nb; b++) rowStart[b + 1] += rowStart[b];
  const next = rowStart.slice(0, nb);
  for (let i = 0; i < n; i++) byRow[next[box[2 * i + 1]]++] = i;
}

/** Owner of the grid buffers: sizes the grid from Y and spreads the charges. */
export class InterpRepulsion {
  g: InterpGrid;
  private cap = 0;
  readonly minBoxes: number;
  readonly boxWidth: number;

  constructor(private n: number, private shared = false, opts: InterpOptions = {}) {
    this.minBoxes = opts.minBoxes ?? 50;
    this.boxWidth = opts.boxWidth ?? 1;
    const f = (len: number) => new Float64Array(shared ? new SharedArrayBuffer(len * 8) : new ArrayBuffer(len * 8));
    const e = new Float64Array(0);
    const i32 = (len: number) => new Int32Array(shared ? new SharedArrayBuffer(4 * len) : new ArrayBuffer(4 * len));
    this.g = { nb: 0, M: 0, L: 0, lox: 0, loy: 0, h: 1, Kh: e, kL: 0, kh: 0, Kr: e, Ki: e, Ar: e, Ai: e, Br: e, Bi: e, Tr: e, Ti: e, box: i32(2 * n), wx: f(3 * n), wy: f(3 * n), byRow: i32(n), rowStart: i32(1) };
  }

  /** The square side of Y's bounding box (1e-3 when the points coincide), and the box. */
  private span(Y: Float64Array): { span: number; b: Bounds } {
    const b = bounds(Y, 0, this.n);
    let span = Math.max(b.maxX - b.minX, b.maxY - b.minY);
    if (!(span > 0)) span = 1e-3;
    if (!Number.isFinite(span)) throw new Error('t-SNE embedding has non-finite coordinates');
    return { span, b };
  }

  /** The FFT size L = 6 × boxes the grid for Y would have (nothing is sized or allocated). */
  gridSize(Y: Float64Array): number {
    return 6 * smoothSize(Math.max(this.minBoxes, Math.ceil(this.span(Y).span / this.boxWidth)));
  }

  /** Size the grid for Y (its buffers grow when needed). */
  size(Y: Float64Array): InterpGrid {
    const g = this.g;
    const { span, b } = this.span(Y);
    const { minX: xmin, minY: ymin, maxX: xmax, maxY: ymax } = b;
    const need = Math.ceil(span / this.boxWidth);
    const nb = smoothSize(Math.max(this.minBoxes, need));
    const M = 3 * nb;
    const L = 2 * M;
    // a fixed width once there are more than minBoxes boxes (the kernel's spectrum then stays);
    // before, a hair wider than span / nb, so the top edge falls inside the last box
    const h = need > this.minBoxes ? this.boxWidth : (span * (1 + 1e-9)) / nb;
    g.nb = nb;
    g.M = M;
    g.L = L;
    g.h = h;
    g.lox = (xmin + xmax) / 2 - (nb * h) / 2;
    g.loy = (ymin + ymax) / 2 - (nb * h) / 2;
    if (g.rowStart.length < nb + 1) g.rowStart = new Int32Array(this.shared ? new SharedArrayBuffer(4 * (nb + 1)) : new ArrayBuffer(4 * (nb + 1)));
    if (L * L > this.cap) {
      const cap = L * L;
      const f = () => new Float64Array(this.shared ? new SharedArrayBuffer(cap * 8) : new ArrayBuffer(cap * 8));
      g.Kh = f(); g.kL = 0; g.Kr = f(); g.Ki = f(); g.Ar = f(); g.Ai = f(); g.Br = f(); g.Bi = f(); g.Tr = f(); g.Ti = f();
      this.cap = cap;
    }
    if (g.kL !== L || g.kh !== h) interpWork.kernelSpectrum(g);
    return g;
  }

  /** Each point's box and weights, and the charges spread onto the grid (this thread, point order). */
  spread(Y: Float64Array): void {
    const n = this.n;
    const g = this.g;
    const { nb, L, h, Ar, Ai, Br, Bi, box, wx, wy } = g;
    // the charges occupy rows [0, M) and columns [0, M); the rest of each grid must be zero
    interpWork.zeroRows(g, 0, L);
    interpWork.weights(g, Y, 0, n);
    const cx = g.lox + (nb * h) / 2;
    const cy = g.loy + (nb * h) / 2;
    for (let i = 0; i < n; i++) {
      const xc = Y[2 * i] - cx;
      const yc = Y[2 * i + 1] - cy;
      spreadPoint(L, box[2 * i], box[2 * i + 1], wx, wy, i, xc, yc, xc * xc + yc * yc, Ar, Ai, Br, Bi);
    }
  }

  /** F and Z_i for every point on this thread (the same numbers as any split across threads). */
  compute(Y: Float64Array, F: Float64Array, Zi: Float64Array): void {
    const g = this.size(Y);
    const { L, M } = g;
    this.spread(Y);
    interpWork.pass1(g, 0, M);
    interpWork.transpose(g, 0, L);
    interpWork.middle(g, 0, L);
    interpWork.transpose(g, 0, L);
    interpWork.pass2(g, 0, M);
    interpWork.interpolate(g, Y, 0, this.n, F, Zi);
  }
}

export type { FftPlan };
