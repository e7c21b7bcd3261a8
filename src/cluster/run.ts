/**
 * The `lobes cluster` command: seeded t-SNE of one capture point (or a plain matrix) and
 * numbers for how well a label separates, in the original space (cosine and euclidean) and
 * in the embedding.
 *
 *   const { settings, coords, metrics } = await runCluster('runs/8b', { input: { by: 'aspect' } });
 *
 * Options: ClusterOptions (src/cluster/options.ts), grouped as input, tsne, probe, metrics,
 * baselines, output and execution beside the seed; the stages read them laid flat.
 *
 * Writes RUN/cluster/ (or output.dir; for a matrix file, NAME.cluster/ beside it): settings.json,
 * coords.json, coords.csv, metrics.json, metrics.csv and, with `probe.sweep`, sweep.json. Everything
 * is computed before anything is written, and the folder is written whole (writeDirAtomic):
 * a failure leaves the previous result as it was. settings.json records the provenance of
 * the input (run identity, samples table and chunk files; or the matrix and labels sha256).
 *
 * Long file: the command's stages (input, option checks, t-SNE, metrics, probes with their
 * paired comparisons, sweep, outputs) share the resolved options and read top to bottom like
 * the command; the algorithms live in their own modules.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { csvField } from '../util/csv.js';
import { LobesError, UsageError, opt, throwIfAborted } from '../util/errors.js';
import { Progress } from '../util/progress.js';
import { jobIO, type JobIO } from '../util/jobio.js';
import { checkRegularFile, writeDirAtomic } from '../util/io.js';
import { checkOutputDir } from '../util/output.js';
import { analysisProvenance } from '../store/provenance.js';
import { hashFileCached } from '../store/filehash.js';
import { defaultThreads } from '../util/worker.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../formats/safetensors.js';
import { LOBES_VERSION } from '../version.js';
import { FINAL_HIDDEN, parseHook, sitePool } from '../hooks.js';
import type { RunReader } from '../store/types.js';
import type { BaselineMetrics, ClassifierMetrics, ClusterCoords, ClusterItems, ClusterMetrics, ClusterSettings,
  IncrementalMetrics, ProbeComparison, SpaceMetrics, SweepPoint } from './types.js';
import { permutationDesign } from './metrics.js';
import { readNpy } from './npy.js';
import { clusterDir, writeClusterFiles } from './store.js';
import { previousSettings } from '../store/analyses.js';
import { externalFileInput, runInputs, type LineageInput } from '../store/lineage.js';
import { pca, pcaParallel } from './pca.js';
import { ClusterPool } from './pool.js';
import { Tsne } from './tsne-pca.js';
import { checkPerplexity } from '../tsne/affinity.js';
import { chanceOf, checkSweepInput, METRICS_CSV_HEADER, layerSweep, stratifiedSample, metricsCsvRows, separation,
  type Coded, type Features, type MeasureContext, type MetricSample, type RunPca } from './measure.js';
import { baselineModelDir, baselineModelInput, lengthControl, tokenBaselines } from './baseline.js';
import { probeSettings } from './probecv.js';
import { adjustFamilies } from './multiplicity.js';
import { residHooks } from './measure.js';
import { planPermutations, type PermutationPlan } from '../util/resolution.js';
import { GROUP_AXIS } from '../data/generic.js';
import { flatOptions, type ClusterOptions, type StageOptions } from './options.js';

export type { ClusterOptions } from './options.js';

export interface ClusterResult {
  settings: ClusterSettings;
  coords: ClusterCoords;
  metrics: ClusterMetrics;
  /** Directory written (null with noWrite). */
  outDir: string | null;
  /** Per-item predictions of the metric sample (also written as items.json). */
  items?: ClusterItems;
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
  /** The group of each row (on `groupAxis`), when the probes are grouped. */
  groupOf?: string[];
  groupAxis?: string;
  /** The run rows of X's rows when some were left out (no value on the axis). */
  runRows?: Int32Array;
  /** Items left out for having no value on the axis, by the value they read as. */
  leftOut?: NonNullable<ClusterSettings['leftOut']>;
}

/** The default number of PCA components the probe is fitted on. */
export const DEFAULT_PROBE_PCA = 50;

export { stratifiedSample } from './measure.js';

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
    if (l.trim() === '')
      throw new LobesError('empty label', { file, where: `line ${i + 1}`,
        hint: 'every row of the matrix needs a label' });
  });
  return lines;
}

async function loadInput(input: RunReader | string, opts: StageOptions): Promise<LoadedInput> {
  if (typeof input !== 'string' || (existsSync(input) && statSync(input).isDirectory())) {
    let run: RunReader;
    if (typeof input === 'string') {
      const { openRun } = await import('../store/index.js');
      run = await openRun(input);
    } else run = input;
    const point = opts.point ?? FINAL_HIDDEN;
    const by = opts.by ?? 'aspect';
    const info = run.hook(point);
    const all = run.labels(by);
    // Only labelled items are compared: rows without a value on the axis (an empty label, or
    // "unevaluated" after eval label) are left out of the analysis, and counted.
    const has = run.labelled?.(by) ?? all.map((l) => l !== '' && l !== undefined);
    const keep = all.map((_, i) => i).filter((i) => has[i]);
    const leftOut = all.length - keep.length;
    const runRows = leftOut ? Int32Array.from(keep) : undefined;
    const X = await run.read(point, runRows);
    const pick = <T>(xs: T[]): T[] => (runRows ? Array.from(runRows, (r) => xs[r]!) : xs);
    const labels = pick(all);
    const n = labels.length;
    const text = pick(run.samples.map((s) => s.text ?? ''));
    // the items' groups: --group AXIS, else the axis a dataset's group=FIELD wrote (null: none)
    const groupAxis = opts.group === null
      ? undefined
      : opts.group ?? (run.labelAxes().includes(GROUP_AXIS) && by !== GROUP_AXIS ? GROUP_AXIS : undefined);
    if (groupAxis !== undefined && !run.labelAxes().includes(groupAxis))
      throw new UsageError(
        `${opt('group', String(opts.group))}: the run has no label axis ${JSON.stringify(opts.group)} (axes: ${
          run.labelAxes().join(', ')
        })`,
        "name the axis that holds each item's group",
      );
    const groupOf = groupAxis !== undefined ? pick(run.labels(groupAxis)) : undefined;
    const values: Record<string, number> = {};
    all.forEach((l, i) => {
      if (!has[i]) values[l || '(empty)'] = (values[l || '(empty)'] ?? 0) + 1;
    });
    return {
      kind: 'run',
      source: run.dir,
      X,
      n,
      d: info.dim,
      ids: pick(run.samples.map((s) => s.id)),
      labels,
      ...(runRows ? { runRows, leftOut: { count: leftOut, of: all.length, values } } : {}),
      ...(groupOf ? { groupOf, groupAxis } : {}),
      text: text.some((t) => t.length > 0) ? text : undefined,
      run,
      labelsWhere: `label axis ${JSON.stringify(by)}`,
      // one folder per label axis and capture point (RUN/cluster, RUN/cluster.by-correct, ...)
      outDir: opts.out ?? clusterDir(run.dir, { manifest: run.manifest, by, point }),
    };
  }
  const file = input;
  if (!existsSync(file)) throw new LobesError('no such file or run directory', { file });
  checkRegularFile(file, 'matrix file');
  let X: Float32Array;
  let n: number;
  let d: number;
  if (/\.npy$/i.test(file)) {
    if (opts.point !== undefined)
      throw new UsageError(`${opt('point', opts.point)}: a .npy file holds one matrix, there is nothing to pick`,
        `drop ${opt('point')}`);
    const m = readNpy(file);
    X = m.data;
    n = m.rows;
    d = m.cols;
  } else if (/\.safetensors$/i.test(file)) {
    const h = readSafetensorsHeader(file);
    const names = [...h.tensors.keys()];
    const name = opts.point !== undefined
      ? (h.tensors.has(opts.point) ? opts.point : undefined)
      : names.length === 1
      ? names[0]
      : undefined;
    if (!name) {
      throw new LobesError(
        `${
          opts.point !== undefined ? `no tensor ${JSON.stringify(opts.point)}; ` : ''
        }the file holds ${names.length} tensor${names.length === 1 ? '' : 's'} (${names.slice(0, 8).join(', ')}${
          names.length > 8 ? ', …' : ''
        })`,
        {
          file,
          hint: `pick one with ${opt('point', 'NAME')}`,
        },
      );
    }
    const t = h.tensors.get(name)!;
    if (t.shape.length !== 2)
      throw new LobesError(`tensor has shape [${t.shape.join(', ')}]; a matrix [N, d] is needed`, { file,
        where: name });
    X = readTensorFloat32(h, name);
    [n, d] = t.shape;
  } else {
    throw new LobesError('not a run directory, .npy or .safetensors file', { file });
  }
  if (!opts.labels)
    throw new LobesError(`a matrix input needs ${opt('labels', 'FILE')} (one label per line, one line per row)`, {
      file,
    });
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
    inputSha256: { matrix: hashFileCached(file, { what: 'matrix file' }).sha256,
      labels: createHash('sha256').update(readFileSync(opts.labels)).digest('hex') },
  };
}

function validate(inp: LoadedInput): void {
  if (inp.labels.length !== inp.n) {
    throw new LobesError(`label count mismatch: ${inp.labels.length} labels for ${inp.n} rows`, { file: inp.labelsWhere,
      hint: 'give one label per matrix row' });
  }
  const { X, n, d } = inp;
  for (let t = 0; t < n * d; t++) {
    if (!Number.isFinite(X[t])) {
      const row = Math.floor(t / d);
      throw new LobesError(
        `${Number.isNaN(X[t]) ? 'NaN' : 'infinite value'} in the matrix at row ${row} (id ${inp.ids[row]}), column ${
          t % d
        }`,
        { file: inp.source },
      );
    }
  }
  const classes = new Set(inp.labels);
  if (classes.size < 2) {
    throw new LobesError(`fewer than 2 classes: every row has the label ${JSON.stringify(inp.labels[0] ?? '')}`, {
      file: inp.labelsWhere,
      hint: 'separation needs at least two label values',
    });
  }
}

/** Elapsed seconds per stage, in the order the stages ran, and the CPU seconds of the process (all threads) in each. */
class Laps {
  readonly timings: Record<string, number> = {};
  readonly cpu: Record<string, number> = {};
  private t0 = performance.now();
  private c0 = cpuSeconds();

  /** Record the time since the previous lap under `name`. */
  lap(name: string): void {
    const t = performance.now();
    const c = cpuSeconds();
    this.timings[name] = Math.round(t - this.t0) / 1000;
    this.cpu[name] = Math.round((c - this.c0) * 1000) / 1000;
    this.t0 = t;
    this.c0 = c;
  }
}

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** The t-SNE result and the settings it ran with. */
interface Embedding {
  Y: Float64Array;
  kl: number;
  opts: Tsne['opts'];
  neighbourRecall: Tsne['neighbourRecall'];
  fftIterations: number;
}

/** What every stage of runCluster reads. */
interface Stage {
  opts: StageOptions;
  inp: LoadedInput;
  coded: Coded;
  seed: number;
  pool: ClusterPool | null;
  runPca: RunPca;
  laps: Laps;
  io: JobIO;
  /** A log line of the command (`cluster: ` before it). */
  say: (m: string) => void;
}

/** What the measuring stages (measure.ts) need from a stage. */
function context(st: Stage): MeasureContext {
  const { inp, coded, seed, pool, runPca, say, laps, io } = st;
  return { X: inp.X, n: inp.n, d: inp.d, coded, seed, pool, runPca, io, say, lap: (name) => laps.lap(name) };
}

/**
 * Run t-SNE and the metrics; write the results unless `output.noWrite`.
 *
 * Stages: load and check the input; PCA (only with `pca`); t-SNE; the separation metrics on a
 * subsample; the token baselines and the length control (run input); the layer sweep; the
 * results and their files.
 */
export async function runCluster(input: RunReader | string, options: ClusterOptions = {}): Promise<ClusterResult> {
  const opts = flatOptions(options);
  const laps = new Laps();
  const io = jobIO(opts);
  const say = (m: string) => io.log(`cluster: ${m}`);
  const seed = opts.seed ?? 0;
  const perplexity = opts.perplexity ?? 30;
  // A perplexity is 2 to the entropy of a distribution: at least 1.
  if (!(perplexity >= 1) || !Number.isFinite(perplexity))
    throw new UsageError(
      `${opt('perplexity')} must be a number of at least 1 (the effective number of neighbours), got ${perplexity}`,
      'typical values are 5 to 50',
    );
  const inp = await loadInput(input, opts);
  validate(inp);
  if (opts.group !== undefined && opts.group !== null && !inp.run)
    throw new UsageError(`${opt('group')} names a label axis of a run; a matrix has none`, `drop ${opt('group')}`);
  if (opts.model !== undefined && !inp.run)
    throw new UsageError(`${opt('model')} names the model folder of a run (for its token baselines); a matrix has none`,
      `drop ${opt('model')}`);
  if (opts.sweep) checkSweepInput(inp.run, inp.source, sweepPool(opts, inp)); // not after the t-SNE
  // checked before the long stages: a wrong folder fails at once, not after the t-SNE
  const baselineDir = inp.run && opts.baselines !== false ? baselineModelDir(inp.run, opts.model) : undefined;
  checkPerplexity(perplexity, inp.n);
  // the output folder is checked before the long stages too (writeOutputs checks it again)
  if (!opts.noWrite) checkOutputDir(inp.outDir, 'cluster');
  // a stage ends: its time taken, and the job cancelled here when io.signal asks (nothing is written before the end)
  const stage = (name: string) => {
    laps.lap(name);
    throwIfAborted(io.signal, 'lobes cluster', `after its ${name} stage`);
  };
  stage('load');
  const coded = encodeLabels(inp.labels);
  // worker threads for PCA, kNN and the gradient (results do not depend on their number)
  const threads = opts.threads ?? (await defaultThreads());
  const pool = threads > 1 && inp.n >= 2000 ? await ClusterPool.start(threads - 1) : null;
  const runPca: RunPca = (M, rows, dim, k,
    po) => (pool && dim > 256 ? pcaParallel(M, rows, dim, k, po, pool) : pca(M, rows, dim, k, po));
  const st: Stage = { opts, inp, coded, seed, pool, runPca, laps, io, say };
  if (inp.leftOut)
    say(
      `left out ${inp.leftOut.count} of ${inp.leftOut.of} items without a value on ${inp.labelsWhere} (${
        Object.entries(inp.leftOut.values).map(([v, c]) => `${v}: ${c}`).join(', ')
      }); the analysis compares the other ${inp.n}`,
    );
  try {
    const features = await reduce(st);
    stage('pca');
    const emb = await embed(st, features, perplexity, threads);
    stage('tsne');
    say(`KL divergence ${emb.kl.toFixed(4)}`);
    const sample = metricSample(st);
    const ctx = context(st);
    const sep = await separation(ctx, emb.Y, sample);
    const items: ClusterItems = { ids: Array.from(sample.rows, (r) => inp.ids[r]), classes: coded.classes,
      y: Array.from(sample.sub), spaces: sep.items, baselines: [] };
    const extra: Extra = { notes: [], baselines: [], controls: [], incremental: [], comparisons: [] };
    if (inp.run && opts.baselines !== false) {
      say('token baselines');
      const state = sep.probeCv ? { name: settingsPoint(opts, inp), X: sep.Xs, d: inp.d, cv: sep.probeCv } : undefined;
      const b = await tokenBaselines(ctx, inp.run, runSample(inp, sample), baselineDir, state);
      extra.baselines = b.baselines;
      extra.incremental = b.incremental;
      extra.comparisons.push(...b.comparisons);
      extra.notes.push(...b.notes);
      items.baselines = b.items;
      for (const n of b.notes) say(n);
      stage('baselines');
    }
    if (inp.run && opts.baselines !== false && opts.lengthControl !== false) {
      // the length control: the items' token counts from the samples table (no model folder needed)
      say('length control');
      const state = sep.probeCv ? { name: settingsPoint(opts, inp), X: sep.Xs, d: inp.d, cv: sep.probeCv } : undefined;
      const lc = await lengthControl(ctx, inp.run, runSample(inp, sample), state);
      extra.controls = lc.controls;
      extra.incremental.push(...lc.incremental);
      extra.comparisons.push(...lc.comparisons);
      extra.notes.push(...lc.notes);
      if (lc.items.length) items.controls = lc.items;
      for (const n of lc.notes) say(n);
      stage('length-control');
    }
    if (opts.sweep) {
      // a mean-pooled point sweeps the mean-pooled stream, so that every layer is read the same way
      const sw = await layerSweep(ctx, inp.run, inp.source, runSample(inp, sample), sweepPool(opts, inp));
      extra.sweep = sw.sweep;
      extra.comparisons.push(...sw.comparisons);
      items.sweep = sw.items;
      stage('sweep');
    }
    for (const n of gridEdgeNotes(sep.spaces, [...extra.baselines, ...extra.controls])) {
      extra.notes.push(n);
      say(`warning: ${n}`);
    }
    const result = clusterResult(st, perplexity, features, emb, sample, sep.spaces, extra);
    throwIfAborted(io.signal, 'lobes cluster', 'before writing its outputs');
    if (!opts.noWrite) {
      result.outDir = inp.outDir;
      const inputs = inp.run
        ? [...runInputs(inp.run), ...baselineModelInput(inp.run, baselineDir)]
        : matrixInputs(inp, opts);
      const replaced = describeReplaced(result.outDir, result.settings);
      // said even with --quiet: a replaced analysis is never silent
      if (replaced) io.warn(`cluster: replacing ${result.outDir} (${replaced})`);
      await writeOutputs(result.outDir, result.settings, result.coords, result.metrics, items, inputs);
      say(`wrote ${result.outDir}`);
    }
    result.items = items;
    return result;
  } finally {
    await pool?.close();
  }
}

/** What runCluster adds to the metrics after the three spaces. */
interface Extra {
  sweep?: SweepPoint[];
  baselines: BaselineMetrics[];
  /** The controls outside the verdict's family (`length`). */
  controls: BaselineMetrics[];
  notes: string[];
  incremental: IncrementalMetrics[];
  comparisons: ProbeComparison[];
}

/** The capture point as settings.json records it. */
function settingsPoint(opts: StageOptions, inp: LoadedInput): string {
  return inp.kind === 'run' ? opts.point ?? FINAL_HIDDEN : opts.point ?? '';
}

/** Code the labels 0..C-1 in sorted order of their values. */
function encodeLabels(labels: string[]): Coded {
  const classes = [...new Set(labels)].sort();
  const codeOf = new Map(classes.map((c, i) => [c, i]));
  return { classes, codes: Int32Array.from(labels, (l) => codeOf.get(l)!) };
}

/**
 * The space t-SNE's neighbourhoods are built in: the matrix itself (default), or its top
 * opts.pca principal components when that is fewer than the matrix has.
 */
async function reduce(st: Stage): Promise<Features> {
  const { X, n, d } = st.inp;
  const pcaTarget = st.opts.pca ?? 0;
  if (!(pcaTarget > 0 && pcaTarget < d)) return { feats: Float64Array.from(X), fd: d, explained: 1 };
  st.say(`PCA ${n} × ${d} -> ${Math.min(pcaTarget, n)}`);
  const r = await st.runPca(X, n, d, pcaTarget, { seed: st.seed });
  st.say(`PCA keeps ${(r.explainedVariance * 100).toFixed(1)}% of the variance`);
  return { feats: r.scores, fd: r.k, explained: r.explainedVariance };
}

/** The seeded t-SNE embedding of the features. */
async function embed(st: Stage, f: Features, perplexity: number, threads: number): Promise<Embedding> {
  const { opts, seed, pool } = st;
  // the exact neighbour search is O(N²·d): a progress bar when it may take more than a few seconds
  const n = st.inp.n;
  const nbProg = n * n * f.fd > 2e10
    ? new Progress({ label: 'cluster neighbours', total: n, unit: 'rows', io: st.io })
    : null;
  const onNeighbours = nbProg ? (done: number) => nbProg.set(done) : undefined;
  const tsne = await Tsne.create(f.feats, n, f.fd, {
    affinity: { perplexity, neighbours: opts.neighbours },
    optimizer: { seed, theta: opts.theta, method: opts.tsneMethod, learningRate: opts.learningRate,
      iterations: opts.iterations, earlyExaggeration: opts.earlyExaggeration },
    execution: { threads, pool: pool ?? undefined, onNeighbours },
  }, (s) => st.say(s));
  nbProg?.finish();
  try {
    tsne.init();
    const prog = new Progress({ label: 'cluster t-SNE', total: tsne.opts.iterations, unit: 'iterations', io: st.io });
    await tsne.run(() => prog.tick(1));
    prog.finish();
    return { Y: tsne.embedding, kl: tsne.klDivergence(), opts: tsne.opts, neighbourRecall: tsne.neighbourRecall,
      fftIterations: tsne.fftIterations };
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
  // the sample's groups, numbered 0.. in order of first appearance
  const gOf = st.inp.groupOf;
  const gIndex = new Map<string, number>();
  let groups = gOf
    ? Int32Array.from(rows, (r) => gIndex.get(gOf[r]!) ?? (gIndex.set(gOf[r]!, gIndex.size), gIndex.size - 1))
    : undefined;
  const probe = probeSettings(opts.folds, opts.probeRepeats, opts.probeC, opts.classWeight);
  // grouped folds need a group per fold: fewer groups (a handful of SocialEval trees) leave the sample ungrouped, said
  if (groups && gIndex.size < probe.folds) {
    st.io.warn(
      `cluster: not grouped: the ${gIndex.size} group${
        gIndex.size === 1 ? '' : 's'
      } of "${st.inp.groupAxis}" are fewer than the probe's ${probe.folds} folds`,
    );
    groups = undefined;
  }
  const sizing = permutationSizing(opts, !!st.inp.run,
    st.inp.run && opts.sweep ? residHooks(st.inp.run, sweepPool(opts, st.inp)).length : 0);
  return {
    rows,
    m: rows.length,
    sub,
    mopts: { k: opts.knnK ?? 10, bootstrap: B, permutations: sizing.permutations.R,
      probePermutations: sizing.probePermutations.R, seed, probe: groups ? { ...probe, groups } : probe },
    probePca: opts.probePca ?? DEFAULT_PROBE_PCA,
    sweepPermutations: sizing.sweepPermutations?.R ?? Math.min(sizing.probePermutations.R, SWEEP_PERMUTATION_CAP),
    sizing,
  };
}

/** The default label permutations of silhouette and kNN (more than any verdict family of up to 10 needs). */
export const DEFAULT_PERMUTATIONS = 200;
/** The most permutations the probe's null gets by default: each refits every fold, so a larger family is read on z's normal approximation. */
export const PROBE_PERMUTATION_CAP = 100;
/** The most permutations per layer a sweep gets by default (every layer refits its probe R times). */
export const SWEEP_PERMUTATION_CAP = 20;

/**
 * The permutation counts of a run, each sized before it to the family its p-values are read in
 * (src/util/resolution.ts): the verdict's classifiers (the probe, kNN in the original space and in
 * the map, and with `baselines` the two token baselines) and, with `sweepLayers`, the layers of
 * the sweep. A count the options give is kept (`user`); a probe count derived from a given
 * --permutations is the smaller of that and what the family needs.
 */
export function permutationSizing(
  opts: Pick<StageOptions, 'permutations' | 'probePermutations' | 'sweepPermutations' | 'baselines'>,
  run: boolean,
  sweepLayers: number,
): NonNullable<ClusterSettings['sizing']> & { permutations: PermutationPlan; probePermutations: PermutationPlan } {
  const family = 3 + (run && opts.baselines !== false ? 2 : 0);
  const permutations = planPermutations(family, opts.permutations, Infinity, DEFAULT_PERMUTATIONS);
  let probePermutations: PermutationPlan;
  if (opts.probePermutations !== undefined || opts.permutations === undefined)
    probePermutations = planPermutations(family, opts.probePermutations, PROBE_PERMUTATION_CAP);
  else {
    const plan = planPermutations(family, undefined, Math.min(opts.permutations, PROBE_PERMUTATION_CAP));
    probePermutations = opts.permutations < plan.needed ? { ...plan, sizing: 'user' } : plan;
  }
  const sweepPermutations = sweepLayers > 0
    ? planPermutations(sweepLayers, opts.sweepPermutations, Math.min(probePermutations.R, SWEEP_PERMUTATION_CAP))
    : undefined;
  return { permutations, probePermutations, ...(sweepPermutations ? { sweepPermutations } : {}) };
}

/** The metric sample with its rows as the run's rows (they differ when unlabelled items were left out). */
function runSample(inp: LoadedInput, sample: MetricSample): MetricSample {
  const map = inp.runRows;
  return map ? { ...sample, rows: Int32Array.from(sample.rows, (r) => map[r]!) } : sample;
}

/**
 * A warning for each probe whose nested choice of C sat at an edge of its grid in at least half
 * of its folds: the best C may lie beyond the grid (the probe is then over- or under-penalized).
 */
export function gridEdgeNotes(spaces: SpaceMetrics[], baselines: BaselineMetrics[]): string[] {
  const probes: [string, ClassifierMetrics | null | undefined][] = [
    ...spaces.map((s) => [`the probe in ${s.space}`, s.probe] as [string, ClassifierMetrics | null | undefined]),
    ...baselines.map((b) => [`the ${b.name} probe`, b.probe] as [string, ClassifierMetrics]),
  ];
  const out: string[] = [];
  for (const [name, p] of probes) {
    const e = p?.cv?.gridEdge;
    const grid = p?.cv?.cGrid;
    if (!e || !grid?.length || 2 * Math.max(e.low, e.high) < e.of) continue;
    const low = e.low >= e.high;
    out.push(
      `${name} chose C = ${low ? Math.min(...grid) : Math.max(...grid)}, the ${
        low ? 'smallest' : 'largest'
      } of its grid, in ${
        low ? e.low : e.high
      } of ${e.of} folds: the best C may lie beyond the grid (--probe-c C fixes it)`,
    );
  }
  return out;
}

/** The stream a sweep reads: the mean-pooled one when the point is a mean-pooled one. */
function sweepPool(opts: StageOptions, inp: LoadedInput): 'mean' | 'last' {
  const hook = inp.kind === 'run' ? parseHook(settingsPoint(opts, inp)) : null;
  return hook && sitePool(hook.site) === 'mean' ? 'mean' : 'last';
}

/** Settings, coordinates and metrics as written (outDir is set by the caller when it writes). */
function clusterResult(st: Stage, perplexity: number, f: Features, emb: Embedding, sample: MetricSample,
  spaces: SpaceMetrics[], extra: Extra): ClusterResult
{
  const { opts, inp, seed } = st;
  const { classes } = st.coded;
  const { n, d } = inp;
  const { m, sub, mopts } = sample;
  const probeFolds = Math.max(2,
    Math.min(opts.folds ?? 5, ...classes.map((_, c) => sub.filter((v) => v === c).length)));
  const settings: ClusterSettings = {
    point: settingsPoint(opts, inp),
    by: inp.kind === 'run' ? opts.by ?? 'aspect' : path.resolve(opts.labels!),
    seed,
    perplexity,
    pcaDims: f.fd < d ? f.fd : 0,
    theta: emb.opts.theta,
    tsneMethod: emb.opts.method,
    ...(emb.opts.method === 'mixed' ? { fftIterations: emb.fftIterations } : {}),
    iterations: emb.opts.iterations,
    earlyExaggeration: emb.opts.earlyExaggeration,
    bootstrap: mopts.bootstrap,
    permutations: mopts.permutations,
    source: inp.source,
    learningRate: emb.opts.learningRate,
    ...(emb.opts.learningRateAfter !== emb.opts.learningRate ? { learningRateAfter: emb.opts.learningRateAfter } : {}),
    ...(Number.isFinite(emb.opts.maxStepNorm) ? { maxStepNorm: emb.opts.maxStepNorm } : {}),
    ...(emb.neighbourRecall ? { neighbours: 'approximate' as const, neighbourRecall: emb.neighbourRecall } : {}),
    exaggerationIterations: emb.opts.exaggerationIterations,
    knnK: mopts.k,
    probeFolds,
    probePermutations: mopts.probePermutations,
    metricSample: m,
    probePca: sample.probePca,
    ...(opts.sweep ? { sweepPermutations: sample.sweepPermutations } : {}),
    sizing: sample.sizing,
    ...(inp.leftOut ? { leftOut: inp.leftOut } : {}),
    ...(sample.mopts.probe.groups
      ? { group: groupSettings(inp.groupAxis!, sample.sub, sample.mopts.probe.groups) }
      : {}),
    baselines: extra.baselines.map((b) => b.name),
    ...(extra.controls.length ? { controls: extra.controls.map((b) => b.name) } : {}),
    input: inp.kind,
    lobesVersion: LOBES_VERSION,
    ...(inp.run ? { provenance: analysisProvenance(inp.run) } : {}),
    ...(inp.inputSha256 ? { inputSha256: inp.inputSha256 } : {}),
  };
  const coords: ClusterCoords = { ids: inp.ids, labels: inp.labels, xy: Array.from(emb.Y),
    ...(inp.text ? { text: inp.text } : {}) };
  const metrics: ClusterMetrics = {
    classes,
    n,
    dim: d,
    pcaExplainedVariance: f.explained,
    klDivergence: emb.kl,
    spaces,
    ...(extra.sweep ? { sweep: extra.sweep } : {}),
    chance: chanceOf(sub, classes),
    ...(extra.baselines.length ? { baselines: extra.baselines } : {}),
    ...(extra.controls.length ? { controls: extra.controls } : {}),
    ...(extra.incremental.length ? { incremental: extra.incremental } : {}),
    ...(extra.comparisons.length ? { comparisons: extra.comparisons } : {}),
    ...(extra.notes.length ? { notes: extra.notes } : {}),
    klMethod: n <= 5000 || emb.opts.method === 'exact'
      ? 'exact'
      : emb.opts.method === 'fft'
      ? 'fft-interpolation'
      : 'barnes-hut',
    pcaDims: f.fd,
    metricSample: m,
    timings: st.laps.timings,
    cpuTimings: st.laps.cpu,
  };
  adjustFamilies(metrics, sample.sizing); // pHolm, pBH and the verdict beside each p of a family
  return { settings, coords, metrics, outDir: null };
}

/** Metrics as CSV rows: METRICS_CSV_HEADER (src/cluster/measure.ts). */
export function metricsCsv(metrics: ClusterMetrics): string {
  return [METRICS_CSV_HEADER, ...metricsCsvRows(metrics, csvField)].join('\n') + '\n';
}

/** Write the result folder whole (writeDirAtomic): a failure leaves the previous result untouched. */
async function writeOutputs(dir: string, settings: ClusterSettings, coords: ClusterCoords, metrics: ClusterMetrics,
  items: ClusterItems, inputs: LineageInput[]): Promise<void>
{
  await writeDirAtomic(
    dir,
    (tmp) =>
      writeClusterFiles(tmp, { settings, coords, items, metrics, metricsCsv: metricsCsv(metrics), coordsCsv: true }),
    // Only an earlier result of lobes cluster (its marker, or its legacy settings.json and files) is replaced.
    { kind: 'cluster', inputs },
  );
}

/** Lineage of a matrix's analysis: the matrix file and its labels file, by content. */
function matrixInputs(inp: LoadedInput, opts: StageOptions): LineageInput[] {
  return [externalFileInput(inp.source, inp.inputSha256?.matrix),
    ...(opts.labels ? [externalFileInput(opts.labels, inp.inputSha256?.labels)] : [])];
}

/** What an earlier result in `dir` was made with, where it differs from `now` (null: none there). */
function describeReplaced(dir: string, now: ClusterSettings): string | null {
  const prev = previousSettings(dir) as Partial<ClusterSettings> | null;
  if (!prev) return null;
  const keys = ['point', 'by', 'seed', 'perplexity', 'pcaDims', 'theta', 'iterations', 'bootstrap', 'permutations',
    'probePermutations', 'metricSample', 'probePca'] as const;
  const differ = keys.filter((k) => JSON.stringify(prev[k]) !== JSON.stringify(now[k])).map((k) =>
    `${k} ${JSON.stringify(prev[k])} then, ${JSON.stringify(now[k])} now`
  );
  return differ.length ? `made with ${differ.join('; ')}` : 'the same settings, run again';
}

/** The grouping of the metric sample: its axis, its groups, and how the nulls shuffle the labels under it (metrics.ts permutationDesign). */
function groupSettings(axis: string, labels: Int32Array, groups: Int32Array): NonNullable<ClusterSettings['group']> {
  const d = permutationDesign(labels, groups);
  return { axis, groups: new Set(groups).size, null: d.kind === 'items' ? 'items' : d.kind,
    exchangeable: d.kind === 'items' ? labels.length : d.exchangeable };
}
