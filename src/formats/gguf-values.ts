/**
 * GGUF metadata values and the forward header cursor that reads them; ./gguf.ts has the file
 * layout and the tensor API. Every length is checked against the file size before anything is
 * allocated; large string arrays (vocabularies, merges) decode in one TextDecoder pass.
 */
import { readExactly } from '../util/io.js';
import { LobesError } from '../util/errors.js';

/** The scalar value types of GGUF metadata (their ids are 0..12 in this order, with array = 9). */
export type GgufScalarType = 'uint8' | 'int8' | 'uint16' | 'int16' | 'uint32' | 'int32' | 'float32' | 'bool' | 'string'
  | 'uint64' | 'int64' | 'float64';
/** Every GGUF value type. */
export type GgufValueType = GgufScalarType | 'array';

/** GGUF value type ids, as stored in the file. */
export const GGUF_VALUE_TYPE_IDS: Record<GgufValueType, number> = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
};
const TYPE_BY_ID: GgufValueType[] = ['uint8', 'int8', 'uint16', 'int16', 'uint32', 'int32', 'float32', 'bool', 'string',
  'array', 'uint64', 'int64', 'float64'];

/** Bytes of one fixed-size value (strings and arrays are variable). */
export const GGUF_SCALAR_BYTES: Record<Exclude<GgufScalarType, 'string'>, number> = {
  uint8: 1,
  int8: 1,
  uint16: 2,
  int16: 2,
  uint32: 4,
  int32: 4,
  float32: 4,
  bool: 1,
  uint64: 8,
  int64: 8,
  float64: 8,
};

/** Items of a GGUF array: a typed array for numbers, plain arrays otherwise. */
export type GgufArray =
  | { itemType: 'uint8'; items: Uint8Array }
  | { itemType: 'int8'; items: Int8Array }
  | { itemType: 'uint16'; items: Uint16Array }
  | { itemType: 'int16'; items: Int16Array }
  | { itemType: 'uint32'; items: Uint32Array }
  | { itemType: 'int32'; items: Int32Array }
  | { itemType: 'float32'; items: Float32Array }
  | { itemType: 'uint64'; items: BigUint64Array }
  | { itemType: 'int64'; items: BigInt64Array }
  | { itemType: 'float64'; items: Float64Array }
  | { itemType: 'bool'; items: boolean[] }
  | { itemType: 'string'; items: string[] }
  | { itemType: 'array'; items: GgufArray[] };

/** One metadata value with its GGUF type (64-bit integers are bigints, exactly). */
export type GgufValue =
  | { type: 'uint8' | 'int8' | 'uint16' | 'int16' | 'uint32' | 'int32' | 'float32' | 'float64'; value: number }
  | { type: 'uint64' | 'int64'; value: bigint }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'array'; value: GgufArray };

const CHUNK = 1 << 20;

/**
 * A forward cursor over the header with a growable window of the file. `need(n)` makes n bytes
 * available at the cursor, after checking that the file has them.
 */
export class HeaderCursor {
  private buf = Buffer.alloc(CHUNK);
  private bufStart = 0; // file position of buf[0]
  private bufLen = 0;
  /** Cursor position in the file. */
  pos = 0;
  /** A DataView over the current window (replaced when the window grows). */
  view: DataView;
  private decoder = new TextDecoder('utf-8');

  constructor(
    private readonly fd: number,
    readonly file: string,
    readonly size: number,
  ) {
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  /** Throws a one-line error at the cursor. */
  fail(cause: string, where: string, at = this.pos): never {
    throw new LobesError(`${cause} (byte ${at})`, { file: this.file, where });
  }

  /** Make n bytes available at the cursor; returns their index in the window. */
  need(n: number, where: string): number {
    if (n > this.size - this.pos)
      this.fail(`file ends after ${this.size} bytes, ${n} more needed here: truncated GGUF`, where);
    const i = this.pos - this.bufStart;
    if (i + n <= this.bufLen) return i;
    // Slide the window to the cursor, growing it when one item is larger than the window.
    if (n > this.buf.byteLength) {
      this.buf = Buffer.alloc(Math.max(n, this.buf.byteLength * 2));
      this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    }
    const want = Math.min(this.buf.byteLength, this.size - this.pos);
    readExactly(this.fd, this.buf.subarray(0, want), this.pos, this.file);
    this.bufStart = this.pos;
    this.bufLen = want;
    return 0;
  }

  /** The current window (indices from `need`). */
  get window(): Buffer {
    return this.buf;
  }

  u32(where: string): number {
    const i = this.need(4, where);
    this.pos += 4;
    return this.view.getUint32(i, true);
  }

  /** A u64 that must be a safe integer (counts, lengths, dims, offsets). */
  u64(where: string): number {
    const at = this.pos;
    const i = this.need(8, where);
    this.pos += 8;
    const lo = this.view.getUint32(i, true);
    const hi = this.view.getUint32(i + 4, true);
    if (hi > 0x1fffff) this.fail(`value ${this.view.getBigUint64(i, true)} is larger than any file`, where, at);
    return hi * 0x100000000 + lo;
  }

  /** A GGUF string; its length is checked against the bytes left in the file. */
  string(where: string): string {
    const at = this.pos;
    const len = this.u64(where);
    if (len > this.size - this.pos)
      this.fail(`string of ${len} bytes runs past the end of the file (${this.size - this.pos} bytes left)`, where, at);
    const i = this.need(len, where);
    this.pos += len;
    return this.decoder.decode(this.buf.subarray(i, i + len));
  }
}

export function valueType(cur: HeaderCursor, where: string): GgufValueType {
  const at = cur.pos;
  const id = cur.u32(where);
  const t = TYPE_BY_ID[id];
  if (t === undefined) cur.fail(`unknown value type ${id} (GGUF defines 0..12)`, where, at);
  return t;
}

function readScalar(cur: HeaderCursor, t: GgufScalarType, where: string): GgufValue {
  if (t === 'string') return { type: 'string', value: cur.string(where) };
  const i = cur.need(GGUF_SCALAR_BYTES[t], where);
  cur.pos += GGUF_SCALAR_BYTES[t];
  const v = cur.view;
  switch (t) {
    case 'uint8':
      return { type: t, value: v.getUint8(i) };
    case 'int8':
      return { type: t, value: v.getInt8(i) };
    case 'uint16':
      return { type: t, value: v.getUint16(i, true) };
    case 'int16':
      return { type: t, value: v.getInt16(i, true) };
    case 'uint32':
      return { type: t, value: v.getUint32(i, true) };
    case 'int32':
      return { type: t, value: v.getInt32(i, true) };
    case 'float32':
      return { type: t, value: v.getFloat32(i, true) };
    case 'float64':
      return { type: t, value: v.getFloat64(i, true) };
    case 'uint64':
      return { type: t, value: v.getBigUint64(i, true) };
    case 'int64':
      return { type: t, value: v.getBigInt64(i, true) };
    case 'bool': {
      const b = v.getUint8(i);
      if (b > 1) cur.fail(`bool byte is ${b}, not 0 or 1`, where, cur.pos - 1);
      return { type: t, value: b === 1 };
    }
  }
}

const TYPED: Record<string, { new(b: ArrayBuffer): ArrayBufferView }> = {
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

const FATAL_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * An array of strings (tokens, merges: up to a few hundred thousand). The string bytes are
 * gathered into one pool and decoded with a single TextDecoder call, then cut by UTF-16 length
 * (counted from the UTF-8 lead bytes while gathering). That is exact when every string is valid
 * UTF-8 on its own, which is checked; otherwise each string is decoded separately (invalid
 * bytes become U+FFFD).
 */
function readStrings(cur: HeaderCursor, count: number, where: string): string[] {
  let pool = new Uint8Array(Math.min(1 << 20, cur.size - cur.pos));
  const ends = new Float64Array(count); // byte end of each string in the pool
  const units = new Float64Array(count); // UTF-16 end of each string in the decoded pool
  let total = 0;
  let u = 0;
  let valid = true;
  for (let k = 0; k < count; k++) {
    const at = cur.pos;
    const len = cur.u64(where);
    if (len > cur.size - cur.pos)
      cur.fail(`string of ${len} bytes runs past the end of the file (${cur.size - cur.pos} bytes left)`, where, at);
    const i = cur.need(len, where);
    if (total + len > pool.byteLength) {
      const next = new Uint8Array(Math.max(total + len, pool.byteLength * 2));
      next.set(pool.subarray(0, total));
      pool = next;
    }
    const src = cur.window;
    let pending = 0; // continuation bytes still expected
    if (len > 0 && (src[i] & 0xc0) === 0x80) valid = false;
    for (let j = i; j < i + len; j++) {
      const b = src[j];
      pool[total++] = b;
      if (b < 0x80) u++;
      else if ((b & 0xc0) === 0x80) pending--;
      else {
        if (pending !== 0) valid = false;
        pending = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : 1;
        u += b >= 0xf0 ? 2 : 1;
      }
    }
    if (pending !== 0) valid = false;
    cur.pos += len;
    ends[k] = total;
    units[k] = u;
  }
  const items = new Array<string>(count);
  let all: string | null = null;
  if (valid) {
    try {
      all = FATAL_UTF8.decode(pool.subarray(0, total));
    } catch {
      all = null;
    }
  }
  if (all !== null && all.length === u) {
    for (let k = 0, u0 = 0; k < count; k++) {
      items[k] = all.substring(u0, units[k]);
      u0 = units[k];
    }
  } else {
    const dec = new TextDecoder('utf-8');
    for (let k = 0, b0 = 0; k < count; k++) {
      items[k] = dec.decode(pool.subarray(b0, ends[k]));
      b0 = ends[k];
    }
  }
  return items;
}

function readArray(cur: HeaderCursor, where: string, depth: number): GgufArray {
  const itemType = valueType(cur, where);
  const at = cur.pos;
  const count = cur.u64(where);
  const left = cur.size - cur.pos;
  if (itemType === 'string' || itemType === 'array') {
    // Each string takes at least its 8-byte length; each array its type and count.
    const min = itemType === 'string' ? 8 : 12;
    if (count > left / min)
      cur.fail(
        `array of ${count} ${itemType}s needs at least ${count * min} bytes but ${left} are left: truncated or corrupt`,
        where,
        at,
      );
    if (itemType === 'string') return { itemType, items: readStrings(cur, count, where) };
    if (depth >= 8) cur.fail('arrays nested deeper than 8 levels', where, at);
    const items = new Array<GgufArray>(count);
    for (let k = 0; k < count; k++) items[k] = readArray(cur, `${where}[${k}]`, depth + 1);
    return { itemType, items };
  }
  const size = GGUF_SCALAR_BYTES[itemType];
  if (count > left / size)
    cur.fail(`array of ${count} ${itemType} needs ${count * size} bytes but ${left} are left: truncated GGUF`, where,
      at);
  const nbytes = count * size;
  if (itemType === 'bool') {
    const items = new Array<boolean>(count);
    for (let k = 0; k < count; k++) {
      const b = readScalar(cur, 'bool', where);
      items[k] = b.value as boolean;
    }
    return { itemType, items };
  }
  const ab = new ArrayBuffer(nbytes);
  const dst = new Uint8Array(ab);
  // Copy through the window in pieces so that the window never has to hold a huge array.
  let done = 0;
  while (done < nbytes) {
    const piece = Math.min(nbytes - done, CHUNK);
    const i = cur.need(piece, where);
    dst.set(cur.window.subarray(i, i + piece), done);
    cur.pos += piece;
    done += piece;
  }
  return { itemType, items: new TYPED[itemType](ab) } as GgufArray;
}

/** Read a metadata value of a given type (arrays included). */
export function readValue(cur: HeaderCursor, t: GgufValueType, where: string): GgufValue {
  if (t === 'array') return { type: 'array', value: readArray(cur, where, 0) };
  return readScalar(cur, t, where);
}

export function describe(v: GgufValue | undefined): string {
  if (!v) return 'missing';
  return v.type === 'array' ? `an array of ${v.value.itemType}` : `of type ${v.type}`;
}
