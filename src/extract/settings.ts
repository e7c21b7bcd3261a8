/**
 * The options of `lobes extract` and the two records its stages share: Settings (the options
 * with their defaults filled in) and Input (the dataset rows of this run or shard, tokenized).
 */
import { UsageError, opt } from '../util/errors.js';
import type { Dataset } from '../data/types.js';
import type { ControlInfo, ModelSourceRecord, SampleRow } from '../store/types.js';
import type { BatchPlanOptions, CaptureEngine, CaptureFamily, Device, EngineOptions, Intervention, LobesTokenizer,
  TokenBatch, TokenizerOptions } from '../runtime/types.js';
import { shardRange, type ShardSpec } from '../store/layout.js';
import type { ModelFileRef } from '../store/provenance.js';
import type { ModelFile } from '../store/types.js';
import type { ContextLimit } from '../runtime/config.js';
import { canonicalLayerSpec } from '../runtime/layers.js';
import type { LimitRecord, LimitSpec } from '../data/subset.js';
import type { JobIOOptions } from '../util/jobio.js';

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

/** Its IO (`io`: log lines, warnings, progress, the signal that cancels it between chunks, the run left resumable) and the deprecated `quiet`, `log`, `signal` (src/util/jobio.ts). */
export interface ExtractOptions extends JobIOOptions {
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
  /** The model is a random-weights control (src/runtime/control.ts): recorded as manifest model.control. */
  control?: ControlInfo;
  /** Edits of activations the values are captured under (`--intervene`, src/runtime/intervene.ts): recorded as manifest capture.interventions, part of the run's identity. */
  interventions?: Intervention[];
}

export const DEFAULT_CHUNK_ROWS = 128;

export const DEFAULT_BATCH = 8;

async function defaultDeps(): Promise<ExtractDeps> {
  // Loaded lazily so that tests injecting every piece never load ONNX Runtime.
  const [e, t, b, d] = await Promise.all([import('../runtime/engine.js'), import('../runtime/tokenize.js'),
    import('../runtime/batching.js'), import('../data/index.js')]);
  return { openCaptureEngine: e.openCaptureEngine, loadTokenizer: t.loadTokenizer, planBatches: b.planBatches,
    padBatch: b.padBatch, loadDataset: (s: string) => d.loadDataset(s) };
}

export async function resolveDeps(given: Partial<ExtractDeps> | undefined): Promise<ExtractDeps> {
  if (given && given.loadDataset && given.loadTokenizer && given.openCaptureEngine && given.planBatches &&
    given.padBatch) return given as ExtractDeps;
  return { ...(await defaultDeps()), ...given };
}

/** The options of one extraction with their defaults filled in. */
export interface Settings {
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
  interventions: Intervention[];
}

/** The dataset rows of this run (or shard), tokenized. */
export interface Input {
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

/** --layers in its canonical text (null: all layers), so that equal selections get equal records. */
function selectedLayers(spec: string | undefined): string | null {
  if (spec === undefined) return null;
  const c = canonicalLayerSpec(spec);
  return c === 'all' ? null : c;
}

/** Fill in the defaults; a bad chunk size is a usage error. */
export function resolveSettings(opts: ExtractOptions): Settings {
  const chunkRows = opts.chunkRows ?? DEFAULT_CHUNK_ROWS;
  if (!Number.isInteger(chunkRows) || chunkRows < 1)
    throw new UsageError(`${opt('chunkRows')} must be a positive integer, got ${chunkRows}`);
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
    interventions: opts.interventions ?? [],
  };
}

/** Rows [start, start + n) of dataset chunk c. */
export function chunkSpan(c: number, chunkRows: number, N: number): { start: number; n: number } {
  const start = c * chunkRows;
  return { start, n: Math.min(start + chunkRows, N) - start };
}
