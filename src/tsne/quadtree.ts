/**
 * A quadtree over 2-D points in flat typed arrays, for Barnes–Hut t-SNE repulsion.
 *
 * Built from Morton (Z-curve) codes: the points are mapped onto a 2^15 × 2^15 grid over
 * their square bounding box and sorted by interleaved code (radix sort; ties by index). Each
 * node splits its sorted range into four contiguous quadrant ranges by the next two code bits. A node with at most
 * LEAF_SIZE points is a leaf that keeps its range of points, and the traversal handles a leaf's
 * points one by one (exactly) unless the whole leaf is far enough to be summarized.
 *
 * A cell at the last grid level that still holds more than LEAF_SIZE points gets a grid of its
 * own: a new 2^15 × 2^15 grid over its points' square bounding box, their codes on it, and the
 * split goes on (at most MAX_ROOTS times, then it is a leaf). Early exaggeration can pack a
 * cluster of thousands of points into less than 2^-15 of the map's span; without the new grid
 * that cluster was one leaf, walked point by point: O(cluster²) per iteration. A leaf whose
 * points are all identical has width 0 and its first point as centre; the walk takes it as one
 * entry of weight `count`, which is exact.
 *
 * Nodes with at most GROUP_SIZE points form the repulsion groups (see repulsion()).
 *
 * Per node: [comX, comY, width², count] in `node`, the first of four consecutive children in
 * `child` (-1 for a leaf) and, for leaves, the point range [start, end) of `order` in `leaf`.
 * Arrays may live on SharedArrayBuffers so worker threads can traverse the same tree.
 */

import { repulsionSimd, sumPairsJs, type RepulsionSimd } from './repulsion-simd.js';
import { bounds } from './bounds.js';

export const MAX_LEVEL = 15;
/** New grids under a last-level cell at most (see above). */
export const MAX_ROOTS = 3;
/** Levels below the root at most, over all grids: stacks of 3 · MAX_DEPTH + 8 entries suffice for a depth-first walk. */
export const MAX_DEPTH = MAX_LEVEL * (MAX_ROOTS + 1);
/** Points kept in a leaf at most (above the last level). */
export const LEAF_SIZE = 8;
/** Points in a repulsion group at most (unless it is a leaf at the last level): one tree walk serves them all. */
export const GROUP_SIZE = 64;

/** Flat arrays of a tree; `nodes` is the number in use. */
export interface TreeArrays {
  nodes: number;
  /** [comX, comY, width², count] per node. */
  node: Float64Array;
  /** First child index, or -1 for a leaf. */
  child: Int32Array;
  /** Every node: its points' range [start, end) in `order`. */
  leaf: Int32Array;
  /** Point indices sorted by Morton code. */
  order: Int32Array;
  /**
   * Node ids of the repulsion groups, in Morton order: the highest nodes holding at most
   * GROUP_SIZE points, and leaves. Their point ranges tile [0, n).
   */
  groups: Int32Array;
  /** Number of groups in use. */
  ngroups: number;
}

export class QuadTree {
  t: TreeArrays;
  private cap: number;
  private raw: Int32Array;
  private tmp: Int32Array;
  private count = new Int32Array(1024);
  private codes: Int32Array;
  private Y: Float64Array = new Float64Array(0);

  constructor(private n: number, readonly shared = false) {
    this.cap = Math.max(64, 2 * n + 16);
    this.t = { nodes: 0, node: this.f64(this.cap * 4), child: this.i32(this.cap), leaf: this.i32(this.cap * 2),
      order: this.i32(n), groups: this.i32(n), ngroups: 0 };
    this.raw = new Int32Array(n);
    this.tmp = new Int32Array(n);
    this.codes = new Int32Array(n);
  }

  private f64(len: number): Float64Array {
    return new Float64Array(this.shared ? new SharedArrayBuffer(len * 8) : new ArrayBuffer(len * 8));
  }

  private i32(len: number): Int32Array {
    return new Int32Array(this.shared ? new SharedArrayBuffer(len * 4) : new ArrayBuffer(len * 4));
  }

  /** Point indices in Morton order of the last build: nearby points are adjacent. */
  get order(): Int32Array {
    return this.t.order;
  }

  private ensure(nodes: number): void {
    if (nodes <= this.cap) return;
    let cap = this.cap;
    while (cap < nodes) cap *= 2;
    const t = this.t;
    const node = this.f64(cap * 4);
    const child = this.i32(cap);
    const leaf = this.i32(cap * 2);
    node.set(t.node.subarray(0, t.nodes * 4));
    child.set(t.child.subarray(0, t.nodes));
    leaf.set(t.leaf.subarray(0, t.nodes * 2));
    this.t = { nodes: t.nodes, node, child, leaf, order: t.order, groups: t.groups, ngroups: t.ngroups };
    this.cap = cap;
  }

  /** Build the tree over Y (interleaved x, y) for n points. */
  build(Y: Float64Array, n: number = this.n): void {
    if (n > this.n) {
      this.n = n;
      this.t.order = this.i32(n);
      this.t.groups = this.i32(n);
      this.raw = new Int32Array(n);
      this.tmp = new Int32Array(n);
      this.codes = new Int32Array(n);
    }
    const { minX, minY, maxX, maxY } = bounds(Y, 0, n);
    const side = Math.max(maxX - minX, maxY - minY, 1e-300) * (1 + 1e-9);
    const order = this.t.order;
    for (let i = 0; i < n; i++) order[i] = i;
    this.Y = Y;
    this.sortRange(0, n, minX, minY, 32768 / side);
    this.t.nodes = 1;
    this.make(0, 0, n, 0, side);
    this.findGroups();
  }

  /** Collect the repulsion groups in Morton order (depth first, children in quadrant order). */
  private findGroups(): void {
    const { node, child, groups } = this.t;
    const stack = new Int32Array(3 * MAX_DEPTH + 8);
    let sp = 0;
    let g = 0;
    stack[sp++] = 0;
    while (sp > 0) {
      const id = stack[--sp];
      const cnt = node[id * 4 + 3];
      if (cnt === 0) continue;
      const c = child[id];
      if (cnt <= GROUP_SIZE || c === -1) {
        groups[g++] = id;
        continue;
      }
      stack[sp++] = c + 3;
      stack[sp++] = c + 2;
      stack[sp++] = c + 1;
      stack[sp++] = c;
    }
    this.t.ngroups = g;
  }

  /**
   * A new grid over the points [lo, hi) of `order`: their codes on a 2^15 × 2^15 grid over their
   * own square bounding box, and the range sorted by them (stable, so ties keep their order).
   * Returns the box's side, or 0 when the points are identical (or too close for the grid).
   */
  private regrid(lo: number, hi: number): number {
    const Y = this.Y;
    const order = this.t.order;
    const { minX, minY, maxX, maxY } = bounds(Y, lo, hi, order);
    const side = Math.max(maxX - minX, maxY - minY) * (1 + 1e-9);
    const scale = 32768 / side;
    if (!(side > 0) || !Number.isFinite(scale)) return 0;
    this.sortRange(lo, hi, minX, minY, scale);
    return side;
  }

  /**
   * The points order[lo, hi) sorted by their Morton codes on the grid with lower corner
   * (minX, minY) and `scale` cells per unit (stable: ties keep their order); the sorted codes go
   * to codes[lo, hi).
   */
  private sortRange(lo: number, hi: number, minX: number, minY: number, scale: number): void {
    const Y = this.Y;
    const order = this.t.order;
    const raw = this.raw;
    for (let t = lo; t < hi; t++) {
      const i = order[t];
      const ix = Math.min(32767, Math.floor((Y[2 * i] - minX) * scale));
      const iy = Math.min(32767, Math.floor((Y[2 * i + 1] - minY) * scale));
      raw[t] = interleave(ix) | (interleave(iy) << 1);
    }
    sortByCode(order, raw, this.tmp, this.codes, lo, hi, this.count);
    order.set(this.tmp.subarray(lo, hi), lo);
  }

  /**
   * Fill node `id` for sorted points [lo, hi) at `level` of grid number `roots` (cell side `w`);
   * returns nothing, writes COM.
   */
  private make(id: number, lo: number, hi: number, level: number, w: number, roots = 0): void {
    const count = hi - lo;
    if (count > LEAF_SIZE && level === MAX_LEVEL && roots < MAX_ROOTS) {
      const side = this.regrid(lo, hi);
      if (side > 0) {
        this.make(id, lo, hi, 0, side, roots + 1);
        return;
      }
    }
    if (count <= LEAF_SIZE || level === MAX_LEVEL) {
      const Y = this.Y;
      const order = this.t.order;
      let sx = 0;
      let sy = 0;
      let same = count > 0;
      const x0 = count > 0 ? Y[2 * order[lo]] : 0;
      const y0 = count > 0 ? Y[2 * order[lo] + 1] : 0;
      for (let t = lo; t < hi; t++) {
        const i = order[t];
        sx += Y[2 * i];
        sy += Y[2 * i + 1];
        if (Y[2 * i] !== x0 || Y[2 * i + 1] !== y0) same = false;
      }
      const node = this.t.node;
      node[id * 4] = same ? x0 : count > 0 ? sx / count : 0;
      node[id * 4 + 1] = same ? y0 : count > 0 ? sy / count : 0;
      node[id * 4 + 2] = same ? 0 : w * w;
      node[id * 4 + 3] = count;
      this.t.child[id] = -1;
      this.t.leaf[id * 2] = lo;
      this.t.leaf[id * 2 + 1] = hi;
      return;
    }
    const first = this.t.nodes;
    this.ensure(first + 4);
    this.t.nodes = first + 4;
    this.t.child[id] = first;
    this.t.leaf[id * 2] = lo;
    this.t.leaf[id * 2 + 1] = hi;
    const shift = 2 * (MAX_LEVEL - 1 - level);
    const codes = this.codes;
    let start = lo;
    let sx = 0;
    let sy = 0;
    for (let q = 0; q < 4; q++) {
      let end = start;
      while (end < hi && ((codes[end] >>> shift) & 3) === q) end++;
      this.make(first + q, start, end, level + 1, w / 2, roots);
      const c = this.t.node[(first + q) * 4 + 3];
      sx += this.t.node[(first + q) * 4] * c;
      sy += this.t.node[(first + q) * 4 + 1] * c;
      start = end;
    }
    const node = this.t.node;
    node[id * 4] = sx / count;
    node[id * 4 + 1] = sy / count;
    node[id * 4 + 2] = w * w;
    node[id * 4 + 3] = count;
  }
}

/**
 * Stable LSD radix sort of positions [lo, hi) of (idx, key) by the 30-bit keys, 10 bits a pass,
 * into (outIdx, outKey); idx and key are scratch (three passes: in, out, in, out).
 */
function sortByCode(idx: Int32Array, key: Int32Array, outIdx: Int32Array, outKey: Int32Array, lo: number, hi: number,
  count: Int32Array): void
{
  let si = idx;
  let sk = key;
  let di = outIdx;
  let dk = outKey;
  for (let shift = 0; shift < 30; shift += 10) {
    count.fill(0);
    for (let t = lo; t < hi; t++) count[(sk[t] >>> shift) & 1023]++;
    let sum = lo;
    for (let b = 0; b < 1024; b++) {
      const c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (let t = lo; t < hi; t++) {
      const p = count[(sk[t] >>> shift) & 1023]++;
      di[p] = si[t];
      dk[p] = sk[t];
    }
    [si, di] = [di, si];
    [sk, dk] = [dk, sk];
  }
}

/** Spread the low 15 bits of v to the even bit positions. */
function interleave(v: number): number {
  v &= 0x7fff;
  v = (v | (v << 8)) & 0x00ff00ff;
  v = (v | (v << 4)) & 0x0f0f0f0f;
  v = (v | (v << 2)) & 0x33333333;
  v = (v | (v << 1)) & 0x55555555;
  return v;
}

/**
 * Barnes–Hut repulsion for the groups [g0, g1) of the tree (see TreeArrays.groups): for each
 * point i of a group, Zi[i] = Σ_{j≠i} w_ij and F[2i..2i+1] = Σ_{j≠i} w_ij² (y_i − y_j), with
 * w = 1 / (1 + |y_i − y_j|²).
 *
 * The tree is walked once per group, not once per point: a cell is summarized by its centre
 * of mass when (cell width)² < θ² · d², where d is the distance from the centre of mass to the
 * group's bounding box (scikit-learn's test uses the distance to the point itself; the box
 * distance is never larger, so every point gets at least that accuracy). The cells and the
 * points of opened leaves go into one interaction list, which the points of the group then
 * sum two at a time against two entries at a time (src/tsne/repulsion-simd.ts: WebAssembly
 * SIMD, or its bit-identical JavaScript twin). The group's own points are in the list, and
 * y_i's term is exactly w = 1 with zero force, removed from Zi afterwards. Each point's sums
 * depend only on the tree and Y, so any split of the groups gives the same numbers.
 */
export function repulsion(t: TreeArrays, Y: Float64Array, g0: number, g1: number, theta: number, F: Float64Array,
  Zi: Float64Array): void
{
  const node = t.node;
  const child = t.child;
  const leaf = t.leaf;
  const pts = t.order;
  const groups = t.groups;
  const th2 = theta * theta;
  // For theta > 1/√2 a cell could pass the test while holding a point of the group: then check ranges.
  const guard = th2 > 0.5;
  const stack = new Int32Array(3 * MAX_DEPTH + 8);
  const ws = workspace();
  for (let g = g0; g < g1; g++) {
    const gid = groups[g];
    const lo = leaf[gid * 2];
    const hi = leaf[gid * 2 + 1];
    const ngp = (hi - lo + 1) >> 1;
    // layout (float64 values): points [0, 4·ngp), sums [4·ngp, 10·ngp), list from 10·ngp
    const lp = 10 * ngp;
    let M = ws.reserve(lp + 6 * 512);
    let x0 = Infinity;
    let x1 = -Infinity;
    let y0 = Infinity;
    let y1 = -Infinity;
    for (let p = lo; p < hi; p++) {
      const i = pts[p];
      const x = Y[2 * i];
      const y = Y[2 * i + 1];
      M[2 * (p - lo)] = x;
      M[2 * (p - lo) + 1] = y;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
    if ((hi - lo) & 1) {
      M[2 * (hi - lo)] = M[2 * (hi - lo) - 2];
      M[2 * (hi - lo) + 1] = M[2 * (hi - lo) - 1];
    }
    // walk the tree once for the group; entry e goes to lp + 6⌊e/2⌋ + (e mod 2): x, then y (+2), count (+4)
    let m = 0;
    let sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
      const id = stack[--sp];
      const o = id * 4;
      const cnt = node[o + 3];
      if (cnt === 0) continue;
      const c = child[id];
      const need = lp + 3 * (m + (c === -1 ? leaf[id * 2 + 1] - leaf[id * 2] : 1)) + 6;
      if (need > M.length) M = ws.reserve(2 * need);
      const cx = node[o];
      const cy = node[o + 1];
      const ex = cx < x0 ? x0 - cx : cx > x1 ? cx - x1 : 0;
      const ey = cy < y0 ? y0 - cy : cy > y1 ? cy - y1 : 0;
      if (node[o + 2] < th2 * (ex * ex + ey * ey) && !(guard && leaf[id * 2] < hi && lo < leaf[id * 2 + 1])) {
        const q = lp + 6 * (m >> 1) + (m & 1);
        M[q] = cx;
        M[q + 2] = cy;
        M[q + 4] = cnt;
        m++;
        continue;
      }
      if (c === -1 && node[o + 2] === 0) {
        // identical points: one entry of weight cnt at their common position, which is exact
        const q = lp + 6 * (m >> 1) + (m & 1);
        M[q] = cx;
        M[q + 2] = cy;
        M[q + 4] = cnt;
        m++;
      } else if (c === -1) {
        const b = leaf[id * 2 + 1];
        for (let p = leaf[id * 2]; p < b; p++) {
          const j = pts[p];
          const q = lp + 6 * (m >> 1) + (m & 1);
          M[q] = Y[2 * j];
          M[q + 2] = Y[2 * j + 1];
          M[q + 4] = 1;
          m++;
        }
      } else {
        stack[sp++] = c + 3;
        stack[sp++] = c + 2;
        stack[sp++] = c + 1;
        stack[sp++] = c;
      }
    }
    if (m & 1) {
      const q = lp + 6 * (m >> 1) + 1;
      M[q] = 0;
      M[q + 2] = 0;
      M[q + 4] = 0;
    }
    ws.sum(lp, (m + 1) >> 1, 0, ngp, 4 * ngp);
    M = ws.M;
    for (let p = lo; p < hi; p++) {
      const i = pts[p];
      const r = 4 * ngp + 3 * (p - lo);
      // y_i's own term is in the list: w = 1, zero force
      Zi[i] = M[r] - 1;
      F[2 * i] = M[r + 1];
      F[2 * i + 1] = M[r + 2];
    }
  }
}

/** This thread's scratch memory for the repulsion sums: WebAssembly memory when SIMD is available. */
class Workspace {
  M: Float64Array;
  private simd: RepulsionSimd | null;
  constructor() {
    this.simd = repulsionSimd();
    this.M = this.simd ? new Float64Array(this.simd.memory.buffer) : new Float64Array(8192);
  }

  /** The scratch array with at least `values` float64 values (contents kept). */
  reserve(values: number): Float64Array {
    if (this.M.length >= values) return this.M;
    if (this.simd && this.simd.ensure(values * 8)) {
      this.M = new Float64Array(this.simd.memory.buffer);
    } else {
      // no SIMD, or the WebAssembly memory cannot grow: the JavaScript twin from here on
      this.simd = null;
      const next = new Float64Array(Math.max(values, 2 * this.M.length));
      next.set(this.M);
      this.M = next;
    }
    return this.M;
  }

  /** The pair sums (offsets in float64 values, see repulsion-simd.ts). */
  sum(lp: number, npairs: number, gp: number, ngp: number, op: number): void {
    if (this.simd) this.simd.sum(lp * 8, npairs, gp * 8, ngp, op * 8);
    else sumPairsJs(this.M, lp, npairs, gp, ngp, op);
  }
}

let shared: Workspace | undefined;

function workspace(): Workspace {
  return (shared ??= new Workspace());
}

/** Repulsion for every point of a built tree (this thread only). */
export function repulsionAll(tree: QuadTree, Y: Float64Array, theta: number, F: Float64Array, Zi: Float64Array): void {
  repulsion(tree.t, Y, 0, tree.t.ngroups, theta, F, Zi);
}

/**
 * Split the groups into `parts` contiguous ranges [g0, g1) holding about equal numbers of
 * points (groups are in Morton order, so each range covers a contiguous run of points).
 */
export function groupRanges(t: TreeArrays, parts: number): [number, number][] {
  const out: [number, number][] = [];
  const n = t.leaf[1];
  let g = 0;
  for (let p = 0; p < parts; p++) {
    const target = Math.round(((p + 1) * n) / parts);
    const g0 = g;
    while (g < t.ngroups && (p === parts - 1 || t.leaf[t.groups[g] * 2] < target)) g++;
    out.push([g0, g]);
  }
  return out;
}
