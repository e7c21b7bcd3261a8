import { describe, it, expect } from 'vitest';
import { Matrix, SingularValueDecomposition } from 'ml-matrix';
import { Rng } from '../../src/util/rng.js';
import { blobs } from '../cluster/blobs.js';
import { Tsne } from '../../src/cluster/tsne-pca.js';
import { exactGradient, exactKl, tsneGradient, exactRepulsion, klWithZ, exactZ } from '../../src/tsne/tsne.js';
import { attraction, attractionJs, bfsOrder } from '../../src/tsne/attraction.js';
import type { SparseP } from '../../src/tsne/affinity.js';
import { conditionalP, jointP, denseP, checkPerplexity, neighboursFor } from '../../src/tsne/affinity.js';
import { knn } from '../../src/tsne/knn.js';
import { pca, mulXBRows, mulXBRowsJs, mulXtBCols, mulXtBColsJs } from '../../src/cluster/pca.js';
import { QuadTree, repulsion, repulsionAll, groupRanges, GROUP_SIZE } from '../../src/tsne/quadtree.js';
import { repulsionSimd, sumPairsJs } from '../../src/tsne/repulsion-simd.js';
import { silhouetteSamples, distanceMatrix } from '../../src/cluster/metrics.js';

function randomY(n: number, seed: number, scale = 3): Float64Array {
  const rng = new Rng(seed);
  return new Float64Array(2 * n).map(() => rng.normal() * scale);
}

/** Independent dense P: bisection on sigma per row over all other points, then (P + Pᵀ)/2N. */
/** Barnes–Hut sums of a built tree against the exact O(N²) ones, for each [theta, tolerance] (theta 0: exact to rounding). */
function expectNearExact(tree: QuadTree, Y: Float64Array, n: number, cases: (readonly [number, number])[]): void {
  const Fe = new Float64Array(2 * n);
  const Ze = new Float64Array(n);
  exactRepulsion(Y, n, Fe, Ze);
  for (const [theta, tol] of cases) {
    const F = new Float64Array(2 * n);
    const Zi = new Float64Array(n);
    repulsionAll(tree, Y, theta, F, Zi);
    for (let i = 0; i < n; i++) {
      expect(Math.abs(Zi[i] - Ze[i]) / Ze[i]).toBeLessThan(tol);
      const scale = Math.hypot(Fe[2 * i], Fe[2 * i + 1]) + (1e-3 * Ze[i]) / n;
      expect(Math.hypot(F[2 * i] - Fe[2 * i], F[2 * i + 1] - Fe[2 * i + 1]) / scale).toBeLessThan(
        theta === 0 ? 1e-9 : 10 * tol,
      );
    }
  }
}

function referenceP(X: Float64Array, n: number, d: number, perplexity: number): Float64Array {
  const P = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    const d2: number[] = [];
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let c = 0; c < d; c++) s += (X[i * d + c] - X[j * d + c]) ** 2;
      d2.push(s);
    }
    let lo = 1e-10;
    let hi = 1e10;
    let row: number[] = [];
    for (let it = 0; it < 200; it++) {
      const sigma2 = Math.sqrt(lo * hi);
      const w = d2.map((v, j) => (j === i ? 0 : Math.exp(-v / sigma2)));
      const Z = w.reduce((a, b) => a + b, 0);
      row = w.map((v) => v / Z);
      const H = -row.reduce((a, p) => a + (p > 0 ? p * Math.log(p) : 0), 0);
      if (H > Math.log(perplexity)) hi = sigma2;
      else lo = sigma2;
    }
    for (let j = 0; j < n; j++) P[i * n + j] = row[j];
  }
  const J = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) J[i * n + j] = (P[i * n + j] + P[j * n + i]) / (2 * n);
  return J;
}

function sparseFor(X: Float64Array, n: number, d: number, perplexity: number) {
  const nn = knn(X, n, d, neighboursFor(perplexity, n));
  const { P } = conditionalP(nn, n, perplexity);
  return jointP(nn, P, n);
}

describe('affinities', () => {
  it('match an independent dense computation when k covers all points', () => {
    const n = 30;
    const { X } = blobs(n, 5, 3, 2, 1);
    // scikit-learn's neighbour count is min(N − 1, floor(3·perplexity + 1)): 25 at perplexity 8,
    // 29 = N − 1 (every other point) at 9.5, which makes the sparse P comparable to the dense one
    expect(neighboursFor(8, n)).toBe(25);
    expect(neighboursFor(9.5, n)).toBe(n - 1);
    const P = denseP(sparseFor(X, n, 5, 9.5));
    const ref = referenceP(X, n, 5, 9.5);
    let maxErr = 0;
    for (let t = 0; t < n * n; t++) maxErr = Math.max(maxErr, Math.abs(P[t] - ref[t]));
    expect(maxErr).toBeLessThan(1e-6);
    // with fewer neighbours than points, far pairs get no affinity (so the two differ)
    const P8 = denseP(sparseFor(X, n, 5, 8));
    let zeros = 0;
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (i !== j && P8[i * n + j] === 0) zeros++;
    expect(zeros).toBeGreaterThan(0);
  });
  it('row entropies equal log(perplexity); P is symmetric and sums to 1', () => {
    const n = 200;
    const { X } = blobs(n, 10, 4, 3, 2);
    const nn = knn(X, n, 10, neighboursFor(20, n));
    const { P: Pc } = conditionalP(nn, n, 20);
    for (let i = 0; i < n; i += 17) {
      let H = 0;
      for (let t = 0; t < nn.k; t++) {
        const p = Pc[i * nn.k + t];
        if (p > 0) H -= p * Math.log(p);
      }
      expect(Math.abs(H - Math.log(20))).toBeLessThan(1e-4);
    }
    const J = denseP(jointP(nn, Pc, n));
    let sum = 0;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        sum += J[i * n + j];
        expect(J[i * n + j]).toBeCloseTo(J[j * n + i], 15);
      }
    expect(sum).toBeCloseTo(1, 12);
  });
  it('exact kNN matches a sort of all distances', () => {
    const n = 120;
    const { X } = blobs(n, 17, 3, 1, 3);
    const r = knn(X, n, 17, 7);
    for (const i of [0, 5, 77, 119]) {
      const all = Array.from({ length: n }, (_, j) => j).filter((j) => j !== i);
      const dist = (j: number) => {
        let s = 0;
        for (let c = 0; c < 17; c++) s += (X[i * 17 + c] - X[j * 17 + c]) ** 2;
        return s;
      };
      all.sort((a, b) => dist(a) - dist(b) || a - b);
      expect(Array.from(r.indices.subarray(i * 7, i * 7 + 7))).toEqual(all.slice(0, 7));
      expect(r.dist2[i * 7 + 6]).toBeCloseTo(dist(all[6]), 10);
    }
  });
  it('perplexity too large for N is an error that names it', () => {
    expect(() => checkPerplexity(30, 50)).toThrow(
      /perplexity 30 is too large for 50 points.*pass perplexity 16 or fewer/,
    );
    expect(() => checkPerplexity(16, 50)).not.toThrow();
  });
});

describe('gradient', () => {
  it('exact gradient matches numerical differentiation of KL', () => {
    const n = 15;
    const { X } = blobs(n, 4, 3, 2, 4);
    const Pd = referenceP(X, n, 4, 4);
    const Y = randomY(n, 5, 1);
    const g = exactGradient(Pd, Y, n);
    const h = 1e-6;
    for (let t = 0; t < 2 * n; t++) {
      const Yp = Float64Array.from(Y);
      const Ym = Float64Array.from(Y);
      Yp[t] += h;
      Ym[t] -= h;
      const num = (exactKl(Pd, Yp, n) - exactKl(Pd, Ym, n)) / (2 * h);
      expect(Math.abs(g[t] - num)).toBeLessThan(1e-6 * Math.max(1, Math.abs(num)));
    }
  });
  it('sparse-P gradient with exact repulsion equals the dense exact gradient; KL agrees', () => {
    const n = 60;
    const { X } = blobs(n, 6, 3, 2, 6);
    const P = sparseFor(X, n, 6, 10);
    const Y = randomY(n, 7);
    const g0 = tsneGradient(P, Y, 0);
    const g1 = exactGradient(denseP(P), Y, n);
    for (let t = 0; t < 2 * n; t++) expect(g0[t]).toBeCloseTo(g1[t], 12);
    expect(klWithZ(P, Y, exactZ(Y, n))).toBeCloseTo(exactKl(denseP(P), Y, n), 10);
  });
  it('Barnes–Hut repulsion equals exact at theta 0 and is close for small theta', () => {
    const n = 500;
    const Y = randomY(n, 8, 10);
    Y[6] = Y[0]; // a duplicate point
    Y[7] = Y[1];
    const Fe = new Float64Array(2 * n);
    const Ze = new Float64Array(n);
    exactRepulsion(Y, n, Fe, Ze);
    const tree = new QuadTree(n);
    tree.build(Y, n);
    for (const [theta, tol] of [[0, 1e-12], [0.1, 2e-3], [0.5, 3e-2], [1, 0.15]] as const) {
      const F = new Float64Array(2 * n);
      const Zi = new Float64Array(n);
      repulsionAll(tree, Y, theta, F, Zi);
      let num = 0;
      let den = 0;
      for (let t = 0; t < 2 * n; t++) {
        num += (F[t] - Fe[t]) ** 2;
        den += Fe[t] ** 2;
      }
      const zs = Zi.reduce((a, b) => a + b, 0);
      const ze = Ze.reduce((a, b) => a + b, 0);
      expect(Math.sqrt(num / den)).toBeLessThan(tol);
      expect(Math.abs(zs - ze) / ze).toBeLessThan(tol);
    }
    // the full BH gradient at small theta is close to the exact gradient
    const { X } = blobs(n, 5, 4, 2, 9);
    const P = sparseFor(X, n, 5, 15);
    const ge = tsneGradient(P, Y, 0);
    const gb = tsneGradient(P, Y, 0.2);
    let num = 0;
    let den = 0;
    for (let t = 0; t < 2 * n; t++) {
      num += (gb[t] - ge[t]) ** 2;
      den += ge[t] ** 2;
    }
    expect(Math.sqrt(num / den)).toBeLessThan(5e-3);
  });
  it('coincident points: one zero-width leaf, a group larger than GROUP_SIZE, and exact sums at theta 0', () => {
    // at theta 0 every list holds all 3000 points: the scratch memory must grow mid-walk
    const n = 3000;
    const Y = randomY(n, 21, 6);
    // 250 copies of one point collapse into a single leaf at the last grid level
    for (let i = 100; i < 350; i++) {
      Y[2 * i] = 1.25;
      Y[2 * i + 1] = -0.5;
    }
    expect(250).toBeGreaterThan(GROUP_SIZE);
    const tree = new QuadTree(n);
    tree.build(Y, n);
    // the 250 copies are one leaf of width 0 centred exactly on them
    const t = tree.t;
    const leaves = [];
    for (let id = 0; id < t.nodes; id++)
      if (t.child[id] === -1 && t.leaf[2 * id + 1] - t.leaf[2 * id] === 250) leaves.push(id);
    expect(leaves.length).toBe(1);
    expect([...t.node.subarray(4 * leaves[0], 4 * leaves[0] + 4)]).toEqual([1.25, -0.5, 0, 250]);
    expectNearExact(tree, Y, n, [[0, 1e-12], [0.2, 5e-3], [0.5, 3e-2]]);
  });
  it('clusters packed below the grid resolution get grids of their own: small leaves, and sums within the theta bound', () => {
    // three clusters of 600 points, each spread over 1e-7 (two levels: one of them holds a
    // sub-cluster over 1e-13), in a map 10 wide: below 2^-15 of the span, as early exaggeration packs them
    const n = 2000;
    const rng = new Rng(23);
    const Y = new Float64Array(2 * n);
    const centres = [[-4, 1], [3, -2], [0.5, 4.5]];
    for (let i = 0; i < n; i++) {
      const c = i < 1800 ? centres[Math.floor(i / 600)] : null;
      if (!c) {
        Y[2 * i] = 10 * rng.next() - 5;
        Y[2 * i + 1] = 10 * rng.next() - 5;
      } else {
        const s = i >= 1200 && i < 1500 ? 1e-13 : 1e-7;
        Y[2 * i] = c[0] + s * (rng.next() - 0.5);
        Y[2 * i + 1] = c[1] + s * (rng.next() - 0.5);
      }
    }
    const tree = new QuadTree(n);
    tree.build(Y, n);
    const t = tree.t;
    let maxLeaf = 0;
    let maxGroup = 0;
    for (let id = 0; id < t.nodes; id++)
      if (t.child[id] === -1) maxLeaf = Math.max(maxLeaf, t.leaf[2 * id + 1] - t.leaf[2 * id]);
    for (let g = 0; g < t.ngroups; g++)
      maxGroup = Math.max(maxGroup, t.leaf[2 * t.groups[g] + 1] - t.leaf[2 * t.groups[g]]);
    expect(maxLeaf).toBeLessThanOrEqual(8);
    expect(maxGroup).toBeLessThanOrEqual(GROUP_SIZE);
    // every node's points fit in its cell: the tree is deeper than one grid and still a quadtree
    let deepest = 0;
    for (let id = 0; id < t.nodes; id++) {
      const w = Math.sqrt(t.node[4 * id + 2]);
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
      for (let p = t.leaf[2 * id]; p < t.leaf[2 * id + 1]; p++) {
        const i = t.order[p];
        x0 = Math.min(x0, Y[2 * i]);
        x1 = Math.max(x1, Y[2 * i]);
        y0 = Math.min(y0, Y[2 * i + 1]);
        y1 = Math.max(y1, Y[2 * i + 1]);
      }
      if (x1 >= x0) {
        expect(Math.max(x1 - x0, y1 - y0)).toBeLessThanOrEqual(w);
        if (t.node[4 * id + 3] > 1) deepest = Math.max(deepest, 10 / w);
      }
    }
    expect(deepest).toBeGreaterThan(2 ** 30);
    // the groups still tile the points, in the tree's order
    const seen = new Uint8Array(n);
    for (let p = 0; p < n; p++) seen[t.order[p]]++;
    expect(seen.every((v) => v === 1)).toBe(true);
    let next = 0;
    for (let g = 0; g < t.ngroups; g++) {
      expect(t.leaf[2 * t.groups[g]]).toBe(next);
      next = t.leaf[2 * t.groups[g] + 1];
    }
    expect(next).toBe(n);
    expectNearExact(tree, Y, n, [[0, 1e-12], [0.5, 3e-2]]);
  });
  it('any split of the groups gives bit-identical repulsion; the ranges tile the points', () => {
    const n = 3000;
    const Y = randomY(n, 22, 20);
    const tree = new QuadTree(n);
    tree.build(Y, n);
    const F1 = new Float64Array(2 * n);
    const Z1 = new Float64Array(n);
    repulsionAll(tree, Y, 0.5, F1, Z1);
    for (const parts of [2, 3, 7]) {
      const rs = groupRanges(tree.t, parts);
      expect(rs.length).toBe(parts);
      expect(rs[0][0]).toBe(0);
      expect(rs[parts - 1][1]).toBe(tree.t.ngroups);
      const F = new Float64Array(2 * n).fill(NaN);
      const Z = new Float64Array(n).fill(NaN);
      // in reverse order, to show that no state carries over between ranges
      for (let p = parts - 1; p >= 0; p--) {
        if (p > 0) expect(rs[p][0]).toBe(rs[p - 1][1]);
        repulsion(tree.t, Y, rs[p][0], rs[p][1], 0.5, F, Z);
      }
      expect(Array.from(F)).toEqual(Array.from(F1));
      expect(Array.from(Z)).toEqual(Array.from(Z1));
    }
  });
  it('attraction through the WebAssembly SIMD kernel is bit-identical to the JavaScript loop, for any P and row range', () => {
    const rng = new Rng(24);
    const randomP = (n: number, id?: number): SparseP => {
      const rowPtr = new Int32Array(n + 1);
      const cols: number[] = [];
      const vals: number[] = [];
      for (let i = 0; i < n; i++) {
        const len = i % 7 === 3 ? 0 : 1 + Math.floor(rng.next() * 9); // empty, odd and even rows
        for (let t = 0; t < len; t++) {
          cols.push(Math.floor(rng.next() * n));
          vals.push(rng.next() / n);
        }
        rowPtr[i + 1] = cols.length;
      }
      return { n, rowPtr, cols: Int32Array.from(cols), vals: Float64Array.from(vals), id };
    };
    const n = 157;
    const Y = randomY(n, 25, 4);
    const P1 = randomP(n);
    const P2 = randomP(n, 99);
    // alternate P objects and ranges so the kernel's copy of P must be refreshed each time
    for (const [P, s, e, ex] of [[P1, 0, n, 12], [P2, 0, n, 1], [P1, 10, 90, 1], [P2, 10, 90, 12], [{ ...P2,
      vals: P1.vals, cols: P1.cols, rowPtr: P1.rowPtr, id: 100 }, 10, 90, 1]] as const)
    {
      const a = new Float64Array(2 * n).fill(NaN);
      const b = new Float64Array(2 * n).fill(NaN);
      attraction(P, Y, ex, a, s, e);
      attractionJs(P, Y, ex, b, s, e);
      expect(Array.from(a)).toEqual(Array.from(b));
      // against a plain sum for one row
      const i = s + 5;
      let fx = 0;
      for (let t = P.rowPtr[i]; t < P.rowPtr[i + 1]; t++) {
        const j = P.cols[t];
        const dx = Y[2 * i] - Y[2 * j];
        const dy = Y[2 * i + 1] - Y[2 * j + 1];
        fx += (P.vals[t] / (1 + dx * dx + dy * dy)) * dx;
      }
      expect(a[2 * i]).toBeCloseTo(ex * fx, 12);
    }
    // with a row order (breadth first over P's graph): ranges of positions, every row's sum the same to the bit
    const P3 = randomP(n, 101);
    const plain = new Float64Array(2 * n);
    attractionJs(P3, Y, 12, plain);
    const order = bfsOrder(P3);
    expect([...order].sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i));
    // a row's columns come after it or before it in the order: the first row's columns follow it directly
    expect(Array.from(order.subarray(1, 1 + new Set(P3.cols.subarray(P3.rowPtr[0], P3.rowPtr[1])).size)).sort())
      .toEqual([...new Set(Array.from(P3.cols.subarray(P3.rowPtr[0], P3.rowPtr[1])).filter((j) => j !== 0))].sort());
    const Po = { ...P3, order, id: 102 };
    for (const cuts of [[0, n], [0, 40, 41, 100, n]]) {
      const a = new Float64Array(2 * n).fill(NaN);
      const b = new Float64Array(2 * n).fill(NaN);
      for (let c = 0; c + 1 < cuts.length; c++) {
        attraction(Po, Y, 12, a, cuts[c], cuts[c + 1]);
        attractionJs(Po, Y, 12, b, cuts[c], cuts[c + 1]);
      }
      expect(Array.from(a)).toEqual(Array.from(plain));
      expect(Array.from(b)).toEqual(Array.from(plain));
    }
  });
  it('the WebAssembly SIMD pair kernel and its JavaScript twin agree bit for bit, and equal a direct sum', () => {
    const kernel = repulsionSimd();
    expect(kernel).not.toBeNull(); // Node >= 20 has WebAssembly SIMD
    // beyond 32-bit memory: refused (callers then take the JavaScript twin), not thrown
    expect(kernel!.ensure(2 ** 33)).toBe(false);
    const rng = new Rng(23);
    const ngp = 3; // 5 points, the last repeated
    const m = 37; // odd: one zero entry pads the list
    const npairs = (m + 1) >> 1;
    const gp = 0;
    const op = 4 * ngp;
    const lp = 10 * ngp;
    const len = lp + 6 * npairs;
    kernel!.ensure(len * 8);
    const M = new Float64Array(kernel!.memory.buffer, 0, len);
    M.fill(0);
    const pts: number[][] = [];
    for (let k = 0; k < 5; k++) pts.push([rng.normal() * 3, rng.normal() * 3]);
    pts.push(pts[4]);
    pts.forEach(([x, y], k) => {
      M[gp + 2 * k] = x;
      M[gp + 2 * k + 1] = y;
    });
    const ent: number[][] = [];
    for (let e = 0; e < m; e++) {
      const q = lp + 6 * (e >> 1) + (e & 1);
      ent.push([rng.normal() * 5, rng.normal() * 5, 1 + Math.floor(rng.next() * 9)]);
      [M[q], M[q + 2], M[q + 4]] = ent[e];
    }
    const J = Float64Array.from(M);
    kernel!.sum(lp * 8, npairs, gp * 8, ngp, op * 8);
    sumPairsJs(J, lp, npairs, gp, ngp, op);
    const W = new Float64Array(kernel!.memory.buffer, 0, len);
    expect(Array.from(W.subarray(op, lp))).toEqual(Array.from(J.subarray(op, lp)));
    for (let k = 0; k < 5; k++) {
      let z = 0;
      let fx = 0;
      let fy = 0;
      for (const [x, y, c] of ent) {
        const dx = pts[k][0] - x;
        const dy = pts[k][1] - y;
        const w = 1 / (1 + dx * dx + dy * dy);
        z += c * w;
        fx += c * w * w * dx;
        fy += c * w * w * dy;
      }
      expect(W[op + 3 * k]).toBeCloseTo(z, 12);
      expect(W[op + 3 * k + 1]).toBeCloseTo(fx, 12);
      expect(W[op + 3 * k + 2]).toBeCloseTo(fy, 12);
    }
  });
});

describe('PCA', () => {
  it('matrix products through the WebAssembly SIMD kernel are bit-identical to the JavaScript loops', () => {
    const rng = new Rng(41);
    for (const [n, d, l] of [[23, 37, 9], [10, 6, 261]]) {
      const X = new Float32Array(n * d).map(() => rng.normal());
      const B = new Float64Array(d * l).map(() => rng.normal());
      const C = new Float64Array(n * l).map(() => rng.normal());
      for (const [r0, r1] of [[0, n], [3, n - 2]]) {
        const a = new Float64Array(n * l);
        const b = new Float64Array(n * l);
        mulXBRows(X, d, B, l, a, r0, r1);
        mulXBRowsJs(X, d, B, l, b, r0, r1);
        expect(Array.from(a)).toEqual(Array.from(b));
        let s = 0;
        for (let j = 0; j < d; j++) s += X[r0 * d + j] * B[j * l + l - 1];
        expect(a[r0 * l + l - 1]).toBeCloseTo(s, 10);
      }
      for (const [j0, j1] of [[0, d], [1, d - 2]]) {
        const a = new Float64Array(d * l);
        const b = new Float64Array(d * l);
        mulXtBCols(X, n, d, C, l, a, j0, j1);
        mulXtBColsJs(X, n, d, C, l, b, j0, j1);
        expect(Array.from(a)).toEqual(Array.from(b));
        let s = 0;
        for (let i = 0; i < n; i++) s += X[i * d + j1 - 1] * C[i * l + 2];
        expect(a[(j1 - 1) * l + 2]).toBeCloseTo(s, 10);
      }
    }
  });
  function svdOf(X: Float64Array, n: number, d: number) {
    const M = new Matrix(n, d);
    const mean = new Float64Array(d);
    for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) mean[j] += X[i * d + j] / n;
    let total = 0;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < d; j++) {
        const v = X[i * d + j] - mean[j];
        M.set(i, j, v);
        total += v * v;
      }
    return { svd: new SingularValueDecomposition(M), total };
  }
  function check(r: ReturnType<typeof pca>, svd: SingularValueDecomposition, n: number, comps: number, digits: number) {
    const s = svd.diagonal;
    const U = svd.leftSingularVectors;
    for (let c = 0; c < comps; c++) {
      expect(r.variances[c]).toBeCloseTo((s[c] * s[c]) / (n - 1), digits);
      let dot = 0;
      let nrm = 0;
      for (let i = 0; i < n; i++) {
        dot += r.scores[i * r.k + c] * U.get(i, c) * s[c];
        nrm += (U.get(i, c) * s[c]) ** 2;
      }
      expect(Math.abs(dot) / nrm).toBeCloseTo(1, digits);
    }
  }
  it('is exact (vs ml-matrix SVD) when the sketch spans the space', () => {
    const n = 80;
    const d = 30;
    const { X } = blobs(n, d, 4, 2, 10);
    const r = pca(X, n, d, 20, { seed: 3, method: 'randomized' }); // 20 + 10 oversampling = d: the sketch spans the space
    const { svd, total } = svdOf(X, n, d);
    check(r, svd, n, 20, 5); // the centred copy is float32: agreement to ~1e-8 relative
    const top = svd.diagonal.slice(0, 20).reduce((a, v) => a + v * v, 0);
    expect(r.explainedVariance).toBeCloseTo(top / total, 7);
  });
  it('recovers the dominant components of a larger matrix by randomized SVD, seeded', () => {
    const n = 150;
    const d = 120;
    const { X } = blobs(n, d, 6, 3, 13);
    const r = pca(X, n, d, 5, { seed: 4, method: 'randomized' });
    const { svd } = svdOf(X, n, d);
    check(r, svd, n, 5, 4); // 5 blob directions dominate: converge to 1e-4
    expect(Array.from(pca(X, n, d, 5, { seed: 4, method: 'randomized' }).scores)).toEqual(Array.from(r.scores));
    check(pca(X, n, d, 8, { method: 'exact' }), svd, n, 8, 5);
  });
});

describe('t-SNE', () => {
  it('same seed gives identical coordinates, with and without worker threads', async () => {
    const n = 300;
    const { X } = blobs(n, 10, 3, 3, 11);
    const run = async (threads: number) => {
      const t = await Tsne.create(X, n, 10, { affinity: { perplexity: 15 }, optimizer: { iterations: 120, seed: 5 },
        execution: { threads, workerMinPoints: 0 } });
      t.init();
      await t.run();
      await t.close();
      return t.embedding;
    };
    const a = await run(1);
    const b = await run(1);
    const c = await run(3);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(Array.from(a)).toEqual(Array.from(c));
    // random initialisation: the seed decides the start
    const rand = async (seed: number) => {
      const t = await Tsne.create(X, n, 10, { affinity: { perplexity: 15 },
        optimizer: { iterations: 50, seed, init: 'random' } });
      t.init();
      await t.run();
      return Array.from(t.embedding);
    };
    expect(await rand(3)).toEqual(await rand(3));
    expect(await rand(3)).not.toEqual(await rand(4));
  });
  it('separates well-separated clusters, lowers KL, follows the step API', async () => {
    const n = 240;
    const { X, lab } = blobs(n, 20, 4, 4, 12);
    const t = await Tsne.create(X, n, 20, { affinity: { perplexity: 20 }, optimizer: { iterations: 500, seed: 1 } });
    t.init();
    expect(t.opts.learningRate).toBe(50); // max(240/12/4, 50)
    let sd = 0;
    for (let i = 0; i < n; i++) sd += t.Y[2 * i] ** 2;
    expect(Math.sqrt(sd / n)).toBeCloseTo(1e-4, 5); // PCA init scaled to std 1e-4
    t.step();
    expect(t.iter).toBe(1);
    const kls: number[] = [];
    await t.run((it) => {
      if (it === 300 || it === 500) kls.push(t.klDivergence());
    });
    expect(kls[1]).toBeLessThan(kls[0] + 1e-9);
    const Y = t.embedding;
    const s = silhouetteSamples(distanceMatrix(Y, n, 2, 'euclidean'), n, lab, 4).reduce((a, b) => a + b, 0) / n;
    expect(s).toBeGreaterThan(0.7);
  });
});

/**
 * The exact gradient of KL(P‖Q) with P multiplied by `ex` (early exaggeration), written here
 * from the t-SNE equations: ∂C/∂y_i = 4 Σ_j (ex·p_ij − q_ij) w_ij (y_i − y_j), w = 1/(1 + d²), q = w / Σw.
 */
function denseGradient(Pd: Float64Array, Y: Float64Array, n: number, ex: number): Float64Array {
  let Z = 0;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++)
      if (i !== j) Z += 1 / (1 + (Y[2 * i] - Y[2 * j]) ** 2 + (Y[2 * i + 1] - Y[2 * j + 1]) ** 2);
  const g = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const dx = Y[2 * i] - Y[2 * j];
      const dy = Y[2 * i + 1] - Y[2 * j + 1];
      const w = 1 / (1 + dx * dx + dy * dy);
      const f = 4 * (ex * Pd[i * n + j] - w / Z) * w;
      g[2 * i] += f * dx;
      g[2 * i + 1] += f * dy;
    }
  }
  return g;
}

describe('t-SNE optimizer schedule (scikit-learn)', () => {
  it('every step is the gains/momentum update on the exact gradient: exaggeration 12 and momentum 0.5 for 250 iterations, then 1 and 0.8 with a fresh optimizer', async () => {
    // scikit-learn's TSNE: P × 12 and momentum 0.5 for the first 250 iterations; then P × 1,
    // momentum 0.8, and _gradient_descent starts again with zero update and unit gains.
    // Gains: +0.2 where update·grad < 0, ×0.8 elsewhere, at least 0.01;
    // update = momentum·update − lr·gains·grad; learning rate 'auto' = max(N / 12 / 4, 50).
    const n = 40;
    const { X } = blobs(n, 5, 3, 3, 15);
    const init = randomY(n, 16, 1e-4);
    const t = await Tsne.create(X, n, 5, { affinity: { perplexity: 8 },
      optimizer: { theta: 0, iterations: 262, init } });
    t.init();
    const Pd = denseP(t.P);
    const lr = Math.max(n / 12 / 4, 50);
    const up = new Float64Array(2 * n);
    const gains = new Float64Array(2 * n).fill(1);
    for (let it = 0; it < 262; it++) {
      if (it === 250) {
        up.fill(0);
        gains.fill(1);
      }
      const ex = it < 250 ? 12 : 1;
      const mom = it < 250 ? 0.5 : 0.8;
      const Y = t.embedding;
      expect(t.exaggeration).toBe(ex);
      const g = denseGradient(Pd, Y, n, ex);
      const want = Float64Array.from(Y);
      let scale = 0;
      for (let c = 0; c < 2 * n; c++) {
        gains[c] = up[c] * g[c] < 0 ? gains[c] + 0.2 : gains[c] * 0.8;
        if (gains[c] < 0.01) gains[c] = 0.01;
        up[c] = mom * up[c] - lr * gains[c] * g[c];
        want[c] += up[c];
        scale = Math.max(scale, Math.abs(up[c]));
      }
      t.step();
      let err = 0;
      for (let c = 0; c < 2 * n; c++) err = Math.max(err, Math.abs(t.Y[c] - want[c]));
      expect(err / scale, `iteration ${it}`).toBeLessThan(1e-10);
    }
    expect(t.iter).toBe(262);
  });

  it('takes its exaggeration, its length, the momenta and the learning rate from the options', async () => {
    // Non-default settings: exaggeration 4 for 3 iterations, momenta 0.3 / 0.9, learning rate 20.
    const n = 40;
    const { X } = blobs(n, 5, 3, 3, 17);
    const t = await Tsne.create(X, n, 5, { affinity: { perplexity: 8 },
      optimizer: { theta: 0, iterations: 300, exaggerationIterations: 3, earlyExaggeration: 4, momentum: [0.3, 0.9],
        learningRate: 20, init: randomY(n, 18, 1e-2) } });
    t.init();
    const Pd = denseP(t.P);
    for (let it = 0; it < 3; it++) {
      expect(t.exaggeration).toBe(4);
      t.step();
    }
    // fresh optimizer: update 0 and gains 1, so the step is exactly −lr·0.8·grad (gain 1 × 0.8)
    expect(t.exaggeration).toBe(1);
    const Y = t.embedding;
    const g = denseGradient(Pd, Y, n, 1);
    t.step();
    for (let c = 0; c < 2 * n; c++) expect(t.Y[c] - Y[c]).toBeCloseTo(-20 * 0.8 * g[c], 10);
    // the next step has momentum 0.9 on that update
    const Y2 = t.embedding;
    const g2 = denseGradient(Pd, Y2, n, 1);
    t.step();
    for (let c = 0; c < 2 * n; c++) {
      const u1 = Y2[c] - Y[c];
      const gain = u1 * g2[c] < 0 ? 0.8 + 0.2 : 0.8 * 0.8;
      expect(t.Y[c] - Y2[c]).toBeCloseTo(0.9 * u1 - 20 * gain * g2[c], 9);
    }
  });
});

describe("t-SNE learning rate 'per-phase' (openTSNE's defaults)", () => {
  it("steps with N / 48 while exaggerated, N / 4 after, and clips each point's update to the largest step (5 unless given)", async () => {
    // openTSNE: learning rate N / exaggeration in each phase, on a gradient without the factor 4
    // (so N / 4α here), and every point's update scaled down to norm 5 when longer.
    const n = 800;
    const { X } = blobs(n, 5, 3, 3, 21);
    const d = await Tsne.create(X, n, 5, { affinity: { perplexity: 8 }, optimizer: { learningRate: 'per-phase' } });
    expect(d.opts.learningRate).toBe(50); // max(800 / 48, 50)
    expect(d.opts.learningRateAfter).toBe(200); // max(800 / 4, 50)
    expect(d.opts.maxStepNorm).toBe(5);
    expect((await Tsne.create(X, n, 5, { affinity: { perplexity: 8 } })).opts.maxStepNorm).toBe(
      Number.POSITIVE_INFINITY,
    );
    // the steps of this small problem stay under 5, so clip at 0.5 to exercise the clipping
    const t = await Tsne.create(X, n, 5, { affinity: { perplexity: 8 },
      optimizer: { theta: 0, iterations: 30, exaggerationIterations: 6, learningRate: 'per-phase', maxStepNorm: 0.5,
        init: randomY(n, 22, 1) } });
    t.init();
    const Pd = denseP(t.P);
    const up = new Float64Array(2 * n);
    const gains = new Float64Array(2 * n).fill(1);
    let clipped = 0;
    for (let it = 0; it < 30; it++) {
      if (it === 6) {
        up.fill(0);
        gains.fill(1);
      }
      const early = it < 6;
      const ex = early ? 12 : 1;
      const Y = t.embedding;
      const g = denseGradient(Pd, Y, n, ex);
      const want = Float64Array.from(Y);
      for (let c = 0; c < 2 * n; c++) {
        gains[c] = up[c] * g[c] < 0 ? gains[c] + 0.2 : gains[c] * 0.8;
        if (gains[c] < 0.01) gains[c] = 0.01;
        up[c] = (early ? 0.5 : 0.8) * up[c] - (early ? 50 : 200) * gains[c] * g[c];
      }
      for (let i = 0; i < n; i++) {
        const norm = Math.hypot(up[2 * i], up[2 * i + 1]);
        if (norm > 0.5) {
          clipped++;
          up[2 * i] *= 0.5 / norm;
          up[2 * i + 1] *= 0.5 / norm;
        }
        want[2 * i] += up[2 * i];
        want[2 * i + 1] += up[2 * i + 1];
      }
      t.step();
      let err = 0;
      for (let c = 0; c < 2 * n; c++) err = Math.max(err, Math.abs(t.Y[c] - want[c]));
      expect(err, `iteration ${it}`).toBeLessThan(1e-9);
    }
    expect(clipped).toBeGreaterThan(0); // the clipping was exercised
  });

  it('refuses a rule it does not know', async () => {
    const { X } = blobs(40, 5, 3, 3, 23);
    await expect(Tsne.create(X, 40, 5, { affinity: { perplexity: 8 }, optimizer: { learningRate: 'fast' as never } }))
      .rejects.toThrow(/learning rate must be auto, per-phase or a number/);
  });
});

describe('parallel PCA', () => {
  it('gives exactly the single-thread result', async () => {
    const { pcaParallel } = await import('../../src/cluster/pca.js');
    const { ClusterPool } = await import('../../src/cluster/pool.js');
    const n = 61;
    const d = 300;
    const { X } = blobs(n, d, 3, 2, 14);
    const pool = await ClusterPool.start(2);
    try {
      const a = await pcaParallel(X, n, d, 8, { seed: 2 }, pool);
      const b = pca(X, n, d, 8, { seed: 2 });
      expect(Array.from(a.scores)).toEqual(Array.from(b.scores));
      expect(a.explainedVariance).toBe(b.explainedVariance);
    } finally {
      await pool.close();
    }
  });
});
