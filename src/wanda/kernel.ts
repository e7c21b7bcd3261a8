/**
 * The weight pass: for one matrix W[d_out, d_in] and a row-block height `rb`, compute
 *
 *   C[bi, j] = Σ_{i ∈ row block bi} |W[i, j]|        (shape [rowBlocks, d_in])
 *
 * from the stored bytes, whatever the storage: dense F32/F16/BF16 in HF layout [d_out, d_in]
 * ('out_in'), dense in ONNX MatMul layout [d_in, d_out] ('in_out'), com.microsoft
 * MatMulNBits 4-bit blocks ('nbits'), or GGML blocks of a GGUF file ('ggml', one stored row per
 * output, dequantized as llama.cpp does). Everything here is plain functions over typed arrays
 * so that worker threads and tests share one implementation. Rows are streamed in chunks:
 * the full matrix is never decoded at once.
 */
import { LobesError } from '../util/errors.js';
import { RangeFile } from '../util/io.js';
import { bf16AbsTable, halfAbsTable, halfArrayToFloat } from '../util/half.js';
import { simdKernel } from './simd.js';
import { dequantizeBlocks, ggmlType, ggmlTypeName } from '../formats/ggml.js';

export type { DenseDtype, ByteRange, DenseWeight, NBitsWeight } from '../runtime/weights.js';
import type { DenseDtype, ByteRange, DenseWeight, NBitsWeight } from '../runtime/weights.js';

/** A weight stored as GGML blocks in a GGUF file: rows are outputs (HF layout), each dIn / blockSize blocks. */
export interface GgmlWeight {
  kind: 'ggml';
  tensor: string;
  /** GGML type id (src/formats/ggml.ts). */
  type: number;
  data: ByteRange;
}

export type WeightSource = DenseWeight | NBitsWeight | GgmlWeight;

/** One matrix to score, in the W[d_out, d_in] convention. */
export interface MatrixRef {
  /** e.g. `layers.3.mlp.down_proj`. */
  name: string;
  layer: number;
  /** HF projection name: gate_proj, up_proj, down_proj, q_proj, ... */
  proj: string;
  /** Capture point providing the input, e.g. `layers.3.mlp.down_in`. */
  input: string;
  dOut: number;
  dIn: number;
  source: WeightSource;
}

export const DTYPE_SIZE: Record<DenseDtype, number> = { F32: 4, F16: 2, BF16: 2 };

/** Sequential reader over a ByteRange (a file range or memory). */
export class RangeReader {
  private file: RangeFile | null = null;
  constructor(private readonly range: ByteRange, private readonly what: string) {
    if ('file' in range) this.file = RangeFile.open(range.file, 'weight file', what);
  }
  get byteLength(): number {
    return 'file' in this.range ? this.range.byteLength : this.range.bytes.byteLength;
  }
  /** Read [start, start+len) of the range into `out` (from index 0). */
  read(start: number, len: number, out: Uint8Array): Uint8Array {
    if (start < 0 || start + len > this.byteLength)
      throw new LobesError(`read [${start}, ${start + len}) past the ${this.byteLength} bytes of the tensor`, {
        where: this.what,
      });
    const dst = out.subarray(0, len);
    if ('bytes' in this.range) dst.set(this.range.bytes.subarray(start, start + len));
    else this.file!.readInto(dst, this.range.offset + start);
    return dst;
  }
  /** The whole range as one fresh array. */
  readAll(): Uint8Array {
    const out = new Uint8Array(new ArrayBuffer(this.byteLength));
    return this.read(0, this.byteLength, out);
  }
  close(): void {
    this.file?.close();
    this.file = null;
  }
}

function subRange(r: ByteRange, off: number, len: number): ByteRange {
  return 'file' in r
    ? { file: r.file, offset: r.offset + off, byteLength: len }
    : { bytes: r.bytes.subarray(off, off + len) };
}

/**
 * Rows [r0, r1) of a matrix as a matrix of its own (HF layout or MatMulNBits only: their
 * stored rows are output rows). With r0 a multiple of the row-block height, its column sums
 * are row blocks r0/rb ... of the whole matrix's.
 */
export function rowSlice(m: MatrixRef, r0: number, r1: number): MatrixRef {
  const s = m.source;
  const rows = r1 - r0;
  if (s.kind === 'ggml') {
    const rowBytes = ggmlRowBytes(m, s);
    return { ...m, dOut: rows, source: { ...s, data: subRange(s.data, r0 * rowBytes, rows * rowBytes) } };
  }
  if (s.kind === 'dense') {
    if (s.layout !== 'out_in') throw new Error('rowSlice needs the out_in layout');
    const rowBytes = m.dIn * DTYPE_SIZE[s.dtype];
    return { ...m, dOut: rows, source: { ...s, data: subRange(s.data, r0 * rowBytes, rows * rowBytes) } };
  }
  const nBlocks = Math.ceil(m.dIn / s.blockSize);
  const rowBytes = nBlocks * ((s.blockSize * s.bits) / 8);
  const sSize = s.scales.dtype === 'F32' ? 4 : 2;
  let zeroPoints = s.zeroPoints;
  if (zeroPoints) {
    const zr = zeroPoints.dtype === 'U8'
      ? Math.ceil((nBlocks * s.bits) / 8)
      : nBlocks * (zeroPoints.dtype === 'F32' ? 4 : 2);
    zeroPoints = { ...zeroPoints, data: subRange(zeroPoints.data, r0 * zr, rows * zr) };
  }
  return {
    ...m,
    dOut: rows,
    source: { ...s, data: subRange(s.data, r0 * rowBytes, rows * rowBytes),
      scales: { ...s.scales, data: subRange(s.scales.data, r0 * nBlocks * sSize, rows * nBlocks * sSize) },
      zeroPoints },
  };
}

/** Bytes of one stored row (one output) of a GGML weight. */
export function ggmlRowBytes(m: MatrixRef, s: GgmlWeight): number {
  const t = ggmlType(s.type);
  if (!t || !t.dequantizable || m.dIn % t.blockSize !== 0)
    throw new LobesError(`GGML ${ggmlTypeName(s.type)} rows of ${m.dIn} values cannot be decoded`, {
      where: `tensor ${JSON.stringify(s.tensor)}`,
    });
  return (m.dIn / t.blockSize) * t.typeSize;
}

export function expectedBytes(m: MatrixRef): number {
  const s = m.source;
  if (s.kind === 'ggml') return m.dOut * ggmlRowBytes(m, s);
  if (s.kind === 'dense') return m.dOut * m.dIn * DTYPE_SIZE[s.dtype];
  const nBlocks = Math.ceil(m.dIn / s.blockSize);
  return m.dOut * nBlocks * ((s.blockSize * s.bits) / 8);
}

/**
 * Bytes per read. Small enough that a chunk is still in the CPU cache when it is summed
 * right after the read (1 MiB measured faster than 8 MiB), large enough to amortize calls.
 */
export const CHUNK_BYTES = 1 << 20;

export interface ColsumOptions {
  /** Row-block height (block rows in W[d_out, d_in]). */
  rowBlock: number;
  /** Bytes per read (default CHUNK_BYTES). */
  chunkBytes?: number;
  /** Use the WebAssembly SIMD kernel where it applies (default true; results are identical). */
  simd?: boolean;
  /** Row block of the whole matrix where this (row-sliced) matrix starts; for messages only. */
  rowBlockOffset?: number;
}

/**
 * C[bi, j] = Σ_{i∈bi} |W_ij| as float32 [rowBlocks, dIn], streaming the matrix in row chunks.
 * Every path adds the rows of a block in row order with float32 rounding, from zero, so all
 * layouts and kernels give bit-identical sums for the same weights.
 * Throws naming the tensor when its byte length does not fit the shape, or when W holds NaN/Inf.
 */
export function columnBlockSums(m: MatrixRef, opts: ColsumOptions): Float32Array {
  const rb = opts.rowBlock;
  const rowBlocks = Math.ceil(m.dOut / rb);
  const C = new Float32Array(rowBlocks * m.dIn);
  const s = m.source;
  const want = expectedBytes(m);
  const reader = new RangeReader(s.data, s.tensor);
  try {
    if (reader.byteLength !== want) {
      throw new LobesError(`holds ${reader.byteLength} bytes but [d_out=${m.dOut}, d_in=${m.dIn}] needs ${want}`, {
        where: `tensor ${JSON.stringify(s.tensor)}`,
      });
    }
    if (s.kind === 'dense' && s.layout === 'out_in' && s.dtype !== 'F16' && opts.simd !== false && simdKernel())
      simdColsums(m, s, reader, C, rb, opts.chunkBytes ?? CHUNK_BYTES);
    else if (s.kind === 'dense') denseColsums(m, s, reader, C, rb, opts.chunkBytes ?? CHUNK_BYTES);
    else if (s.kind === 'ggml') ggmlColsums(m, s, reader, C, rb, opts.chunkBytes ?? CHUNK_BYTES);
    else nbitsColsums(m, s, reader, C, rb, opts.chunkBytes ?? CHUNK_BYTES);
  } finally {
    reader.close();
  }
  for (let k = 0; k < C.length; k++) {
    if (!Number.isFinite(C[k])) {
      throw new LobesError(
        `weights contain NaN or Inf (row block ${Math.floor(k / m.dIn) + (opts.rowBlockOffset ?? 0)}, input feature ${
          k % m.dIn
        })`,
        { where: `tensor ${JSON.stringify(s.tensor)} (${m.name})` },
      );
    }
  }
  return C;
}

/**
 * The same sums as denseColsums for dense BF16/F32 rows in the HF layout, with the rows read
 * straight into WebAssembly memory and summed by the SIMD kernel (bit-identical results).
 */
function simdColsums(m: MatrixRef, s: DenseWeight, reader: RangeReader, C: Float32Array, rb: number,
  chunkBytes: number): void
{
  const k = simdKernel()!;
  const esize = DTYPE_SIZE[s.dtype];
  const per = 16 / esize; // values per vector
  const dIn = m.dIn;
  const nvec = Math.floor(dIn / per);
  const rowBytes = dIn * esize;
  const rowsPerChunk = Math.max(1, Math.min(m.dOut, Math.floor(chunkBytes / rowBytes)));
  const cOff = 0;
  const cBytes = C.length * 4;
  const bufOff = Math.ceil(cBytes / 16) * 16;
  k.ensure(bufOff + rowsPerChunk * rowBytes);
  new Float32Array(k.memory.buffer, cOff, C.length).fill(0);
  const run1 = s.dtype === 'BF16' ? k.bf16 : k.f32;
  const run4 = s.dtype === 'BF16' ? k.bf16x4 : k.f32x4;
  const table = s.dtype === 'BF16' ? bf16AbsTable() : null;
  for (let r0 = 0; r0 < m.dOut; r0 += rowsPerChunk) {
    const nr = Math.min(rowsPerChunk, m.dOut - r0);
    reader.read(r0 * rowBytes, nr * rowBytes, new Uint8Array(k.memory.buffer, bufOff, nr * rowBytes));
    // Rows of one row block at a time, in row order.
    for (let r = 0; r < nr;) {
      const bi = Math.floor((r0 + r) / rb);
      const end = Math.min(nr, (bi + 1) * rb - r0);
      const acc = cOff + bi * dIn * 4;
      if (nvec > 0) {
        const four = (end - r) & ~3;
        if (four > 0) run4(bufOff + r * rowBytes, four, rowBytes, nvec, acc);
        for (let rr = r + four; rr < end; rr++) run1(bufOff + rr * rowBytes, 1, rowBytes, nvec, acc);
      }
      if (nvec * per < dIn) {
        const a = new Float32Array(k.memory.buffer, acc, dIn);
        if (table) {
          const u16 = new Uint16Array(k.memory.buffer, bufOff, nr * dIn);
          for (let rr = r; rr < end; rr++)
            for (let j = nvec * per; j < dIn; j++) a[j] += table[u16[rr * dIn + j] & 0x7fff];
        } else {
          const f32 = new Float32Array(k.memory.buffer, bufOff, nr * dIn);
          for (let rr = r; rr < end; rr++) for (let j = nvec * per; j < dIn; j++) a[j] += Math.abs(f32[rr * dIn + j]);
        }
      }
      r = end;
    }
  }
  C.set(new Float32Array(k.memory.buffer, cOff, C.length));
}

function denseColsums(m: MatrixRef, s: DenseWeight, reader: RangeReader, C: Float32Array, rb: number,
  chunkBytes: number): void
{
  const esize = DTYPE_SIZE[s.dtype];
  // Stored rows: out_in -> d_out rows of d_in; in_out -> d_in rows of d_out.
  const storedRows = s.layout === 'out_in' ? m.dOut : m.dIn;
  const storedCols = s.layout === 'out_in' ? m.dIn : m.dOut;
  const rowBytes = storedCols * esize;
  const rowsPerChunk = Math.max(1, Math.floor(chunkBytes / rowBytes));
  const buf = new Uint8Array(new ArrayBuffer(Math.min(rowsPerChunk, storedRows) * rowBytes));
  const table = s.dtype === 'F16' ? halfAbsTable() : s.dtype === 'BF16' ? bf16AbsTable() : null;
  const dIn = m.dIn;
  for (let r0 = 0; r0 < storedRows; r0 += rowsPerChunk) {
    const nr = Math.min(rowsPerChunk, storedRows - r0);
    const bytes = reader.read(r0 * rowBytes, nr * rowBytes, buf);
    if (s.layout === 'out_in') {
      // Row i of W adds |W[i, :]| to C[bi, :].
      if (table) {
        const u16 = new Uint16Array(bytes.buffer, bytes.byteOffset, nr * storedCols);
        for (let r = 0; r < nr; r++) {
          const cb = Math.floor((r0 + r) / rb) * dIn;
          const base = r * dIn;
          for (let j = 0; j < dIn; j++) C[cb + j] += table[u16[base + j] & 0x7fff];
        }
      } else {
        const f32 = new Float32Array(bytes.buffer, bytes.byteOffset, nr * storedCols);
        for (let r = 0; r < nr; r++) {
          const cb = Math.floor((r0 + r) / rb) * dIn;
          const base = r * dIn;
          for (let j = 0; j < dIn; j++) C[cb + j] += Math.abs(f32[base + j]);
        }
      }
    } else {
      // Stored row j holds W[:, j] (length d_out): sum each row block's segment in order
      // (float32 rounding at each step, as the Float32Array accumulators of the other paths).
      const dOut = m.dOut;
      const u16 = table ? new Uint16Array(bytes.buffer, bytes.byteOffset, nr * storedCols) : null;
      const f32 = table ? null : new Float32Array(bytes.buffer, bytes.byteOffset, nr * storedCols);
      for (let r = 0; r < nr; r++) {
        const j = r0 + r;
        const base = r * dOut;
        for (let i0 = 0, bi = 0; i0 < dOut; i0 += rb, bi++) {
          const i1 = Math.min(dOut, i0 + rb);
          let acc = 0;
          if (u16) { for (let i = i0; i < i1; i++) acc = Math.fround(acc + table![u16[base + i] & 0x7fff]); }
          else for (let i = i0; i < i1; i++) acc = Math.fround(acc + Math.abs(f32![base + i]));
          C[bi * dIn + j] += acc;
        }
      }
    }
  }
}

/** Decode a small float tensor (scales, float zero points) to float32. */
function decodeSmall(bytes: Uint8Array, dtype: 'F32' | 'F16'): Float32Array {
  const a = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  if (dtype === 'F32') return new Float32Array(a.buffer, a.byteOffset, a.byteLength >> 2);
  return halfArrayToFloat(new Uint16Array(a.buffer, a.byteOffset, a.byteLength >> 1));
}

/** Scales and zero points of a MatMulNBits weight as float32 [N * nBlocks]. */
export function nbitsParams(m: MatrixRef,
  s: NBitsWeight): { scales: Float32Array; zeros: Float32Array; nBlocks: number; blobSize: number }
{
  if (s.bits !== 4 && s.bits !== 8 && s.bits !== 2)
    throw new LobesError(`MatMulNBits with bits=${s.bits} is not supported (2, 4 or 8)`, {
      where: `tensor ${JSON.stringify(s.tensor)}`,
    });
  if (s.blockSize < 16 || (s.blockSize & (s.blockSize - 1)) !== 0)
    throw new LobesError(`MatMulNBits block_size ${s.blockSize} is not a power of two >= 16`, {
      where: `tensor ${JSON.stringify(s.tensor)}`,
    });
  const N = m.dOut;
  const nBlocks = Math.ceil(m.dIn / s.blockSize);
  const blobSize = (s.blockSize * s.bits) / 8;
  const sr = new RangeReader(s.scales.data, s.scales.tensor);
  let scales: Float32Array;
  try {
    const need = N * nBlocks * (s.scales.dtype === 'F32' ? 4 : 2);
    if (sr.byteLength !== need)
      throw new LobesError(
        `scales hold ${sr.byteLength} bytes but N=${N} x ${nBlocks} blocks of ${s.scales.dtype} need ${need}`,
        { where: `tensor ${JSON.stringify(s.scales.tensor)}` },
      );
    scales = decodeSmall(sr.readAll(), s.scales.dtype);
  } finally {
    sr.close();
  }
  const zeros = new Float32Array(N * nBlocks);
  if (!s.zeroPoints) {
    zeros.fill(1 << (s.bits - 1));
  } else {
    const zr = new RangeReader(s.zeroPoints.data, s.zeroPoints.tensor);
    try {
      const zdt = s.zeroPoints.dtype;
      if (zdt === 'U8') {
        const perRow = Math.ceil((nBlocks * s.bits) / 8);
        if (zr.byteLength !== N * perRow)
          throw new LobesError(
            `zero points hold ${zr.byteLength} bytes but N=${N} rows of ${perRow} packed bytes are needed`,
            { where: `tensor ${JSON.stringify(s.zeroPoints.tensor)}` },
          );
        const zb = zr.readAll();
        const mask = (1 << s.bits) - 1;
        for (let n = 0; n < N; n++) {
          for (let b = 0; b < nBlocks; b++) {
            const bit = b * s.bits;
            const byte = zb[n * perRow + (bit >> 3)];
            zeros[n * nBlocks + b] = (byte >> (bit & 7)) & mask;
          }
        }
      } else {
        const need = N * nBlocks * (zdt === 'F32' ? 4 : 2);
        if (zr.byteLength !== need)
          throw new LobesError(`zero points hold ${zr.byteLength} bytes but ${need} are needed`, {
            where: `tensor ${JSON.stringify(s.zeroPoints.tensor)}`,
          });
        zeros.set(decodeSmall(zr.readAll(), zdt));
      }
    } finally {
      zr.close();
    }
  }
  return { scales, zeros, nBlocks, blobSize };
}

/**
 * Dequantize rows [n0, n0+rows) of a MatMulNBits weight into out [rows, dIn] (W[d_out, d_in]):
 * W[n, k] = (q[n, k] - zero[n, k / blockSize]) * scale[n, k / blockSize], q packed low bits first.
 */
export function dequantRows(
  blob: Uint8Array,
  n0: number,
  rows: number,
  dIn: number,
  bits: number,
  blockSize: number,
  nBlocks: number,
  blobSize: number,
  scales: Float32Array,
  zeros: Float32Array,
  out: Float32Array,
): void {
  const mask = (1 << bits) - 1;
  const perByte = 8 / bits;
  for (let r = 0; r < rows; r++) {
    const n = n0 + r;
    const rowBase = r * nBlocks * blobSize;
    for (let b = 0; b < nBlocks; b++) {
      const sc = scales[n * nBlocks + b];
      const zp = zeros[n * nBlocks + b];
      const k0 = b * blockSize;
      const kEnd = Math.min(dIn, k0 + blockSize);
      const bb = rowBase + b * blobSize;
      for (let k = k0; k < kEnd; k++) {
        const t = k - k0;
        const byte = blob[bb + Math.floor(t / perByte)];
        const q = (byte >> ((t % perByte) * bits)) & mask;
        out[r * dIn + k] = (q - zp) * sc;
      }
    }
  }
}

/** Dequantize a whole MatMulNBits weight to float32 [d_out, d_in] (tests, small models). */
export function dequantizeNBits(m: MatrixRef): Float32Array {
  const s = m.source;
  if (s.kind !== 'nbits') throw new LobesError(`${m.name} is not a MatMulNBits weight`);
  const p = nbitsParams(m, s);
  const r = new RangeReader(s.data, s.tensor);
  try {
    const need = m.dOut * p.nBlocks * p.blobSize;
    if (r.byteLength !== need)
      throw new LobesError(`holds ${r.byteLength} bytes but ${need} are needed`, {
        where: `tensor ${JSON.stringify(s.tensor)}`,
      });
    const out = new Float32Array(m.dOut * m.dIn);
    dequantRows(r.readAll(), 0, m.dOut, m.dIn, s.bits, s.blockSize, p.nBlocks, p.blobSize, p.scales, p.zeros, out);
    return out;
  } finally {
    r.close();
  }
}

/** GGML rows dequantized a chunk at a time, then summed like the dense out_in rows (same float32 order). */
function ggmlColsums(m: MatrixRef, s: GgmlWeight, reader: RangeReader, C: Float32Array, rb: number,
  chunkBytes: number): void
{
  const rowBytes = ggmlRowBytes(m, s);
  const rowsPerChunk = Math.max(1, Math.min(m.dOut, Math.floor(chunkBytes / rowBytes)));
  const buf = new Uint8Array(new ArrayBuffer(rowsPerChunk * rowBytes));
  const w = new Float32Array(rowsPerChunk * m.dIn);
  const dIn = m.dIn;
  const place = { where: `tensor ${JSON.stringify(s.tensor)}` };
  for (let r0 = 0; r0 < m.dOut; r0 += rowsPerChunk) {
    const nr = Math.min(rowsPerChunk, m.dOut - r0);
    dequantizeBlocks(s.type, reader.read(r0 * rowBytes, nr * rowBytes, buf), w, place);
    for (let r = 0; r < nr; r++) {
      const cb = Math.floor((r0 + r) / rb) * dIn;
      const base = r * dIn;
      for (let j = 0; j < dIn; j++) C[cb + j] += Math.abs(w[base + j]);
    }
  }
}

function nbitsColsums(m: MatrixRef, s: NBitsWeight, reader: RangeReader, C: Float32Array, rb: number,
  chunkBytes: number): void
{
  const p = nbitsParams(m, s);
  const rowBytes = p.nBlocks * p.blobSize;
  const rowsPerChunk = Math.max(1, Math.floor(chunkBytes / rowBytes));
  const buf = new Uint8Array(new ArrayBuffer(Math.min(rowsPerChunk, m.dOut) * rowBytes));
  const w = new Float32Array(Math.min(rowsPerChunk, m.dOut) * m.dIn);
  const dIn = m.dIn;
  for (let n0 = 0; n0 < m.dOut; n0 += rowsPerChunk) {
    const nr = Math.min(rowsPerChunk, m.dOut - n0);
    const bytes = reader.read(n0 * rowBytes, nr * rowBytes, buf);
    dequantRows(bytes, n0, nr, dIn, s.bits, s.blockSize, p.nBlocks, p.blobSize, p.scales, p.zeros, w);
    for (let r = 0; r < nr; r++) {
      const cb = Math.floor((n0 + r) / rb) * dIn;
      const base = r * dIn;
      for (let j = 0; j < dIn; j++) C[cb + j] += Math.abs(w[base + j]);
    }
  }
}
