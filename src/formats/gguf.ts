/**
 * GGUF (llama.cpp / Ollama model files), read without loading the file.
 *
 * Layout (all little-endian): the magic "GGUF", a u32 version (2 or 3 here; version 1 used
 * 32-bit counts), u64 tensor count, u64 metadata count; then the metadata, each a key (a
 * string: u64 byte length + UTF-8 bytes), a u32 value type and the value (arrays: u32 item
 * type, u64 count, the items); then one info per tensor: name, u32 number of dims, u64 dims
 * (dims[0] is the contiguous axis, the row length: the numpy shape is dims reversed), u32 GGML
 * type and u64 offset relative to the data section. The data section starts at the first
 * multiple of `general.alignment` (default 32) after the infos; every tensor's offset is a
 * multiple of it too.
 *
 * Every count, length and offset is checked against the file size before anything is
 * allocated, so a corrupt or hostile file gives a one-line LobesError naming the place, never
 * a huge allocation. Tensor data is read by positional reads; memory is O(what is asked for).
 */
import { existsSync, openSync, closeSync, fstatSync, constants as fsConstants } from 'node:fs';
import { checkRegularFile, readExactly } from '../util/io.js';
import { LobesError, type ErrorPlace } from '../util/errors.js';
import { dequantizeBlocks, ggmlType, ggmlTypeName } from './ggml.js';

export * from './gguf-values.js';
import { HeaderCursor, valueType, readValue, describe, type GgufArray, type GgufValue } from './gguf-values.js';

/** One tensor's place and shape in a GGUF file. */
export interface GgufTensorInfo {
  name: string;
  /** Dimensions in GGUF order: dims[0] is the row length (contiguous); the numpy / PyTorch shape is dims reversed. */
  dims: number[];
  /** GGML type id (see GGML_TYPES in ./ggml.ts). */
  type: number;
  /** GGML type name (Q4_K, F32, ...). */
  typeName: string;
  /** Absolute byte offset of the data in the file. */
  offset: number;
  /** Bytes of data. */
  nbytes: number;
  /** Number of values. */
  numel: number;
  /** Rows: the product of dims[1..] (1 for a vector). */
  rows: number;
  /** Bytes per row: dims[0] / blockSize * typeSize. */
  rowBytes: number;
}

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 4;

/**
 * An open GGUF file: metadata, tensor infos and positional access to tensor data.
 * Call `close()` when done (tensor reads need the file open; metadata does not).
 */
export class GgufFile {
  private fd: number | null;

  constructor(
    readonly file: string,
    fd: number,
    /** File size in bytes. */
    readonly fileSize: number,
    /** GGUF version (2 or 3). */
    readonly version: number,
    /** Metadata in file order. */
    readonly metadata: Map<string, GgufValue>,
    /** Tensor infos in file order. */
    readonly tensors: GgufTensorInfo[],
    /** Alignment of the data section and of every tensor offset. */
    readonly alignment: number,
    /** Absolute offset of the data section. */
    readonly dataStart: number,
  ) {
    this.fd = fd;
    this.byName = new Map(tensors.map((t) => [t.name, t]));
  }

  private readonly byName: Map<string, GgufTensorInfo>;

  /** Close the file; metadata and infos stay available. */
  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  /** The tensor with this name; throws naming it when absent. */
  tensor(name: string): GgufTensorInfo {
    const t = this.byName.get(name);
    if (!t)
      throw new LobesError(`tensor ${JSON.stringify(name)} not found (the file has ${this.tensors.length} tensors)`, {
        file: this.file,
      });
    return t;
  }

  /** Whether a tensor of this name exists. */
  hasTensor(name: string): boolean {
    return this.byName.has(name);
  }

  /** Whether a metadata key exists. */
  has(key: string): boolean {
    return this.metadata.has(key);
  }

  /** The raw metadata value (with its type), or undefined. */
  get(key: string): GgufValue | undefined {
    return this.metadata.get(key);
  }

  private wrong(key: string, want: string): never {
    const v = this.metadata.get(key);
    throw new LobesError(`metadata ${JSON.stringify(key)} is ${describe(v)}; ${want} is needed`, { file: this.file,
      where: 'metadata' });
  }

  /** A string value; `fallback` when the key is missing (throws when there is none), throws when of another type. */
  getString(key: string, fallback?: string): string {
    const v = this.metadata.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (v?.type !== 'string') this.wrong(key, 'a string');
    return v.value;
  }

  /** A bool value (same rules as getString). */
  getBool(key: string, fallback?: boolean): boolean {
    const v = this.metadata.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (v?.type !== 'bool') this.wrong(key, 'a bool');
    return v.value;
  }

  /** A uint32 value, as llama.cpp writes hyperparameters and token ids (same rules as getString). */
  getU32(key: string, fallback?: number): number {
    const v = this.metadata.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (v?.type !== 'uint32') this.wrong(key, 'a uint32');
    return v.value;
  }

  /** Any integer value (8 to 64 bits, signed or not) as a number; throws when it is not a safe integer. */
  getInt(key: string, fallback?: number): number {
    const v = this.metadata.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (!v || v.type === 'float32' || v.type === 'float64' || v.type === 'bool' || v.type === 'string' ||
      v.type === 'array') this.wrong(key, 'an integer');
    const n = Number(v.value);
    if (!Number.isSafeInteger(n))
      throw new LobesError(`metadata ${JSON.stringify(key)} = ${v.value} is beyond 2^53`, { file: this.file,
        where: 'metadata' });
    return n;
  }

  /** Any number value (integers or floats) as a number (float32 values are exact; 64-bit integers must be safe). */
  getNumber(key: string, fallback?: number): number {
    const v = this.metadata.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (v?.type === 'float32' || v?.type === 'float64') return v.value;
    return this.getInt(key);
  }

  /** An array value (items typed by the array's item type). */
  getArray(key: string): GgufArray {
    const v = this.metadata.get(key);
    if (v?.type !== 'array') this.wrong(key, 'an array');
    return v.value;
  }

  /** An array of strings. */
  getStringArray(key: string): string[] {
    const a = this.getArray(key);
    if (a.itemType !== 'string') this.wrong(key, 'an array of string');
    return a.items;
  }

  private place(t: GgufTensorInfo): ErrorPlace {
    return { file: this.file, where: `tensor ${JSON.stringify(t.name)}` };
  }

  private info(t: GgufTensorInfo | string): GgufTensorInfo {
    return typeof t === 'string' ? this.tensor(t) : t;
  }

  private rowRange(t: GgufTensorInfo, rowStart = 0, rowEnd = t.rows): [number, number] {
    if (!Number.isInteger(rowStart) || !Number.isInteger(rowEnd) || rowStart < 0 || rowEnd > t.rows ||
      rowStart > rowEnd)
    {
      throw new LobesError(`rows [${rowStart}, ${rowEnd}) out of range for ${t.rows} rows`, this.place(t));
    }
    return [rowStart, rowEnd];
  }

  private openFd(t: GgufTensorInfo): number {
    if (this.fd === null)
      throw new LobesError('the GGUF file was closed before its tensor data was read', this.place(t));
    return this.fd;
  }

  /**
   * Raw bytes of a tensor (rows [rowStart, rowEnd) when given; a row is dims[0] values),
   * in a fresh 8-byte aligned buffer, or into `dst` (which must hold them).
   */
  readTensorBytes(tensor: GgufTensorInfo | string, rowStart?: number, rowEnd?: number, dst?: Uint8Array): Uint8Array {
    const t = this.info(tensor);
    const [r0, r1] = this.rowRange(t, rowStart, rowEnd);
    const len = (r1 - r0) * t.rowBytes;
    let out: Uint8Array;
    if (dst) {
      if (dst.byteLength < len)
        throw new LobesError(`buffer of ${dst.byteLength} bytes is too small for ${len}`, this.place(t));
      out = dst.subarray(0, len);
    } else {
      out = new Uint8Array(new ArrayBuffer(len));
    }
    readExactly(this.openFd(t), out, t.offset + r0 * t.rowBytes, this.file);
    return out;
  }

  /**
   * Rows [rowStart, rowEnd) of a tensor (all when omitted) dequantized to float32, row-major
   * with dims[0] values per row (for a weight W[d_out, d_in] a row is one output's weights).
   * Reads at most a few MiB of raw data at a time; `out` is used when given.
   */
  dequantize(tensor: GgufTensorInfo | string, rowStart?: number, rowEnd?: number, out?: Float32Array): Float32Array {
    const t = this.info(tensor);
    const [r0, r1] = this.rowRange(t, rowStart, rowEnd);
    const rowLen = t.dims[0] ?? 1;
    const n = (r1 - r0) * rowLen;
    const ty = ggmlType(t.type);
    if (!ty?.dequantizable) dequantizeBlocks(t.type, new Uint8Array(0), undefined, this.place(t)); // throws naming the type
    if (!out) out = new Float32Array(n);
    else if (out.length < n)
      throw new LobesError(`output holds ${out.length} values but rows [${r0}, ${r1}) have ${n}`, this.place(t));
    const rowsPer = Math.max(1, Math.floor((8 << 20) / Math.max(1, t.rowBytes)));
    const raw = new Uint8Array(Math.min(r1 - r0, rowsPer) * t.rowBytes);
    for (let r = r0; r < r1; r += rowsPer) {
      const e = Math.min(r1, r + rowsPer);
      const bytes = this.readTensorBytes(t, r, e, raw);
      dequantizeBlocks(t.type, bytes, out.subarray((r - r0) * rowLen, (e - r0) * rowLen), this.place(t));
    }
    return out;
  }
}

/** Round x up to a multiple of a (a power of two or any positive integer). */
function alignUp(x: number, a: number): number {
  return Math.ceil(x / a) * a;
}

/**
 * Open a GGUF file and parse its header: metadata and tensor infos, every length and offset
 * checked against the file size. Throws a one-line LobesError for anything malformed.
 */
export function openGguf(file: string): GgufFile {
  // A FIFO or a device would block the open or never end: refused before opening, and again
  // on the open descriptor (opened non-blocking, so a FIFO swapped in meanwhile cannot hang it).
  if (existsSync(file)) checkRegularFile(file, 'GGUF file', 'give the path of the .gguf file itself');
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (e: any) {
    throw new LobesError(`cannot open GGUF file (${e.code ?? e.message})`, { file });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      throw new LobesError('GGUF file is not a regular file', { file, hint: 'give the path of the .gguf file itself' });
    const size = st.size;
    const cur = new HeaderCursor(fd, file, size);
    if (size < 4) cur.fail(`not a GGUF file: ${size} bytes, shorter than the magic`, 'header', 0);
    const magic = cur.u32('header');
    if (magic !== MAGIC) {
      const bytes = Buffer.alloc(4);
      bytes.writeUInt32LE(magic);
      cur.fail(
        `not a GGUF file: magic ${JSON.stringify(bytes.toString('latin1'))} (0x${
          bytes.toString('hex')
        }) instead of "GGUF"`,
        'header',
        0,
      );
    }
    const version = cur.u32('header');
    if (version !== 2 && version !== 3) {
      if ((version & 0xffff) === 0 && version !== 0)
        cur.fail(`big-endian GGUF (version field 0x${version.toString(16)}) is not supported`, 'header', 4);
      cur.fail(`GGUF version ${version} is not supported (2 or 3; re-convert the model with a current llama.cpp)`,
        'header', 4);
    }
    const tensorCount = cur.u64('header: tensor count');
    const kvCount = cur.u64('header: metadata count');
    // Each metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes; each tensor info 8 + 4 + 4 + 8.
    if (kvCount > (size - cur.pos) / 13)
      cur.fail(`header declares ${kvCount} metadata entries, more than the file can hold: truncated or corrupt GGUF`,
        'header', 16);
    if (tensorCount > (size - cur.pos) / 24)
      cur.fail(`header declares ${tensorCount} tensors, more than the file can hold: truncated or corrupt GGUF`,
        'header', 8);

    const metadata = new Map<string, GgufValue>();
    for (let k = 0; k < kvCount; k++) {
      const at = cur.pos;
      const key = cur.string(`metadata entry ${k} key`);
      const where = `metadata ${JSON.stringify(key)}`;
      if (metadata.has(key)) cur.fail('duplicate metadata key', where, at);
      const t = valueType(cur, where);
      metadata.set(key, readValue(cur, t, where));
    }

    let alignment = DEFAULT_ALIGNMENT;
    const al = metadata.get('general.alignment');
    if (al !== undefined) {
      if (al.type !== 'uint32' || al.value === 0 || (al.value & (al.value - 1)) !== 0) {
        throw new LobesError(
          `general.alignment must be a power-of-two uint32, got ${
            al.type === 'array' ? 'an array' : `${al.type} ${String(al.value)}`
          }`,
          { file, where: 'metadata' },
        );
      }
      alignment = al.value;
    }

    const raw: Array<{ name: string; dims: number[]; type: number; rel: number; at: number }> = [];
    const names = new Set<string>();
    for (let k = 0; k < tensorCount; k++) {
      const at = cur.pos;
      const name = cur.string(`tensor info ${k} name`);
      const where = `tensor ${JSON.stringify(name)}`;
      if (names.has(name)) cur.fail('duplicate tensor name', where, at);
      names.add(name);
      const nd = cur.u32(where);
      if (nd > MAX_DIMS) cur.fail(`${nd} dimensions (GGML allows at most ${MAX_DIMS})`, where, cur.pos - 4);
      const dims: number[] = [];
      for (let d = 0; d < nd; d++) dims.push(cur.u64(where));
      const type = cur.u32(where);
      const rel = cur.u64(where);
      raw.push({ name, dims, type, rel, at });
    }
    const dataStart = alignUp(cur.pos, alignment);
    if (tensorCount > 0 && dataStart > size)
      cur.fail(`data section would start at byte ${dataStart}, past the end of the file: truncated GGUF`,
        'tensor infos', cur.pos);

    const tensors: GgufTensorInfo[] = [];
    for (const r of raw) {
      const where = `tensor ${JSON.stringify(r.name)}`;
      const ty = ggmlType(r.type);
      if (!ty)
        throw new LobesError(`unknown GGML type id ${r.type} (byte ${r.at})`, { file, where,
          hint: 'the file may be corrupt, or newer than lobes' });
      if (ty.blockSize === 0)
        throw new LobesError(`GGML type ${ty.name} (id ${r.type}) has been removed from GGML (byte ${r.at})`, { file,
          where, hint: 're-convert the model with a current llama.cpp' });
      let numel = 1;
      for (const d of r.dims) {
        numel *= d;
        if (numel > Number.MAX_SAFE_INTEGER)
          throw new LobesError(`dims ${JSON.stringify(r.dims)} multiply to more than 2^53 values (byte ${r.at})`, {
            file,
            where,
          });
      }
      const rowLen = r.dims[0] ?? 1;
      if (rowLen % ty.blockSize !== 0)
        throw new LobesError(
          `row length ${rowLen} is not a multiple of the ${ty.name} block size ${ty.blockSize} (byte ${r.at})`,
          { file, where },
        );
      const rows = rowLen === 0 ? 0 : numel / rowLen;
      const rowBytes = (rowLen / ty.blockSize) * ty.typeSize;
      const nbytes = rows * rowBytes;
      if (r.rel % alignment !== 0)
        throw new LobesError(`data offset ${r.rel} is not a multiple of the alignment ${alignment} (byte ${r.at})`, {
          file,
          where,
        });
      const offset = dataStart + r.rel;
      if (offset > size || nbytes > size - offset) {
        throw new LobesError(
          `data [${offset}, ${
            offset + nbytes
          }) runs past the end of the file (${size} bytes): truncated or corrupt GGUF`,
          { file, where },
        );
      }
      tensors.push({ name: r.name, dims: r.dims, type: r.type, typeName: ggmlTypeName(r.type), offset, nbytes, numel,
        rows, rowBytes });
    }
    checkOverlaps(file, tensors);
    return new GgufFile(file, fd, size, version, metadata, tensors, alignment, dataStart);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Two tensors whose data ranges share a byte are refused: one of them would be read as the other's weights. */
function checkOverlaps(file: string, tensors: GgufTensorInfo[]): void {
  const byStart = tensors.filter((t) => t.nbytes > 0).sort((a, b) => a.offset - b.offset || a.nbytes - b.nbytes);
  let last: GgufTensorInfo | null = null;
  for (const t of byStart) {
    if (last && t.offset < last.offset + last.nbytes) {
      throw new LobesError(
        `tensors ${JSON.stringify(last.name)} [${last.offset}, ${last.offset + last.nbytes}) and ${
          JSON.stringify(t.name)
        } [${t.offset}, ${t.offset + t.nbytes}) share bytes of the data section: corrupt GGUF`,
        { file, where: 'tensor infos' },
      );
    }
    if (!last || t.offset + t.nbytes > last.offset + last.nbytes) last = t;
  }
}

/** Parse a GGUF file's header and close it (metadata and tensor infos only). */
export function readGgufHeader(file: string): GgufFile {
  const g = openGguf(file);
  g.close();
  return g;
}
