/**
 * The capture engine's surface, used by `lobes extract` (src/extract/run.ts) and tests.
 */
import type { ModelArch } from '../store/types.js';
import type { CaptureFamily, Hook } from '../hooks.js';

export type { CaptureFamily } from '../hooks.js';

export type Device = 'cpu' | 'cuda' | 'webgpu';

/** A capture point found in the graph: its hook (layer and site, src/hooks.ts) and what it holds. */
export type CapturePoint = Hook & {
  /** Hook name (hookName of its layer and site): `final.hidden`, `layers.{i}.mlp.in`, `layers.{i}.mlp.down_in`, `layers.{i}.resid_out`. */
  name: string;
  /** Feature dimension. */
  dim: number;
  /** Name of the graph value captured (informative; not stable across exporters). */
  value: string;
  /** For mlp points: which projections read it, as HF names (gate_proj, up_proj, down_proj)
   *  with the weight initializer and its layout. */
  projections?: ProjectionRef[];
};

export interface ProjectionRef {
  /** 'gate_proj' | 'up_proj' | 'down_proj' | attention projections later. */
  proj: string;
  /** Op type: MatMul, Gemm or MatMulNBits. */
  op: string;
  /** Initializer name(s) holding the weight (and for MatMulNBits its scales / zero points). */
  weight: string;
  scales?: string;
  zeroPoints?: string;
  /** Layout of the stored weight: 'in_out' (MatMul [d_in, d_out]), 'out_in' (Gemm transB=1 / HF), 'nbits' (MatMulNBits). */
  layout: 'in_out' | 'out_in' | 'nbits';
  dIn: number;
  dOut: number;
  /** MatMulNBits attributes. */
  bits?: number;
  blockSize?: number;
}

export interface ModelInfo {
  dir: string;
  arch: ModelArch;
  points: CapturePoint[];
  /** Providers this build of onnxruntime-node can use. */
  providers: { name: string; available: boolean; note?: string }[];
  /** Graph inputs (names, dtypes) the session needs. */
  inputs: { name: string; dtype: string; shape: (number | string)[] }[];
  /** The graph's own settings (RoPE base, norm epsilon, heads) against the config files (src/runtime/consistency.ts). */
  check?: ModelCheck;
}

/** A tokenized batch, padded. */
export interface TokenBatch {
  /** [batch, seq] token ids. */
  inputIds: BigInt64Array;
  /** [batch, seq] 1 for real tokens. */
  attentionMask: BigInt64Array;
  batch: number;
  seq: number;
  /** Index of each row's last real token. */
  lastIndex: Int32Array;
}

/** One capture session over an edited graph. */
export interface CaptureEngine {
  readonly info: ModelInfo;
  /** Hooks this engine outputs (a subset of info.points). */
  readonly hooks: CapturePoint[];
  /** Run one batch; returns float32 [batch, dim] per hook (last real token of each row). */
  run(batch: TokenBatch): Promise<Map<string, Float32Array>>;
  close(): Promise<void>;
}

/** How an intervention edits a value (src/runtime/intervene.ts). */
export type InterventionOp = 'add' | 'scale' | 'replace' | 'zero';

/** An edit of one hook's value inside the graph, seen by everything downstream (src/runtime/intervene.ts). */
export interface Intervention {
  /** A hook of the capture vocabulary (src/hooks.ts): `layers.3.resid_out`, `layers.5.mlp.down_in`, `final.hidden`, ... */
  hook: string;
  op: InterventionOp;
  /** add / replace: a vector of the hook's width or one number; scale: one number or a vector; zero: none. */
  value?: Float32Array | number;
  /** Which positions are edited: every one (default) or each row's last real token. */
  positions?: 'all' | 'last';
}

export interface EngineOptions {
  capture: CaptureFamily[];
  /** Edits of activations, applied in order before anything is captured (src/runtime/intervene.ts). */
  interventions?: Intervention[];
  /** Layers whose per-layer points are captured: 'all' (default), 'last:N' or '0,3,10-19'; final.hidden always. */
  layers?: string;
  device: Device;
  deviceId?: number;
  /** ONNX Runtime intra-op threads (default: onnxruntime's choice). */
  threads?: number;
}

/**
 * Module contracts (implemented in src/runtime/):
 *   engine.ts    export function openCaptureEngine(modelDir: string, opts: EngineOptions): Promise<CaptureEngine>
 *                export function inspectModel(modelDir: string): Promise<ModelInfo>
 *   tokenize.ts  export function loadTokenizer(modelDir: string, opts: TokenizerOptions): Promise<LobesTokenizer>
 *   batching.ts  export function planBatches(lengths: ArrayLike<number>, opts: BatchPlanOptions): number[][]
 *                export function padBatch(seqs: number[][], padId: number, side: 'left' | 'right'): TokenBatch
 *   run.ts       export function runExtract(opts: ExtractOptions): Promise<RunManifest>   (the `lobes extract` job)
 */
export interface TokenizerOptions {
  /** Keep at most this many tokens, cutting from the START (the last token is what is analysed). */
  maxTokens: number | null;
  /** Wrap each text as a user turn with the tokenizer's chat template. */
  chatTemplate: boolean;
}

export interface Tokenized {
  ids: number[];
  /** Tokens before truncation. */
  fullLength: number;
  truncated: boolean;
}

export interface LobesTokenizer {
  /** Where the tokenizer came from (folder and files). */
  source: string;
  addBos: boolean;
  chatTemplate: boolean;
  padId: number;
  /** Padding side used for batches. */
  paddingSide: 'left' | 'right';
  encode(text: string): Tokenized;
}

export interface BatchPlanOptions {
  /** Max rows per batch. */
  batch?: number;
  /** Max padded tokens (rows × longest) per batch. */
  tokenBudget?: number;
}

// ---------------------------------------------------------------------------------------
// The consistency check of a model (src/runtime/consistency.ts)

/** What the graph itself computes with. Null where the graph does not show it. */
export interface GraphFacts {
  /** RoPE base fitted to the graph's frequencies. */
  ropeTheta: number | null;
  /** Where the frequencies were read: 'inv_freq constant' or 'cos/sin cache'. */
  ropeSource: string | null;
  /** Rotary dimension (2 × the number of frequencies). */
  rotaryDim: number | null;
  /** Whether the frequencies depart from a plain θ^(−2i/d) progression (RoPE scaling). */
  ropeScaled: boolean | null;
  /** Positions the rotary cos/sin cache covers (fused graphs). */
  ropePositions: number | null;
  /** Distinct RMSNorm epsilons. */
  rmsNormEps: number[];
  heads: number | null;
  kvHeads: number | null;
  headDim: number | null;
}

/** What one config source declares. */
export interface DeclaredFacts {
  /** e.g. 'config.json', 'genai_config.json', 'model.gguf'. */
  source: string;
  ropeTheta?: number;
  /** Where ropeTheta was read, e.g. 'rope_parameters.rope_theta'. */
  ropeThetaField?: string;
  ropeScaling?: RopeScaling | null;
  rmsNormEps?: number;
  heads?: number;
  kvHeads?: number;
  headDim?: number;
  contextLength?: number;
}

export interface RopeScaling {
  type: string;
  factor?: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  originalMax?: number;
}

/** The graph's facts, each source's declarations, and every disagreement (one line each). */
export interface ModelCheck {
  graph: GraphFacts;
  declared: DeclaredFacts[];
  problems: string[];
  /** Context length: the smallest of the declared lengths and the rotary cache's positions. */
  context: { tokens: number; source: string } | null;
  /** Frequencies recovered from the graph (not stored). */
  frequencies?: Float64Array;
}
