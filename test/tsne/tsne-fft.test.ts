import { describe, it, expect } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { blobs } from '../cluster/blobs.js';
import { fftColumns, fftPlan, naiveDft, smoothSize, isSmooth } from '../../src/tsne/fft.js';
import { InterpRepulsion, lagrange3 } from '../../src/tsne/interp.js';
import { Tsne } from '../../src/cluster/tsne-pca.js';
import { exactRepulsion, tsneGradient, exactKl, MIXED_MIN_POINTS, POLISH_ITERATIONS,
  fftIteration } from '../../src/tsne/tsne.js';
import { denseP } from '../../src/tsne/affinity.js';
import { QuadTree, repulsionAll } from '../../src/tsne/quadtree.js';

function gaussianY(n: number, seed: number, scale: number): Float64Array {
  const rng = new Rng(seed);
  return new Float64Array(2 * n).map(() => rng.normal() * scale);
}

/** ‖a − b‖ / ‖b‖. */
function relErr(a: Float64Array, b: Float64Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return Math.sqrt(num / den);
}

describe('FFT', () => {
  it('equals a naive DFT, forward and inverse, for lengths 2^a·3^b, on several columns', () => {
    for (const n of [1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 27, 32, 36, 48, 54, 64, 81, 96, 108]) {
      const B = 3;
      const rng = new Rng(n);
      const re = new Float64Array(n * B).map(() => rng.normal());
      const im = new Float64Array(n * B).map(() => rng.normal());
      for (const inverse of [false, true]) {
        const ref = naiveDft(re, im, n, B, inverse);
        const a = re.slice();
        const b = im.slice();
        fftColumns(fftPlan(n), a, b, new Float64Array(n * B), new Float64Array(n * B), B, 0, B, inverse);
        let err = 0;
        let mag = 0;
        for (let t = 0; t < n * B; t++) {
          err = Math.max(err, Math.abs(a[t] - ref.re[t]), Math.abs(b[t] - ref.im[t]));
          mag = Math.max(mag, Math.abs(ref.re[t]), Math.abs(ref.im[t]));
        }
        expect(err).toBeLessThan(1e-12 * Math.max(1, mag) * n);
      }
    }
  });

  it('transforms each column the same whatever the column range; sizes are 2^a·3^b', () => {
    const n = 72;
    const B = 10;
    const rng = new Rng(3);
    const re = new Float64Array(n * B).map(() => rng.normal());
    const im = new Float64Array(n * B).map(() => rng.normal());
    const whole = [re.slice(), im.slice()];
    const T = [new Float64Array(n * B), new Float64Array(n * B)];
    fftColumns(fftPlan(n), whole[0], whole[1], T[0], T[1], B, 0, B, false);
    const parts = [re.slice(), im.slice()];
    for (const [c0, c1] of [[0, 3], [3, 4], [4, 10]])
      fftColumns(fftPlan(n), parts[0], parts[1], T[0], T[1], B, c0, c1, false);
    expect(Array.from(parts[0])).toEqual(Array.from(whole[0]));
    expect(Array.from(parts[1])).toEqual(Array.from(whole[1]));
    expect([smoothSize(50), smoothSize(97), smoothSize(1)]).toEqual([54, 108, 1]);
    expect(isSmooth(150)).toBe(false);
    expect(() => fftPlan(10)).toThrow(/2\^a/);
  });
});

describe('FFT-interpolated repulsion', () => {
  it('Lagrange weights reproduce quadratics', () => {
    const w = new Float64Array(3);
    for (const t of [0, 0.1, 0.5, 0.77, 1]) {
      lagrange3(t, w, 0);
      const nodes = [1 / 6, 0.5, 5 / 6];
      for (const f of [() => 1, (x: number) => x, (x: number) => 3 * x * x - x + 2]) {
        expect(w[0] * f(nodes[0]) + w[1] * f(nodes[1]) + w[2] * f(nodes[2])).toBeCloseTo(f(t), 12);
      }
    }
  });

  // openTSNE 1.0.4's estimate_negative_gradient_fft_2d (the same defaults) on the same kind of
  // data: force error 6.6e-4 at scale 3 and 4.4e-2 at scale 20 (n = 1500; bench/RESULTS.md)
  it('matches the exact O(N²) sums: < 1e-3 on a compact embedding, < 6e-2 on a wide one (box width 1), better with smaller boxes', () => {
    const n = 1500;
    const F = new Float64Array(2 * n);
    const Zi = new Float64Array(n);
    const Fi = new Float64Array(2 * n);
    const Zf = new Float64Array(n);
    const cases: [number, number, number, number][] = [
      // scale, box width, force error bound, Z error bound
      [3, 1, 1e-3, 2e-4],
      [20, 1, 6e-2, 3e-2],
      [20, 0.25, 2e-3, 5e-4],
    ];
    for (const [scale, boxWidth, fb, zb] of cases) {
      const Y = gaussianY(n, 7, scale);
      exactRepulsion(Y, n, F, Zi);
      new InterpRepulsion(n, false, { boxWidth }).compute(Y, Fi, Zf);
      expect(relErr(Fi, F)).toBeLessThan(fb);
      expect(relErr(Zf, Zi)).toBeLessThan(zb);
    }
  });

  it('the gradient is closer to the exact one than Barnes–Hut’s early (compact, exaggerated); late, the repulsive sums within a few percent', async () => {
    const n = 800;
    const { X } = blobs(n, 10, 5, 4, 2);
    const t = await Tsne.create(X, n, 10, { affinity: { perplexity: 20 },
      optimizer: { seed: 1, iterations: 400, method: 'bh' } });
    t.init();
    for (let it = 0; it < 400; it++) {
      t.step();
      if (it === 100 || it === 399) {
        const ex = t.exaggeration;
        if (it === 100) {
          const exact = tsneGradient(t.P, t.Y, 0, ex);
          const fft = tsneGradient(t.P, t.Y, 0.5, ex, 'fft');
          const bh = tsneGradient(t.P, t.Y, 0.5, ex, 'bh');
          expect(relErr(fft, exact)).toBeLessThan(1e-4);
          expect(relErr(fft, exact)).toBeLessThan(relErr(bh, exact));
        } else {
          // near convergence attraction and repulsion cancel, so the net gradient's relative error
          // is large for any approximation; the repulsive sums themselves are what is approximated
          const F = new Float64Array(2 * n);
          const Zi = new Float64Array(n);
          const Fi = new Float64Array(2 * n);
          const Zf = new Float64Array(n);
          exactRepulsion(t.Y, n, F, Zi);
          new InterpRepulsion(n).compute(t.Y, Fi, Zf);
          expect(relErr(Fi, F)).toBeLessThan(3e-2);
          expect(relErr(Zf, Zi)).toBeLessThan(2e-2);
        }
      }
    }
  });

  it('puts every point in a box of the grid, including identical points and a point on the top edge', () => {
    const n = 50;
    const Y = new Float64Array(2 * n);
    for (let i = 0; i < n; i++) {
      Y[2 * i] = i < 10 ? 0 : i / 10;
      Y[2 * i + 1] = i < 10 ? 0 : -i / 20;
    }
    const F = new Float64Array(2 * n);
    const Zi = new Float64Array(n);
    const Fe = new Float64Array(2 * n);
    const Ze = new Float64Array(n);
    const r = new InterpRepulsion(n);
    r.compute(Y, F, Zi);
    exactRepulsion(Y, n, Fe, Ze);
    for (let i = 0; i < n; i++) {
      expect(r.g.box[2 * i]).toBeGreaterThanOrEqual(0);
      expect(r.g.box[2 * i]).toBeLessThan(r.g.nb);
      expect(r.g.box[2 * i + 1]).toBeLessThan(r.g.nb);
    }
    expect(r.g.box[2 * (n - 1)]).toBe(r.g.nb - 1);
    expect(relErr(Zi, Ze)).toBeLessThan(1e-3);
    expect(relErr(F, Fe)).toBeLessThan(1e-3);
  });
});

describe('t-SNE with FFT interpolation', () => {
  it('gives identical coordinates with 1 and 2 threads for the same seed', async () => {
    const n = 300;
    const { X } = blobs(n, 10, 4, 4, 5);
    const run = async (threads: number) => {
      const t = await Tsne.create(X, n, 10, { affinity: { perplexity: 20 },
        optimizer: { iterations: 120, seed: 4, method: 'fft' }, execution: { threads, workerMinPoints: 0 } });
      expect(t.opts.method).toBe('fft');
      t.init();
      await t.run();
      await t.close();
      return Array.from(t.embedding);
    };
    const one = await run(1);
    expect(await run(2)).toEqual(one);
  });

  it('separates planted clusters with a KL close to Barnes–Hut’s', async () => {
    const n = 600;
    const { X, lab } = blobs(n, 10, 4, 5, 9);
    const fit = async (method: 'bh' | 'fft') => {
      const t = await Tsne.create(X, n, 10, { affinity: { perplexity: 20 },
        optimizer: { iterations: 500, seed: 2, method } });
      t.init();
      await t.run();
      return t;
    };
    const f = await fit('fft');
    const b = await fit('bh');
    const Pd = denseP(f.P);
    const klF = exactKl(Pd, f.Y, n);
    const klB = exactKl(Pd, b.Y, n);
    // the interpolation's few-percent error in the near field costs a little KL (as openTSNE's)
    expect(klF).toBeLessThan(klB * 1.05);
    // nearest-centroid purity of the embedding: every point closer to its own cluster's centre
    const C = 4;
    const cen = new Float64Array(2 * C);
    const cnt = new Float64Array(C);
    for (let i = 0; i < n; i++) {
      cen[2 * lab[i]] += f.Y[2 * i];
      cen[2 * lab[i] + 1] += f.Y[2 * i + 1];
      cnt[lab[i]]++;
    }
    for (let c = 0; c < C; c++) {
      cen[2 * c] /= cnt[c];
      cen[2 * c + 1] /= cnt[c];
    }
    let right = 0;
    for (let i = 0; i < n; i++) {
      let best = 0;
      let bd = Infinity;
      for (let c = 0; c < C; c++) {
        const d = (f.Y[2 * i] - cen[2 * c]) ** 2 + (f.Y[2 * i + 1] - cen[2 * c + 1]) ** 2;
        if (d < bd) {
          bd = d;
          best = c;
        }
      }
      if (best === lab[i]) right++;
    }
    expect(right / n).toBeGreaterThan(0.99);
  });

  it("'mixed' (auto from MIXED_MIN_POINTS) takes the FFT in iterations with a small grid and in the last 50, and Barnes–Hut in the others", async () => {
    // the rule, L² log2 L < 100 N: the smallest grid (54 boxes, L = 324) passes from 8,755 points; a grid 4× as wide does not at MIXED_MIN_POINTS
    expect(MIXED_MIN_POINTS).toBe(30000);
    expect(fftIteration(324, 8755)).toBe(true);
    expect(fftIteration(324, 8754)).toBe(false);
    expect(fftIteration(1296, MIXED_MIN_POINTS)).toBe(false);
    const n = MIXED_MIN_POINTS;
    const { X } = blobs(n, 4, 4, 8, 7);
    const make = (method?: 'bh' | 'fft') =>
      Tsne.create(X, n, 4, { affinity: { perplexity: 10 }, optimizer: { seed: 3, method } });
    const [mixed, fft, bh] = await Promise.all([make(), make('fft'), make('bh')]);
    expect(mixed.opts.method).toBe('mixed');
    // a wide map: 600 across, a grid far above the rule (L = 6 · 648)
    const wide = new Float64Array(2 * n).map((_, t) => ((t * 7919) % 601) - 300);
    const one = (t: Tsne, start: 'pca' | 'wide') => {
      t.init();
      if (start === 'wide') t.Y.set(wide);
      t.step();
      return Float64Array.from(t.Y);
    };
    const same = (a: Float64Array, b: Float64Array) => a.every((v, i) => Object.is(v, b[i]));
    // the PCA start is compact: the FFT's step, to the bit
    const m0 = one(mixed, 'pca');
    expect(mixed.fftIterations).toBe(1);
    expect(same(m0, one(fft, 'pca'))).toBe(true);
    expect(same(m0, one(bh, 'pca'))).toBe(false);
    // the wide start: Barnes–Hut's step (the FFT's would need a 3888² grid)
    const m1 = one(mixed, 'wide');
    expect(mixed.fftIterations).toBe(1);
    expect(same(m1, one(bh, 'wide'))).toBe(true);
    // the last POLISH_ITERATIONS iterations take the FFT on any grid: a map 150 across (L = 972,
    // far above the rule) gets Barnes–Hut's step at iteration 949 of 1000 and the FFT's at 950
    expect(fftIteration(972, n)).toBe(false);
    const mid = new Float64Array(2 * n).map((_, t) => ((t * 7919) % 151) - 75);
    const at = (t: Tsne, iter: number) => {
      t.init();
      t.Y.set(mid);
      t.iter = iter;
      t.step();
      return Float64Array.from(t.Y);
    };
    const last = 1000 - POLISH_ITERATIONS;
    expect(POLISH_ITERATIONS).toBe(50);
    const before = mixed.fftIterations;
    expect(same(at(mixed, last - 1), at(bh, last - 1))).toBe(true);
    expect(mixed.fftIterations).toBe(before);
    const p1 = at(mixed, last);
    expect(mixed.fftIterations).toBe(before + 1);
    expect(same(p1, at(fft, last))).toBe(true);
    expect(same(p1, at(bh, last))).toBe(false);
    // on two threads: both kinds of iteration give the same coordinates as on one
    const two = await Tsne.create(X, n, 4, { affinity: { perplexity: 10 }, optimizer: { seed: 3 },
      execution: { threads: 2 } });
    const run = async (t: Tsne) => {
      t.init();
      for (let i = 0; i < 3; i++) await t.stepAsync();
      const compact = Float64Array.from(t.Y);
      t.Y.set(wide);
      for (let i = 0; i < 2; i++) await t.stepAsync();
      return [compact, Float64Array.from(t.Y)];
    };
    const [a1, b1] = await run(mixed);
    const [a2, b2] = await run(two);
    await two.close();
    expect(same(a1, a2)).toBe(true);
    expect(same(b1, b2)).toBe(true);
    expect(two.fftIterations).toBe(3);
  });
  it('auto picks Barnes–Hut below MIXED_MIN_POINTS; theta 0 is exact; a bad method is an error', async () => {
    const { X } = blobs(100, 5, 2, 3, 1);
    expect(100 < MIXED_MIN_POINTS).toBe(true);
    expect((await Tsne.create(X, 100, 5, { affinity: { perplexity: 10 } })).opts.method).toBe('bh');
    expect((await Tsne.create(X, 100, 5, { affinity: { perplexity: 10 }, optimizer: { method: 'fft' } })).opts.method)
      .toBe('fft');
    expect(
      (await Tsne.create(X, 100, 5, { affinity: { perplexity: 10 }, optimizer: { theta: 0, method: 'fft' } })).opts
        .method,
    ).toBe('exact');
    await expect(Tsne.create(X, 100, 5, { affinity: { perplexity: 10 }, optimizer: { method: 'nope' as 'bh' } }))
      .rejects.toThrow(/auto, bh or fft/);
    // the Barnes–Hut tree is still used for 'bh'
    const Y = gaussianY(100, 1, 2);
    const tree = new QuadTree(100);
    tree.build(Y, 100);
    const F = new Float64Array(200);
    const Z = new Float64Array(100);
    repulsionAll(tree, Y, 0.5, F, Z);
    expect(Z.every((v) => v > 0)).toBe(true);
  });
});
