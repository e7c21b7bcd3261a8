/**
 * Approximate k-nearest neighbours for large N, where the exact search (O(N²·d)) dominates t-SNE:
 * a random-projection forest gives each point candidates, then rounds of neighbour-of-neighbour
 * refinement (NN-descent's local join) improve the lists.
 *
 *  - Forest: `trees` trees. A node of m > 2L points (L = leaf size, at least k + 1) is split at
 *    the median of the points' projections on x_a − x_b, for two of its points drawn with the
 *    tree's seeded generator (ties in the projection broken by index). A leaf therefore holds
 *    L to 2L points, so one tree alone gives every point at least k candidates.
 *  - Candidates of point i: the union of its leaves. The list keeps the k nearest by
 *    (squared euclidean distance, index), the exact order of src/cluster/knn.ts.
 *  - Refinement, `rounds` times: the candidates of i are the first m entries of the lists of
 *    i's first m neighbours (m = `join`), plus i's own list. Each round reads only the previous
 *    round's lists, so a row's result never depends on the order rows are processed in.
 *  - Distances: Σ_c (x_i[c] − x_j[c])² in float64, in column order (pairSums: the SIMD kernel or
 *    its bit-identical JavaScript twin), the same values the exact search reports.
 *
 * The same data, k and seed give the same lists on every machine. `estimateRecall` compares a
 * seeded sample of rows against the exact search, for the record.
 */

import { Rng } from '../util/rng.js';
import { orderRow, push, type Heap, type KnnResult } from './knn.js';
import { claimSlot, pairSpace, pairSums } from './knn-simd.js';

export interface ApproxKnnOptions {
  /** Seed of the forest (default 0). */
  seed?: number;
  /** Trees in the forest (default 8). */
  trees?: number;
  /** Smallest leaf (default max(k + 1, 32)); leaves hold up to twice this. */
  leafSize?: number;
  /** Refinement rounds at most (default 3). */
  rounds?: number;
  /** Neighbours of neighbours joined per round (default 32). */
  join?: number;
  /** Stop refining once a round changes at most this share of the list entries (default 0.001). */
  minChange?: number;
  /** Called with (stage, done, total) as rows finish. */
  onProgress?: (stage: string, done: number, total: number) => void;
}

/** Leaves of one tree: point ids grouped by leaf, and each point's leaf. */
interface Tree {
  /** Point ids, leaf by leaf. */
  order: Int32Array;
  /** [leaves + 1] offsets into order. */
  start: Int32Array;
  /** Leaf of each point. */
  leafOf: Int32Array;
}

/** One random-projection tree with median splits. */
function buildTree(X: Float64Array | Float32Array, n: number, d: number, leafSize: number, rng: Rng): Tree {
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const proj = new Float64Array(n);
  const w = new Float64Array(d);
  const starts: number[] = [];
  const stack: [number, number][] = [[0, n]];
  while (stack.length) {
    const [lo, hi] = stack.pop()!;
    const m = hi - lo;
    if (m <= 2 * leafSize) {
      starts.push(lo);
      continue;
    }
    const a = order[lo + rng.int(m)];
    let b = order[lo + rng.int(m)];
    for (let t = 0; t < 8 && b === a; t++) b = order[lo + rng.int(m)];
    for (let c = 0; c < d; c++) w[c] = X[a * d + c] - X[b * d + c];
    for (let t = lo; t < hi; t++) {
      const o = order[t] * d;
      let s = 0;
      for (let c = 0; c < d; c++) s += w[c] * X[o + c];
      proj[order[t]] = s;
    }
    // median split by (projection, index): a total order, so the halves are unique
    const seg = Array.from(order.subarray(lo, hi));
    seg.sort((p, q) => proj[p] - proj[q] || p - q);
    order.set(seg, lo);
    const mid = lo + (m >> 1);
    stack.push([mid, hi], [lo, mid]);
  }
  starts.sort((p, q) => p - q);
  const start = Int32Array.from([...starts, n]);
  const leafOf = new Int32Array(n);
  for (let l = 0; l + 1 < start.length; l++) for (let t = start[l]; t < start[l + 1]; t++) leafOf[order[t]] = l;
  return { order, start, leafOf };
}

/** Approximate kNN of every row (see the file comment). */
export function knnApprox(X: Float64Array | Float32Array, n: number, d: number, k: number, opts: ApproxKnnOptions = {}): KnnResult {
  if (k >= n) throw new Error(`knnApprox: k = ${k} needs more than ${n} points`);
  const trees = Math.max(1, opts.trees ?? 8);
  const leafSize = Math.max(k + 1, opts.leafSize ?? 32);
  const rounds = Math.max(0, opts.rounds ?? 3);
  const join = Math.min(k, Math.max(1, opts.join ?? 32));
  const minChange = opts.minChange ?? 0.001;
  const rng = new Rng(opts.seed ?? 0);
  const forest: Tree[] = [];
  for (let t = 0; t < trees; t++) {
    forest.push(buildTree(X, n, d, leafSize, rng.fork()));
    opts.onProgress?.('forest', t + 1, trees);
  }
  const sp = pairSpace(X, n, d, 1, X instanceof Float32Array);
  const Xs = sp ? sp.X : X;
  const slot = sp ? claimSlot(sp.space) : null;
  const heap: Heap = { hd: new Float64Array(k), hi: new Int32Array(k), size: 0 };
  const seen = new Int32Array(n).fill(-1);
  let stamp = 0;
  const maxCand = Math.max(trees * 2 * leafSize, k + join * join);
  const cand = new Int32Array(maxCand);
  const dist = new Float64Array(maxCand);
  let indices = new Int32Array(n * k);
  let dist2 = new Float64Array(n * k);
  const select = (i: number, m: number, outI: Int32Array, outD: Float64Array) => {
    pairSums(slot, Xs, d, i, cand, m, 'diff', dist);
    heap.size = 0;
    for (let t = 0; t < m; t++) push(heap, k, dist[t], cand[t]);
    orderRow(heap, i * k, outI, outD);
  };
  try {
    const step = Math.max(1, Math.floor(n / 100));
    for (let i = 0; i < n; i++) {
      stamp++;
      seen[i] = stamp;
      let m = 0;
      for (const tr of forest) {
        const l = tr.leafOf[i];
        for (let t = tr.start[l]; t < tr.start[l + 1]; t++) {
          const j = tr.order[t];
          if (seen[j] !== stamp) {
            seen[j] = stamp;
            cand[m++] = j;
          }
        }
      }
      select(i, m, indices, dist2);
      if (i % step === 0) opts.onProgress?.('candidates', i + 1, n);
    }
    // entries that entered a list in the last pass: only pairs with one of them can find anything new
    let fresh = new Uint8Array(n * k).fill(1);
    const mark = new Int32Array(n).fill(-1);
    for (let r = 0; r < rounds; r++) {
      const nextI = new Int32Array(n * k);
      const nextD = new Float64Array(n * k);
      const nextFresh = new Uint8Array(n * k);
      let changed = 0;
      for (let i = 0; i < n; i++) {
        stamp++;
        seen[i] = stamp;
        heap.size = 0;
        for (let a = 0; a < k; a++) {
          const j = indices[i * k + a];
          seen[j] = stamp;
          mark[j] = i;
          push(heap, k, dist2[i * k + a], j);
        }
        let m = 0;
        for (let a = 0; a < join; a++) {
          const j = indices[i * k + a];
          const jFresh = fresh[i * k + a] === 1;
          for (let b = 0; b < join; b++) {
            if (!jFresh && fresh[j * k + b] === 0) continue;
            const q = indices[j * k + b];
            if (seen[q] !== stamp) {
              seen[q] = stamp;
              cand[m++] = q;
            }
          }
        }
        if (m > 0) {
          pairSums(slot, Xs, d, i, cand, m, 'diff', dist);
          for (let t = 0; t < m; t++) push(heap, k, dist[t], cand[t]);
        }
        orderRow(heap, i * k, nextI, nextD);
        for (let a = 0; a < k; a++) {
          if (mark[nextI[i * k + a]] !== i) {
            nextFresh[i * k + a] = 1;
            changed++;
          }
        }
        if (i % step === 0) opts.onProgress?.(`refinement ${r + 1}`, i + 1, n);
      }
      indices = nextI;
      dist2 = nextD;
      fresh = nextFresh;
      if (changed <= minChange * n * k) break;
    }
  } finally {
    slot?.release();
  }
  return { k, indices, dist2 };
}

/**
 * The share of the exact k nearest neighbours found by `nn`, over `sample` rows drawn with the
 * seed (all rows when there are fewer): the exact lists of those rows cost sample × N × d.
 */
export function estimateRecall(X: Float64Array | Float32Array, n: number, d: number, nn: KnnResult, sample = 200, seed = 0): { recall: number; rows: number } {
  const k = nn.k;
  const rows = Math.min(n, sample);
  const rng = new Rng(seed);
  const perm = Array.from({ length: n }, (_, i) => i);
  for (let t = 0; t < rows; t++) {
    const u = t + rng.int(n - t);
    [perm[t], perm[u]] = [perm[u], perm[t]];
  }
  const pick = perm.slice(0, rows);
  const all = new Int32Array(n);
  for (let j = 0; j < n; j++) all[j] = j;
  const D = new Float64Array(n);
  const sp = pairSpace(X, n, d, 1, X instanceof Float32Array);
  const Xs = sp ? sp.X : X;
  const slot = sp ? claimSlot(sp.space) : null;
  const heap: Heap = { hd: new Float64Array(k), hi: new Int32Array(k), size: 0 };
  const exactI = new Int32Array(n * k);
  const exactD = new Float64Array(n * k);
  let found = 0;
  try {
    for (const i of pick) {
      pairSums(slot, Xs, d, i, all, n, 'diff', D);
      heap.size = 0;
      for (let j = 0; j < n; j++) if (j !== i) push(heap, k, D[j], j);
      orderRow(heap, i * k, exactI, exactD);
      const got = new Set(nn.indices.subarray(i * k, (i + 1) * k));
      for (let a = 0; a < k; a++) if (got.has(exactI[i * k + a])) found++;
    }
  } finally {
    slot?.release();
  }
  return { recall: found / (rows * k), rows };
}
