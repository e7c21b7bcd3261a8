/**
 * Where initializer bytes go while a graph is built: into memory (inline initializers, for the
 * small generated models) or into an external data file, each tensor a reserved region that
 * is filled by positional writes (so a transposed weight can be written tile by tile).
 */
import { closeSync, fsyncSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { LobesError } from '../../util/errors.js';
import { dtypeBytes, type GDtype, type GInit } from './graph.js';

/** A reserved tensor: fill it with write(byteOffset, bytes). */
export interface Region {
  readonly name: string;
  readonly byteLength: number;
  write(byteOffset: number, bytes: Uint8Array): void;
}

export interface TensorSink {
  /** Initializers in creation order. */
  readonly initializers: GInit[];
  /** Reserve a tensor of `dims` (its initializer is appended now); fill it through the region. */
  reserve(name: string, dtype: GDtype, dims: number[]): Region;
  /** A small constant, always inline. */
  constant(init: GInit): string;
}

function elementCount(dims: number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

function typedFor(dtype: GDtype, n: number): NonNullable<GInit['data']> {
  switch (dtype) {
    case 'float32':
      return new Float32Array(n);
    case 'float16':
    case 'bfloat16':
      return new Uint16Array(n);
    case 'int64':
      return new BigInt64Array(n);
    case 'int32':
      return new Int32Array(n);
    case 'uint8':
      return new Uint8Array(n);
  }
}

function inlineRegion(init: GInit, dtype: GDtype, dims: number[]): Region {
  const data = typedFor(dtype, elementCount(dims));
  init.data = data;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return {
    name: init.name,
    byteLength: bytes.byteLength,
    write(off, b) {
      if (off < 0 || off + b.byteLength > bytes.byteLength)
        throw new Error(`${init.name}: write of ${b.byteLength} bytes at ${off} outside ${bytes.byteLength}`);
      bytes.set(b, off);
    },
  };
}

/** Every initializer inline (the tensors live in memory). */
export class InlineSink implements TensorSink {
  readonly initializers: GInit[] = [];

  reserve(name: string, dtype: GDtype, dims: number[]): Region {
    const init: GInit = { name, dtype, dims };
    this.initializers.push(init);
    return inlineRegion(init, dtype, dims);
  }

  constant(init: GInit): string {
    this.initializers.push(init);
    return init.name;
  }
}

/**
 * Tensors of at least `minExternal` bytes go to an external data file, each at an offset
 * aligned to `align` bytes; smaller ones stay inline (as exporters do). `onWrite` is told
 * the bytes of every write.
 */
export class FileSink implements TensorSink {
  readonly initializers: GInit[] = [];
  private fd: number | null;
  private end = 0;

  constructor(
    readonly file: string,
    readonly location: string,
    private readonly onWrite: (bytes: number, tensor: string) => void = () => {},
    private readonly align = 64,
    private readonly minExternal = 1024,
  ) {
    try {
      this.fd = openSync(file, 'w');
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new LobesError(`cannot create the external data file (${err.code ?? err.message})`, { file });
    }
  }

  /** Bytes of the data file so far. */
  get size(): number {
    return this.end;
  }

  reserve(name: string, dtype: GDtype, dims: number[]): Region {
    const length = elementCount(dims) * dtypeBytes(dtype);
    const init: GInit = { name, dtype, dims };
    this.initializers.push(init);
    if (length < this.minExternal) {
      const r = inlineRegion(init, dtype, dims);
      return { name, byteLength: r.byteLength, write: (off, b) => r.write(off, b) };
    }
    const offset = Math.ceil(this.end / this.align) * this.align;
    this.end = offset + length;
    init.external = { location: this.location, offset, length };
    return {
      name,
      byteLength: length,
      write: (off, b) => {
        if (off < 0 || off + b.byteLength > length)
          throw new Error(`${name}: write of ${b.byteLength} bytes at ${off} outside ${length}`);
        this.pwrite(b, offset + off);
        this.onWrite(b.byteLength, name);
      },
    };
  }

  constant(init: GInit): string {
    this.initializers.push(init);
    return init.name;
  }

  private pwrite(b: Uint8Array, pos: number): void {
    if (this.fd === null) throw new Error(`${this.file} is closed`);
    let done = 0;
    while (done < b.byteLength) {
      try {
        done += writeSync(this.fd, b, done, b.byteLength - done, pos + done);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        throw new LobesError(`cannot write the external data file at byte ${pos + done} (${err.code ?? err.message})`, {
          file: this.file,
          hint: err.code === 'ENOSPC' ? 'the disk is full; free space or choose another folder' : undefined,
        });
      }
    }
  }

  /** Pad the file to its full size (a last tensor never written stays zeros), fsync and close. */
  close(): void {
    if (this.fd === null) return;
    try {
      ftruncateSync(this.fd, this.end);
      fsyncSync(this.fd);
    } finally {
      closeSync(this.fd);
      this.fd = null;
    }
  }

  /** Close without syncing (after a failure). */
  abort(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
