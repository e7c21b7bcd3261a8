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
 *    (squared euclidean distance, index), the exact order of src/tsne/knn.ts.
 *  - Refinement (NN-descent's local join, pulled by each row), up to `rounds` times: the
 *    neighbourhood B(j) of a row is the first m entries of its list (m = `join`) and up to
 *    `reverse` reverse entries (rows that have j among their first m: reverseLists). The
 *    candidates of i are every q in B(j) for every j in B(i), except the pairs whose two links
 *    (i–j and j–q) were both in the lists before the last round (those were joined already).
 *    Each round reads only the previous round's lists, so a row's result never depends on the
 *    order rows are processed in. The rounds stop early once one changes at most `minChange`
 *    of the entries.
 *  - Distances: Σ_c (x_i[c] − x_j[c])² in float64, in column order (pairSums: the SIMD kernel or
 *    its bit-identical JavaScript twin), the same values the exact search reports.
 *
 * The same data, k and seed give the same lists on every machine. `estimateRecall` compares a
 * seeded sample of rows against the exact search, for the record.
 */

import { Rng } from '../util/rng.js';
import { sharedF64, sharedI32 } from '../util/worker.js';
import { orderRow, push, type Heap, type KnnResult } from './knn.js';
import { claimSlot, pairSpace, pairSums, type PairSlot, type PairSpace } from './knn-simd.js';

export interface ApproxKnnOptions {
  /** Seed of the forest (default 0). */
  seed?: number;
  /** Trees in the forest (default 8). */
  trees?: number;
  /** Smallest leaf (default max(k + 1, 32)); leaves hold up to twice this. */
  leafSize?: number;
  /** Refinement rounds at most (default 5). */
  rounds?: number;
  /** Neighbours of neighbours joined per round (default 32). */
  join?: number;
  /** Reverse neighbours joined per row and round at most (default 32; 0: none). */
  reverse?: number;
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

/** What the row functions of one search share (on SharedArrayBuffers when threads take part). */
export interface ApproxJob {
  /** The data, in `space`'s memory when there is one (its SIMD kernel computes the distances). */
  X: Float64Array | Float32Array;
  space: PairSpace | null;
  n: number;
  d: number;
  k: number;
  join: number;
  forest: Tree[];
  /** The lists being read (after the forest pass: its output) and which entries are new in them. */
  curI: Int32Array;
  curD: Float64Array;
  fresh: Uint8Array;
  /** The lists being written. */
  outI: Int32Array;
  outD: Float64Array;
  outFresh: Uint8Array;
  /** The reverse lists of curI (reverseLists): row j's entries revIdx[revStart[j] … revStart[j + 1]). */
  revStart: Int32Array;
  revIdx: Int32Array;
  revFresh: Uint8Array;
  /** Reverse entries per row at most. */
  reverse: number;
}

/** The resolved options. */
function settings(k: number,
  opts: ApproxKnnOptions
): { trees: number; leafSize: number; rounds: number; join: number; reverse: number; minChange: number; seed: number } {
  return {
    trees: Math.max(1, opts.trees ?? 8),
    leafSize: Math.max(k + 1, opts.leafSize ?? 32),
    rounds: Math.max(0, opts.rounds ?? 5),
    join: Math.min(k, Math.max(1, opts.join ?? 32)),
    reverse: Math.max(0, opts.reverse ?? 32),
    minChange: opts.minChange ?? 0.001,
    seed: opts.seed ?? 0,
  };
}

/** The forest (on this thread; its arrays shared when `shared`). */
function buildForest(X: Float64Array | Float32Array, n: number, d: number, o: ReturnType<typeof settings>,
  shared: boolean, onProgress?: ApproxKnnOptions['onProgress']): Tree[]
{
  const rng = new Rng(o.seed);
  const forest: Tree[] = [];
  for (let t = 0; t < o.trees; t++) {
    const tr = buildTree(X, n, d, o.leafSize, rng.fork());
    forest.push(shared ? { order: sharedI32(tr.order), start: sharedI32(tr.start), leafOf: sharedI32(tr.leafOf) } : tr);
    onProgress?.('forest', t + 1, o.trees);
  }
  return forest;
}

/** Per-thread scratch of the row functions. */
interface Scratch {
  seen: Int32Array;
  mark: Int32Array;
  stamp: number;
  cand: Int32Array;
  dist: Float64Array;
  heap: Heap;
}

function scratchFor(job: ApproxJob): Scratch {
  const leafMax = Math.max(...job.forest.map((t) => maxLeaf(t)));
  const maxCand = Math.min(job.n, Math.max(job.forest.length * leafMax, (job.join + job.reverse) ** 2));
  return {
    seen: new Int32Array(job.n).fill(-1),
    mark: new Int32Array(job.n).fill(-1),
    stamp: 0,
    cand: new Int32Array(maxCand),
    dist: new Float64Array(maxCand),
    heap: { hd: new Float64Array(job.k), hi: new Int32Array(job.k), size: 0 },
  };
}

function maxLeaf(t: Tree): number {
  let m = 0;
  for (let l = 0; l + 1 < t.start.length; l++) m = Math.max(m, t.start[l + 1] - t.start[l]);
  return m;
}

/**
 * Rows [start, end) of one pass: 'forest' lists each row's nearest among the union of its leaves
 * into outI/outD; 'refine' joins neighbours of neighbours from curI/curD (see the file comment) into
 * outI/outD/outFresh. Returns the entries that changed (refine). A row's result depends only on the
 * job's inputs, so any split of the rows across threads gives the same lists.
 */
export function approxRows(job: ApproxJob, pass: 'forest' | 'refine', start: number, end: number): number {
  const sc = scratchFor(job);
  const slot = job.space ? claimSlot(job.space) : null;
  try {
    return pass === 'forest' ? forestRows(job, sc, slot, start, end) : refineRows(job, sc, slot, start, end);
  } finally {
    slot?.release();
  }
}

function forestRows(job: ApproxJob, sc: Scratch, slot: PairSlot | null, start: number, end: number): number {
  const { k, d } = job;
  for (let i = start; i < end; i++) {
    const stamp = ++sc.stamp;
    sc.seen[i] = stamp;
    let m = 0;
    for (const tr of job.forest) {
      const l = tr.leafOf[i];
      for (let t = tr.start[l]; t < tr.start[l + 1]; t++) {
        const j = tr.order[t];
        if (sc.seen[j] !== stamp) {
          sc.seen[j] = stamp;
          sc.cand[m++] = j;
        }
      }
    }
    pairSums(slot, job.X, d, i, sc.cand, m, 'diff', sc.dist);
    sc.heap.size = 0;
    for (let t = 0; t < m; t++) push(sc.heap, k, sc.dist[t], sc.cand[t]);
    orderRow(sc.heap, i * k, job.outI, job.outD);
  }
  return 0;
}

function refineRows(job: ApproxJob, sc: Scratch, slot: PairSlot | null, start: number, end: number): number {
  const { k, d, join, curI, curD, fresh, revStart, revIdx, revFresh } = job;
  let changed = 0;
  for (let i = start; i < end; i++) {
    const stamp = ++sc.stamp;
    sc.seen[i] = stamp;
    sc.heap.size = 0;
    for (let a = 0; a < k; a++) {
      const j = curI[i * k + a];
      sc.seen[j] = stamp;
      sc.mark[j] = i;
      push(sc.heap, k, curD[i * k + a], j);
    }
    // the join: every q in the neighbourhood B(j) of every j in B(i), B = the first `join`
    // entries of the list and the reverse entries; a pair of two old links was joined before
    let m = 0;
    const visit = (j: number, linkNew: boolean) => {
      for (let b = 0; b < join; b++) {
        if (!linkNew && fresh[j * k + b] === 0) continue;
        const q = curI[j * k + b];
        if (sc.seen[q] !== stamp) {
          sc.seen[q] = stamp;
          sc.cand[m++] = q;
        }
      }
      for (let t = revStart[j]; t < revStart[j + 1]; t++) {
        if (!linkNew && revFresh[t] === 0) continue;
        const q = revIdx[t];
        if (sc.seen[q] !== stamp) {
          sc.seen[q] = stamp;
          sc.cand[m++] = q;
        }
      }
    };
    for (let a = 0; a < join; a++) visit(curI[i * k + a], fresh[i * k + a] === 1);
    for (let t = revStart[i]; t < revStart[i + 1]; t++) visit(revIdx[t], revFresh[t] === 1);
    if (m > 0) {
      pairSums(slot, job.X, d, i, sc.cand, m, 'diff', sc.dist);
      for (let t = 0; t < m; t++) push(sc.heap, k, sc.dist[t], sc.cand[t]);
    }
    orderRow(sc.heap, i * k, job.outI, job.outD);
    for (let a = 0; a < k; a++) {
      const isNew = sc.mark[job.outI[i * k + a]] !== i ? 1 : 0;
      job.outFresh[i * k + a] = isNew;
      changed += isNew;
    }
  }
  return changed;
}

/**
 * The reverse lists of the first `join` entries: row j gets the rows i whose list has j among
 * its first `join`, in index order, or the nearest `cap` of them (ties by index) when there are
 * more, each with the entry's new flag. A function of the lists alone.
 */
export function reverseLists(curI: Int32Array, curD: Float64Array, fresh: Uint8Array, n: number, k: number,
  join: number, cap: number,
  alloc: (len: number) => Int32Array): { revStart: Int32Array; revIdx: Int32Array; revFresh: Uint8Array }
{
  const count = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) for (let a = 0; a < join; a++) count[curI[i * k + a] + 1]++;
  const off = new Int32Array(n + 1);
  for (let j = 0; j < n; j++) off[j + 1] = off[j] + count[j + 1];
  const all = new Int32Array(off[n]);
  const pos = off.slice(0, n);
  // entry (i, a) is stored as its flat index i·k + a
  for (let i = 0; i < n; i++) for (let a = 0; a < join; a++) all[pos[curI[i * k + a]]++] = i * k + a;
  const revStart = alloc(n + 1);
  let total = 0;
  for (let j = 0; j < n; j++) total += Math.min(cap, off[j + 1] - off[j]);
  const revIdx = alloc(total);
  const revFresh = new Uint8Array(
    revIdx.buffer instanceof SharedArrayBuffer ? new SharedArrayBuffer(total) : new ArrayBuffer(total),
  );
  let w = 0;
  for (let j = 0; j < n; j++) {
    revStart[j] = w;
    const lo = off[j];
    const hi = off[j + 1];
    let seg: ArrayLike<number> = all.subarray(lo, hi);
    if (hi - lo > cap) seg = Array.from(seg).sort((p, q) => curD[p] - curD[q] || p - q).slice(0, cap);
    for (let t = 0; t < seg.length; t++) {
      const e = seg[t];
      revIdx[w] = (e / k) | 0;
      revFresh[w++] = fresh[e];
    }
  }
  revStart[n] = w;
  return { revStart, revIdx, revFresh };
}

/**
 * Runs `rows(pass, start, end)` over all rows (split across threads by the caller's runner), pass
 * after pass; returns the final lists. `threads` > 1 puts every array on shared memory.
 */
export async function approxSearch(
  X: Float64Array | Float32Array,
  n: number,
  d: number,
  k: number,
  opts: ApproxKnnOptions,
  threads: number,
  run: (job: ApproxJob, pass: 'forest' | 'refine') => Promise<number>,
): Promise<KnnResult> {
  if (k >= n) throw new Error(`knnApprox: k = ${k} needs more than ${n} points`);
  const o = settings(k, opts);
  const shared = threads > 1;
  // float64 data whose values are all float32 values goes to the kernel as float32: the same
  // distances (float32 entries widen exactly) in half the memory traffic of the gathered rows
  const sp = pairSpace(X, n, d, threads, X instanceof Float32Array || allSingle(X));
  const Xs = sp ? sp.X : shared ? sharedF64(X) : X;
  const forest = buildForest(Xs, n, d, o, shared, opts.onProgress);
  const i32 = (len: number) => new Int32Array(shared ? new SharedArrayBuffer(len * 4) : new ArrayBuffer(len * 4));
  const f64 = (len: number) => new Float64Array(shared ? new SharedArrayBuffer(len * 8) : new ArrayBuffer(len * 8));
  const u8 = (len: number) => new Uint8Array(shared ? new SharedArrayBuffer(len) : new ArrayBuffer(len));
  const job: ApproxJob = { X: Xs, space: sp?.space ?? null, n, d, k, join: o.join, forest, curI: i32(0), curD: f64(0),
    fresh: u8(0), outI: i32(n * k), outD: f64(n * k), outFresh: u8(0), revStart: i32(n + 1), revIdx: i32(0),
    revFresh: u8(0), reverse: o.reverse };
  await run(job, 'forest');
  job.curI = job.outI;
  job.curD = job.outD;
  job.fresh = u8(n * k).fill(1);
  for (let r = 0; r < o.rounds; r++) {
    job.outI = i32(n * k);
    job.outD = f64(n * k);
    job.outFresh = u8(n * k);
    Object.assign(job, reverseLists(job.curI, job.curD, job.fresh, n, k, o.join, o.reverse, i32));
    const changed = await run(job, 'refine');
    opts.onProgress?.(`refinement ${r + 1} (${changed} of ${n * k} entries changed)`, n, n);
    job.curI = job.outI;
    job.curD = job.outD;
    job.fresh = job.outFresh;
    if (changed <= o.minChange * n * k) break;
  }
  return { k, indices: job.curI, dist2: job.curD };
}

/** Whether every value is a float32 value. */
function allSingle(X: Float64Array | Float32Array): boolean {
  for (let t = 0; t < X.length; t++) if (Math.fround(X[t]) !== X[t]) return false;
  return true;
}

/** Approximate kNN of every row on this thread (see the file comment). */
export function knnApprox(X: Float64Array | Float32Array, n: number, d: number, k: number,
  opts: ApproxKnnOptions = {}): Promise<KnnResult>
{
  return approxSearch(X, n, d, k, opts, 1, async (job, pass) => {
    const changed = approxRows(job, pass, 0, n);
    if (pass === 'forest') opts.onProgress?.('forest rows', n, n);
    return changed;
  });
}

/**
 * The share of the exact k nearest neighbours found by `nn`, over `sample` rows drawn with the
 * seed (all rows when there are fewer): the exact lists of those rows cost sample × N × d.
 */
export function estimateRecall(X: Float64Array | Float32Array, n: number, d: number, nn: KnnResult, sample = 200,
  seed = 0): { recall: number; rows: number }
{
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
  let found = 0;
  try {
    for (const i of pick) {
      pairSums(slot, Xs, d, i, all, n, 'diff', D);
      heap.size = 0;
      for (let j = 0; j < n; j++) if (j !== i) push(heap, k, D[j], j);
      // the heap holds the exact k nearest (order does not matter for a count)
      const got = new Set(nn.indices.subarray(i * k, (i + 1) * k));
      for (let a = 0; a < k; a++) if (got.has(heap.hi[a])) found++;
    }
  } finally {
    slot?.release();
  }
  return { recall: found / (rows * k), rows };
}
