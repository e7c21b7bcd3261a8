/**
 * The t-SNE engine's options, in three layers:
 *  - `affinity`: what P is: the perplexity and the neighbour search that feeds it;
 *  - `optimizer`: how the map is fitted from P: iterations, exaggeration, step rule, momentum,
 *    the update rule, the start and its seed, and how the repulsion is approximated (theta, method);
 *  - `execution`: how the work is spread and watched, none of which changes a number: worker
 *    threads, the size from which threads start, an existing pool, the size up to which the KL is
 *    exact, progress of the neighbour search.
 * `optimizer.seed` seeds the random start, the PCA sketch of the 'pca' start and the
 * approximate neighbour search: one seed, one map.
 *
 * The flat form (`{ perplexity, iterations, threads, … }`) is refused with the key's new place.
 */
import { LobesError } from '../util/errors.js';
import { checkPerplexity } from './affinity.js';
import { neighbourSearch, type NeighbourSearch } from './neighbours.js';
import type { TsnePool } from './pool.js';

/** How the repulsive sums are computed: 'bh' (Barnes–Hut), 'fft' (FFT interpolation), 'auto' ('mixed' from MIXED_MIN_POINTS, 'bh' below). */
export type TsneMethod = 'auto' | 'bh' | 'fft';

/**
 * 'auto' is 'mixed' from this many points, Barnes–Hut below. The smallest grid (L = 324) passes
 * fftIteration from 8,755 points, but on two threads the FFT's iterations did not pay at 20,000
 * points (bench/tsne-scaling.py's data, 2 threads, one sitting: 'mixed' 21.6 and 26.1 s, Barnes–Hut
 * 19.2 and 20.4 s, the same CPU seconds; recall@10 of 5,000 points 0.1539 against 0.1554), while
 * at 50,000 they did (43.8 s against 57.3 s, recall 0.1094 against 0.1073; bench/RESULTS.md).
 */
export const MIXED_MIN_POINTS = 30000;

/** The first two principal components' scores [n*2] (row-major) of X [n, d], seeded. */
export type PcaScores = (X: Float64Array | Float32Array, n: number, d: number, seed: number) => Float64Array;

/** What P is (src/tsne/affinity.ts, src/tsne/neighbours.ts). */
export interface AffinityOptions {
  /** Effective number of neighbours (default 30); each point gets min(n − 1, ⌊3 · perplexity⌋ + 1) neighbours. */
  perplexity?: number;
  /** Neighbour search: 'exact', 'approximate' (forest + refinement) or 'auto' (default: approximate from APPROX_MIN_POINTS, at present never). */
  neighbours?: NeighbourSearch;
}

/** How the map is fitted (src/tsne/tsne.ts, src/tsne/step.ts). */
export interface OptimizerOptions {
  /** Total iterations including early exaggeration (default 1000). */
  iterations?: number;
  /** Factor on P during the first `exaggerationIterations` (default 12). */
  earlyExaggeration?: number;
  /** Iterations of early exaggeration (default 250). */
  exaggerationIterations?: number;
  /**
   * Step size (default 'auto'):
   *  - 'auto': max(N / earlyExaggeration / 4, 50) in both phases (scikit-learn's rule);
   *  - 'per-phase': max(N / α / 4, 50) with α the exaggeration in effect, so N / 4 after the early
   *    phase, and each point's update clipped to norm 5 (openTSNE's defaults; the / 4 because this
   *    gradient carries scikit-learn's factor 4 and openTSNE's does not);
   *  - a number: that step in both phases.
   */
  learningRate?: number | 'auto' | 'per-phase';
  /** Largest norm of one point's update per iteration (default 5 under 'per-phase', else none). */
  maxStepNorm?: number;
  /** Momentum during / after early exaggeration (defaults 0.5 / 0.8; 0.8 / 0.8 with rule 'openTSNE'). */
  momentum?: [number, number];
  /**
   * The update rule. 'scikit-learn' (default): momentum 0.5 then 0.8, gains floored at 0.01, a fresh
   * update and gains when the exaggeration ends; 'openTSNE': momentum 0.8 in both phases (unless
   * `momentum` is given), gains ×0.8 + 0.01 with sign changes counted as np.sign does, update and
   * gains kept.
   */
  rule?: 'scikit-learn' | 'openTSNE';
  /** 'pca' (default): first two principal components (from `pcaScores`) scaled to std 1e-4; 'random': N(0, 1e-4²); or given [n*2]. */
  init?: 'pca' | 'random' | Float64Array;
  /**
   * The scores of the first two principal components [n*2] for init 'pca'. src/tsne imports only
   * src/util and src/onnx, and the PCA is the cluster command's (src/cluster/pca.ts): src/cluster's
   * Tsne (src/cluster/tsne-pca.ts, the one src/index.ts exports) hands its seeded PCA in here.
   */
  pcaScores?: PcaScores;
  /** Seed of the random start, the PCA sketch and the approximate neighbour search (default 0). */
  seed?: number;
  /** Barnes–Hut opening angle (default 0.5); 0 runs the exact O(N²) gradient (whatever the method). */
  theta?: number;
  /** Repulsion: 'auto' (default: 'mixed' from MIXED_MIN_POINTS points, Barnes–Hut below), 'bh' or 'fft'. */
  method?: TsneMethod;
}

/** How the work runs; nothing here changes a number of the map. */
export interface ExecutionOptions {
  /** Worker threads for kNN, calibration, gradient and step (default 1 = this thread only). */
  threads?: number;
  /** Start worker threads only from this many points (default 2000; below, threads cost more than they save). */
  workerMinPoints?: number;
  /** Use these worker threads (the caller closes them) instead of starting new ones. */
  pool?: TsnePool;
  /** Compute KL exactly (O(N²)) when N is at most this (default 5000); above, Z from the repulsion in use. */
  exactKlLimit?: number;
  /** Called as the neighbour search finishes rows (done of n); the exact one is O(N²·d). */
  onNeighbours?: (done: number, n: number) => void;
}

export interface TsneOptions {
  affinity?: AffinityOptions;
  optimizer?: OptimizerOptions;
  execution?: ExecutionOptions;
}

/** The options in effect, resolved for n points (Tsne.opts). */
export interface TsneSettings {
  perplexity: number;
  theta: number;
  /** The repulsion in use: 'exact' when theta is 0; 'mixed' is FFT or Barnes–Hut by iteration (see fftIteration). */
  method: 'bh' | 'fft' | 'mixed' | 'exact';
  iterations: number;
  earlyExaggeration: number;
  exaggerationIterations: number;
  /** Step during early exaggeration. */
  learningRate: number;
  /** Step after it (the same unless the rule is 'per-phase'). */
  learningRateAfter: number;
  /** Largest norm of one point's update (Infinity: no clipping). */
  maxStepNorm: number;
  momentum: [number, number];
  rule: 'scikit-learn' | 'openTSNE';
  seed: number;
  threads: number;
  exactKlLimit: number;
  /** The neighbour search used. */
  neighbours: 'exact' | 'approximate';
}

/** Where each key of the flat form went (for the refusal's message). */
const MOVED: Record<string, string> = {
  perplexity: 'affinity.perplexity',
  neighbours: 'affinity.neighbours',
  iterations: 'optimizer.iterations',
  earlyExaggeration: 'optimizer.earlyExaggeration',
  exaggerationIterations: 'optimizer.exaggerationIterations',
  learningRate: 'optimizer.learningRate',
  maxStepNorm: 'optimizer.maxStepNorm',
  momentum: 'optimizer.momentum',
  optimizer: 'optimizer.rule',
  init: 'optimizer.init',
  seed: 'optimizer.seed',
  theta: 'optimizer.theta',
  method: 'optimizer.method',
  threads: 'execution.threads',
  exactKlLimit: 'execution.exactKlLimit',
  poolMinPoints: 'execution.workerMinPoints',
  pool: 'execution.pool',
  onNeighbours: 'execution.onNeighbours',
};

/** Check the options and fill in the defaults for n points. */
export function resolveOptions(options: TsneOptions, n: number): TsneSettings {
  for (const key of Object.keys(options)) {
    if (key === 'affinity' || key === 'optimizer' || key === 'execution') {
      if (key !== 'optimizer' || typeof options.optimizer === 'object') continue;
    }
    throw new LobesError(
      MOVED[key]
        ? `t-SNE option ${key} is now ${MOVED[key]} (TsneOptions has affinity, optimizer and execution)`
        : `unknown t-SNE option ${key} (TsneOptions has affinity, optimizer and execution)`,
    );
  }
  const { affinity = {}, optimizer = {}, execution = {} } = options;
  const perplexity = affinity.perplexity ?? 30;
  checkPerplexity(perplexity, n);
  const earlyExaggeration = optimizer.earlyExaggeration ?? 12;
  const lr = optimizer.learningRate ?? 'auto';
  const theta = optimizer.theta ?? 0.5;
  const method = optimizer.method ?? 'auto';
  if (lr !== 'auto' && lr !== 'per-phase' && typeof lr !== 'number')
    throw new LobesError(`learning rate must be auto, per-phase or a number, got ${String(lr)}`);
  const lr0 = typeof lr === 'number' ? lr : Math.max(n / earlyExaggeration / 4, 50);
  if (method !== 'auto' && method !== 'bh' && method !== 'fft')
    throw new LobesError(`t-SNE method must be auto, bh or fft, got ${String(method)}`);
  const opts: TsneSettings = {
    perplexity,
    theta,
    method: theta === 0 ? 'exact' : method === 'auto' ? (n >= MIXED_MIN_POINTS ? 'mixed' : 'bh') : method,
    iterations: optimizer.iterations ?? 1000,
    earlyExaggeration,
    exaggerationIterations: optimizer.exaggerationIterations ?? 250,
    learningRate: lr0,
    learningRateAfter: lr === 'per-phase' ? Math.max(n / 4, 50) : lr0,
    maxStepNorm: optimizer.maxStepNorm ?? (lr === 'per-phase' ? 5 : Number.POSITIVE_INFINITY),
    momentum: optimizer.momentum ?? (optimizer.rule === 'openTSNE' ? [0.8, 0.8] : [0.5, 0.8]),
    rule: optimizer.rule ?? 'scikit-learn',
    seed: optimizer.seed ?? 0,
    threads: Math.max(1, execution.threads ?? 1),
    exactKlLimit: execution.exactKlLimit ?? 5000,
    neighbours: neighbourSearch(affinity.neighbours, n),
  };
  if (!(opts.theta >= 0 && opts.theta <= 1)) throw new LobesError(`theta must be in [0, 1], got ${opts.theta}`);
  if (opts.rule !== 'scikit-learn' && opts.rule !== 'openTSNE')
    throw new LobesError(`optimizer rule must be scikit-learn or openTSNE, got ${String(opts.rule)}`);
  if (!Number.isInteger(opts.iterations) || opts.iterations < 0)
    throw new LobesError(`iterations must be a non-negative integer, got ${opts.iterations}`);
  if (!(opts.maxStepNorm > 0)) throw new LobesError(`the largest step must be positive, got ${opts.maxStepNorm}`);
  if (!(opts.learningRate > 0 && opts.learningRateAfter > 0))
    throw new LobesError(`learning rate must be positive, got ${opts.learningRate}`);
  return opts;
}
