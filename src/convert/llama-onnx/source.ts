/**
 * Weight sources: weights held in memory, and a seeded random source that makes any shape
 * (an 8B-shaped model included) without holding more than the rows asked for.
 */
import { LobesError } from '../../util/errors.js';
import { expectedWeights } from './spec.js';
import type { LlamaSpec, LlamaWeightSource, NbitsBlocks } from './types.js';

/** A weight in memory: HF layout, row-major. */
export interface MemoryWeight {
  shape: number[];
  data: Float32Array;
  /** MatMulNBits blocks to hand out through nbits(). */
  nbits?: NbitsBlocks | null;
}

/** A source over weights held in memory (by Hugging Face name). */
export function memorySource(weights: Map<string, MemoryWeight> | Record<string, MemoryWeight>): LlamaWeightSource {
  const map = weights instanceof Map ? weights : new Map(Object.entries(weights));
  const get = (name: string) => {
    const w = map.get(name);
    if (!w) throw new LobesError('weight not found in the source', { where: name });
    return w;
  };
  return {
    shape: (name) => [...get(name).shape],
    rows: (name, r0, r1) => {
      const w = get(name);
      const cols = w.shape.length === 1 ? 1 : w.shape[1]!;
      if (!(r0 >= 0 && r1 >= r0 && r1 <= w.shape[0]!))
        throw new LobesError(`rows [${r0}, ${r1}) out of range [0, ${w.shape[0]})`, { where: name });
      return w.data.subarray(r0 * cols, r1 * cols);
    },
    nbits: (name) => map.get(name)?.nbits ?? null,
  };
}

/** FNV-1a of a string (a per-weight seed). */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

export interface SeededSourceOptions {
  /**
   * Hand out random 4-bit MatMulNBits blocks (block 32, zero point 8) for the projection
   * weights and lm_head instead of float rows, as a GGUF Q4_0 file would (default false).
   */
  nbits4?: boolean;
}

/**
 * A deterministic random source for any spec: each value is uniform with the standard
 * deviation of Hugging Face's Llama init scaled by fan-in (1/√d_in; norms 1 ± 0.1 uniform),
 * generated per row from (seed, weight name, row) by xorshift, so any row range costs only
 * its own size and two calls return the same values. Meant for tests and benchmarks.
 */
export function seededLlamaSource(spec: LlamaSpec, seed: number, opts: SeededSourceOptions = {}): LlamaWeightSource {
  const shapes = new Map(expectedWeights(spec));
  const shapeOf = (name: string) => {
    const s = shapes.get(name);
    if (!s) throw new LobesError('weight not found in the seeded source', { where: name });
    return s;
  };
  const rows = (name: string, r0: number, r1: number): Float32Array => {
    const s = shapeOf(name);
    const cols = s.length === 1 ? 1 : s[1]!;
    if (!(r0 >= 0 && r1 >= r0 && r1 <= s[0]!))
      throw new LobesError(`rows [${r0}, ${r1}) out of range [0, ${s[0]})`, { where: name });
    const out = new Float32Array((r1 - r0) * cols);
    const base = hash32(name) ^ Math.imul(seed, 0x9e3779b1);
    // Uniform on [-a, a] has std a/√3; norms 1 ± 0.1. 2u − 1 = x·2⁻³¹ − 1 is exact.
    const is1d = s.length === 1;
    const a = is1d ? 0.1 : Math.sqrt(3 / cols);
    const shift = is1d ? 1 : 0;
    for (let r = r0; r < r1; r++) {
      let x = (base ^ Math.imul(r + 1, 0x85ebca6b)) | 0 || 1;
      const o = (r - r0) * cols;
      for (let c = 0; c < cols; c++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        out[o + c] = shift + a * ((x >>> 0) * 4.656612873077393e-10 - 1);
      }
    }
    return out;
  };
  const src: LlamaWeightSource = { shape: (name) => [...shapeOf(name)], rows };
  if (opts.nbits4) {
    src.nbits = (name) => {
      const s = shapeOf(name);
      if (s.length !== 2 || name === 'model.embed_tokens.weight') return null;
      const [dOut, dIn] = s as [number, number];
      if (dIn % 32 !== 0) return null;
      const nb = dIn / 32;
      const weights = new Uint8Array(dOut * nb * 16);
      let x = (hash32(name) ^ Math.imul(seed, 0x9e3779b1)) >>> 0 || 1;
      const w32 = new Uint32Array(weights.buffer, 0, weights.length >>> 2);
      for (let i = 0; i < w32.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        w32[i] = x >>> 0;
      }
      const scales = new Float32Array(dOut * nb).fill(Math.sqrt(3 / dIn) / 8);
      const zeroPoints = new Uint8Array(dOut * Math.ceil(nb / 2)).fill(0x88);
      return { bits: 4, blockSize: 32, weights, scales, zeroPoints };
    };
  }
  return src;
}
