/**
 * The `lobes extract` job: tokenize a dataset, run the capture engine chunk by chunk and
 * store last-token activations in a run directory (docs/run-format.md).
 *
 * Determinism: chunk c always holds dataset rows [c*K, (c+1)*K) and its batches are planned
 * from those rows alone, so the numbers in a chunk do not depend on where a previous
 * attempt crashed or on which shard wrote it. Resume = skip the chunks the index lists.
 *
 * Long file: the job's stages (settings, input, pre-flight checks, manifest, resume, disk plan,
 * chunk loop) are named functions that share two private records (Settings, Input) and read
 * top to bottom like the job; split by stage they would export those records for no reader.
 */
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { makeDirs } from '../util/io.js';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { Progress, fmtTime } from '../util/progress.js';
import { LOBES_VERSION } from '../version.js';
import type { Dataset, Sample } from '../data/types.js';
import type { ControlInfo, HookInfo, ModelArch, ModelSourceRecord, RunManifest, SampleRow } from '../store/types.js';
import type { BatchPlanOptions, CaptureEngine, CaptureFamily, Device, EngineOptions, LobesTokenizer, TokenBatch, TokenizerOptions } from '../runtime/types.js';
import { FORMAT_VERSION, shardRange, chunkCount, type ShardSpec, MANIFEST, SAMPLES } from '../store/layout.js';
import { readManifest, writeManifest, writeSamples, samplesSha256, sha256Text } from '../store/manifest.js';
import { ChunkWriter } from '../store/writer.js';
import { claimJobFolder, isFreshFolder } from '../store/job.js';
import { indexPath } from '../store/chunks.js';
import { differences } from '../store/identity.js';
import { hashItems, hashModelFiles, runIdentity, type ModelFileRef } from '../store/provenance.js';
import { modelFiles } from '../runtime/modelfiles.js';
import type { ModelFile } from '../store/types.js';
import { tokenizerDir } from '../runtime/tokenize.js';
import { configDir, declaredContext, type ContextLimit } from '../runtime/config.js';
import { checkBatchMemory, checkContext as checkTextContext, fmtBytes } from '../runtime/plan.js';
import type { GraphFacts } from '../runtime/consistency.js';
import { canonicalLayerSpec } from '../runtime/layers.js';
import { limitItems, type LimitRecord, type LimitSpec } from '../data/subset.js';

export { hashItems } from '../store/provenance.js';

/** The pieces runExtract uses; tests may inject deterministic stand-ins. */
export interface ExtractDeps {
  loadDataset(spec: string): Promise<Dataset>;
  loadTokenizer(modelDir: string, opts: TokenizerOptions): Promise<LobesTokenizer>;
  openCaptureEngine(modelDir: string, opts: EngineOptions): Promise<CaptureEngine>;
  planBatches(lengths: ArrayLike<number>, opts: BatchPlanOptions): number[][];
  padBatch(seqs: number[][], padId: number, side: 'left' | 'right'): TokenBatch;
  /** The files of the model folder that shape the numbers (default: src/store/provenance.ts modelFiles). */
  modelFiles?(model: string, tokenizerDir: string | null): ModelFileRef[];
}

export interface ExtractOptions {
  /** Model folder (model.onnx + tokenizer files). */
  model: string;
  /** Where the model folder came from when it was converted from a GGUF (recorded in the manifest). */
  modelSource?: ModelSourceRecord | null;
  /** Dataset spec (builtin:NAME, socialeval:PATH, jsonl:..., csv:...). */
  data: string;
  /** Run folder to create or resume. */
  out: string;
  /** Capture families (default final + mlp). */
  capture?: CaptureFamily[];
  /** Layer selection of the per-layer capture points: 'all' (default), 'last:N' or '0,3,10-19'. */
  layers?: string;
  /** A seeded stratified sample of the dataset (--limit, --by, --seed; src/data/subset.ts). */
  limit?: LimitSpec | null;
  device?: Device;
  deviceId?: number;
  /** Max rows per batch (default 8 unless tokenBudget is given). */
  batch?: number;
  /** Max padded tokens per batch. */
  tokenBudget?: number;
  /** Keep at most this many tokens per text (cut from the start). */
  maxTokens?: number | null;
  /** Stored dtype (default fp16). */
  dtype?: 'fp16' | 'fp32';
  chatTemplate?: boolean;
  shard?: ShardSpec | null;
  /** Rows per chunk file (default 128). Shards and single runs must use the same value. */
  chunkRows?: number;
  quiet?: boolean;
  /** Start even when the disk plan or the memory plan of a batch says it will not fit (--ignore-plan). */
  force?: boolean;
  /** On resume, re-extract chunks whose files are bad instead of stopping. */
  repair?: boolean;
  /** On resume, hash every finished chunk (default true; false checks sizes only). */
  verify?: boolean;
  /** Refuse a model whose graph disagrees with its config files (RoPE base, norm epsilon, heads) instead of warning. */
  strict?: boolean;
  /** Memory a batch may need on `device`, in bytes (default: the machine's RAM for cpu, $LOBES_DEVICE_MEMORY_GB or 80 GiB for a GPU). */
  memoryLimit?: (device: Device) => number;
  deps?: Partial<ExtractDeps>;
  /** Free bytes where the run goes (default: statfs of the folder or its nearest parent). */
  diskFree?: (dir: string) => number | null;
  /** Where messages go (default stderr). */
  log?: (line: string) => void;
  /** The model is a random-weights control (src/runtime/control.ts): recorded as manifest model.control. */
  control?: ControlInfo;
}

export const DEFAULT_CHUNK_ROWS = 128;
export const DEFAULT_BATCH = 8;

async function defaultDeps(): Promise<ExtractDeps> {
  // Loaded lazily so that tests injecting every piece never load ONNX Runtime.
  const [e, t, b, d] = await Promise.all([import('../runtime/engine.js'), import('../runtime/tokenize.js'), import('../runtime/batching.js'), import('../data/index.js')]);
  return { openCaptureEngine: e.openCaptureEngine, loadTokenizer: t.loadTokenizer, planBatches: b.planBatches, padBatch: b.padBatch, loadDataset: (s: string) => d.loadDataset(s) };
}

async function resolveDeps(given: Partial<ExtractDeps> | undefined): Promise<ExtractDeps> {
  if (given && given.loadDataset && given.loadTokenizer && given.openCaptureEngine && given.planBatches && given.padBatch) return given as ExtractDeps;
  return { ...(await defaultDeps()), ...given };
}

/** Bytes `rows` rows in `chunks` chunk files take on disk for these hooks (headers included). */
function planBytes(hooks: HookInfo[], rows: number, chunks: number): number {
  let b = 0;
  for (const h of hooks) b += rows * h.dim * (h.dtype === 'F16' ? 2 : 4) + chunks * (136 + 2 * h.name.length);
  return b;
}

/** Free bytes for unprivileged users on the filesystem holding `dir` (or its nearest existing parent). */
function freeBytes(dir: string): number | null {
  let d = path.resolve(dir);
  while (!existsSync(d)) {
    const p = path.dirname(d);
    if (p === d) return null;
    d = p;
  }
  try {
    const s = statfsSync(d);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

/** The options of one extraction with their defaults filled in. */
interface Settings {
  model: string;
  modelSource: ModelSourceRecord | null;
  out: string;
  capture: CaptureFamily[];
  layers: string | null;
  limit: LimitSpec | null;
  device: Device;
  deviceId: number | undefined;
  dtype: 'fp16' | 'fp32';
  chunkRows: number;
  batch: number | null;
  tokenBudget: number | null;
  maxTokens: number | null;
  chatTemplate: boolean;
  shard: ShardSpec | null;
  control: ControlInfo | null;
}

/** The dataset rows of this run (or shard), tokenized. */
interface Input {
  dataset: Dataset;
  /** The --limit sample taken of the dataset, if any. */
  limit: LimitRecord | null;
  itemsSha256: string;
  /** Rows of the whole dataset. */
  N: number;
  graphSha256: string;
  /** The model's graph, external data and tokenizer files with their sha256. */
  files: ModelFile[];
  /** The context length the config files declare (the graph may lower it). */
  context: ContextLimit | null;
  tokenizer: LobesTokenizer;
  range: ReturnType<typeof shardRange>;
  rowsHere: number;
  /** Token ids of this run's rows (row rowStart first). */
  ids: number[][];
  rows: SampleRow[];
  /** sha256 of the samples.jsonl these rows make. */
  samplesSha256: string;
  truncated: number;
  tokens: number;
  tokenizeMs: number;
}

/** What the chunk loop needs. */
interface ChunkContext {
  s: Settings;
  input: Input;
  deps: ExtractDeps;
  engine: CaptureEngine;
  hooks: HookInfo[];
  progress: Progress;
  clock: AttemptClock;
}

/**
 * Run (or resume) an extraction. Returns the final manifest.
 *
 * Stages: settings; the output folder (new, or an earlier attempt); the dataset, tokenized;
 * a rerun's settings checked (a finished run is verified and returned); the capture engine;
 * the resumed chunk writer; the disk plan; the attempt's first manifest; the chunks; the
 * final manifest.
 */
export async function runExtract(opts: ExtractOptions): Promise<RunManifest> {
  const tStart = Date.now();
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  const say = (l: string) => {
    if (!opts.quiet) log(l);
  };
  const s = resolveSettings(opts);
  // Refused before anything is read: a folder that is neither new nor a run.
  openRunFolder(s.out);
  const deps = await resolveDeps(opts.deps);
  const input = await loadInput(opts.data, s, deps, opts, say);
  // From here on this process is the folder's only writer (src/store/job.ts); its state is read under the lock.
  const job = await claimJobFolder(s.out, { command: 'lobes extract', isJob: (d) => existsSync(path.join(d, MANIFEST)), what: 'a lobes run', log });
  let failed = true;
  try {
    const m = await extractUnderLock(opts, s, deps, input, tStart, say, log);
    failed = false;
    return m;
  } finally {
    job.close(failed);
  }
}

/** The extraction once the folder is claimed. */
async function extractUnderLock(opts: ExtractOptions, s: Settings, deps: ExtractDeps, input: Input, tStart: number, say: (l: string) => void, log: (l: string) => void): Promise<RunManifest> {
  const previous = openRunFolder(s.out);
  const manifestFor = (points: HookInfo[], arch: ModelArch | null, graph?: GraphFacts) => runManifest(s, input, previous, points, arch, graph);

  // Refuse a rerun with different settings before loading the model.
  if (previous && (await alreadyComplete(previous, manifestFor(previous.capture.points, null), s, input, opts, say))) return previous;
  // Texts longer than the model's context are refused before the model is loaded.
  checkContext(input, input.context);

  const t1 = Date.now();
  const engine = await deps.openCaptureEngine(s.model, { capture: s.capture, ...(s.layers ? { layers: s.layers } : {}), device: s.device, deviceId: s.deviceId });
  const modelLoadMs = Date.now() - t1;
  try {
    const graph = checkGraph(engine, s, opts, log);
    checkContext(input, engine.info.check?.context ?? null);
    checkMemory(s, input, deps, engine.info.arch, opts, log);
    const hooks = storedHooks(engine, s);
    const manifest = manifestFor(hooks, engine.info.arch, graph);
    let writer = previous ? await resumeWriter(previous, manifest, hooks, s, input, opts, say) : null;
    const plan = planChunks(s, input, hooks, writer, opts, say);
    const clock = new AttemptClock(tStart, { ...manifest.timings }, input.tokenizeMs, modelLoadMs);
    manifest.timings = clock.timings();
    // The manifest is written at the start of every attempt (first, so that a crash leaves a
    // folder this command recognises) and every 30 s, so timings survive a crash.
    makeDirs(s.out);
    writeManifest(s.out, manifest);
    if (!writer) {
      if (writeSamples(s.out, input.rows) !== input.samplesSha256) throw new LobesError('samples.jsonl was not written as planned', { file: path.join(s.out, SAMPLES) });
      writer = ChunkWriter.create(s.out, hooks, s.chunkRows);
    }
    const progress = new Progress({ label: 'extract', total: input.rowsHere, unit: 'samples', quiet: opts.quiet });
    if (plan.doneRows) progress.set(plan.doneRows);
    await extractChunks(plan.todo, writer, { s, input, deps, engine, hooks, progress, clock }, () => {
      manifest.timings = clock.timings();
      writeManifest(s.out, manifest);
    });
    const wallMs = Date.now() - tStart;
    manifest.timings = clock.timings();
    manifest.complete = true;
    writeManifest(s.out, manifest);
    progress.finish(
      opts.quiet ? undefined : `extract: done, ${input.rowsHere} samples, ${input.tokens} tokens${input.truncated ? ` (${input.truncated} truncated)` : ''} in ${fmtTime(wallMs / 1000)} -> ${s.out}`,
    );
    return manifest;
  } finally {
    await engine.close();
  }
}

/** --layers in its canonical text (null: all layers), so that equal selections get equal records. */
function selectedLayers(spec: string | undefined): string | null {
  if (spec === undefined) return null;
  const c = canonicalLayerSpec(spec);
  return c === 'all' ? null : c;
}

/** Fill in the defaults; a bad chunk size is a usage error. */
function resolveSettings(opts: ExtractOptions): Settings {
  const chunkRows = opts.chunkRows ?? DEFAULT_CHUNK_ROWS;
  if (!Number.isInteger(chunkRows) || chunkRows < 1) throw new UsageError(`--chunk-rows must be a positive integer, got ${chunkRows}`);
  return {
    model: opts.model,
    modelSource: opts.modelSource ?? null,
    out: opts.out,
    capture: opts.capture ?? ['final', 'mlp'],
    layers: selectedLayers(opts.layers),
    limit: opts.limit ?? null,
    device: opts.device ?? 'cpu',
    deviceId: opts.deviceId,
    dtype: opts.dtype ?? 'fp16',
    chunkRows,
    batch: opts.batch ?? (opts.tokenBudget ? null : DEFAULT_BATCH),
    tokenBudget: opts.tokenBudget ?? null,
    maxTokens: opts.maxTokens ?? null,
    chatTemplate: opts.chatTemplate ?? false,
    shard: opts.shard ?? null,
    control: opts.control ?? null,
  };
}

/** The output folder: new (null), or an earlier attempt of this command (its manifest). */
function openRunFolder(out: string): RunManifest | null {
  if (existsSync(path.join(out, MANIFEST))) return readManifest(out);
  if (!isFreshFolder(out)) throw new LobesError('output folder exists and is not a lobes run; lobes does not write into it', { file: out, hint: 'give a new or empty folder' });
  return null;
}

/**
 * Load the dataset and the tokenizer, hash the items and the model's files (graph, external
 * data, tokenizer files: through the file-hash cache, src/store/filehash.ts), and tokenize
 * this shard's rows.
 */
async function loadInput(spec: string, s: Settings, deps: ExtractDeps, opts: ExtractOptions, say: (l: string) => void): Promise<Input> {
  const t0 = Date.now();
  let dataset = await deps.loadDataset(spec);
  let limit: LimitRecord | null = null;
  if (s.limit) {
    const l = limitItems(dataset.samples, dataset.axes, s.limit);
    dataset = { ...dataset, samples: l.items };
    limit = l.record;
    say(`extract: --limit ${l.record.limit}: ${l.items.length} of ${l.record.of} samples, stratified by ${l.record.by.join(',') || 'nothing (no label axes)'}, seed ${l.record.seed}`);
  }
  const itemsSha256 = hashItems(dataset.samples);
  const N = dataset.samples.length;
  const tokDir = tokenizerDir(s.model);
  const refs = (deps.modelFiles ?? modelFiles)(s.model, tokDir);
  // The tokenizer before the hashes: a folder without one is refused before its weights are read.
  const tokenizer = await deps.loadTokenizer(s.model, { maxTokens: s.maxTokens, chatTemplate: s.chatTemplate });
  let hashing: Progress | null = null;
  const files = hashModelFiles(refs, (done, total) => {
    if (total < 256 << 20) return;
    hashing ??= new Progress({ label: 'extract: hash model files', total: Math.round(total / 1e6), unit: 'MB', quiet: opts.quiet });
    hashing.set(Math.round(done / 1e6));
  });
  (hashing as Progress | null)?.finish();
  const graphSha256 = files.find((f) => f.role === 'graph')!.sha256;
  const context = declaredContext(configDir(s.model, path.dirname(refs[0]!.path)));
  const range = shardRange(N, s.chunkRows, s.shard);
  const rowsHere = range.rowEnd - range.rowStart;
  if (s.shard && rowsHere === 0) {
    say(`shard ${s.shard.index}/${s.shard.count} holds no rows (${chunkCount(N, s.chunkRows)} chunks of ${s.chunkRows} rows for ${s.shard.count} shards; lower --chunk-rows to use every shard)`);
  }
  const tok = tokenizeRows(dataset.samples, range.rowStart, range.rowEnd, tokenizer);
  return { dataset, limit, itemsSha256, N, graphSha256, files, context, tokenizer, range, rowsHere, ...tok, samplesSha256: samplesSha256(tok.rows), tokenizeMs: Date.now() - t0 };
}

/** Refuse texts longer than the model's context (src/runtime/plan.ts), naming --max-tokens. */
function checkContext(input: Input, limit: ContextLimit | null): void {
  checkTextContext(input.rows, limit, (l) => `keep the last ${l.tokens} tokens of each text with --max-tokens ${l.tokens} (recorded as truncated in samples.jsonl), or leave the long items out`);
}

/** Rounded to 6 significant digits (graph facts recovered from floating-point constants). */
const sig = (x: number | null) => (x === null ? null : Number(x.toPrecision(6)));

/**
 * The consistency check of the model (src/runtime/consistency.ts): every disagreement between
 * the graph and its config files is printed as a warning, or refused with --strict. Returns
 * the graph's facts as the manifest records them.
 */
function checkGraph(engine: CaptureEngine, s: Settings, opts: ExtractOptions, log: (l: string) => void): GraphFacts | undefined {
  const c = engine.info.check;
  if (!c) return undefined;
  if (c.problems.length) {
    if (opts.strict) {
      throw new LobesError(`the model is not what its folder says: ${c.problems.join('; ')}`, { file: s.model, hint: 're-export the model so that the graph matches its config (see lobes inspect), or drop --strict to extract anyway' });
    }
    for (const p of c.problems) log(`warning: ${s.model}: ${p} (lobes inspect shows both; --strict refuses such a model)`);
  }
  const g = c.graph;
  return { ...g, ropeTheta: sig(g.ropeTheta), rmsNormEps: g.rmsNormEps.map((e) => sig(e)!) };
}

/**
 * Bound what one batch can need before any is run (src/runtime/plan.ts): a plan whose largest
 * batch needs more than the device has is refused naming the batch; --ignore-plan runs it.
 */
function checkMemory(s: Settings, input: Input, deps: ExtractDeps, arch: ModelArch, opts: ExtractOptions, say: (l: string) => void): void {
  const batches: number[][] = [];
  for (let c = input.range.chunkStart; c < input.range.chunkEnd; c++) {
    const { start, n } = chunkSpan(c, s.chunkRows, input.N);
    const local = start - input.range.rowStart;
    const lengths = new Int32Array(n);
    for (let i = 0; i < n; i++) lengths[i] = input.ids[local + i]!.length;
    for (const b of deps.planBatches(lengths, { batch: s.batch ?? undefined, tokenBudget: s.tokenBudget ?? undefined })) batches.push(b.map((i) => local + i));
  }
  checkBatchMemory(batches, input.rows.map((r) => ({ id: r.id, tokens: input.ids[r.index]!.length })), arch, {
    device: s.device,
    limit: opts.memoryLimit?.(s.device),
    force: opts.force,
    say,
    hint: '--max-tokens N keeps the last N tokens of each text; --batch 1 or --token-budget N makes batches smaller; --ignore-plan runs it anyway (e.g. with a memory-efficient attention kernel)',
  });
}

/** Tokenize dataset rows [start, end): their ids and sample rows; an empty text is an error. */
function tokenizeRows(samples: Sample[], start: number, end: number, tokenizer: LobesTokenizer): Pick<Input, 'ids' | 'rows' | 'truncated' | 'tokens'> {
  const ids: number[][] = [];
  const rows: SampleRow[] = [];
  let truncated = 0;
  let tokens = 0;
  for (let g = start; g < end; g++) {
    const s = samples[g];
    let t;
    try {
      t = tokenizer.encode(s.text);
    } catch (e: any) {
      throw new LobesError(`cannot tokenize (${e.message})`, { where: `sample ${s.id}` });
    }
    if (t.ids.length === 0) throw new LobesError('text tokenizes to zero tokens', { where: `sample ${s.id}`, hint: 'remove empty items from the dataset' });
    ids.push(t.ids);
    const row: SampleRow = { index: rows.length, id: s.id, labels: s.labels, tokens: t.ids.length, truncated: t.truncated, text: s.text };
    if (s.provenance) row.provenance = s.provenance;
    rows.push(row);
    if (t.truncated) truncated++;
    tokens += t.ids.length;
  }
  return { ids, rows, truncated, tokens };
}

/** The run's manifest, not yet complete; `arch` null keeps the previous attempt's. */
function runManifest(s: Settings, input: Input, previous: RunManifest | null, points: HookInfo[], arch: ModelArch | null, graph?: GraphFacts): RunManifest {
  const m: RunManifest = {
    format: 'lobes-run',
    formatVersion: FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    model: {
      dir: path.resolve(s.model),
      graphSha256: input.graphSha256,
      arch: arch ?? previous?.model.arch ?? ({} as any),
      files: input.files,
      ...(graph ?? previous?.model.graph ? { graph: (graph ?? previous?.model.graph) as Record<string, unknown> } : {}),
      ...(s.modelSource ? { source: s.modelSource } : {}),
      ...(s.control ? { control: s.control } : {}),
    },
    tokenizer: { source: input.tokenizer.source, chatTemplate: s.chatTemplate, addBos: input.tokenizer.addBos, maxTokens: s.maxTokens },
    dataset: { spec: input.dataset.spec, itemsSha256: input.itemsSha256, count: input.N, axes: input.dataset.axes, ...(input.limit ? { limit: input.limit } : {}), ...(input.dataset.composition ? { composition: input.dataset.composition } : {}) },
    capture: { points, selection: s.layers ? [...s.capture, `layers=${s.layers}`] : s.capture },
    dtype: s.dtype,
    provider: { device: s.device, deviceId: s.deviceId ?? 0 },
    shard: s.shard,
    counts: { samples: input.rowsHere, truncated: input.truncated, tokens: input.tokens },
    timings: {},
    complete: false,
    settings: { batch: s.batch, tokenBudget: s.tokenBudget, chunkRows: s.chunkRows },
    layout: { datasetRows: input.N, ...input.range },
    samplesSha256: input.samplesSha256,
  };
  m.identity = runIdentity(m);
  return m;
}

/** Refuse a rerun whose settings differ (`ignore` filters out differences to leave for later). */
function checkSameSettings(previous: RunManifest, manifest: RunManifest, out: string, ignore?: (d: string) => boolean): void {
  const diff = differences(previous, manifest, out, 'this command', { includeShard: true }).filter((d) => !ignore?.(d));
  if (diff.length) throw new LobesError(`this run folder was made with different settings: ${diff.join('; ')}`, { file: path.join(out, MANIFEST), hint: 'use a new --out, or delete the folder to start over' });
}

/**
 * Check a rerun's settings (all but the capture points, which need the model); when the
 * earlier attempt finished (and no repair is asked for), verify its files and say so.
 */
async function alreadyComplete(previous: RunManifest, manifest: RunManifest, s: Settings, input: Input, opts: ExtractOptions, say: (l: string) => void): Promise<boolean> {
  checkSameSettings(previous, manifest, s.out, (d) => d.startsWith('capture points'));
  if (!previous.complete || opts.repair) return false;
  // Check the finished run's files (throws naming any bad chunk or samples table; --repair rewrites them).
  checkSamplesFile(s.out, previous, input, false, say);
  await ChunkWriter.resume(s.out, previous.capture.points, s.chunkRows, { verify: opts.verify ?? true, repair: false });
  say(`extract: ${s.out} is already complete (${previous.counts.samples} samples, samples table and chunk files verified); nothing to do`);
  return true;
}

/**
 * samples.jsonl of an earlier attempt must be the table this command derives (same rows,
 * labels, token counts) and match the sha256 its manifest recorded. A missing, truncated or
 * edited table is refused, or with `repair` written again from the dataset and tokenizer.
 */
function checkSamplesFile(out: string, previous: RunManifest, input: Input, repair: boolean, say: (l: string) => void): void {
  const file = path.join(out, SAMPLES);
  let problem: string | null = null;
  if (!existsSync(file)) problem = 'samples table is missing';
  else {
    const got = sha256Text(readFileSync(file));
    if (previous.samplesSha256 !== undefined && got !== previous.samplesSha256) problem = `samples table does not match its run: sha256 ${got.slice(0, 12)}… but the manifest records ${previous.samplesSha256.slice(0, 12)}… (edited, truncated or replaced)`;
    else if (got !== input.samplesSha256) problem = 'samples table differs from the rows this command derives from the dataset and tokenizer';
  }
  if (!problem) return;
  if (!repair) throw new LobesError(problem, { file, hint: 'rerun the same command with --repair to write it again from the dataset and tokenizer' });
  writeSamples(out, input.rows);
  say(`repair: ${file}: ${problem}; written again from the dataset and tokenizer`);
}

/** The capture points the engine outputs, as stored. */
function storedHooks(engine: CaptureEngine, s: Settings): HookInfo[] {
  const storeDtype = s.dtype === 'fp16' ? 'F16' : 'F32';
  const hooks: HookInfo[] = engine.hooks.map((p) => ({ name: p.name, dim: p.dim, dtype: storeDtype }));
  if (hooks.length === 0) throw new LobesError(`the model has no capture points for --capture ${s.capture.join(',')}`, { file: s.model });
  return hooks;
}

/**
 * Continue an earlier attempt: check every setting, reopen its chunk writer (null when it
 * crashed before writing the samples table and index) and carry its timings over.
 */
async function resumeWriter(previous: RunManifest, manifest: RunManifest, hooks: HookInfo[], s: Settings, input: Input, opts: ExtractOptions, say: (l: string) => void): Promise<ChunkWriter | null> {
  checkSameSettings(previous, manifest, s.out);
  let writer: ChunkWriter | null = null;
  // A crash right after the manifest of a new run leaves no samples table or index yet
  // (the samples table is written before the index).
  if (existsSync(indexPath(s.out))) {
    checkSamplesFile(s.out, previous, input, !!opts.repair, say);
    const r = await ChunkWriter.resume(s.out, hooks, s.chunkRows, { verify: opts.verify ?? true, repair: !!opts.repair });
    for (const p of r.repaired) say(`repair: ${p}; extracting it again`);
    writer = r.writer;
  }
  manifest.timings = { ...previous.timings };
  return writer;
}

/** Rows [start, start + n) of dataset chunk c. */
function chunkSpan(c: number, chunkRows: number, N: number): { start: number; n: number } {
  const start = c * chunkRows;
  return { start, n: Math.min(start + chunkRows, N) - start };
}

/**
 * The chunks still to extract, and the disk plan: say what the run will take and stop (unless
 * --ignore-plan) when the disk cannot hold what is left to write.
 */
function planChunks(s: Settings, input: Input, hooks: HookInfo[], writer: ChunkWriter | null, opts: ExtractOptions, say: (l: string) => void): { todo: number[]; doneRows: number } {
  const { range, rowsHere, N } = input;
  const todo: number[] = [];
  let todoRows = 0;
  let doneRows = 0;
  for (let c = range.chunkStart; c < range.chunkEnd; c++) {
    const { n } = chunkSpan(c, s.chunkRows, N);
    if (writer?.has(c)) doneRows += n;
    else {
      todo.push(c);
      todoRows += n;
    }
  }
  const totalBytes = planBytes(hooks, rowsHere, range.chunkEnd - range.chunkStart);
  const needBytes = planBytes(hooks, todoRows, todo.length);
  const free = (opts.diskFree ?? freeBytes)(s.out);
  say(
    `extract: ${rowsHere} samples${s.shard ? ` (shard ${s.shard.index}/${s.shard.count}: rows ${range.rowStart}..${range.rowEnd - 1} of ${N})` : ''}, ${hooks.length} capture point${hooks.length > 1 ? 's' : ''}, ${s.dtype}; ` +
      `expected run size ${fmtBytes(totalBytes)}` +
      (doneRows ? `, resuming: ${doneRows} rows done, ${fmtBytes(needBytes)} to write` : '') +
      (free !== null ? `, ${fmtBytes(free)} free` : ''),
  );
  if (free !== null && needBytes > free) {
    if (!opts.force) throw new LobesError(`not enough disk space: the run needs ${fmtBytes(needBytes)} more but ${fmtBytes(free)} is free`, { file: s.out, hint: 'free space, choose another --out, store --dtype fp16 or capture fewer points; --ignore-plan starts anyway' });
    (opts.log ?? ((l: string) => process.stderr.write(l + '\n')))(`warning: the run needs ${fmtBytes(needBytes)} but only ${fmtBytes(free)} is free (--ignore-plan given)`);
  }
  return { todo, doneRows };
}

/** This attempt's time, added to what earlier attempts recorded (`base`). */
class AttemptClock {
  computeMs = 0;
  storeMs = 0;
  constructor(
    private readonly tStart: number,
    private readonly base: Record<string, number>,
    private readonly tokenizeMs: number,
    private readonly modelLoadMs: number,
  ) {}

  timings(): Record<string, number> {
    const base = this.base;
    return {
      tokenizeMs: (base.tokenizeMs ?? 0) + this.tokenizeMs,
      modelLoadMs: (base.modelLoadMs ?? 0) + this.modelLoadMs,
      computeMs: Math.round((base.computeMs ?? 0) + this.computeMs),
      storeMs: Math.round((base.storeMs ?? 0) + this.storeMs),
      wallMs: (base.wallMs ?? 0) + Date.now() - this.tStart,
      attempts: (base.attempts ?? 0) + 1,
    };
  }
}

/**
 * Extract the chunks in order. Each chunk is stored while the model computes the next one;
 * `save` rewrites the manifest (every 30 s).
 */
async function extractChunks(todo: number[], writer: ChunkWriter, ctx: ChunkContext, save: () => void): Promise<void> {
  const { s, input, clock } = ctx;
  let lastSave = Date.now();
  let pending: Promise<void> | null = null;
  try {
    for (const c of todo) {
      const { start, n } = chunkSpan(c, s.chunkRows, input.N);
      const buffers = await captureChunk(c, ctx);
      // Wait for the previous chunk's files (storeMs counts only time the loop is held up by storage).
      const ts = performance.now();
      if (pending) await pending;
      pending = writer.writeAsync(c, start, n, buffers).then(() => undefined);
      pending.catch(() => undefined); // awaited below; avoid an unhandled-rejection warning meanwhile
      clock.storeMs += performance.now() - ts;
      if (Date.now() - lastSave > 30_000) {
        save();
        lastSave = Date.now();
      }
    }
  } catch (e) {
    // The model failed: let the previous chunk's files finish (listed, or not at all) before the
    // error leaves, so nothing is still being written once the command has failed and let go of
    // the folder's lock.
    if (pending) await pending.catch(() => undefined);
    throw e;
  }
  const ts = performance.now();
  if (pending) await pending;
  clock.storeMs += performance.now() - ts;
}

/** Run the engine over chunk c's rows, batch by batch; each hook's values [n, dim] in row order. */
async function captureChunk(c: number, ctx: ChunkContext): Promise<Map<string, Float32Array>> {
  const { s, input, deps, engine, hooks, progress, clock } = ctx;
  const { start, n } = chunkSpan(c, s.chunkRows, input.N);
  const local = start - input.range.rowStart;
  const lengths = new Int32Array(n);
  for (let i = 0; i < n; i++) lengths[i] = input.ids[local + i].length;
  const plan = deps.planBatches(lengths, { batch: s.batch ?? undefined, tokenBudget: s.tokenBudget ?? undefined });
  const buffers = new Map<string, Float32Array>();
  for (const h of hooks) buffers.set(h.name, new Float32Array(n * h.dim));
  let seen = 0;
  for (const b of plan) {
    const tb = deps.padBatch(
      b.map((i) => input.ids[local + i]),
      input.tokenizer.padId,
      input.tokenizer.paddingSide,
    );
    const tc = performance.now();
    const res = await engine.run(tb);
    clock.computeMs += performance.now() - tc;
    for (const h of hooks) {
      const v = res.get(h.name);
      if (!v || v.length !== b.length * h.dim) throw new LobesError(`the capture engine returned ${v ? v.length : 'no'} values for ${h.name}, expected ${b.length}×${h.dim}`, { where: `chunk ${c}` });
      const buf = buffers.get(h.name)!;
      for (let k = 0; k < b.length; k++) buf.set(v.subarray(k * h.dim, (k + 1) * h.dim), b[k] * h.dim);
    }
    seen += b.length;
    let tk = 0;
    for (const i of b) tk += lengths[i];
    progress.tick(b.length, { tokens: tk });
  }
  if (seen !== n || new Set(plan.flat()).size !== n) throw new LobesError(`batch plan covers ${seen} rows of a ${n}-row chunk`, { where: `chunk ${c}` });
  return buffers;
}
