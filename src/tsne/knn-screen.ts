/**
 * The exact kNN of src/tsne/knn.ts, fast for wide data: a float32 screen, then the float64
 * values of the few rows that can still be neighbours. The result is identical to knnRows' to
 * the bit (same neighbours, same order, same distances), whatever the thread count.
 *
 * knnRows selects, for each row i, the k smallest pairs (d̃(i, j), j) with
 *   d̃(i, j) = max(fl(sq_i + sq_j) − 2 · dot64(i, j), 0)
 * (sq: float64 squared norms summed in column order; dot64: the float64 dot product summed in
 * column order), then re-checks those k with the direct difference formula. Here:
 *
 * 1. Screen. Z = float32(X − μ) (μ: the column means; any shift leaves the distances as they
 *    are), q_i = Σ_c Z_ic² in float64, G = Z Zᵀ in float32 by ONNX Runtime's Gemm (any summation
 *    order, FMA or not), and s(i, j) = max(fl(q_i + q_j) − 2 G_ij, 0).
 * 2. Bound. With u = 2⁻²⁴, v = 2⁻⁵³ and γ_m = m·u / (1 − m·u):
 *      |s(i, j) − d̃(i, j)| ≤ E(i, j) = 2 · [γ_{d+12} · (q_i + q_j) + (2.01·d·v/(1 − d·v) + 4v) · (sq_i + sq_j) + (d + 1)·2⁻¹⁰⁰]
 *    Derivation (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1): against the
 *    exact distance δ = ‖x_i − x_j‖²,
 *    - the float32 product of any summation tree with at most d roundings per term errs by at
 *      most γ_d Σ_c |Z_ic Z_jc| ≤ γ_d (Σ Z_i² + Σ Z_j²) / 2, q by γ^(v)_d, the float64 sum and
 *      difference by 3v (q_i + q_j): |s − ‖Z_i − Z_j‖²| ≤ (γ_d + γ^(v)_d + 3v)(q_i + q_j)(1 + v);
 *    - rounding X − μ to float64 then float32 moves each entry by a relative w ≤ u(1 + 2⁻²⁸),
 *      so with e = (Z_i − Z_j) − (x'_i − x'_j), |‖Z_i − Z_j‖² − δ| ≤ 2‖x'_i − x'_j‖‖e‖ + ‖e‖²
 *      ≤ (2w + w²)(‖x'_i‖ + ‖x'_j‖)² ≤ 4.01 u (q_i + q_j);
 *    - γ_d + 4.01u + the second-order terms ≤ γ_{d+12};
 *    - knnRows' own value: sq_i errs by γ^(v)_d Σx_i², dot64 by γ^(v)_d Σ|x_i x_j|, the sum and
 *      difference by 3v(sq_i + sq_j), so |d̃ − δ| ≤ (2.01 γ^(v)_d + 4v)(sq_i + sq_j);
 *    - (d + 1)·2⁻¹⁰⁰ covers float32 underflow (entries below 2⁻¹²⁶ lose relative accuracy),
 *      which is why the screen is only used when every |x'| ≤ 2⁴⁰ (no overflow either);
 *    - max(·, 0) moves no two values further apart; the factor 2 is spare room for the
 *      float64 rounding of E and of the comparisons below (relative 10⁻¹⁶ against it).
 * 3. Candidates. For row i, τ = the k-th smallest s + E over j ≠ i. At least k rows have
 *    d̃ ≤ s + E ≤ τ, so every row of knnRows' selection has d̃ ≤ τ and hence s − E ≤ τ: the
 *    rows with s − E ≤ τ contain the selection.
 * 4. Exact part. d̃ of every candidate with knnRows' operations in its order (bit-identical
 *    values), the k smallest (d̃, j) pairs by its heap, and its re-check Σ(x_i − x_j)² and sort
 *    (as knnRows' finishRow).
 *
 * At 2,000 × 4,096 with unit-scale data E is a few units against distances of thousands, so a
 * row keeps about k + 10 candidates and the float64 work drops from n to about k rows per row.
 *
 * Costs: when the whole product fits one block (n² ≤ 8M), only its upper block triangle is
 * computed and the rest mirrored (upperProduct; E holds for a value from either side). The
 * float64 sums of step 4 (dot products of the uncertain candidates, Σ(x_i − x_j)² of the
 * neighbours) run in a WebAssembly SIMD kernel (src/tsne/knn-simd.ts, two rows per vector,
 * each lane one row's sum in column order: the same values as the JavaScript loops, which run
 * when SIMD is unavailable) on one copy of X in a shared WebAssembly memory. A pair that is
 * in both rows' neighbour lists gets its Σ(x_i − x_j)² once: the row finished second reads it
 * from the first's output (equal to the bit, the differences only change sign).
 */
import type * as Ort from 'onnxruntime-node';
import { DataType, encodeModel, makeGraph, makeModel, makeNode, makeValueInfo } from '../onnx/index.js';
import { orderRow, push, squaredNorms, type Heap, type KnnResult } from './knn.js';
import { claimSlot, pairSpace, pairSums, type PairSlot, type PairSpace } from './knn-simd.js';

/** Narrower data goes through knnRows as it is (its float64 pass is cheap there). */
export const SCREEN_MIN_D = 64;
/** The largest |x − μ| the bound above is stated for. */
const MAX_ABS = 2 ** 40;
const U = 2 ** -24;
const V = 2 ** -53;

/** The two coefficients and the constant of E(i, j) (without the spare factor 2). */
export function screenMargin(d: number): { a: number; b: number; c: number } {
  const m = (d + 12) * U;
  const g64 = (d * V) / (1 - d * V);
  return { a: m / (1 - m), b: 2.01 * g64 + 4 * V, c: (d + 1) * 2 ** -100 };
}

export interface ScreenOptions {
  /** ONNX Runtime's intra-op threads for the float32 product (the result does not depend on it). */
  threads: number;
  /** Rows finished so far (progress). */
  onRows?: (done: number) => void;
  /** Multiplies E (tests only: a value below 1 plants a too-small margin). */
  marginScale?: number;
  /**
   * Runs screenRows(job, ·, ·) over the rows [r0, r1) of a block, split across threads (the
   * pool's); without it this thread does them. job's arrays are on shared memory then.
   */
  split?: (job: ScreenJob, r0: number, r1: number) => Promise<void>;
  /** Candidates per row kept, summed (filled in when given: how tight the screen was). */
  stats?: { candidates: number };
}

let session: Promise<Ort.InferenceSession> | null = null;
let sessionThreads = 0;

/** A one-node graph g = a · bᵀ (float32 Gemm), made once per thread count. */
async function gemmSession(threads: number): Promise<Ort.InferenceSession> {
  if (!session || sessionThreads !== threads) {
    const ort = await import('onnxruntime-node');
    const graph = makeGraph(
      'knn-screen',
      [makeNode('Gemm', ['a', 'b'], ['g'], { transB: 1 })],
      [makeValueInfo('a', DataType.FLOAT, ['m', 'd']), makeValueInfo('b', DataType.FLOAT, ['n', 'd'])],
      [makeValueInfo('g', DataType.FLOAT, ['m', 'n'])],
      [],
    );
    const bytes = encodeModel(makeModel(graph, { opsets: { '': 17 } }));
    sessionThreads = threads;
    // no spinning: the exact part's worker threads run right after the product on the same cores
    session = ort.InferenceSession.create(bytes, { intraOpNumThreads: threads, interOpNumThreads: 1,
      logSeverityLevel: 3, extra: { session: { intra_op: { allow_spinning: '0' } } } });
  }
  return session;
}

/**
 * knnRows(X, n, d, k, 0, n, …) through the float32 screen, or null where the screen does not
 * apply (narrow data, k ≥ n, non-finite or huge values, ONNX Runtime unavailable): the caller
 * then runs knnRows.
 */
export async function knnScreened(X: Float64Array | Float32Array, n: number, d: number, k: number,
  opts: ScreenOptions): Promise<KnnResult | null>
{
  if (d < SCREEN_MIN_D || k < 1 || k >= n) return null;
  const mu = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let c = 0; c < d; c++) mu[c] += X[i * d + c];
  for (let c = 0; c < d; c++) mu[c] /= n;
  const Z = new Float32Array(n * d);
  let single = true;
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < d; c++) {
      const v = X[i * d + c];
      const x = v - mu[c];
      if (!(Math.abs(x) <= MAX_ABS)) return null; // NaN, ±Infinity or out of the bound's range
      Z[i * d + c] = x;
      if (single && Math.fround(v) !== v) single = false;
    }
  }
  // float64 data whose values are all float32 values (activations read from float32 files):
  // the exact part reads them from a float32 copy, the same numbers in half the memory traffic
  // X once in a shared WebAssembly memory for the float64 sums' SIMD kernel (src/tsne/knn-simd.ts),
  // one work slot per thread; without the kernel, the same sums in JavaScript
  const f32 = single || X instanceof Float32Array;
  const ps = pairSpace(X, n, d, Math.max(1, opts.threads), f32);
  let Xr = ps ? ps.X : X;
  if (!ps && single && !(X instanceof Float32Array)) {
    Xr = new Float32Array(opts.split ? new SharedArrayBuffer(n * d * 4) : new ArrayBuffer(n * d * 4));
    Xr.set(X.subarray(0, n * d));
  } else if (!ps && opts.split && !(X.buffer instanceof SharedArrayBuffer)) {
    // the worker threads read X: a shared copy
    Xr = X instanceof Float32Array
      ? new Float32Array(new SharedArrayBuffer(n * d * 4))
      : new Float64Array(new SharedArrayBuffer(n * d * 8));
    Xr.set(X.subarray(0, n * d));
  }
  let sess: Ort.InferenceSession;
  let ort: typeof Ort;
  try {
    ort = await import('onnxruntime-node');
    sess = await gemmSession(Math.max(1, opts.threads));
  } catch {
    return null;
  }
  const sq = squaredNorms(X, n, d);
  const q = squaredNorms(Z, n, d);
  const indices = new Int32Array(new SharedArrayBuffer(n * k * 4));
  const dist2 = new Float64Array(new SharedArrayBuffer(n * k * 8));
  const finished = new Int32Array(new SharedArrayBuffer(n * 4));
  const B = new ort.Tensor('float32', Z, [n, d]);
  // query rows in blocks so the float32 product holds at most about 32 MB
  const M = Math.max(1, Math.min(n, Math.floor((8 << 20) / n)));
  let G: Float32Array | null = null;
  for (let r0 = 0; r0 < n; r0 += M) {
    const r1 = Math.min(n, r0 + M);
    if (r1 - r0 === n) G = await upperProduct(ort, sess, Z, n, d, !!opts.split);
    else {
      const A = new ort.Tensor('float32', Z.slice(r0 * d, r1 * d), [r1 - r0, d]);
      const out = (await sess.run({ a: A, b: B })).g!.data as Float32Array;
      if (!opts.split) G = out;
      else {
        G ??= new Float32Array(new SharedArrayBuffer(M * n * 4));
        G.set(out);
      }
    }
    const job: ScreenJob = { X: Xr, space: ps?.space ?? null, n, d, k, sq, q, G, r0, marginScale: opts.marginScale ?? 1,
      indices, dist2, finished, candidates: new Float64Array(new SharedArrayBuffer((r1 - r0) * 8)) };
    if (opts.split) await opts.split(job, r0, r1);
    else screenRows(job, r0, r1);
    if (opts.stats) { for (const v of job.candidates) opts.stats.candidates += v; }
    opts.onRows?.(r1);
  }
  return { k, indices, dist2 };
}

/** Rows per strip of upperProduct. */
const STRIP = 256;

/**
 * G = Z Zᵀ [n, n] (float32) for the one-block case: each strip of STRIP rows against the rows
 * from the strip on (the upper block triangle, about (1 + 1/strips)/2 of the full product), then
 * each strip's columns before it copied from the transposed blocks (G_ij = G_ji there). A value
 * from the other side is a float32 product of the same two rows with its own summation order,
 * which the bound E allows (it holds for any order), so the screen stays exact.
 */
async function upperProduct(ort: typeof Ort, sess: Ort.InferenceSession, Z: Float32Array, n: number, d: number,
  shared: boolean): Promise<Float32Array>
{
  const G = new Float32Array(shared ? new SharedArrayBuffer(n * n * 4) : new ArrayBuffer(n * n * 4));
  for (let a = 0; a < n; a += STRIP) {
    const b = Math.min(n, a + STRIP);
    const A = new ort.Tensor('float32', Z.subarray(a * d, b * d), [b - a, d]);
    const R = new ort.Tensor('float32', a === 0 ? Z : Z.subarray(a * d, n * d), [n - a, d]);
    const out = (await sess.run({ a: A, b: R })).g!.data as Float32Array;
    const w = n - a;
    for (let r = 0; r < b - a; r++) G.set(out.subarray(r * w, (r + 1) * w), (a + r) * n + a);
  }
  // the lower block triangle, in 64-column tiles so both sides stay in cache
  for (let a = STRIP; a < n; a += STRIP) {
    const b = Math.min(n, a + STRIP);
    for (let j0 = 0; j0 < a; j0 += 64) {
      const j1 = Math.min(a, j0 + 64);
      for (let i = a; i < b; i++) for (let j = j0; j < j1; j++) G[i * n + j] = G[j * n + i];
    }
  }
  return G;
}

/** One block of the screen's rows: the data, the block's float32 products and the outputs. */
export interface ScreenJob {
  X: Float64Array | Float32Array;
  /** Where X is in the SIMD kernel's shared memory (X is its view there); null: the JavaScript sums. */
  space: PairSpace | null;
  n: number;
  d: number;
  k: number;
  /** float64 squared norms of X (knnRows' values) and of Z. */
  sq: Float64Array;
  q: Float64Array;
  /** [rows of the block, n] float32 products Z_i · Z_j, row r0 first. */
  G: Float32Array;
  r0: number;
  marginScale: number;
  /** [n, k] outputs (absolute rows). */
  indices: Int32Array;
  dist2: Float64Array;
  /** [n] 1 once a row's outputs are written (Atomics; its distances are then reused by its mutual neighbours). */
  finished: Int32Array;
  /** Candidates kept per row of the block (statistics). */
  candidates: Float64Array;
}

/**
 * Rows [start, end) of a block (r0 ≤ start ≤ end ≤ r0 + its rows): candidates by the bound,
 * the exact selection among them, and knnRows' re-check and order. Each row depends only on
 * the data, so any split of the rows across threads gives the same result.
 */
export function screenRows(job: ScreenJob, start: number, end: number): void {
  const { n, k } = job;
  const lo = new Float64Array(n);
  const up = new Float64Array(n);
  const sorted = new Float64Array(n);
  const work = new Float64Array(n);
  const cand = new Int32Array(n);
  const need = new Int32Array(k);
  const heap: Heap = { hd: new Float64Array(k), hi: new Int32Array(k), size: 0 };
  const rest: Heap = { hd: new Float64Array(k), hi: new Int32Array(k), size: 0 };
  const slot = job.space ? claimSlot(job.space) : null;
  try {
    screenRowsWith(job, start, end, slot, lo, up, sorted, work, cand, need, heap, rest);
  } finally {
    slot?.release();
  }
}

function screenRowsWith(
  job: ScreenJob,
  start: number,
  end: number,
  slot: PairSlot | null,
  lo: Float64Array,
  up: Float64Array,
  sorted: Float64Array,
  work: Float64Array,
  cand: Int32Array,
  need: Int32Array,
  heap: Heap,
  rest: Heap,
): void {
  const { X, n, d, k, sq, q, G, r0, indices, dist2 } = job;
  const { a, b, c } = screenMargin(d);
  const scale = 2 * job.marginScale;
  for (let i = start; i < end; i++) {
    const go = (i - r0) * n;
    const qi = q[i];
    const si = sq[i];
    let m = 0;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const s = Math.max(qi + q[j] - 2 * G[go + j], 0);
      const e = scale * (a * (qi + q[j]) + b * (si + sq[j]) + c);
      lo[j] = s - e;
      up[j] = s + e;
      work[m++] = s + e;
    }
    const tau = kthSmallest(work, m, k - 1);
    let nc = 0;
    for (let j = 0; j < n; j++) if (j !== i && lo[j] <= tau) cand[nc++] = j;
    job.candidates[i - r0] = nc;
    nc = settle(cand, nc, lo, up, tau, k, sorted, heap);
    rest.size = 0;
    if (heap.size < k) exactCandidates(X, d, k - heap.size, i, sq, cand, nc, rest, work, slot);
    for (let t = 0; t < rest.size; t++) heap.hi[heap.size++] = rest.hi[t];
    {
      // a neighbour j whose row is finished and lists i: Σ(x_j − x_i)² there is this row's
      // Σ(x_i − x_j)² to the bit (the same differences up to sign, squared, summed in the same order)
      let m = 0;
      for (let t = 0; t < heap.size; t++) {
        const j = heap.hi[t];
        let v = -1;
        if (Atomics.load(job.finished, j) === 1) {
          for (let u = j * k; u < (j + 1) * k; u++)
            if (indices[u] === i) {
              v = dist2[u];
              break;
            }
        }
        if (v >= 0) heap.hd[t] = v;
        else {
          cand[m] = j;
          need[m++] = t;
        }
      }
      pairSums(slot, X, d, i, cand, m, 'diff', work);
      for (let u = 0; u < m; u++) heap.hd[need[u]] = work[u];
      orderRow(heap, i * k, indices, dist2);
    }
    Atomics.store(job.finished, i, 1);
  }
}

/**
 * Candidates that are in the selection whatever their d̃: j with s + E ≤ τ (so every row
 * outside the candidates comes after it) and fewer than k other candidates whose s − E is at
 * most j's s + E (only those can come before it). They go straight into the heap's index list
 * (the re-check recomputes every distance); the rest are moved to the front of cand and their
 * count returned. heap.size is the number settled.
 */
function settle(cand: Int32Array, nc: number, lo: Float64Array, up: Float64Array, tau: number, k: number,
  sorted: Float64Array, heap: Heap): number
{
  for (let t = 0; t < nc; t++) sorted[t] = lo[cand[t]];
  const view = sorted.subarray(0, nc).sort();
  let rest = 0;
  heap.size = 0;
  for (let t = 0; t < nc; t++) {
    const j = cand[t];
    const h = up[j];
    // count of candidates with lo ≤ h (j itself included)
    let a = 0;
    let b = nc;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (view[mid] <= h) a = mid + 1;
      else b = mid;
    }
    if (h <= tau && a - 1 < k) heap.hi[heap.size++] = j;
    else cand[rest++] = j;
  }
  return rest;
}

/**
 * d̃(i, j) of candidates cand[0..nc) exactly as knnRows computes it (one float64 sum per pair,
 * products in column order: `slot`'s SIMD kernel or its JavaScript twin, the same values),
 * offered to the heap. `dots` is scratch of at least nc values.
 */
function exactCandidates(X: Float64Array | Float32Array, d: number, k: number, i: number, sq: Float64Array,
  cand: Int32Array, nc: number, heap: Heap, dots: Float64Array, slot: PairSlot | null): void
{
  pairSums(slot, X, d, i, cand, nc, 'dot', dots);
  const sqi = sq[i];
  for (let t = 0; t < nc; t++) push(heap, k, Math.max(sqi + sq[cand[t]] - 2 * dots[t], 0), cand[t]);
}

/** The r-th smallest (0-based) of v[0..m) (reorders v). */
function kthSmallest(v: Float64Array, m: number, r: number): number {
  let l = 0;
  let h = m - 1;
  while (l < h) {
    const p = v[(l + h) >> 1];
    let i = l;
    let j = h;
    while (i <= j) {
      while (v[i] < p) i++;
      while (v[j] > p) j--;
      if (i <= j) {
        const t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        j--;
      }
    }
    if (r <= j) h = j;
    else if (r >= i) l = i;
    else return v[r];
  }
  return v[r];
}
