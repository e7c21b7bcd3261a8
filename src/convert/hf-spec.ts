/**
 * A Hugging Face config.json as a Llama spec: the family it names (model_type or
 * architectures[0]; families lobes' graphs cannot express refused by name, REFUSED_FAMILIES) and
 * every hyperparameter read and checked (hfSpec), each setting lobes cannot express refused with
 * a one-line error naming config.json and the key. The rope and Gemma settings are read by
 * src/convert/hf-config.ts; the checkpoint's weights by src/convert/hf-checkpoint.ts.
 */
import { ModelError } from '../util/errors.js';
import type { LlamaSpec } from './llama-onnx/index.js';
import { gemmaSettings, hfRope, posInt, HF_FAMILIES, type HfFamily } from './hf-config.js';

/** Gemma 1, Gemma 2 and Gemma 3 text: (1 + w) norms, GeGLU, sqrt(hidden) embeddings; 2 and 3 post norms and per-layer windows (LlamaSpec.gemma). */
const isGemma = (f: HfFamily): f is 'gemma' | 'gemma2' | 'gemma3_text' =>
  f === 'gemma' || f === 'gemma2' || f === 'gemma3_text';

/**
 * Families lobes' graphs cannot express, each with the difference it lacks (model_type →
 * what is missing). They are refused by name, never converted approximately.
 */
export const REFUSED_FAMILIES: Record<string, string> = {
  mixtral: 'mixture-of-experts MLPs (a router choosing experts per token)',
  qwen2_moe: 'mixture-of-experts MLPs (a router choosing experts per token)',
  qwen3_moe: 'mixture-of-experts MLPs (a router choosing experts per token)',
  deepseek_v2: 'mixture-of-experts MLPs and multi-head latent attention',
  deepseek_v3: 'mixture-of-experts MLPs and multi-head latent attention',
  gpt_oss: 'attention sinks (a learned logit per head in every softmax) and mixture-of-experts MLPs',
  gemma3:
    'vision tower (Gemma3ForConditionalGeneration is multimodal: its text model sits under model.language_model next to the image encoder)',
  phi: 'LayerNorm with a bias and attention parallel to the MLP',
  olmo2: 'RMSNorm after attention and MLP (post-norm) with q/k norms over all heads at once',
  cohere: 'LayerNorm with attention parallel to the MLP',
  gpt2: 'LayerNorm and learned absolute positions',
  gpt_neox: 'LayerNorm with attention parallel to the MLP',
  falcon: 'LayerNorm with attention parallel to the MLP',
};

/** The family of a config.json: its model_type (or architectures[0]), refused by name when lobes cannot express it. */
export function hfFamily(config: Record<string, any>, file: string): HfFamily {
  const mt = typeof config.model_type === 'string' ? config.model_type : null;
  const arch = Array.isArray(config.architectures) ? String(config.architectures[0] ?? '') : '';
  const type = mt ??
    ({ LlamaForCausalLM: 'llama', MistralForCausalLM: 'mistral', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3',
      Phi3ForCausalLM: 'phi3', GemmaForCausalLM: 'gemma', Gemma2ForCausalLM: 'gemma2',
      Gemma3ForCausalLM: 'gemma3_text' } as Record<string, string>)[arch] ??
    null;
  if (type === null)
    throw new ModelError('has no model_type: the model family is unknown', { file,
      hint: 'a config.json written by transformers names it' });
  if ((HF_FAMILIES as readonly string[]).includes(type)) return type as HfFamily;
  const lacks = REFUSED_FAMILIES[type];
  if (type === 'gemma3')
    throw new ModelError(`model_type "gemma3" is not converted: it is Gemma 3 with a ${lacks}`, { file,
      where: 'model_type',
      hint: 'a text-only Gemma 3 (model_type gemma3_text, Gemma3ForCausalLM, as Gemma 3 1B is saved) converts' });
  if (lacks)
    throw new ModelError(`model_type "${type}" is not converted: lobes' graphs do not express its ${lacks}`, { file,
      where: 'model_type', hint: `lobes converts ${HF_FAMILIES.join(', ')}` });
  throw new ModelError(`model_type "${type}" is not one lobes converts (${HF_FAMILIES.join(', ')})`, { file,
    where: 'model_type' });
}

/** A config.json (of a known family) as a Llama spec, with every setting lobes cannot express refused. */
export function hfSpec(config: Record<string, any>, file: string): { family: HfFamily; spec: LlamaSpec } {
  const family = hfFamily(config, file);
  const fail = (where: string, cause: string, hint?: string): never => {
    throw new ModelError(cause, { file, where, ...(hint ? { hint } : {}) });
  };
  const int = (key: string, fallback?: number): number => {
    const v = config[key] ?? fallback;
    if (!posInt(v))
      fail(key, v === undefined
        ? `missing: every ${family} config.json has it`
        : `must be a positive integer, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const layers = int('num_hidden_layers');
  const hidden = int('hidden_size');
  const intermediate = int('intermediate_size');
  if (Array.isArray(config.intermediate_size))
    fail('intermediate_size',
      'is a list (a size per layer): lobes converts models whose layers all have the same shape');
  const heads = int('num_attention_heads');
  const kvHeads = int('num_key_value_heads', heads);
  if (heads % kvHeads !== 0)
    fail('num_key_value_heads', `${heads} attention heads are not a multiple of ${kvHeads} KV heads`);
  // Defaults of the config classes where config.json leaves head_dim out (Qwen3Config 128, Gemma2Config / Gemma3TextConfig 256).
  const headDim = config.head_dim ?? (family === 'qwen3' ? 128 : isGemma(family) ? 256 : hidden / heads);
  if (!posInt(headDim)) fail('head_dim', `head dim ${headDim} is not a positive integer`);
  if (headDim % 2 !== 0) fail('head_dim', `head dim ${headDim} is odd: rotary embeddings need pairs`);
  const vocab = int('vocab_size');
  if (family === 'gemma') {
    // Gemma 1's MLP reads hidden_act; GemmaConfig reads the official configs' "gelu" as gelu_pytorch_tanh.
    const gact = config.hidden_act ?? 'gelu_pytorch_tanh';
    if (gact !== 'gelu_pytorch_tanh' && gact !== 'gelu')
      fail('hidden_act',
        `activation "${gact}" is not gelu_pytorch_tanh: lobes' Gemma graphs compute GELU with the tanh approximation`);
  } else if (isGemma(family)) {
    // Gemma 2 / 3's MLP reads hidden_activation (gelu_pytorch_tanh by default).
    const gact = config.hidden_activation ?? 'gelu_pytorch_tanh';
    if (gact !== 'gelu_pytorch_tanh')
      fail('hidden_activation',
        `activation "${gact}" is not gelu_pytorch_tanh: lobes' Gemma graphs compute GELU with the tanh approximation`);
  } else {
    const act = config.hidden_act ?? config.hidden_activation ?? 'silu';
    if (act !== 'silu') fail('hidden_act', `activation "${act}" is not SiLU: lobes' graphs compute SwiGLU MLPs`);
  }
  if (config.mlp_bias) fail('mlp_bias', "biases on the MLP projections are not expressed by lobes' graphs");
  if (family !== 'qwen2' && config.attention_bias)
    fail('attention_bias',
      `attention_bias puts a bias on o_proj as well as q, k, v; lobes' graphs add biases to q, k and v only (as Qwen2 has them)`);
  if (config.num_local_experts || config.num_experts || config.n_routed_experts)
    fail('num_experts', "mixture-of-experts MLPs are not expressed by lobes' graphs");
  // partial_rotary_factor at the top level, or inside rope_parameters / rope_scaling (transformers 5).
  const ppd = config.partial_rotary_factor ?? config.rope_parameters?.partial_rotary_factor ??
    config.rope_scaling?.partial_rotary_factor;
  let rotaryDim: number | undefined;
  if (ppd !== undefined && ppd !== null && ppd !== 1) {
    if (family !== 'phi3')
      fail('partial_rotary_factor',
        `partial rotary embeddings (factor ${ppd}) are expressed for phi3 only: ${family} rotates the whole head in transformers`);
    if (typeof ppd !== 'number' || !(ppd > 0 && ppd < 1))
      fail('partial_rotary_factor', `must be a number in (0, 1], got ${JSON.stringify(ppd)}`);
    rotaryDim = Math.floor(headDim * ppd);
    if (rotaryDim < 2 || rotaryDim % 2 !== 0)
      fail('partial_rotary_factor',
        `rotates ${rotaryDim} of ${headDim} head dims: rotary embeddings need an even number`);
  }
  // Mistral's window applies to every layer; Qwen2's (use_sliding_window) only from
  // max_window_layers on, and per-layer types mix windowed and full layers: those are refused.
  let slidingWindow: number | null = null;
  const layerTypes: unknown[] = Array.isArray(config.layer_types) ? config.layer_types : [];
  if ((family === 'mistral' || family === 'phi3') && config.sliding_window !== null &&
    config.sliding_window !== undefined)
  {
    if (!posInt(config.sliding_window))
      fail('sliding_window', `must be a positive integer or null, got ${JSON.stringify(config.sliding_window)}`);
    slidingWindow = config.sliding_window;
    if (layerTypes.some((t) => t !== 'sliding_attention'))
      fail('layer_types',
        "mixes sliding-window and full-attention layers, which lobes' graphs do not express (one window for every layer)");
  } else if (family === 'qwen2' && config.use_sliding_window) {
    fail('use_sliding_window',
      `sliding-window attention from layer max_window_layers on (window ${config.sliding_window}) is not expressed by lobes' graphs`,
      'a checkpoint with use_sliding_window false converts');
  } else if (isGemma(family)) {
    // Gemma: sliding_attention and full_attention layers (layer_types, or the config class's pattern).
  } else if (layerTypes.some((t) => t === 'sliding_attention')) {
    fail('layer_types',
      "has sliding-window layers, which lobes' graphs express only for Mistral (one window for every layer)");
  }
  const eps = config.rms_norm_eps ?? 1e-6;
  if (typeof eps !== 'number' || !(eps > 0))
    fail('rms_norm_eps', `must be a positive number, got ${JSON.stringify(eps)}`);
  let gemma: LlamaSpec['gemma'];
  let rope: { theta: number; scaling: Record<string, unknown> | null };
  if (isGemma(family)) {
    const g = gemmaSettings(config, family, layers, headDim as number, file);
    gemma = g.gemma;
    slidingWindow = g.slidingWindow;
    rope = g.rope;
  } else rope = hfRope(config, file, 10000, family);
  const tokenId = (k: string): number | null => (Number.isInteger(config[k]) ? config[k] : null);
  const eos = Array.isArray(config.eos_token_id)
    ? config.eos_token_id.filter((x: unknown) => Number.isInteger(x))
    : tokenId('eos_token_id');
  const spec: LlamaSpec = {
    layers,
    hidden,
    intermediate,
    heads,
    kvHeads,
    headDim,
    vocab,
    rmsNormEps: eps,
    ropeTheta: rope.theta,
    ropeScaling: rope.scaling,
    maxPositions: posInt(config.max_position_embeddings) ? config.max_position_embeddings : 4096,
    // Gemma2Config and Gemma3TextConfig tie the embeddings unless config.json says otherwise.
    tiedEmbeddings: isGemma(family) ? config.tie_word_embeddings !== false : !!config.tie_word_embeddings,
    bosTokenId: tokenId('bos_token_id'),
    eosTokenId: eos,
    padTokenId: tokenId('pad_token_id'),
    modelType: family,
    ...(family === 'qwen2' ? { attnBias: true } : {}),
    ...(family === 'qwen3' || family === 'gemma3_text' ? { qkNorm: true } : {}),
    ...(gemma ? { gemma } : {}),
    ...(slidingWindow ? { slidingWindow } : {}),
    ...(rotaryDim !== undefined ? { rotaryDim } : {}),
  };
  return { family, spec };
}
