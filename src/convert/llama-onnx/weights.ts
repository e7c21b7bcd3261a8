/**
 * Streaming weights from a LlamaWeightSource into reserved tensors, a row chunk at a time:
 * float (float32 or float16, as stored or transposed to ONNX MatMul's [d_in, d_out], several
 * weights side by side for a fused projection), and MatMulNBits (blocks given by the source,
 * or quantized here from rows). Peak memory is one chunk of one tensor (plus, for a weight the
 * source gives as nbits blocks, those blocks).
 */
import { LobesError, opt } from '../../util/errors.js';
import { floatArrayToHalf } from '../../util/half.js';
import type { LlamaWeightSource, NbitsBlocks } from './types.js';
import type { Region, TensorSink } from './sink.js';

export interface StreamCtx {
  src: LlamaWeightSource;
  sink: TensorSink;
  /** Largest float32 chunk read from the source at once, in bytes. */
  chunkBytes: number;
  /** The chunk buffer reused across rowsInto calls (grown on demand). */
  chunk?: Float32Array;
  /** The transposed tile reused across chunks (grown on demand; written out before the next chunk). */
  tile?: Float32Array;
  /** The float zero points' buffer reused across streamNbits calls (grown on demand). */
  zeroPointBuf?: Float32Array;
  /** bfloat16 storage: the chunk of bit patterns and its transposed tile, reused likewise. */
  chunk16?: Uint16Array;
  tile16?: Uint16Array;
}

const bytes = (a: Float32Array | Uint16Array | Uint8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Rows per chunk for a weight with `cols` values per row. */
export function chunkRows(cols: number, chunkBytes: number): number {
  return Math.max(1, Math.floor(chunkBytes / (Math.max(1, cols) * 4)));
}

function readRows(src: LlamaWeightSource, name: string, r0: number, r1: number, cols: number,
  ctx?: StreamCtx): Float32Array
{
  let got: Float32Array;
  if (ctx && src.rowsInto) {
    const need = (r1 - r0) * cols;
    if (!ctx.chunk || ctx.chunk.length < need) ctx.chunk = new Float32Array(need);
    got = src.rowsInto(name, r0, r1, ctx.chunk);
  } else got = src.rows(name, r0, r1);
  if (!(got instanceof Float32Array) || got.length !== (r1 - r0) * cols) {
    throw new LobesError(
      `the weight source gave ${got?.length ?? 'no'} values for rows [${r0}, ${r1}) of ${cols} columns (${
        (r1 - r0) * cols
      } expected)`,
      { where: name },
    );
  }
  return got;
}

/**
 * Rows [r0, r1) of a weight as bfloat16 bit patterns: the source's own (bf16RowsInto), or the
 * high halves of its float32 rows when every low half is 0 (a bfloat16 decoded to float32).
 * Any other value would be rounded, so it is refused, naming the weight and the row.
 */
function readBf16Rows(ctx: StreamCtx, name: string, r0: number, r1: number, cols: number): Uint16Array {
  const need = (r1 - r0) * cols;
  if (!ctx.chunk16 || ctx.chunk16.length < need) ctx.chunk16 = new Uint16Array(need);
  const out = ctx.chunk16.subarray(0, need);
  const raw = ctx.src.bf16RowsInto?.(name, r0, r1, ctx.chunk16) ?? null;
  if (raw) {
    if (raw.length !== need)
      throw new LobesError(
        `the weight source gave ${raw.length} bfloat16 values for rows [${r0}, ${r1}) of ${cols} columns (${need} expected)`,
        { where: name },
      );
    return raw;
  }
  const f = readRows(ctx.src, name, r0, r1, cols, ctx);
  const u32 = new Uint32Array(f.buffer, f.byteOffset, f.length);
  for (let i = 0; i < need; i++) {
    const v = u32[i]!;
    if ((v & 0xffff) !== 0) {
      throw new LobesError(
        `value ${f[i]} (row ${r0 + Math.floor(i / cols)}) is not a bfloat16, so bf16 storage would round it`,
        { where: name,
          hint: `bf16 storage is for weights that are bfloat16 in the source; use ${opt('weights', 'fp32')}` },
      );
    }
    out[i] = v >>> 16;
  }
  return out;
}

/** [rows, cols] of a source weight (1-D: [n, 1]). */
export function shape2(src: LlamaWeightSource, name: string): [number, number] {
  const s = src.shape(name);
  if (s.length === 1) return [s[0]!, 1];
  if (s.length === 2) return [s[0]!, s[1]!];
  throw new LobesError(`weight has ${s.length} dimensions (1 or 2 expected)`, { where: name });
}

/**
 * Stream float weights into a reserved region. `parts` are stacked along d_out; stored as
 * [Σ d_out, d_in] (as given) or, with `transpose`, [d_in, Σ d_out] (ONNX MatMul's layout).
 * `rows(name, r0, r1)` is called in increasing row order, each part once.
 */
export function streamFloat(ctx: StreamCtx, region: Region, parts: string[],
  opts: { transpose: boolean; dtype: 'float32' | 'float16' | 'bfloat16' }): void
{
  const es = opts.dtype === 'float32' ? 4 : 2;
  const shapes = parts.map((p) => shape2(ctx.src, p));
  const cols = shapes[0]![1];
  const total = shapes.reduce((a, s) => a + s[0], 0);
  for (const [i, s] of shapes.entries()) {
    if (s[1] !== cols)
      throw new LobesError(`fused weights disagree on d_in: ${parts[0]} has ${cols}, ${parts[i]} has ${s[1]}`, {
        where: parts[i],
      });
  }
  if (region.byteLength !== total * cols * es)
    throw new Error(`${region.name}: region of ${region.byteLength} bytes for ${total}×${cols}×${es}`);
  let rowOff = 0;
  for (const [p, name] of parts.entries()) {
    const rows = shapes[p]![0];
    const step = chunkRows(cols, ctx.chunkBytes);
    for (let r0 = 0; r0 < rows; r0 += step) {
      const r1 = Math.min(rows, r0 + step);
      const R = r1 - r0;
      const plain = !opts.transpose || cols === 1;
      if (opts.dtype === 'bfloat16') {
        // The bit patterns as stored: no decode, only the transpose (of 2-byte values).
        const chunk = readBf16Rows(ctx, name, r0, r1, cols);
        if (plain) {
          region.write((rowOff + r0) * cols * es, bytes(chunk));
          continue;
        }
        if (!ctx.tile16 || ctx.tile16.length < R * cols) ctx.tile16 = new Uint16Array(R * cols);
        const tile = ctx.tile16.subarray(0, R * cols);
        transposeInto(chunk, R, cols, tile);
        writeTransposed(region, bytes(tile), R, total, cols, rowOff + r0, es);
        continue;
      }
      // Both paths are done with the chunk before the next read, so it reuses one buffer.
      const chunk = readRows(ctx.src, name, r0, r1, cols, ctx);
      if (plain) {
        const out = opts.dtype === 'float16' ? bytes(floatArrayToHalf(chunk)) : bytes(chunk);
        region.write((rowOff + r0) * cols * es, out);
        continue;
      }
      // Transposed: out[i, rowOff + r0 + j] = chunk[j, i]; a tile of R values per output row.
      if (!ctx.tile || ctx.tile.length < R * cols) ctx.tile = new Float32Array(R * cols);
      const tile = ctx.tile.subarray(0, R * cols);
      transposeInto(chunk, R, cols, tile);
      const tb = opts.dtype === 'float16' ? bytes(floatArrayToHalf(tile)) : bytes(tile);
      writeTransposed(region, tb, R, total, cols, rowOff + r0, es);
    }
    rowOff += rows;
  }
}

/** A transposed tile [cols, R] written as columns [c0, c0 + R) of a [cols, total] tensor. */
function writeTransposed(region: Region, tb: Uint8Array, R: number, total: number, cols: number, c0: number,
  es: number): void
{
  if (R === total) region.write(0, tb);
  else for (let i = 0; i < cols; i++) region.write((i * total + c0) * es, tb.subarray(i * R * es, (i + 1) * R * es));
}

/** dst[c, r] = src[r, c] for src [rows, cols], in 32×32 blocks (float32 values or 16-bit patterns). */
export function transposeInto<T extends Float32Array | Uint16Array>(src: T, rows: number, cols: number, dst: T): void {
  const B = 32;
  for (let r0 = 0; r0 < rows; r0 += B) {
    const r1 = Math.min(rows, r0 + B);
    for (let c0 = 0; c0 < cols; c0 += B) {
      const c1 = Math.min(cols, c0 + B);
      for (let r = r0; r < r1; r++) {
        const so = r * cols;
        for (let c = c0; c < c1; c++) dst[c * rows + r] = src[so + c]!;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// MatMulNBits

/** How a group of projection weights (stacked along d_out) is stored as MatMulNBits. */
export interface NbitsPlan {
  bits: 4 | 8;
  blockSize: number;
  /** 'u8': packed integer zero points; 'float': float zero points (-min/scale, for blocks with a min). */
  zp: 'u8' | 'float';
  /** Per part: the source's blocks, or null (quantized here from rows()). */
  blocks: (NbitsBlocks | null)[];
}

/** Bytes per row of MatMulNBits' packed zero points. */
export const zpRowBytes = (nBlocks: number, bits: number) => Math.ceil((nBlocks * bits) / 8);

function checkBlocks(b: NbitsBlocks, name: string, dOut: number, dIn: number): void {
  const bad = (what: string) => new LobesError(`nbits blocks: ${what}`, { where: name });
  if (b.bits !== 4 && b.bits !== 8) throw bad(`bits ${String(b.bits)} (4 or 8 supported)`);
  if (!(b.blockSize >= 16 && (b.blockSize & (b.blockSize - 1)) === 0))
    throw bad(`block size ${b.blockSize} is not a power of two ≥ 16`);
  if (dIn % b.blockSize !== 0) throw bad(`d_in ${dIn} is not a multiple of block size ${b.blockSize}`);
  const nb = dIn / b.blockSize;
  const need = dOut * nb * ((b.blockSize * b.bits) / 8);
  if (b.weights.length !== need) throw bad(`${b.weights.length} weight bytes for [${dOut}, ${dIn}] (${need} expected)`);
  if (b.scales.length !== dOut * nb) throw bad(`${b.scales.length} scales (${dOut * nb} expected)`);
  if (b.mins) {
    if (b.mins.length !== dOut * nb) throw bad(`${b.mins.length} mins (${dOut * nb} expected)`);
  } else if (!b.zeroPoints) {
    throw bad('neither zero points nor mins given');
  } else if (b.zeroPoints.length !== dOut * zpRowBytes(nb, b.bits)) {
    throw bad(`${b.zeroPoints.length} zero point bytes (${dOut * zpRowBytes(nb, b.bits)} expected)`);
  }
}

/**
 * Whether ONNX Runtime's CPU MatMulNBits can run blocks in this form: 8-bit blocks with float
 * zero points (a min term) have no CPU kernel (onnxruntime 1.30: "Only 2b and 4b quantization
 * is supported for unpacked compute"), so such weights are expanded to float instead.
 */
export function runnableNbits(b: NbitsBlocks): boolean {
  return !(b.bits === 8 && b.mins);
}

/** The source's blocks of a weight, checked against its shape (null when it gives none). */
export function sourceBlocks(src: LlamaWeightSource, name: string): NbitsBlocks | null {
  const b = src.nbits?.(name) ?? null;
  if (b) {
    const [dOut, dIn] = shape2(src, name);
    checkBlocks(b, name, dOut, dIn);
  }
  return b;
}

/**
 * Decide the MatMulNBits form of weights stacked along d_out, given each part's source blocks
 * (null: none): the source's form where it gives blocks (all parts must then share bits and
 * block size), 4-bit block 32 quantized from rows otherwise. Null when the parts cannot share
 * one MatMulNBits (different forms, or blocks ONNX Runtime cannot run: see runnableNbits).
 */
export function planNbits(src: LlamaWeightSource, parts: string[], blocks: (NbitsBlocks | null)[]): NbitsPlan | null {
  const given = blocks.filter((b): b is NbitsBlocks => b !== null);
  if (given.some((b) => !runnableNbits(b))) return null;
  const bits = given[0]?.bits ?? 4;
  const blockSize = given[0]?.blockSize ?? 32;
  if (given.some((b) => b.bits !== bits || b.blockSize !== blockSize)) return null;
  for (const p of parts) {
    const dIn = shape2(src, p)[1];
    if (dIn % blockSize !== 0)
      throw new LobesError(`d_in ${dIn} is not a multiple of the MatMulNBits block size ${blockSize}`, { where: p });
  }
  return { bits, blockSize, zp: given.some((b) => b.mins) ? 'float' : 'u8', blocks };
}

/**
 * Asymmetric `bits`-bit quantization of rows [rows, dIn] in blocks along dIn (min and max
 * taken with 0): scale = (max − min)/(2^bits − 1) (1 when the block is all 0), zero point
 * round(−min/scale) clamped, code clamp(round(w/scale) + zp), round(x) = floor(x + 0.5). Codes are written packed
 * low bits first into `codes` ([rows, nb, blockSize·bits/8]), zero points packed per row.
 * With `dequant`, w is overwritten by (code − zp)·scale.
 */
export function quantizeRows(
  w: Float32Array,
  rows: number,
  dIn: number,
  bits: 4 | 8,
  blockSize: number,
  out: { codes: Uint8Array; scales: Float32Array; zeroPoints: Uint8Array },
  dequant = false,
): void {
  const nb = dIn / blockSize;
  const levels = (1 << bits) - 1;
  const zpBytes = zpRowBytes(nb, bits);
  const blob = (blockSize * bits) / 8;
  const { codes, scales, zeroPoints } = out;
  for (let o = 0; o < rows; o++) {
    for (let b = 0; b < nb; b++) {
      const base = o * dIn + b * blockSize;
      let lo = 0;
      let hi = 0;
      for (let k = 0; k < blockSize; k++) {
        const v = w[base + k]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      const scale = Math.fround((hi - lo) / levels || 1);
      let zp = Math.floor(-lo / scale + 0.5);
      zp = zp < 0 ? 0 : zp > levels ? levels : zp;
      scales[o * nb + b] = scale;
      const cb = (o * nb + b) * blob;
      if (bits === 4) {
        zeroPoints[o * zpBytes + (b >> 1)]! |= zp << ((b & 1) * 4);
        for (let k = 0; k < blockSize; k += 2) {
          let q0 = Math.floor(w[base + k]! / scale + 0.5) + zp;
          let q1 = Math.floor(w[base + k + 1]! / scale + 0.5) + zp;
          q0 = q0 < 0 ? 0 : q0 > 15 ? 15 : q0;
          q1 = q1 < 0 ? 0 : q1 > 15 ? 15 : q1;
          codes[cb + (k >> 1)] = q0 | (q1 << 4);
          if (dequant) {
            w[base + k] = Math.fround((q0 - zp) * scale);
            w[base + k + 1] = Math.fround((q1 - zp) * scale);
          }
        }
      } else {
        zeroPoints[o * zpBytes + b] = zp;
        for (let k = 0; k < blockSize; k++) {
          let q = Math.floor(w[base + k]! / scale + 0.5) + zp;
          q = q < 0 ? 0 : q > levels ? levels : q;
          codes[cb + k] = q;
          if (dequant) w[base + k] = Math.fround((q - zp) * scale);
        }
      }
    }
  }
}

export interface NbitsRegions {
  B: Region;
  scales: Region;
  zp: Region;
}

/** Zero point of block `b` of a packed row. */
function unpackZp(zp: Uint8Array, rowOff: number, b: number, bits: number): number {
  if (bits === 8) return zp[rowOff + b]!;
  return (zp[rowOff + (b >> 1)]! >> ((b & 1) * 4)) & 15;
}

/**
 * Stream the parts of a plan into MatMulNBits tensors: B [N, nb, blob], scales [N·nb] and
 * zero points (u8 [N, zpRowBytes] or float [N·nb]), in `dtype` for scales and float zero
 * points. A part with a min term and scale 0 (a constant block c) becomes codes 1, scale c,
 * zero point 0, which is exact.
 */
export function streamNbits(ctx: StreamCtx, r: NbitsRegions, parts: string[], plan: NbitsPlan,
  dtype: 'float32' | 'float16'): void
{
  const { bits, blockSize } = plan;
  const blob = (blockSize * bits) / 8;
  const fs = dtype === 'float16' ? 2 : 4;
  const floatBytes = (a: Float32Array) => (dtype === 'float16' ? bytes(floatArrayToHalf(a)) : bytes(a));
  let rowOff = 0;
  for (const [p, name] of parts.entries()) {
    const [dOut, dIn] = shape2(ctx.src, name);
    const nb = dIn / blockSize;
    const zpb = zpRowBytes(nb, bits);
    const given = plan.blocks[p];
    if (given) {
      // The source's arrays are written as they are (no copies on the way out, except into
      // float16 for an fp16 graph), each tensor in one write.
      if (plan.zp === 'u8') {
        r.B.write(rowOff * nb * blob, given.weights);
        r.scales.write(rowOff * nb * fs, floatBytes(given.scales));
        r.zp.write(rowOff * zpb, given.zeroPoints!);
      } else {
        let scales = given.scales;
        // one buffer for every weight's float zero points (a fresh array per weight costs a page fault per 4 KB)
        if (!ctx.zeroPointBuf || ctx.zeroPointBuf.length < dOut * nb) ctx.zeroPointBuf = new Float32Array(dOut * nb);
        const zf = ctx.zeroPointBuf.subarray(0, dOut * nb).fill(0);
        const fixed: number[] = [];
        const mins = given.mins;
        if (mins) {
          for (let i = 0; i < zf.length; i++) {
            const s = scales[i]!;
            if (s !== 0) zf[i] = -mins[i]! / s;
            else if (mins[i] !== 0) fixed.push(i);
          }
          // A constant block c (scale 0, min c): scale c, zero point 0, codes all 1, which is
          // exact. The source's scales are copied only when there is such a block.
          if (fixed.length) {
            scales = Float32Array.from(scales);
            for (const i of fixed) scales[i] = mins[i]!;
          }
        } else {
          for (let i = 0; i < zf.length; i++)
            zf[i] = unpackZp(given.zeroPoints!, Math.floor(i / nb) * zpb, i % nb, bits);
        }
        let codes = given.weights;
        if (fixed.length) {
          codes = Uint8Array.from(codes);
          for (const i of fixed) codes.fill(bits === 4 ? 0x11 : 1, i * blob, (i + 1) * blob);
        }
        r.B.write(rowOff * nb * blob, codes);
        r.scales.write(rowOff * nb * fs, floatBytes(scales));
        r.zp.write(rowOff * nb * fs, floatBytes(zf));
      }
      rowOff += dOut;
      continue;
    }
    const step = chunkRows(dIn, ctx.chunkBytes);
    for (let r0 = 0; r0 < dOut; r0 += step) {
      const r1 = Math.min(dOut, r0 + step);
      const R = r1 - r0;
      const w = readRows(ctx.src, name, r0, r1, dIn);
      const codes = new Uint8Array(R * nb * blob);
      const scales = new Float32Array(R * nb);
      const zeroPoints = new Uint8Array(R * zpb);
      quantizeRows(w, R, dIn, bits, blockSize, { codes, scales, zeroPoints });
      r.B.write((rowOff + r0) * nb * blob, codes);
      r.scales.write((rowOff + r0) * nb * fs, floatBytes(scales));
      if (plan.zp === 'u8') r.zp.write((rowOff + r0) * zpb, zeroPoints);
      else {
        const zf = new Float32Array(R * nb);
        for (let i = 0; i < zf.length; i++) zf[i] = unpackZp(zeroPoints, Math.floor(i / nb) * zpb, i % nb, bits);
        r.zp.write((rowOff + r0) * nb * fs, floatBytes(zf));
      }
    }
    rowOff += dOut;
  }
}
