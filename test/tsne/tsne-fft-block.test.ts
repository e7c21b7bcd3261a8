import { describe, it, expect } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { fftPlan, naiveDft } from '../../src/tsne/fft.js';
import { FftBlocks, blockCount, columnPass, kernelColumns, kernelRows, panelIndex,
  rowPass } from '../../src/tsne/fft-block.js';
import { fftSimd } from '../../src/tsne/fft-simd.js';

const same = (a: Float64Array, b: Float64Array) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
const simd = fftSimd() !== null;

/** A random n × cols complex grid: plain [n][cols] arrays and the same values as panels. */
function grid(n: number, cols: number, seed: number) {
  const rng = new Rng(seed);
  const re = new Float64Array(n * cols).map(() => rng.normal());
  const im = new Float64Array(n * cols).map(() => rng.normal());
  const P = new Float64Array(blockCount(cols) * n * 16);
  for (let r = 0; r < n; r++)
    for (let c = 0; c < cols; c++) {
      P[panelIndex(n, r, c)] = re[r * cols + c];
      P[panelIndex(n, r, c) + 8] = im[r * cols + c];
    }
  return { re, im, P };
}

function maxErr(P: Float64Array, n: number, cols: number, re: Float64Array, im: Float64Array, rows = n): number {
  let e = 0;
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++)
      e = Math.max(e, Math.abs(P[panelIndex(n, r, c)] - re[r * cols + c]),
        Math.abs(P[panelIndex(n, r, c) + 8] - im[r * cols + c]));
  return e;
}

describe('FFT by blocks of 8 lines', () => {
  it('the WebAssembly stages give the JavaScript stages’ numbers to the bit, forward and inverse, from either block', () => {
    expect(simd).toBe(true);
    for (const n of [1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 27, 32, 36, 54, 81, 96, 324, 768]) {
      const ws = [new FftBlocks(true), new FftBlocks(false)];
      const rng = new Rng(n);
      const vals = new Float64Array(n * 16).map(() => rng.normal());
      const outs = ws.map((w) => {
        w.ensure(n);
        w.M.set(vals, w.x);
        let a = w.transform(fftPlan(n), false);
        a = w.transform(fftPlan(n), true, a);
        w.M.set(vals.subarray(0, n * 8), w.kf);
        w.mulFactors(a, n);
        return w.M.slice(a, a + n * 16);
      });
      expect(same(outs[0], outs[1])).toBe(true);
    }
  });

  it('a column pass equals a naive DFT of every column, with rows zero-padded in and rows dropped out, and splits by panels to the bit', () => {
    for (const [n, cols] of [[24, 12], [54, 27], [96, 17], [108, 8]]) {
      for (const w of [new FftBlocks(true), new FftBlocks(false)]) {
        for (const inverse of [false, true]) {
          const g = grid(n, cols, n + cols);
          const half = Math.floor(n / 2);
          // rows [half, n) are zero on the way in
          const zre = g.re.slice(), zim = g.im.slice();
          zre.fill(0, half * cols);
          zim.fill(0, half * cols);
          const ref = naiveDft(zre, zim, n, cols, inverse);
          const whole = g.P.slice();
          columnPass(w, whole, n, 0, blockCount(cols), half, n, inverse);
          expect(maxErr(whole, n, cols, ref.re, ref.im)).toBeLessThan(1e-12 * n * n);
          // two calls on two panel ranges: the same numbers
          const parts = g.P.slice();
          columnPass(w, parts, n, 0, 1, half, n, inverse);
          columnPass(w, parts, n, 1, blockCount(cols), half, n, inverse);
          expect(same(parts, whole)).toBe(true);
          // rows [0, 5) only come back; the others keep what they held
          const few = g.P.slice();
          columnPass(w, few, n, 0, blockCount(cols), half, 5, inverse);
          expect(maxErr(few, n, cols, ref.re, ref.im, 5)).toBeLessThan(1e-12 * n * n);
          expect(few[panelIndex(n, 5, 0)]).toBe(g.P[panelIndex(n, 5, 0)]);
        }
      }
    }
  });

  it('a row pass equals forward DFTs along the rows, a product with the factors and inverse DFTs, and splits by row blocks to the bit', () => {
    for (const [n, cols] of [[24, 12], [54, 27], [36, 18]]) {
      const g = grid(n, cols, 7 * n);
      const rng = new Rng(cols);
      const f = new Float64Array(n * n).map(() => rng.normal()); // factor of (row r, frequency c)
      const factors = new Float64Array(blockCount(n) * n * 8);
      for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) factors[((r >> 3) * n + c) * 8 + (r & 7)] = f[r * n + c];
      // the reference: each row zero-padded to n, as a column of the transposed grid
      const tre = new Float64Array(n * n), tim = new Float64Array(n * n);
      for (let r = 0; r < n; r++)
        for (let c = 0; c < cols; c++) {
          tre[c * n + r] = g.re[r * cols + c];
          tim[c * n + r] = g.im[r * cols + c];
        }
      const fwd = naiveDft(tre, tim, n, n, false);
      for (let c = 0; c < n; c++)
        for (let r = 0; r < n; r++) {
          fwd.re[c * n + r] *= f[r * n + c];
          fwd.im[c * n + r] *= f[r * n + c];
        }
      const back = naiveDft(fwd.re, fwd.im, n, n, true);
      const ref = { re: new Float64Array(n * cols), im: new Float64Array(n * cols) };
      for (let r = 0; r < n; r++)
        for (let c = 0; c < cols; c++) {
          ref.re[r * cols + c] = back.re[c * n + r];
          ref.im[r * cols + c] = back.im[c * n + r];
        }
      const outs = [new FftBlocks(true), new FftBlocks(false)].map((w) => {
        const whole = g.P.slice();
        rowPass(w, whole, n, cols, factors, 0, blockCount(n));
        expect(maxErr(whole, n, cols, ref.re, ref.im)).toBeLessThan(1e-11 * n * n);
        const parts = g.P.slice();
        rowPass(w, parts, n, cols, factors, 0, 2);
        rowPass(w, parts, n, cols, factors, 2, blockCount(n));
        expect(same(parts, whole)).toBe(true);
        return whole;
      });
      expect(same(outs[0], outs[1])).toBe(true);
    }
  });

  it('the kernel’s spectrum equals a naive 2-D DFT of the kernel over n², in row blocks of 8 factors', () => {
    for (const n of [24, 54]) {
      const d2 = 0.09;
      const kre = new Float64Array(n * n), kim = new Float64Array(n * n);
      for (let r = 0; r < n; r++)
        for (let c = 0; c < n; c++) {
          const dr = Math.min(r, n - r), dc = Math.min(c, n - c);
          kre[r * n + c] = (1 / (1 + d2 * (dr * dr + dc * dc))) ** 2;
        }
      const a = naiveDft(kre, kim, n, n, false);
      const t = { re: new Float64Array(n * n), im: new Float64Array(n * n) };
      for (let r = 0; r < n; r++)
        for (let c = 0; c < n; c++) {
          t.re[c * n + r] = a.re[r * n + c];
          t.im[c * n + r] = a.im[r * n + c];
        }
      const b = naiveDft(t.re, t.im, n, n, false); // b[c][r]: frequency (r, c)
      const outs = [new FftBlocks(true), new FftBlocks(false)].map((w) => {
        const Kp = new Float64Array(blockCount(n) * n * 16);
        const factors = new Float64Array(blockCount(n) * n * 8).fill(NaN);
        kernelColumns(w, Kp, n, d2, 0, 1);
        kernelColumns(w, Kp, n, d2, 1, blockCount(n));
        kernelRows(w, Kp, n, 1 / (n * n), factors, 0, blockCount(n));
        let e = 0;
        for (let r = 0; r < n; r++)
          for (let c = 0; c < n; c++)
            e = Math.max(e, Math.abs(factors[((r >> 3) * n + c) * 8 + (r & 7)] - b.re[c * n + r] / (n * n)));
        expect(e).toBeLessThan(1e-13);
        // the lanes past the last row are zero, not left over
        expect(factors.every((v) => Number.isFinite(v))).toBe(true);
        return factors;
      });
      expect(same(outs[0], outs[1])).toBe(true);
    }
  });
});
