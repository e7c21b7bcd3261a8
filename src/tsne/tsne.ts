/**
 * t-SNE (van der Maaten & Hinton 2008) with Barnes–Hut gradients (van der Maaten 2014),
 * following scikit-learn's optimizer: early exaggeration for the first 250 iterations with
 * momentum 0.5, then momentum 0.8; per-coordinate gains (+0.2 when the gradient changes
 * sign against the update, ×0.8 otherwise, at least 0.01), reset when the exaggeration
 * ends; learning rate 'auto' = max(N / early_exaggeration / 4, 50); PCA initialisation
 * scaled to standard deviation 1e-4 on the first axis. `optimizer.rule: 'openTSNE'` follows
 * openTSNE's instead: momentum 0.8 throughout, gains ×0.8 + 0.01, state kept across the phases
 * (src/tsne/step.ts).
 *
 * Step-wise API:
 *   const t = await Tsne.create(X, n, d, opts);   // kNN, perplexity calibration, P
 *   t.init();                                      // PCA or random start (the first step does it when not called)
 *   t.step();  /  await t.stepAsync();             // one iteration
 *   await t.run((it, t) => ...)                    // all iterations with a callback
 *   t.klDivergence(); t.embedding
 *
 * The gradient of KL(P‖Q) with w_ij = 1/(1+|y_i−y_j|²), Z = Σ_{k≠l} w_kl, q = w/Z:
 *   ∂C/∂y_i = 4 Σ_j (p_ij − q_ij) w_ij (y_i − y_j)
 *           = 4 [Σ_j p_ij w_ij (y_i − y_j) − (1/Z) Σ_j w_ij² (y_i − y_j)].
 * The attractive sum runs over the sparse P; the repulsive sums and Z come from the
 * quadtree (or are exact). Every reduction runs in a fixed order, so the same seed gives
 * identical coordinates with any number of threads.
 */
import { LobesError } from '../util/errors.js';
import { sharedF64, sharedI32 } from '../util/worker.js';
import { Rng } from '../util/rng.js';
import { conditionalP, jointP, neighboursFor, type SparseP } from './affinity.js';
import { nearestNeighbours } from './neighbours.js';
import { resolveOptions, type PcaScores, type TsneOptions, type TsneSettings } from './options.js';
import { exactRepulsion, exactZ, klWithZ } from './tsne-exact.js';
import { QuadTree, repulsionAll } from './quadtree.js';
import { TsnePool, overlapSplit } from './pool.js';
import { stepRange, type StepParams } from './step.js';
import { attraction, bfsOrder } from './attraction.js';
import { InterpRepulsion } from './interp.js';

export { APPROX_MIN_POINTS } from './neighbours.js';
export { MIXED_MIN_POINTS } from './options.js';
export type { AffinityOptions, ExecutionOptions, OptimizerOptions, PcaScores, TsneMethod, TsneOptions,
  TsneSettings } from './options.js';
export { exactGradient, exactKl, exactRepulsion, exactZ, klWithZ } from './tsne-exact.js';

/**
 * 'mixed' (what 'auto' runs from MIXED_MIN_POINTS points) takes FFT interpolation in an iteration
 * whose grid is small for N, L² · log2 L < FFT_GRID_PER_POINT · N (L = 6 × boxes per axis, the
 * FFT's size; src/tsne/interp.ts), and Barnes–Hut in the others. The grid grows with the map's
 * span, not with N: early exaggeration keeps the map small, so those iterations go to the FFT.
 * Measured (bench/tsne-interp.ts, one thread, on final maps of bench/tsne-scaling.py's data, L = 768):
 * the blocked SIMD transforms (src/tsne/fft-block.ts) cost about 6 ns × L² log2 L and the
 * spreading and interpolation about 0.29 µs per point, against Barnes–Hut's 1.1–1.2 µs per point
 * (2.2 µs on a map without clusters): 40.5 against 21.8 ms at 20,000 points, 48.7 against 52.9 at
 * 50,000 and 51.8 against 116.5 at 100,000: the FFT wins while L² log2 L < ~130 N on one thread.
 * On two threads its iteration synchronises the threads six times, so the rule takes 100 N.
 * The choice depends on Y only, so the same seed gives the same map on any number of threads.
 * The last POLISH_ITERATIONS iterations take the FFT whatever the grid (see there).
 */
export const FFT_GRID_PER_POINT = 100;
/**
 * Under 'mixed', the last 50 iterations (after the exaggeration) take FFT interpolation on any grid.
 * Barnes–Hut at θ = 0.5 leaves the points' local arrangement worse than the FFT's gradient does:
 * at 50,000 points (bench/tsne-scaling.py's data, seeds 0–2), the 10-NN recall of 5,000 points
 * went from 0.1039 / 0.1055 / 0.1008 with Barnes–Hut to the end to 0.1121 / 0.1126 / 0.1085 with
 * these 50 iterations on the FFT; openTSNE's was 0.1127 / 0.1127 / 0.1071 (bench/RESULTS.md), with
 * FFT_GRID_PER_POINT at 30 then; at 100 the FFT takes every iteration of those maps anyway.
 */
export const POLISH_ITERATIONS = 50;
/** True when an iteration on an L × L grid with n points takes FFT interpolation under 'mixed'. */
export function fftIteration(L: number, n: number): boolean {
  return L * L * Math.log2(L) < FFT_GRID_PER_POINT * n;
}

export class Tsne {
  readonly n: number;
  readonly P: SparseP;
  readonly opts: TsneSettings;
  /** Current embedding, interleaved x, y. */
  Y: Float64Array;
  /** Iterations done. */
  iter = 0;
  private update: Float64Array;
  private gains: Float64Array;
  private attr: Float64Array;
  private Frep: Float64Array;
  private Zi: Float64Array;
  private tree: QuadTree | null = null;
  private interp: InterpRepulsion | null = null;
  private pool: TsnePool | null;
  private pcaScores: PcaScores | null = null;
  private initData: Float64Array | 'pca' | 'random';
  private X: Float64Array | Float32Array;
  private d: number;
  /** Z of the last gradient evaluation. */
  lastZ = 0;
  /** Share of the exact k neighbours the approximate search found, on sampled rows (null: exact search). */
  neighbourRecall: { recall: number; rows: number } | null = null;
  /** Iterations whose repulsion was FFT-interpolated ('fft': all; 'mixed': those with a small grid, and the last POLISH_ITERATIONS). */
  fftIterations = 0;
  private ownsPool = true;
  /** Rows of the attraction the workers take while this thread builds the tree (0: the even split; see overlapSplit). */
  private attrSplit = 0;
  private bhTiming = { build: 0, attr: 0, iters: 0 };

  protected constructor(X: Float64Array | Float32Array, n: number, d: number, P: SparseP, opts: TsneSettings,
    init: Float64Array | 'pca' | 'random', pool: TsnePool | null)
  {
    this.X = X;
    this.n = n;
    this.d = d;
    this.P = P;
    this.opts = opts;
    this.initData = init;
    this.pool = pool;
    const shared = pool !== null;
    const mk = (len: number) => new Float64Array(shared ? new SharedArrayBuffer(len * 8) : new ArrayBuffer(len * 8));
    this.Y = mk(2 * n);
    this.Frep = mk(2 * n);
    this.Zi = mk(n);
    this.update = mk(2 * n);
    this.gains = mk(2 * n).fill(1);
    this.attr = mk(2 * n);
    if (opts.method === 'fft' || opts.method === 'mixed') this.interp = new InterpRepulsion(n, shared);
    if (opts.method !== 'fft') this.tree = new QuadTree(n, shared);
  }

  /** Resolve options, compute the kNN graph and the joint P. */
  static async create(X: Float64Array | Float32Array, n: number, d: number, options: TsneOptions = {},
    onStage?: (stage: string) => void): Promise<Tsne>
  {
    if (n < 4) throw new LobesError(`t-SNE needs at least 4 points, got ${n}`);
    const opts = resolveOptions(options, n);
    const { optimizer = {}, execution = {} } = options;
    const k = neighboursFor(opts.perplexity, n);
    const external = execution.pool ?? null;
    const pool = external ??
      (opts.threads > 1 && n >= (execution.workerMinPoints ?? 2000) ? await TsnePool.start(opts.threads - 1) : null);
    try {
      onStage?.(`nearest neighbours (k = ${k})`);
      const { nn, recall } = await nearestNeighbours(X, n, d, k, { search: opts.neighbours, seed: opts.seed, pool,
        onRows: execution.onNeighbours, onStage });
      onStage?.('perplexity calibration');
      const Pc = pool ? await pool.conditionalP(nn, n, opts.perplexity) : conditionalP(nn, n, opts.perplexity).P;
      let P = jointP(nn, Pc, n);
      if (pool) P = shareP(P);
      P.order = bfsOrder(P, pool !== null);
      const init = optimizer.init ?? 'pca';
      if (init instanceof Float64Array && init.length !== 2 * n)
        throw new LobesError(`init has ${init.length} values, expected ${2 * n}`);
      if (init === 'pca' && !optimizer.pcaScores)
        throw new LobesError(
          "t-SNE init 'pca' needs the principal components (optimizer.pcaScores; src/cluster's Tsne gives them), or init 'random' or given coordinates",
        );
      const t = new Tsne(X, n, d, P, opts, init, pool);
      t.pcaScores = optimizer.pcaScores ?? null;
      t.ownsPool = !external;
      t.neighbourRecall = recall;
      return t;
    } catch (e) {
      if (!external) await pool?.close();
      throw e;
    }
  }

  /** Set the starting embedding and reset the optimizer state. */
  init(): void {
    const n = this.n;
    const Y = this.Y;
    if (this.initData instanceof Float64Array) {
      Y.set(this.initData);
    } else if (this.initData === 'random') {
      const rng = new Rng(this.opts.seed);
      for (let i = 0; i < 2 * n; i++) Y[i] = rng.normal() * 1e-4;
    } else {
      const scores = this.pcaScores!(this.X, n, this.d, this.opts.seed);
      let m = 0;
      for (let i = 0; i < n; i++) m += scores[2 * i];
      m /= n;
      let v = 0;
      for (let i = 0; i < n; i++) v += (scores[2 * i] - m) ** 2;
      const std = Math.sqrt(v / n) || 1;
      for (let i = 0; i < 2 * n; i++) Y[i] = (scores[i] / std) * 1e-4;
    }
    this.update.fill(0);
    this.gains.fill(1);
    this.iter = 0;
    this.started = true;
  }

  /** Whether init() has run: a step before it would start from all-zero positions, where nothing moves. */
  private started = false;

  /** Exaggeration factor in effect at the current iteration. */
  get exaggeration(): number {
    return this.iter < this.opts.exaggerationIterations ? this.opts.earlyExaggeration : 1;
  }

  /** One iteration using this thread only. */
  step(): void {
    if (!this.started) this.init();
    this.computeRepulsionLocal();
    stepRange(this.Y, this.update, this.gains, this.attr, this.Frep, this.stepParams(false), 0, this.n);
    this.endStep();
  }

  /** One iteration, splitting the repulsion across worker threads when there are any. */
  async stepAsync(): Promise<void> {
    if (!this.started) this.init();
    if (!this.pool || this.opts.method === 'exact') {
      this.step();
      return;
    }
    if (this.fftNow()) {
      await this.pool.interpGradient(this.interp!, this.Y, this.n, this.Frep, this.Zi, this.P, this.exaggeration,
        this.attr);
    } else {
      const tree = this.tree!;
      const took = await this.pool.bhGradient(() => tree.build(this.Y, this.n), tree, this.attrSplit, this.Y, this.n,
        this.opts.theta, this.Frep, this.Zi, this.P, this.exaggeration, this.attr);
      // every 16 Barnes–Hut iterations, the workers' share of the attraction from the mean times (the numbers do not depend on it)
      const b = this.bhTiming;
      b.build += took.buildMs;
      b.attr += (took.attrMs * this.n) / Math.max(1, this.n - took.split);
      if (++b.iters === 16) {
        this.attrSplit = overlapSplit(b.build / 16, b.attr / 16, this.n, this.pool.size);
        b.build = b.attr = b.iters = 0;
      }
    }
    await this.pool.step(this.Y, this.update, this.gains, this.attr, this.Frep, this.stepParams(true), this.n);
    this.endStep();
  }

  /** Run the remaining iterations; `onIteration` is called after each one. */
  async run(onIteration?: (iter: number, t: Tsne) => void | Promise<void>): Promise<Float64Array> {
    while (this.iter < this.opts.iterations) {
      await this.stepAsync();
      if (onIteration) await onIteration(this.iter, this);
    }
    return this.Y;
  }

  /** Release worker threads. */
  async close(): Promise<void> {
    if (this.ownsPool) await this.pool?.close();
    this.pool = null;
  }

  /** Whether this iteration's repulsion is FFT-interpolated (counted in fftIterations). */
  private fftNow(): boolean {
    const fft = this.opts.method === 'fft' ||
      (this.opts.method === 'mixed' &&
        (this.iter >= Math.max(this.opts.exaggerationIterations, this.opts.iterations - POLISH_ITERATIONS) ||
          fftIteration(this.interp!.gridSize(this.Y), this.n)));
    if (fft) this.fftIterations++;
    return fft;
  }

  private computeRepulsionLocal(): void {
    if (this.opts.method === 'exact') {
      exactRepulsion(this.Y, this.n, this.Frep, this.Zi);
    } else if (this.fftNow()) {
      this.interp!.compute(this.Y, this.Frep, this.Zi);
    } else {
      const tree = this.tree!;
      tree.build(this.Y, this.n);
      repulsionAll(tree, this.Y, this.opts.theta, this.Frep, this.Zi);
    }
  }

  /** Z from the repulsion already in Frep/Zi (and the attraction into attr unless attractionDone): this iteration's step constants. */
  private stepParams(attractionDone: boolean): StepParams {
    const n = this.n;
    let Z = 0;
    for (let i = 0; i < n; i++) Z += this.Zi[i];
    this.lastZ = Z;
    if (!attractionDone) attraction(this.P, this.Y, this.exaggeration, this.attr);
    const early = this.iter < this.opts.exaggerationIterations;
    return {
      invZ: 1 / Math.max(Z, 1e-300),
      momentum: early ? this.opts.momentum[0] : this.opts.momentum[1],
      learningRate: early ? this.opts.learningRate : this.opts.learningRateAfter,
      maxStepNorm: this.opts.maxStepNorm,
      additiveGain: this.opts.rule === 'openTSNE',
    };
  }

  /** Count the iteration; scikit-learn's rule starts a fresh optimizer (zero update, unit gains) when exaggeration ends. */
  private endStep(): void {
    this.iter++;
    if (this.iter === this.opts.exaggerationIterations && this.opts.rule === 'scikit-learn') {
      this.update.fill(0);
      this.gains.fill(1);
    }
  }

  /** The current embedding as a copy. */
  get embedding(): Float64Array {
    return Float64Array.from(this.Y);
  }

  /**
   * KL(P‖Q) of the current embedding with the unexaggerated P: exact Z when N ≤ exactKlLimit,
   * otherwise Z from the sums of the method in use (as scikit-learn reports it for Barnes–Hut).
   */
  klDivergence(): number {
    const n = this.n;
    let Z: number;
    if (n <= this.opts.exactKlLimit || this.opts.method === 'exact') {
      Z = exactZ(this.Y, n);
    } else if (this.opts.method === 'fft') {
      const F = new Float64Array(2 * n);
      const Zi = new Float64Array(n);
      new InterpRepulsion(n).compute(this.Y, F, Zi);
      Z = 0;
      for (let i = 0; i < n; i++) Z += Zi[i];
    } else {
      const tree = new QuadTree(n);
      tree.build(this.Y, n);
      const F = new Float64Array(2 * n);
      const Zi = new Float64Array(n);
      repulsionAll(tree, this.Y, this.opts.theta, F, Zi);
      Z = 0;
      for (let i = 0; i < n; i++) Z += Zi[i];
    }
    return klWithZ(this.P, this.Y, Z);
  }
}

/** A copy of P on SharedArrayBuffers (for worker threads). */
function shareP(P: SparseP): SparseP {
  return { n: P.n, rowPtr: sharedI32(P.rowPtr), cols: sharedI32(P.cols), vals: sharedF64(P.vals), id: nextPId++ };
}

let nextPId = 1;

/** The gradient the optimizer uses (sparse P; BH, FFT-interpolated or exact repulsion), exposed for tests. */
export function tsneGradient(P: SparseP, Y: Float64Array, theta: number, exaggeration = 1,
  method: 'bh' | 'fft' = 'bh'): Float64Array
{
  const n = P.n;
  const F = new Float64Array(2 * n);
  const Zi = new Float64Array(n);
  if (theta === 0) exactRepulsion(Y, n, F, Zi);
  else if (method === 'fft') new InterpRepulsion(n).compute(Y, F, Zi);
  else {
    const tree = new QuadTree(n);
    tree.build(Y, n);
    repulsionAll(tree, Y, theta, F, Zi);
  }
  let Z = 0;
  for (let i = 0; i < n; i++) Z += Zi[i];
  const g = new Float64Array(2 * n);
  attraction(P, Y, exaggeration, g);
  for (let t = 0; t < 2 * n; t++) g[t] = 4 * (g[t] - F[t] / Z);
  return g;
}
