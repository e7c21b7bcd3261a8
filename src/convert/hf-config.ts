/**
 * The parts of a Hugging Face config.json that vary most between families and releases: the RoPE
 * settings in every spelling (rope_theta and rope_scaling with `rope_type` or the older `type`,
 * transformers 5's rope_parameters, per layer type for Gemma 3), and Gemma's own settings (norms,
 * soft-capping, attention scale, sliding and global layers). hf-checkpoint.ts reads the rest.
 */
import { ModelError } from '../util/errors.js';
import type { LlamaSpec } from './llama-onnx/index.js';

/** The model families read from Hugging Face checkpoints. */
export type HfFamily = 'llama' | 'mistral' | 'qwen2' | 'qwen3' | 'phi3' | 'gemma' | 'gemma2' | 'gemma3_text';
export const HF_FAMILIES: readonly HfFamily[] = ['llama', 'mistral', 'qwen2', 'qwen3', 'phi3', 'gemma', 'gemma2',
  'gemma3_text'];
/** A positive integer (a config's sizes and counts). */
export const posInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x > 0;

/**
 * Hugging Face rope settings of a config, as the spec's ropeTheta and ropeScaling (rope_type
 * spelled out): rope_theta / rope_scaling (`rope_type` or the older `type`), or rope_parameters.
 */
export function hfRope(config: Record<string, any>, file: string, defaultTheta: number,
  family?: HfFamily): { theta: number; scaling: Record<string, unknown> | null }
{
  const rp = config.rope_parameters && typeof config.rope_parameters === 'object' ? config.rope_parameters : null;
  const rs = config.rope_scaling && typeof config.rope_scaling === 'object' ? config.rope_scaling : null;
  if (rp && rs)
    throw new ModelError('has both rope_parameters and rope_scaling: which one holds is unclear', { file,
      where: 'rope_scaling' });
  const theta = rp?.rope_theta ?? config.rope_theta ?? defaultTheta;
  if (typeof theta !== 'number' || !(theta > 0))
    throw new ModelError(`rope_theta must be a positive number, got ${JSON.stringify(theta)}`, { file,
      where: rp ? 'rope_parameters.rope_theta' : 'rope_theta' });
  const src = rp ?? rs;
  if (!src) return { theta, scaling: null };
  const where = rp ? 'rope_parameters' : 'rope_scaling';
  if (src.rope_type !== undefined && src.type !== undefined && src.rope_type !== src.type) {
    throw new ModelError(`names two rope types, rope_type "${src.rope_type}" and type "${src.type}"`, { file, where });
  }
  let kind = String(src.rope_type ?? src.type ?? 'default');
  // Phi3Config reads the older names "su" and "yarn" as longrope.
  if (family === 'phi3' && (kind === 'su' || kind === 'yarn')) kind = 'longrope';
  const { rope_theta: _t, type: _legacy, rope_type: _rt, partial_rotary_factor: _p, ...params } = src;
  if (kind === 'default') return { theta, scaling: null };
  // transformers (standardize_rope_params) gives a top-level original_max_position_embeddings
  // priority over the scaling's own for llama3, yarn and longrope; Phi3Config always has one (4096 by default).
  const topOriginal = posInt(config.original_max_position_embeddings)
    ? config.original_max_position_embeddings
    : family === 'phi3'
    ? 4096
    : undefined;
  if (topOriginal !== undefined && (kind === 'llama3' || kind === 'yarn' || kind === 'longrope'))
    params.original_max_position_embeddings = topOriginal;
  if (kind === 'linear' || kind === 'llama3') {
    if (kind === 'linear' && params.factor === 1) return { theta, scaling: null };
    return { theta, scaling: { rope_type: kind, ...params } };
  }
  if (kind === 'yarn') {
    // transformers takes original_max_position_embeddings from max_position_embeddings when absent.
    const original = params.original_max_position_embeddings ?? config.max_position_embeddings;
    if (!posInt(original))
      throw new ModelError('YaRN needs original_max_position_embeddings (or max_position_embeddings)', { file, where });
    return { theta, scaling: { rope_type: kind, ...params, original_max_position_embeddings: original } };
  }
  if (kind === 'longrope') {
    const original = params.original_max_position_embeddings;
    if (!posInt(original)) throw new ModelError('longrope needs original_max_position_embeddings', { file, where });
    for (const k of ['short_factor', 'long_factor']) {
      if (!Array.isArray(params[k]) || params[k].some((x: unknown) => typeof x !== 'number'))
        throw new ModelError(`longrope needs ${k} as a list of numbers, got ${JSON.stringify(params[k])}`, { file,
          where: `${where}.${k}` });
    }
    return { theta, scaling: { rope_type: kind, ...params, original_max_position_embeddings: original } };
  }
  const why: Record<string, string> = {
    dynamic: 'dynamic NTK scaling changes the frequencies with the length of each text',
  };
  throw new ModelError(
    `rope scaling "${kind}" is not converted (${
      why[kind] ?? 'an unknown scaling'
    }); lobes converts linear, llama3, yarn and longrope scaling`,
    { file, where: `${where}.${src.rope_type !== undefined ? 'rope_type' : 'type'}` },
  );
}

/**
 * Gemma 2 / Gemma 3 text settings of a config.json, with the config classes' defaults for
 * what it leaves out (transformers 5.25): query_pre_attn_scalar 256; soft-capping 50
 * (attention) and 30 (final) for gemma2, none for gemma3_text; sliding_window 4096; layer_types
 * alternating sliding / full for gemma2, five sliding then one full for gemma3_text (its
 * sliding_window_pattern); rope: gemma2's as every family's, gemma3_text's per layer type
 * (rope_parameters.full_attention / sliding_attention, or the older rope_theta (1e6 by
 * default), rope_scaling for the full layers, rope_local_base_freq (1e4) for the sliding ones).
 */
export function gemmaSettings(config: Record<string, any>, family: 'gemma' | 'gemma2' | 'gemma3_text', layers: number,
  headDim: number,
  file: string
): { gemma: NonNullable<LlamaSpec['gemma']>; slidingWindow: number | null;
  rope: { theta: number; scaling: Record<string, unknown> | null } }
{
  const fail = (where: string, cause: string, hint?: string): never => {
    throw new ModelError(cause, { file, where, ...(hint ? { hint } : {}) });
  };
  const posNum = (key: string, fallback: number | null): number | null => {
    const v = config[key] === undefined ? fallback : config[key];
    if (v === null) return null;
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
      fail(key, `must be a positive number${fallback === null ? ' or null' : ''}, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const v3 = family === 'gemma3_text';
  if (family === 'gemma') {
    // Gemma 1: Llama's two norms per layer, the scale head_dim^−½, every layer full attention, no soft-caps.
    return {
      gemma: { postNorms: false, queryPreAttnScalar: headDim, attnSoftcap: null, finalSoftcap: null,
        sliding: new Array<boolean>(layers).fill(false) },
      slidingWindow: null,
      rope: hfRope(config, file, 10000, family),
    };
  }
  if (config.use_bidirectional_attention)
    fail('use_bidirectional_attention',
      "bidirectional attention (every token sees the window around it, before and after) is not expressed by lobes' causal graphs");
  const queryPreAttnScalar = posNum('query_pre_attn_scalar', 256)!;
  // Gemma3Attention keeps attn_logit_softcapping but never passes it to the attention (transformers
  // 5.25): a gemma3_text config's value changes nothing there, and nothing here.
  const attnSoftcap = v3 ? null : posNum('attn_logit_softcapping', 50);
  const finalSoftcap = posNum('final_logit_softcapping', v3 ? null : 30);
  let types: unknown[];
  if (config.layer_types !== undefined && config.layer_types !== null) {
    if (!Array.isArray(config.layer_types) || config.layer_types.length !== layers)
      fail('layer_types', `must list one type per layer (${layers}), got ${JSON.stringify(config.layer_types)}`);
    types = config.layer_types;
  } else {
    // Gemma3TextConfig reads sliding_window_pattern (not the _sliding_window_pattern it saves).
    const pattern = v3 ? (config.sliding_window_pattern ?? 6) : 2;
    if (!posInt(pattern)) fail('sliding_window_pattern', `must be a positive integer, got ${JSON.stringify(pattern)}`);
    types = Array.from({ length: layers },
      (_, i) => ((i + 1) % (pattern as number) ? 'sliding_attention' : 'full_attention'));
  }
  const bad = types.findIndex((t) => t !== 'sliding_attention' && t !== 'full_attention');
  if (bad >= 0)
    fail(`layer_types[${bad}]`,
      `is ${JSON.stringify(types[bad])}; lobes converts sliding_attention and full_attention layers`);
  const sliding = types.map((t) => t === 'sliding_attention');
  const window = config.sliding_window === undefined ? 4096 : config.sliding_window;
  if (sliding.some((x) => x) && !posInt(window))
    fail('sliding_window',
      `must be a positive integer for the sliding_attention layers, got ${JSON.stringify(window)}`);
  const slidingWindow = sliding.some((x) => x) ? (window as number) : null;
  let rope: { theta: number; scaling: Record<string, unknown> | null };
  let localRope: { theta: number; scaling: Record<string, unknown> | null } | undefined;
  if (!v3) rope = hfRope(config, file, 10000, family);
  else {
    const rp = config.rope_parameters;
    if (rp !== undefined && rp !== null) {
      if (typeof rp !== 'object' || Array.isArray(rp) || !('full_attention' in rp || 'sliding_attention' in rp))
        fail('rope_parameters',
          'gemma3_text names the rope of each layer type: rope_parameters.full_attention and rope_parameters.sliding_attention');
      if (config.rope_scaling)
        fail('rope_scaling', 'has both rope_parameters and rope_scaling: which one holds is unclear');
      const part = (k: string,
        theta: number) => (rp[k] ? hfRope({ rope_parameters: rp[k] }, file, theta, family) : { theta, scaling: null });
      rope = part('full_attention', 1e6);
      localRope = part('sliding_attention', 1e4);
    } else {
      rope = hfRope({ rope_theta: config.rope_theta ?? 1e6, rope_scaling: config.rope_scaling ?? null }, file, 1e6,
        family);
      const lt = config.rope_local_base_freq ?? 1e4;
      if (typeof lt !== 'number' || !(lt > 0))
        fail('rope_local_base_freq', `must be a positive number, got ${JSON.stringify(lt)}`);
      localRope = { theta: lt, scaling: null };
    }
    if (rope.scaling?.rope_type === 'longrope' || localRope.scaling?.rope_type === 'longrope')
      fail('rope_parameters', 'longrope is not converted for gemma3_text');
  }
  return {
    gemma: { postNorms: true, queryPreAttnScalar, attnSoftcap, finalSoftcap, sliding,
      ...(localRope ? { localRope } : {}) },
    slidingWindow,
    rope,
  };
}
