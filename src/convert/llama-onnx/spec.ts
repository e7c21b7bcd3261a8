/**
 * Checking a LlamaSpec against itself and against a weight source, the Hugging Face weight
 * names, and RoPE's inverse frequencies (with Llama-3 and linear rope scaling).
 */
import { LobesError } from '../../util/errors.js';
import type { LlamaSpec, LlamaWeightSource } from './types.js';

/** The Hugging Face name of a layer weight. */
export const W = {
  embed: 'model.embed_tokens.weight',
  norm: 'model.norm.weight',
  lmHead: 'lm_head.weight',
  inputNorm: (l: number) => `model.layers.${l}.input_layernorm.weight`,
  postNorm: (l: number) => `model.layers.${l}.post_attention_layernorm.weight`,
  /** Gemma 2 / 3: the norm before the MLP (post_attention_layernorm then normalizes the attention output). */
  preFfNorm: (l: number) => `model.layers.${l}.pre_feedforward_layernorm.weight`,
  postFfNorm: (l: number) => `model.layers.${l}.post_feedforward_layernorm.weight`,
  attn: (l: number, p: 'q' | 'k' | 'v' | 'o') => `model.layers.${l}.self_attn.${p}_proj.weight`,
  mlp: (l: number, p: 'gate' | 'up' | 'down') => `model.layers.${l}.mlp.${p}_proj.weight`,
  attnBias: (l: number, p: 'q' | 'k' | 'v') => `model.layers.${l}.self_attn.${p}_proj.bias`,
  qkNorm: (l: number, p: 'q' | 'k') => `model.layers.${l}.self_attn.${p}_norm.weight`,
};

/** Every weight a spec needs with its expected shape (HF layout), in model order. */
export function expectedWeights(spec: LlamaSpec): [string, number[]][] {
  const { hidden: H, intermediate: I, heads, kvHeads, headDim: hd, vocab: V } = spec;
  const out: [string, number[]][] = [[W.embed, [V, H]]];
  for (let l = 0; l < spec.layers; l++) {
    out.push([W.inputNorm(l), [H]]);
    out.push([W.attn(l, 'q'), [heads * hd, H]]);
    out.push([W.attn(l, 'k'), [kvHeads * hd, H]]);
    out.push([W.attn(l, 'v'), [kvHeads * hd, H]]);
    if (spec.attnBias) {
      out.push([W.attnBias(l, 'q'), [heads * hd]]);
      out.push([W.attnBias(l, 'k'), [kvHeads * hd]]);
      out.push([W.attnBias(l, 'v'), [kvHeads * hd]]);
    }
    if (spec.qkNorm) {
      out.push([W.qkNorm(l, 'q'), [hd]]);
      out.push([W.qkNorm(l, 'k'), [hd]]);
    }
    out.push([W.attn(l, 'o'), [H, heads * hd]]);
    out.push([W.postNorm(l), [H]]);
    if (spec.gemma?.postNorms) {
      out.push([W.preFfNorm(l), [H]]);
      out.push([W.postFfNorm(l), [H]]);
    }
    out.push([W.mlp(l, 'gate'), [I, H]]);
    out.push([W.mlp(l, 'up'), [I, H]]);
    out.push([W.mlp(l, 'down'), [H, I]]);
  }
  out.push([W.norm, [H]]);
  if (!spec.tiedEmbeddings) out.push([W.lmHead, [V, H]]);
  return out;
}

const posInt = (x: unknown) => typeof x === 'number' && Number.isInteger(x) && x > 0;

/** Throw a one-line LobesError when the spec is inconsistent. */
export function checkSpec(spec: LlamaSpec): void {
  const bad = (what: string) => new LobesError(`Llama spec: ${what}`);
  for (const k of ['layers', 'hidden', 'intermediate', 'heads', 'kvHeads', 'headDim', 'vocab',
    'maxPositions'] as const)
  {
    if (!posInt(spec[k])) throw bad(`${k} must be a positive integer, got ${String(spec[k])}`);
  }
  if (spec.heads % spec.kvHeads !== 0) throw bad(`heads ${spec.heads} is not a multiple of kvHeads ${spec.kvHeads}`);
  if (spec.headDim % 2 !== 0) throw bad(`head dim ${spec.headDim} must be even (RoPE rotates pairs)`);
  if (!(spec.rmsNormEps > 0)) throw bad(`rmsNormEps must be positive, got ${spec.rmsNormEps}`);
  if (!(spec.ropeTheta > 0)) throw bad(`ropeTheta must be positive, got ${spec.ropeTheta}`);
  if (spec.slidingWindow !== undefined && spec.slidingWindow !== null && !posInt(spec.slidingWindow))
    throw bad(`slidingWindow must be a positive integer or null, got ${String(spec.slidingWindow)}`);
  if (spec.rotaryDim !== undefined) {
    if (!posInt(spec.rotaryDim) || spec.rotaryDim % 2 !== 0 || spec.rotaryDim > spec.headDim)
      throw bad(
        `rotaryDim must be an even positive integer up to headDim ${spec.headDim}, got ${String(spec.rotaryDim)}`,
      );
  }
  ropeInvFreq(spec);
  ropeLongInvFreq(spec);
  const gm = spec.gemma;
  if (gm) {
    if (!(gm.queryPreAttnScalar > 0) || !Number.isFinite(gm.queryPreAttnScalar))
      throw bad(`gemma queryPreAttnScalar must be a positive number, got ${gm.queryPreAttnScalar}`);
    for (const k of ['attnSoftcap', 'finalSoftcap'] as const) {
      const v = gm[k];
      if (v !== null && !(v > 0 && Number.isFinite(v)))
        throw bad(`gemma ${k} must be a positive number or null, got ${String(v)}`);
    }
    if (gm.sliding.length !== spec.layers)
      throw bad(`gemma sliding marks ${gm.sliding.length} layers, the model has ${spec.layers}`);
    if (gm.sliding.some((x) => x) && !spec.slidingWindow) throw bad('gemma has sliding layers but no slidingWindow');
    if (spec.rotaryDim !== undefined || ropeType(spec) === 'longrope')
      throw bad('gemma rotates whole heads without longrope');
    if (gm.localRope) {
      if (!(gm.localRope.theta > 0)) throw bad(`gemma local rope theta must be positive, got ${gm.localRope.theta}`);
      const t = ropeType(localRopeSpec(spec));
      if (t === 'longrope') throw bad('gemma local rope cannot be longrope');
    }
  }
}

/** The attention scale: query_pre_attn_scalar^−½ for Gemma, else headDim^−½. */
export function attnScale(spec: LlamaSpec): number {
  return spec.gemma ? Math.pow(spec.gemma.queryPreAttnScalar, -0.5) : 1 / Math.sqrt(spec.headDim);
}

/** The spec as the sliding layers rotate (Gemma 3's localRope in place of ropeTheta / ropeScaling). */
export function localRopeSpec(spec: LlamaSpec): LlamaSpec {
  const lr = spec.gemma?.localRope;
  return lr ? { ...spec, ropeTheta: lr.theta, ropeScaling: lr.scaling } : spec;
}

/** Check that the source has every weight with the expected shape. */
export function checkSource(spec: LlamaSpec, src: LlamaWeightSource): void {
  for (const [name, want] of expectedWeights(spec)) {
    const got = src.shape(name);
    if (got.length !== want.length || got.some((d, i) => d !== want[i])) {
      throw new LobesError(`weight has shape [${got.join(', ')}] but the spec needs [${want.join(', ')}]`, {
        where: name,
        hint: 'check layers/hidden/intermediate/heads/kvHeads/headDim/vocab',
      });
    }
  }
}

function num(rs: Record<string, unknown>, key: string, type: string): number {
  const v = rs[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new LobesError(`rope_scaling of type '${type}' needs a numeric ${key}, got ${JSON.stringify(v)}`);
  }
  return v;
}

export type RopeType = 'default' | 'llama3' | 'linear' | 'yarn' | 'longrope';

/** The rope type of a spec: 'default', 'llama3', 'linear', 'yarn' or 'longrope' (anything else throws). */
export function ropeType(spec: LlamaSpec): RopeType {
  const rs = spec.ropeScaling;
  if (!rs) return 'default';
  const t = String(rs.rope_type ?? rs.type ?? 'default');
  if (t === 'default' || t === 'llama3' || t === 'linear' || t === 'yarn' || t === 'longrope') return t;
  throw new LobesError(
    `rope_scaling type '${t}' is not supported (supported: llama3, linear, yarn, longrope, default)`,
  );
}

/** The dims of each head that rotate (spec.rotaryDim, else the whole head). */
export const rotaryDim = (spec: LlamaSpec): number => spec.rotaryDim ?? spec.headDim;

/** longrope's factors list `key` (short_factor / long_factor): one positive number per rotary frequency. */
function longropeFactors(spec: LlamaSpec, key: 'short_factor' | 'long_factor'): number[] {
  const v = spec.ropeScaling?.[key];
  const n = rotaryDim(spec) / 2;
  if (!Array.isArray(v) || v.length !== n || v.some((x) => typeof x !== 'number' || !(x > 0) || !Number.isFinite(x))) {
    throw new LobesError(
      `rope_scaling longrope needs ${key} as ${n} positive numbers (one per rotary frequency), got ${
        Array.isArray(v) ? `${v.length} values` : JSON.stringify(v)
      }`,
    );
  }
  return v as number[];
}

/**
 * longrope (transformers' _compute_longrope_parameters and longrope_frequency_update): the
 * long frequencies θ^(−2i/d) / long_factor_i, used for a text whose length (its largest
 * position + 1) exceeds `threshold` = original_max_position_embeddings; shorter texts use the
 * short ones (ropeInvFreq). Null for every other rope type.
 */
export function ropeLongInvFreq(spec: LlamaSpec): { long: Float32Array; threshold: number } | null {
  if (ropeType(spec) !== 'longrope') return null;
  const rs = spec.ropeScaling!;
  const threshold = num(rs, 'original_max_position_embeddings', 'longrope');
  const f = longropeFactors(spec, 'long_factor');
  const d = rotaryDim(spec);
  return { long: Float32Array.from(f, (x, i) => 1 / (x * Math.pow(spec.ropeTheta, (2 * i) / d))), threshold };
}

/** YaRN's get_mscale: 0.1·m·ln(s) + 1 for s > 1, else 1. */
const yarnMscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);

/** YaRN's scaling factor (factor, or max_position_embeddings / original when factor is absent). */
function yarnFactor(spec: LlamaSpec, rs: Record<string, unknown>): number {
  if (rs.factor === undefined || rs.factor === null)
    return spec.maxPositions / num(rs, 'original_max_position_embeddings', 'yarn');
  return num(rs, 'factor', 'yarn');
}

/**
 * The factor cos and sin are multiplied by (transformers' attention_scaling): 1, except for
 * YaRN: attention_factor when given, else get_mscale(factor, mscale) / get_mscale(factor,
 * mscale_all_dim) when both are given, else 0.1·ln(factor) + 1.
 */
export function ropeAttentionFactor(spec: LlamaSpec): number {
  const type = ropeType(spec);
  if (type === 'longrope') {
    // longrope: attention_factor, else sqrt(1 + ln f / ln L) for f = factor (or
    // max_position_embeddings / L when absent, as Phi-3 configs have it) above 1, else 1.
    const rs = spec.ropeScaling!;
    if (rs.attention_factor !== undefined && rs.attention_factor !== null) return num(rs, 'attention_factor', type);
    const L = num(rs, 'original_max_position_embeddings', type);
    const f = rs.factor === undefined || rs.factor === null ? spec.maxPositions / L : num(rs, 'factor', type);
    return f <= 1 ? 1 : Math.sqrt(1 + Math.log(f) / Math.log(L));
  }
  if (type !== 'yarn') return 1;
  const rs = spec.ropeScaling!;
  if (rs.attention_factor !== undefined && rs.attention_factor !== null) return num(rs, 'attention_factor', 'yarn');
  const factor = yarnFactor(spec, rs);
  const m = rs.mscale as number | undefined;
  const mAll = rs.mscale_all_dim as number | undefined;
  return m && mAll ? yarnMscale(factor, m) / yarnMscale(factor, mAll) : yarnMscale(factor);
}

/**
 * RoPE inverse frequencies [rotaryDim/2], computed in float64 and rounded once to float32
 * ('yarn': see the branch below, with ropeAttentionFactor scaling cos and sin):
 * inv_freq_i = θ^(−2i/d), then scaled as Hugging Face's rope initialisers do.
 * 'linear': inv_freq / factor. 'llama3' (transformers' _compute_llama3_parameters): with
 * wavelen = 2π / inv_freq, low = L / low_freq_factor, high = L / high_freq_factor
 * (L = original_max_position_embeddings): wavelen > low → inv_freq / factor;
 * wavelen < high → inv_freq; between → (1 − s)·inv_freq/factor + s·inv_freq with
 * s = (L / wavelen − low_freq_factor) / (high_freq_factor − low_freq_factor).
 */
export function ropeInvFreq(spec: LlamaSpec): Float32Array {
  const d = rotaryDim(spec);
  const base = new Float64Array(d / 2);
  for (let i = 0; i < d / 2; i++) base[i] = 1 / Math.pow(spec.ropeTheta, (2 * i) / d);
  const type = ropeType(spec);
  const rs = spec.ropeScaling ?? {};
  if (type === 'longrope') {
    // The short factors (a text no longer than original_max_position_embeddings); see ropeLongInvFreq.
    const f = longropeFactors(spec, 'short_factor');
    for (let i = 0; i < base.length; i++) base[i] = base[i]! / f[i]!;
  } else if (type === 'linear') {
    const factor = num(rs, 'factor', type);
    for (let i = 0; i < base.length; i++) base[i] = base[i]! / factor;
  } else if (type === 'llama3') {
    const factor = num(rs, 'factor', type);
    const lowF = num(rs, 'low_freq_factor', type);
    const highF = num(rs, 'high_freq_factor', type);
    const L = num(rs, 'original_max_position_embeddings', type);
    if (!(highF > lowF))
      throw new LobesError(`rope_scaling llama3: high_freq_factor ${highF} must exceed low_freq_factor ${lowF}`);
    const lowWave = L / lowF;
    const highWave = L / highF;
    for (let i = 0; i < base.length; i++) {
      const f = base[i]!;
      const wave = (2 * Math.PI) / f;
      const scaled = wave > lowWave ? f / factor : f;
      if (wave < highWave || wave > lowWave) base[i] = scaled;
      else {
        const s = (L / wave - lowF) / (highF - lowF);
        base[i] = ((1 - s) * scaled) / factor + s * scaled;
      }
    }
  } else if (type === 'yarn') {
    // transformers' _compute_yarn_parameters: interpolated (÷ factor) and extrapolated
    // frequencies blended by a linear ramp between the correction dims of beta_fast and beta_slow.
    const factor = yarnFactor(spec, rs);
    const L = num(rs, 'original_max_position_embeddings', type);
    const betaFast = (rs.beta_fast as number) || 32;
    const betaSlow = (rs.beta_slow as number) || 1;
    const truncate = rs.truncate === undefined ? true : !!rs.truncate;
    const corr = (rot: number) => (d * Math.log(L / (rot * 2 * Math.PI))) / (2 * Math.log(spec.ropeTheta));
    let low = corr(betaFast);
    let high = corr(betaSlow);
    if (truncate) {
      low = Math.floor(low);
      high = Math.ceil(high);
    }
    low = Math.max(low, 0);
    high = Math.min(high, d - 1);
    if (low === high) high += 0.001;
    for (let i = 0; i < base.length; i++) {
      const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
      const extrapolation = 1 - ramp;
      const f = base[i]!;
      base[i] = (f / factor) * (1 - extrapolation) + f * extrapolation;
    }
  }
  return Float32Array.from(base);
}
