/**
 * safetensors: an 8-byte little-endian header length N, N bytes of JSON mapping tensor
 * names to {dtype, shape, data_offsets: [begin, end]} (offsets relative to the byte after
 * the header; an optional "__metadata__" maps strings to strings), then the data.
 *
 * Reading never loads the file: the header is bounds-checked against the file size and
 * tensors are read by byte range. Writing produces files that Python's safetensors and
 * numpy load without lobes (header padded with spaces to a multiple of 8 bytes).
 */
import { LobesError } from '../util/errors.js';
import { halfArrayToFloat, bf16ArrayToFloat } from '../util/half.js';
import { RangeFile, readFileRange, writeFileAtomicSync } from '../util/io.js';

export type StDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'U16' | 'U32' | 'U64' | 'BOOL';

export const DTYPE_BYTES: Record<StDtype, number> = {
  F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, U16: 2, U32: 4, U64: 8, BOOL: 1,
};

export interface StTensorInfo {
  name: string;
  dtype: StDtype;
  shape: number[];
  /** Absolute byte offset of the tensor's data in the file. */
  offset: number;
  byteLength: number;
}

export interface StHeader {
  file: string;
  fileSize: number;
  /** Absolute offset where the data section starts (8 + header length). */
  dataStart: number;
  tensors: Map<string, StTensorInfo>;
  metadata: Record<string, string>;
}

const MAX_HEADER = 100 * 1024 * 1024;

/** Read and validate the header of a safetensors file. */
export function readSafetensorsHeader(file: string): StHeader {
  const f = RangeFile.open(file, 'safetensors file');
  try {
    const size = f.size;
    if (size < 8) throw new LobesError(`not a safetensors file: ${size} bytes, shorter than the 8-byte header length`, { file });
    const n = Number(new DataView(f.read(0, 8).buffer).getBigUint64(0, true));
    if (n > MAX_HEADER || 8 + n > size) {
      throw new LobesError(`safetensors header declares ${n} bytes but the file has ${size - 8} after the length field`, { file, where: 'header' });
    }
    const hbuf = Buffer.from(f.read(8, n).buffer);
    let json: Record<string, any>;
    try {
      json = JSON.parse(hbuf.toString('utf8'));
    } catch (e: any) {
      throw new LobesError(`safetensors header is not valid JSON (${e.message})`, { file, where: 'header' });
    }
    if (!json || typeof json !== 'object' || Array.isArray(json)) throw new LobesError('safetensors header is not a JSON object', { file, where: 'header' });
    const dataStart = 8 + n;
    const dataLen = size - dataStart;
    const tensors = new Map<string, StTensorInfo>();
    let metadata: Record<string, string> = {};
    for (const [name, v] of Object.entries(json)) {
      if (name === '__metadata__') {
        metadata = v ?? {};
        continue;
      }
      const where = `tensor ${JSON.stringify(name)}`;
      if (!v || typeof v !== 'object') throw new LobesError('tensor entry is not an object', { file, where });
      const dtype = v.dtype as StDtype;
      if (!(dtype in DTYPE_BYTES)) throw new LobesError(`unsupported dtype ${JSON.stringify(v.dtype)}`, { file, where });
      const shape = v.shape;
      if (!Array.isArray(shape) || !shape.every((d: unknown) => Number.isInteger(d) && (d as number) >= 0)) {
        throw new LobesError(`invalid shape ${JSON.stringify(shape)}`, { file, where });
      }
      const off = v.data_offsets;
      if (!Array.isArray(off) || off.length !== 2 || !off.every((d: unknown) => Number.isInteger(d) && (d as number) >= 0) || off[1] < off[0]) {
        throw new LobesError(`invalid data_offsets ${JSON.stringify(off)}`, { file, where });
      }
      if (off[1] > dataLen) {
        throw new LobesError(`data_offsets ${JSON.stringify(off)} exceed the ${dataLen} data bytes in the file`, { file, where });
      }
      const numel = shape.reduce((a: number, b: number) => a * b, 1);
      if (numel * DTYPE_BYTES[dtype] !== off[1] - off[0]) {
        throw new LobesError(`shape ${JSON.stringify(shape)} of ${dtype} needs ${numel * DTYPE_BYTES[dtype]} bytes but data_offsets span ${off[1] - off[0]}`, { file, where });
      }
      tensors.set(name, { name, dtype, shape, offset: dataStart + off[0], byteLength: off[1] - off[0] });
    }
    return { file, fileSize: size, dataStart, tensors, metadata };
  } finally {
    f.close();
  }
}

/** Decode raw little-endian bytes of a float dtype to float32. */
export function decodeToFloat32(bytes: Uint8Array, dtype: StDtype, what = 'tensor'): Float32Array {
  const aligned = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const buf = aligned.buffer;
  const off = aligned.byteOffset;
  switch (dtype) {
    case 'F32':
      return new Float32Array(buf, off, aligned.byteLength / 4);
    case 'F16':
      return halfArrayToFloat(new Uint16Array(buf, off, aligned.byteLength / 2));
    case 'BF16':
      return bf16ArrayToFloat(new Uint16Array(buf, off, aligned.byteLength / 2));
    case 'F64':
      return Float32Array.from(new Float64Array(buf, off, aligned.byteLength / 8));
    default:
      throw new LobesError(`${what} has dtype ${dtype}; a floating-point dtype (F32, F16, BF16, F64) is needed`);
  }
}

/** Read one tensor as float32 (rows [rowStart, rowEnd) of its first axis when given). */
export function readTensorFloat32(h: StHeader, name: string, rowStart?: number, rowEnd?: number): Float32Array {
  const t = h.tensors.get(name);
  if (!t) throw new LobesError(`tensor ${JSON.stringify(name)} not found`, { file: h.file });
  let offset = t.offset;
  let len = t.byteLength;
  if (rowStart !== undefined) {
    const rows = t.shape[0] ?? 1;
    const end = rowEnd ?? rows;
    if (rowStart < 0 || end > rows || rowStart > end) throw new LobesError(`rows [${rowStart}, ${end}) out of range for ${rows}`, { file: h.file, where: name });
    const rowBytes = rows === 0 ? 0 : t.byteLength / rows;
    offset += rowStart * rowBytes;
    len = (end - rowStart) * rowBytes;
  }
  return decodeToFloat32(readFileRange(h.file, offset, len, 'safetensors file'), t.dtype, `${h.file}: ${name}`);
}

export interface StWriteTensor {
  name: string;
  dtype: StDtype;
  shape: number[];
  /** Little-endian bytes of the tensor (a typed array is taken as its bytes). */
  data: ArrayBufferView;
}

/** Serialize tensors to safetensors bytes: [header length, header, data...]. */
export function encodeSafetensors(tensors: StWriteTensor[], metadata?: Record<string, string>): Uint8Array[] {
  const header: Record<string, any> = {};
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let off = 0;
  const parts: Uint8Array[] = [];
  for (const t of tensors) {
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    const numel = t.shape.reduce((a, b) => a * b, 1);
    if (numel * DTYPE_BYTES[t.dtype] !== bytes.byteLength) {
      throw new LobesError(`tensor ${t.name}: shape ${JSON.stringify(t.shape)} of ${t.dtype} needs ${numel * DTYPE_BYTES[t.dtype]} bytes, got ${bytes.byteLength}`);
    }
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + bytes.byteLength] };
    off += bytes.byteLength;
    parts.push(bytes);
  }
  let json = JSON.stringify(header);
  const pad = (8 - ((Buffer.byteLength(json) + 8) % 8)) % 8;
  json += ' '.repeat(pad);
  const hb = Buffer.from(json, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hb.byteLength));
  return [len, hb, ...parts];
}

/** Write a safetensors file atomically. */
export function writeSafetensors(file: string, tensors: StWriteTensor[], metadata?: Record<string, string>): void {
  writeFileAtomicSync(file, encodeSafetensors(tensors, metadata));
}
