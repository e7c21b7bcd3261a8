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
 *      (zero-padded 2-D FFT by blocks of 8 lines, src/tsne/fft-block.ts: forward along the
 *      rows for the M nonzero columns; then, by blocks of rows, forward along the columns, the
 *      product with the kernel's spectrum, which is real because the circulant kernel is even,
 *      and the inverse along the columns; then the inverse along the rows, keeping rows [0, M));
 *   3. interpolate: φ_c(i) = Σ L_a(x_i) L_b(y_i) φ_c(node).
 * The four charges travel as two complex grids (q0 + i q1, q2 + i q3): the kernel is real.
 *
 * Every value depends on Y only: each node sums its points in point order, the transforms run
 * block by block and the interpolation point by point, so splitting the box rows, blocks and
 * points across threads (src/tsne/pool.ts) gives bit-identical results.
 */
import { smoothSize } from './fft.js';
import { blockCount, columnPass, kernelColumns, kernelRows, panelIndex, rowPass, threadBlocks } from './fft-block.js';
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
  /** The kernel's spectrum / L² (real) for kL and kh, by blocks of 8 rows: [ceil(L/8)][L][8]. */
  Kh: Float64Array;
  kL: number;
  kh: number;
  /** The kernel's columns transformed (scratch of the spectrum), column panels [ceil(L/8)][L][16]. */
  Kp: Float64Array;
  /**
   * The charge grids (q0 + i q1 in A, q2 + i q3 in B) as column panels (src/tsne/fft-block.ts):
   * the charges and potentials occupy rows and columns [0, M) of an L × L transform, so only the
   * ceil(M/8) panels of columns [0, M) are stored, [panel][L rows][8 real, 8 imaginary].
   */
  A: Float64Array;
  B: Float64Array;
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
  /** The kernel's spectrum, first half: its columns in panels [p0, p1) of ceil(L/8), transformed along the rows. */
  kernelColumns(g: InterpGrid, p0: number, p1: number): void {
    const d2 = (g.h / 3) * (g.h / 3);
    kernelColumns(threadBlocks(), g.Kp, g.L, d2, p0, p1);
  },
  /** The kernel's spectrum, second half: row blocks [b0, b1) of ceil(L/8) along the columns, / L², into Kh. */
  kernelRows(g: InterpGrid, b0: number, b1: number): void {
    kernelRows(threadBlocks(), g.Kp, g.L, 1 / (g.L * g.L), g.Kh, b0, b1);
  },
  /** The kernel's spectrum for the grid's L and h, on this thread. */
  kernelSpectrum(g: InterpGrid): void {
    interpWork.kernelColumns(g, 0, blockCount(g.L));
    interpWork.kernelRows(g, 0, blockCount(g.L));
    g.kL = g.L;
    g.kh = g.h;
  },
  /** Forward along the rows, panels [p0, p1) of ceil(M/8) (rows [M, L) of the charges are zero). */
  pass1(g: InterpGrid, p0: number, p1: number): void {
    const w = threadBlocks();
    columnPass(w, g.A, g.L, p0, p1, g.M, g.L, false);
    columnPass(w, g.B, g.L, p0, p1, g.M, g.L, false);
  },
  /** Row blocks [b0, b1) of ceil(L/8): forward along the columns, product with the kernel's spectrum / L², inverse. */
  middle(g: InterpGrid, b0: number, b1: number): void {
    const w = threadBlocks();
    rowPass(w, g.A, g.L, g.M, g.Kh, b0, b1);
    rowPass(w, g.B, g.L, g.M, g.Kh, b0, b1);
  },
  /** Inverse along the rows, panels [p0, p1) of ceil(M/8); rows [0, M) back. */
  pass2(g: InterpGrid, p0: number, p1: number): void {
    const w = threadBlocks();
    columnPass(w, g.A, g.L, p0, p1, g.L, g.M, true);
    columnPass(w, g.B, g.L, p0, p1, g.L, g.M, true);
  },
  /** Zero rows [0, M) of panels [p0, p1) of the charge grids (nothing else is read before it is written). */
  zeroPanels(g: InterpGrid, p0: number, p1: number): void {
    for (let p = p0; p < p1; p++) {
      const base = p * g.L * 16;
      g.A.fill(0, base, base + g.M * 16);
      g.B.fill(0, base, base + g.M * 16);
    }
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
    const { nb, L, h, A, B, box, wx, wy, byRow, rowStart } = g;
    const cx = g.lox + (nb * h) / 2;
    const cy = g.loy + (nb * h) / 2;
    for (let p = rowStart[b0]; p < rowStart[b1]; p++) {
      const i = byRow[p];
      const xc = Y[2 * i] - cx;
      const yc = Y[2 * i + 1] - cy;
      spreadPoint(L, box[2 * i], box[2 * i + 1], wx, wy, i, xc, yc, xc * xc + yc * yc, A, B);
    }
  },
  /** Interpolate the potentials back to points [i0, i1) and form F and Z_i. */
  interpolate(g: InterpGrid, Y: Float64Array, i0: number, i1: number, F: Float64Array, Zi: Float64Array): void {
    const { L, box, wx, wy, A, B } = g;
    const cx = g.lox + (g.nb * g.h) / 2;
    const cy = g.loy + (g.nb * g.h) / 2;
    for (let i = i0; i < i1; i++) {
      const gx = 3 * box[2 * i];
      const gy = 3 * box[2 * i + 1];
      let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
      for (let b = 0; b < 3; b++) {
        const vy = wy[3 * i + b];
        for (let a = 0; a < 3; a++) {
          const w = vy * wx[3 * i + a];
          const t = panelIndex(L, gy + b, gx + a);
          p0 += w * A[t];
          p1 += w * A[t + 8];
          p2 += w * B[t];
          p3 += w * B[t + 8];
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
function spreadPoint(L: number, bx: number, by: number, wx: Float64Array, wy: Float64Array, i: number, xc: number,
  yc: number, r2: number, A: Float64Array, B: Float64Array): void
{
  for (let b = 0; b < 3; b++) {
    const vy = wy[3 * i + b];
    for (let a = 0; a < 3; a++) {
      const w = vy * wx[3 * i + a];
      const t = panelIndex(L, 3 * by + b, 3 * bx + a);
      A[t] += w;
      A[t + 8] += w * xc;
      B[t] += w * yc;
      B[t + 8] += w * r2;
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
  private kcap = 0;
  readonly minBoxes: number;
  readonly boxWidth: number;

  constructor(private n: number, private shared = false, opts: InterpOptions = {}) {
    this.minBoxes = opts.minBoxes ?? 50;
    this.boxWidth = opts.boxWidth ?? 1;
    const f = (len: number) => new Float64Array(shared ? new SharedArrayBuffer(len * 8) : new ArrayBuffer(len * 8));
    const e = new Float64Array(0);
    const i32 = (len: number) => new Int32Array(shared ? new SharedArrayBuffer(4 * len) : new ArrayBuffer(4 * len));
    this.g = { nb: 0, M: 0, L: 0, lox: 0, loy: 0, h: 1, Kh: e, kL: 0, kh: 0, Kp: e, A: e, B: e, box: i32(2 * n),
      wx: f(3 * n), wy: f(3 * n), byRow: i32(n), rowStart: i32(1) };
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

  /** Size the grid for Y (its buffers grow when needed); the kernel's spectrum too unless `spectrum` is false (see needsSpectrum). */
  size(Y: Float64Array, spectrum = true): InterpGrid {
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
    if (g.rowStart.length < nb + 1)
      g.rowStart = new Int32Array(this.shared ? new SharedArrayBuffer(4 * (nb + 1)) : new ArrayBuffer(4 * (nb + 1)));
    // the kernel's L × L (panels and factors), the charges' ceil(M/8) panels of L rows
    const kcap = blockCount(L) * L * 16;
    if (kcap > this.kcap) {
      g.Kp = this.array(kcap);
      g.Kh = this.array(kcap / 2);
      g.kL = 0;
      this.kcap = kcap;
    }
    const cap = blockCount(M) * L * 16;
    if (cap > this.cap) {
      g.A = this.array(cap);
      g.B = this.array(cap);
      this.cap = cap;
    }
    if (spectrum && this.needsSpectrum()) interpWork.kernelSpectrum(g);
    return g;
  }

  /** Whether the kernel's spectrum is not the one of the grid's L and h (after size). */
  needsSpectrum(): boolean {
    return this.g.kL !== this.g.L || this.g.kh !== this.g.h;
  }

  private array(len: number): Float64Array {
    return new Float64Array(this.shared ? new SharedArrayBuffer(len * 8) : new ArrayBuffer(len * 8));
  }

  /** Each point's box and weights, and the charges spread onto the grid (this thread, point order). */
  spread(Y: Float64Array): void {
    const n = this.n;
    const g = this.g;
    const { nb, L, h, A, B, box, wx, wy } = g;
    interpWork.zeroPanels(g, 0, blockCount(g.M));
    interpWork.weights(g, Y, 0, n);
    const cx = g.lox + (nb * h) / 2;
    const cy = g.loy + (nb * h) / 2;
    for (let i = 0; i < n; i++) {
      const xc = Y[2 * i] - cx;
      const yc = Y[2 * i + 1] - cy;
      spreadPoint(L, box[2 * i], box[2 * i + 1], wx, wy, i, xc, yc, xc * xc + yc * yc, A, B);
    }
  }

  /** F and Z_i for every point on this thread (the same numbers as any split across threads). */
  compute(Y: Float64Array, F: Float64Array, Zi: Float64Array): void {
    const g = this.size(Y);
    this.spread(Y);
    interpWork.pass1(g, 0, blockCount(g.M));
    interpWork.middle(g, 0, blockCount(g.L));
    interpWork.pass2(g, 0, blockCount(g.M));
    interpWork.interpolate(g, Y, 0, this.n, F, Zi);
  }
}
