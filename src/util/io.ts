/**
 * File I/O shared by every part of lobes:
 *
 * - readExactly: positional reads that fill a buffer or fail with a one-line LobesError
 *   naming the file and the byte where it ended (no silent short reads);
 * - RangeFile / readFileRange: a file opened once and read by byte ranges;
 * - writeFileAtomicSync / writeFileAtomic: readers see either the old content or the
 *   complete new one (temporary sibling, fsync, rename, fsync of the folder; the
 *   temporary file is removed when anything fails);
 * - writeDirAtomic: the same for a whole output folder (an analysis result): written in a
 *   temporary sibling folder and renamed into place only when complete;
 * - checkRegularFile: refuse folders, pipes and devices before opening them (opening a FIFO
 *   for reading blocks; reading /dev/zero never ends).
 *
 * Operating-system failures (ENOSPC, EISDIR, EACCES, ...) leave these functions as one-line
 * LobesErrors naming the path (src/util/errors.ts, systemError).
 */
import { closeSync, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, promises as fsp, readdirSync, readSync,
  renameSync, rmSync, rmdirSync, statSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, rethrowSystem, systemCause, systemError } from './errors.js';
import { checkOutputDir, checkOutputPlace, hashFolderFiles, OUTPUT_MARKER, outputMarkerText, type LineageInput,
  type OutputKind } from './output.js';

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
export function readExactly(fd: number, dst: ArrayBufferView, position: number, file: string,
  opts: ReadOptions = {}): void
{
  const b = bytesOf(dst);
  const max = Math.max(1, Math.min(opts.maxRead ?? MAX_READ_BYTES, MAX_READ_BYTES));
  let got = 0;
  while (got < b.byteLength) {
    const n = readSync(fd, b, got, Math.min(b.byteLength - got, max), position + got);
    if (n === 0) {
      throw new LobesError(
        `unexpected end of file at byte ${
          position + got
        } (reading ${b.byteLength} bytes from byte ${position}; truncated?)`,
        {
          file,
          where: opts.where,
        },
      );
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
    if (existsSync(file)) checkRegularFile(file, what);
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

  /**
   * Identity of the open file's current state: device, inode, size, modification and
   * status-change times in nanoseconds. Any write to the file changes it.
   */
  statKey(): string {
    const st = fstatSync(this.handle(), { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
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

/**
 * Check that `file` is a regular file (following symbolic links) before it is opened: a
 * missing path, a folder, a FIFO, a socket or a device is a one-line LobesError naming it.
 * `what` names the kind of file ('model graph', 'weight file'); `hint` says what to give instead.
 */
export function checkRegularFile(file: string, what = 'file', hint = `give the path of the ${what} itself`): void {
  let st;
  try {
    st = statSync(file);
  } catch (e: any) {
    if (e?.code === 'ENOENT') throw new LobesError(`${what} not found`, { file, hint: 'check the path' });
    rethrowSystem(e, file);
  }
  if (st.isFile()) return;
  const kind = st.isDirectory()
    ? 'a folder'
    : st.isFIFO()
    ? 'a named pipe (FIFO)'
    : st.isCharacterDevice() || st.isBlockDevice()
    ? 'a device'
    : st.isSocket()
    ? 'a socket'
    : 'not a regular file';
  throw new LobesError(`${what} is ${kind}, not a regular file`, { file, hint });
}

// ---------------------------------------------------------------------------------------
// Atomic writes

/** What an atomic write stores: text (UTF-8), bytes, or byte parts written in order. */
export type FileData = string | Uint8Array | readonly Uint8Array[];

function partsOf(data: FileData): readonly Uint8Array[] {
  if (typeof data === 'string') return [Buffer.from(data, 'utf8')];
  return data instanceof Uint8Array ? [data] : data;
}

/**
 * mkdir -p that names the real cause: Node's recursive mkdir reports ENOENT when a missing
 * folder cannot be created on a read-only disk (it stats the folder after EROFS), so on
 * ENOENT the first missing folder is created on its own to get the operating system's own
 * error (EROFS, EACCES, ...). Failures are one-line LobesErrors naming the folder.
 */
export function makeDirs(dir: string, named?: { what: string; hint: string }): string | undefined {
  // `named`: a folder lobes keeps for the user (a cache); a failure says which folder it was
  // meant to be, the real cause and what to do.
  const fail = (e: unknown, at: string): never => {
    if (!named) rethrowSystem(e, at);
    const err = e as { code?: unknown; message?: unknown };
    const cause = systemCause(e) ?? String(typeof err?.code === 'string' ? err.code : err?.message);
    throw new LobesError(`cannot create the ${named.what}: ${cause}`, { file: at, hint: named.hint });
  };
  try {
    return mkdirSync(dir, { recursive: true });
  } catch (e: any) {
    if (e?.code === 'ENOENT') {
      let first = path.resolve(dir);
      while (!existsSync(path.dirname(first)) && path.dirname(first) !== first) first = path.dirname(first);
      try {
        mkdirSync(first);
      } catch (e2) {
        fail(e2, first);
      }
      makeDirs(dir, named);
      return first;
    }
    fail(e, dir);
  }
}

/** A temporary sibling of `file`; cleanTempFiles recognizes the name. */
function tempPath(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
}

const TEMP_NAME = /^\..*\.tmp-(\d+)-\d+$/;

/**
 * Write a file so that readers see either the old content or the complete new one: write a
 * temporary sibling, fsync it, rename it over the target, fsync the folder. The folder is
 * created when missing; on failure the temporary file is removed and the error rethrown.
 */
export function writeFileAtomicSync(file: string, data: FileData): void {
  const dir = path.dirname(file);
  checkOutputFile(file);
  makeDirs(dir);
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
    rethrowSystem(e, file);
  }
  fsyncDir(dir);
}

/**
 * Refuse an output file path that exists as a folder or a special file, before any work is
 * done for it (writeFileAtomicSync checks again when it writes).
 */
export function checkOutputFile(file: string): void {
  let st;
  try {
    st = statSync(file);
  } catch {
    return; // absent (or unreadable: the write reports it)
  }
  if (st.isDirectory())
    throw new LobesError('is a folder; a file is written here', { file,
      hint: 'give a file path inside the folder, not the folder itself' });
  if (!st.isFile())
    throw new LobesError('is not a regular file (a pipe or device); a file is written here', { file,
      hint: 'give the path of a regular file' });
}

/** writeFileAtomicSync with the I/O on libuv's thread pool (the caller's thread stays free). */
export async function writeFileAtomic(file: string, data: FileData): Promise<void> {
  const dir = path.dirname(file);
  checkOutputFile(file);
  if (!existsSync(dir)) makeDirs(dir);
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
    rethrowSystem(e, file);
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

/**
 * Remove leftovers of interrupted atomic writes in a folder: temporary files whose writing
 * process is gone (one still running, e.g. a second lobes writing beside this one, keeps its own).
 */
export async function cleanTempFiles(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return;
  }
  const stale = names.filter((n) => {
    const m = TEMP_NAME.exec(n);
    return m !== null && !alive(Number(m[1]));
  });
  await Promise.all(stale.map((n) => fsp.rm(path.join(dir, n), { force: true })));
}

// ---------------------------------------------------------------------------------------
// Atomic output folders

/** Whether process `pid` is alive (EPERM: alive under another user). */
function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === 'EPERM';
  }
}

/**
 * Clean what an interrupted writeDirAtomic of `target` left beside it: temporary folders of
 * processes that are gone are removed, and when the target itself is missing because a
 * crash came between the two renames, its previous version is put back.
 */
function recoverDir(target: string): void {
  const parent = path.dirname(target);
  const base = path.basename(target);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  const pat = new RegExp(`^\\.${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(tmp|old)-(\\d+)-\\d+$`);
  for (const n of names) {
    const m = pat.exec(n);
    if (!m || alive(Number(m[2]))) continue;
    const p = path.join(parent, n);
    if (m[1] === 'old' && !existsSync(target)) renameSync(p, target);
    else rmSync(p, { recursive: true, force: true });
  }
}

/**
 * Write lobes' marker of `kind` into `dir` (atomically), for a folder lobes fills itself
 * rather than through writeDirAtomic (an eval or attend folder written as it goes). Call it
 * when the folder is created, before the first result is written.
 */
export function writeOutputMarker(dir: string, kind: OutputKind, files?: string[]): void {
  writeFileAtomicSync(path.join(dir, OUTPUT_MARKER), outputMarkerText(kind, files));
}

/** Options of writeDirAtomic. */
export interface DirWriteOptions {
  /**
   * The kind of output (src/util/output.ts): the folder gets lobes' marker file of this kind,
   * and an existing folder is replaced only when it is an earlier output of the same kind
   * (checkOutputDir). Without a kind only an absent or empty folder is written.
   */
  kind?: OutputKind;
  /**
   * A further condition for replacing an existing, non-empty `dir` that the kind allows (e.g.
   * that the user passed --overwrite). Without `kind`, whether an existing non-empty folder
   * may be replaced at all.
   */
  replaces?: (existing: string) => boolean;
  /**
   * Lineage (src/store/lineage.ts): what the output read. With a kind, the marker records these
   * inputs and the size and sha256 of every file `fill` wrote; a function is called after `fill`.
   */
  inputs?: LineageInput[] | (() => LineageInput[]);
}

/**
 * Write a whole output folder atomically: `fill` writes every file into a fresh temporary
 * sibling folder, lobes' marker file of `opts.kind` is added, and the folder then replaces
 * `dir` (the previous folder is moved aside and removed once the new one is in place). An
 * existing `dir` that is not an earlier output of the same kind, or a `dir` inside a run's
 * own files or another output folder, is refused before anything is written
 * (src/util/output.ts). When `fill` or a rename fails, the temporary folder is
 * removed, the previous `dir` is left exactly as it was, folders created for the output are
 * removed again, and the error is rethrown (operating-system errors as one-line LobesErrors
 * naming `dir`). Between the two renames a crash can leave `dir` missing with its previous
 * version beside it; the next writeDirAtomic of `dir` puts it back first. Returns what
 * `fill` returns.
 */
export async function writeDirAtomic<T>(dir: string, fill: (tmp: string) => T | Promise<T>,
  opts: DirWriteOptions = {}): Promise<T>
{
  const target = path.resolve(dir);
  const parent = path.dirname(target);
  const base = path.basename(target);
  recoverDir(target);
  if (opts.kind) {
    checkOutputDir(dir, opts.kind);
    if (existsSync(target) && readdirSync(target).length && opts.replaces && !opts.replaces(target)) {
      throw new LobesError(`folder holds an earlier lobes ${opts.kind} result; it is not replaced`, { file: dir,
        hint: 'give a new or empty folder', code: 'E_EXISTS' });
    }
  } else {
    checkOutputPlace(dir, 'output folder');
    if (existsSync(target)) {
      if (!statSync(target).isDirectory())
        throw new LobesError('exists and is not a folder; an output folder is written here', { file: dir,
          hint: 'give a folder path, or remove the file' });
      const names = readdirSync(target);
      if (names.length && !(opts.replaces?.(target) ?? false)) {
        throw new LobesError(
          `folder exists and holds files this command did not write (${names.slice(0, 3).join(', ')}${
            names.length > 3 ? ', …' : ''
          }); it is not replaced`,
          { file: dir, hint: 'give a new or empty folder', code: 'E_EXISTS' },
        );
      }
    }
  }
  // The first folder this call creates (removed again on failure).
  let created: string | null = null;
  for (let p = parent; !existsSync(p); p = path.dirname(p)) created = p;
  makeDirs(parent);
  const stamp = `${process.pid}-${Math.floor(Math.random() * 1e9)}`;
  const tmp = path.join(parent, `.${base}.tmp-${stamp}`);
  const old = path.join(parent, `.${base}.old-${stamp}`);
  let moved = false;
  try {
    mkdirSync(tmp);
    const out = await fill(tmp);
    if (opts.kind) {
      const lineage = opts.inputs
        ? { inputs: typeof opts.inputs === 'function' ? opts.inputs() : opts.inputs, outputs: hashFolderFiles(tmp) }
        : undefined;
      writeFileAtomicSync(path.join(tmp, OUTPUT_MARKER), outputMarkerText(opts.kind, readdirSync(tmp), lineage));
    }
    fsyncDir(tmp);
    if (existsSync(target)) {
      renameSync(target, old);
      moved = true;
    }
    renameSync(tmp, target);
    fsyncDir(parent);
    if (moved) rmSync(old, { recursive: true, force: true });
    return out;
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (moved && !existsSync(target)) renameSync(old, target);
    if (created) removeEmptyChain(created, parent);
    // Name the output folder, not the temporary one that is gone.
    if (e instanceof LobesError && e.message.includes(tmp))
      throw new LobesError(e.message.split(tmp).join(target), { exitCode: e.exitCode });
    throw systemError(e, dir) ?? e;
  }
}

/** Remove `parent` and its ancestors up to and including `top` while they are empty. */
function removeEmptyChain(top: string, parent: string): void {
  for (let p = parent;; p = path.dirname(p)) {
    try {
      rmdirSync(p);
    } catch {
      return;
    }
    if (p === top) return;
  }
}
