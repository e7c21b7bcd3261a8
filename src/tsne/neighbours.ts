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
 * At present never. On 100,000 points in 50 dimensions (bench/tsne-scaling.py's data, 2026-12-04)
 * the search with reverse lists found 0.936 of the exact neighbours in 87 CPU-s, where the exact
 * search takes 24, and the map kept 0.0695 of each point's 10 nearest against 0.0755 from the
 * exact search (openTSNE 0.0735): neither faster nor within 0.005. The exact search grows as N²,
 * so the approximate one should be the cheaper from about 400,000 points of that data, but at
 * 1,000,000 its 5 rounds ended unconverged (1.7% of the entries still changing) at a recall of
 * 0.795, so no size is known where it is both; `--neighbours approximate` is the user's choice
 * (bench/RESULTS.md, "Approximate neighbours with reverse lists").
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
export async function nearestNeighbours(X: Float64Array | Float32Array, n: number, d: number, k: number,
  o: NeighbourOptions): Promise<{ nn: KnnResult; recall: { recall: number; rows: number } | null }>
{
  const { pool, onRows } = o;
  if (o.search === 'approximate') {
    // the forest's rows as neighbour progress; the forest and each refinement round as stages
    const ao = {
      seed: o.seed,
      onProgress: (stage: string, done: number, total: number) => {
        if (stage === 'forest rows') onRows?.(done, total);
        else if (done === total) o.onStage?.(`neighbours: ${stage} done`);
      },
    };
    const nn = await (pool ? pool.knnApprox(X, n, d, k, ao) : knnApprox(X, n, d, k, ao));
    o.onStage?.('neighbour recall on 200 sampled rows');
    return { nn, recall: estimateRecall(X, n, d, nn, 200, o.seed) };
  }
  if (pool) return { nn: await pool.knn(X, n, d, k, onRows && ((done) => onRows(done, n))), recall: null };
  // wide data through the float32 screen, narrow data with block bounds (identical results), else the float64 pass
  const nn = (await knnScreened(X, n, d, k, { threads: 1 })) ??
    (prunable(X, n, d, k) ? knnPruned(X, n, d, k) : knn(X, n, d, k));
  onRows?.(n, n);
  return { nn, recall: null };
}
