import { describe, expect, it } from 'vitest';
import { claimSlot, pairSpace, pairSumsJs } from '../../src/tsne/knn-simd.js';
import { Rng } from '../../src/util/rng.js';

// The oracle: one scalar sum per row in column order, written out here (the kernel and its
// JavaScript twin must both give these values to the bit).
function naive(X: ArrayLike<number>, d: number, i: number, j: number, op: 'diff' | 'dot'): number {
  let s = 0;
  for (let c = 0; c < d; c++) {
    const a = X[i * d + c] - X[j * d + c];
    s += op === 'diff' ? a * a : X[i * d + c] * X[j * d + c];
  }
  return s;
}

/** Rows at scales 10⁻³⁰⁰…10³⁰⁰ with mixed signs, so any change of summation order shows. */
function data(n: number, d: number, seed: number, f32: boolean): Float64Array {
  const rng = new Rng(seed);
  const X = new Float64Array(n * d);
  for (let t = 0; t < n * d; t++) {
    const scale = [1, 1e-3, 1e3, 1e8, 1e-8][rng.int(5)];
    X[t] = rng.normal() * scale;
  }
  for (let c = 0; c < d; c++) X[5 * d + c] = f32 ? 1e30 * (c + 1) : 1e150 * (c + 1); // huge row
  for (let c = 0; c < d; c++) X[6 * d + c] = f32 ? 1e-30 * (c + 1) : 1e-300 * (c + 1); // tiny row
  return f32 ? X.map(Math.fround) : X;
}

describe('the kNN sums kernel (src/tsne/knn-simd.ts)', () => {
  it('gives the JavaScript twin’s and a plain column-order loop’s sums to the bit, float32 and float64, any list length', () => {
    const n = 40;
    const rng = new Rng(3);
    for (const f32 of [true, false]) {
      for (const d of [1, 3, 17, 64]) {
        const X = data(n, d, d, f32);
        const ps = pairSpace(X, n, d, 2, f32);
        if (process.env.LOBES_NO_SIMD) {
          expect(ps).toBeNull();
          continue;
        }
        expect(ps).not.toBeNull();
        const slot = claimSlot(ps!.space)!;
        expect(slot).not.toBeNull();
        for (const m of [0, 1, 2, 3, 7, 8, 9, 16, 19, 39]) {
          const i = rng.int(n);
          const idx = Int32Array.from({ length: m }, () => rng.int(n));
          if (m > 2) idx[1] = i; // the row itself: 0
          if (m > 4) {
            idx[2] = 5;
            idx[3] = 6;
          }
          for (const op of ['diff', 'dot'] as const) {
            const simd = new Float64Array(m).fill(NaN);
            const js = new Float64Array(m).fill(NaN);
            slot.sums(i, idx, m, op, simd);
            pairSumsJs(X, d, i, idx, m, op, js);
            for (let t = 0; t < m; t++) {
              const want = naive(X, d, i, idx[t], op);
              expect(Object.is(js[t], want), `js ${op} d ${d} m ${m} t ${t}`).toBe(true);
              expect(Object.is(simd[t], want), `simd ${op} f32 ${f32} d ${d} m ${m} t ${t}: ${simd[t]} vs ${want}`)
                .toBe(true);
            }
          }
        }
        slot.release();
      }
    }
  });

  it('holds X as given (float32 or float64) and hands out each slot once until released', () => {
    const X = data(10, 8, 1, false);
    const ps = pairSpace(X, 10, 8, 2, false);
    if (!ps) return; // no WebAssembly SIMD here (LOBES_NO_SIMD): the JavaScript path is tested above
    expect(Array.from(ps.X)).toEqual(Array.from(X));
    const a = claimSlot(ps.space);
    const b = claimSlot(ps.space);
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    expect(claimSlot(ps.space)).toBeNull();
    // two slots at once: each keeps its own query row and sums
    const oa = new Float64Array(3);
    const ob = new Float64Array(3);
    a!.sums(0, Int32Array.from([1, 2, 3]), 3, 'diff', oa);
    b!.sums(4, Int32Array.from([1, 2, 3]), 3, 'diff', ob);
    a!.sums(0, Int32Array.from([1, 2, 3]), 3, 'diff', oa);
    for (let t = 0; t < 3; t++) {
      expect(oa[t]).toBe(naive(X, 8, 0, t + 1, 'diff'));
      expect(ob[t]).toBe(naive(X, 8, 4, t + 1, 'diff'));
    }
    a!.release();
    expect(claimSlot(ps.space)).not.toBeNull();
    const F = Float32Array.from(X);
    const pf = pairSpace(F, 10, 8, 1, true)!;
    expect(pf.X).toBeInstanceOf(Float32Array);
    expect(Array.from(pf.X)).toEqual(Array.from(F));
  });
});
