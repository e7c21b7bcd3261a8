/**
 * File I/O shared by every part of lobes:
 *
 * - readExactly: positional reads that fill a buffer or fail with a one-line LobesError
 *   naming the file and the byte where it ended (no silent short reads);
 * - RangeFile / readFileRange: a file opened once and read by byte ranges;
 * - writeFileAtomicSync / writeFileAtomic: readers see either the old content or the
 *   complete new one (temporary sibling, fsync, rename, fsync of the folder; the
 *   temporary file is removed when anything fails).
 */
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, promises as fsp, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from './errors.js';

/** Largest single read: one readSync is capped well below its 2 GiB limit. */
export const MAX_READ_BYTES = 1 << 30;

/** The bytes of a typed array or other view (no copy). */
export function bytesOf(v: ArrayBufferView): Uint8Array {
  return v instanceof Uint8Array ? v : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

export interface ReadOptions {
  /** Place inside the file for error messages (a tensor name, a header). */
  where?: string;
  /** Largest single read (default MAX_READ_BYTES). */
  maxRead?: number;
}

/**
 * Fill `dst` with the bytes of `fd` from byte `position` on, in reads of at most 1 GiB.
 * Throws a one-line LobesError naming `file` and the offset when the file ends first.
 */
export function readExactly(fd: number, dst: ArrayBufferView, position: number, file: string, opts: ReadOptions = {}): void {
  const b = bytesOf(dst);
  const max = Math.max(1, Math.min(opts.maxRead ?? MAX_READ_BYTES, MAX_READ_BYTES));
  let got = 0;
  while (got < b.byteLength) {
    const n = readSync(fd, b, got, Math.min(b.byteLength - got, max), position + got);
    if (n === 0) {
      throw new LobesError(`unexpected end of file at byte ${position + got} (reading ${b.byteLength} bytes from byte ${position}; truncated?)`, {
        file,
        where: opts.where,
      });
    }
    got += n;
  }
}

/** A file opened once for reading byte ranges; close() it when done. */
export class RangeFile {
  private fd: number | null;
  private bytes: number | null = null;

  private constructor(
    readonly file: string,
    fd: number,
    private readonly where: string | undefined,
  ) {
    this.fd = fd;
  }

  /**
   * Open `file` for reading. `what` names the kind of file in the error when it cannot be
   * opened ('weight file', '.npy file'); `where` is added to every error.
   */
  static open(file: string, what = 'file', where?: string): RangeFile {
    try {
      return new RangeFile(file, openSync(file, 'r'), where);
    } catch (e: any) {
      throw new LobesError(`cannot open ${what} (${e.code ?? e.message})`, { file, where });
    }
  }

  private handle(): number {
    if (this.fd === null) throw new Error(`${this.file} is closed`);
    return this.fd;
  }

  /** Size of the file in bytes (when first asked). */
  get size(): number {
    if (this.bytes === null) this.bytes = fstatSync(this.handle()).size;
    return this.bytes;
  }

  /** Fill `dst` (bytes or any typed array) from byte `position`. */
  readInto(dst: ArrayBufferView, position: number): void {
    readExactly(this.handle(), dst, position, this.file, { where: this.where });
  }

  /** Bytes [position, position + length) in a fresh buffer (8-byte aligned, so any typed array can view it). */
  read(position: number, length: number): Uint8Array {
    const out = new Uint8Array(new ArrayBuffer(length));
    this.readInto(out, position);
    return out;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/** Bytes [offset, offset + length) of a file in a fresh, 8-byte aligned buffer. */
export function readFileRange(file: string, offset: number, length: number, what = 'file'): Uint8Array {
  const f = RangeFile.open(file, what);
  try {
    return f.read(offset, length);
  } finally {
    f.close();
  }
}

// ---------------------------------------------------------------------------------------
// Atomic writes

/** What an atomic write stores: text (UTF-8), bytes, or byte parts written in order. */
export type FileData = string | Uint8Array | readonly Uint8Array[];

function partsOf(data: FileData): readonly Uint8Array[] {
  if (typeof data === 'string') return [Buffer.from(data, 'utf8')];
  return data instanceof Uint8Array ? [data] : data;
}

/** A temporary sibling of `file`; cleanTempFiles recognizes the name. */
function tempPath(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
}

const TEMP_NAME = /^\..*\.tmp-\d+-\d+$/;

/**
 * Write a file so that readers see either the old content or the complete new one: write a
 * temporary sibling, fsync it, rename it over the target, fsync the folder. The folder is
 * created when missing; on failure the temporary file is removed and the error rethrown.
 */
export function writeFileAtomicSync(file: string, data: FileData): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true });
  const tmp = tempPath(file);
  try {
    const fd = openSync(tmp, 'w');
    try {
      for (const p of partsOf(data)) {
        let off = 0;
        while (off < p.byteLength) off += writeSync(fd, p, off, p.byteLength - off);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(dir);
}

/** writeFileAtomicSync with the I/O on libuv's thread pool (the caller's thread stays free). */
export async function writeFileAtomic(file: string, data: FileData): Promise<void> {
  const dir = path.dirname(file);
  await fsp.mkdir(dir, { recursive: true });
  const tmp = tempPath(file);
  try {
    const fh = await fsp.open(tmp, 'w');
    try {
      for (const p of partsOf(data)) {
        let off = 0;
        while (off < p.byteLength) off += (await fh.write(p, off, p.byteLength - off)).bytesWritten;
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, file);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  await fsyncDirAsync(dir);
}

/** fsync a folder so a rename in it is durable (ignored where the filesystem refuses). */
export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems do not allow fsync on directories; the rename is still atomic.
  }
}

async function fsyncDirAsync(dir: string): Promise<void> {
  const dh = await fsp.open(dir, 'r').catch(() => null);
  if (!dh) return;
  try {
    await dh.sync();
  } catch {
    // As in fsyncDir.
  } finally {
    await dh.close();
  }
}

/** Remove leftovers of interrupted atomic writes in a folder. */
export async function cleanTempFiles(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return;
  }
  await Promise.all(names.filter((n) => TEMP_NAME.test(n)).map((n) => fsp.rm(path.join(dir, n), { force: true })));
}
