/**
 * The weights of a llama GGUF under Hugging Face names, for the ONNX writer: rows dequantized a
 * range at a time (q_proj / k_proj rows back in Hugging Face order), and the MatMulNBits form
 * of quantized projections. See gguf-llama.ts for what llama.cpp changes and why.
 */
import type { GgufFile, GgufTensorInfo } from '../formats/gguf.js';
import { dequantizeBlocks } from '../formats/ggml.js';
import { NBITS_MAPPING } from '../formats/ggml-nbits.js';
import { LobesError } from '../util/errors.js';
import type { LlamaWeightSource, NbitsBlocks } from './llama-onnx/index.js';
import { decodeInto, finishNbits, toMatMulNBits, FAST_TYPES } from './nbits-fast.js';

/** How one Hugging Face weight is stored in the GGUF. */
export interface MappedWeight {
  /** The Hugging Face name (model.layers.3.self_attn.q_proj.weight, ...). */
  name: string;
  tensor: GgufTensorInfo;
  /** Heads whose rows llama.cpp reordered (q_proj: heads, k_proj: KV heads); 0 for every other weight. */
  permutedHeads: number;
  /** HF shape: [rows, cols] for matrices, [n] for norms. */
  shape: number[];
}

/** GGUF row holding HF row `r` of a weight whose rows llama.cpp reordered per head of `d` rows. */
export function ggufRowOf(r: number, d: number): number {
  const h = Math.floor(r / d);
  const j = r - h * d;
  const halfD = d / 2;
  return j < halfD ? h * d + 2 * j : h * d + 2 * (j - halfD) + 1;
}

/** HF row stored at GGUF row `g` (the inverse of ggufRowOf). */
export function hfRowOf(g: number, d: number): number {
  const h = Math.floor(g / d);
  const p = g - h * d;
  return h * d + (p & 1) * (d / 2) + (p >> 1);
}

/** Bytes of raw tensor data read at a time. */
const READ_BYTES = 8 << 20;

/**
 * The weights of a llama GGUF under Hugging Face names: rows dequantized to float32 a range at a
 * time (Q/K rows un-permuted), and the MatMulNBits form of quantized projections whose GGML type
 * maps onto it exactly.
 */
export class GgufWeightSource implements LlamaWeightSource {
  private readonly byName: Map<string, MappedWeight>;
  /** The last head-aligned row range dequantized for a permuted weight (the writer reads in increasing ranges). */
  private cache: { name: string; g0: number; g1: number; data: Float32Array } | null = null;

  constructor(
    private readonly g: GgufFile,
    mapped: MappedWeight[],
    private readonly headDim: number,
  ) {
    this.byName = new Map(mapped.map((m) => [m.name, m]));
  }

  private get(name: string): MappedWeight {
    const m = this.byName.get(name);
    if (!m) throw new LobesError(`no weight named ${JSON.stringify(name)} in this Llama GGUF`, { file: this.g.file });
    return m;
  }

  /** The GGUF tensor behind a Hugging Face weight name. */
  tensorOf(name: string): GgufTensorInfo {
    return this.get(name).tensor;
  }

  /** Raw bytes read into one reused buffer, then decoded into a fresh output (one allocation per call). */
  private raw = new Uint8Array(0);
  /** Buffers of released fastNbits results, by byte length, for the next tensor of that size. */
  private spare = new Map<number, ArrayBuffer[]>();

  private take(bytes: number): ArrayBuffer {
    return this.spare.get(bytes)?.pop() ?? new ArrayBuffer(bytes);
  }

  private give(...bufs: ArrayBuffer[]): void {
    for (const b of bufs) {
      const list = this.spare.get(b.byteLength);
      if (list) list.push(b);
      else this.spare.set(b.byteLength, [b]);
    }
  }

  private decode(t: GgufTensorInfo, r0: number, r1: number, into?: Float32Array): Float32Array {
    const out = into ? into.subarray(0, (r1 - r0) * t.dims[0]) : new Float32Array((r1 - r0) * t.dims[0]);
    const place = { file: this.g.file, where: `tensor ${JSON.stringify(t.name)}` };
    const rowsPer = Math.max(1, Math.floor(READ_BYTES / t.rowBytes));
    for (let r = r0; r < r1; r += rowsPer) {
      const e = Math.min(r1, r + rowsPer);
      const n = (e - r) * t.rowBytes;
      if (this.raw.byteLength < n) this.raw = new Uint8Array(n);
      dequantizeBlocks(t.type, this.g.readTensorBytes(t, r, e, this.raw),
        out.subarray((r - r0) * t.dims[0], (e - r0) * t.dims[0]), place);
    }
    return out;
  }

  /** HF shape: [rows, cols] (norms [n]). */
  shape(name: string): number[] {
    return [...this.get(name).shape];
  }

  /** rows() into a caller's buffer: decoded straight into it for a matrix whose rows are in order (no fresh chunk). */
  rowsInto(name: string, r0: number, r1: number, out: Float32Array): Float32Array {
    const m = this.get(name);
    const t = m.tensor;
    const inOrder = t.dims.length === 2 && m.permutedHeads === 0 && Number.isInteger(r0) && Number.isInteger(r1) &&
      r0 >= 0 && r0 <= r1 && r1 <= t.rows;
    if (!inOrder || out.length < (r1 - r0) * t.dims[0]) {
      const got = this.rows(name, r0, r1);
      if (out.length < got.length) return got;
      out.set(got);
      return out.subarray(0, got.length);
    }
    return this.decode(t, r0, r1, out);
  }

  /** HF rows [r0, r1) as float32, row-major (Q/K rows in Hugging Face order); a 1-D weight [n] is n rows of one value. */
  rows(name: string, r0: number, r1: number): Float32Array {
    const m = this.get(name);
    const t = m.tensor;
    const vector = t.dims.length === 1;
    const n = vector ? t.dims[0] : t.rows;
    if (!(Number.isInteger(r0) && Number.isInteger(r1) && r0 >= 0 && r1 <= n && r0 <= r1)) {
      throw new LobesError(`rows [${r0}, ${r1}) out of range for ${n} rows`, { file: this.g.file,
        where: `tensor ${JSON.stringify(t.name)}` });
    }
    // A 1-D weight [n] is n rows of one value.
    if (vector) return this.g.dequantize(t).slice(r0, r1);
    const cols = t.dims[0];
    if (m.permutedHeads === 0) return this.decode(t, r0, r1);
    const d = this.headDim;
    const g0 = Math.floor(r0 / d) * d;
    const g1 = Math.min(t.rows, Math.ceil(r1 / d) * d);
    let src: Float32Array;
    let base: number;
    const c = this.cache;
    if (c && c.name === name && c.g0 <= g0 && c.g1 >= g1) {
      src = c.data;
      base = c.g0;
    } else {
      src = this.decode(t, g0, g1);
      base = g0;
      this.cache = { name, g0, g1, data: src };
    }
    const out = new Float32Array((r1 - r0) * cols);
    for (let r = r0; r < r1; r++) {
      const gr = ggufRowOf(r, d) - base;
      out.set(src.subarray(gr * cols, (gr + 1) * cols), (r - r0) * cols);
    }
    return out;
  }

  /**
   * The weight as MatMulNBits blocks when its GGML type maps exactly (src/formats/ggml-nbits.ts:
   * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), rows in Hugging Face order; null
   * for float types and 1-D weights. 2-bit codes (Q2_K) are widened to 4 bits. Types with a min
   * come with zero points when every block's min is an integer multiple of its scale, otherwise
   * with `mins` (w = q·scale + min). (ONNX Runtime's CPU MatMulNBits has no 8-bit kernel with
   * float zero points: the writer expands 8-bit blocks with mins, Q5_1 and Q5_K in practice, to
   * float exactly.) Memory: the result plus one read of about 8 MiB.
   */
  nbits(name: string): NbitsBlocks | null {
    const m = this.get(name);
    const t = m.tensor;
    const map = NBITS_MAPPING[t.typeName];
    if (!map || t.dims.length !== 2) return null;
    if (FAST_TYPES[t.typeName]) return this.fastNbits(m);
    const n = t.rows;
    const k = t.dims[0];
    const bits: 4 | 8 = map.bits === 8 ? 8 : 4;
    const bs = map.blockSize;
    const kBlocks = k / bs;
    const blob = (bs * bits) / 8;
    const zpRow = Math.ceil((kBlocks * bits) / 8);
    const weights = new Uint8Array(n * kBlocks * blob);
    const scales = new Float32Array(n * kBlocks);
    const zeroPoints = new Uint8Array(n * zpRow);
    let mins: Float32Array | null = null;
    const d = this.headDim;
    const place = { file: this.g.file, where: `tensor ${JSON.stringify(t.name)}` };
    const rowsPer = Math.max(1, Math.floor(READ_BYTES / t.rowBytes));
    const raw = new Uint8Array(Math.min(rowsPer, n) * t.rowBytes);
    for (let g0 = 0; g0 < n; g0 += rowsPer) {
      const g1 = Math.min(n, g0 + rowsPer);
      const w = toMatMulNBits(t.type, this.g.readTensorBytes(t, g0, g1, raw), g1 - g0, k, place);
      // One representation per tensor: once a chunk needs mins, zero points become mins (-z·scale, exact).
      if (w.mins && !mins) {
        mins = zeroPointsToMins(zeroPoints, scales, n, kBlocks, bits, zpRow);
        zeroPoints.fill(0);
      }
      let chunkMins = w.mins;
      let chunkZp = w.zeroPoints;
      if (mins && !chunkMins) {
        chunkMins = zeroPointsToMins(w.zeroPoints, w.scales, g1 - g0, kBlocks, w.bits,
          Math.ceil((kBlocks * w.bits) / 8));
        chunkZp = new Uint8Array(w.zeroPoints.length);
      }
      const srcBlob = (bs * w.bits) / 8;
      const srcZpRow = Math.ceil((kBlocks * w.bits) / 8);
      if (!m.permutedHeads && w.bits === bits) {
        // Rows in place: whole chunks at once.
        weights.set(w.packed, g0 * kBlocks * blob);
        zeroPoints.set(chunkZp, g0 * zpRow);
        scales.set(w.scales, g0 * kBlocks);
        if (mins) mins.set(chunkMins!, g0 * kBlocks);
        continue;
      }
      for (let r = 0; r < g1 - g0; r++) {
        const hr = m.permutedHeads ? hfRowOf(g0 + r, d) : g0 + r;
        const codes = w.packed.subarray(r * kBlocks * srcBlob, (r + 1) * kBlocks * srcBlob);
        const zps = chunkZp.subarray(r * srcZpRow, (r + 1) * srcZpRow);
        if (w.bits === bits) {
          weights.set(codes, hr * kBlocks * blob);
          zeroPoints.set(zps, hr * zpRow);
        } else {
          widen(codes, w.bits, weights.subarray(hr * kBlocks * blob, (hr + 1) * kBlocks * blob), bits);
          widen(zps, w.bits, zeroPoints.subarray(hr * zpRow, (hr + 1) * zpRow), bits, kBlocks);
        }
        scales.set(w.scales.subarray(r * kBlocks, (r + 1) * kBlocks), hr * kBlocks);
        if (mins) mins.set(chunkMins!.subarray(r * kBlocks, (r + 1) * kBlocks), hr * kBlocks);
      }
    }
    return { bits, blockSize: bs, weights, scales, zeroPoints: mins ? null : zeroPoints, mins };
  }

  /**
   * nbits() for the types with a fast path (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K): each chunk of rows is
   * decoded straight into the tensor's arrays (through one reused chunk buffer when q/k rows
   * have to be put back in order), and zero points versus mins are decided once for the tensor.
   */
  private fastNbits(m: MappedWeight): NbitsBlocks {
    const t = m.tensor;
    const f = FAST_TYPES[t.typeName]!;
    const n = t.rows;
    const k = t.dims[0];
    const kBlocks = k / f.blockSize;
    const blob = (f.blockSize * f.bits) / 8;
    // every element is written by decodeInto below, so buffers of an earlier tensor of the same
    // size (released by the writer) are reused: fresh pages cost a fault each
    const weights = new Uint8Array(this.take(n * kBlocks * blob));
    const scales = new Float32Array(this.take(n * kBlocks * 4));
    const minTerm = f.zeroPoint === null ? new Float32Array(this.take(n * kBlocks * 4)) : null;
    const rowsPer = Math.max(1, Math.floor(READ_BYTES / t.rowBytes));
    const chunk = Math.min(rowsPer, n);
    const raw = new Uint8Array(chunk * t.rowBytes);
    const perm = m.permutedHeads > 0;
    const cw = perm ? new Uint8Array(chunk * kBlocks * blob) : null;
    const cs = perm ? new Float32Array(chunk * kBlocks) : null;
    const cm = perm && minTerm ? new Float32Array(chunk * kBlocks) : null;
    for (let g0 = 0; g0 < n; g0 += rowsPer) {
      const g1 = Math.min(n, g0 + rowsPer);
      const R = g1 - g0;
      const bytes = this.g.readTensorBytes(t, g0, g1, raw);
      if (!perm) {
        decodeInto(t.typeName, bytes, R, k, weights.subarray(g0 * kBlocks * blob, g1 * kBlocks * blob),
          scales.subarray(g0 * kBlocks, g1 * kBlocks), minTerm ? minTerm.subarray(g0 * kBlocks, g1 * kBlocks) : null);
        continue;
      }
      decodeInto(t.typeName, bytes, R, k, cw!.subarray(0, R * kBlocks * blob), cs!.subarray(0, R * kBlocks),
        cm ? cm.subarray(0, R * kBlocks) : null);
      for (let r = 0; r < R; r++) {
        const hr = hfRowOf(g0 + r, this.headDim);
        weights.set(cw!.subarray(r * kBlocks * blob, (r + 1) * kBlocks * blob), hr * kBlocks * blob);
        scales.set(cs!.subarray(r * kBlocks, (r + 1) * kBlocks), hr * kBlocks);
        if (minTerm) minTerm.set(cm!.subarray(r * kBlocks, (r + 1) * kBlocks), hr * kBlocks);
      }
    }
    const w = finishNbits(f.bits, f.blockSize, n, k, weights, scales, minTerm, f.zeroPoint);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.give(weights.buffer, scales.buffer, ...(minTerm ? [minTerm.buffer] : []));
    };
    return { bits: f.bits, blockSize: f.blockSize, weights: w.packed, scales: w.scales,
      zeroPoints: w.mins ? null : w.zeroPoints, mins: w.mins, release };
  }
}

/** Packed codes of `fromBits` widened to `toBits` (low bits first), `count` codes (default: all of src). */
function widen(src: Uint8Array, fromBits: number, dst: Uint8Array, toBits: number,
  count = (src.length * 8) / fromBits): void
{
  const mask = (1 << fromBits) - 1;
  dst.fill(0);
  for (let i = 0; i < count; i++) {
    const b = i * fromBits;
    const q = (src[b >> 3] >> (b & 7)) & mask;
    const o = i * toBits;
    dst[o >> 3] |= q << (o & 7);
  }
}

/** Per-block min terms −z·scale of packed zero points (exact: z and scale are small integers times a half). */
function zeroPointsToMins(zp: Uint8Array, scales: Float32Array, rows: number, kBlocks: number, bits: number,
  zpRow: number): Float32Array
{
  const mins = new Float32Array(rows * kBlocks);
  const mask = (1 << bits) - 1;
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < kBlocks; b++) {
      const bit = b * bits;
      const z = (zp[r * zpRow + (bit >> 3)] >> (bit & 7)) & mask;
      mins[r * kBlocks + b] = z === 0 ? 0 : -z * scales[r * kBlocks + b];
    }
  }
  return mins;
}
