/**
 * GGUF writing (see ./gguf.ts for the layout): metadata of every value type and tensors of
 * any GGML type from their raw block bytes. Tensor data is streamed: the header, metadata and
 * tensor infos go first (the infos carry every offset, so the tensor list is declared up
 * front), then each tensor's bytes are appended, in declared order and in as many pieces as
 * the caller likes, so memory stays O(one piece) even for a model of many GiB. The file
 * appears under its name only when complete (written to a temporary sibling, then renamed).
 */
import { openSync, writeSync, fsyncSync, closeSync, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { fsyncDir, makeDirs } from '../util/io.js';
import { ggmlByteSize, ggmlType, ggmlTypeName } from './ggml.js';
import { GGUF_SCALAR_BYTES, GGUF_VALUE_TYPE_IDS, type GgufArray, type GgufValue, type GgufValueType } from './gguf.js';

/** A tensor to declare: name, dims in GGUF order (dims[0] = row length) and GGML type id. */
export interface GgufTensorSpec {
  name: string;
  dims: number[];
  type: number;
}

export interface GgufWriteOptions {
  /** GGUF version to write (3, the current one, by default; 2 has the same layout). */
  version?: 2 | 3;
  /**
   * Data alignment (a power of two; 32 by default). When it is not 32 and the metadata has no
   * `general.alignment`, that key is added as a uint32.
   */
  alignment?: number;
}

/** A growable little-endian byte buffer. */
class Bytes {
  buf = new Uint8Array(1 << 16);
  view = new DataView(this.buf.buffer);
  len = 0;
  private enc = new TextEncoder();

  private room(n: number): number {
    if (this.len + n > this.buf.byteLength) {
      const next = new Uint8Array(Math.max(this.len + n, this.buf.byteLength * 2));
      next.set(this.buf.subarray(0, this.len));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.len;
    this.len += n;
    return at;
  }

  // room() may replace buf and view, so it is called before they are read.
  u8(x: number): void {
    const at = this.room(1);
    this.view.setUint8(at, x);
  }
  u32(x: number): void {
    const at = this.room(4);
    this.view.setUint32(at, x, true);
  }
  u64(x: number | bigint): void {
    const at = this.room(8);
    this.view.setBigUint64(at, BigInt(x), true);
  }
  raw(b: Uint8Array): void {
    const at = this.room(b.byteLength);
    this.buf.set(b, at);
  }
  string(s: string): void {
    const b = this.enc.encode(s);
    this.u64(b.byteLength);
    this.raw(b);
  }
  zeros(n: number): void {
    const at = this.room(n);
    this.buf.fill(0, at, this.len);
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

const INT_RANGE: Record<string, [number, number]> = {
  uint8: [0, 0xff],
  int8: [-0x80, 0x7f],
  uint16: [0, 0xffff],
  int16: [-0x8000, 0x7fff],
  uint32: [0, 0xffffffff],
  int32: [-0x80000000, 0x7fffffff],
};

function scalar(out: Bytes, type: Exclude<GgufValueType, 'array'>, value: unknown, where: string): void {
  const bad = (): never => {
    throw new LobesError(`value ${String(value)} is not a valid ${type}`, { where });
  };
  const at = out.len;
  switch (type) {
    case 'string':
      if (typeof value !== 'string') bad();
      out.string(value as string);
      return;
    case 'bool':
      if (typeof value !== 'boolean') bad();
      out.u8(value ? 1 : 0);
      return;
    case 'uint64':
    case 'int64': {
      const v = typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value;
      if (typeof v !== 'bigint') bad();
      const b = v as bigint;
      if (type === 'uint64' ? b < 0n || b >= 1n << 64n : b < -(1n << 63n) || b >= 1n << 63n) bad();
      out.zeros(8);
      if (type === 'uint64') out.view.setBigUint64(at, b, true);
      else out.view.setBigInt64(at, b, true);
      return;
    }
    case 'float32':
    case 'float64':
      if (typeof value !== 'number') bad();
      out.zeros(GGUF_SCALAR_BYTES[type]);
      if (type === 'float32') out.view.setFloat32(at, value as number, true);
      else out.view.setFloat64(at, value as number, true);
      return;
    default: {
      const [lo, hi] = INT_RANGE[type];
      if (typeof value !== 'number' || !Number.isInteger(value) || value < lo || value > hi) bad();
      out.zeros(GGUF_SCALAR_BYTES[type]);
      const v = value as number;
      switch (type) {
        case 'uint8':
          out.view.setUint8(at, v);
          break;
        case 'int8':
          out.view.setInt8(at, v);
          break;
        case 'uint16':
          out.view.setUint16(at, v, true);
          break;
        case 'int16':
          out.view.setInt16(at, v, true);
          break;
        case 'uint32':
          out.view.setUint32(at, v, true);
          break;
        case 'int32':
          out.view.setInt32(at, v, true);
          break;
      }
    }
  }
}

const TYPED_CTOR: Record<string, new(n: number) => ArrayLike<number | bigint>> = {
  uint8: Uint8Array,
  int8: Int8Array,
  uint16: Uint16Array,
  int16: Int16Array,
  uint32: Uint32Array,
  int32: Int32Array,
  float32: Float32Array,
  uint64: BigUint64Array,
  int64: BigInt64Array,
  float64: Float64Array,
};

function array(out: Bytes, a: GgufArray, where: string): void {
  if (!(a.itemType in GGUF_VALUE_TYPE_IDS))
    throw new LobesError(`unknown array item type ${JSON.stringify(a.itemType)}`, { where });
  out.u32(GGUF_VALUE_TYPE_IDS[a.itemType]);
  out.u64(a.items.length);
  const ctor = TYPED_CTOR[a.itemType];
  if (ctor && a.items instanceof ctor) {
    const t = a.items as unknown as ArrayBufferView;
    out.raw(new Uint8Array(t.buffer, t.byteOffset, t.byteLength)); // little-endian hosts only, as everywhere in lobes
    return;
  }
  const items = a.items as unknown[];
  if (!Array.isArray(items))
    throw new LobesError(`array of ${a.itemType} must be ${ctor ? `a ${ctor.name} or a plain array` : 'a plain array'}`,
      { where });
  for (let k = 0; k < items.length; k++) {
    if (a.itemType === 'array') array(out, items[k] as GgufArray, `${where}[${k}]`);
    else scalar(out, a.itemType, items[k], where);
  }
}

/** Encode one metadata entry: key, value type, value. */
function entry(out: Bytes, key: string, v: GgufValue): void {
  const where = `metadata ${JSON.stringify(key)}`;
  if (!v || !(v.type in GGUF_VALUE_TYPE_IDS))
    throw new LobesError(`unknown value type ${JSON.stringify((v as any)?.type)}`, { where });
  out.string(key);
  out.u32(GGUF_VALUE_TYPE_IDS[v.type]);
  if (v.type === 'array') array(out, v.value, where);
  else scalar(out, v.type, v.value, where);
}

interface Planned extends GgufTensorSpec {
  nbytes: number;
  rel: number;
}

/**
 * Encode everything before the tensor data: header, metadata, tensor infos and the padding to
 * the data section. Returns the bytes and each tensor's byte size and offset in the data section.
 */
export function encodeGgufHeader(
  metadata: Iterable<[string, GgufValue]>,
  tensors: GgufTensorSpec[],
  options: GgufWriteOptions = {},
): { header: Uint8Array; tensors: Array<GgufTensorSpec & { nbytes: number; rel: number }>; alignment: number } {
  const version = options.version ?? 3;
  const kv = [...metadata];
  const keys = new Set<string>();
  for (const [k] of kv) {
    if (keys.has(k)) throw new LobesError(`duplicate metadata key ${JSON.stringify(k)}`);
    keys.add(k);
  }
  const given = kv.find(([k]) => k === 'general.alignment')?.[1];
  const alignment = options.alignment ?? (given?.type === 'uint32' ? given.value : 32);
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0)
    throw new LobesError(`alignment ${alignment} is not a power of two`);
  if (given && !(given.type === 'uint32' && given.value === alignment)) {
    throw new LobesError(
      `metadata general.alignment (${
        given.type === 'array' ? 'an array' : String(given.value)
      }) disagrees with the alignment ${alignment}`,
    );
  }
  if (!given && alignment !== 32) kv.push(['general.alignment', { type: 'uint32', value: alignment }]);

  const names = new Set<string>();
  const planned: Planned[] = [];
  let rel = 0;
  for (const t of tensors) {
    const where = `tensor ${JSON.stringify(t.name)}`;
    if (names.has(t.name)) throw new LobesError('duplicate tensor name', { where });
    names.add(t.name);
    if (t.dims.length > 4 || !t.dims.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw new LobesError(`invalid dims ${JSON.stringify(t.dims)} (at most 4 non-negative integers)`, { where });
    const ty = ggmlType(t.type);
    if (!ty || ty.blockSize === 0) throw new LobesError(`GGML ${ggmlTypeName(t.type)} cannot be written`, { where });
    const numel = t.dims.reduce((a, b) => a * b, 1);
    if ((t.dims[0] ?? 1) % ty.blockSize !== 0)
      throw new LobesError(`row length ${t.dims[0]} is not a multiple of the ${ty.name} block size ${ty.blockSize}`, {
        where,
      });
    const nbytes = ggmlByteSize(t.type, numel, { where });
    planned.push({ ...t, nbytes, rel });
    rel += Math.ceil(nbytes / alignment) * alignment;
  }

  const out = new Bytes();
  out.raw(new Uint8Array([0x47, 0x47, 0x55, 0x46])); // "GGUF"
  out.u32(version);
  out.u64(planned.length);
  out.u64(kv.length);
  for (const [k, v] of kv) entry(out, k, v);
  for (const t of planned) {
    out.string(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(t.type);
    out.u64(t.rel);
  }
  out.zeros(Math.ceil(out.len / alignment) * alignment - out.len);
  return { header: out.bytes().slice(), tensors: planned, alignment };
}

/**
 * A GGUF file being written: created with the metadata and the tensor list, then fed each
 * tensor's bytes in order with `write`, then `finish`ed (or `abort`ed).
 */
export class GgufWriter {
  private fd: number | null;
  private readonly tmp: string;
  private readonly plan: Planned[];
  private readonly alignment: number;
  private cur = 0; // index of the tensor being written
  private done = 0; // bytes of it written so far

  private constructor(
    readonly file: string,
    metadata: Iterable<[string, GgufValue]>,
    tensors: GgufTensorSpec[],
    options: GgufWriteOptions,
  ) {
    const enc = encodeGgufHeader(metadata, tensors, options);
    this.plan = enc.tensors;
    this.alignment = enc.alignment;
    const dir = path.dirname(file);
    makeDirs(dir);
    this.tmp = path.join(dir, `.${path.basename(file)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
    this.fd = openSync(this.tmp, 'w');
    try {
      this.put(enc.header);
    } catch (e) {
      this.abort();
      throw e;
    }
  }

  /**
   * Start writing `file`: header, metadata (in the given order) and the infos of `tensors`
   * (in the given order, which is also the order of their data) go out now.
   */
  static create(file: string, metadata: Iterable<[string, GgufValue]>, tensors: GgufTensorSpec[],
    options: GgufWriteOptions = {}): GgufWriter
  {
    return new GgufWriter(file, metadata, tensors, options);
  }

  private put(b: Uint8Array): void {
    if (this.fd === null) throw new LobesError('GGUF writer is closed', { file: this.file });
    let off = 0;
    while (off < b.byteLength) off += writeSync(this.fd, b, off, b.byteLength - off);
  }

  /** The tensor whose bytes `write` expects next, or null when all are written. */
  get next(): GgufTensorSpec | null {
    return this.plan[this.cur] ?? null;
  }

  /**
   * Append bytes of tensor `name` (which must be the next one in declared order). A tensor may
   * come in several pieces; when its last byte arrives the padding to the alignment follows.
   */
  write(name: string, data: ArrayBufferView): void {
    const t = this.plan[this.cur];
    if (!t)
      throw new LobesError(`tensor ${JSON.stringify(name)}: every declared tensor is already written`, {
        file: this.file,
      });
    if (t.name !== name)
      throw new LobesError(`tensor ${JSON.stringify(name)} written out of order: ${JSON.stringify(t.name)} is next`, {
        file: this.file,
      });
    const b = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (this.done + b.byteLength > t.nbytes) {
      throw new LobesError(
        `${this.done + b.byteLength} bytes given but ${ggmlTypeName(t.type)} ${
          JSON.stringify(t.dims)
        } takes ${t.nbytes}`,
        { file: this.file, where: `tensor ${JSON.stringify(name)}` },
      );
    }
    this.put(b);
    this.done += b.byteLength;
    if (this.done === t.nbytes) {
      const pad = Math.ceil(t.nbytes / this.alignment) * this.alignment - t.nbytes;
      // The last tensor is padded too, as llama.cpp and the gguf package do.
      if (pad) this.put(new Uint8Array(pad));
      this.cur++;
      this.done = 0;
    }
  }

  /** Check that every tensor was written in full, then sync and move the file into place. */
  finish(): void {
    if (this.fd === null) throw new LobesError('GGUF writer is closed', { file: this.file });
    const t = this.plan[this.cur];
    if (t) {
      const left = this.plan.length - this.cur;
      this.abort();
      throw new LobesError(
        `${left} tensor(s) not written, starting with ${JSON.stringify(t.name)}; nothing was written`,
        { file: this.file },
      );
    }
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = null;
    renameSync(this.tmp, this.file);
    fsyncDir(path.dirname(this.file));
  }

  /** Stop and remove the partial file. */
  abort(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.tmp, { force: true });
  }
}

/** Write a whole GGUF file at once: metadata and tensors with their raw bytes. */
export function writeGguf(
  file: string,
  metadata: Iterable<[string, GgufValue]>,
  tensors: Array<GgufTensorSpec & { data: ArrayBufferView }>,
  options: GgufWriteOptions = {},
): void {
  const w = GgufWriter.create(file, metadata, tensors, options);
  try {
    for (const t of tensors) w.write(t.name, t.data);
    w.finish();
  } catch (e) {
    w.abort();
    throw e;
  }
}
