/**
 * The measuring stages of `lobes cluster` (src/cluster/run.ts drives them): the separation
 * metrics of the metric sample in the original space (cosine and euclidean) and in the
 * embedding, the layer sweep, and the chance levels every number is read against.
 *
 * The linear probe sees the top `probePca` principal components of the metric sample (default
 * 50; 0: every dimension), then standardizes them per training fold (src/cluster/probe.ts).
 * With the default this is the probe of earlier versions, whose features were the t-SNE's
 * 50-dimensional PCA input; it no longer depends on `--pca`, which now only chooses where the
 * t-SNE neighbourhoods are built.
 */
import { LobesError } from '../util/errors.js';
import { Progress } from '../util/progress.js';
import { compareHooks, parseHook } from '../hooks.js';
import type { HookInfo, RunReader } from '../store/types.js';
import type { Chance, ClusterItems, ClusterMetrics, SpaceMetrics, SweepPoint } from './types.js';
import type { PcaOptions, PcaResult } from './pca.js';
import type { ClusterPool } from './pool.js';
import { distanceMatrix, gramDistances, permutationLabels, probePermutationLabels } from './metrics.js';
import { probeNullScores, probeScores, spaceResult, type MetricOptions } from './space.js';
import { majorityRate } from './scores.js';
import type { ProbeOptions } from './probe.js';

/** PCA (or none) of a matrix; uses the worker threads for wide matrices. */
export type RunPca = (M: Float32Array | Float64Array, rows: number, dim: number, k: number, po: PcaOptions) => Promise<PcaResult> | PcaResult;

/** Labels coded 0..C-1 in sorted order of their values. */
export interface Coded {
  classes: string[];
  codes: Int32Array;
}

/** The features t-SNE sees: PCA scores, or the matrix itself. */
export interface Features {
  feats: Float64Array;
  fd: number;
  explained: number;
}

/** The seeded stratified subsample the metrics use and the metric settings. */
export interface MetricSample {
  rows: Int32Array;
  m: number;
  /** Class codes of the sampled rows. */
  sub: Int32Array;
  mopts: Required<Pick<MetricOptions, 'k' | 'bootstrap' | 'permutations' | 'probePermutations' | 'seed'>> & { probe: { folds: number } };
  /** PCA components the probe sees (0: all dimensions). */
  probePca: number;
  /** Label permutations per layer of the sweep. */
  sweepPermutations: number;
}

/** What the measuring stages read. */
export interface MeasureContext {
  X: Float32Array;
  n: number;
  d: number;
  coded: Coded;
  seed: number;
  pool: ClusterPool | null;
  runPca: RunPca;
  quiet: boolean;
  say: (m: string) => void;
  /** Record the time since the previous lap under `name`. */
  lap: (name: string) => void;
}

/** Rows `rows` of X [*, d] as a float64 matrix. */
export function take(X: Float32Array | Float64Array, d: number, rows: Int32Array): Float64Array {
  const out = new Float64Array(rows.length * d);
  rows.forEach((r, i) => {
    for (let j = 0; j < d; j++) out[i * d + j] = X[r * d + j];
  });
  return out;
}

/** Chance levels of the sample's labels. */
export function chanceOf(sub: Int32Array, classes: string[]): Chance {
  const C = classes.length;
  const counts = new Array<number>(C).fill(0);
  for (let i = 0; i < sub.length; i++) counts[sub[i]]++;
  const maj = majorityRate(sub, C);
  return { balancedAccuracy: 1 / counts.filter((c) => c > 0).length, majorityRate: maj.rate, majorityClass: classes[maj.cls], counts };
}

/**
 * The probe's features for the rows of F [m, dim]: its top `k` principal components when k is
 * set and smaller than dim, else F itself.
 */
export async function probeFeatures(ctx: MeasureContext, F: Float64Array, m: number, dim: number, k: number, what: string): Promise<{ X: Float64Array; d: number }> {
  if (!(k > 0 && k < dim && k < m)) return { X: F, d: dim };
  ctx.say(`probe features: PCA of ${what} (${m} × ${dim}) -> ${k}`);
  const r = await ctx.runPca(F, m, dim, k, { seed: ctx.seed });
  return { X: r.scores, d: r.k };
}

/**
 * The probe's null ([R][3] scores for probePermutationLabels), on the worker threads when there
 * are any, with a progress bar.
 */
export async function probeNull(ctx: MeasureContext, P: { X: Float64Array; d: number }, m: number, sub: Int32Array, R: number, probe: ProbeOptions, label: string): Promise<Float64Array> {
  if (R <= 0) return new Float64Array(0);
  const perms = probePermutationLabels(sub, R, ctx.seed);
  const C = ctx.coded.classes.length;
  const prog = new Progress({ label, total: R, unit: 'permutations', quiet: ctx.quiet });
  const opts = { ...probe, seed: ctx.seed };
  const out = ctx.pool ? await ctx.pool.probeScores(P.X, m, P.d, perms, C, opts, () => prog.tick(1)) : probeNullScores(P.X, m, P.d, perms, C, opts, () => prog.tick(1));
  prog.finish();
  return out;
}

/** Separation metrics in the original space (cosine, euclidean) and in the embedding, with the per-item values. */
export async function separation(ctx: MeasureContext, Y: Float64Array, sample: MetricSample): Promise<{ spaces: SpaceMetrics[]; items: ClusterItems['spaces'] }> {
  const { pool, say, lap, seed, d } = ctx;
  const { classes } = ctx.coded;
  const { rows, m, sub, mopts } = sample;
  const { bootstrap: B, permutations: R, probePermutations: Rp } = mopts;
  const Xs = take(ctx.X, d, rows);
  const Ys = take(Y, 2, rows);
  say(`metrics on ${m} points (${B} bootstrap resamples, ${R} permutations, ${Rp} for the probe)`);
  const perms = pool && R > 0 ? permutationLabels(sub, R, seed) : null;
  const silNull = async (D: Float64Array) => (pool && perms ? pool.silhouettes(D, m, perms, classes.length) : undefined);
  const P = await probeFeatures(ctx, Xs, m, d, sample.probePca, 'the original space');
  lap('metrics-setup');
  say(`original-space distances (${m} × ${m}, d = ${d})`);
  const G = pool ? await pool.gramDistances(Xs, m, d) : gramDistances(Xs, m, d);
  lap('metrics-distances');
  const spaces: SpaceMetrics[] = [];
  const items: ClusterItems['spaces'] = [];
  const add = (r: ReturnType<typeof spaceResult>) => {
    spaces.push(r.metrics);
    items.push({ space: r.metrics.space, knn: Array.from(r.knnPred), probe: r.probePred ? Array.from(r.probePred) : null, silhouette: Array.from(r.silhouette, (v) => Math.round(v * 1e6) / 1e6) });
  };
  say('metrics 1/3: original-cosine');
  add(spaceResult({ space: 'original-cosine', X: Xs, d, distance: 'cosine', probe: null, D: G.cosine, silhouetteNull: await silNull(G.cosine) }, m, sub, classes, mopts));
  lap('metrics-original-cosine');
  say(`metrics 2/3: original-euclidean (the probe on ${P.d} dimensions retrains ${Rp} permutations × ${mopts.probe.folds} folds)`);
  const nullE = await probeNull(ctx, P, m, sub, Rp, mopts.probe, 'cluster probe null (original space)');
  add(spaceResult({ space: 'original-euclidean', X: Xs, d, distance: 'euclidean', probe: P, D: G.euclidean, probeNull: nullE, silhouetteNull: await silNull(G.euclidean) }, m, sub, classes, mopts));
  lap('metrics-original-euclidean');
  say('metrics 3/3: embedding');
  const DY = distanceMatrix(Ys, m, 2, 'euclidean');
  const YP = { X: Ys, d: 2 };
  const nullY = await probeNull(ctx, YP, m, sub, Rp, mopts.probe, 'cluster probe null (embedding)');
  add(spaceResult({ space: 'embedding', X: Ys, d: 2, distance: 'euclidean', probe: YP, D: DY, probeNull: nullY, silhouetteNull: await silNull(DY) }, m, sub, classes, mopts));
  lap('metrics-embedding');
  return { spaces, items };
}

/** The run's residual-stream capture points (layers.{i}.resid_out), in layer order. */
export function residHooks(run: RunReader): HookInfo[] {
  return run
    .hooks()
    .map((h) => ({ h, hook: parseHook(h.name) }))
    .filter((x) => x.hook?.site === 'resid_out')
    .sort((a, b) => compareHooks(a.hook!, b.hook!))
    .map((x) => x.h);
}

/**
 * The probe at every layer's residual stream, on the metric sample: accuracy, balanced accuracy
 * and macro-F1 with bootstrap CIs and a null of `sweepPermutations` label shuffles per layer
 * (the same shuffles at every layer).
 */
export async function layerSweep(ctx: MeasureContext, run: RunReader | undefined, source: string, sample: MetricSample): Promise<{ sweep: SweepPoint[]; items: NonNullable<ClusterItems['sweep']> }> {
  if (!run) throw new LobesError('--sweep needs a run directory (a matrix file has one layer)');
  const layers = residHooks(run);
  if (layers.length === 0) throw new LobesError('--sweep: the run has no layers.{i}.resid_out capture points', { file: source, hint: 'extract with --capture resid' });
  const { rows, m, sub, mopts } = sample;
  const C = ctx.coded.classes.length;
  const sweep: SweepPoint[] = [];
  const items: NonNullable<ClusterItems['sweep']> = [];
  const prog = new Progress({ label: 'cluster sweep', total: layers.length, unit: 'layers', quiet: ctx.quiet });
  const quiet: MeasureContext = { ...ctx, quiet: true, say: () => {} };
  for (const h of layers) {
    const L = await run.read(h.name, rows);
    for (let t = 0; t < L.length; t++) if (!Number.isFinite(L[t])) throw new LobesError(`non-finite value at row ${rows[Math.floor(t / h.dim)]}`, { file: source, where: h.name });
    const P = await probeFeatures(quiet, Float64Array.from(L), m, h.dim, sample.probePca, h.name);
    const nulls = await probeNull(quiet, P, m, sub, sample.sweepPermutations, mopts.probe, '');
    const r = probeScores(P.X, m, P.d, sub, C, mopts.bootstrap, ctx.seed, mopts.probe, nulls);
    const a = r.metrics.accuracy;
    sweep.push({ point: h.name, probeAccuracy: a.value, ci95: a.ci95, accuracy: a, balancedAccuracy: r.metrics.balancedAccuracy, macroF1: r.metrics.macroF1 });
    items.push({ point: h.name, probe: Array.from(r.pred) });
    prog.tick(1);
  }
  prog.finish();
  return { sweep, items };
}

/** Metrics as CSV rows: space,metric,value,ci_low,ci_high,p,null_mean,null_low,null_high. */
export function metricsCsvRows(metrics: ClusterMetrics, field: (s: string) => string): string[] {
  const lines: string[] = [];
  const num = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  type M = { value: number; ci95: [number, number] | null; p: number | null; nullMean?: number | null; nullBand?: [number, number] | null } | null | undefined;
  const row = (space: string, name: string, m: M) => {
    if (m) lines.push([field(space), field(name), num(m.value), num(m.ci95?.[0]), num(m.ci95?.[1]), num(m.p), num(m.nullMean), num(m.nullBand?.[0]), num(m.nullBand?.[1])].join(','));
  };
  const plain = (space: string, name: string, v: number | null | undefined) => lines.push([field(space), field(name), num(v), '', '', '', '', '', ''].join(','));
  for (const s of metrics.spaces) {
    row(s.space, 'silhouette', s.silhouette);
    row(s.space, 'knn_accuracy', s.knnAccuracy);
    row(s.space, 'knn_balanced_accuracy', s.knn?.balancedAccuracy);
    row(s.space, 'knn_macro_f1', s.knn?.macroF1);
    row(s.space, 'probe_accuracy', s.probeAccuracy);
    row(s.space, 'probe_balanced_accuracy', s.probe?.balancedAccuracy);
    row(s.space, 'probe_macro_f1', s.probe?.macroF1);
    row(s.space, 'davies_bouldin', s.daviesBouldin);
    for (const c of s.perClass) {
      plain(s.space, `silhouette:${c.label}`, c.silhouette);
      plain(s.space, `knn_recall:${c.label}`, c.knnRecall);
      if (c.probeRecall !== undefined) plain(s.space, `probe_recall:${c.label}`, c.probeRecall);
    }
  }
  for (const b of metrics.baselines ?? []) {
    row(`baseline:${b.name}`, 'probe_accuracy', b.probe.accuracy);
    row(`baseline:${b.name}`, 'probe_balanced_accuracy', b.probe.balancedAccuracy);
    row(`baseline:${b.name}`, 'probe_macro_f1', b.probe.macroF1);
  }
  for (const w of metrics.sweep ?? []) {
    row('sweep', `probe_accuracy:${w.point}`, w.accuracy ?? { value: w.probeAccuracy, ci95: w.ci95, p: null });
    row('sweep', `probe_balanced_accuracy:${w.point}`, w.balancedAccuracy);
    row('sweep', `probe_macro_f1:${w.point}`, w.macroF1);
  }
  if (metrics.chance) {
    plain('labels', 'chance_balanced_accuracy', metrics.chance.balancedAccuracy);
    plain('labels', 'majority_rate', metrics.chance.majorityRate);
  }
  plain('embedding', 'kl_divergence', metrics.klDivergence);
  return lines;
}
