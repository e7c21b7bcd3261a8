/**
 * safetensors: an 8-byte little-endian header length N, N bytes of JSON mapping tensor
 * names to {dtype, shape, data_offsets: [begin, end]} (offsets relative to the byte after
 * the header; an optional "__metadata__" maps strings to strings), then the data.
 *
 * Reading never loads the file: the header is bounds-checked against the file size and
 * tensors are read by byte range. Writing produces files that Python's safetensors and
 * numpy load without lobes (header padded with spaces to a multiple of 8 bytes), either from
 * tensors in memory (writeSafetensors) or streamed in pieces of any size (SafetensorsWriter,
 * writeShardedSafetensors in src/formats/safetensors-shards.ts: a Hugging Face style sharded
 * checkpoint with model.safetensors.index.json), with memory independent of the tensors' sizes.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { halfArrayToFloat, bf16ArrayToFloat } from '../util/half.js';
import { RangeFile, bytesOf, fsyncDir, readFileRange, writeFileAtomicSync } from '../util/io.js';

export type StDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'U16' | 'U32' | 'U64'
  | 'BOOL';

export const DTYPE_BYTES: Record<StDtype, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  U16: 2,
  U32: 4,
  U64: 8,
  BOOL: 1,
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
    if (size < 8)
      throw new LobesError(`not a safetensors file: ${size} bytes, shorter than the 8-byte header length`, { file });
    const n = Number(new DataView(f.read(0, 8).buffer).getBigUint64(0, true));
    if (n > MAX_HEADER || 8 + n > size) {
      throw new LobesError(`safetensors header declares ${n} bytes but the file has ${size - 8} after the length field`,
        { file, where: 'header' });
    }
    const hbuf = Buffer.from(f.read(8, n).buffer);
    let json: Record<string, any>;
    try {
      json = JSON.parse(hbuf.toString('utf8'));
    } catch (e: any) {
      throw new LobesError(`safetensors header is not valid JSON (${e.message})`, { file, where: 'header' });
    }
    if (!json || typeof json !== 'object' || Array.isArray(json))
      throw new LobesError('safetensors header is not a JSON object', { file, where: 'header' });
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
      if (!(dtype in DTYPE_BYTES))
        throw new LobesError(`unsupported dtype ${JSON.stringify(v.dtype)}`, { file, where });
      const shape = v.shape;
      if (!Array.isArray(shape) || !shape.every((d: unknown) => Number.isInteger(d) && (d as number) >= 0)) {
        throw new LobesError(`invalid shape ${JSON.stringify(shape)}`, { file, where });
      }
      const off = v.data_offsets;
      if (!Array.isArray(off) || off.length !== 2 ||
        !off.every((d: unknown) => Number.isInteger(d) && (d as number) >= 0) || off[1] < off[0])
      {
        throw new LobesError(`invalid data_offsets ${JSON.stringify(off)}`, { file, where });
      }
      if (off[1] > dataLen) {
        throw new LobesError(`data_offsets ${JSON.stringify(off)} exceed the ${dataLen} data bytes in the file`, { file,
          where });
      }
      const numel = shape.reduce((a: number, b: number) => a * b, 1);
      if (numel * DTYPE_BYTES[dtype] !== off[1] - off[0]) {
        throw new LobesError(
          `shape ${JSON.stringify(shape)} of ${dtype} needs ${numel * DTYPE_BYTES[dtype]} bytes but data_offsets span ${
            off[1] - off[0]
          }`,
          { file, where },
        );
      }
      tensors.set(name, { name, dtype, shape, offset: dataStart + off[0], byteLength: off[1] - off[0] });
    }
    // Two tensors may not share bytes (the format's rule; GGUF readers refuse the same): a
    // crafted header that points two weights at one range would otherwise be read as given.
    const ranges = [...tensors.values()].filter((t) => t.byteLength > 0).sort((a, b) =>
      a.offset - b.offset || a.name.localeCompare(b.name)
    );
    for (let i = 1; i < ranges.length; i++) {
      const a = ranges[i - 1]!;
      const b = ranges[i]!;
      if (b.offset < a.offset + a.byteLength) {
        throw new LobesError(
          `data_offsets overlap those of tensor ${JSON.stringify(a.name)}: two tensors share bytes ${
            b.offset - dataStart
          }..${Math.min(a.offset + a.byteLength, b.offset + b.byteLength) - dataStart}`,
          { file, where: `tensor ${JSON.stringify(b.name)}` },
        );
      }
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
    if (rowStart < 0 || end > rows || rowStart > end)
      throw new LobesError(`rows [${rowStart}, ${end}) out of range for ${rows}`, { file: h.file, where: name });
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

/** Name, dtype and shape of a tensor to be written; its bytes come later. */
export interface StTensorSpec {
  name: string;
  dtype: StDtype;
  shape: number[];
}

/** Bytes of a tensor of this dtype and shape. */
export function stTensorBytes(t: { dtype: StDtype; shape: number[] }): number {
  return t.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[t.dtype];
}

/**
 * The bytes before the data of a safetensors file holding `specs` in this order: the 8-byte
 * header length and the JSON header (offsets assigned in order, padded with spaces to a
 * multiple of 8 bytes). Returns them with the size of the data section that must follow.
 */
export function encodeSafetensorsHeader(specs: readonly StTensorSpec[],
  metadata?: Record<string, string>): { head: Uint8Array; dataBytes: number }
{
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let off = 0;
  const seen = new Set<string>();
  for (const t of specs) {
    if (t.name === '__metadata__' || seen.has(t.name))
      throw new LobesError(`tensor name ${JSON.stringify(t.name)} is reserved or given twice`);
    seen.add(t.name);
    if (!(t.dtype in DTYPE_BYTES))
      throw new LobesError(`tensor ${t.name}: unsupported dtype ${JSON.stringify(t.dtype)}`);
    if (!t.shape.every((d) => Number.isInteger(d) && d >= 0))
      throw new LobesError(`tensor ${t.name}: invalid shape ${JSON.stringify(t.shape)}`);
    const n = stTensorBytes(t);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + n] };
    off += n;
  }
  let json = JSON.stringify(header);
  const pad = (8 - ((Buffer.byteLength(json) + 8) % 8)) % 8;
  json += ' '.repeat(pad);
  const hb = Buffer.from(json, 'utf8');
  const head = new Uint8Array(8 + hb.byteLength);
  new DataView(head.buffer).setBigUint64(0, BigInt(hb.byteLength), true);
  head.set(hb, 8);
  return { head, dataBytes: off };
}

/** Serialize tensors to safetensors bytes: [header length + header, data...]. */
export function encodeSafetensors(tensors: StWriteTensor[], metadata?: Record<string, string>): Uint8Array[] {
  const parts: Uint8Array[] = [];
  for (const t of tensors) {
    const bytes = bytesOf(t.data);
    if (stTensorBytes(t) !== bytes.byteLength) {
      throw new LobesError(
        `tensor ${t.name}: shape ${JSON.stringify(t.shape)} of ${t.dtype} needs ${
          stTensorBytes(t)
        } bytes, got ${bytes.byteLength}`,
      );
    }
    parts.push(bytes);
  }
  const { head } = encodeSafetensorsHeader(tensors, metadata);
  return [head, ...parts];
}

/** Write a safetensors file atomically. */
export function writeSafetensors(file: string, tensors: StWriteTensor[], metadata?: Record<string, string>): void {
  writeFileAtomicSync(file, encodeSafetensors(tensors, metadata));
}

// ---------------------------------------------------------------------------------------
// Streaming writers

/**
 * A safetensors file written in pieces: the header is fixed up front from the tensors'
 * names, dtypes and shapes, then each tensor's bytes are appended in declaration order, in
 * pieces of any size. Memory is one piece. The file appears under its name only when close()
 * finds every byte written (temporary sibling, fsync, rename); abort() removes it.
 */
export class SafetensorsWriter {
  private fd: number | null;
  private tensor = 0;
  private inTensor = 0;
  private readonly sizes: number[];
  /** Data bytes written so far. */
  written = 0;

  private constructor(
    readonly file: string,
    private readonly tmp: string,
    fd: number,
    readonly specs: readonly StTensorSpec[],
    /** Data bytes the file will hold. */
    readonly dataBytes: number,
  ) {
    this.fd = fd;
    this.sizes = specs.map(stTensorBytes);
    this.skipEmpty();
  }

  /** Start `file` (its folder is created) for tensors `specs`, in this order. */
  static create(file: string, specs: readonly StTensorSpec[], metadata?: Record<string, string>): SafetensorsWriter {
    const { head, dataBytes } = encodeSafetensorsHeader(specs, metadata);
    mkdirSync(path.dirname(file), { recursive: true });
    const tmp = path.join(path.dirname(file),
      `.${path.basename(file)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
    const fd = openSync(tmp, 'w');
    try {
      writeAll(fd, head);
    } catch (e) {
      closeSync(fd);
      rmSync(tmp, { force: true });
      throw e;
    }
    return new SafetensorsWriter(file, tmp, fd, specs, dataBytes);
  }

  /** Name of the tensor the next bytes belong to (null when all are written). */
  get current(): string | null {
    return this.tensor < this.specs.length ? this.specs[this.tensor]!.name : null;
  }

  /** Bytes of the current tensor still to come. */
  get remainingInTensor(): number {
    return this.tensor < this.specs.length ? this.sizes[this.tensor]! - this.inTensor : 0;
  }

  private skipEmpty(): void {
    while (this.tensor < this.specs.length && this.inTensor === this.sizes[this.tensor]) {
      this.tensor++;
      this.inTensor = 0;
    }
  }

  /**
   * Append the next bytes (little-endian). With `name`, the bytes must belong to that tensor
   * and must not run past its end; without, they may span tensors.
   */
  write(data: ArrayBufferView, name?: string): void {
    if (this.fd === null) throw new LobesError('write after close or abort', { file: this.file });
    const b = bytesOf(data);
    if (name !== undefined) {
      if (name !== this.current)
        throw new LobesError(
          `bytes for tensor ${JSON.stringify(name)} arrived while ${
            JSON.stringify(this.current)
          } is being written (tensors come in declaration order)`,
          { file: this.file },
        );
      if (b.byteLength > this.remainingInTensor)
        throw new LobesError(
          `${b.byteLength} bytes for tensor ${JSON.stringify(name)} but only ${this.remainingInTensor} remain of it`,
          { file: this.file },
        );
    }
    if (this.written + b.byteLength > this.dataBytes) {
      throw new LobesError(
        `${b.byteLength} more bytes would exceed the ${this.dataBytes} data bytes the header declares`,
        { file: this.file },
      );
    }
    writeAll(this.fd, b);
    this.written += b.byteLength;
    let left = b.byteLength;
    while (left > 0) {
      const take = Math.min(left, this.sizes[this.tensor]! - this.inTensor);
      this.inTensor += take;
      left -= take;
      this.skipEmpty();
    }
  }

  /** Finish: every declared byte must have been written; then fsync and rename into place. */
  close(): void {
    if (this.fd === null) throw new LobesError('close after close or abort', { file: this.file });
    if (this.written !== this.dataBytes) {
      const missing = this.current;
      this.abort();
      throw new LobesError(
        `only ${this.written} of ${this.dataBytes} data bytes were written (tensor ${
          JSON.stringify(missing)
        } is incomplete); the file was not created`,
        { file: this.file },
      );
    }
    const fd = this.fd;
    this.fd = null;
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(this.tmp, this.file);
    fsyncDir(path.dirname(this.file));
  }

  /** Drop the partial file. */
  abort(): void {
    if (this.fd !== null) {
      closeSync(this.fd);
      this.fd = null;
    }
    rmSync(this.tmp, { force: true });
  }
}

function writeAll(fd: number, b: Uint8Array): void {
  let off = 0;
  while (off < b.byteLength) off += writeSync(fd, b, off, b.byteLength - off);
}
