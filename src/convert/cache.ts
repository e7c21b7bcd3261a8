/**
 * `--model FILE.gguf` anywhere a model folder is expected: the GGUF is converted once into a
 * cache and the converted folder is used from then on.
 *
 * Where: `--cache DIR` (the folder that holds converted models), else `$LOBES_CACHE/gguf`, else
 * `$XDG_CACHE_HOME/lobes/gguf`, else `~/.cache/lobes/gguf`. One entry per GGUF and options,
 * named `<file stem>-<key>`, where key is the first 16 hex digits of sha256 over the converter
 * and writer versions, the file's size, mtime and the sha256 of its header, metadata and tensor
 * infos (every byte before the weights), and the conversion options. A changed, replaced or
 * touched file gets a new entry; the weights themselves are never hashed (gigabytes).
 *
 * Safety: an entry is built in a private folder (`.build-<pid>-<random>/`) and renamed into
 * place complete, with `lobes-convert.json` recording its key and the size of every file; an
 * entry whose record is missing, of another key, or whose files have other sizes is never used
 * (it is moved aside and rebuilt). Concurrent processes (shards on one node) serialise on
 * `<entry>.lock` (created exclusively, holding pid and host): the first converts, the others
 * wait and then use its entry. A lock or build folder left by a process that died on this host
 * is removed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname, homedir } from 'node:os';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { fsyncDir, writeFileAtomicSync } from '../util/io.js';
import { WRITER_VERSION } from './llama-onnx/index.js';
import { readGgufHeader } from '../formats/gguf.js';
import type { ModelSourceRecord } from '../store/types.js';
import { openGgufLlama } from './gguf-llama.js';
import { CONVERTER_VERSION, CONVERT_RECORD, convertGguf, ggufIdentity, resolveConvertOptions, type ConvertOptions, type ConvertResult, type GgufIdentity } from './convert.js';

/** Where a run's model came from when it was given as a GGUF (recorded in the run manifest as model.source). */
export type ModelSource = ModelSourceRecord;

export interface ResolveModelOptions extends Pick<ConvertOptions, 'dtype' | 'weights' | 'layout'> {
  /** Folder of converted models (default: see `defaultCacheDir`). */
  cache?: string;
  /** Progress and waiting messages (default: stderr lines). */
  log?: (line: string) => void;
  /** Conversion progress (bytes written, total). */
  onProgress?: ConvertOptions['onProgress'];
}

export interface ResolvedModel {
  /** The model folder to load. */
  dir: string;
  /** Set when `p` was a GGUF. */
  source: ModelSource | null;
  /** The conversion this call did (null: cached, or not a GGUF). */
  converted: ConvertResult | null;
}

/** Whether `p` is a regular file starting with the GGUF magic (Ollama's blobs have no extension). */
export function isGgufFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    const fd = openSync(p, 'r');
    try {
      const b = Buffer.alloc(4);
      const n = readSync(fd, b);
      return n === 4 && b.toString('latin1') === 'GGUF';
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** The default folder of converted GGUF models. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LOBES_CACHE) return path.join(env.LOBES_CACHE, 'gguf');
  const base = env.XDG_CACHE_HOME || path.join(homedir(), '.cache');
  return path.join(base, 'lobes', 'gguf');
}

/** Cache entry name of a GGUF identity and options. */
export function cacheEntryName(id: GgufIdentity, opts: { dtype: string; weights: string; layout: string }): string {
  const key = createHash('sha256')
    .update(JSON.stringify({ converter: CONVERTER_VERSION, writer: WRITER_VERSION, size: id.size, mtimeMs: id.mtimeMs, header: id.headerSha256, dtype: opts.dtype, weights: opts.weights, layout: opts.layout }))
    .digest('hex')
    .slice(0, 16);
  const stem = path.basename(id.path).replace(/\.gguf$/i, '').replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 48) || 'model';
  return `${stem}-${key}`;
}

/** Sizes of the files of a folder (the record itself excluded). */
function fileSizes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of readdirSync(dir).sort()) if (f !== CACHE_RECORD) out[f] = statSync(path.join(dir, f)).size;
  return out;
}

/** The cache's own record in an entry: key and file sizes (written last, inside the build folder). */
const CACHE_RECORD = 'lobes-cache.json';

/** Whether `dir` is a complete entry for `entry` (record present, same key, same files and sizes). */
export function validEntry(dir: string, entry: string): boolean {
  try {
    const rec = JSON.parse(readFileSync(path.join(dir, CACHE_RECORD), 'utf8'));
    if (rec?.entry !== entry || typeof rec.files !== 'object') return false;
    const now = fileSizes(dir);
    const want = rec.files as Record<string, number>;
    if (Object.keys(now).length !== Object.keys(want).length) return false;
    return Object.entries(want).every(([f, n]) => now[f] === n);
  } catch {
    return false;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === 'EPERM';
  }
}

/** Take `<entry>.lock`, or return the holder when another live process has it. */
function tryLock(lock: string): { pid: number; host: string } | null {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lock, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() }));
      closeSync(fd);
      return null;
    } catch (e: any) {
      if (e?.code !== 'EEXIST') throw new LobesError(`cannot create the cache lock (${e?.code ?? e?.message})`, { file: lock, hint: 'check that the cache folder is writable, or pass --cache DIR' });
    }
    let holder: { pid: number; host: string } | null = null;
    try {
      holder = JSON.parse(readFileSync(lock, 'utf8'));
    } catch {
      // Being written right now, or empty after a crash between create and write.
      if (Date.now() - statMs(lock) < 5000) return { pid: 0, host: '?' };
    }
    if (holder && (holder.host !== hostname() || pidAlive(holder.pid))) return holder;
    rmSync(lock, { force: true }); // left by a dead process on this host
  }
  return { pid: 0, host: '?' };
}

function statMs(p: string): number {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return 0;
  }
}

/** Remove build folders of processes that died on this host. */
function cleanDeadBuilds(root: string): void {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const n of names) {
    const m = /^\.build-(\d+)-([0-9a-f]+)-(.+)$/.exec(n);
    if (!m || m[3] !== hostname().replace(/[^A-Za-z0-9._-]+/g, '_')) continue;
    if (!pidAlive(Number(m[1]))) rmSync(path.join(root, n), { recursive: true, force: true });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The model folder for `p`: `p` itself when it is not a GGUF file, else the cached conversion
 * of it (converting when there is none). `lobes extract`, `inspect`, `wanda`, `demo`, `eval` and
 * `attend` call this on their --model argument.
 */
export async function resolveModel(p: string, opts: ResolveModelOptions = {}): Promise<ResolvedModel> {
  // A file named .gguf that is not one goes on to the GGUF reader, whose error says what is wrong.
  if (!isGgufFile(p) && !(/\.gguf$/i.test(p) && existsSync(p) && statSync(p).isFile())) return { dir: p, source: null, converted: null };
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  const o = resolveConvertOptions(opts);
  // Everything the conversion can check without reading the weights is checked before the
  // cache is touched (header, architecture, hyperparameters, tensor names, shapes and types).
  const check = openGgufLlama(p);
  check.close();
  const id = ggufIdentity(p, check.gguf.dataStart);
  const root = path.resolve(opts.cache ?? defaultCacheDir());
  try {
    mkdirSync(root, { recursive: true });
  } catch (e: any) {
    throw new LobesError(`cannot create the cache folder (${e?.code ?? e?.message})`, { file: root, hint: 'pass --cache DIR, or set LOBES_CACHE' });
  }
  const entry = cacheEntryName(id, o);
  const dir = path.join(root, entry);
  const source: ModelSource = { format: 'gguf', ...id, converted: dir, options: { dtype: o.dtype, weights: o.weights, layout: o.layout } };
  if (validEntry(dir, entry)) return { dir, source, converted: null };

  const lock = `${dir}.lock`;
  let waited = false;
  for (;;) {
    const holder = tryLock(lock);
    if (!holder) break;
    if (!waited) log(`waiting for another lobes process (pid ${holder.pid} on ${holder.host}) converting ${path.basename(p)} into ${dir}`);
    waited = true;
    await sleep(500);
    if (validEntry(dir, entry)) return { dir, source, converted: null };
  }
  try {
    if (validEntry(dir, entry)) return { dir, source, converted: null };
    cleanDeadBuilds(root);
    if (existsSync(dir)) {
      // Not a valid entry (interrupted by hand, edited, or from a lobes that wrote no record): set aside.
      const stale = path.join(root, `.stale-${entry}-${process.pid}-${randomBytes(4).toString('hex')}`);
      renameSync(dir, stale);
      rmSync(stale, { recursive: true, force: true });
    }
    const build = path.join(root, `.build-${process.pid}-${randomBytes(4).toString('hex')}-${hostname().replace(/[^A-Za-z0-9._-]+/g, '_')}`);
    mkdirSync(build);
    try {
      log(`converting ${p} to ONNX (once) into ${dir}`);
      const target = path.join(build, 'model');
      const res = await convertGguf(p, target, { dtype: o.dtype, weights: o.weights, layout: o.layout, onProgress: opts.onProgress });
      writeFileAtomicSync(path.join(target, CACHE_RECORD), JSON.stringify({ entry, createdAt: new Date().toISOString(), source: id, files: fileSizes(target) }, null, 2) + '\n');
      renameSync(target, dir);
      fsyncDir(root);
      return { dir, source, converted: { ...res, dir } };
    } finally {
      rmSync(build, { recursive: true, force: true });
    }
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * The GGUF a converted folder came from, from its lobes-convert.json, when that file still is
 * the same GGUF (size, mtime and header hash); else null.
 */
export function sourceGgufOf(dir: string): GgufIdentity | null {
  try {
    const rec = JSON.parse(readFileSync(path.join(dir, CONVERT_RECORD), 'utf8'));
    const s = rec?.source;
    if (!s || typeof s.path !== 'string') return null;
    return sameGguf(s) ? { path: s.path, size: s.size, mtimeMs: s.mtimeMs, headerSha256: s.headerSha256 } : null;
  } catch {
    return null;
  }
}

/** Whether the file at id.path is still the GGUF `id` describes. */
export function sameGguf(id: GgufIdentity): boolean {
  try {
    const st = statSync(id.path);
    if (st.size !== id.size || st.mtimeMs !== id.mtimeMs || !isGgufFile(id.path)) return false;
    return ggufIdentity(id.path, readGgufHeader(id.path).dataStart).headerSha256 === id.headerSha256;
  } catch {
    return false;
  }
}
