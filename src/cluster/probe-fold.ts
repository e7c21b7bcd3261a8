/**
 * One fold of the probe's cross-validation as the probe sees it (src/cluster/probecv.ts): each
 * feature block reduced to its top principal components of the training rows (dense, sparse or
 * through the Gram matrix), the test rows projected on them, the reductions of keyed blocks kept
 * and reused in this thread, then the blocks concatenated and standardized with the training
 * rows' mean and standard deviation.
 */
import { mulXBRows, pca, pcaProject, sketchOmega } from './pca.js';
import { gramPcaProject } from './pca-gram.js';
import { csrProject, csrRows, pcaCsr } from './pca-sparse.js';

/** A feature matrix [n, d] row-major. */
export interface Block {
  X: Float64Array | Float32Array;
  d: number;
  /**
   * A name unique to this matrix within the process (blockKey): its in-fold PCA is then kept
   * (reducedParts) and reused by every probe that reduces it on the same training rows with the
   * same seed and components, on whichever thread meets it again. Absent: computed every time.
   */
  key?: string;
  /**
   * X Xᵀ [n, n] of the same rows (at least its upper triangle j ≥ i, as gramRows writes it): a
   * dense block's randomized in-fold PCA then runs on the training rows' double-centred Gram
   * matrix (gramPcaProject, the same components up to rounding) when the training rows are
   * fewer than its dimension.
   */
  gram?: Float64Array;
  /** `gram` has both triangles filled (ClusterPool.repeatedCv shares it so): no thread makes its own symmetric copy. */
  gramFull?: boolean;
}

/** One fold's training and test rows, reduced and standardized as the probe sees them. */
export interface PreparedFold {
  train: Int32Array;
  test: Int32Array;
  /** [train.length, d] and [test.length, d]. */
  Xtr: Float64Array;
  Xte: Float64Array;
  d: number;
}

/** Below this share of non-zero entries a block's PCA runs on its sparse rows (src/cluster/pca-sparse.ts). */
const SPARSE_DENSITY = 0.1;
const densities = new WeakMap<object, number>();

/** The share of non-zero entries of a block (computed once per matrix). */
function density(b: Block): number {
  let v = densities.get(b.X);
  if (v === undefined) {
    let nz = 0;
    for (let t = 0; t < b.X.length; t++) if (b.X[t] !== 0) nz++;
    v = nz / Math.max(b.X.length, 1);
    densities.set(b.X, v);
  }
  return v;
}

/** The rows `rows` of X [n, d], as a new [rows.length, d] matrix. */
export function rowsOf(X: Float64Array | Float32Array, d: number, rows: Int32Array): Float64Array {
  const out = new Float64Array(rows.length * d);
  rows.forEach((r, i) => {
    for (let j = 0; j < d; j++) out[i * d + j] = X[r * d + j];
  });
  return out;
}

/** One block of one split, reduced by the training rows' PCA: [train, d] and [test, d], before standardization. */
interface ReducedPart {
  tr: Float64Array;
  te: Float64Array;
  d: number;
}

/** A block reduced to its top k components of the training rows, the test rows projected on them. */
function reduceBlock(b: Block, train: Int32Array, test: Int32Array, k: number, seed: number): ReducedPart {
  if (b.d > 256 && k + 10 < b.d && density(b) < SPARSE_DENSITY) {
    // a sparse block (token counts): the same randomized PCA on the sparse rows
    const A = csrRows(b.X, b.d, train);
    const p = pcaCsr(A, k, seed);
    return { tr: csrProject(A, p), te: csrProject(csrRows(b.X, b.d, test), p), d: p.k };
  }
  // randomized unless the sketch would span the space: the exact route's Jacobi sweeps on a
  // d × d covariance cost O(d³) per fold, far more than the sketch for d near 256
  const randomized = k + 10 < Math.min(b.d, train.length);
  if (randomized && b.gram && train.length < b.d) return gramReduce(b, b.gram, train, test, k, seed);
  const tr = rowsOf(b.X, b.d, train);
  const te = rowsOf(b.X, b.d, test);
  const p = pca(tr, train.length, b.d, k, { seed, method: randomized ? 'randomized' : 'exact' });
  return { tr: pcaProject(p, tr, train.length, b.d), te: pcaProject(p, te, test.length, b.d), d: p.k };
}

/**
 * Whether a block's in-fold PCA would take the Gram route (reduceBlock) if it had its Gram
 * matrix: dense, unkeyed (a keyed block's reductions are shared with probes that may not have
 * one), a randomized PCA, and fewer rows than dimensions, so that the [n, n] Gram matrix is
 * smaller than the block itself and each fold's products cost m² l instead of 2 m d l.
 */
export function gramPays(b: Block, n: number, k: number): boolean {
  if (b.key !== undefined || b.gram || !(k > 0) || n >= b.d || k + 10 >= Math.min(b.d, n)) return false;
  return !(b.d > 256 && k + 10 < b.d && density(b) < SPARSE_DENSITY);
}

/** X Ω of every row of a block for the last sketch seed it was reduced with (the folds of one repeat share it). */
const sketched = new WeakMap<object, { seed: number; l: number; XO: Float64Array }>();

/**
 * reduceBlock through the Gram matrix (gramPcaProject): X Ω is computed once per block and
 * seed for all its rows (each fold's training rows take theirs), the rest from the Gram matrix.
 */
function gramReduce(b: Block, gram: Float64Array, train: Int32Array, test: Int32Array, k: number,
  seed: number): ReducedPart
{
  const n = b.X.length / b.d;
  const l = k + 10;
  let s = sketched.get(b.X);
  if (!s || s.seed !== seed || s.l !== l) {
    const XO = new Float64Array(n * l);
    mulXBRows(b.X, b.d, sketchOmega(b.d, l, seed), l, XO, 0, n);
    s = { seed, l, XO };
    sketched.set(b.X, s);
  }
  const r = gramPcaProject(gram, n, s.XO, l, train, test, k, 2, b.gramFull === true);
  return { tr: r.tr, te: r.te, d: r.k };
}

/** Kept reductions of keyed blocks in this thread, oldest first (Map order), and their size. */
const kept = new Map<string, { train: Int32Array; test: Int32Array; part: ReducedPart }>();
let keptBytes = 0;
/** The most this thread keeps (the oldest go first): a swap analysis needs its word features' and one point's. */
const KEPT_BYTES = 256 * 2 ** 20;

const sameRows = (a: Int32Array, b: Int32Array) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * reduceBlock of a keyed block, computed once per (key, d, k, seed, rows) in this thread: the
 * folds of every probe on one labelling and fold seed are the same rows, so the probes that share
 * a block (a state's probe and its incremental probe with the words; the words in every
 * incremental probe) share its reductions. The parts are never written to after (prepareFold
 * copies them), so sharing them changes no number.
 */
function reducedParts(b: Block, key: string, train: Int32Array, test: Int32Array, k: number,
  seed: number): ReducedPart
{
  let h = 0x811c9dc5;
  for (let i = 0; i < train.length; i++) h = Math.imul(h ^ train[i], 0x01000193) >>> 0;
  const id = `${key}\u0000${b.d}\u0000${k}\u0000${seed}\u0000${train.length}\u0000${test.length}\u0000${h}`;
  const hit = kept.get(id);
  if (hit && sameRows(hit.train, train) && sameRows(hit.test, test)) {
    kept.delete(id);
    kept.set(id, hit);
    return hit.part;
  }
  const part = reduceBlock(b, train, test, k, seed);
  if (hit) forget(id);
  kept.set(id, { train: Int32Array.from(train), test: Int32Array.from(test), part });
  keptBytes += bytesOf(part, train, test);
  for (const old of kept.keys()) {
    if (keptBytes <= KEPT_BYTES || old === id) break;
    forget(old);
  }
  return part;
}

const bytesOf = (p: ReducedPart, train: Int32Array, test: Int32Array) =>
  8 * (p.tr.length + p.te.length) + 4 * (train.length + test.length);

function forget(id: string): void {
  const e = kept.get(id);
  if (!e) return;
  kept.delete(id);
  keptBytes -= bytesOf(e.part, e.train, e.test);
}

/** A key for Block.key unique to one matrix of this process (prefix: what it is, for reading). */
let keys = 0;
export function blockKey(prefix: string): string {
  return `${prefix}#${++keys}`;
}

/**
 * The training and test matrices of one split: each block reduced by a PCA of the training rows
 * (when `k` is below its dimension and the training size), concatenated, standardized with the
 * training rows' mean and standard deviation (a constant column keeps sd 1).
 */
export function prepareFold(blocks: Block[], train: Int32Array, test: Int32Array, k: number,
  seed: number): PreparedFold
{
  const parts: ReducedPart[] = [];
  for (const b of blocks) {
    const reduce = k > 0 && k < b.d && k < train.length;
    if (!reduce) parts.push({ tr: rowsOf(b.X, b.d, train), te: rowsOf(b.X, b.d, test), d: b.d });
    else
      parts.push(
        b.key === undefined ? reduceBlock(b, train, test, k, seed) : reducedParts(b, b.key, train, test, k, seed),
      );
  }
  const d = parts.reduce((a, p) => a + p.d, 0);
  const glue = (m: number, pick: (p: (typeof parts)[number]) => Float64Array) => {
    const out = new Float64Array(m * d);
    let off = 0;
    for (const p of parts) {
      const M = pick(p);
      for (let i = 0; i < m; i++) for (let j = 0; j < p.d; j++) out[i * d + off + j] = M[i * p.d + j];
      off += p.d;
    }
    return out;
  };
  const Xtr = glue(train.length, (p) => p.tr);
  const Xte = glue(test.length, (p) => p.te);
  standardize(Xtr, train.length, d, Xte, test.length);
  return { train, test, Xtr, Xte, d };
}

/** Standardize A [n, d] in place by its own column mean and sd (population), and B [m, d] by the same. */
export function standardize(A: Float64Array, n: number, d: number, B?: Float64Array, m = 0): void {
  const mean = new Float64Array(d);
  const sd = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) mean[j] += A[i * d + j];
  for (let j = 0; j < d; j++) mean[j] /= Math.max(n, 1);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) sd[j] += (A[i * d + j] - mean[j]) ** 2;
  for (let j = 0; j < d; j++) sd[j] = Math.sqrt(sd[j] / Math.max(n, 1)) || 1;
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) A[i * d + j] = (A[i * d + j] - mean[j]) / sd[j];
  if (B) { for (let i = 0; i < m; i++) for (let j = 0; j < d; j++) B[i * d + j] = (B[i * d + j] - mean[j]) / sd[j]; }
}
