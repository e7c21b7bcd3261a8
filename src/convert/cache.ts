/**
 * `--model FILE.gguf` anywhere a model folder is expected: the GGUF is converted once into a
 * cache and the converted folder is used from then on.
 *
 * Where: `--cache DIR` (the folder that holds converted models), else `$LOBES_CACHE/gguf`, else
 * `$XDG_CACHE_HOME/lobes/gguf`, else `~/.cache/lobes/gguf`. One entry per GGUF and options,
 * named `<file stem>-<key>`, where key is the first 16 hex digits of sha256 over the converter
 * and writer versions, the file's size, mtime and the sha256 of its header, metadata and tensor
 * infos (every byte before the weights), and the conversion options. A changed, replaced or
 * touched file gets a new entry.
 *
 * Identity: the sha256 of the whole GGUF (hashed once per machine through the file-hash cache,
 * src/store/filehash.ts) with the options that change numbers (dtype, resolved weight storage)
 * is the model's identity (model.source.identity), the same for every layout: an eval (genai
 * layout) and an attend (explicit layout) of one GGUF are runs of one model.
 *
 * Safety: an entry is built in a private folder (`.build-<pid>-<random>-<host>/`) and renamed
 * into place complete, with `lobes-cache.json` recording its key and the size and sha256 of
 * every file. On every use the files are checked against that record (sizes, then hashes
 * through the file-hash cache: a file whose device, inode, size, modification and change times
 * are unchanged is not read again; what that trusts is in docs/gguf.md); an entry whose record
 * is missing, of another key, or whose files differ is never used: it is set aside and rebuilt,
 * with a line saying why. Concurrent processes (shards on one node) serialise on `<entry>.lock`
 * (src/util/lock.ts: pid, host and process start time; a dead holder's lock is removed, and a
 * wait ends at a timeout with a line naming the lock file). A GGUF that changes while it is
 * converted is refused (src/convert/guard.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync,
  statSync } from 'node:fs';
import { hostname, homedir } from 'node:os';
import * as path from 'node:path';
import { fsyncDir, makeDirs } from '../util/io.js';
import { opt } from '../util/errors.js';
import { acquireLock, pidAlive } from '../util/lock.js';
import { hashFileCached } from '../store/filehash.js';
import { folderProblem, hashFolder, rememberFolder, type RecordedFile } from './folder-hash.js';
import { WRITER_VERSION } from './llama-onnx/index.js';
import { readGgufHeader } from '../formats/gguf.js';
import type { ModelSourceRecord } from '../store/types.js';
import { openGgufLlama } from './gguf-llama.js';
import { CONVERTER_VERSION, CONVERT_RECORD, convertGguf, convertHfCheckpoint, ggufIdentity, hfIdentity,
  resolveConvertOptions, type ConvertOptions, type ConvertResult, type GgufIdentity,
  type HfIdentity } from './convert.js';
import { isHfCheckpoint, openHfCheckpoint } from './hf-checkpoint.js';

/** The cache folder, as a failure to create it names it. */
const CACHE_FOLDER = { what: 'cache folder', hint: `pass ${opt('cache', 'DIR')}, or set LOBES_CACHE` };
import { modelFilesDigest } from '../store/lineage.js';
import { readJsonFile, writeJsonAtomic } from '../store/json.js';
import { jobIO, type JobIOOptions } from '../util/jobio.js';

/** Where a run's model came from when it was given as a GGUF (recorded in the run manifest as model.source). */
export type ModelSource = ModelSourceRecord;

/** Its IO (`io.log`: the waiting and converting messages, default stderr lines) and the deprecated `log`, `quiet` (src/util/jobio.ts). */
export interface ResolveModelOptions extends Pick<ConvertOptions, 'dtype' | 'weights' | 'layout'>, JobIOOptions {
  /** Folder of converted models (default: see `defaultCacheDir`). */
  cache?: string;
  /** Conversion progress (bytes written, total). */
  onProgress?: ConvertOptions['onProgress'];
  /** Progress of hashing the GGUF the first time it is seen (bytes read, total). */
  onHash?: (done: number, total: number) => void;
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
    .update(
      JSON.stringify({ converter: CONVERTER_VERSION, writer: WRITER_VERSION, size: id.size, mtimeMs: id.mtimeMs,
        header: id.headerSha256, dtype: opts.dtype, weights: opts.weights, layout: opts.layout }),
    )
    .digest('hex')
    .slice(0, 16);
  const stem = path.basename(id.path).replace(/\.gguf$/i, '').replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 48) || 'model';
  return `${stem}-${key}`;
}

/** The cache's own record in an entry: key, and size and sha256 of every file (written last, inside the build folder). */
const CACHE_RECORD = 'lobes-cache.json';
/** Version of the record's format: entries of another version are rebuilt. */
const CACHE_RECORD_VERSION = 2;

/**
 * Why `dir` is not a usable entry for `entry`, or null when it is: the record must be there,
 * of this key, and every file must be there with the size and the sha256 recorded when it was
 * written (hashes through the machine's file-hash cache, src/store/filehash.ts: a file unchanged
 * in device, inode, size, modification and status-change time is not read again).
 */
export function entryProblem(dir: string, entry: string): string | null {
  // undefined: no file, or not JSON (a file holding null is read as null)
  const rec = readJsonFile(path.join(dir, CACHE_RECORD), { fallback: undefined });
  if (rec === undefined) return existsSync(dir) ? `no readable ${CACHE_RECORD}` : 'absent';
  if (rec?.entry !== entry) return `${CACHE_RECORD} is of another entry`;
  if (rec.version !== CACHE_RECORD_VERSION || !rec.files || typeof rec.files !== 'object')
    return `${CACHE_RECORD} is of an older lobes`;
  return folderProblem(dir, rec.files as Record<string, RecordedFile>, CACHE_RECORD, 'converted model file');
}

/** Whether `dir` is a complete, unaltered entry for `entry` (see `entryProblem`). */
export function validEntry(dir: string, entry: string): boolean {
  try {
    return entryProblem(dir, entry) === null;
  } catch {
    return false;
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

/** The resolved --weights of an entry (from its lobes-convert.json), or the requested one. */
function resolvedWeights(dir: string, requested: string): string {
  const w = readJsonFile(path.join(dir, CONVERT_RECORD), { fallback: null })?.options?.weights;
  return typeof w === 'string' ? w : requested;
}

/**
 * One identity of a GGUF model for every command, whichever graph layout it needs: the
 * sha256 of the whole GGUF file with the options that change numbers (compute dtype and the
 * weight storage as resolved), not the layout. `lobes eval` (genai layout) and `lobes attend`
 * (explicit layout) of one GGUF record the same identity.
 */
export function sourceIdentity(ggufSha256: string, dtype: string, weights: string): string {
  return createHash('sha256').update(JSON.stringify({ gguf: ggufSha256, dtype, weights })).digest('hex');
}

/** Whether two recorded model sources are the same model (same GGUF content and numeric options). */
export function sameSourceModel(a: ModelSource | null | undefined, b: ModelSource | null | undefined): boolean {
  return !!a?.identity && !!b?.identity && a.identity === b.identity;
}

/**
 * The model folder for `p`: the cached conversion of a GGUF file or of a Hugging Face
 * checkpoint folder (config.json with safetensors weights, no ONNX graph; resolveCheckpoint),
 * converting when there is none; else `p` itself. `lobes extract`, `inspect`, `wanda`, `demo`, `eval` and
 * `attend` call this on their --model argument.
 */
export async function resolveModel(p: string, opts: ResolveModelOptions = {}): Promise<ResolvedModel> {
  if (isHfCheckpoint(p)) return resolveCheckpoint(p, opts);
  // A path named .gguf that is not a folder goes on to the GGUF reader, whose error says what is
  // wrong (not a GGUF, a FIFO, a device).
  if (!isGgufFile(p) && !(/\.gguf$/i.test(p) && existsSync(p) && !statSync(p).isDirectory()))
    return { dir: p, source: null, converted: null };
  const log = jobIO(opts).log;
  const o = resolveConvertOptions(opts);
  // Everything the conversion can check without reading the weights is checked before the
  // cache is touched (header, architecture, hyperparameters, tensor names, shapes and types).
  const check = openGgufLlama(p);
  check.close();
  const id = ggufIdentity(p, check.gguf.dataStart);
  const root = path.resolve(opts.cache ?? defaultCacheDir());
  makeDirs(root, CACHE_FOLDER);
  const entry = cacheEntryName(id, o);
  const dir = path.join(root, entry);
  const sha256 = hashFileCached(p, { what: 'GGUF file', onBytes: opts.onHash }).sha256;
  const sourceOf = (): ModelSource => ({ format: 'gguf', ...id, sha256,
    identity: sourceIdentity(sha256, o.dtype, resolvedWeights(dir, o.weights)), converted: dir,
    options: { dtype: o.dtype, weights: o.weights, layout: o.layout } });
  const problem = entryProblem(dir, entry);
  if (problem === null) return { dir, source: sourceOf(), converted: null };
  if (problem !== 'absent') log(`cache entry ${dir} is not used: ${problem}; converting again`);

  return buildEntry(root, dir, entry, id, path.basename(p), log, sourceOf,
    (target) =>
      convertGguf(p, target, { dtype: o.dtype, weights: o.weights, layout: o.layout, onProgress: opts.onProgress }),
    `converting ${p} to ONNX (once) into ${dir}`);
}

/**
 * Build (or wait for another process building) the cache entry `dir` with `convert`, under the
 * entry's lock: set aside an invalid one, build in a private folder, record every file's hash,
 * rename into place.
 */
async function buildEntry(
  root: string,
  dir: string,
  entry: string,
  id: unknown,
  label: string,
  log: (line: string) => void,
  sourceOf: () => ModelSource,
  convert: (target: string) => Promise<ConvertResult>,
  saying: string,
): Promise<ResolvedModel> {
  const lock = await acquireLock(`${dir}.lock`, {
    purpose: `converting ${label}`,
    onWait: (h) => log(`waiting for another lobes process (pid ${h.pid} on ${h.host}) converting ${label} into ${dir}`),
    until: () => validEntry(dir, entry),
  });
  if (!lock) return { dir, source: sourceOf(), converted: null };
  try {
    if (validEntry(dir, entry)) return { dir, source: sourceOf(), converted: null };
    cleanDeadBuilds(root);
    if (existsSync(dir)) {
      // Not a valid entry (interrupted, altered, or from a lobes that wrote another record): set aside.
      const stale = path.join(root, `.stale-${entry}-${process.pid}-${randomBytes(4).toString('hex')}`);
      renameSync(dir, stale);
      rmSync(stale, { recursive: true, force: true });
    }
    const build = path.join(root,
      `.build-${process.pid}-${randomBytes(4).toString('hex')}-${hostname().replace(/[^A-Za-z0-9._-]+/g, '_')}`);
    mkdirSync(build);
    try {
      log(saying);
      const target = path.join(build, 'model');
      const res = await convert(target);
      const hashed = hashFolder(target, CACHE_RECORD, 'converted model file');
      writeJsonAtomic(path.join(target, CACHE_RECORD), { entry, version: CACHE_RECORD_VERSION,
        createdAt: new Date().toISOString(), source: id, files: hashed.files }, 2);
      renameSync(target, dir);
      fsyncDir(root);
      // The files were hashed in the build folder; the hash cache learns them at their place.
      rememberFolder(dir, hashed);
      return { dir, source: sourceOf(), converted: { ...res, dir } };
    } finally {
      rmSync(build, { recursive: true, force: true });
    }
  } finally {
    lock.release();
  }
}

/** Cache entry name of a Hugging Face checkpoint identity and options. */
export function checkpointEntryName(id: HfIdentity, opts: { dtype: string; weights: string; layout: string }): string {
  const key = createHash('sha256')
    .update(
      JSON.stringify({ converter: CONVERTER_VERSION, writer: WRITER_VERSION, format: 'hf-checkpoint', size: id.size,
        mtimeMs: id.mtimeMs, header: id.headerSha256, files: id.files, dtype: opts.dtype, weights: opts.weights,
        layout: opts.layout }),
    )
    .digest('hex')
    .slice(0, 16);
  const stem = path.basename(id.path).replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 48) || 'model';
  return `${stem}-hf-${key}`;
}

/**
 * The cached conversion of a Hugging Face checkpoint folder (converting it when there is none).
 * Its identity is the sha256 of every file read (config.json, the index, the shards, the
 * tokenizer files) by name (src/store/lineage.ts modelFilesDigest) with the dtype and weight
 * storage, recorded with the files themselves in model.source.
 */
export async function resolveCheckpoint(p: string, opts: ResolveModelOptions = {}): Promise<ResolvedModel> {
  const log = jobIO(opts).log;
  const o = resolveConvertOptions(opts);
  const ck = openHfCheckpoint(p);
  const id = hfIdentity(ck);
  const root = path.resolve(opts.cache ?? defaultCacheDir());
  makeDirs(root, CACHE_FOLDER);
  const entry = checkpointEntryName(id, o);
  const dir = path.join(root, entry);
  const total = id.size;
  let before = 0;
  const files = ck.files.map((f) => {
    const sha256 =
      hashFileCached(f.path, { what: 'checkpoint file',
        onBytes: opts.onHash ? (d) => opts.onHash!(before + d, total) : undefined }).sha256;
    before += f.bytes;
    return { name: f.name, bytes: f.bytes, role: f.role, sha256 };
  });
  const sha256 = modelFilesDigest(files);
  const sourceOf = (): ModelSource => ({
    format: 'hf-checkpoint',
    path: id.path,
    size: id.size,
    mtimeMs: id.mtimeMs,
    headerSha256: id.headerSha256,
    sha256,
    files,
    identity: sourceIdentity(sha256, o.dtype, resolvedWeights(dir, o.weights)),
    converted: dir,
    options: { dtype: o.dtype, weights: o.weights, layout: o.layout },
  });
  const problem = entryProblem(dir, entry);
  if (problem === null) return { dir, source: sourceOf(), converted: null };
  if (problem !== 'absent') log(`cache entry ${dir} is not used: ${problem}; converting again`);
  return buildEntry(root, dir, entry, id, path.basename(id.path), log, sourceOf,
    (target) =>
      convertHfCheckpoint(id.path, target, { dtype: o.dtype, weights: o.weights, layout: o.layout,
        onProgress: opts.onProgress }), `converting the ${ck.family} checkpoint ${p} to ONNX (once) into ${dir}`);
}

/**
 * The GGUF a converted folder came from, from its lobes-convert.json, when that file still is
 * the same GGUF (size, mtime and header hash); else null.
 */
export function sourceGgufOf(dir: string): GgufIdentity | null {
  try {
    const s = readJsonFile(path.join(dir, CONVERT_RECORD), { fallback: null })?.source;
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
