/**
 * sha256 of input files (model graphs, external weight data, tokenizer files, weight
 * checkpoints), streamed in 4 MiB pieces, with a cache so that a multi-gigabyte weight file
 * is hashed once per machine rather than on every command.
 *
 * What the cache trusts (docs/run-format.md): a file at the same real path with the same
 * device, inode, size, modification time and status-change time (both in nanoseconds) as
 * when it was hashed is taken to hold the same bytes. Any write to a file, and any
 * `touch -d` that resets its modification time, moves its change time, which no user
 * command can set back; what the cache cannot see is a change made while bypassing the
 * file system (raw block-device writes) or by resetting the system clock. The cache lives
 * in $LOBES_HASH_CACHE (a file path), else $XDG_CACHE_HOME/lobes/file-sha256.json, else
 * ~/.cache/lobes/file-sha256.json; LOBES_HASH_CACHE=off hashes every time. A cache that
 * cannot be read or written is ignored (everything is hashed).
 */
import { createHash } from 'node:crypto';
import { realpathSync, statSync, type BigIntStats } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RangeFile } from '../util/io.js';
import { LobesError } from '../util/errors.js';
import { startWorker } from '../util/worker.js';
import { readJsonFile, writeJsonAtomic } from './json.js';

/** A file's sha256 and size. */
export interface FileHash {
  sha256: string;
  bytes: number;
}

/** Bytes hashed per read. */
const PIECE = 4 << 20;
/** Entries kept in the cache file (most recently hashed first). */
const MAX_ENTRIES = 4096;

interface CacheEntry {
  key: string;
  sha256: string;
  bytes: number;
  at: number;
}

/** The cache file, or null when caching is off. */
export function hashCacheFile(): string | null {
  const env = process.env.LOBES_HASH_CACHE;
  if (env === 'off' || env === '0') return null;
  if (env) return path.resolve(env);
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'lobes', 'file-sha256.json');
}

function statKey(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

function loadCache(file: string): Record<string, CacheEntry> {
  const o = readJsonFile(file, { fallback: null });
  return o && typeof o === 'object' && o.format === 'lobes-file-sha256' && o.entries && typeof o.entries === 'object'
    ? o.entries
    : {};
}

function saveCache(file: string, entries: Record<string, CacheEntry>): void {
  const kept = Object.entries(entries)
    .sort((a, b) => b[1].at - a[1].at)
    .slice(0, MAX_ENTRIES);
  try {
    writeJsonAtomic(file, { format: 'lobes-file-sha256', entries: Object.fromEntries(kept) });
  } catch {
    // A cache that cannot be written only costs time.
  }
}

/** sha256 of a file read in 4 MiB pieces; `onBytes` is told after each piece. */
export function sha256Stream(file: string, onBytes?: (done: number, total: number) => void, what = 'file'): FileHash {
  const f = RangeFile.open(file, what);
  try {
    const size = f.size;
    const h = createHash('sha256');
    const buf = new Uint8Array(Math.min(PIECE, Math.max(size, 1)));
    for (let off = 0; off < size; off += buf.length) {
      const piece = buf.subarray(0, Math.min(buf.length, size - off));
      f.readInto(piece, off);
      h.update(piece);
      onBytes?.(off + piece.length, size);
    }
    return { sha256: h.digest('hex'), bytes: size };
  } finally {
    f.close();
  }
}

/**
 * Remember a hash computed elsewhere (e.g. of a file while it was in a temporary folder
 * before a rename): stored only when the file's device, inode, size and times are still the
 * ones `before` (taken before it was hashed) had, so the cache's guarantee holds.
 */
export function rememberFileHash(file: string, hash: FileHash, before: BigIntStats): void {
  const cacheFile = hashCacheFile();
  if (!cacheFile) return;
  try {
    const real = realpathSync(file);
    const st = statSync(real, { bigint: true });
    if (!st.isFile() || statKey(st) !== statKey(before) || BigInt(hash.bytes) !== st.size) return;
    const fresh = loadCache(cacheFile);
    fresh[real] = { key: statKey(st), sha256: hash.sha256, bytes: hash.bytes, at: Date.now() };
    saveCache(cacheFile, fresh);
  } catch {
    // Only costs a hash later.
  }
}

/**
 * sha256 of a file, from the cache when the file is unchanged since it was last hashed
 * (see the module comment for what that trusts), else streamed and remembered.
 */
export function hashFileCached(file: string,
  opts: { onBytes?: (done: number, total: number) => void; what?: string } = {}): FileHash
{
  const cacheFile = hashCacheFile();
  if (!cacheFile) return sha256Stream(file, opts.onBytes, opts.what);
  let real: string;
  let st: BigIntStats;
  try {
    real = realpathSync(file);
    st = statSync(real, { bigint: true });
  } catch {
    return sha256Stream(file, opts.onBytes, opts.what); // reports the problem
  }
  if (!st.isFile()) return sha256Stream(file, opts.onBytes, opts.what);
  const key = statKey(st);
  const entries = loadCache(cacheFile);
  const hit = entries[real];
  if (hit && hit.key === key && /^[0-9a-f]{64}$/.test(hit.sha256)) return { sha256: hit.sha256, bytes: hit.bytes };
  const got = sha256Stream(real, opts.onBytes, opts.what);
  // Remember it only if the file did not change while it was read.
  try {
    if (statKey(statSync(real, { bigint: true })) !== key) return got;
  } catch {
    return got;
  }
  const fresh = loadCache(cacheFile);
  fresh[real] = { key, sha256: got.sha256, bytes: got.bytes, at: Date.now() };
  saveCache(cacheFile, fresh);
  return got;
}

/** Files smaller than this are hashed on the calling thread by hashFilesInBackground. */
const WORKER_MIN_BYTES = 256 << 20;

/** Hashes being computed on a worker thread: await `done`, or `cancel()` to stop the worker. */
export interface BackgroundHashes {
  done: Promise<FileHash[]>;
  cancel(): Promise<void>;
}

/**
 * hashFileCached of each file, with the files not in the cache hashed one after the other on a
 * worker thread, so that a first run's hashing overlaps the caller's other work (e.g. wanda's
 * weight pass) instead of coming before it. Same results and the same cache rules: a hash is
 * remembered only when the file's device, inode, size and times did not change while it was read.
 */
export function hashFilesInBackground(files: string[], what = 'file',
  opts: { minWorkerBytes?: number } = {}): BackgroundHashes
{
  // Smaller files are hashed right here: starting a thread would cost more than it saves.
  const minWorker = opts.minWorkerBytes ?? WORKER_MIN_BYTES;
  let cancelled = false;
  let current: import('node:worker_threads').Worker | null = null;
  const hashOne = async (file: string): Promise<FileHash> => {
    const cacheFile = hashCacheFile();
    let real: string;
    let st: BigIntStats;
    try {
      real = realpathSync(file);
      st = statSync(real, { bigint: true });
    } catch {
      return sha256Stream(file, undefined, what); // reports the problem
    }
    if (cacheFile && st.isFile()) {
      const hit = loadCache(cacheFile)[real];
      if (hit && hit.key === statKey(st) && /^[0-9a-f]{64}$/.test(hit.sha256))
        return { sha256: hit.sha256, bytes: hit.bytes };
    }
    if (cancelled) throw new Error('hashing cancelled');
    if (st.size < BigInt(minWorker)) {
      const h = sha256Stream(real, undefined, what);
      if (st.isFile()) rememberFileHash(real, h, st);
      return h;
    }
    const got = await new Promise<FileHash>((resolve, reject) => {
      const w = startWorker(new URL('./hash.worker.js', import.meta.url), { workerData: { file: real, what } });
      current = w;
      w.once('message', (msg: { hash?: FileHash; error?: { message: string; lobes: boolean; exitCode: number } }) => {
        if (msg.hash) resolve(msg.hash);
        else
          reject(
            msg.error!.lobes
              ? new LobesError(msg.error!.message, { exitCode: msg.error!.exitCode })
              : new Error(msg.error!.message),
          );
      });
      w.once('error', reject);
      w.once('exit', (code) => reject(new Error(`the hashing thread exited with code ${code}`)));
    }).finally(() => {
      const w = current;
      current = null;
      void w?.terminate();
    });
    if (st.isFile()) rememberFileHash(real, got, st);
    return got;
  };
  const done = (async () => {
    const out: FileHash[] = [];
    for (const f of files) out.push(await hashOne(f));
    return out;
  })();
  return {
    done,
    async cancel() {
      cancelled = true;
      done.catch(() => {});
      const w = current as import('node:worker_threads').Worker | null;
      if (w) await w.terminate();
    },
  };
}
