/**
 * The evaluation directory (docs/eval.md, "The evaluation directory"):
 *
 *   DIR/eval.json                 the manifest: settings, model and dataset identity, progress
 *   DIR/records/index.json        complete chunks (units [c*K, (c+1)*K)) with size and sha256
 *   DIR/records/chunk-NNNNNN.jsonl          that chunk's records, one per line
 *   DIR/records/chunk-NNNNNN.episodes.jsonl that chunk's GAE episodes (GAE only)
 *   DIR/records.jsonl, DIR/episodes.jsonl   when complete: the chunks joined in order
 *   DIR/summary.json              when complete: accuracies with CIs, position bias
 *
 * A unit is one IAE / multiple-choice item (one record) or one GAE world tree (one record
 * per decision, one episode). Durability follows the run store: eval.json first, then per
 * chunk its files (tmp + fsync + rename), then the index that lists them; a crash at any
 * point leaves a folder the same command resumes, skipping the listed chunks. Chunk
 * geometry and shard ranges are the run store's (src/store/layout.ts).
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { cleanTempFiles, fsyncDir, writeFileAtomicSync } from '../util/io.js';
import { sha256File, type ChunkFile } from '../store/chunks.js';
import type { EpisodeRecord, EvalRecord } from './types.js';

export const EVAL_MANIFEST = 'eval.json';
export const RECORDS = 'records.jsonl';
export const EPISODES = 'episodes.jsonl';
export const SUMMARY = 'summary.json';
export const CHUNKS_DIR = 'records';
export const CHUNK_INDEX = 'records/index.json';
export const EVAL_FORMAT_VERSION = 1;

/** One complete chunk of an evaluation. */
export interface EvalChunkEntry {
  chunk: number;
  /** First unit (dataset order). */
  start: number;
  units: number;
  records: ChunkFile;
  episodes?: ChunkFile;
}

export interface EvalChunkIndex {
  format: 'lobes-eval-chunks';
  formatVersion: number;
  chunkUnits: number;
  chunks: EvalChunkEntry[];
}

/** Relative path (from DIR/records) of a chunk's records or episodes file. */
export function chunkFileName(chunk: number, kind: 'records' | 'episodes'): string {
  return `chunk-${String(chunk).padStart(6, '0')}${kind === 'episodes' ? '.episodes' : ''}.jsonl`;
}

/** The JSONL text of records (one per line, keys in a fixed order so equal records are equal bytes). */
export function jsonl(rows: readonly object[]): string {
  let s = '';
  for (const r of rows) s += JSON.stringify(r) + '\n';
  return s;
}

function fileEntry(rel: string, text: string): { bytes: Buffer; file: ChunkFile } {
  const bytes = Buffer.from(text, 'utf8');
  return { bytes, file: { path: rel, bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') } };
}

function readIndex(dir: string): EvalChunkIndex {
  const file = path.join(dir, CHUNK_INDEX);
  let idx: EvalChunkIndex;
  try {
    idx = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e: any) {
    throw new LobesError(e.code === 'ENOENT' ? 'record index is missing' : `record index is not valid JSON (${e.message})`, { file, hint: 'delete the folder to start over' });
  }
  if (!idx || idx.format !== 'lobes-eval-chunks' || !Array.isArray(idx.chunks) || !(idx.chunkUnits > 0)) {
    throw new LobesError('not a lobes record index (format, chunkUnits or chunks missing)', { file });
  }
  let prev = -1;
  for (const c of idx.chunks) {
    if (!Number.isInteger(c.chunk) || c.chunk <= prev || c.start !== c.chunk * idx.chunkUnits || !(c.units > 0) || c.units > idx.chunkUnits || !c.records) {
      throw new LobesError(`chunk entry ${JSON.stringify({ chunk: c.chunk, start: c.start, units: c.units })} is inconsistent`, { file });
    }
    prev = c.chunk;
  }
  return idx;
}

/** Problems of one listed file (size always, sha256 when `full`), or null. */
function checkFile(dir: string, f: ChunkFile, full: boolean): string | null {
  const file = path.join(dir, CHUNKS_DIR, f.path);
  if (!existsSync(file)) return `${file}: record chunk is missing`;
  const got = sha256File(file);
  if (got.bytes !== f.bytes) return `${file}: record chunk has ${got.bytes} bytes, the index records ${f.bytes} (truncated or overwritten)`;
  if (full && got.sha256 !== f.sha256) return `${file}: record chunk is corrupted (sha256 does not match the index)`;
  return null;
}

/** Writes record chunks and keeps the index current; joins them when the evaluation is complete. */
export class RecordWriter {
  private readonly done = new Set<number>();

  private constructor(
    readonly dir: string,
    readonly index: EvalChunkIndex,
  ) {
    for (const c of index.chunks) this.done.add(c.chunk);
  }

  /** Start an empty index. */
  static create(dir: string, chunkUnits: number): RecordWriter {
    mkdirSync(path.join(dir, CHUNKS_DIR), { recursive: true });
    const idx: EvalChunkIndex = { format: 'lobes-eval-chunks', formatVersion: EVAL_FORMAT_VERSION, chunkUnits, chunks: [] };
    writeFileAtomicSync(path.join(dir, CHUNK_INDEX), JSON.stringify(idx) + '\n');
    return new RecordWriter(dir, idx);
  }

  /**
   * Reopen an index (resume): every listed chunk's files are checked (sha256); bad chunks
   * are dropped from the index so that they are evaluated again, and reported.
   */
  static async resume(dir: string, chunkUnits: number): Promise<{ writer: RecordWriter; dropped: string[] }> {
    // A kill during an atomic write (eval.json, the index) leaves its temporary file here.
    await cleanTempFiles(dir);
    if (!existsSync(path.join(dir, CHUNK_INDEX))) return { writer: RecordWriter.create(dir, chunkUnits), dropped: [] };
    const idx = readIndex(dir);
    if (idx.chunkUnits !== chunkUnits) throw new LobesError(`record index has ${idx.chunkUnits} units per chunk, this command ${chunkUnits}`, { file: path.join(dir, CHUNK_INDEX), hint: 'use the same --chunk-units, or a new --out' });
    await cleanTempFiles(path.join(dir, CHUNKS_DIR));
    const dropped: string[] = [];
    const keep: EvalChunkEntry[] = [];
    for (const c of idx.chunks) {
      const p = checkFile(dir, c.records, true) ?? (c.episodes ? checkFile(dir, c.episodes, true) : null);
      if (p) dropped.push(p);
      else keep.push(c);
    }
    if (dropped.length) {
      idx.chunks = keep;
      writeFileAtomicSync(path.join(dir, CHUNK_INDEX), JSON.stringify(idx) + '\n');
    }
    return { writer: new RecordWriter(dir, idx), dropped };
  }

  has(chunk: number): boolean {
    return this.done.has(chunk);
  }

  /** Write one chunk's records (and episodes), then list it in the index. */
  write(chunk: number, start: number, units: number, records: readonly EvalRecord[], episodes: readonly EpisodeRecord[] | null): EvalChunkEntry {
    const r = fileEntry(chunkFileName(chunk, 'records'), jsonl(records));
    writeFileAtomicSync(path.join(this.dir, CHUNKS_DIR, r.file.path), r.bytes);
    const entry: EvalChunkEntry = { chunk, start, units, records: r.file };
    if (episodes) {
      const e = fileEntry(chunkFileName(chunk, 'episodes'), jsonl(episodes));
      writeFileAtomicSync(path.join(this.dir, CHUNKS_DIR, e.file.path), e.bytes);
      entry.episodes = e.file;
    }
    this.index.chunks = [...this.index.chunks.filter((c) => c.chunk !== chunk), entry].sort((a, b) => a.chunk - b.chunk);
    writeFileAtomicSync(path.join(this.dir, CHUNK_INDEX), JSON.stringify(this.index) + '\n');
    this.done.add(chunk);
    return entry;
  }

  /**
   * Join the chunks [chunkStart, chunkEnd) into records.jsonl (and episodes.jsonl), each
   * written atomically; returns their sha256. Every chunk must be listed and intact.
   */
  join(chunkStart: number, chunkEnd: number, withEpisodes: boolean): { records: ChunkFile; episodes: ChunkFile | null } {
    const byChunk = new Map(this.index.chunks.map((c) => [c.chunk, c]));
    const files: ChunkFile[] = [];
    const eps: ChunkFile[] = [];
    for (let c = chunkStart; c < chunkEnd; c++) {
      const e = byChunk.get(c);
      if (!e) throw new LobesError(`chunk ${c} is not complete`, { file: path.join(this.dir, CHUNK_INDEX) });
      files.push(e.records);
      if (withEpisodes) {
        if (!e.episodes) throw new LobesError(`chunk ${c} has no episodes file`, { file: path.join(this.dir, CHUNK_INDEX) });
        eps.push(e.episodes);
      }
    }
    const records = concatAtomic(path.join(this.dir, RECORDS), files.map((f) => path.join(this.dir, CHUNKS_DIR, f.path)), files);
    const episodes = withEpisodes ? concatAtomic(path.join(this.dir, EPISODES), eps.map((f) => path.join(this.dir, CHUNKS_DIR, f.path)), eps) : null;
    return { records, episodes };
  }
}

/**
 * Write the concatenation of `sources` to `target` atomically (temporary sibling, fsync,
 * rename), checking each source against its expected size and sha256 while copying.
 */
export function concatAtomic(target: string, sources: string[], expected?: ChunkFile[]): ChunkFile {
  const dir = path.dirname(target);
  mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(target)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
  const total = createHash('sha256');
  let bytes = 0;
  try {
    const fd = openSync(tmp, 'w');
    try {
      sources.forEach((src, i) => {
        const buf = readFileSync(src);
        const want = expected?.[i];
        if (want && (buf.byteLength !== want.bytes || createHash('sha256').update(buf).digest('hex') !== want.sha256)) {
          throw new LobesError('record chunk changed since it was written (size or sha256 differ from the index)', { file: src, hint: 'rerun the same command to evaluate it again' });
        }
        let off = 0;
        while (off < buf.byteLength) off += writeSync(fd, buf, off, buf.byteLength - off);
        total.update(buf);
        bytes += buf.byteLength;
      });
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, target);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(dir);
  return { path: path.basename(target), bytes, sha256: total.digest('hex') };
}

/** Read a JSONL file of records (or episodes); a bad line is an error naming it. */
export function readJsonl<T>(file: string): T[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new LobesError(`cannot read (${e.code ?? e.message})`, { file });
  }
  const out: T[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (!l.trim()) continue;
    try {
      out.push(JSON.parse(l) as T);
    } catch (e: any) {
      throw new LobesError(`line ${i + 1} is not valid JSON (${e.message})`, { file });
    }
  }
  return out;
}
