/**
 * The `lobes cluster` command: seeded t-SNE of one capture point (or a plain matrix) and
 * numbers for how well a label separates, in the original space (cosine and euclidean) and
 * in the embedding.
 *
 *   const { settings, coords, metrics } = await runCluster('runs/8b', { by: 'aspect' });
 *
 * Writes RUN/cluster/ (or opts.out; for a matrix file, NAME.cluster/ beside it): settings.json,
 * coords.json, coords.csv, metrics.json, metrics.csv and, with `sweep`, sweep.json. Everything
 * is computed before anything is written, and the folder is written whole (writeDirAtomic):
 * a failure leaves the previous result as it was. settings.json records the provenance of
 * the input (run identity, samples table and chunk files; or the matrix and labels sha256).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { csvField } from '../util/csv.js';
import { LobesError, UsageError } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { Progress } from '../util/progress.js';
import { checkRegularFile, writeDirAtomic, writeFileAtomicSync } from '../util/io.js';
import { analysisProvenance } from '../store/provenance.js';
import { hashFileCached } from '../store/filehash.js';
import { defaultThreads } from '../util/worker.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../formats/safetensors.js';
import { LOBES_VERSION } from '../version.js';
import { FINAL_HIDDEN, compareHooks, parseHook } from '../hooks.js';
import type { HookInfo, RunReader } from '../store/types.js';
import type { ClusterCoords, ClusterMetrics, ClusterSettings, SpaceMetrics } from './types.js';
import { readNpy } from './npy.js';
import { pca, pcaParallel, type PcaOptions, type PcaResult } from './pca.js';
import { ClusterPool } from './pool.js';
import { Tsne } from './tsne.js';
import { checkPerplexity } from './affinity.js';
import { distanceMatrix, gramDistances, permutationLabels, probeAccuracy, probePermutationLabels, spaceMetrics, type MetricOptions } from './metrics.js';

export interface ClusterOptions {
  /** Labels file (one per line) for a matrix input. */
  labels?: string;
  /** Capture point of a run (default final.hidden); for a .safetensors matrix, the tensor name. */
  point?: string;
  /** Label axis of a run (default aspect). */
  by?: string;
  seed?: number;
  perplexity?: number;
  /** PCA dimensions before t-SNE (default 50; 0 = none). */
  pca?: number;
  theta?: number;
  iterations?: number;
  earlyExaggeration?: number;
  /** Bootstrap resamples for the CIs (default 1000). */
  bootstrap?: number;
  /** Label permutations for the p-values (default 200). */
  permutations?: number;
  /** Permutations for the probe p-value (default min(permutations, 50)). */
  probePermutations?: number;
  /** Neighbours of the kNN classifier (default 10). */
  knnK?: number;
  /** Folds of the probe's cross-validation (default 5). */
  folds?: number;
  /** Metrics on at most this many points (seeded stratified subsample; default 2000). */
  maxMetricPoints?: number;
  /** Probe accuracy for every layers.{i}.resid_out (run input only). */
  sweep?: boolean;
  /** Output directory. */
  out?: string;
  /** Worker threads (default: all cores). Results do not depend on it. */
  threads?: number;
  /** Print no progress. */
  quiet?: boolean;
  /** Write nothing (library use). */
  noWrite?: boolean;
}

export interface ClusterResult {
  settings: ClusterSettings;
  coords: ClusterCoords;
  metrics: ClusterMetrics;
  /** Directory written (null with noWrite). */
  outDir: string | null;
}

interface LoadedInput {
  kind: 'run' | 'matrix';
  source: string;
  X: Float32Array;
  n: number;
  d: number;
  ids: string[];
  labels: string[];
  text?: string[];
  run?: RunReader;
  labelsWhere: string;
  outDir: string;
  /** sha256 of the matrix file and the labels file (matrix input). */
  inputSha256?: { matrix: string; labels: string };
}

/** Read the labels file: one label per line (a final empty line is ignored). */
export function readLabelsFile(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new LobesError(`cannot read labels file (${e.code ?? e.message})`, { file });
  }
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((l, i) => {
    if (l.trim() === '') throw new LobesError('empty label', { file, where: `line ${i + 1}`, hint: 'every row of the matrix needs a label' });
  });
  return lines;
}

async function loadInput(input: RunReader | string, opts: ClusterOptions): Promise<LoadedInput> {
  if (typeof input !== 'string' || (existsSync(input) && statSync(input).isDirectory())) {
    let run: RunReader;
    if (typeof input === 'string') {
      const { openRun } = await import('../store/index.js');
      run = await openRun(input);
    } else run = input;
    const point = opts.point ?? FINAL_HIDDEN;
    const by = opts.by ?? 'aspect';
    const info = run.hook(point);
    const labels = run.labels(by);
    const X = await run.read(point);
    const n = run.samples.length;
    const text = run.samples.map((s) => s.text ?? '');
    return {
      kind: 'run',
      source: run.dir,
      X,
      n,
      d: info.dim,
      ids: run.samples.map((s) => s.id),
      labels,
      text: text.some((t) => t.length > 0) ? text : undefined,
      run,
      labelsWhere: `label axis ${JSON.stringify(by)}`,
      outDir: opts.out ?? run.analysisDir('cluster'),
    };
  }
  const file = input;
  if (!existsSync(file)) throw new LobesError('no such file or run directory', { file });
  checkRegularFile(file, 'matrix file');
  let X: Float32Array;
  let n: number;
  let d: number;
  if (/\.npy$/i.test(file)) {
    if (opts.point !== undefined) throw new UsageError(`--point ${opts.point}: a .npy file holds one matrix, there is nothing to pick`, 'drop --point');
    const m = readNpy(file);
    X = m.data;
    n = m.rows;
    d = m.cols;
  } else if (/\.safetensors$/i.test(file)) {
    const h = readSafetensorsHeader(file);
    const names = [...h.tensors.keys()];
    const name = opts.point !== undefined ? (h.tensors.has(opts.point) ? opts.point : undefined) : names.length === 1 ? names[0] : undefined;
    if (!name) {
      throw new LobesError(`${opts.point !== undefined ? `no tensor ${JSON.stringify(opts.point)}; ` : ''}the file holds ${names.length} tensor${names.length === 1 ? '' : 's'} (${names.slice(0, 8).join(', ')}${names.length > 8 ? ', …' : ''})`, {
        file,
        hint: 'pick one with --point NAME',
      });
    }
    const t = h.tensors.get(name)!;
    if (t.shape.length !== 2) throw new LobesError(`tensor has shape [${t.shape.join(', ')}]; a matrix [N, d] is needed`, { file, where: name });
    X = readTensorFloat32(h, name);
    [n, d] = t.shape;
  } else {
    throw new LobesError('not a run directory, .npy or .safetensors file', { file });
  }
  if (!opts.labels) throw new LobesError('a matrix input needs --labels FILE (one label per line, one line per row)', { file });
  checkRegularFile(opts.labels, 'labels file');
  const labels = readLabelsFile(opts.labels);
  const base = path.basename(file).replace(/\.(npy|safetensors)$/i, '');
  return {
    kind: 'matrix',
    source: path.resolve(file),
    X,
    n,
    d,
    ids: Array.from({ length: n }, (_, i) => String(i)),
    labels,
    labelsWhere: opts.labels,
    outDir: opts.out ?? path.join(path.dirname(file), `${base}.cluster`),
    inputSha256: { matrix: hashFileCached(file, { what: 'matrix file' }).sha256, labels: createHash('sha256').update(readFileSync(opts.labels)).digest('hex') },
  };
}

function validate(inp: LoadedInput): void {
  if (inp.labels.length !== inp.n) {
    throw new LobesError(`label count mismatch: ${inp.labels.length} labels for ${inp.n} rows`, { file: inp.labelsWhere, hint: 'give one label per matrix row' });
  }
  const { X, n, d } = inp;
  for (let t = 0; t < n * d; t++) {
    if (!Number.isFinite(X[t])) {
      const row = Math.floor(t / d);
      throw new LobesError(`${Number.isNaN(X[t]) ? 'NaN' : 'infinite value'} in the matrix at row ${row} (id ${inp.ids[row]}), column ${t % d}`, { file: inp.source });
    }
  }
  const classes = new Set(inp.labels);
  if (classes.size < 2) {
    throw new LobesError(`fewer than 2 classes: every row has the label ${JSON.stringify(inp.labels[0] ?? '')}`, { file: inp.labelsWhere, hint: 'separation needs at least two label values' });
  }
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

function take(X: Float32Array | Float64Array, d: number, rows: Int32Array): Float64Array {
  const out = new Float64Array(rows.length * d);
  rows.forEach((r, i) => {
    for (let j = 0; j < d; j++) out[i * d + j] = X[r * d + j];
  });
  return out;
}

/** Elapsed seconds per stage, in the order the stages ran. */
class Laps {
  readonly timings: Record<string, number> = {};
  private t0 = performance.now();

  /** Record the time since the previous lap under `name`. */
  lap(name: string): void {
    const t = performance.now();
    this.timings[name] = Math.round(t - this.t0) / 1000;
    this.t0 = t;
  }
}

/** Labels coded 0..C-1 in sorted order of their values. */
interface Coded {
  classes: string[];
  codes: Int32Array;
}

/** PCA (or none) of a matrix; uses the worker threads for wide matrices. */
type RunPca = (M: Float32Array, rows: number, dim: number, k: number, po: PcaOptions) => Promise<PcaResult> | PcaResult;

/** The features t-SNE and the probe see: PCA scores, or the matrix itself. */
interface Features {
  feats: Float64Array;
  fd: number;
  explained: number;
}

/** The t-SNE result and the settings it ran with. */
interface Embedding {
  Y: Float64Array;
  kl: number;
  opts: Tsne['opts'];
}

/** The seeded stratified subsample the metrics use and the metric settings. */
interface MetricSample {
  rows: Int32Array;
  m: number;
  /** Class codes of the sampled rows. */
  sub: Int32Array;
  mopts: Required<Pick<MetricOptions, 'k' | 'bootstrap' | 'permutations' | 'probePermutations' | 'seed'>> & { probe: { folds: number } };
}

/** What every stage of runCluster reads. */
interface Stage {
  opts: ClusterOptions;
  inp: LoadedInput;
  coded: Coded;
  seed: number;
  pool: ClusterPool | null;
  runPca: RunPca;
  laps: Laps;
  say: (m: string) => void;
}

/**
 * Run PCA, t-SNE and the metrics; write the results unless `noWrite`.
 *
 * Stages: load and check the input; PCA; t-SNE; the separation metrics on a subsample; the
 * layer sweep; the results and their files.
 */
export async function runCluster(input: RunReader | string, opts: ClusterOptions = {}): Promise<ClusterResult> {
  const laps = new Laps();
  const say = (m: string) => {
    if (!opts.quiet) process.stderr.write(`cluster: ${m}\n`);
  };
  const seed = opts.seed ?? 0;
  const perplexity = opts.perplexity ?? 30;
  // A perplexity is 2 to the entropy of a distribution: at least 1.
  if (!(perplexity >= 1) || !Number.isFinite(perplexity)) throw new UsageError(`--perplexity must be a number of at least 1 (the effective number of neighbours), got ${perplexity}`, 'typical values are 5 to 50');
  const inp = await loadInput(input, opts);
  validate(inp);
  checkPerplexity(perplexity, inp.n);
  laps.lap('load');
  const coded = encodeLabels(inp.labels);
  // worker threads for PCA, kNN and the gradient (results do not depend on their number)
  const threads = opts.threads ?? (await defaultThreads());
  const pool = threads > 1 && inp.n >= 2000 ? await ClusterPool.start(threads - 1) : null;
  const runPca: RunPca = (M, rows, dim, k, po) => (pool && dim > 256 ? pcaParallel(M, rows, dim, k, po, pool) : pca(M, rows, dim, k, po));
  const st: Stage = { opts, inp, coded, seed, pool, runPca, laps, say };
  try {
    const features = await reduce(st);
    laps.lap('pca');
    const emb = await embed(st, features, perplexity, threads);
    laps.lap('tsne');
    say(`KL divergence ${emb.kl.toFixed(4)}`);
    const sample = metricSample(st);
    const spaces = await separation(st, features, emb, sample);
    let sweep: ClusterMetrics['sweep'];
    if (opts.sweep) {
      sweep = await layerSweep(st, sample);
      laps.lap('sweep');
    }
    const result = clusterResult(st, perplexity, features, emb, sample, spaces, sweep);
    if (!opts.noWrite) {
      result.outDir = inp.outDir;
      await writeOutputs(result.outDir, result.settings, result.coords, result.metrics);
      say(`wrote ${result.outDir}`);
    }
    return result;
  } finally {
    await pool?.close();
  }
}

/** Code the labels 0..C-1 in sorted order of their values. */
function encodeLabels(labels: string[]): Coded {
  const classes = [...new Set(labels)].sort();
  const codeOf = new Map(classes.map((c, i) => [c, i]));
  return { classes, codes: Int32Array.from(labels, (l) => codeOf.get(l)!) };
}

/** PCA to opts.pca dimensions (default 50) when that is fewer than the matrix has. */
async function reduce(st: Stage): Promise<Features> {
  const { X, n, d } = st.inp;
  const pcaTarget = st.opts.pca ?? 50;
  if (!(pcaTarget > 0 && pcaTarget < d)) return { feats: Float64Array.from(X), fd: d, explained: 1 };
  st.say(`PCA ${n} × ${d} -> ${Math.min(pcaTarget, n)}`);
  const r = await st.runPca(X, n, d, pcaTarget, { seed: st.seed });
  st.say(`PCA keeps ${(r.explainedVariance * 100).toFixed(1)}% of the variance`);
  return { feats: r.scores, fd: r.k, explained: r.explainedVariance };
}

/** The seeded t-SNE embedding of the features. */
async function embed(st: Stage, f: Features, perplexity: number, threads: number): Promise<Embedding> {
  const { opts, seed, pool } = st;
  const tsne = await Tsne.create(f.feats, st.inp.n, f.fd, { perplexity, seed, theta: opts.theta, iterations: opts.iterations, earlyExaggeration: opts.earlyExaggeration, threads, pool: pool ?? undefined }, (s) => st.say(s));
  try {
    tsne.init();
    const prog = new Progress({ label: 'cluster t-SNE', total: tsne.opts.iterations, unit: 'iterations', quiet: opts.quiet });
    await tsne.run(() => prog.tick(1));
    prog.finish();
    return { Y: tsne.embedding, kl: tsne.klDivergence(), opts: tsne.opts };
  } finally {
    await tsne.close();
  }
}

/** The rows the metrics use (a seeded stratified subsample of at most opts.maxMetricPoints) and their settings. */
function metricSample(st: Stage): MetricSample {
  const { opts, coded, seed } = st;
  const rows = stratifiedSample(coded.codes, coded.classes.length, opts.maxMetricPoints ?? 2000, seed);
  const sub = Int32Array.from(rows, (r) => coded.codes[r]);
  const B = opts.bootstrap ?? 1000;
  const R = opts.permutations ?? 200;
  const Rp = opts.probePermutations ?? Math.min(R, 50);
  return { rows, m: rows.length, sub, mopts: { k: opts.knnK ?? 10, bootstrap: B, permutations: R, probePermutations: Rp, seed, probe: { folds: opts.folds ?? 5 } } };
}

/** Separation metrics in the original space (cosine, euclidean) and in the embedding. */
async function separation(st: Stage, f: Features, emb: Embedding, sample: MetricSample): Promise<SpaceMetrics[]> {
  const { inp, pool, laps, say, seed } = st;
  const { classes } = st.coded;
  const { d } = inp;
  const { rows, m, sub, mopts } = sample;
  const { bootstrap: B, permutations: R, probePermutations: Rp } = mopts;
  const Xs = take(inp.X, d, rows);
  const Fs = take(f.feats, f.fd, rows);
  const Ys = take(emb.Y, 2, rows);
  const spaces: SpaceMetrics[] = [];
  say(`metrics on ${m} points (${B} bootstrap resamples, ${R} permutations, ${Rp} for the probe)`);
  // the probe's permutations retrain every fold: spread them over the worker threads
  const probeNull = async (F: Float64Array, fdim: number): Promise<Float64Array | undefined> =>
    pool && Rp > 0 ? pool.probeAccuracies(F, m, fdim, probePermutationLabels(sub, Rp, seed), classes.length, { ...mopts.probe, seed }) : undefined;
  // so do the silhouette permutations (O(m²) each)
  const perms = pool && R > 0 ? permutationLabels(sub, R, seed) : null;
  const silNull = async (D: Float64Array) => (pool && perms ? pool.silhouettes(D, m, perms, classes.length) : undefined);
  laps.lap('metrics-setup');
  say(`original-space distances (${m} × ${m}, d = ${d})`);
  const G = pool ? await pool.gramDistances(Xs, m, d) : gramDistances(Xs, m, d);
  laps.lap('metrics-distances');
  say('metrics 1/3: original-cosine');
  spaces.push(spaceMetrics({ space: 'original-cosine', X: Xs, d, distance: 'cosine', probe: null, D: G.cosine, silhouetteNull: await silNull(G.cosine) }, m, sub, classes, mopts));
  laps.lap('metrics-original-cosine');
  say(`metrics 2/3: original-euclidean (the probe retrains ${Rp} permutations × ${mopts.probe.folds} folds)`);
  spaces.push(
    spaceMetrics(
      { space: 'original-euclidean', X: Xs, d, distance: 'euclidean', probe: { X: Fs, d: f.fd }, D: G.euclidean, probeNull: await probeNull(Fs, f.fd), silhouetteNull: await silNull(G.euclidean) },
      m,
      sub,
      classes,
      mopts,
    ),
  );
  laps.lap('metrics-original-euclidean');
  say('metrics 3/3: embedding');
  const DY = distanceMatrix(Ys, m, 2, 'euclidean');
  spaces.push(spaceMetrics({ space: 'embedding', X: Ys, d: 2, distance: 'euclidean', probe: { X: Ys, d: 2 }, D: DY, probeNull: await probeNull(Ys, 2), silhouetteNull: await silNull(DY) }, m, sub, classes, mopts));
  laps.lap('metrics-embedding');
  return spaces;
}

/** The run's residual-stream capture points (layers.{i}.resid_out), in layer order. */
function residHooks(run: RunReader): HookInfo[] {
  return run
    .hooks()
    .map((h) => ({ h, hook: parseHook(h.name) }))
    .filter((x) => x.hook?.site === 'resid_out')
    .sort((a, b) => compareHooks(a.hook!, b.hook!))
    .map((x) => x.h);
}

/** Probe accuracy (with its bootstrap CI) at every layer's residual stream, on the metric sample. */
async function layerSweep(st: Stage, sample: MetricSample): Promise<NonNullable<ClusterMetrics['sweep']>> {
  const { inp, opts, seed } = st;
  if (!inp.run) throw new LobesError('--sweep needs a run directory (a matrix file has one layer)');
  const layers = residHooks(inp.run);
  if (layers.length === 0) throw new LobesError('--sweep: the run has no layers.{i}.resid_out capture points', { file: inp.source, hint: 'extract with --capture resid' });
  const { rows, m, sub, mopts } = sample;
  const pcaTarget = opts.pca ?? 50;
  const sweep: NonNullable<ClusterMetrics['sweep']> = [];
  const prog = new Progress({ label: 'cluster sweep', total: layers.length, unit: 'layers', quiet: opts.quiet });
  for (const h of layers) {
    const L = await inp.run.read(h.name, rows);
    for (let t = 0; t < L.length; t++) if (!Number.isFinite(L[t])) throw new LobesError(`non-finite value at row ${rows[Math.floor(t / h.dim)]}`, { file: inp.source, where: h.name });
    const k = Math.min(pcaTarget > 0 ? pcaTarget : h.dim, h.dim, m);
    const P = k < h.dim ? (await st.runPca(L, m, h.dim, k, { seed })).scores : Float64Array.from(L);
    const r = probeAccuracy(P, m, k, sub, st.coded.classes.length, mopts.bootstrap, seed, { folds: opts.folds ?? 5 });
    sweep.push({ point: h.name, probeAccuracy: r.value, ci95: r.ci95 });
    prog.tick(1);
  }
  prog.finish();
  return sweep;
}

/** Settings, coordinates and metrics as written (outDir is set by the caller when it writes). */
function clusterResult(st: Stage, perplexity: number, f: Features, emb: Embedding, sample: MetricSample, spaces: SpaceMetrics[], sweep: ClusterMetrics['sweep']): ClusterResult {
  const { opts, inp, seed } = st;
  const { classes } = st.coded;
  const { n, d } = inp;
  const { m, sub, mopts } = sample;
  const probeFolds = Math.max(2, Math.min(opts.folds ?? 5, ...classes.map((_, c) => sub.filter((v) => v === c).length)));
  const settings: ClusterSettings = {
    point: inp.kind === 'run' ? opts.point ?? FINAL_HIDDEN : opts.point ?? '',
    by: inp.kind === 'run' ? opts.by ?? 'aspect' : path.resolve(opts.labels!),
    seed,
    perplexity,
    pcaDims: f.fd < d ? f.fd : 0,
    theta: emb.opts.theta,
    iterations: emb.opts.iterations,
    earlyExaggeration: emb.opts.earlyExaggeration,
    bootstrap: mopts.bootstrap,
    permutations: mopts.permutations,
    source: inp.source,
    learningRate: emb.opts.learningRate,
    exaggerationIterations: emb.opts.exaggerationIterations,
    knnK: mopts.k,
    probeFolds,
    probePermutations: mopts.probePermutations,
    metricSample: m,
    input: inp.kind,
    lobesVersion: LOBES_VERSION,
    ...(inp.run ? { provenance: analysisProvenance(inp.run) } : {}),
    ...(inp.inputSha256 ? { inputSha256: inp.inputSha256 } : {}),
  };
  const coords: ClusterCoords = { ids: inp.ids, labels: inp.labels, xy: Array.from(emb.Y), ...(inp.text ? { text: inp.text } : {}) };
  const metrics: ClusterMetrics = {
    classes,
    n,
    dim: d,
    pcaExplainedVariance: f.explained,
    klDivergence: emb.kl,
    spaces,
    ...(sweep ? { sweep } : {}),
    klMethod: n <= 5000 || emb.opts.theta === 0 ? 'exact' : 'barnes-hut',
    pcaDims: f.fd,
    metricSample: m,
    timings: st.laps.timings,
  };
  return { settings, coords, metrics, outDir: null };
}


/** Metrics as CSV rows: space,metric,value,ci_low,ci_high,p. */
export function metricsCsv(metrics: ClusterMetrics): string {
  const lines = ['space,metric,value,ci_low,ci_high,p'];
  const num = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  for (const s of metrics.spaces) {
    const main: [string, { value: number; ci95: [number, number] | null; p: number | null } | null][] = [
      ['silhouette', s.silhouette],
      ['knn_accuracy', s.knnAccuracy],
      ['probe_accuracy', s.probeAccuracy],
      ['davies_bouldin', s.daviesBouldin],
    ];
    for (const [name, m] of main) if (m) lines.push([s.space, name, num(m.value), num(m.ci95?.[0]), num(m.ci95?.[1]), num(m.p)].join(','));
    for (const c of s.perClass) {
      lines.push([s.space, csvField(`silhouette:${c.label}`), num(c.silhouette), '', '', ''].join(','));
      lines.push([s.space, csvField(`knn_recall:${c.label}`), num(c.knnRecall), '', '', ''].join(','));
    }
  }
  for (const w of metrics.sweep ?? []) lines.push(['sweep', csvField(`probe_accuracy:${w.point}`), num(w.probeAccuracy), num(w.ci95?.[0]), num(w.ci95?.[1]), ''].join(','));
  lines.push(['embedding', 'kl_divergence', num(metrics.klDivergence), '', '', ''].join(','));
  return lines.join('\n') + '\n';
}

/** Write the result folder whole (writeDirAtomic): a failure leaves the previous result untouched. */
async function writeOutputs(dir: string, settings: ClusterSettings, coords: ClusterCoords, metrics: ClusterMetrics): Promise<void> {
  const csv = ['id,label,x,y'];
  for (let i = 0; i < coords.ids.length; i++) csv.push([csvField(coords.ids[i]), csvField(coords.labels[i]), coords.xy[2 * i], coords.xy[2 * i + 1]].join(','));
  await writeDirAtomic(
    dir,
    (tmp) => {
      writeFileAtomicSync(path.join(tmp, 'settings.json'), JSON.stringify(settings, null, 2) + '\n');
      writeFileAtomicSync(path.join(tmp, 'coords.json'), JSON.stringify(coords) + '\n');
      writeFileAtomicSync(path.join(tmp, 'coords.csv'), csv.join('\n') + '\n');
      writeFileAtomicSync(path.join(tmp, 'metrics.csv'), metricsCsv(metrics));
      if (metrics.sweep) writeFileAtomicSync(path.join(tmp, 'sweep.json'), JSON.stringify(metrics.sweep, null, 2) + '\n');
      writeFileAtomicSync(path.join(tmp, 'metrics.json'), JSON.stringify(metrics, null, 2) + '\n');
    },
    // An earlier result of lobes cluster (it has settings.json) is replaced; any other folder is refused.
    { replaces: (d) => existsSync(path.join(d, 'settings.json')) },
  );
}
