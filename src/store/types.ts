/**
 * The run directory: the contract between every stage. See docs/run-format.md.
 *
 *   RUN/manifest.json          RunManifest (below)
 *   RUN/samples.jsonl          one SampleRow per line, in dataset order
 *   RUN/activations/...        safetensors chunks per capture point (store-internal layout)
 *   RUN/wanda/                 written by `lobes wanda` (see src/wanda/types.ts)
 *   RUN/cluster/               written by `lobes cluster` (see src/cluster/types.ts)
 *
 * Stages never re-derive paths: they call openRun() and use the RunReader.
 */

/** A capture point as stored. */
export interface HookInfo {
  /** `final.hidden`, `layers.{i}.mlp.in`, `layers.{i}.mlp.down_in`, `layers.{i}.resid_out`. */
  name: string;
  /** Feature dimension d (values are [nSamples, d]). */
  dim: number;
  /** Stored dtype. Readers always return float32. */
  dtype: 'F16' | 'F32';
}

export interface SampleRow {
  /** Row index in the activation matrices (0-based, dataset order). */
  index: number;
  id: string;
  labels: Record<string, string>;
  /** Tokens actually fed to the model (after truncation). */
  tokens: number;
  /** Whether --max-tokens cut the start of the text. */
  truncated: boolean;
  /** The text given to the tokenizer (for hover text in reports). */
  text?: string;
  /** Where the item came from (from the dataset, when it had any). */
  provenance?: Record<string, string>;
}

/**
 * A model given as a GGUF file or a Hugging Face checkpoint folder, converted into the ONNX
 * folder a run used (src/convert/cache.ts).
 */
export interface ModelSourceRecord {
  format: 'gguf' | 'hf-checkpoint';
  /** Absolute path of the GGUF, or of the checkpoint folder. */
  path: string;
  /** Bytes of the GGUF (of a checkpoint: of every file read). */
  size: number;
  mtimeMs: number;
  /**
   * sha256 of every byte before the GGUF's data section (header, metadata, tensor infos); of a
   * checkpoint, of its config, index, shard headers and tokenizer files.
   */
  headerSha256: string;
  /**
   * sha256 of the whole GGUF file (runs written by older lobes: absent); of a checkpoint, one
   * sha256 over its files by name (src/store/lineage.ts modelFilesDigest of `files`).
   */
  sha256?: string;
  /** A checkpoint's files (config.json, index, shards, tokenizer files) with their sha256. */
  files?: { name: string; bytes: number; role: string; sha256: string }[];
  /**
   * The model's identity whichever layout it was converted to: sha256 over the GGUF's sha256,
   * the compute dtype and the weight storage as resolved (src/convert/cache.ts sourceIdentity).
   * Two commands that record the same identity ran the same model.
   */
  identity?: string;
  /** The converted model folder. */
  converted: string;
  /** Conversion options as requested. */
  options: { dtype: string; weights: string; layout: string };
}

/**
 * An edit of activations inside the model (src/runtime/intervene.ts) as a run records it: the
 * hook, the operation, its number or vector, and the positions edited.
 */
export interface InterventionRecord {
  hook: string;
  op: 'add' | 'scale' | 'replace' | 'zero';
  value?: number | number[];
  positions: 'all' | 'last';
}

export interface RunManifest {
  format: 'lobes-run';
  formatVersion: number;
  lobesVersion: string;
  createdAt: string;
  model: {
    /** Model folder, resolved to an absolute path (older runs: as given). */
    dir: string;
    /** sha256 of the (unedited) graph file. */
    graphSha256: string;
    /** Architecture summary as printed by `lobes inspect`. */
    arch: ModelArch;
    /** Set when the model is a random-weights control of another model (`extract --control random`). */
    control?: ControlInfo;
    /** Every file that shapes the numbers (graph, external data, tokenizer files) with its sha256. */
    files?: ModelFile[];
    /** Settings read from the graph itself (RoPE base, norm epsilon, heads), see docs/capture.md. */
    graph?: Record<string, unknown>;
    /** When the model was given as a GGUF file: that file and the converted folder (`dir`) made from it. */
    source?: ModelSourceRecord;
  };
  tokenizer: { source: string; chatTemplate: boolean; addBos: boolean; maxTokens: number | null };
  /** `limit`: the --limit sample the run holds (src/data/subset.ts), when one was taken. */
  /** `composition`: how the samples were composed from the items (socialeval: swap=SEED, src/data/swap.ts). */
  dataset: { spec: string; itemsSha256: string; count: number; axes: string[];
    limit?: { limit: number; by: string[]; seed: number; of: number };
    composition?: { kind: string; seed: number; responses: number; pairing: string; pairsSha256: string } };
  /** sha256 of samples.jsonl as written (checked on every read, resume and merge). */
  samplesSha256?: string;
  /** The run identity: sha256 over every setting and input hash (src/store/provenance.ts). */
  identity?: string;
  /**
   * `selection`: the --capture families, and `layers=L` when --layers chose the layers;
   * `interventions`: the edits of activations the values were captured under (`--intervene`), absent when none.
   */
  capture: { points: HookInfo[]; selection: string[]; interventions?: InterventionRecord[] };
  dtype: 'fp16' | 'fp32';
  provider: { device: string; deviceId: number };
  shard: { index: number; count: number } | null;
  counts: { samples: number; truncated: number; tokens: number };
  timings: Record<string, number>;
  /** Whether every sample of the (shard of the) dataset has been written. */
  complete: boolean;
  /** Settings that change the stored numbers (batching changes padding and kernels). */
  settings?: RunSettings;
  /** Which rows of the dataset this run holds and how they are chunked. */
  layout?: RunLayout;
}

/** A random-weights control model: how it was made from which model (src/runtime/control.ts). */
export interface ControlInfo {
  kind: 'random';
  seed: number;
  /** The trained model folder it copies the architecture and tokenizer of. */
  source: string;
  /** sha256 of the trained model's graph file. */
  sourceGraphSha256: string;
  /** How the weights were drawn, in words. */
  scheme: string;
  /** Version of the draw (src/runtime/control.ts CONTROL_VERSION; absent in older records: 1). */
  version?: number;
  /**
   * Set when the control's graph has another layout than `source` (lobes eval's genai layout of
   * a GGUF): the weights are the control drawn in `source`, the same values laid out again, and
   * `drawn` is that control's folder.
   */
  layout?: { name: 'genai'; drawn: string };
}

export interface RunSettings {
  /** --batch (max rows per batch), null when a token budget is used. */
  batch: number | null;
  /** --token-budget (max padded tokens per batch), null when not used. */
  tokenBudget: number | null;
  /** Rows per chunk file; chunk c holds dataset rows [c*chunkRows, (c+1)*chunkRows). */
  chunkRows: number;
}

export interface RunLayout {
  /** Rows of the whole dataset (all shards). */
  datasetRows: number;
  /** This run holds dataset rows [rowStart, rowEnd) (the whole dataset unless sharded). */
  rowStart: number;
  rowEnd: number;
  /** Global chunk numbers [chunkStart, chunkEnd) covered. */
  chunkStart: number;
  chunkEnd: number;
}

/** What an analysis records about the run it read (in its settings.json, as `provenance`). */
export interface AnalysisProvenance {
  /** The run identity (runIdentity of its manifest). */
  run: string;
  /** The run folder when the analysis ran (informative; runs may move). */
  runDir: string;
  /** sha256 of samples.jsonl: the rows and labels the analysis grouped by. */
  samplesSha256: string | null;
  /** Rows of the run. */
  rows: number;
  /** Each capture point read, with chunkDigest of its chunk files. */
  chunks: Record<string, string>;
  /** Each label overlay read (RUN/labels/AXIS.json, e.g. `correct` from lobes eval label), with the sha256 of the file as read. */
  overlays?: Record<string, string>;
}

/** A file of the model folder that shapes a run's numbers. */
export interface ModelFile {
  /** Path relative to the model folder. */
  name: string;
  role: 'graph' | 'data' | 'tokenizer';
  bytes: number;
  sha256: string;
}

export interface ModelArch {
  family: string;
  layers: number;
  hidden: number;
  intermediate: number;
  heads: number | null;
  kvHeads: number | null;
  vocab: number;
  dtype: string;
  quantization: string | null;
}

/** A block of consecutive rows of one capture point. */
export interface RowChunk {
  /** First row index. */
  start: number;
  /** Number of rows. */
  rows: number;
  /** [rows, dim] row-major float32. */
  data: Float32Array;
}

/** Typed, read-only access to a run directory. */
export interface RunReader {
  readonly dir: string;
  readonly manifest: RunManifest;
  /** Rows in dataset order. */
  readonly samples: SampleRow[];
  /** Capture points present. */
  hooks(): HookInfo[];
  hook(name: string): HookInfo;
  /** Label axes, e.g. ['aspect', 'ability', 'language']. */
  labelAxes(): string[];
  /** The value of one axis for every row (throws naming the axis when unknown). */
  labels(axis: string): string[];
  /**
   * Whether each row has a value on `axis`: false for an empty label, and for the rows a label
   * overlay does not list (they read as its default, e.g. "unevaluated" after `lobes eval
   * label`). The analyses compare only the rows with a value and say how many they left out.
   */
  labelled?(axis: string): boolean[];
  /** Row indices whose label on `axis` equals `value`. */
  select(axis: string, value: string): Int32Array;
  /** Rows of a hook as [rows.length, dim] float32 (all rows when omitted). Reads only those rows. */
  read(hook: string, rows?: ArrayLike<number>): Promise<Float32Array>;
  /** Stream a hook in row chunks with constant memory. */
  iterate(hook: string, chunkRows?: number): AsyncIterable<RowChunk>;
  /**
   * Absolute path of an analysis sub-folder, e.g. 'wanda', 'cluster' (not created: write it
   * whole with writeDirAtomic from src/util/io.ts).
   */
  analysisDir(name: string): string;
}

/**
 * Module contract (implemented in src/store/index.ts):
 *   export function openRun(dir: string): Promise<RunReader>
 * Writers (RunWriter, chunking, resume, merge) are store-internal and used by src/extract/run.ts.
 */
