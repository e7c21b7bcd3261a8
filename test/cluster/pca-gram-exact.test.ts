/**
 * The in-fold PCA from the Gram matrix (src/cluster/pca-gram.ts gramPcaProject) after its loops were
 * reorganized for speed gives what its first version gave, bit for bit
 * (test/cluster/reference/gram-pca-before.ts): on an upper-triangular and on a full Gram matrix,
 * on sorted and unsorted training rows, with more and fewer components than the sketch's rank;
 * and the packed products it uses give mulXBRows' sums exactly.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { gramRows } from '../../src/cluster/metrics.js';
import { mulXBRows, mulXBRowsJs, mulXtBCols, mulXtBColsJs, sketchOmega } from '../../src/cluster/pca.js';
import { gramPcaProject, mulPackedRows, mulPackedRowsJs, packedRows, symmetricCopy,
  symmetricGram } from '../../src/cluster/pca-gram.js';
import { gramUpper, gramUpperJs } from '../../src/cluster/linalg.js';
import { gramPcaProjectBefore } from './reference/gram-pca-before.js';

/** n rows of d dims with a decaying spectrum. */
function rows(n: number, d: number, seed: number): Float64Array {
  const rng = new Rng(seed);
  return Float64Array.from({ length: n * d }, (_, t) => (3 * rng.normal()) / Math.sqrt(1 + (t % d)));
}

/** Whether two arrays hold the same float64 values bit for bit (+0 and −0 told apart). */
function sameBits(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  const ua = new BigUint64Array(a.buffer, a.byteOffset, a.length);
  const ub = new BigUint64Array(b.buffer, b.byteOffset, b.length);
  return ua.every((v, i) => v === ub[i]);
}

describe('gramPcaProject against its first version', () => {
  const n = 90;
  const d = 160;
  const X = rows(n, d, 5);
  const G = new Float64Array(n * n);
  gramRows(X, n, d, G, 0, n);
  const rng = new Rng(9);
  const order = Array.from({ length: n }, (_, i) => i);
  rng.shuffle(order);
  const sorted = { train: Int32Array.from(order.slice(0, 70)).sort(), test: Int32Array.from(order.slice(70)).sort() };
  const unsorted = { train: Int32Array.from(order.slice(0, 70)), test: Int32Array.from(order.slice(70)) };
  const all = Int32Array.from({ length: n }, (_, i) => i);
  const fifth = { train: all.filter((i) => i % 5 !== 2), test: all.filter((i) => i % 5 === 2) };
  const cases = [
    { name: 'every fifth row tested (the rows of every tile of the symmetric copy trained)', split: fifth, k: 8,
      l: 18 },
    { name: 'sorted rows, k 8 of a sketch of 18', split: sorted, k: 8, l: 18 },
    { name: 'unsorted rows, k 8', split: unsorted, k: 8, l: 18 },
    { name: 'k equal to the sketch (every column projected)', split: sorted, k: 13, l: 13 },
    { name: 'an odd number of rows (a partial quad) and one power iteration',
      split: { train: sorted.train.subarray(0, 67), test: sorted.test.subarray(0, 19) }, k: 5, l: 15, q: 1 },
  ];
  for (const c of cases) {
    it(`${c.name}: the same features bit for bit, from the upper triangle and from the full matrix`, () => {
      const XO = new Float64Array(n * c.l);
      mulXBRows(X, d, sketchOmega(d, c.l, 3), c.l, XO, 0, n);
      const q = c.q ?? 2;
      const before = gramPcaProjectBefore(G, n, XO, c.l, c.split.train, c.split.test, c.k, q);
      const now = gramPcaProject(G, n, XO, c.l, c.split.train, c.split.test, c.k, q);
      const full = gramPcaProject(symmetricCopy(G, n, new Float64Array(n * n)), n, XO, c.l, c.split.train, c.split.test,
        c.k, q, true);
      expect(now.k).toBe(before.k);
      expect(sameBits(now.tr, before.tr)).toBe(true);
      expect(sameBits(now.te, before.te)).toBe(true);
      expect(sameBits(full.tr, before.tr) && sameBits(full.te, before.te)).toBe(true);
      // not trivially equal: the features carry the data
      expect(before.tr.some((v) => Math.abs(v) > 1)).toBe(true);
    });
  }

  it('a symmetric copy mirrors the upper triangle and leaves the input as it was', () => {
    const S = symmetricGram(G, n);
    expect(symmetricGram(G, n)).toBe(S);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) expect(S[i * n + j]).toBe(G[Math.min(i, j) * n + Math.max(i, j)]);
    expect(G[5 * n + 2]).toBe(0);
  });
});

describe('the packed products', () => {
  const rng = new Rng(4);
  const r = 11;
  const len = 37;
  const l = 9;
  const A = Float64Array.from({ length: r * len }, () => rng.normal());
  const B = Float64Array.from({ length: len * l }, () => rng.normal());
  it('mulPackedRows (kernel and JavaScript) equals mulXBRows of the unpacked rows, bit for bit', () => {
    const P = packedRows(r, len, (a, row) => row.set(A.subarray(a * len, (a + 1) * len)));
    const want = new Float64Array(r * l);
    mulXBRowsJs(A, len, B, l, want, 0, r);
    const got = new Float64Array(r * l);
    mulPackedRows(P, len, B, l, got, r);
    const js = new Float64Array(r * l);
    mulPackedRowsJs(P, len, B, l, js, r);
    expect(sameBits(got, want)).toBe(true);
    expect(sameBits(js, want)).toBe(true);
  });
  it('mulXtBCols takes float64 rows (kernel and JavaScript alike)', () => {
    const a = new Float64Array(len * l);
    const b = new Float64Array(len * l);
    mulXtBCols(A, r, len, Float64Array.from({ length: r * l }, (_, t) => B[t]), l, a, 0, len);
    mulXtBColsJs(A, r, len, Float64Array.from({ length: r * l }, (_, t) => B[t]), l, b, 0, len);
    expect(sameBits(a, b)).toBe(true);
    let s = 0;
    for (let i = 0; i < r; i++) s += A[i * len + 3] * B[i * l + 2];
    expect(a[3 * l + 2]).toBe(s);
  });
});

describe('the Gram matrix of the orthonormalization (linalg.ts gramUpper)', () => {
  const rng = new Rng(8);
  // column counts off the kernel's quads and past one call's 256 columns; row counts off four (the JavaScript tail); zeros
  for (const [rows, cols] of [[1600, 60], [37, 7], [13, 263], [6, 1]] as const) {
    it(`${rows} x ${cols}: the kernel's sums are the JavaScript loop's, bit for bit`, () => {
      const A = Float64Array.from({ length: rows * cols }, (_, t) => (t % 11 === 3 ? 0 : rng.normal()));
      const viaKernel = gramUpper(A, rows, cols);
      const js = gramUpperJs(A, rows, cols);
      expect(sameBits(viaKernel, js)).toBe(true);
      let s = 0;
      for (let i = 0; i < rows; i++) s += A[i * cols] * A[i * cols + cols - 1];
      expect(viaKernel[cols - 1]).toBe(s);
      // only the upper triangle
      if (cols > 1) expect(viaKernel[cols]).toBe(0);
    });
  }
});
