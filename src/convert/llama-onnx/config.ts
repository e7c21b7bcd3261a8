/**
 * config.json (Hugging Face LlamaConfig fields) and genai_config.json (onnxruntime-genai's
 * model description) for a written model folder.
 */
import type { LlamaSpec, WriteLlamaOptions } from './types.js';

/** Hugging Face architecture class of each model_type the writer lays out. */
const ARCHITECTURES: Record<string, string> = {
  llama: 'LlamaForCausalLM',
  mistral: 'MistralForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  phi3: 'Phi3ForCausalLM',
  gemma: 'GemmaForCausalLM',
  gemma2: 'Gemma2ForCausalLM',
  gemma3_text: 'Gemma3ForCausalLM',
};

/** Hugging Face config fields of a spec (config.json: LlamaConfig, or Qwen2Config / Qwen3Config). */
export function llamaConfigJson(spec: LlamaSpec,
  opts: Pick<WriteLlamaOptions, 'dtype' | 'weights' | 'layout' | 'withPast'>): Record<string, unknown>
{
  const out: Record<string, unknown> = {
    architectures: [ARCHITECTURES[spec.modelType ?? 'llama'] ?? 'LlamaForCausalLM'],
    model_type: spec.modelType ?? 'llama',
    hidden_size: spec.hidden,
    intermediate_size: spec.intermediate,
    num_hidden_layers: spec.layers,
    num_attention_heads: spec.heads,
    num_key_value_heads: spec.kvHeads,
    head_dim: spec.headDim,
    vocab_size: spec.vocab,
    rms_norm_eps: spec.rmsNormEps,
    rope_theta: spec.ropeTheta,
    rope_scaling: spec.ropeScaling,
    hidden_act: spec.gemma ? 'gelu_pytorch_tanh' : 'silu',
    max_position_embeddings: spec.maxPositions,
    tie_word_embeddings: spec.tiedEmbeddings,
    attention_bias: !!spec.attnBias,
    ...(spec.modelType === 'mistral' || spec.modelType === 'phi3'
      ? { sliding_window: spec.slidingWindow ?? null }
      : {}),
    ...(spec.rotaryDim !== undefined && spec.rotaryDim !== spec.headDim
      ? { partial_rotary_factor: spec.rotaryDim / spec.headDim }
      : {}),
    mlp_bias: false,
    bos_token_id: spec.bosTokenId ?? null,
    eos_token_id: spec.eosTokenId ?? null,
    pad_token_id: spec.padTokenId ?? null,
    torch_dtype: opts.dtype === 'fp16' ? 'float16' : 'float32',
    use_cache: opts.layout === 'genai' || !!opts.withPast,
  };
  const gm = spec.gemma;
  if (gm && !gm.postNorms) out.hidden_act = 'gelu_pytorch_tanh';
  else if (gm) {
    // Gemma2Config / Gemma3TextConfig fields (the older rope spelling, which both read).
    Object.assign(out, {
      hidden_activation: 'gelu_pytorch_tanh',
      query_pre_attn_scalar: gm.queryPreAttnScalar,
      attn_logit_softcapping: gm.attnSoftcap,
      final_logit_softcapping: gm.finalSoftcap,
      sliding_window: spec.slidingWindow ?? null,
      layer_types: gm.sliding.map((x) => (x ? 'sliding_attention' : 'full_attention')),
      ...(gm.localRope ? { rope_local_base_freq: gm.localRope.theta } : {}),
    });
  }
  if (opts.weights === 'q4')
    out.quantization_config = { quant_method: 'matmul_nbits', bits: 4, block_size: 32, symmetric: false };
  return out;
}

/** onnxruntime-genai's genai_config.json for a 'genai' layout folder. */
export function genaiConfigJson(spec: LlamaSpec): Record<string, unknown> {
  const eos = spec.eosTokenId ?? null;
  return {
    model: {
      bos_token_id: spec.bosTokenId ?? null,
      context_length: spec.maxPositions,
      decoder: {
        session_options: { log_id: 'onnxruntime-genai', provider_options: [] },
        filename: 'model.onnx',
        head_size: spec.headDim,
        hidden_size: spec.hidden,
        inputs: {
          input_ids: 'input_ids',
          attention_mask: 'attention_mask',
          past_key_names: 'past_key_values.%d.key',
          past_value_names: 'past_key_values.%d.value',
        },
        outputs: { logits: 'logits', present_key_names: 'present.%d.key', present_value_names: 'present.%d.value' },
        num_attention_heads: spec.heads,
        num_hidden_layers: spec.layers,
        num_key_value_heads: spec.kvHeads,
      },
      eos_token_id: eos,
      pad_token_id: spec.padTokenId ?? (Array.isArray(eos) ? (eos[0] ?? null) : eos),
      type: spec.modelType ?? 'llama',
      vocab_size: spec.vocab,
    },
    search: {
      diversity_penalty: 0,
      do_sample: false,
      early_stopping: true,
      length_penalty: 1,
      max_length: spec.maxPositions,
      min_length: 0,
      no_repeat_ngram_size: 0,
      num_beams: 1,
      num_return_sequences: 1,
      past_present_share_buffer: true,
      repetition_penalty: 1,
      temperature: 1,
      top_k: 1,
      top_p: 1,
    },
  };
}
