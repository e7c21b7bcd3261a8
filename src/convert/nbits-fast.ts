/**
 * Fast MatMulNBits forms of the GGML block types real Llama GGUFs are made of: Q4_K and Q6_K
 * (Ollama's default Q4_K_M), Q4_0, Q4_1 and Q8_0. Same result, byte for byte, as the general
 * `ggmlToMatMulNBits` (src/formats/ggml-nbits.ts; test/convert/nbits-fast.test.ts checks it on
 * random blocks), without its per-value code array: 4-bit codes are moved nibble pairs at a time
 * through 32-bit words, 6-bit codes are assembled straight into their 8-bit bytes. An 8B
 * model's quantized projections are converted many times faster, which is what makes a
 * conversion run at the speed of the disk rather than of JavaScript. Other types go to the
 * general function.
 */
import { ggmlToMatMulNBits, type NBitsWeight } from '../formats/ggml-nbits.js';
import { ggmlType } from '../formats/ggml.js';
import { halfArrayToFloat } from '../util/half.js';
import type { ErrorPlace } from '../util/errors.js';

const HALF = (() => {
  const all = new Uint16Array(65536);
  for (let i = 0; i < 65536; i++) all[i] = i;
  return halfArrayToFloat(all);
})();

/** MatMulNBits form of each fast type: bits, block size, and the zero point when the type fixes it (null: a min per block). */
export const FAST_TYPES: Readonly<Record<string, { bits: 4 | 8; blockSize: 16 | 32; zeroPoint: number | null }>> = {
  Q4_0: { bits: 4, blockSize: 32, zeroPoint: 8 },
  Q4_1: { bits: 4, blockSize: 32, zeroPoint: null },
  Q8_0: { bits: 8, blockSize: 32, zeroPoint: 128 },
  Q4_K: { bits: 4, blockSize: 32, zeroPoint: null },
  Q6_K: { bits: 8, blockSize: 16, zeroPoint: 32 },
};

/**
 * `ggmlToMatMulNBits(type, src, n, k)`, fast for Q4_0, Q4_1, Q8_0, Q4_K and Q6_K (the `fp16Exact`
 * field is not computed by the fast paths and is reported false).
 */
export function toMatMulNBits(type: number, src: Uint8Array, n: number, k: number,
  place: ErrorPlace = {}): NBitsWeight
{
  const t = ggmlType(type);
  const f = t ? FAST_TYPES[t.name] : undefined;
  if (!t || !f || k % t.blockSize !== 0 || src.byteLength !== (n * k * t.typeSize) / t.blockSize)
    return ggmlToMatMulNBits(type, src, n, k, place);
  const nb = (n * k) / f.blockSize;
  const packed = new Uint8Array((n * k * f.bits) / 8);
  const scales = new Float32Array(nb);
  const minTerm = f.zeroPoint === null ? new Float32Array(nb) : null;
  decodeInto(t.name, src, n, k, packed, scales, minTerm);
  return finishNbits(f.bits, f.blockSize, n, k, packed, scales, minTerm, f.zeroPoint);
}

/**
 * Codes (packed as MatMulNBits wants them), scales and per-block min terms of n rows of a fast
 * type, written into the given arrays (e.g. views of a whole tensor's arrays, so that a tensor
 * decoded a chunk at a time needs no per-chunk copies). `minTerm` is needed for types with a min.
 */
export function decodeInto(type: string, src: Uint8Array, n: number, k: number, packed: Uint8Array,
  scales: Float32Array, minTerm: Float32Array | null): void
{
  // Aligned copies so that 16- and 32-bit views work (readTensorBytes gives aligned buffers already).
  if (src.byteOffset % 4 !== 0) src = src.slice();
  if (type === 'Q4_K' && packed.byteOffset % 2 !== 0) throw new Error('decodeInto: Q4_K output must be 2-byte aligned');
  switch (type) {
    case 'Q4_K':
      return q4k(src, n, k, packed, scales, minTerm!);
    case 'Q6_K':
      return q6k(src, n, k, packed, scales);
    case 'Q8_0':
      return q80(src, n, k, packed, scales);
    case 'Q4_0':
    case 'Q4_1':
      return q4x(src, n, k, type === 'Q4_1', packed, scales, minTerm);
    default:
      throw new Error(`decodeInto: ${type} has no fast path`);
  }
}

/**
 * Zero points or mins from per-block min terms, exactly as the general function decides: integer
 * zero points when every block's min is an integer multiple of its scale (constant blocks become
 * codes 1 with the constant as scale), else the min terms as `mins`. Works on a whole tensor.
 */
export function finishNbits(bits: 4 | 8, blockSize: 16 | 32, n: number, k: number, packed: Uint8Array,
  scales: Float32Array, minTerm: Float32Array | null, fixedZp: number | null): NBitsWeight
{
  const kBlocks = k / blockSize;
  const nb = n * kBlocks;
  const maxCode = (1 << bits) - 1;
  let zp: Uint8Array | null = new Uint8Array(nb);
  let mins: Float32Array | null = null;
  if (fixedZp !== null) zp.fill(fixedZp);
  else {
    const m = minTerm!;
    for (let b = 0; b < nb; b++) {
      const s = scales[b]!;
      if (s === 0) continue;
      const z = -m[b]! / s;
      if (!(Number.isInteger(z) && z >= 0 && z <= maxCode && s * z === -m[b]!)) {
        zp = null;
        break;
      }
      zp[b] = z;
    }
    if (zp) {
      const blob = (blockSize * bits) / 8;
      const one = bits === 4 ? 0x11 : 1;
      for (let b = 0; b < nb; b++) {
        if (scales[b] !== 0 || m[b] === 0) continue;
        packed.fill(one, b * blob, (b + 1) * blob);
        scales[b] = m[b]!;
        zp[b] = 0;
      }
    } else mins = m;
  }
  const perRow = Math.ceil((kBlocks * bits) / 8);
  const zeroPoints = new Uint8Array(n * perRow);
  if (zp) {
    if (bits === 8) zeroPoints.set(zp);
    else {
      for (let r = 0; r < n; r++) {
        for (let b = 0; b < kBlocks; b++) zeroPoints[r * perRow + (b >> 1)]! |= zp[r * kBlocks + b]! << ((b & 1) * 4);
      }
    }
  }
  return { bits, blockSize, n, k, kBlocks, packed, scales, zeroPoints, mins, fp16Exact: false };
}

/** Q4_K: 256 values in 8 sub-blocks of 32, 6-bit scale and min each; codes: sub-block 2j in the low nibbles, 2j + 1 in the high nibbles of 32 bytes. */
function q4k(src: Uint8Array, n: number, k: number, packed: Uint8Array, scales: Float32Array,
  minTerm: Float32Array): void
{
  const blocks = (n * k) / 256;
  const s32 = new Uint32Array(src.buffer, src.byteOffset, src.byteLength >> 2);
  const o16 = new Uint16Array(packed.buffer, packed.byteOffset, packed.byteLength >> 1);
  for (let b = 0; b < blocks; b++) {
    const o = b * 144;
    const d = HALF[src[o]! | (src[o + 1]! << 8)]!;
    const dmin = HALF[src[o + 2]! | (src[o + 3]! << 8)]!;
    const s = o + 4;
    for (let j = 0; j < 8; j++) {
      let sc: number, mn: number;
      if (j < 4) {
        sc = src[s + j]! & 63;
        mn = src[s + j + 4]! & 63;
      } else {
        sc = (src[s + j + 4]! & 15) | ((src[s + j - 4]! >> 6) << 4);
        mn = (src[s + j + 4]! >> 4) | ((src[s + j]! >> 6) << 4);
      }
      scales[b * 8 + j] = d * sc;
      minTerm[b * 8 + j] = -(dmin * mn);
    }
    // 4 pairs of sub-blocks; each pair reads 32 code bytes (8 words) and writes 2 × 16 bytes.
    for (let p = 0; p < 4; p++) {
      const w0 = (o + 16 + p * 32) >> 2;
      const lo = ((b * 256 + p * 64) >> 1) >> 1; // u16 index of sub-block 2p's packed bytes
      const hi = lo + 8;
      for (let i = 0; i < 8; i++) {
        const w = s32[w0 + i]!;
        // bytes x0..x3: low nibbles → values 4i..4i+3 of sub-block 2p, high nibbles → of 2p + 1.
        o16[lo + i] = (w & 0xf) | ((w >>> 4) & 0xf0) | ((w >>> 8) & 0xf00) | ((w >>> 12) & 0xf000);
        const v = w >>> 4;
        o16[hi + i] = (v & 0xf) | ((v >>> 4) & 0xf0) | ((v >>> 8) & 0xf00) | ((v >>> 12) & 0xf000);
      }
    }
  }
}

/**
 * Q6_K: 256 values, 16 sub-blocks of 16 with an int8 scale; codes: 4 low bits in ql, 2 high bits
 * in qh; zero point 32. Four codes at a time through 32-bit words: byte k of a ql word gives the
 * low nibbles of values l + k (low half) and l + 64 + k (high half), byte k of a qh word their
 * two high bits, 2 bits per 32-value quarter.
 */
function q6k(src: Uint8Array, n: number, k: number, packed: Uint8Array, scales: Float32Array): void {
  const blocks = (n * k) / 256;
  // Blocks are 210 bytes, so only every other one is 4-byte aligned: words are read through a DataView.
  const dv = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const aligned = packed.byteOffset % 4 === 0;
  const o32 = aligned ? new Uint32Array(packed.buffer, packed.byteOffset, packed.byteLength >> 2) : null;
  const M4 = 0x0f0f0f0f;
  const M2 = 0x03030303;
  for (let b = 0; b < blocks; b++) {
    const o = b * 210;
    const d = HALF[src[o + 208]! | (src[o + 209]! << 8)]!;
    for (let sub = 0; sub < 16; sub++) scales[b * 16 + sub] = d * ((src[o + 192 + sub]! << 24) >> 24);
    for (let h = 0; h < 2; h++) {
      const ql = o + h * 64;
      const qh = o + 128 + h * 32;
      const y = b * 256 + h * 128;
      for (let l = 0; l < 32; l += 4) {
        const a = dv.getUint32(ql + l, true);
        const c = dv.getUint32(ql + l + 32, true);
        const e = dv.getUint32(qh + l, true);
        const w0 = (a & M4) | ((e & M2) << 4);
        const w1 = (c & M4) | (((e >>> 2) & M2) << 4);
        const w2 = ((a >>> 4) & M4) | (((e >>> 4) & M2) << 4);
        const w3 = ((c >>> 4) & M4) | (((e >>> 6) & M2) << 4);
        if (o32) {
          const w = (y + l) >> 2;
          o32[w] = w0;
          o32[w + 8] = w1;
          o32[w + 16] = w2;
          o32[w + 24] = w3;
        } else {
          for (let j = 0; j < 4; j++) {
            packed[y + l + j] = (w0 >>> (8 * j)) & 255;
            packed[y + l + 32 + j] = (w1 >>> (8 * j)) & 255;
            packed[y + l + 64 + j] = (w2 >>> (8 * j)) & 255;
            packed[y + l + 96 + j] = (w3 >>> (8 * j)) & 255;
          }
        }
      }
    }
  }
}

/** Q8_0: 32 int8 codes and a half scale; code + 128 with zero point 128. */
function q80(src: Uint8Array, n: number, k: number, packed: Uint8Array, scales: Float32Array): void {
  const blocks = (n * k) / 32;
  for (let b = 0; b < blocks; b++) {
    const o = b * 34;
    scales[b] = HALF[src[o]! | (src[o + 1]! << 8)]!;
    const y = b * 32;
    for (let j = 0; j < 32; j++) packed[y + j] = src[o + 2 + j]! ^ 0x80;
  }
}

/** Q4_0 (zero point 8) and Q4_1 (a min): 32 values, codes 0..15 in the low nibbles, 16..31 in the high nibbles of 16 bytes. */
function q4x(src: Uint8Array, n: number, k: number, withMin: boolean, packed: Uint8Array, scales: Float32Array,
  minTerm: Float32Array | null): void
{
  const blocks = (n * k) / 32;
  const ts = withMin ? 20 : 18;
  const q0 = withMin ? 4 : 2;
  for (let b = 0; b < blocks; b++) {
    const o = b * ts;
    scales[b] = HALF[src[o]! | (src[o + 1]! << 8)]!;
    if (minTerm) minTerm[b] = HALF[src[o + 2]! | (src[o + 3]! << 8)]!;
    const y = b * 16;
    const q = o + q0;
    for (let i = 0; i < 8; i++) {
      const x0 = src[q + 2 * i]!;
      const x1 = src[q + 2 * i + 1]!;
      packed[y + i] = (x0 & 15) | ((x1 & 15) << 4);
      packed[y + 8 + i] = (x0 >> 4) | (x1 & 0xf0);
    }
  }
}
