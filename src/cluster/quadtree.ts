/**
 * A quadtree over 2-D points in flat typed arrays, for Barnes–Hut t-SNE repulsion.
 *
 * Built from Morton (Z-curve) codes: the points are mapped onto a 2^15 × 2^15 grid over
 * their square bounding box, sorted by interleaved code, and each node splits its sorted
 * range into four contiguous quadrant ranges by the next two code bits. A node with at most
 * LEAF_SIZE points (or at the last grid level) is a leaf that keeps its range of points, and
 * the traversal handles a leaf's points one by one (exactly) unless the whole leaf is far
 * enough to be summarized. Identical points therefore need no special case.
 *
 * Per node: [comX, comY, width², count] in `node`, the first of four consecutive children in
 * `child` (-1 for a leaf) and, for leaves, the point range [start, end) of `order` in `leaf`.
 * Arrays may live on SharedArrayBuffers so worker threads can traverse the same tree.
 */

export const MAX_LEVEL = 15;
/** Points kept in a leaf at most (above the last level). */
export const LEAF_SIZE = 8;

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
  /** Position of each point in `order`. */
  rank: Int32Array;
}

export class QuadTree {
  t: TreeArrays;
  private cap: number;
  private keys: Float64Array;
  private codes: Int32Array;
  private Y: Float64Array = new Float64Array(0);

  constructor(private n: number, readonly shared = false) {
    this.cap = Math.max(64, 2 * n + 16);
    this.t = { nodes: 0, node: this.f64(this.cap * 4), child: this.i32(this.cap), leaf: this.i32(this.cap * 2), order: this.i32(n), rank: this.i32(n) };
    this.keys = new Float64Array(n);
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
    this.t = { nodes: t.nodes, node, child, leaf, order: t.order, rank: t.rank };
    this.cap = cap;
  }

  /** Build the tree over Y (interleaved x, y) for n points. */
  build(Y: Float64Array, n: number = this.n): void {
    if (n > this.n) {
      this.n = n;
      this.t.order = this.i32(n);
      this.t.rank = this.i32(n);
      this.keys = new Float64Array(n);
      this.codes = new Int32Array(n);
    }
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let i = 0; i < n; i++) {
      const x = Y[2 * i];
      const y = Y[2 * i + 1];
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    const side = Math.max(maxX - minX, maxY - minY, 1e-300) * (1 + 1e-9);
    const scale = 32768 / side;
    const keys = this.keys.subarray(0, n);
    for (let i = 0; i < n; i++) {
      const ix = Math.min(32767, Math.floor((Y[2 * i] - minX) * scale));
      const iy = Math.min(32767, Math.floor((Y[2 * i + 1] - minY) * scale));
      const code = (interleave(ix) | (interleave(iy) << 1)) >>> 0;
      keys[i] = code * 4194304 + i;
    }
    keys.sort();
    const order = this.t.order;
    const codes = this.codes;
    for (let t = 0; t < n; t++) {
      const key = keys[t];
      const i = key % 4194304;
      order[t] = i;
      this.t.rank[i] = t;
      codes[t] = (key - i) / 4194304;
    }
    this.Y = Y;
    this.t.nodes = 1;
    this.make(0, 0, n, 0, side);
  }

  /** Fill node `id` for sorted points [lo, hi) at `level` (cell side `w`); returns nothing, writes COM. */
  private make(id: number, lo: number, hi: number, level: number, w: number): void {
    const count = hi - lo;
    if (count <= LEAF_SIZE || level === MAX_LEVEL) {
      const Y = this.Y;
      const order = this.t.order;
      let sx = 0;
      let sy = 0;
      for (let t = lo; t < hi; t++) {
        const i = order[t];
        sx += Y[2 * i];
        sy += Y[2 * i + 1];
      }
      const node = this.t.node;
      node[id * 4] = count > 0 ? sx / count : 0;
      node[id * 4 + 1] = count > 0 ? sy / count : 0;
      node[id * 4 + 2] = w * w;
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
      this.make(first + q, start, end, level + 1, w / 2);
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
 * Barnes–Hut repulsion for points [start, end) (positions in `order` when given): for each i,
 * Zi[i] = Σ_{j≠i} w_ij and F[2i..2i+1] = Σ_{j≠i} w_ij² (y_i − y_j), with
 * w = 1 / (1 + |y_i − y_j|²), summarizing a cell by its centre of mass when
 * (cell width)² < θ² · (distance to it)² (as scikit-learn does); the points of a leaf that is
 * not summarized are taken one by one. Each point's sums depend only on the tree and y_i,
 * so any split into ranges gives the same numbers.
 */
export function repulsion(t: TreeArrays, Y: Float64Array, start: number, end: number, theta: number, F: Float64Array, Zi: Float64Array, order?: Int32Array): void {
  const node = t.node;
  const child = t.child;
  const leaf = t.leaf;
  const pts = t.order;
  const rank = t.rank;
  const th2 = theta * theta;
  // For theta > 1/√2 a cell could pass the test while holding y_i itself: then check ranges.
  const guard = th2 > 0.5;
  const stack = new Int32Array(4 * MAX_LEVEL + 8);
  for (let t0 = start; t0 < end; t0++) {
    const i = order ? order[t0] : t0;
    const ri = rank[i];
    const xi = Y[2 * i];
    const yi = Y[2 * i + 1];
    let z = 0;
    let fx = 0;
    let fy = 0;
    let sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
      const id = stack[--sp];
      const o = id * 4;
      const cnt = node[o + 3];
      if (cnt === 0) continue;
      const dx = xi - node[o];
      const dy = yi - node[o + 1];
      const d2 = dx * dx + dy * dy;
      if (node[o + 2] < th2 * d2 && !(guard && leaf[id * 2] <= ri && ri < leaf[id * 2 + 1])) {
        const w = 1 / (1 + d2);
        const cw = cnt * w;
        z += cw;
        const cw2 = cw * w;
        fx += cw2 * dx;
        fy += cw2 * dy;
        continue;
      }
      const c = child[id];
      if (c === -1) {
        const b = leaf[id * 2 + 1];
        for (let p = leaf[id * 2]; p < b; p++) {
          const j = pts[p];
          if (j === i) continue;
          const ex = xi - Y[2 * j];
          const ey = yi - Y[2 * j + 1];
          const w = 1 / (1 + ex * ex + ey * ey);
          z += w;
          const w2 = w * w;
          fx += w2 * ex;
          fy += w2 * ey;
        }
      } else {
        stack[sp++] = c + 3;
        stack[sp++] = c + 2;
        stack[sp++] = c + 1;
        stack[sp++] = c;
      }
    }
    Zi[i] = z;
    F[2 * i] = fx;
    F[2 * i + 1] = fy;
  }
}
