/**
 * Exact k nearest neighbours for narrow data (the float64 path of src/tsne/knn.ts, below the
 * float32 screen's width), with whole blocks of candidates skipped when no point of the block can
 * be among a query's k nearest. The lists are those of knnRows, bit for bit: the same distances
 * (the same kernel, the same |x|² + |y|² − 2 x·y for every pair it computes), the same total
 * order on (distance, original index), and the same exact re-check at the end.
 *
 * 1. Order: the rows are split in two recursively until a part holds at most OUT_STRIDE rows.
 *    A part is sorted by its projection on x_c − x_b, where b is the row farthest from the
 *    part's first row and c the row farthest from b (ties by position), and cut where the two
 *    sides' sums of squared deviations of the projection are least (with a tenth of the rows
 *    on each side at least): the parts, the blocks, are compact in the data space and follow the
 *    gaps between clusters. Blocks are numbered left to right.
 * 2. Bounds: per block B its centroid c_B, its radius R_B = max_{y∈B} |y − c_B| and the largest
 *    |y|² in it.
 * 3. Search, one query block Q at a time: the data blocks in ascending |c_Q − c_B| (ties by
 *    number; Q itself first). For a query q, every y in B has |q − y| ≥ |c_Q − c_B| − |q − c_Q| − R_B
 *    (the triangle inequality twice). When that bound is positive and its square exceeds the
 *    query's current k-th distance by more than a margin of 1e-8 (|q|² + max_B |y|²) (far more
 *    than the rounding of either side, about d · 2^-53 of it), no y in B can enter the query's
 *    list. Four queries go through the kernel together; B is skipped for them when it is
 *    skipped for all four.
 * On clustered data most blocks are skipped; on data without structure few are, and the cost is
 * that of knnRows plus the ordering (O(n d log n)).
 */
import { dotKernel, OUT_STRIDE } from '../util/dot-simd.js';
import { finishRow, packQuads, scan, squaredNorms, type Heap, type KnnResult } from './knn.js';

/** Rows at least for the pruned search (below, knnRows' single pass is as fast). */
export const PRUNE_MIN_ROWS = 4096;

/** Everything the threads of one search share (on SharedArrayBuffers when `shared`). */
export interface PruneJob {
  /** The data as given, [n][d]: the exact re-check reads it. */
  X: Float64Array | Float32Array;
  n: number;
  d: number;
  k: number;
  /** The rows in block order, [n][d] float64; perm[p] is the row at position p. */
  Xp: Float64Array;
  perm: Int32Array;
  /** |x|² by position, as squaredNorms gives it. */
  sq: Float64Array;
  /** Block b holds positions [start[b], start[b + 1]). */
  start: Int32Array;
  nb: number;
  /** [nb][d] centroids; radii; the largest |y|² per block. */
  cent: Float64Array;
  rad: Float64Array;
  sqmax: Float64Array;
  /** Output by original row: [n][k]. */
  indices: Int32Array;
  dist2: Float64Array;
  /** Candidate pairs computed, per block (for the record: the fraction the bounds left). */
  pairs: Float64Array;
  /** Factor on the block radii in the bounds (1; tests plant a smaller one to show that the bound is what makes the search exact). */
  radiusScale: number;
}

/**
 * True when the pruned search applies: the float64 kernel is there, n and k suit it, and every
 * value is finite (a NaN distance has no place in the order, so those data keep knnRows' pass).
 */
export function prunable(X: Float64Array | Float32Array, n: number, d: number, k: number): boolean {
  if (!(n >= PRUNE_MIN_ROWS && k >= 1 && k < n) || dotKernel() === null) return false;
  for (let t = 0; t < n * d; t++) if (!Number.isFinite(X[t])) return false;
  return true;
}

/** Order the rows, form the blocks and their bounds; output arrays zeroed. */
export function pruneJob(X: Float64Array | Float32Array, n: number, d: number, k: number, shared = false): PruneJob {
  const f64 = (len: number) => new Float64Array(shared ? new SharedArrayBuffer(8 * len) : new ArrayBuffer(8 * len));
  const i32 = (len: number) => new Int32Array(shared ? new SharedArrayBuffer(4 * len) : new ArrayBuffer(4 * len));
  const perm = i32(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  const starts: number[] = [];
  const proj = new Float64Array(n);
  const dir = new Float64Array(d);
  const dist = (a: number, b: number) => {
    let s = 0;
    for (let c = 0; c < d; c++) {
      const t = X[a * d + c] - X[b * d + c];
      s += t * t;
    }
    return s;
  };
  const farthest = (lo: number, hi: number, from: number) => {
    let best = lo;
    let bd = -1;
    for (let p = lo; p < hi; p++) {
      const v = dist(perm[p], from);
      if (v > bd) {
        bd = v;
        best = p;
      }
    }
    return perm[best];
  };
  // depth first, left part first, so the blocks come out left to right
  const stack: [number, number][] = [[0, n]];
  while (stack.length > 0) {
    const [lo, hi] = stack.pop()!;
    if (hi - lo <= OUT_STRIDE) {
      starts.push(lo);
      continue;
    }
    const b = farthest(lo, hi, perm[lo]);
    const c = farthest(lo, hi, b);
    for (let t = 0; t < d; t++) dir[t] = X[c * d + t] - X[b * d + t];
    for (let p = lo; p < hi; p++) {
      const i = perm[p];
      let s = 0;
      for (let t = 0; t < d; t++) s += dir[t] * X[i * d + t];
      proj[i] = s;
    }
    const part = Array.from(perm.subarray(lo, hi)).sort((u, v) => proj[u] - proj[v] || u - v);
    perm.set(part, lo);
    // the cut with the least within-part sum of squares of the projections (1-D 2-means), with
    // at least a tenth of the rows on each side: parts follow gaps between clusters, depth stays O(log n)
    const m = hi - lo;
    const edge = Math.max(1, Math.ceil(m / 10));
    let total = 0;
    let total2 = 0;
    for (let t = 0; t < m; t++) {
      const v = proj[part[t]];
      total += v;
      total2 += v * v;
    }
    let s1 = 0;
    let s2 = 0;
    let cut = lo + (m >> 1);
    let best = Infinity;
    for (let t = 0; t < m - edge; t++) {
      const v = proj[part[t]];
      s1 += v;
      s2 += v * v;
      const a = t + 1;
      if (a < edge) continue;
      const sse = s2 - (s1 * s1) / a + (total2 - s2) - ((total - s1) * (total - s1)) / (m - a);
      if (sse < best) {
        best = sse;
        cut = lo + a;
      }
    }
    stack.push([cut, hi], [lo, cut]);
  }
  const nb = starts.length;
  const start = i32(nb + 1);
  start.set(starts);
  start[nb] = n;
  const Xp = f64(n * d);
  const sq0 = squaredNorms(X, n, d);
  const sq = f64(n);
  for (let p = 0; p < n; p++) {
    const i = perm[p];
    for (let c = 0; c < d; c++) Xp[p * d + c] = X[i * d + c];
    sq[p] = sq0[i];
  }
  const cent = f64(nb * d);
  const rad = f64(nb);
  const sqmax = f64(nb);
  for (let b = 0; b < nb; b++) {
    const p0 = start[b];
    const p1 = start[b + 1];
    for (let p = p0; p < p1; p++) for (let c = 0; c < d; c++) cent[b * d + c] += Xp[p * d + c];
    for (let c = 0; c < d; c++) cent[b * d + c] /= p1 - p0;
    let r2 = 0;
    let m = 0;
    for (let p = p0; p < p1; p++) {
      let s = 0;
      for (let c = 0; c < d; c++) {
        const t = Xp[p * d + c] - cent[b * d + c];
        s += t * t;
      }
      if (s > r2) r2 = s;
      if (sq[p] > m) m = sq[p];
    }
    rad[b] = Math.sqrt(r2);
    sqmax[b] = m;
  }
  return { X, n, d, k, Xp, perm, sq, start, nb, cent, rad, sqmax, indices: i32(n * k), dist2: f64(n * k),
    pairs: f64(nb), radiusScale: 1 };
}

/** The search for the query blocks [b0, b1) of a job (any split gives the same lists). */
export function prunedBlocks(job: PruneJob, b0: number, b1: number): void {
  const simd = dotKernel();
  if (!simd) throw new Error('the pruned kNN needs the WebAssembly SIMD kernel');
  const { d, k, Xp, perm, sq, start, nb, cent, rad, sqmax, radiusScale } = job;
  const JB = OUT_STRIDE;
  // wasm memory (float64 offsets): query quads [JB/4][d][4] and |q|²; one data block likewise; distances [4][JB]
  const sqqAt = JB * d;
  const ypAt = sqqAt + JB;
  const sqyAt = ypAt + JB * d;
  const outAt = sqyAt + JB;
  if (!simd.ensure((outAt + 4 * JB) * 8)) throw new Error('the pruned kNN could not get its kernel memory');
  const M = new Float64Array(simd.memory.buffer);
  const hd = new Float64Array(JB * k);
  const hi = new Int32Array(JB * k);
  const heaps: Heap[] = Array.from({ length: JB },
    (_, r) => ({ hd: hd.subarray(r * k, (r + 1) * k), hi: hi.subarray(r * k, (r + 1) * k), size: 0 }));
  const dc = new Float64Array(nb);
  const blocks = new Int32Array(nb);
  const dq = new Float64Array(JB);
  for (let qb = b0; qb < b1; qb++) {
    const q0 = start[qb];
    const q1 = start[qb + 1];
    const rows = q1 - q0;
    M.fill(0, 0, ypAt);
    packQuads(M, 0, sqqAt, Xp, d, sq, q0, q1);
    for (let p = q0; p < q1; p++) {
      let s = 0;
      for (let c = 0; c < d; c++) {
        const t = Xp[p * d + c] - cent[qb * d + c];
        s += t * t;
      }
      dq[p - q0] = Math.sqrt(s);
      heaps[p - q0].size = 0;
    }
    for (let b = 0; b < nb; b++) {
      let s = 0;
      for (let c = 0; c < d; c++) {
        const t = cent[qb * d + c] - cent[b * d + c];
        s += t * t;
      }
      dc[b] = b === qb ? -1 : Math.sqrt(s);
      blocks[b] = b;
    }
    blocks.sort((u, v) => dc[u] - dc[v] || u - v);
    let pairs = 0;
    for (let t = 0; t < nb; t++) {
      const db = blocks[t];
      const base = dc[db] - radiusScale * rad[db];
      const j0 = start[db];
      const j1 = start[db + 1];
      let packed = false;
      for (let r0 = 0; r0 < rows; r0 += 4) {
        const m = Math.min(4, rows - r0);
        let skip = db !== qb;
        for (let r = r0; skip && r < r0 + m; r++) {
          const h = heaps[r];
          const lb = base - dq[r];
          if (!(h.size === k && lb > 0 && lb * lb > h.hd[0] + 1e-8 * (sq[q0 + r] + sqmax[db]))) skip = false;
        }
        if (skip) continue;
        if (!packed) {
          M.fill(0, ypAt, outAt);
          packQuads(M, ypAt, sqyAt, Xp, d, sq, j0, j1);
          packed = true;
        }
        simd.dist(r0 * d * 8, ypAt * 8, Math.ceil((j1 - j0) / 4), d, outAt * 8, (sqqAt + r0) * 8, sqyAt * 8);
        pairs += m * (j1 - j0);
        for (let r = 0; r < m; r++) scan(M, outAt + r * JB - j0, j0, j1, q0 + r0 + r, heaps[r0 + r], k, perm);
      }
    }
    job.pairs[qb] = pairs;
    for (let r = 0; r < rows; r++)
      finishRow(job.X, d, perm[q0 + r], heaps[r], perm[q0 + r] * k, job.indices, job.dist2);
  }
}

/** The whole search on this thread. */
export function knnPruned(X: Float64Array | Float32Array, n: number, d: number, k: number, radiusScale = 1): KnnResult
  & { pairsFraction: number }
{
  const job = pruneJob(X, n, d, k);
  job.radiusScale = radiusScale;
  prunedBlocks(job, 0, job.nb);
  return { k, indices: job.indices, dist2: job.dist2, pairsFraction: pairsFraction(job) };
}

/** Candidate pairs computed over the n² of a full search. */
export function pairsFraction(job: PruneJob): number {
  let s = 0;
  for (let b = 0; b < job.nb; b++) s += job.pairs[b];
  return s / (job.n * job.n);
}
