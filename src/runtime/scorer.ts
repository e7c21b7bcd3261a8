/**
 * The answer scorer's contract: what `lobes eval`, `lobes attend --cot` and `lobes ablate` ask
 * of a model (the logits of candidate tokens at each row's last token, and greedy steps through
 * the KV cache). The ONNX Runtime implementation is src/eval/engine.ts (openScorer).
 */
import type * as ort from 'onnxruntime-node';
import type { Device, Intervention, ModelInfo } from './types.js';

/** What the model says at each row's answering position. */
export interface HeadOutput {
  /** [rows, k] logits of the candidate tokens. */
  cand: Float32Array;
  /** [rows] log-sum-exp over the vocabulary. */
  lse: Float32Array;
  /** [rows] argmax over the vocabulary. */
  top: Int32Array;
  k: number;
}

/** A sequence's KV cache after some tokens. */
export interface KvState {
  /** Tokens the cache holds. */
  length: number;
  past: Map<string, ort.Tensor>;
}

export interface ScorerOptions {
  device: Device;
  deviceId?: number;
  threads?: number;
  /** Also open the KV-cache session (for generation). */
  generation?: boolean;
  /** Edits of activations (src/runtime/intervene.ts) in every forward pass, scoring and generation alike. */
  interventions?: Intervention[];
}

export interface Scorer {
  readonly info: ModelInfo;
  /** True when the model has KV-cache inputs (generation is possible). */
  readonly hasPast: boolean;
  /**
   * True when the KV-cache session accepts several new tokens after a non-empty cache (some
   * exports only take a prompt or one token at a time); `extend` then feeds one token at a time.
   */
  readonly multiTokenExtend: boolean;
  /** Score right-padded rows at their last tokens against `candidates`. */
  score(rows: number[][], candidates: number[], padId: number): Promise<HeadOutput>;
  /** Run one sequence from an empty cache. */
  prefill(ids: number[], candidates: number[]): Promise<{ out: HeadOutput; state: KvState }>;
  /** Feed more tokens of a sequence after its cache. */
  extend(state: KvState, ids: number[], candidates: number[]): Promise<{ out: HeadOutput; state: KvState }>;
  close(): Promise<void>;
}
