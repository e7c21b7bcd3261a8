/**
 * The `lobes wanda` command: Wanda importance per group, block pooling, regions, set
 * differences and their metrics against a label-permutation null, written to RUN/wanda/.
 *
 *   runWanda(run, opts) -> { settings, regions, metrics }
 *
 * Steps: (1) pick the matrices whose inputs the run captured and locate their weights
 * (the run's model, or --weights: ONNX folder/file, safetensors checkpoint or GGUF file);
 * (2) one streaming pass over the weights computes C = column sums of |W| per row block;
 * (3) the analysis (src/wanda/analyze.ts) needs only C and the activations; (4) outputs are
 * written (src/wanda/outputs.ts) into a temporary sibling folder that replaces RUN/wanda/
 * only when complete (writeDirAtomic), with the provenance of what was read: the run
 * identity, its samples table and chunk files, and the sha256 of every weight file. The run's
 * own model is verified against the hashes its manifest records before it is scored.
 */
import { nearest } from '../util/suggest.js';
import { existsSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError, opt, throwIfAborted } from '../util/errors.js';
import { Progress } from '../util/progress.js';
import { jobIO, type JobIO, type JobIOOptions } from '../util/jobio.js';
import { defaultThreads } from '../util/worker.js';
import { checkRegularFile } from '../util/io.js';
import { checkOutputDir } from '../util/output.js';
import { analysisProvenance, hashModelFiles } from '../store/provenance.js';
import { modelFiles, resolveRunModel } from '../runtime/modelfiles.js';
import { hashFilesInBackground } from '../store/filehash.js';
import { wandaDir } from './store.js';
import { modelInput, runInputs } from '../store/lineage.js';
import { LOBES_VERSION } from '../version.js';
import type { RunReader } from '../store/types.js';
import type { ModelInfo } from '../runtime/types.js';
import { loadModel } from '../onnx/index.js';
import { runSource, type ActivationSource } from './stats.js';
import { weightPass } from './pass.js';
import { analyze, matrixInfo, type AnalyzeResult } from './analyze.js';
import { groupSettings, itemGroupsOf } from './groups.js';
import { analyzeWeights } from './weightres.js';
import { addInference, correctWeightFamily, placementSets, type PlacementNull } from './inference.js';
import { hookPooler } from './sumpool.js';
import { checkOptionPairs, checkSweepGrid, sensitivitySweep, SWEEP_BLOCKS, SWEEP_TOPS } from './sensitivity.js';
import { wantedMatrices, isSafetensorsPath, openSafetensorsCheckpoint, safetensorsMatrices, onnxMatrices, ggufMatrices,
  type WantedMatrix } from './weights.js';
import { isGgufFile, sameGguf } from '../convert/cache.js';
import { expectedBytes, type MatrixRef } from './kernel.js';
import type { TopSpec } from './regions.js';
import { autoBlockSize, blockCheck, coarseWarnings, MIN_SELECTED, MIN_SHORT_SIDE, PAPER_BLOCK } from './blocksize.js';
import type { WandaSettings, WandaRegions, WandaMetrics, WandaMatrix } from './types.js';
import { planPermutations, type PermutationPlan } from '../util/resolution.js';
import { describeReplaced, writeOutputs } from './outputs.js';

export { metricsCsv } from './outputs.js';

/** Its IO (`io`: log lines, warnings, progress, the signal that cancels it between stages, around the weight pass, before the sweep and the writes: E_ABORTED, nothing written) and the deprecated `quiet`, `signal` (src/util/jobio.ts). */
export interface WandaOptions extends JobIOOptions {
  /** Weights: safetensors file/folder, ONNX model folder/file or llama GGUF file (default: the run's model: its GGUF when it was converted from one and the file is unchanged, else its folder). */
  weights?: string;
  /** Label axis whose values are the groups (default 'aspect', or the run's only axis). */
  by?: string;
  /** Block size: n for n×n, [rows, cols] in W[d_out, d_in], or 'auto' (docs/wanda.md; default auto, which is the paper's 256 wherever every matrix allows it). */
  block?: number | [number, number] | 'auto';
  /** Region selection (default top 10% of blocks per matrix). */
  top?: Partial<TopSpec>;
  /** Label permutations for the null (default 199), and random placements per set for the placement null. */
  permutations?: number;
  seed?: number;
  resolution?: 'block' | 'weight';
  group?: string | null; // label axis of each sample's item group (world tree) the null shuffles within (default item_group when the run has it and it is not `by`; null: none)
  /** Worker threads for the weight pass and the permutation null (default: all cores; the null stays on one thread when it is small). */
  threads?: number;
  /** Also run the block-size × top-fraction sensitivity sweep (block resolution): block sizes and fractions, or true for the defaults (16–128, 0.05–0.2). */
  sweep?: boolean | { blocks?: number[]; tops?: number[] };
  /** Model information of the ONNX weights (default: inspectModel of the folder). */
  modelInfo?: ModelInfo;
}

export interface WandaResult {
  settings: WandaSettings;
  regions: WandaRegions;
  metrics: WandaMetrics;
  /** Folder written (RUN/wanda). */
  dir: string;
}

export const DEFAULT_TOP: TopSpec = { kind: 'fraction', value: 0.1, scope: 'matrix' };
/**
 * Label permutations by default: at least 199, so that the smallest possible p, 1/200, passes
 * Holm in a family of 10 (10 region pairs of 5 groups) at 0.05 (src/util/stats.ts
 * permutationsForFamily); more when the largest family read (the 2P set differences of P pairs)
 * needs it, up to MAX_SIZED_PERMUTATIONS.
 */
export const DEFAULT_PERMUTATIONS = 199;
/**
 * The most permutations a default sizing gives: 399, what the 20 set differences of 5 groups
 * need. The null's cost grows with R + 1, so this keeps it within twice the 199's; a larger family
 * is read on z's normal approximation, flagged in its verdicts.
 */
export const MAX_SIZED_PERMUTATIONS = 399;

/** The permutation count of G groups: sized to the 2P set differences of their P pairs (src/util/resolution.ts). */
export function wandaPermutationPlan(groups: number, user: number | undefined): PermutationPlan {
  const pairs = (groups * (groups - 1)) / 2;
  return planPermutations(Math.max(1, 2 * pairs), user, MAX_SIZED_PERMUTATIONS, DEFAULT_PERMUTATIONS);
}

/** Resolve where the weights are and which matrices they give for the wanted list. */
export async function locateWeights(weights: string, wanted: WantedMatrix[],
  modelInfo?: ModelInfo): Promise<{ source: 'onnx' | 'safetensors' | 'gguf'; path: string; matrices: MatrixRef[] }>
{
  if (!existsSync(weights))
    throw new LobesError('weights folder or file not found', { file: weights,
      hint: `give ${opt('weights')} with an ONNX model folder, a safetensors checkpoint or a GGUF file` });
  if (!statSync(weights).isDirectory()) checkRegularFile(weights, 'weights file');
  if (isGgufFile(weights)) return { source: 'gguf', path: weights, matrices: ggufMatrices(weights, wanted) };
  const isOnnx = statSync(weights).isFile()
    ? weights.endsWith('.onnx')
    : existsSync(path.join(weights, 'model.onnx')) || existsSync(path.join(weights, 'genai_config.json'));
  if (!isOnnx && isSafetensorsPath(weights)) {
    const ck = openSafetensorsCheckpoint(weights);
    return { source: 'safetensors', path: weights, matrices: safetensorsMatrices(ck, wanted) };
  }
  const model = loadModel(weights);
  let info = modelInfo;
  if (!info) {
    // Loaded on demand: it brings in ONNX Runtime, which safetensors weights never need.
    const { inspectModel } = await import('../runtime/engine.js');
    info = await inspectModel(weights);
  }
  return { source: 'onnx', path: weights, matrices: onnxMatrices(model, info.points, wanted) };
}

function parseTop(t: Partial<TopSpec> | undefined): TopSpec {
  const top = { ...DEFAULT_TOP, ...(t ?? {}) };
  if (top.kind === 'fraction' && !(top.value > 0 && top.value <= 1))
    throw new UsageError(`${opt('top.value')} must be a fraction in (0, 1], got ${top.value}`);
  if (top.kind === 'count' && !(Number.isInteger(top.value) && top.value >= 1))
    throw new UsageError(`${opt('top.value')} must be a positive integer (a count of blocks), got ${top.value}`);
  if (!['matrix', 'layer', 'global'].includes(top.scope))
    throw new UsageError(`${opt('top.scope')} must be matrix, layer or global, got ${top.scope}`);
  return top;
}

/** Choose the label axis: the one asked for, else 'aspect', else the only axis. */
export function chooseAxis(axes: string[], by: string | undefined): string {
  if (by !== undefined) {
    if (!axes.includes(by)) {
      const near = nearest(by, axes);
      throw new UsageError({ option: 'by',
        message: `label axis ${JSON.stringify(by)} is not in the run (axes: ${axes.join(', ') || 'none'})`,
        hint: near ? `did you mean ${opt('by', near)}?` : undefined });
    }
    return by;
  }
  if (axes.includes('aspect')) return 'aspect';
  if (axes.length === 1) return axes[0];
  throw new UsageError({ option: 'by',
    message: `the run has several label axes (${axes.join(', ')}) and none is named aspect`,
    hint: `choose one with ${opt('by')}` });
}

/** The analysis settings of one run of runWanda, with defaults filled in and checked. */
interface Resolved {
  block: [number, number];
  top: TopSpec;
  permutations: number;
  seed: number;
  resolution: 'block' | 'weight';
  /** How `permutations` was set (sized to the groups once the labels are read). */
  sizing: PermutationPlan;
}

/** What the two resolutions analyse: the matrices, their activations and labels. */
interface AnalysisInput {
  matrices: MatrixRef[];
  infos: WandaMatrix[];
  source: ActivationSource;
  labels: string[];
  itemGroups: Int32Array | null; // each sample's item group (from 0), or null
}

/**
 * Wanda regions and their metrics for a run, written to RUN/wanda/.
 *
 * Stages: settings; label axis; the matrices whose inputs the run captured and their
 * weights; the analysis at block or weight resolution; the outputs.
 */
export async function runWanda(run: RunReader | string, opts: WandaOptions = {}): Promise<WandaResult> {
  // Warnings print under --quiet too: it silences progress (io.log), not what the user must know (io.warn).
  const io = jobIO(opts);
  const r = resolveOptions(opts);
  const reader: RunReader = typeof run === 'string' ? await (await import('../store/index.js')).openRun(run) : run;
  const by = chooseAxis(reader.labelAxes(), opts.by);
  // One folder per label axis (RUN/wanda, RUN/wanda.by-AXIS); it may be replaced only when it is
  // an earlier wanda result (checked again when written).
  const target = wandaDir(reader.dir, { manifest: reader.manifest, axis: by });
  checkOutputDir(target, 'wanda');
  // Only labelled items are compared: a row without a value on the axis (an empty label, or
  // "unevaluated" after eval label) joins no group, and is counted in settings.samples.
  const has = reader.labelled?.(by);
  const read = reader.labels(by);
  const leftOut: Record<string, number> = {};
  const labels = has ? read.map((l, i) => (has[i] ? l : '')) : read;
  read.forEach((l, i) => {
    if (labels[i] === '') leftOut[l || '(empty)'] = (leftOut[l || '(empty)'] ?? 0) + 1;
  });
  if (Object.keys(leftOut).length)
    io.log(
      `wanda: left out ${labels.filter((l) => l === '').length} of ${labels.length} items without a value on "${by}" (${
        Object.entries(leftOut).map(([v, c]) => `${v}: ${c}`).join(', ')
      })`,
    );
  const { axis: groupAxis, itemGroups } = itemGroupsOf(reader, by, opts.group); // the world trees the null shuffles within
  // the permutations sized to the groups' families before anything runs
  r.sizing = wandaPermutationPlan(new Set(labels.filter((l) => l !== '')).size, opts.permutations);
  r.permutations = r.sizing.R;
  const located = await locateRunWeights(reader, opts);
  throwIfAborted(io.signal, 'lobes wanda', 'before the weight pass');
  const matrices = located.matrices;
  // No --block: the paper's 256 where every matrix has enough blocks for regions to be read, else auto.
  const auto = opts.block === 'auto' || opts.block === undefined;
  if (auto) r.block = [autoBlockSize(matrices, r.top), autoBlockSize(matrices, r.top)];
  const check = blockCheck(matrices, r.block, r.top, auto);
  if (opts.sweep) checkSweepGrid(opts.sweep === true ? {} : opts.sweep, matrices);
  if (auto) {
    const paper = r.block[0] === PAPER_BLOCK;
    io.log(
      `wanda: blocks ${r.block.join('×')} (${
        paper
          ? `the paper's ${PAPER_BLOCK}×${PAPER_BLOCK}`
          : `auto: the largest power of two ≤ ${PAPER_BLOCK} giving every matrix ≥ ${MIN_SHORT_SIDE} blocks on its short side and ≥ ${MIN_SELECTED} selected; the paper's ${PAPER_BLOCK}×${PAPER_BLOCK} would be too coarse here`
      })`,
    );
  }
  for (const w of coarseWarnings(check, r.block)) io.warn(`wanda: warning: ${w}`);
  const input: AnalysisInput = {
    matrices,
    infos: matrices.map((m) => matrixInfo(m.name, m.layer, m.proj, m.input, m.dOut, m.dIn, r.block)),
    source: runSource(reader),
    labels,
    itemGroups,
  };
  const settings: WandaSettings = {
    by,
    groups: [],
    block: r.block,
    blockCheck: check,
    top: r.top,
    statistic: 'rms',
    permutations: r.permutations,
    sizing: r.sizing,
    seed: r.seed,
    weights: { source: located.source, path: path.resolve(located.path) },
    resolution: r.resolution,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date().toISOString(),
  };
  const hashes = weightFileHashes(located.source, located.path);
  let analysed: Awaited<ReturnType<typeof blockResolution>>;
  try {
    analysed = r.resolution === 'block'
      ? await blockResolution(input, r, opts, io)
      : await weightResolution(input, r, opts, io);
    settings.weights.files = await hashes.done;
  } catch (e) {
    await hashes.cancel();
    throw e;
  }
  const { result, weightLevel } = analysed;
  throwIfAborted(io.signal, 'lobes wanda', 'after the weight pass, before the placement null'); // nothing written yet
  settings.groups = result.groups;
  const used = result.counts.reduce((a, b) => a + b, 0);
  settings.samples = { used, excluded: labels.length - used, ...(Object.keys(leftOut).length ? { leftOut } : {}) };
  if (itemGroups) settings.group = groupSettings(groupAxis!, labels, itemGroups);
  const placed = await placementsOnThreads(result, input, r, opts.threads);
  const tested = addInference(result.metrics, result.regions, result.nulls, { placements: r.permutations, seed: r.seed,
    channels: result.channels, placed, sizing: r.sizing.sizing });
  if (weightLevel) correctWeightFamily(tested, weightLevel, { R: r.permutations, sizing: r.sizing.sizing });
  const metrics: WandaMetrics = weightLevel ? { ...tested, weightLevel } : tested;
  if (opts.sweep) {
    throwIfAborted(io.signal, 'lobes wanda', 'before the sensitivity sweep');
    const grid = opts.sweep === true ? {} : opts.sweep;
    const progress = new Progress({ label: 'wanda sensitivity sweep',
      total: (grid.blocks ?? SWEEP_BLOCKS).length * (grid.tops ?? SWEEP_TOPS).length, unit: 'configurations', io });
    metrics.sensitivity = await sensitivitySweep(
      { matrices, source: input.source, labels, itemGroups },
      { ...grid, scope: r.top.scope, permutations: r.permutations, seed: r.seed, threads: opts.threads,
        onConfig: (d) => progress.set(d) },
    );
    progress.finish();
  }
  const hooks = [...new Set(matrices.map((m) => m.input))]; // the capture points read (by worker threads too, which the reader does not see)
  settings.provenance = analysisProvenance(reader, hooks);
  // Lineage: the run's inputs read, and the weights scored (every weight file by content).
  const inputs = [...runInputs(reader, hooks), modelInput(settings.weights.files ?? [], located.path)];
  const replaced = describeReplaced(target, settings);
  // said even with --quiet: a replaced analysis is never silent
  if (replaced) io.warn(`wanda: replacing ${target} (${replaced})`);
  throwIfAborted(io.signal, 'lobes wanda', 'before writing its outputs');
  await writeOutputs(target, settings, result, metrics, inputs);
  return { settings, regions: result.regions, metrics, dir: target };
}

/** Fill in the defaults; bad values are usage errors. */
function resolveOptions(opts: WandaOptions): Resolved {
  const b = opts.block === 'auto' ? PAPER_BLOCK : opts.block;
  const block: [number, number] = Array.isArray(b) ? b : [b ?? PAPER_BLOCK, b ?? PAPER_BLOCK];
  if (!block.every((b) => Number.isInteger(b) && b >= 1))
    throw new UsageError(`${opt('block')} must be a positive integer (or RxC), got ${block.join('x')}`);
  const top = parseTop(opts.top);
  const permutations = opts.permutations ?? DEFAULT_PERMUTATIONS;
  if (!Number.isInteger(permutations) || permutations < 0)
    throw new UsageError(`${opt('permutations')} must be a non-negative integer, got ${permutations}`);
  checkOptionPairs(opts.sweep, opts.resolution ?? 'block', top.scope); // before the run is opened
  return { block, top, permutations, seed: opts.seed ?? 0, resolution: opts.resolution ?? 'block',
    sizing: { R: permutations, family: 0, needed: 0, sizing: opts.permutations === undefined ? 'sized' : 'user' } };
}

/** The matrices whose inputs the run captured, located in --weights (default: the run's model folder). */
async function locateRunWeights(reader: RunReader, opts: WandaOptions): ReturnType<typeof locateWeights> {
  const wanted = wantedMatrices(reader.hooks());
  if (wanted.length === 0) {
    throw new LobesError('the run has no MLP capture points (layers.{i}.mlp.in / layers.{i}.mlp.down_in)', {
      file: reader.dir,
      hint: `extract with ${opt('capture', 'mlp')}`,
    });
  }
  // A run extracted from a GGUF scores the GGUF's own dequantized weights (what the converted
  // graph computes with) while the file is unchanged (size, mtime and header hash); otherwise, and
  // for ONNX runs, the run's own model, used only once its files hash to what the run was
  // extracted with.
  const src = reader.manifest.model.source;
  const dflt =
    () => (src?.format === 'gguf' && sameGguf(src) ? src.path : resolveRunModel(reader.manifest, reader.dir));
  return locateWeights(opts.weights ?? dflt(), wanted, opts.modelInfo);
}

type WeightFileHash = { name: string; bytes: number; sha256: string };

/**
 * The weight files scored, relative to `where`, with their sha256 (through the file-hash
 * cache). A GGUF file or safetensors checkpoint not in the cache is hashed on a worker thread
 * while the weights are scored (the first run on a machine then costs about the longer of the
 * two rather than their sum); ONNX model files are hashed here.
 */
function weightFileHashes(source: 'onnx' | 'safetensors' | 'gguf',
  where: string): { done: Promise<WeightFileHash[]>; cancel: () => Promise<void> }
{
  if (source === 'onnx') {
    const files = hashModelFiles(modelFiles(where, null)).map(({ name, bytes, sha256 }) => ({ name, bytes, sha256 }));
    return { done: Promise.resolve(files), cancel: async () => {} };
  }
  const isDir = source === 'safetensors' && statSync(where).isDirectory();
  const names = source === 'gguf'
    ? [path.basename(where)]
    : isDir
    ? readdirSync(where).filter((f) => f.endsWith('.safetensors') || f === 'model.safetensors.index.json').sort()
    : [path.basename(where)];
  const base = isDir ? where : path.dirname(where);
  const bg = hashFilesInBackground(names.map((n) => path.join(base, n)),
    source === 'gguf' ? 'GGUF file' : 'weight file');
  const done = bg.done.then((hs) => hs.map((h, i) => ({ name: names[i]!, ...h })));
  done.catch(() => {}); // awaited after the analysis; a failure must not be unhandled meanwhile
  return { done, cancel: bg.cancel };
}

/** Additions below which the permutation null stays on the calling thread (worker start-up costs more). */
const NULL_THREADS_MIN_WORK = 5e8;

/** Threads for the permutation null: --threads, else all cores once the group sums are big enough to pay for them. */
async function defaultNullThreads(input: AnalysisInput, permutations: number,
  threads: number | undefined): Promise<number>
{
  if (threads !== undefined) return threads;
  const dims = new Map(input.infos.map((m) => [m.input, m.dIn]));
  const work = input.source.n * [...dims.values()].reduce((a, d) => a + d, 0) * (permutations + 1);
  return work < NULL_THREADS_MIN_WORK ? 1 : defaultThreads();
}

/**
 * The random-placement nulls of every difference and region (addInference's sets, seeds and
 * order) on the null's worker threads, or undefined when the null runs on one thread (then
 * addInference computes them). The same numbers either way.
 */
async function placementsOnThreads(result: AnalyzeResult, input: AnalysisInput, r: Resolved,
  threads: number | undefined): Promise<PlacementNull[] | undefined>
{
  if (r.permutations === 0) return undefined;
  const pool = hookPooler(input.source, await defaultNullThreads(input, r.permutations, threads));
  try {
    if (pool.threads < 2) return undefined;
    const sets = placementSets(result.regions, result.groups, r.seed);
    return await Promise.all(
      sets.map((s) =>
        pool.placement({ counts: s.counts, matrices: result.regions.matrices, R: r.permutations, seed: s.seed })
      ),
    );
  } finally {
    await pool.close();
  }
}

/** Block resolution: one streaming pass for the column sums of |W|, then the analysis from them and the activations. */
async function blockResolution(input: AnalysisInput, r: Resolved, opts: WandaOptions,
  io: JobIO): Promise<{ result: AnalyzeResult; weightLevel?: WandaMetrics['weightLevel'] }>
{
  const { matrices, infos, source, labels, itemGroups } = input;
  const { block, top, permutations, seed } = r;
  const totalBytes = matrices.reduce((a, m) => a + expectedBytes(m), 0);
  const passProgress = new Progress({ label: 'wanda weights', total: Math.round(totalBytes / 1e6), unit: 'MB', io });
  let bytesDone = 0;
  // The null of a capture point starts as soon as the pass has the column sums of the matrices it feeds.
  const ready = new Map(matrices.map((m) => [m.name, deferred<Float32Array>()]));
  const pass = weightPass(matrices, {
    rowBlock: block[0],
    threads: opts.threads,
    onMatrix: (_m, bytes) => passProgress.set(Math.round((bytesDone += bytes) / 1e6)),
    onColsums: (name, C) => ready.get(name)!.resolve(C),
  });
  let passDone = false;
  // One step = one capture point finished (its reads for every labelling); shown once the pass is done.
  let steps: Progress | null = null;
  let stepsDone = 0;
  let stepsTotal = 0;
  const showSteps = () => {
    steps ??= new Progress({ label: `wanda groups and ${permutations} permutations`, total: stepsTotal,
      unit: 'capture points', io });
    steps.set(stepsDone);
  };
  const onStep = (done: number, total: number) => {
    stepsDone = done;
    stepsTotal = total;
    if (passDone) showSteps();
  };
  const threads = await defaultNullThreads(input, permutations, opts.threads);
  const null_ = analyze({ matrices: infos, colsums: new Map([...ready].map(([k, v]) => [k, v.promise])), source, labels,
    itemGroups }, { block, top, permutations, seed, onStep, threads });
  const [p, a] = await Promise.allSettled([
    pass.then(
      () => {
        passDone = true;
        passProgress.finish();
        if (stepsTotal > 0) showSteps();
      },
      (e) => {
        for (const d of ready.values()) d.reject(e);
        throw e;
      },
    ),
    null_,
  ]);
  // A weight error is reported before an activation error, as when the pass ran first.
  if (p.status === 'rejected') throw p.reason;
  if (a.status === 'rejected') throw a.reason;
  (steps as Progress | null)?.finish();
  return { result: a.value };
}

/** A promise with its resolve and reject. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // the pass's error is reported by the caller
  return { promise, resolve, reject };
}

/** Weight resolution: per-weight scores matrix by matrix, with the weight-level metrics. */
async function weightResolution(input: AnalysisInput, r: Resolved, opts: WandaOptions,
  io: JobIO): Promise<{ result: AnalyzeResult; weightLevel?: WandaMetrics['weightLevel'] }>
{
  const { matrices, infos, source, labels, itemGroups } = input;
  const { block, top, permutations, seed } = r;
  const progress = new Progress({ label: `wanda weights, groups and ${permutations} permutations`,
    total: matrices.length, unit: 'matrices', io });
  const w = await analyzeWeights({ matrices, infos, source, labels, itemGroups }, { block, top, permutations, seed,
    onMatrix: (d) => progress.set(d) });
  progress.finish();
  return { result: w.result, weightLevel: w.weightLevel };
}
