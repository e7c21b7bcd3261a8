/**
 * The hyperparameters of a GGUF for src/convert/gguf-llama.ts: the typed `llama.*` metadata
 * reader (Hparams, one-line errors naming the file and the key), phi3's extra keys, and the
 * spec's rope_scaling as the file implies it: llama3 recovered from `rope_freqs.weight`, linear
 * from metadata (ropeScalingOf), phi3's longrope from `rope_factors_short` / `rope_factors_long`
 * (longropeOf); anything else refused by name.
 */
import type { GgufFile } from '../formats/gguf.js';
import { GGUF_KEYS as K, GgufMeta, type GgufKey } from '../formats/gguf-meta.js';
import { ModelError } from '../util/errors.js';
import { ropeScalingFromFreqFactors, shortFloat32 } from './rope-scaling.js';

/** phi3 keys beyond the shared table (llama.cpp's names). */
export const PHI3_KEYS = {
  ropeAttnFactor: { key: '{arch}.rope.scaling.attn_factor', type: 'number' } as GgufKey<'number'>,
  slidingWindow: { key: '{arch}.attention.sliding_window', type: 'int' } as GgufKey<'int'>,
};

/**
 * Reads `llama.*` hyperparameters (keys of the table in src/formats/gguf-meta.ts) through the
 * typed metadata reader, with one-line errors naming the file and the key.
 */
export class Hparams {
  readonly m: GgufMeta;
  constructor(private readonly g: GgufFile) {
    this.m = new GgufMeta(g.metadata, g.file);
  }

  private fail(key: string, cause: string, hint?: string): never {
    throw new ModelError(cause, { file: this.g.file, where: `metadata ${JSON.stringify(key)}`, hint });
  }

  has(k: GgufKey): boolean {
    return this.m.has(k);
  }

  /** A positive integer hyperparameter (`fallback` when absent; required when there is none). */
  int(key: GgufKey<'int'>, fallback?: number): number {
    const k = this.m.key(key);
    if (!this.m.has(k)) {
      if (fallback !== undefined) return fallback;
      this.fail(k, 'missing: every llama GGUF has it', 'the file is incomplete or not a llama.cpp model file');
    }
    if (this.g.get(k)?.type === 'array')
      this.fail(k, 'is an array (a size per layer): lobes converts models whose layers all have the same shape');
    const n = this.m.int(k)!;
    if (n < 1) this.fail(k, `must be positive, got ${n}`);
    return n;
  }

  /** A positive number hyperparameter. */
  num(key: GgufKey<'number'>, fallback?: number): number {
    const k = this.m.key(key);
    if (!this.m.has(k)) {
      if (fallback !== undefined) return fallback;
      this.fail(k, 'missing: every llama GGUF has it', 'the file is incomplete or not a llama.cpp model file');
    }
    const x = this.m.num(k)!;
    if (!(x > 0) || !Number.isFinite(x)) this.fail(k, `must be a positive number, got ${x}`);
    return x;
  }

  str(key: GgufKey<'string'>): string | undefined {
    return this.m.read(key);
  }
}

/**
 * phi3's rope scaling: longrope from `rope_factors_short` / `rope_factors_long` (F32, one
 * factor per rotary frequency) with the original context length and, when present, the
 * attention factor; null when the file has neither tensor.
 */
export function longropeOf(g: GgufFile, hp: Hparams, ropeDims: number): Record<string, unknown> | null {
  const has = ['rope_factors_short.weight', 'rope_factors_long.weight'].map((n) => g.hasTensor(n));
  if (!has[0] && !has[1]) {
    const type = hp.str(K.ropeScalingType);
    if (type !== undefined && type !== 'none')
      throw new ModelError(
        `rope scaling "${type}" is not converted for phi3 (longrope through rope_factors_long / rope_factors_short only)`,
        { file: g.file, where: hp.m.key(K.ropeScalingType) },
      );
    return null;
  }
  if (!has[0] || !has[1])
    throw new ModelError(
      `holds ${has[0] ? 'rope_factors_short' : 'rope_factors_long'} without ${
        has[0] ? 'rope_factors_long' : 'rope_factors_short'
      }: longrope needs both`,
      { file: g.file, where: `tensor "${has[0] ? 'rope_factors_short' : 'rope_factors_long'}.weight"` },
    );
  const factors = (name: string) => {
    const t = g.tensor(name);
    const place = { file: g.file, where: `tensor ${JSON.stringify(name)}` };
    if (t.typeName !== 'F32' || t.dims.length !== 1 || t.dims[0] !== ropeDims / 2)
      throw new ModelError(
        `expected F32 [${ropeDims / 2}] (one factor per rotary frequency), got ${t.typeName} [${t.dims.join(', ')}]`,
        place,
      );
    return Array.from(g.dequantize(t), (x) => shortFloat32(x));
  };
  if (!hp.has(K.ropeScalingOriginalContext))
    throw new ModelError('longrope factors without the original context length they switch at', { file: g.file,
      where: `metadata ${JSON.stringify(hp.m.key(K.ropeScalingOriginalContext))}` });
  const out: Record<string, unknown> = {
    rope_type: 'longrope',
    short_factor: factors('rope_factors_short.weight'),
    long_factor: factors('rope_factors_long.weight'),
    original_max_position_embeddings: hp.int(K.ropeScalingOriginalContext),
  };
  if (hp.has(PHI3_KEYS.ropeAttnFactor)) out.attention_factor = shortFloat32(hp.num(PHI3_KEYS.ropeAttnFactor));
  return out;
}

/** The spec's rope_scaling: llama3 from rope_freqs, linear from metadata, or null. */
export function ropeScalingOf(g: GgufFile, hp: Hparams, theta: number, headDim: number): Record<string, unknown>
  | null
{
  const type = hp.str(K.ropeScalingType);
  const original = hp.has(K.ropeScalingOriginalContext) ? hp.int(K.ropeScalingOriginalContext) : null;
  if (g.hasTensor('rope_freqs.weight')) {
    const t = g.tensor('rope_freqs.weight');
    const place = { file: g.file, where: 'tensor "rope_freqs.weight"' };
    if (t.typeName !== 'F32' || t.dims.length !== 1)
      throw new ModelError(`expected F32 [${headDim / 2}], got ${t.typeName} [${t.dims.join(', ')}]`, place);
    if (type !== undefined && type !== 'none' && type !== 'llama3')
      throw new ModelError(`rope_freqs and ${hp.m.key(K.ropeScalingType)} = ${type} together are not supported`, place);
    return ropeScalingFromFreqFactors(g.dequantize(t), theta, headDim, original, place);
  }
  if (type === undefined || type === 'none') {
    // Files from old converters carry linear scaling as rope.scale_linear.
    if (hp.has(K.ropeScaleLinear)) {
      const f = hp.num(K.ropeScaleLinear);
      return f === 1 ? null : { rope_type: 'linear', factor: shortFloat32(f) };
    }
    return null;
  }
  const factor = shortFloat32(hp.num(K.ropeScalingFactor));
  if (type === 'linear') return { rope_type: 'linear', factor };
  throw new ModelError(`rope scaling "${type}" is not supported (none, linear, or llama3 through rope_freqs)`, {
    file: g.file,
    where: hp.m.key(K.ropeScalingType),
  });
}
