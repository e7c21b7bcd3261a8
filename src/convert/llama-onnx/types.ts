/**
 * The public types of the streaming Llama ONNX writer: the model description (LlamaSpec), the
 * weight source it reads (LlamaWeightSource, by Hugging Face weight name), and the options.
 */

/** A Llama-architecture decoder, in Hugging Face LlamaConfig terms. */
export interface LlamaSpec {
  layers: number;
  hidden: number;
  intermediate: number;
  heads: number;
  kvHeads: number;
  /** Usually hidden / heads; may differ (q_proj then has heads·headDim outputs). */
  headDim: number;
  vocab: number;
  rmsNormEps: number;
  ropeTheta: number;
  /**
   * Hugging Face rope_scaling (e.g. { rope_type: 'llama3', factor, low_freq_factor,
   * high_freq_factor, original_max_position_embeddings }), or null. Supported: 'llama3',
   * 'linear', 'yarn', 'longrope' (Phi-3: short_factor / long_factor, one per rotary frequency,
   * original_max_position_embeddings, optional factor / attention_factor) and 'default';
   * anything else is refused.
   */
  ropeScaling: Record<string, unknown> | null;
  /** Context length (max_position_embeddings; the genai layout's cos/sin cache length). */
  maxPositions: number;
  /** lm_head shares model.embed_tokens.weight (no lm_head.weight in the source). */
  tiedEmbeddings: boolean;
  bosTokenId?: number | null;
  eosTokenId?: number | number[] | null;
  padTokenId?: number | null;
  /** model_type for config.json (default 'llama'): llama, mistral, qwen2, qwen3, phi3, gemma2 or gemma3_text. */
  modelType?: string;
  /**
   * Biases on q_proj, k_proj and v_proj (not o_proj), as Qwen2 / Qwen2.5 have them:
   * model.layers.{i}.self_attn.{q,k,v}_proj.bias, added after each projection (default false).
   */
  attnBias?: boolean;
  /**
   * Qwen3's per-head RMSNorm of the queries and keys (model.layers.{i}.self_attn.{q,k}_norm.weight,
   * [headDim], epsilon rmsNormEps), applied to each head after the projection and before the
   * rotary embedding (default false).
   */
  qkNorm?: boolean;
  /**
   * Mistral's sliding-window attention: query i sees key j only when i − j < slidingWindow (as
   * transformers masks it), in every layer. Null or absent: full causal attention.
   */
  slidingWindow?: number | null;
  /**
   * Dims of each q/k head that rotate (transformers' int(headDim · partial_rotary_factor),
   * Phi-4-mini's partial rotary): the first rotaryDim dims rotate as a head of that size
   * (halves of rotaryDim/2), the rest pass through. Absent: headDim (the whole head).
   */
  rotaryDim?: number;
  /**
   * Gemma 2 / Gemma 3 text (absent for every other family): RMSNorms that scale by (1 + w),
   * embeddings times sqrt(hidden), tanh-approximated GELU on the gate, norms after attention
   * and after the MLP (see GemmaSpec).
   */
  gemma?: GemmaSpec;
}

/**
 * What Gemma 2 and Gemma 3 (text) add to the Llama graph, as transformers computes them (Gemma 1:
 * the same without the post norms, soft-caps and windows, postNorms false):
 *
 *   x = embed(ids) · sqrt(hidden)
 *   per layer: x += post_attention_layernorm(attn(input_layernorm(x)))
 *              x += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x)))
 *   mlp(h) = down(gelu_tanh(gate(h)) · up(h)); every norm x / rms(x) · (1 + w)
 *   logits = cap · tanh(lm_head(norm(x)) / cap) with the final soft-cap (Gemma 2)
 *
 * Attention: scores · queryPreAttnScalar^−½, then cap · tanh(s / cap) with the
 * attention soft-cap (Gemma 2), then the mask; layers marked sliding see keys j with
 * i − j < slidingWindow only, and rotate with localRope (Gemma 3's rope_local_base_freq) when
 * given; the others with ropeTheta / ropeScaling. Gemma 3's q_norm / k_norm are qkNorm with
 * (1 + w) too.
 */
export interface GemmaSpec {
  /**
   * Gemma 2 / 3: post_attention_layernorm normalizes the attention output and
   * pre_feedforward_layernorm / post_feedforward_layernorm surround the MLP. False for Gemma 1,
   * whose two norms per layer sit where Llama's do.
   */
  postNorms: boolean;
  /** query_pre_attn_scalar: the attention scores are scaled by its inverse square root. */
  queryPreAttnScalar: number;
  /** attn_logit_softcapping (Gemma 2), or null. */
  attnSoftcap: number | null;
  /** final_logit_softcapping (Gemma 2), or null. */
  finalSoftcap: number | null;
  /** Per layer: whether it is a sliding_attention layer (window spec.slidingWindow). */
  sliding: boolean[];
  /** RoPE of the sliding layers when it is their own (Gemma 3); absent: the spec's. */
  localRope?: { theta: number; scaling: Record<string, unknown> | null };
}

/**
 * Weights by Hugging Face name, W in HF layout [d_out, d_in] (embeddings [vocab, hidden]).
 * Names: model.embed_tokens.weight, model.layers.{i}.input_layernorm.weight,
 * model.layers.{i}.self_attn.{q,k,v,o}_proj.weight, model.layers.{i}.post_attention_layernorm.weight,
 * model.layers.{i}.mlp.{gate,up,down}_proj.weight, model.norm.weight, lm_head.weight (absent
 * when tied); with `attnBias` model.layers.{i}.self_attn.{q,k,v}_proj.bias, with `qkNorm`
 * model.layers.{i}.self_attn.{q,k}_norm.weight. q/k rows are in HF order (already un-permuted from any GGUF rope layout).
 */
export interface LlamaWeightSource {
  /** [rows, cols] of a weight (1-D norms: [n]). Throws naming the weight when missing. */
  shape(name: string): number[];
  /**
   * Rows [r0, r1) as float32, row-major. May be called repeatedly in increasing row order.
   * A 1-D weight [n] is n rows of one value: rows(name, 0, n) is the whole vector.
   */
  rows(name: string, r0: number, r1: number): Float32Array;
  /**
   * Optional: rows() written into `out` (at least (r1 − r0)·cols long) and returned as its
   * first (r1 − r0)·cols values, so that a writer streaming gigabytes reuses one buffer
   * instead of allocating a fresh chunk each time.
   */
  rowsInto?(name: string, r0: number, r1: number, out: Float32Array): Float32Array;
  /**
   * Optional: 4-bit (or 8-bit) blocks that map exactly onto MatMulNBits for this weight
   * (blocks along d_in), or null → the writer quantizes/expands from rows().
   */
  nbits?(name: string): NbitsBlocks | null;
  /**
   * Optional: rows [r0, r1) as the bfloat16 bit patterns the source stores, copied into `out`
   * (at least (r1 − r0)·cols long) and returned as its first (r1 − r0)·cols values, or null when
   * the weight is not stored as bfloat16. The writer's bf16 storage uses it to copy the bits
   * without decoding them (else it takes the high halves of rows() and checks the low halves are 0).
   */
  bf16RowsInto?(name: string, r0: number, r1: number, out: Uint16Array): Uint16Array | null;
}

/** A [dOut, dIn] weight in MatMulNBits form. */
export interface NbitsBlocks {
  bits: 4 | 8;
  /** Values per block along d_in: a power of two ≥ 16 (MatMulNBits' block_size). */
  blockSize: number;
  /** uint8 [dOut, dIn/blockSize, blockSize*bits/8], codes packed low bits first. */
  weights: Uint8Array;
  /** float32 [dOut, dIn/blockSize] */
  scales: Float32Array;
  /** uint8 packed like MatMulNBits zero_points ([dOut, ceil(nBlocks·bits/8)]), or null with `mins` set. */
  zeroPoints: Uint8Array | null;
  /** float32 [dOut, dIn/blockSize]: value = q*scale + min (types with a min, e.g. Q4_1/Q4_K). */
  mins?: Float32Array | null;
  /**
   * Hands the arrays back to the source for its next weight of the same size. Call it only once
   * nothing reads them any more (the writer does, after writing them); not calling it is safe.
   */
  release?: () => void;
}

export type LlamaLayout = 'explicit' | 'genai';

export interface WriteLlamaOptions {
  /**
   * 'explicit': optimum/transformers.js style (decomposed RMSNorm, RoPE from position_ids,
   * MatMul(q,kᵀ)+mask → Softmax → MatMul(·,v), SiLU as Sigmoid·x), the layout lobes'
   * attention capture reads directly. 'genai': onnxruntime-genai builder style
   * (SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization, GroupQueryAttention
   * with in-op rotary from cos/sin caches, KV-cache inputs/outputs).
   */
  layout: LlamaLayout;
  /** Compute/activation dtype of the graph. */
  dtype: 'fp32' | 'fp16';
  /**
   * Projection weight storage: 'q4' = MatMulNBits 4-bit block 32 (exact blocks from nbits()
   * when given, 8-bit ones included, else quantized from rows()), 'fp16', 'fp32', 'bf16'
   * (bfloat16 initializers, each behind a Cast to the compute dtype: exact only for weights that
   * are bfloat16 already, and the writer refuses any other value).
   * Embeddings and norms are never quantized; 'fp32' and 'bf16' weights need dtype 'fp32'.
   */
  weights: 'q4' | 'fp16' | 'fp32' | 'bf16';
  /** KV-cache inputs/outputs (always on for 'genai'). */
  withPast?: boolean;
  /**
   * MatMulNBits accuracy_level (0 = unset: float compute, the faithful default; 4 = int8
   * activations, what onnxruntime-genai's builder sets for CPU int4: faster, less exact).
   */
  accuracyLevel?: 0 | 1 | 2 | 3 | 4;
  /** Extra files written into the folder inside the same atomic rename (e.g. tokenizer.json). */
  extraFiles?: Record<string, string | Uint8Array>;
  /** Replace an existing non-empty folder (default: refuse). */
  overwrite?: boolean;
  /**
   * Called when the folder is complete in its temporary place, before it is renamed into
   * place: a throw abandons it (nothing is left behind). The temporary folder is passed.
   */
  beforeCommit?: (tmp: string) => void;
  /** Largest float32 chunk of one tensor held at a time, in bytes (default 32 MiB). */
  chunkBytes?: number;
  /** Called after each chunk: bytes of model.onnx.data written so far, the planned total, the tensor. */
  onProgress?: (doneBytes: number, totalBytes: number, tensor: string) => void;
}

export interface WriteLlamaResult {
  dir: string;
  /** Bytes of model.onnx. */
  modelBytes: number;
  /** Bytes of model.onnx.data. */
  dataBytes: number;
  /** Seconds: streaming the weights (fsync of the data file included), that fsync alone, encoding the graph, all. */
  seconds: { weights: number; sync: number; graph: number; total: number };
  /** How each projection weight was stored (HF name → 'fp32' | 'fp16' | 'bf16' | 'q4:rows' | 'nbits4' | 'nbits8'). */
  storage: Record<string, string>;
}
