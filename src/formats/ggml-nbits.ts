/**
 * GGML blocks as ONNX Runtime MatMulNBits weights (com.microsoft), so that a converter can keep
 * a GGUF model's quantized weights quantized instead of expanding them to float.
 *
 * MatMulNBits stores W[N, K] (N outputs, K inputs; one GGUF row is one output) in blocks of
 * `block_size` values along K, each with a float scale and an integer zero point, and computes
 * w = (q - zero_point) * scale, q an unsigned `bits`-bit code packed low bits first.
 *
 * Which GGML types map exactly (every weight equal, bit for bit, to the float32 dequantization):
 *
 * | GGML | GGML formula | MatMulNBits | exact |
 * |---|---|---|---|
 * | Q4_0 | d * (q - 8) | 4 bits, block 32, zero point 8, scale d | always |
 * | Q8_0 | d * q, q int8 | 8 bits, block 32, code q + 128, zero point 128 | always |
 * | Q5_0 | d * (q - 16), q 5 bits | 8 bits, block 32, zero point 16 | always (codes stored in 8 bits) |
 * | Q6_K | d * s * (q - 32), s int8 per 16 | 8 bits, block 16, zero point 32, scale d * s | always |
 * | Q3_K | d * (s - 32) * (q - 4), q 3 bits | 4 bits, block 16, zero point 4, scale d * (s - 32) | always |
 * | Q4_1 | d * q + m | 4 bits, block 32, scale d, zero point z = -m / d | when every block's -m / d is an integer in [0, 15] |
 * | Q5_1 | d * q + m, q 5 bits | 8 bits, block 32, zero point -m / d | when -m / d is an integer in [0, 255] |
 * | Q4_K | d * s * q - dmin * mn per 32 | 4 bits, block 32, zero point dmin * mn / (d * s) | when that is an integer in [0, 15] |
 * | Q5_K | the same with 5-bit q | 8 bits, block 32 | when it is an integer in [0, 255] |
 * | Q2_K | d * s * q - dmin * mn per 16, q 2 bits | 2 bits, block 16 | when it is an integer in [0, 3] |
 *
 * Exactness of the integer zero point: with m = -z * d exactly, d * q + m = d * (q - z) is a
 * half times a small integer, which float32 holds exactly, so GGML's rounding and ONNX
 * Runtime's product give the same number (up to the sign of zero). A block with scale 0 is
 * a constant c: it becomes codes 1, zero point 0, scale c.
 *
 * The types with a min (Q4_1, Q5_1, Q4_K, Q5_K, Q2_K) usually do not satisfy that: llama.cpp
 * chooses m as the block minimum, not a multiple of d. Their weights are then given as
 * codes with zero points 0 plus a per-block additive `mins` term: w = q * scale + min. That is
 * still exact, without re-quantization, when the converter adds the min term itself:
 * y = MatMulNBits(x) + (x summed over each block of K) · mins. (A float zero point -m / d would
 * come within rounding of the weights but not equal them; re-quantizing to an integer zero point
 * loses precision.) Q5_0, Q5_1 and Q5_K codes take 8 bits in MatMulNBits. Every other type
 * (F16, BF16, F32, the IQ types, ...) is expanded to float by the converter.
 */
import { LobesError, type ErrorPlace } from '../util/errors.js';
import { ggmlType, ggmlTypeName } from './ggml.js';
import { halfArrayToFloat, floatToHalf, halfToFloat } from '../util/half.js';

/** A weight W[n, k] in MatMulNBits form. */
export interface NBitsWeight {
  /** MatMulNBits `bits` attribute. */
  bits: 2 | 4 | 8;
  /** MatMulNBits `block_size` attribute. */
  blockSize: 16 | 32;
  /** N: outputs (GGUF rows). */
  n: number;
  /** K: inputs (GGUF dims[0]). */
  k: number;
  /** Blocks per row: k / blockSize. */
  kBlocks: number;
  /** Input B: uint8 [n, kBlocks, blockSize * bits / 8], codes packed low bits first along K. */
  packed: Uint8Array;
  /** Input scales: [n, kBlocks]. */
  scales: Float32Array;
  /**
   * Input zero_points: uint8 [n, ceil(kBlocks * bits / 8)], packed like B. All 0 when `mins` is
   * given; always pass it (MatMulNBits' default zero point is 2^(bits-1), not 0).
   */
  zeroPoints: Uint8Array;
  /** When no integer zero point is exact: the per-block term of w = q * scale + min, [n, kBlocks]; else null. */
  mins: Float32Array | null;
  /** Whether every scale (and min) is exactly representable in fp16 (for fp16 graphs). */
  fp16Exact: boolean;
}

/** How each mappable GGML type maps: bits, block size and the zero point when fixed. */
export const NBITS_MAPPING: Readonly<
  Record<string, { bits: 2 | 4 | 8; blockSize: 16 | 32; zeroPoint: number | null }>
> = {
  Q4_0: { bits: 4, blockSize: 32, zeroPoint: 8 },
  Q4_1: { bits: 4, blockSize: 32, zeroPoint: null },
  Q4_K: { bits: 4, blockSize: 32, zeroPoint: null },
  Q3_K: { bits: 4, blockSize: 16, zeroPoint: 4 },
  Q5_0: { bits: 8, blockSize: 32, zeroPoint: 16 },
  Q5_1: { bits: 8, blockSize: 32, zeroPoint: null },
  Q5_K: { bits: 8, blockSize: 32, zeroPoint: null },
  Q8_0: { bits: 8, blockSize: 32, zeroPoint: 128 },
  Q6_K: { bits: 8, blockSize: 16, zeroPoint: 32 },
  Q2_K: { bits: 2, blockSize: 16, zeroPoint: null },
};

const HALF = (() => {
  const all = new Uint16Array(65536);
  for (let i = 0; i < 65536; i++) all[i] = i;
  return halfArrayToFloat(all);
})();

function half(src: Uint8Array, o: number): number {
  return HALF[src[o] | (src[o + 1] << 8)];
}

/** Codes, scales and min terms of one tensor, before packing. */
interface Parts {
  codes: Uint8Array; // one per value, row-major [n, k]
  scales: Float32Array; // per block
  minTerm: Float32Array | null; // per block, w = q * scale + minTerm (null: fixed zero point)
}

function scaleMinK4(src: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [src[s + j] & 63, src[s + j + 4] & 63];
  return [(src[s + j + 4] & 15) | ((src[s + j - 4] >> 6) << 4), (src[s + j + 4] >> 4) | ((src[s + j] >> 6) << 4)];
}

function decompose(name: string, src: Uint8Array, nBlocksGgml: number, total: number): Parts {
  const codes = new Uint8Array(total);
  const map = NBITS_MAPPING[name];
  const scales = new Float32Array(total / map.blockSize);
  const minTerm = map.zeroPoint === null ? new Float32Array(scales.length) : null;
  switch (name) {
    case 'Q4_0':
    case 'Q4_1': {
      const ts = name === 'Q4_0' ? 18 : 20;
      const q0 = name === 'Q4_0' ? 2 : 4;
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * ts;
        scales[b] = half(src, o);
        if (minTerm) minTerm[b] = half(src, o + 2);
        const y = b * 32;
        for (let j = 0; j < 16; j++) {
          const x = src[o + q0 + j];
          codes[y + j] = x & 15;
          codes[y + j + 16] = x >> 4;
        }
      }
      break;
    }
    case 'Q5_0':
    case 'Q5_1': {
      const ts = name === 'Q5_0' ? 22 : 24;
      const h0 = name === 'Q5_0' ? 2 : 4;
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * ts;
        scales[b] = half(src, o);
        if (minTerm) minTerm[b] = half(src, o + 2);
        const qh = (src[o + h0] | (src[o + h0 + 1] << 8) | (src[o + h0 + 2] << 16) | (src[o + h0 + 3] << 24)) >>> 0;
        const y = b * 32;
        for (let j = 0; j < 16; j++) {
          const x = src[o + h0 + 4 + j];
          codes[y + j] = (x & 15) | (((qh >>> j) & 1) << 4);
          codes[y + j + 16] = (x >> 4) | (((qh >>> (j + 16)) & 1) << 4);
        }
      }
      break;
    }
    case 'Q8_0':
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * 34;
        scales[b] = half(src, o);
        const y = b * 32;
        for (let j = 0; j < 32; j++) codes[y + j] = src[o + 2 + j] ^ 0x80; // int8 + 128
      }
      break;
    case 'Q2_K':
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * 84;
        const d = half(src, o + 80);
        const dmin = half(src, o + 82);
        for (let sub = 0; sub < 16; sub++) {
          const sc = src[o + sub];
          scales[b * 16 + sub] = d * (sc & 15);
          minTerm![b * 16 + sub] = -(dmin * (sc >> 4));
          const q0 = o + 16 + (sub >> 3) * 32 + (sub & 1) * 16;
          const shift = ((sub >> 1) & 3) * 2;
          const y0 = b * 256 + sub * 16;
          for (let l = 0; l < 16; l++) codes[y0 + l] = (src[q0 + l] >> shift) & 3;
        }
      }
      break;
    case 'Q3_K':
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * 110;
        const d = half(src, o + 108);
        const sb = o + 96;
        for (let sub = 0; sub < 16; sub++) {
          const lo = sub < 8 ? src[sb + sub] & 15 : src[sb + sub - 8] >> 4;
          const hi = (src[sb + 8 + (sub & 3)] >> (2 * (sub >> 2))) & 3;
          scales[b * 16 + sub] = d * ((lo | (hi << 4)) - 32);
          const lq = (sub & 1) * 16;
          const q0 = o + 32 + (sub >> 3) * 32 + lq;
          const shift = ((sub >> 1) & 3) * 2;
          const hbit = sub >> 1;
          const y0 = b * 256 + sub * 16;
          for (let l = 0; l < 16; l++)
            codes[y0 + l] = ((src[q0 + l] >> shift) & 3) | (((src[o + lq + l] >> hbit) & 1) << 2);
        }
      }
      break;
    case 'Q4_K':
    case 'Q5_K': {
      const ts = name === 'Q4_K' ? 144 : 176;
      const qs = name === 'Q4_K' ? 16 : 48;
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * ts;
        const d = half(src, o);
        const dmin = half(src, o + 2);
        for (let j = 0; j < 8; j++) {
          const [sc, mn] = scaleMinK4(src, o + 4, j);
          scales[b * 8 + j] = d * sc;
          minTerm![b * 8 + j] = -(dmin * mn);
          const q0 = o + qs + (j >> 1) * 32;
          const shift = (j & 1) * 4;
          const y0 = b * 256 + j * 32;
          if (name === 'Q4_K') { for (let l = 0; l < 32; l++) codes[y0 + l] = (src[q0 + l] >> shift) & 15; }
          else for (let l = 0; l < 32; l++)
              codes[y0 + l] = ((src[q0 + l] >> shift) & 15) | (((src[o + 16 + l] >> j) & 1) << 4);
        }
      }
      break;
    }
    case 'Q6_K':
      for (let b = 0; b < nBlocksGgml; b++) {
        const o = b * 210;
        const d = half(src, o + 208);
        for (let sub = 0; sub < 16; sub++) {
          scales[b * 16 + sub] = d * ((src[o + 192 + sub] << 24) >> 24);
          const e0 = sub * 16;
          const h = e0 >> 7;
          const r0 = e0 & 127;
          const ql0 = o + h * 64 + (r0 & 63);
          const lshift = (r0 >> 6) * 4;
          const qh0 = o + 128 + h * 32 + (r0 & 31);
          const hshift = (r0 >> 5) * 2;
          const y0 = b * 256 + e0;
          for (let l = 0; l < 16; l++)
            codes[y0 + l] = ((src[ql0 + l] >> lshift) & 15) | (((src[qh0 + l] >> hshift) & 3) << 4);
        }
      }
      break;
  }
  return { codes, scales, minTerm };
}

function isHalf(x: number): boolean {
  return halfToFloat(floatToHalf(x)) === x;
}

/**
 * Turn the raw blocks of a GGML weight (n rows of k values, e.g. from
 * `GgufFile.readTensorBytes`, whole or a row range) into MatMulNBits inputs. See the module
 * comment for which types map and when the result carries `mins` instead of zero points.
 * Rows are independent, so a tensor can be converted a row range at a time and the outputs
 * concatenated (zero points included: they are packed per row).
 */
export function ggmlToMatMulNBits(type: number, src: Uint8Array, n: number, k: number,
  place: ErrorPlace = {}): NBitsWeight
{
  const t = ggmlType(type);
  const map = t ? NBITS_MAPPING[t.name] : undefined;
  if (!t || !map) {
    throw new LobesError(
      `GGML ${ggmlTypeName(type)} has no MatMulNBits form (mappable: ${
        Object.keys(NBITS_MAPPING).join(', ')
      }); expand it to float instead`,
      place,
    );
  }
  if (!Number.isInteger(n) || !Number.isInteger(k) || n < 0 || k % t.blockSize !== 0)
    throw new LobesError(`[${n}, ${k}] is not whole rows of ${t.name} blocks of ${t.blockSize}`, place);
  const nBlocksGgml = (n * k) / t.blockSize;
  if (src.byteLength !== nBlocksGgml * t.typeSize)
    throw new LobesError(
      `${src.byteLength} bytes given but [${n}, ${k}] of ${t.name} takes ${nBlocksGgml * t.typeSize}`,
      place,
    );
  const { bits, blockSize } = map;
  const kBlocks = k / blockSize;
  const nb = n * kBlocks;
  const parts = decompose(t.name, src, nBlocksGgml, n * k);
  const { codes, scales } = parts;
  const maxCode = (1 << bits) - 1;

  // Zero points: fixed by the type, or derived per block from the min term when exact.
  let zp: Uint8Array | null = new Uint8Array(nb);
  let mins: Float32Array | null = null;
  if (map.zeroPoint !== null) zp.fill(map.zeroPoint);
  else {
    const m = parts.minTerm!;
    for (let b = 0; b < nb && zp; b++) {
      const s = scales[b];
      if (s === 0) continue; // constant block, handled below
      const z = -m[b] / s;
      if (!(Number.isInteger(z) && z >= 0 && z <= maxCode && s * z === -m[b])) zp = null;
      else zp[b] = z;
    }
    if (zp) {
      for (let b = 0; b < nb; b++) {
        if (scales[b] !== 0 || m[b] === 0) continue;
        // w = m for every value: codes 1, zero point 0, scale m.
        codes.fill(1, b * blockSize, (b + 1) * blockSize);
        scales[b] = m[b];
        zp[b] = 0;
      }
    } else {
      mins = m;
    }
  }

  const blob = (blockSize * bits) / 8;
  const packed = new Uint8Array(nb * blob);
  if (bits === 8) packed.set(codes);
  else {
    const per = 8 / bits;
    for (let i = 0, o = 0; o < packed.length; o++) {
      let byte = 0;
      for (let s = 0; s < per; s++, i++) byte |= codes[i] << (s * bits);
      packed[o] = byte;
    }
  }
  const perRow = Math.ceil((kBlocks * bits) / 8);
  const zeroPoints = new Uint8Array(n * perRow);
  if (zp) {
    for (let r = 0; r < n; r++) {
      for (let b = 0; b < kBlocks; b++) {
        const bit = b * bits;
        zeroPoints[r * perRow + (bit >> 3)] |= zp[r * kBlocks + b] << (bit & 7);
      }
    }
  }
  let fp16Exact = true;
  for (let b = 0; b < nb && fp16Exact; b++) fp16Exact = isHalf(scales[b]) && (!mins || isHalf(mins[b]));
  return { bits, blockSize, n, k, kBlocks, packed, scales, zeroPoints, mins, fp16Exact };
}

/** Reconstruct W[n, k] as float32 from MatMulNBits parts: (q - zp) * scale (+ min). For tests and checks. */
export function nbitsToFloat32(w: NBitsWeight): Float32Array {
  const out = new Float32Array(w.n * w.k);
  const mask = (1 << w.bits) - 1;
  const blob = (w.blockSize * w.bits) / 8;
  const perRow = Math.ceil((w.kBlocks * w.bits) / 8);
  for (let r = 0; r < w.n; r++) {
    for (let b = 0; b < w.kBlocks; b++) {
      const i = r * w.kBlocks + b;
      const s = w.scales[i];
      const bit = b * w.bits;
      const z = (w.zeroPoints[r * perRow + (bit >> 3)] >> (bit & 7)) & mask;
      const m = w.mins ? w.mins[i] : 0;
      for (let j = 0; j < w.blockSize; j++) {
        const t = j * w.bits;
        const q = (w.packed[i * blob + (t >> 3)] >> (t & 7)) & mask;
        out[r * w.k + b * w.blockSize + j] = w.mins ? q * s + m : (q - z) * s;
      }
    }
  }
  return out;
}
