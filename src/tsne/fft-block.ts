/**
 * The 2-D transforms of the FFT-interpolated repulsion (src/tsne/interp.ts) by blocks of
 * BLOCK_COLUMNS = 8 lines: a block is copied from the grid into a thread's workspace as
 * [length][8 real, 8 imaginary] (a row block transposed on the way in), transformed there by the
 * stages of src/tsne/fft.ts (the WebAssembly SIMD kernels of src/tsne/fft-simd.ts, or their
 * JavaScript twins, bit-identical), and copied back. A block stays in the core's cache through all
 * its stages, and no pass transposes the whole grid.
 *
 * Blocks are numbered from 0 in steps of 8 whatever the thread, and each is computed the same way
 * wherever it runs, so splitting the blocks across threads gives bit-identical results.
 */
import { fftPlan, fftStage, type FftPlan } from './fft.js';
import { fftSimd, BLOCK_COLUMNS as BW, BLOCK_ROW as BR, type FftSimd } from './fft-simd.js';

const SQRT3_2 = Math.sqrt(3) / 2;

/** One thread's workspace: blocks x and y of `rows` rows, a factor block, the twiddles of one length. */
export class FftBlocks {
  private k: FftSimd | null;
  /** The workspace as float64 values. */
  M = new Float64Array(0);
  private rows = 0;
  /** Offsets (float64 values) of block x, block y and the factor block [rows][8]. */
  x = 0;
  y = 0;
  kf = 0;
  private twLen = 0;
  /** Per direction (0 forward, 1 inverse): the constants' offset and each stage's twiddles' offset. */
  private cst = [0, 0];
  private tw: number[][] = [[], []];

  constructor(simd = true) {
    this.k = simd ? fftSimd() : null;
  }

  /** Room for transforms of length n, and n's twiddles loaded. */
  ensure(n: number): void {
    if (n <= this.rows && n === this.twLen) return;
    const plan = fftPlan(n);
    const rows = Math.max(this.rows, n);
    const twSize = plan.stages.reduce((a, st) => a + 2 * st.m * (st.r - 1), 0);
    const total = 8 + 2 * rows * BR + rows * BW + 2 * twSize;
    if (total > this.M.length) {
      if (this.k && this.k.ensure(total * 8)) this.M = new Float64Array(this.k.memory.buffer);
      else {
        this.k = null;
        this.M = new Float64Array(Math.ceil(total * 1.25));
      }
    }
    this.rows = rows;
    this.x = 8;
    this.y = this.x + rows * BR;
    this.kf = this.y + rows * BR;
    let at = this.kf + rows * BW;
    for (let dir = 0; dir < 2; dir++) {
      const sg = dir === 0 ? -1 : 1;
      this.cst[dir] = 4 * dir;
      this.M.set([-sg, sg, sg * SQRT3_2, 0.5], 4 * dir);
      this.tw[dir] = plan.stages.map((st) => {
        const start = at;
        for (let t = 0; t < st.m * (st.r - 1); t++) {
          this.M[at++] = st.cos[t];
          this.M[at++] = sg * st.sin[t];
        }
        return start;
      });
    }
    this.twLen = n;
  }

  /** Transform the block at `from` (x or y) along its rows (length plan.n, after ensure(plan.n)); the offset of the result (x or y). */
  transform(plan: FftPlan, inverse: boolean, from = this.x): number {
    const dir = inverse ? 1 : 0;
    const M = this.M;
    let a = from, b = from === this.x ? this.y : this.x;
    plan.stages.forEach((st, si) => {
      const k = this.k;
      if (k) {
        const f = st.r === 4 ? k.r4 : st.r === 3 ? k.r3 : k.r2;
        f(8 * a, 8 * b, st.m, st.s, 8 * this.tw[dir][si], 8 * this.cst[dir]);
      } else
        fftStage(st, M.subarray(a), M.subarray(a + BW), M.subarray(b), M.subarray(b + BW), BR, 0, BW, inverse ? 1 : -1);
      const t = a;
      a = b;
      b = t;
    });
    return a;
  }

  /** The block at `at` times the factor block, `rows` rows. */
  mulFactors(at: number, rows: number): void {
    if (this.k) return this.k.mul(8 * at, 8 * this.kf, rows, 0, 0, 0);
    const M = this.M;
    for (let r = 0; r < rows; r++) {
      const o = at + r * BR;
      const f = this.kf + r * BW;
      for (let c = 0; c < BW; c++) {
        M[o + c] *= M[f + c];
        M[o + BW + c] *= M[f + c];
      }
    }
  }
}

let mine: FftBlocks | undefined;
/** This thread's workspace. */
export function threadBlocks(): FftBlocks {
  return (mine ??= new FftBlocks(!process.env.LOBES_NO_SIMD));
}

/** Number of 8-line blocks covering `lines` lines. */
export function blockCount(lines: number): number {
  return Math.ceil(lines / BW);
}

/**
 * A grid stored as column panels: panel p holds columns 8p … 8p+7 of every row, [rows][8 real,
 * 8 imaginary], so a panel is a block as the transforms take it. Element (r, c) is at
 * panelIndex(rows, r, c) (real part; the imaginary part 8 after).
 */
export function panelIndex(rows: number, r: number, c: number): number {
  return ((c >> 3) * rows + r) * BR + (c & 7);
}

/** Panels [p0, p1) of P ([panels][n][16]): rows [0, rowsIn) in (the rest zero), transformed along the rows, rows [0, rowsOut) back. */
export function columnPass(w: FftBlocks, P: Float64Array, n: number, p0: number, p1: number, rowsIn: number,
  rowsOut: number, inverse: boolean): void
{
  const plan = fftPlan(n);
  w.ensure(n);
  const M = w.M;
  const x = w.x;
  for (let p = p0; p < p1; p++) {
    const base = p * n * BR;
    M.set(P.subarray(base, base + rowsIn * BR), x);
    M.fill(0, x + rowsIn * BR, x + n * BR);
    const a = w.transform(plan, inverse);
    P.set(M.subarray(a, a + rowsOut * BR), base);
  }
}

/**
 * Row blocks [b0, b1) of P ([panels][n][16], `cols` columns): rows 8b … 8b+7, columns [0, cols) in
 * (the rest zero), forward along the columns (length n), times the factors of block b (factors:
 * [blocks][n][8], real), inverse, back (every column of the panels).
 */
export function rowPass(w: FftBlocks, P: Float64Array, n: number, cols: number, factors: Float64Array, b0: number,
  b1: number): void
{
  const plan = fftPlan(n);
  w.ensure(n);
  const M = w.M;
  for (let b = b0; b < b1; b++) {
    let a = rowBlockForward(w, plan, P, n, cols, b);
    M.set(factors.subarray(b * n * BW, (b + 1) * n * BW), w.kf);
    w.mulFactors(a, n);
    a = w.transform(plan, true, a);
    toPanels(M, a, P, n, blockCount(cols), b * BW, Math.min(BW, n - b * BW));
  }
}

/** Rows 8b … 8b+7, columns [0, cols) of the panels ([panels][n][16]) into w's block x (the rest zero), transformed forward along the columns; the result's offset. */
function rowBlockForward(w: FftBlocks, plan: FftPlan, P: Float64Array, n: number, cols: number, b: number): number {
  const M = w.M;
  const x = w.x;
  const r0 = b * BW;
  const wd = Math.min(BW, n - r0);
  if (wd < BW) M.fill(0, x, x + cols * BR);
  fromPanels(M, x, P, n, cols, r0, wd);
  M.fill(0, x + cols * BR, x + n * BR);
  return w.transform(plan, false);
}

/** Rows r0 … r0+wd−1, columns [0, cols) of the panels into the block at x transposed: element (r0 + j, c) to block row c, lane j. */
function fromPanels(M: Float64Array, x: number, P: Float64Array, n: number, cols: number, r0: number,
  wd: number): void
{
  for (let p = 0; p < blockCount(cols); p++) {
    const s = (p * n + r0) * BR;
    const iw = Math.min(BW, cols - p * BW);
    for (let j = 0; j < wd; j++) {
      const o = x + p * BW * BR + j;
      const t = s + j * BR;
      for (let i = 0; i < iw; i++) {
        M[o + i * BR] = P[t + i];
        M[o + i * BR + BW] = P[t + BW + i];
      }
    }
  }
}

/** fromPanels' inverse for all 8 lanes of `panels` panels: block row c, lane j of the block at a to element (r0 + j, c). */
function toPanels(M: Float64Array, a: number, P: Float64Array, n: number, panels: number, r0: number,
  wd: number): void
{
  for (let p = 0; p < panels; p++) {
    const d = (p * n + r0) * BR;
    for (let j = 0; j < wd; j++) {
      const o = a + p * BW * BR + j;
      const t = d + j * BR;
      for (let i = 0; i < BW; i++) {
        P[t + i] = M[o + i * BR];
        P[t + BW + i] = M[o + i * BR + BW];
      }
    }
  }
}

/**
 * The kernel K[r][c] = 1/(1 + d2 (dr² + dc²))², dr = min(r, n−r), dc = min(c, n−c), for the
 * columns of panels [p0, p1), transformed along the rows into Kp ([panels][n][16]).
 */
export function kernelColumns(w: FftBlocks, Kp: Float64Array, n: number, d2: number, p0: number, p1: number): void {
  const plan = fftPlan(n);
  w.ensure(n);
  const M = w.M;
  const x = w.x;
  for (let p = p0; p < p1; p++) {
    const c0 = p * BW;
    const wd = Math.min(BW, n - c0);
    M.fill(0, x, x + n * BR);
    for (let r = 0; r < n; r++) {
      const dr = Math.min(r, n - r);
      const o = x + r * BR;
      for (let j = 0; j < wd; j++) {
        const dc = Math.min(c0 + j, n - c0 - j);
        const v = 1 / (1 + d2 * (dr * dr + dc * dc));
        M[o + j] = v * v;
      }
    }
    const a = w.transform(plan, false);
    Kp.set(M.subarray(a, a + n * BR), p * n * BR);
  }
}

/** Row blocks [b0, b1) of kernelColumns' output transformed along the columns; the real part × scale into factors ([blocks][n][8]). */
export function kernelRows(w: FftBlocks, Kp: Float64Array, n: number, scale: number, factors: Float64Array, b0: number,
  b1: number): void
{
  const plan = fftPlan(n);
  w.ensure(n);
  const M = w.M;
  for (let b = b0; b < b1; b++) {
    const wd = Math.min(BW, n - b * BW);
    const a = rowBlockForward(w, plan, Kp, n, n, b);
    const f = b * n * BW;
    for (let c = 0; c < n; c++)
      for (let j = 0; j < BW; j++) factors[f + c * BW + j] = j < wd ? M[a + c * BR + j] * scale : 0;
  }
}
