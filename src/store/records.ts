/**
 * Record chunks: the part of a job folder that holds JSON-lines results (an evaluation's
 * records and episodes, attend's items), written chunk by chunk so a job survives a crash.
 *
 *   DIR/records/index.json                    complete chunks: units [c*K, (c+1)*K), each stream's file with size and sha256
 *   DIR/records/chunk-NNNNNN.jsonl            the first stream's lines of chunk c
 *   DIR/records/chunk-NNNNNN.<stream>.jsonl   another stream's lines of chunk c
 *   DIR/<stream>.jsonl                        when complete: the chunks joined in order (verified while joining)
 *
 * Durability follows the run store: per chunk its files (tmp + fsync + rename), then the index
 * that lists them. A crash at any point leaves a folder that the same command resumes,
 * evaluating again any chunk whose files are missing or do not hash to the index. Chunk
 * geometry and shard ranges are the run store's (src/store/layout.ts). Joined files are read
 * back only through readVerifiedJsonl, against the sha256 the job's manifest recorded.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { cleanTempFiles, writeFileAtomicSync } from '../util/io.js';
import { sha256File, type ChunkFile } from './chunks.js';
import { readJsonFile, writeJsonAtomic } from './json.js';

export const CHUNKS_DIR = 'records';
export const CHUNK_INDEX = 'records/index.json';
export const RECORDS_FORMAT_VERSION = 1;

/** One complete chunk: its units and, per stream, its file. */
export interface RecordChunkEntry {
  chunk: number;
  /** First unit (dataset order). */
  start: number;
  units: number;
  /** Stream name -> file (the index stores them as top-level keys: `records`, `episodes`, …). */
  [stream: string]: ChunkFile | number;
}

export interface RecordChunkIndex {
  /** e.g. 'lobes-eval-chunks', 'lobes-attend-chunks'. */
  format: string;
  formatVersion: number;
  chunkUnits: number;
  chunks: RecordChunkEntry[];
}

/** What a job's record chunks hold: the index format name and its streams (the first is always written). */
export interface RecordLayout {
  format: string;
  streams: readonly string[];
}

/** Relative path (from DIR/records) of a chunk's file of one stream. */
export function chunkFileName(chunk: number, stream: string, layout: RecordLayout): string {
  return `chunk-${String(chunk).padStart(6, '0')}${stream === layout.streams[0] ? '' : `.${stream}`}.jsonl`;
}

/** The JSONL text of rows (one per line; equal rows are equal bytes). */
export function jsonl(rows: readonly object[]): string {
  let s = '';
  for (const r of rows) s += JSON.stringify(r) + '\n';
  return s;
}

function fileEntry(rel: string, text: string): { bytes: Buffer; file: ChunkFile } {
  const bytes = Buffer.from(text, 'utf8');
  return { bytes,
    file: { path: rel, bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') } };
}

const fileOf = (e: RecordChunkEntry, stream: string): ChunkFile
  | undefined => (typeof e[stream] === 'object' ? (e[stream] as ChunkFile) : undefined);

function readIndex(dir: string, layout: RecordLayout): RecordChunkIndex {
  const file = path.join(dir, CHUNK_INDEX);
  const idx: RecordChunkIndex = readJsonFile(file, {
    unreadable: (
      e,
    ) => (e.code === 'ENOENT' ? 'record index is missing' : `record index is not valid JSON (${e.message})`),
    invalid: (msg) => `record index is not valid JSON (${msg})`,
    hint: 'delete the folder to start over',
  });
  if (!idx || idx.format !== layout.format || !Array.isArray(idx.chunks) || !(idx.chunkUnits > 0)) {
    throw new LobesError(`not a ${layout.format} index (format, chunkUnits or chunks missing)`, { file });
  }
  let prev = -1;
  for (const c of idx.chunks) {
    if (!Number.isInteger(c.chunk) || c.chunk <= prev || c.start !== c.chunk * idx.chunkUnits || !(c.units > 0) ||
      c.units > idx.chunkUnits || !fileOf(c, layout.streams[0]!))
    {
      throw new LobesError(
        `chunk entry ${JSON.stringify({ chunk: c.chunk, start: c.start, units: c.units })} is inconsistent`,
        { file },
      );
    }
    prev = c.chunk;
  }
  return idx;
}

/** Problems of one listed file (size and sha256), or null. */
function checkFile(dir: string, f: ChunkFile): string | null {
  const file = path.join(dir, CHUNKS_DIR, f.path);
  if (!existsSync(file)) return `${file}: record chunk is missing`;
  const got = sha256File(file);
  if (got.bytes !== f.bytes)
    return `${file}: record chunk has ${got.bytes} bytes, the index records ${f.bytes} (truncated or overwritten)`;
  if (got.sha256 !== f.sha256) return `${file}: record chunk is corrupted (sha256 does not match the index)`;
  return null;
}

/** Writes record chunks and keeps the index current; joins them when the job is complete. */
export class RecordChunks {
  private readonly done = new Set<number>();

  private constructor(
    readonly dir: string,
    readonly layout: RecordLayout,
    readonly index: RecordChunkIndex,
  ) {
    for (const c of index.chunks) this.done.add(c.chunk);
  }

  /** Start an empty index. */
  static create(dir: string, layout: RecordLayout, chunkUnits: number): RecordChunks {
    mkdirSync(path.join(dir, CHUNKS_DIR), { recursive: true });
    const idx: RecordChunkIndex = { format: layout.format, formatVersion: RECORDS_FORMAT_VERSION, chunkUnits,
      chunks: [] };
    writeJsonAtomic(path.join(dir, CHUNK_INDEX), idx);
    return new RecordChunks(dir, layout, idx);
  }

  /**
   * Reopen an index (resume), or start one. Every listed chunk's files are hashed; bad chunks
   * are dropped from the index so that they are computed again, and reported.
   */
  static async resume(dir: string, layout: RecordLayout,
    chunkUnits: number): Promise<{ writer: RecordChunks; dropped: string[] }>
  {
    // A kill during an atomic write (the manifest, the index) leaves its temporary file here.
    await cleanTempFiles(dir);
    if (!existsSync(path.join(dir, CHUNK_INDEX)))
      return { writer: RecordChunks.create(dir, layout, chunkUnits), dropped: [] };
    const idx = readIndex(dir, layout);
    if (idx.chunkUnits !== chunkUnits)
      throw new LobesError(`record index has ${idx.chunkUnits} units per chunk, this command ${chunkUnits}`, {
        file: path.join(dir, CHUNK_INDEX),
        hint: `use the same ${opt('chunkUnits')}, or a new ${opt('out')}`,
      });
    await cleanTempFiles(path.join(dir, CHUNKS_DIR));
    const dropped: string[] = [];
    const keep: RecordChunkEntry[] = [];
    for (const c of idx.chunks) {
      let p: string | null = null;
      for (const s of layout.streams) {
        const f = fileOf(c, s);
        if (f) p ??= checkFile(dir, f);
      }
      if (p) dropped.push(p);
      else keep.push(c);
    }
    if (dropped.length) {
      idx.chunks = keep;
      writeJsonAtomic(path.join(dir, CHUNK_INDEX), idx);
    }
    return { writer: new RecordChunks(dir, layout, idx), dropped };
  }

  has(chunk: number): boolean {
    return this.done.has(chunk);
  }

  /** Write one chunk's rows per stream (streams absent from `rows` get no file), then list it in the index. */
  write(chunk: number, start: number, units: number, rows: Record<string, readonly object[] | null>): RecordChunkEntry {
    const entry: RecordChunkEntry = { chunk, start, units };
    for (const s of this.layout.streams) {
      const r = rows[s];
      if (!r) {
        if (s === this.layout.streams[0]) throw new LobesError(`chunk ${chunk}: no ${s} to write`);
        continue;
      }
      const f = fileEntry(chunkFileName(chunk, s, this.layout), jsonl(r));
      writeFileAtomicSync(path.join(this.dir, CHUNKS_DIR, f.file.path), f.bytes);
      entry[s] = f.file;
    }
    this.index.chunks = [...this.index.chunks.filter((c) => c.chunk !== chunk), entry].sort((a, b) =>
      a.chunk - b.chunk
    );
    writeJsonAtomic(path.join(this.dir, CHUNK_INDEX), this.index);
    this.done.add(chunk);
    return entry;
  }

  /**
   * Join the chunks [chunkStart, chunkEnd) of each stream in `streams` into DIR/<stream>.jsonl,
   * written atomically and verified against the index while copying; returns each file.
   */
  join(chunkStart: number, chunkEnd: number, streams: readonly string[]): Record<string, ChunkFile> {
    const byChunk = new Map(this.index.chunks.map((c) => [c.chunk, c]));
    const out: Record<string, ChunkFile> = {};
    for (const s of streams) {
      const files: ChunkFile[] = [];
      for (let c = chunkStart; c < chunkEnd; c++) {
        const e = byChunk.get(c);
        if (!e) throw new LobesError(`chunk ${c} is not complete`, { file: path.join(this.dir, CHUNK_INDEX) });
        const f = fileOf(e, s);
        if (!f) throw new LobesError(`chunk ${c} has no ${s} file`, { file: path.join(this.dir, CHUNK_INDEX) });
        files.push(f);
      }
      out[s] = concatAtomic(path.join(this.dir, `${s}.jsonl`),
        files.map((f) => path.join(this.dir, CHUNKS_DIR, f.path)), files);
    }
    return out;
  }

  /** Remove the chunk folder once the joined files are durable and recorded. */
  dropChunks(): void {
    rmSync(path.join(this.dir, CHUNKS_DIR), { recursive: true, force: true });
  }
}

/**
 * Write the concatenation of `sources` to `target` atomically (temporary sibling, fsync,
 * rename: writeFileAtomicSync), each source checked against its expected size and sha256 first.
 */
export function concatAtomic(target: string, sources: string[], expected?: ChunkFile[]): ChunkFile {
  const total = createHash('sha256');
  let bytes = 0;
  // Every source is read and checked before anything is written (writeFileAtomicSync).
  const parts = sources.map((src, i) => {
    const buf = readFileSync(src);
    const want = expected?.[i];
    if (want && (buf.byteLength !== want.bytes || createHash('sha256').update(buf).digest('hex') !== want.sha256)) {
      throw new LobesError('record chunk changed since it was written (size or sha256 differ from the index)', {
        file: src,
        hint: 'rerun the same command to compute it again',
      });
    }
    total.update(buf);
    bytes += buf.byteLength;
    return buf;
  });
  writeFileAtomicSync(target, parts);
  return { path: path.basename(target), bytes, sha256: total.digest('hex') };
}

/** Parse JSON-lines text; a bad line is an error naming the file and the line. */
export function parseJsonl<T>(text: string, file: string): T[] {
  const out: T[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (!l.trim()) continue;
    try {
      out.push(JSON.parse(l) as T);
    } catch (e: any) {
      throw new LobesError(`invalid JSON (${String(e.message).split('\n')[0]})`, { file, where: `line ${i + 1}` });
    }
  }
  return out;
}

/** Read a JSONL file without a recorded hash (inputs a user gives); a bad line is an error naming it. */
export function readJsonl<T>(file: string): T[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new LobesError(`cannot read (${e.code ?? e.message})`, { file });
  }
  return parseJsonl<T>(text, file);
}

/**
 * Read a job's joined JSONL output and check it against the size and sha256 its manifest
 * recorded, from the same bytes that are parsed: a file edited after the job finished (a
 * `correct` flipped by hand, a line removed) is refused, naming the manifest.
 */
export function readVerifiedJsonl<T>(dir: string, f: ChunkFile, manifestName: string): T[] {
  const file = path.join(dir, f.path);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e: any) {
    throw new LobesError(
      e.code === 'ENOENT' ? 'file of a complete job is missing' : `cannot read (${e.code ?? e.message})`,
      { file, hint: 'run the command again into a new folder' },
    );
  }
  if (bytes.byteLength !== f.bytes || createHash('sha256').update(bytes).digest('hex') !== f.sha256) {
    throw new LobesError(`was changed after it was written (size or sha256 differ from ${manifestName})`, { file,
      hint: 'restore it, or run the command again into a new folder' });
  }
  return parseJsonl<T>(bytes.toString('utf8'), file);
}

/**
 * Order the shards of one job by their first chunk and check they tile chunks [0, total)
 * exactly once: an overlap, a gap or a missing tail is a one-line error naming the shard
 * (`job` names the job in the hint, e.g. "the evaluation").
 */
export function tileShards<T extends { dir: string; layout: { chunkStart: number; chunkEnd: number } }>(shards: T[],
  total: number, job: string): T[]
{
  const sorted = [...shards].sort((x, y) => x.layout.chunkStart - y.layout.chunkStart);
  let next = 0;
  for (const s of sorted) {
    if (s.layout.chunkStart !== next) {
      throw new LobesError(
        s.layout.chunkStart < next
          ? `shards overlap: ${s.dir} starts at chunk ${s.layout.chunkStart}, before chunk ${next}`
          : `chunks ${next}..${s.layout.chunkStart - 1} are in no shard (next shard: ${s.dir})`,
      );
    }
    next = s.layout.chunkEnd;
  }
  if (next !== total)
    throw new LobesError(`chunks ${next}..${total - 1} of ${total} are in no shard`, {
      hint: `merge every shard of ${job}`,
    });
  return sorted;
}
