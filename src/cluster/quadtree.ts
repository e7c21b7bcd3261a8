/**
 * A quadtree over 2-D points in flat typed arrays, for Barnes–Hut t-SNE repulsion.
 * Each node stores its cell centre and half width, the number of points below it and
 * the sum of their coordinates (centre of mass = sum / count), and the index of its first
 * of four consecutive children (-1 for a leaf). Identical points share a leaf; below
 * MAX_DEPTH distinct points also share one (their mean stands for them).
 *
 * Arrays may live on SharedArrayBuffers so worker threads can traverse the same tree.
 */

export const MAX_DEPTH = 48;

/** Flat arrays of a tree; `nodes` is the number in use. */
export interface TreeArrays {
  nodes: number;
  /** [cx, cy, hw, sumX, sumY] per node. */
  geom: Float64Array;
  /** Points below each node. */
  count: Int32Array;
  /** First child index, or -1 for a leaf. */
  child: Int32Array;
  /** Traversal form, filled by finalize: [comX, comY, width², count] per node. */
  node: Float64Array;
}

function alloc(cap: number, shared: boolean): TreeArrays {
  const mk = (bytes: number) => (shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
  return {
    nodes: 0,
    geom: new Float64Array(mk(cap * 5 * 8)),
    count: new Int32Array(mk(cap * 4)),
    child: new Int32Array(mk(cap * 4)),
    node: new Float64Array(mk(cap * 4 * 8)),
  };
}

export class QuadTree {
  t: TreeArrays;
  private cap: number;
  /** Bumped whenever the arrays are reallocated (workers must be sent the new buffers). */
  generation = 0;
  /** Point indices in Morton (Z-curve) order of the last build: nearby points are adjacent. */
  order: Int32Array;
  private keys: Float64Array;

  constructor(n: number, readonly shared = false) {
    this.cap = Math.max(64, 4 * n + 16);
    this.t = alloc(this.cap, shared);
    this.order = new Int32Array(shared ? new SharedArrayBuffer(n * 4) : new ArrayBuffer(n * 4));
    this.keys = new Float64Array(n);
  }

  private grow(): void {
    const old = this.t;
    this.cap *= 2;
    const t = alloc(this.cap, this.shared);
    t.geom.set(old.geom.subarray(0, old.nodes * 5));
    t.count.set(old.count.subarray(0, old.nodes));
    t.child.set(old.child.subarray(0, old.nodes));
    t.nodes = old.nodes;
    this.t = t;
    this.generation++;
  }

  /** Build the tree over Y (interleaved x, y) for n points. */
  build(Y: Float64Array, n: number): void {
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
    const hw0 = Math.max(maxX - minX, maxY - minY, 1e-12) * 0.5 * (1 + 1e-6) + 1e-12;
    this.t.nodes = 0;
    this.newNode((minX + maxX) / 2, (minY + maxY) / 2, hw0);
    // Morton order: inserting and traversing spatially adjacent points one after another keeps
    // the tree's nodes and the traversals cache-friendly. The tree itself does not depend on it.
    if (this.keys.length < n) this.keys = new Float64Array(n);
    if (this.order.length < n) this.order = new Int32Array(this.shared ? new SharedArrayBuffer(n * 4) : new ArrayBuffer(n * 4));
    const sx = 32767 / Math.max(maxX - minX, 1e-300);
    const sy = 32767 / Math.max(maxY - minY, 1e-300);
    const keys = this.keys.subarray(0, n);
    for (let i = 0; i < n; i++) {
      const code = interleave(Math.floor((Y[2 * i] - minX) * sx)) | (interleave(Math.floor((Y[2 * i + 1] - minY) * sy)) << 1);
      keys[i] = (code >>> 0) * 4194304 + i;
    }
    keys.sort();
    for (let t = 0; t < n; t++) {
      const i = keys[t] % 4194304;
      this.order[t] = i;
      this.insert(Y[2 * i], Y[2 * i + 1]);
    }
    const { geom, count, node } = this.t;
    for (let id = 0; id < this.t.nodes; id++) {
      const c = count[id];
      const o = id * 5;
      const w = 2 * geom[o + 2];
      node[id * 4] = c > 0 ? geom[o + 3] / c : 0;
      node[id * 4 + 1] = c > 0 ? geom[o + 4] / c : 0;
      node[id * 4 + 2] = w * w;
      node[id * 4 + 3] = c;
    }
  }

  private newNode(cx: number, cy: number, hw: number): number {
    if (this.t.nodes + 1 > this.cap) this.grow();
    const id = this.t.nodes++;
    const g = this.t.geom;
    const o = id * 5;
    g[o] = cx;
    g[o + 1] = cy;
    g[o + 2] = hw;
    g[o + 3] = 0;
    g[o + 4] = 0;
    this.t.count[id] = 0;
    this.t.child[id] = -1;
    return id;
  }

  private insert(x: number, y: number): void {
    let node = 0;
    let depth = 0;
    for (;;) {
      let t = this.t;
      if (t.child[node] === -1) {
        const cnt = t.count[node];
        const o = node * 5;
        if (cnt === 0) {
          t.count[node] = 1;
          t.geom[o + 3] = x;
          t.geom[o + 4] = y;
          return;
        }
        const px = t.geom[o + 3] / cnt;
        const py = t.geom[o + 4] / cnt;
        if ((px === x && py === y) || depth >= MAX_DEPTH) {
          t.count[node] = cnt + 1;
          t.geom[o + 3] += x;
          t.geom[o + 4] += y;
          return;
        }
        // split: four children, the old content moves to its quadrant
        if (this.t.nodes + 4 > this.cap) this.grow();
        t = this.t;
        const cx = t.geom[o];
        const cy = t.geom[o + 1];
        const h = t.geom[o + 2] / 2;
        const first = this.newNode(cx - h, cy - h, h);
        this.newNode(cx + h, cy - h, h);
        this.newNode(cx - h, cy + h, h);
        this.newNode(cx + h, cy + h, h);
        t = this.t;
        t.child[node] = first;
        const q = first + (px >= cx ? 1 : 0) + (py >= cy ? 2 : 0);
        t.count[q] = cnt;
        t.geom[q * 5 + 3] = t.geom[o + 3];
        t.geom[q * 5 + 4] = t.geom[o + 4];
      }
      const o = node * 5;
      t.count[node]++;
      t.geom[o + 3] += x;
      t.geom[o + 4] += y;
      node = t.child[node] + (x >= t.geom[o] ? 1 : 0) + (y >= t.geom[o + 1] ? 2 : 0);
      depth++;
    }
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
 * Barnes–Hut repulsion for points [start, end) (positions in `order` when given): for each i, Zi[i] = Σ_{j≠i} w_ij and
 * F[2i..2i+1] = Σ_{j≠i} w_ij² (y_i − y_j), with w = 1 / (1 + |y_i − y_j|²), summarizing a
 * cell by its centre of mass when (cell width)² < θ² · (distance to it)².
 * Each point's sums depend only on the tree and y_i, so any split into ranges gives the
 * same numbers.
 */
export function repulsion(t: TreeArrays, Y: Float64Array, start: number, end: number, theta: number, F: Float64Array, Zi: Float64Array, order?: Int32Array): void {
  const node = t.node;
  const child = t.child;
  const th2 = theta * theta;
  const stack = new Int32Array(4 * MAX_DEPTH + 8);
  for (let t0 = start; t0 < end; t0++) {
    const i = order ? order[t0] : t0;
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
      let cnt = node[o + 3];
      if (cnt === 0) continue;
      const dx = xi - node[o];
      const dy = yi - node[o + 1];
      const d2 = dx * dx + dy * dy;
      const c = child[id];
      if (c === -1 || node[o + 2] < th2 * d2) {
        if (d2 === 0) {
          // a leaf at y_i holds i itself (and its duplicates)
          cnt -= 1;
          if (cnt === 0) continue;
        }
        const w = 1 / (1 + d2);
        const cw = cnt * w;
        z += cw;
        const cw2 = cw * w;
        fx += cw2 * dx;
        fy += cw2 * dy;
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
