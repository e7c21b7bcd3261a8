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
  for (const k of ['layers', 'hidden', 'intermediate', 'heads', 'kvHeads', 'headDim', 'vocab', 'maxPositions'] as const) {
    if (!posInt(spec[k])) throw bad(`${k} must be a positive integer, got ${String(spec[k])}`);
  }
  if (spec.heads % spec.kvHeads !== 0) throw bad(`heads ${spec.heads} is not a multiple of kvHeads ${spec.kvHeads}`);
  if (spec.headDim % 2 !== 0) throw bad(`head dim ${spec.headDim} must be even (RoPE rotates pairs)`);
  if (!(spec.rmsNormEps > 0)) throw bad(`rmsNormEps must be positive, got ${spec.rmsNormEps}`);
  if (!(spec.ropeTheta > 0)) throw bad(`ropeTheta must be positive, got ${spec.ropeTheta}`);
  if (spec.slidingWindow !== undefined && spec.slidingWindow !== null && !posInt(spec.slidingWindow)) throw bad(`slidingWindow must be a positive integer or null, got ${String(spec.slidingWindow)}`);
  ropeInvFreq(spec);
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

/** The rope type of a spec: 'default', 'llama3' or 'linear' (anything else throws). */
export function ropeType(spec: LlamaSpec): 'default' | 'llama3' | 'linear' {
  const rs = spec.ropeScaling;
  if (!rs) return 'default';
  const t = String(rs.rope_type ?? rs.type ?? 'default');
  if (t === 'default' || t === 'llama3' || t === 'linear') return t;
  throw new LobesError(`rope_scaling type '${t}' is not supported (supported: llama3, linear, default)`);
}

/**
 * RoPE inverse frequencies [headDim/2], computed in float64 and rounded once to float32:
 * inv_freq_i = θ^(−2i/d), then scaled as Hugging Face's rope initialisers do.
 * 'linear': inv_freq / factor. 'llama3' (transformers' _compute_llama3_parameters): with
 * wavelen = 2π / inv_freq, low = L / low_freq_factor, high = L / high_freq_factor
 * (L = original_max_position_embeddings): wavelen > low → inv_freq / factor;
 * wavelen < high → inv_freq; between → (1 − s)·inv_freq/factor + s·inv_freq with
 * s = (L / wavelen − low_freq_factor) / (high_freq_factor − low_freq_factor).
 */
export function ropeInvFreq(spec: LlamaSpec): Float32Array {
  const d = spec.headDim;
  const base = new Float64Array(d / 2);
  for (let i = 0; i < d / 2; i++) base[i] = 1 / Math.pow(spec.ropeTheta, (2 * i) / d);
  const type = ropeType(spec);
  const rs = spec.ropeScaling ?? {};
  if (type === 'linear') {
    const factor = num(rs, 'factor', type);
    for (let i = 0; i < base.length; i++) base[i] = base[i]! / factor;
  } else if (type === 'llama3') {
    const factor = num(rs, 'factor', type);
    const lowF = num(rs, 'low_freq_factor', type);
    const highF = num(rs, 'high_freq_factor', type);
    const L = num(rs, 'original_max_position_embeddings', type);
    if (!(highF > lowF)) throw new LobesError(`rope_scaling llama3: high_freq_factor ${highF} must exceed low_freq_factor ${lowF}`);
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
  }
  return Float32Array.from(base);
}
