/**
 * The kNN stage of t-SNE: each point's k nearest neighbours, the graph the affinities
 * (src/tsne/affinity.ts) calibrate. Exact by default: wide data through the float32 screen
 * (knn-screen.ts), narrow data with block bounds (knn-prune.ts), else the float64 pass (knn.ts),
 * all with identical lists; or the approximate search (knn-approx.ts: random-projection forest and
 * refinement) with its recall estimated on sampled rows. With a pool the rows go to its threads
 * (the same lists).
 */
import { knn, type KnnResult } from './knn.js';
import { knnScreened } from './knn-screen.js';
import { knnPruned, prunable } from './knn-prune.js';
import { estimateRecall, knnApprox } from './knn-approx.js';
import { LobesError } from '../util/errors.js';
import type { TsnePool } from './pool.js';

export type { KnnResult } from './knn.js';

/** The neighbour search asked for: 'exact', 'approximate' (forest + refinement) or 'auto'. */
export type NeighbourSearch = 'exact' | 'approximate' | 'auto';

/**
 * From this many points, neighbours 'auto' would take the approximate search (src/tsne/knn-approx.ts).
 * At present never: on 100,000 points in 50 dimensions it found 0.85 of the exact neighbours, and
 * the map kept 0.051 of each point's 10 nearest against 0.067 from the exact search (openTSNE
 * 0.070), so 'auto' stays exact and `--neighbours approximate` is the user's choice
 * (bench/RESULTS.md, "t-SNE scaling").
 */
export const APPROX_MIN_POINTS = Number.POSITIVE_INFINITY;

/** The neighbour search for n points: 'auto' is approximate from APPROX_MIN_POINTS. */
export function neighbourSearch(v: NeighbourSearch | undefined, n: number): 'exact' | 'approximate' {
  if (v === undefined || v === 'auto') return n >= APPROX_MIN_POINTS ? 'approximate' : 'exact';
  if (v === 'exact' || v === 'approximate') return v;
  throw new LobesError(`neighbours must be exact, approximate or auto, got ${String(v)}`);
}

export interface NeighbourOptions {
  /** The search in use (neighbourSearch resolves 'auto'). */
  search: 'exact' | 'approximate';
  /** Seed of the approximate search's forest and of the rows its recall is estimated on. */
  seed: number;
  /** Worker threads to split the rows over (null: this thread only). */
  pool: TsnePool | null;
  /** Called as rows finish (done of n). */
  onRows?: (done: number, n: number) => void;
  /** Called as a named stage starts. */
  onStage?: (stage: string) => void;
}

/** The k nearest neighbours of every row of X [n, d], and the approximate search's estimated recall (null when exact). */
export async function nearestNeighbours(X: Float64Array | Float32Array, n: number, d: number, k: number, o: NeighbourOptions): Promise<{ nn: KnnResult; recall: { recall: number; rows: number } | null }> {
  const { pool, onRows } = o;
  if (o.search === 'approximate') {
    const ao = { seed: o.seed, onProgress: onRows && ((stage: string, done: number, total: number) => stage === 'forest rows' && onRows(done, total)) };
    const nn = await (pool ? pool.knnApprox(X, n, d, k, ao) : knnApprox(X, n, d, k, ao));
    o.onStage?.('neighbour recall on 200 sampled rows');
    return { nn, recall: estimateRecall(X, n, d, nn, 200, o.seed) };
  }
  if (pool) return { nn: await pool.knn(X, n, d, k, onRows && ((done) => onRows(done, n))), recall: null };
  // wide data through the float32 screen, narrow data with block bounds (identical results), else the float64 pass
  const nn = (await knnScreened(X, n, d, k, { threads: 1 })) ?? (prunable(X, n, d, k) ? knnPruned(X, n, d, k) : knn(X, n, d, k));
  onRows?.(n, n);
  return { nn, recall: null };
}
