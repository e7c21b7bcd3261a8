/**
 * The measuring stages of `lobes cluster` (src/cluster/run.ts drives them): the separation
 * metrics of the metric sample in the original space (cosine and euclidean) and in the
 * embedding, the layer sweep, and the chance levels every number is read against.
 *
 * The linear probe sees the top `probePca` principal components of each training fold (default
 * 50; 0: every dimension), standardized with the training fold's mean and sd, under repeated
 * stratified CV (src/cluster/probecv.ts). It does not depend on `--pca`, which only chooses where
 * the t-SNE neighbourhoods are built.
 */
import { LobesError, opt } from '../util/errors.js';
import { Progress } from '../util/progress.js';
import { silentIO, type JobIO } from '../util/jobio.js';
import { compareHooks, parseHook } from '../hooks.js';
import type { HookInfo, RunReader } from '../store/types.js';
import type { Chance, ClassifierMetrics, ClusterItems, ClusterSettings, ClusterMetrics, ProbeComparison, SpaceMetrics,
  SweepPoint } from './types.js';
import type { PcaOptions, PcaResult } from './pca.js';
import { Rng } from '../util/rng.js';
import { gramPays, repeatedCv, type Block, type RepeatedCv } from './probecv.js';
import { pairedBootstrap } from './paired.js';
import type { ClusterPool } from './pool.js';
import { distanceMatrix, gramDistances, gramRows, permutationLabels, probePermutationLabels } from './metrics.js';
import { nullOptions, probeNullScores, scoreProbe, spaceResult, type MetricOptions } from './space.js';
import { majorityRate } from './scores.js';
import type { ProbeOptions } from './probe.js';

/** PCA (or none) of a matrix; uses the worker threads for wide matrices. */
export type RunPca = (M: Float32Array | Float64Array, rows: number, dim: number, k: number, po: PcaOptions) => Promise<
  PcaResult
> | PcaResult;

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
  mopts: Required<Pick<MetricOptions, 'k' | 'bootstrap' | 'permutations' | 'probePermutations' | 'seed'>> & {
    probe: ProbeOptions & { folds: number };
  };
  /** PCA components the probe sees (0: all dimensions). */
  probePca: number;
  /** Label permutations per layer of the sweep. */
  sweepPermutations: number;
  /** How the permutation counts were sized to their families (settings.json's sizing). */
  sizing?: ClusterSettings['sizing'];
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
  /** Where its progress goes. */
  io: JobIO;
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

/** Seeded stratified subsample of at most m rows (sorted indices). */
export function stratifiedSample(codes: Int32Array, nClasses: number, m: number, seed: number): Int32Array {
  const n = codes.length;
  if (n <= m) return Int32Array.from({ length: n }, (_, i) => i);
  const rng = new Rng(seed);
  const picked: number[] = [];
  const byClass: number[][] = Array.from({ length: nClasses }, () => []);
  for (let i = 0; i < n; i++) byClass[codes[i]].push(i);
  // largest-remainder allocation, at least one per class
  const quota = byClass.map((rows) => Math.max(1, Math.floor((rows.length * m) / n)));
  for (let c = 0; c < nClasses; c++) {
    const rows = rng.shuffle(byClass[c].slice());
    picked.push(...rows.slice(0, Math.min(quota[c], rows.length)));
  }
  return Int32Array.from(picked.sort((a, b) => a - b));
}

/** Chance levels of the sample's labels. */
export function chanceOf(sub: Int32Array, classes: string[]): Chance {
  const C = classes.length;
  const counts = new Array<number>(C).fill(0);
  for (let i = 0; i < sub.length; i++) counts[sub[i]]++;
  const maj = majorityRate(sub, C);
  return { balancedAccuracy: 1 / counts.filter((c) => c > 0).length, majorityRate: maj.rate,
    majorityClass: classes[maj.cls], counts };
}

/** The probe's options for the metric sample (PCA inside the folds to `probePca` components). */
export function probeOptions(sample: MetricSample, seed: number): ProbeOptions {
  return { ...sample.mopts.probe, pca: sample.probePca, seed };
}

/**
 * The probe's null ([R][3] scores for probePermutationLabels) on repeat 0's prepared folds, with
 * C fixed at the most frequently chosen, on the worker threads when there are any, with a progress bar.
 */
export async function probeNull(ctx: MeasureContext, cv: RepeatedCv, m: number, sub: Int32Array, R: number,
  probe: ProbeOptions, label: string): Promise<Float64Array>
{
  if (R <= 0) return new Float64Array(0);
  const perms = probePermutationLabels(sub, R, ctx.seed, probe.groups);
  const C = ctx.coded.classes.length;
  const prog = new Progress({ label, total: R, unit: 'permutations', io: ctx.io });
  const opts = nullOptions({ ...probe, seed: ctx.seed }, cv);
  const out = ctx.pool
    ? await ctx.pool.probeScores(cv.prepared, m, perms, C, opts, ctx.seed, () => prog.tick(1))
    : probeNullScores(cv.prepared, m, perms, C, opts, ctx.seed, () => prog.tick(1));
  prog.finish();
  return out;
}

/** The upper triangle of X Xᵀ [n, n] (on the worker threads when there are any). */
async function gramMatrix(ctx: MeasureContext, X: Float64Array | Float32Array, n: number,
  d: number): Promise<Float64Array>
{
  if (ctx.pool) return ctx.pool.gram(X, n, d);
  const G = new Float64Array(n * n);
  gramRows(X, n, d, G, 0, n);
  return G;
}

/** The repeated CV of the probe on feature blocks of the metric sample, with a progress bar over repeats. */
export async function probeCv(ctx: MeasureContext, blocks: Block[], sample: MetricSample, label: string,
  opts: ProbeOptions = probeOptions(sample, ctx.seed)): Promise<RepeatedCv>
{
  const prog = new Progress({ label, total: Math.max(1, opts.repeats ?? 1), unit: 'repeats', io: ctx.io });
  const C = ctx.coded.classes.length;
  const tick = () => prog.tick(1);
  // a dense block wider than the sample (a layer of an 8B run): its in-fold PCA from its Gram matrix
  blocks = await Promise.all(
    blocks.map(async (
      b,
    ) => (gramPays(b, sample.m, opts.pca ?? 0) ? { ...b, gram: await gramMatrix(ctx, b.X, sample.m, b.d) } : b)),
  );
  const cv = ctx.pool && (opts.repeats ?? 1) > 1
    ? await ctx.pool.repeatedCv(blocks, sample.m, sample.sub, C, opts, tick)
    : repeatedCv(blocks, sample.m, sample.sub, C, opts, tick);
  prog.finish();
  return cv;
}

/** A probe on feature blocks of the metric sample: repeated CV, its null of R permutations, its scores. */
export async function runProbe(ctx: MeasureContext, blocks: Block[], sample: MetricSample, R: number,
  label: string): Promise<{ metrics: ClassifierMetrics; cv: RepeatedCv; dims: number }>
{
  const opts = probeOptions(sample, ctx.seed);
  const cv = await probeCv(ctx, blocks, sample, `${label}: CV`, opts);
  const nulls = await probeNull(ctx, cv, sample.m, sample.sub, R, opts, `${label}: null`);
  const metrics = scoreProbe(sample.sub, cv, ctx.coded.classes.length, nulls, sample.mopts.bootstrap, new Rng(ctx.seed),
    opts);
  return { metrics, cv, dims: cv.prepared[0]?.d ?? 0 };
}

/** The paired bootstrap of probe a − probe b on the metric sample (seeded by the seed and the names). */
export function compareProbes(ctx: MeasureContext, sample: MetricSample, kind: ProbeComparison['kind'],
  a: { name: string; cv: RepeatedCv }, b: { name: string; cv: RepeatedCv }): ProbeComparison
{
  let h = ctx.seed >>> 0;
  for (const ch of `${a.name}\u0000${b.name}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
  const d = pairedBootstrap(sample.sub, a.cv.preds, b.cv.preds, ctx.coded.classes.length, sample.mopts.bootstrap,
    new Rng(h), sample.sub, sample.mopts.probe.groups);
  return { kind, a: a.name, b: b.name, ...d, n: sample.m };
}

/** Separation metrics in the original space (cosine, euclidean) and in the embedding, with the per-item values. */
export async function separation(ctx: MeasureContext, Y: Float64Array,
  sample: MetricSample
): Promise<{ spaces: SpaceMetrics[]; items: ClusterItems['spaces']; probeCv: RepeatedCv | null; Xs: Float64Array }> {
  const { pool, say, lap, seed, d } = ctx;
  const { classes } = ctx.coded;
  const { rows, m, sub, mopts } = sample;
  const { bootstrap: B, permutations: R, probePermutations: Rp } = mopts;
  const Xs = take(ctx.X, d, rows);
  const Ys = take(Y, 2, rows);
  say(`metrics on ${m} points (${B} bootstrap resamples, ${R} permutations, ${Rp} for the probe)`);
  const perms = pool && R > 0 ? permutationLabels(sub, R, seed, mopts.probe.groups) : null;
  const silNull = async (
    D: Float64Array,
  ) => (pool && perms ? pool.silhouettes(D, m, perms, classes.length) : undefined);
  const popts = probeOptions(sample, seed);
  lap('metrics-setup');
  say(`original-space distances (${m} × ${m}, d = ${d})`);
  const G = pool ? await pool.gramDistances(Xs, m, d) : gramDistances(Xs, m, d);
  lap('metrics-distances');
  const spaces: SpaceMetrics[] = [];
  const items: ClusterItems['spaces'] = [];
  const add = (r: ReturnType<typeof spaceResult>) => {
    spaces.push(r.metrics);
    items.push({ space: r.metrics.space, knn: Array.from(r.knnPred),
      probe: r.probePred ? Array.from(r.probePred) : null,
      ...(r.probePreds ? { probeRepeats: r.probePreds.map((p) => Array.from(p)) } : {}),
      silhouette: Array.from(r.silhouette, (v) => Math.round(v * 1e6) / 1e6) });
  };
  say('metrics 1/3: original-cosine');
  add(
    spaceResult({ space: 'original-cosine', X: Xs, d, distance: 'cosine', probe: null, D: G.cosine,
      silhouetteNull: await silNull(G.cosine) }, m, sub, classes, mopts),
  );
  lap('metrics-original-cosine');
  say(
    `metrics 2/3: original-euclidean (the probe: ${popts.repeats ?? 1} repeats × ${mopts.probe.folds} folds${
      popts.pca ? `, PCA-${popts.pca} inside each fold` : ''
    }; its null refits ${Rp} permutations)`,
  );
  // the in-fold PCA runs on the distances' Gram matrix when the training rows are fewer than d
  const cvEP = probeCv(ctx, [{ X: Xs, d, gram: G.gram }], sample, 'cluster probe CV (original space)', popts);
  const YP = { X: Ys, d: 2 };
  // the embedding's CV starts beside it on worker threads: a worker goes on to the embedding's
  // folds while this thread ends its share and scores the original space (the same numbers in
  // any order; the original-euclidean stage's time then holds this thread's embedding folds)
  const cvYP = pool ? probeCv(ctx, [YP], sample, 'cluster probe CV (embedding)', popts) : null;
  // (awaited below; marked handled here so that an error in the original space's CV is the one reported)
  cvYP?.catch(() => undefined);
  const cvE = await cvEP;
  const nullE = await probeNull(ctx, cvE, m, sub, Rp, popts, 'cluster probe null (original space)');
  add(
    spaceResult({ space: 'original-euclidean', X: Xs, d, distance: 'euclidean', probe: { X: Xs, d }, probeCv: cvE,
      D: G.euclidean, probeNull: nullE, silhouetteNull: await silNull(G.euclidean) }, m, sub, classes, { ...mopts,
      probe: popts }),
  );
  lap('metrics-original-euclidean');
  say('metrics 3/3: embedding');
  const DY = distanceMatrix(Ys, m, 2, 'euclidean');
  const cvY = await (cvYP ?? probeCv(ctx, [YP], sample, 'cluster probe CV (embedding)', popts));
  const nullY = await probeNull(ctx, cvY, m, sub, Rp, popts, 'cluster probe null (embedding)');
  add(
    spaceResult({ space: 'embedding', X: Ys, d: 2, distance: 'euclidean', probe: YP, probeCv: cvY, D: DY,
      probeNull: nullY, silhouetteNull: await silNull(DY) }, m, sub, classes, { ...mopts, probe: popts }),
  );
  lap('metrics-embedding');
  return { spaces, items, probeCv: cvE, Xs };
}

/**
 * The run's residual-stream capture points in layer order: layers.{i}.resid_out (the last token),
 * or with `pool` 'mean' layers.{i}.resid_out.mean (the mean over the text's tokens).
 */
export function residHooks(run: RunReader, pool: 'last' | 'mean' = 'last'): HookInfo[] {
  const site = pool === 'mean' ? 'resid_out.mean' : 'resid_out';
  return run
    .hooks()
    .map((h) => ({ h, hook: parseHook(h.name) }))
    .filter((x) => x.hook?.site === site)
    .sort((a, b) => compareHooks(a.hook!, b.hook!))
    .map((x) => x.h);
}

/** The layers a sweep reads: a run's residual-stream points at every layer, refused for a matrix or a run without them (runCluster checks it before the t-SNE). */
export function checkSweepInput(run: RunReader | undefined, source: string,
  pool: 'last' | 'mean' = 'last'): { reader: RunReader; layers: HookInfo[] }
{
  if (!run) throw new LobesError(`${opt('sweep')} needs a run directory (a matrix file has one layer)`);
  const layers = residHooks(run, pool);
  const site = pool === 'mean' ? 'resid_out.mean' : 'resid_out';
  if (layers.length === 0)
    throw new LobesError(`${opt('sweep')}: the run has no layers.{i}.${site} capture points`, { file: source,
      hint: `extract with ${opt('capture', pool === 'mean' ? 'mean' : 'resid')}` });
  return { reader: run, layers };
}

/**
 * The probe at every layer's residual stream, on the metric sample: accuracy, balanced accuracy
 * and macro-F1 with bootstrap CIs and a null of `sweepPermutations` label shuffles per layer
 * (the same shuffles at every layer). `pool` 'mean' sweeps the mean-pooled stream
 * (layers.{i}.resid_out.mean), as cluster does when its point is a mean-pooled one.
 */
export async function layerSweep(ctx: MeasureContext, run: RunReader | undefined, source: string, sample: MetricSample,
  pool: 'last' | 'mean' = 'last'
): Promise<{ sweep: SweepPoint[]; items: NonNullable<ClusterItems['sweep']>; comparisons: ProbeComparison[] }> {
  const { reader, layers } = checkSweepInput(run, source, pool);
  const { rows } = sample;
  const sweep: SweepPoint[] = [];
  const comparisons: ProbeComparison[] = [];
  let prev: { name: string; cv: RepeatedCv } | null = null;
  const items: NonNullable<ClusterItems['sweep']> = [];
  const prog = new Progress({ label: 'cluster sweep', total: layers.length, unit: 'layers', io: ctx.io });
  const quiet: MeasureContext = { ...ctx, io: silentIO(), say: () => {} };
  for (const h of layers) {
    const L = await reader.read(h.name, rows);
    for (let t = 0; t < L.length; t++)
      if (!Number.isFinite(L[t]))
        throw new LobesError(`non-finite value at row ${rows[Math.floor(t / h.dim)]}`, { file: source, where: h.name });
    const r = await runProbe(quiet, [{ X: L, d: h.dim }], sample, sample.sweepPermutations, h.name);
    const a = r.metrics.accuracy;
    sweep.push({ point: h.name, probeAccuracy: a.value, ci95: a.ci95, accuracy: a,
      balancedAccuracy: r.metrics.balancedAccuracy, macroF1: r.metrics.macroF1, cv: r.metrics.cv });
    items.push({ point: h.name, probe: Array.from(r.cv.preds[0]), probeRepeats: r.cv.preds.map((p) => Array.from(p)) });
    // each layer against the one before it, paired over items and fold repeats
    const cur = { name: h.name, cv: r.cv };
    if (prev) comparisons.push(compareProbes(ctx, sample, 'layers', cur, prev));
    prev = cur;
    prog.tick(1);
  }
  prog.finish();
  return { sweep, items, comparisons };
}

/**
 * The header of metrics.csv: p_holm and p_bh are the p adjusted within its family
 * (metrics.families), z the value against its null, p_normal the one-sided normal approximation
 * of z's p (an approximation), permutations the null's R, and verdict the test's status within
 * its family (pass, fail, not-testable, degenerate; src/util/resolution.ts; empty outside a family).
 */
export const METRICS_CSV_HEADER =
  'space,metric,value,ci_low,ci_high,p,null_mean,null_low,null_high,p_holm,p_bh,z,p_normal,permutations,verdict';

/** Metrics as CSV rows, one per METRICS_CSV_HEADER. */
export function metricsCsvRows(metrics: ClusterMetrics, field: (s: string) => string): string[] {
  const lines: string[] = [];
  const num = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  type M = { value: number; ci95: [number, number] | null; p: number | null; nullMean?: number | null;
    nullBand?: [number, number] | null; pHolm?: number | null; pBH?: number | null; z?: number | null;
    pNormal?: number | null; permutations?: number; verdict?: { status: string } } | null | undefined;
  const row = (space: string, name: string, m: M) => {
    if (m)
      lines.push(
        [field(space), field(name), num(m.value), num(m.ci95?.[0]), num(m.ci95?.[1]), num(m.p), num(m.nullMean),
          num(m.nullBand?.[0]), num(m.nullBand?.[1]), num(m.pHolm), num(m.pBH), num(m.z), num(m.pNormal),
          num(m.permutations), m.verdict?.status ?? ''].join(','),
      );
  };
  const plain = (space: string, name: string, v: number | null | undefined) =>
    lines.push([field(space), field(name), num(v), '', '', '', '', '', '', '', '', '', '', '', ''].join(','));
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
  for (const b of metrics.controls ?? []) {
    row(`control:${b.name}`, 'probe_accuracy', b.probe.accuracy);
    row(`control:${b.name}`, 'probe_balanced_accuracy', b.probe.balancedAccuracy);
    row(`control:${b.name}`, 'probe_macro_f1', b.probe.macroF1);
  }
  for (const b of metrics.incremental ?? []) {
    row(`incremental:${b.words}`, 'probe_accuracy', b.probe.accuracy);
    row(`incremental:${b.words}`, 'probe_balanced_accuracy', b.probe.balancedAccuracy);
    row(`incremental:${b.words}`, 'probe_macro_f1', b.probe.macroF1);
  }
  for (const c of metrics.comparisons ?? []) {
    row(`difference:${c.kind}`, `accuracy:${c.a} − ${c.b}`, c.accuracy);
    row(`difference:${c.kind}`, `balanced_accuracy:${c.a} − ${c.b}`, c.balancedAccuracy);
    row(`difference:${c.kind}`, `macro_f1:${c.a} − ${c.b}`, c.macroF1);
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
