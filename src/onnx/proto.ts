/**
 * A small protobuf wire-format reader and writer, enough for ONNX files.
 *
 * Reader: bounds-checked; length-delimited payloads are returned as views into the input
 * (no copy). Writer: accumulates parts so large byte payloads (tensor data) are referenced,
 * not copied, until the final concatenation.
 */

export type Int64 = number | bigint;

/** A malformed or truncated protobuf stream. `offset` is the byte where decoding failed. */
export class ProtoError extends Error {
  constructor(message: string, readonly offset: number) {
    super(message);
    this.name = 'ProtoError';
  }
}

export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

const utf8Decoder = new TextDecoder('utf-8', { fatal: false });
const utf8Encoder = new TextEncoder();

export class Reader {
  pos: number;
  readonly end: number;
  private readonly view: DataView;

  constructor(readonly buf: Uint8Array, start = 0, end = buf.length) {
    this.pos = start;
    this.end = end;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  eof(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as a JS number when it is a safe integer (as signed int64), otherwise a bigint. */
  varint(): Int64 {
    const start = this.pos;
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError('truncated varint', start);
      const b = this.buf[this.pos++]!;
      if (i < 7) {
        result += (b & 0x7f) * mul;
        mul *= 128;
        if ((b & 0x80) === 0) return result;
      } else if ((b & 0x80) === 0) {
        return this.bigVarint(start, this.pos);
      }
    }
    throw new ProtoError('varint longer than 10 bytes', start);
  }

  private bigVarint(start: number, end: number): Int64 {
    let v = 0n;
    let shift = 0n;
    for (let p = start; p < end; p++) {
      v |= BigInt(this.buf[p]! & 0x7f) << shift;
      shift += 7n;
    }
    const signed = BigInt.asIntN(64, v);
    if (signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(signed);
    return signed;
  }

  /** A varint expected to fit a JS number (lengths, tags, int32 enums). */
  uint(): number {
    const at = this.pos;
    const v = this.varint();
    if (typeof v !== 'number') throw new ProtoError('integer out of range', at);
    return v;
  }

  float(): number {
    if (this.pos + 4 > this.end) throw new ProtoError('truncated float', this.pos);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }

  double(): number {
    if (this.pos + 8 > this.end) throw new ProtoError('truncated double', this.pos);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  /** A length-delimited payload as a view into the input. */
  bytes(): Uint8Array {
    const at = this.pos;
    const len = this.uint();
    if (len < 0 || this.pos + len > this.end) {
      throw new ProtoError(`length ${len} runs past the end of the data (${this.end - this.pos} bytes left)`, at);
    }
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  string(): string {
    return utf8Decoder.decode(this.bytes());
  }

  /** Start and end of a length-delimited payload (for nested messages), advancing past it. */
  sub(): [number, number] {
    const at = this.pos;
    const len = this.uint();
    if (len < 0 || this.pos + len > this.end) {
      throw new ProtoError(
        `nested message of ${len} bytes runs past the end of the data (${this.end - this.pos} bytes left)`,
        at,
      );
    }
    const s = this.pos;
    this.pos += len;
    return [s, s + len];
  }

  skip(wire: number): void {
    const at = this.pos;
    switch (wire) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_I64:
        if (this.pos + 8 > this.end) throw new ProtoError('truncated fixed64', at);
        this.pos += 8;
        return;
      case WIRE_LEN:
        this.bytes();
        return;
      case WIRE_I32:
        if (this.pos + 4 > this.end) throw new ProtoError('truncated fixed32', at);
        this.pos += 4;
        return;
      default:
        throw new ProtoError(`unsupported wire type ${wire}`, at);
    }
  }

  /** Read a tag: [field number, wire type]. */
  tag(): [number, number] {
    const at = this.pos;
    const t = this.uint();
    const field = Math.floor(t / 8);
    const wire = t & 7;
    if (field === 0) throw new ProtoError('field number 0', at);
    if (wire !== WIRE_VARINT && wire !== WIRE_I64 && wire !== WIRE_LEN && wire !== WIRE_I32)
      throw new ProtoError(`unsupported wire type ${wire}`, at);
    return [field, wire];
  }
}

/** Writer that collects parts; large byte payloads are kept by reference. */
export class Writer {
  readonly parts: Uint8Array[] = [];
  private flushedLen = 0;
  private scratch = new Uint8Array(1024);
  private dv = new DataView(this.scratch.buffer);
  private spos = 0;

  get length(): number {
    return this.flushedLen + this.spos;
  }

  private flush(): void {
    if (this.spos === 0) return;
    this.parts.push(this.scratch.slice(0, this.spos));
    this.flushedLen += this.spos;
    this.spos = 0;
  }

  private ensure(n: number): void {
    if (this.spos + n <= this.scratch.length) return;
    this.flush();
    if (n > this.scratch.length) {
      this.scratch = new Uint8Array(n);
      this.dv = new DataView(this.scratch.buffer);
    }
  }

  rawVarint(v: Int64): void {
    this.ensure(10);
    const s = this.scratch;
    if (typeof v === 'number' && v >= 0 && v <= 0x7fffffff) {
      let x = v;
      while (x >= 0x80) {
        s[this.spos++] = (x & 0x7f) | 0x80;
        x >>>= 7;
      }
      s[this.spos++] = x;
      return;
    }
    let b = BigInt.asUintN(64, BigInt(v));
    while (b >= 0x80n) {
      s[this.spos++] = Number(b & 0x7fn) | 0x80;
      b >>= 7n;
    }
    s[this.spos++] = Number(b);
  }

  tag(field: number, wire: number): void {
    this.rawVarint(field * 8 + wire);
  }

  varintField(field: number, v: Int64): void {
    this.tag(field, WIRE_VARINT);
    this.rawVarint(v);
  }

  floatField(field: number, v: number): void {
    this.tag(field, WIRE_I32);
    this.ensure(4);
    this.dv.setFloat32(this.spos, v, true);
    this.spos += 4;
  }

  /** Bytes appended as they are; payloads over 512 bytes are referenced, not copied. */
  rawBytes(data: Uint8Array): void {
    if (data.length > 512) {
      this.flush();
      this.parts.push(data);
      this.flushedLen += data.length;
      return;
    }
    this.ensure(data.length);
    this.scratch.set(data, this.spos);
    this.spos += data.length;
  }

  bytesField(field: number, data: Uint8Array): void {
    this.tag(field, WIRE_LEN);
    this.rawVarint(data.length);
    this.rawBytes(data);
  }

  stringField(field: number, s: string): void {
    this.bytesField(field, utf8Encoder.encode(s));
  }

  private append(child: Writer): void {
    child.flush();
    this.flush();
    for (const p of child.parts) this.parts.push(p);
    this.flushedLen += child.flushedLen;
  }

  /** A nested message written by `fn` into a child writer. */
  messageField(field: number, fn: (w: Writer) => void): void {
    const child = new Writer();
    fn(child);
    this.tag(field, WIRE_LEN);
    this.rawVarint(child.length);
    this.append(child);
  }

  /** Packed repeated varints (nothing is written for an empty list). */
  packedVarints(field: number, vals: ArrayLike<Int64>): void {
    if (vals.length === 0) return;
    const child = new Writer();
    for (let i = 0; i < vals.length; i++) child.rawVarint(vals[i]!);
    this.tag(field, WIRE_LEN);
    this.rawVarint(child.length);
    this.append(child);
  }

  /** All parts, in order. */
  finish(): Uint8Array[] {
    this.flush();
    return this.parts;
  }

  toBytes(): Uint8Array {
    const parts = this.finish();
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}
