/**
 * The chunk index (RUN/activations/index.json): which chunk files are complete, with
 * their sizes and sha256. It is rewritten atomically after every chunk's files are
 * durable, so a chunk is either listed with files that were fully written or not listed.
 */
import { createHash } from 'node:crypto';
import { openSync, closeSync, fstatSync, readFileSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { RangeFile, writeFileAtomicSync } from '../util/io.js';
import type { HookInfo } from './types.js';
import { INDEX, ACTIVATIONS, chunkRelPath } from './layout.js';

export interface ChunkFile {
  /** Path relative to RUN/activations. */
  path: string;
  bytes: number;
  sha256: string;
}

export interface ChunkEntry {
  /** Global chunk number (dataset rows [chunk*chunkRows, ...)). */
  chunk: number;
  /** First dataset row. */
  start: number;
  rows: number;
  /** One file per hook. */
  files: Record<string, ChunkFile>;
}

export interface ChunkIndex {
  format: 'lobes-chunks';
  formatVersion: number;
  chunkRows: number;
  hooks: HookInfo[];
  /** Complete chunks, sorted by chunk number. */
  chunks: ChunkEntry[];
}

/** Bytes hashed per read. */
const HASH_PIECE_BYTES = 4 << 20;

/** RUN/activations/index.json. */
export function indexPath(runDir: string): string {
  return path.join(runDir, INDEX);
}

export function readChunkIndex(runDir: string): ChunkIndex {
  const file = indexPath(runDir);
  if (!existsSync(file)) throw new LobesError('chunk index is missing', { file, hint: 'the run was never started or its folder was damaged' });
  let idx: ChunkIndex;
  try {
    idx = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e: any) {
    throw new LobesError(`chunk index is not valid JSON (${e.message})`, { file });
  }
  if (!idx || idx.format !== 'lobes-chunks' || !Array.isArray(idx.chunks) || !Array.isArray(idx.hooks) || !(idx.chunkRows > 0)) {
    throw new LobesError('not a lobes chunk index (format, chunkRows, hooks or chunks missing)', { file });
  }
  let prev = -1;
  for (const c of idx.chunks) {
    if (!Number.isInteger(c.chunk) || c.chunk <= prev || c.start !== c.chunk * idx.chunkRows || !(c.rows > 0) || c.rows > idx.chunkRows) {
      throw new LobesError(`chunk entry ${JSON.stringify({ chunk: c.chunk, start: c.start, rows: c.rows })} is inconsistent`, { file });
    }
    for (const h of idx.hooks) {
      const f = c.files?.[h.name];
      if (!f || f.path !== chunkRelPath(h.name, c.chunk) || !/^[0-9a-f]{64}$/.test(f.sha256) || !(f.bytes > 0)) {
        throw new LobesError(`chunk ${c.chunk} has no valid entry for capture point ${h.name}`, { file });
      }
    }
    prev = c.chunk;
  }
  return idx;
}

export function writeChunkIndex(runDir: string, idx: ChunkIndex): void {
  writeFileAtomicSync(indexPath(runDir), JSON.stringify(idx) + '\n');
}

/** sha256 of a file, read in 4 MiB pieces. */
export function sha256File(file: string): { sha256: string; bytes: number } {
  const f = RangeFile.open(file);
  try {
    const size = f.size;
    const h = createHash('sha256');
    const buf = new Uint8Array(Math.min(HASH_PIECE_BYTES, Math.max(size, 1)));
    for (let off = 0; off < size; off += buf.length) {
      const piece = buf.subarray(0, Math.min(buf.length, size - off));
      f.readInto(piece, off);
      h.update(piece);
    }
    return { sha256: h.digest('hex'), bytes: size };
  } finally {
    f.close();
  }
}

/**
 * Check one chunk file against its index entry. `full` hashes the file; otherwise only
 * its presence and size are checked. Returns a problem description or null.
 */
export function checkChunkFile(runDir: string, f: ChunkFile, full: boolean): string | null {
  const file = path.join(runDir, ACTIVATIONS, f.path);
  let size: number;
  try {
    const fd = openSync(file, 'r');
    try {
      size = fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  } catch (e: any) {
    return `${file}: chunk file is missing (${e.code ?? e.message})`;
  }
  if (size !== f.bytes) return `${file}: chunk file has ${size} bytes, the index records ${f.bytes} (truncated or overwritten)`;
  if (full) {
    const got = sha256File(file).sha256;
    if (got !== f.sha256) return `${file}: chunk file is corrupted: sha256 ${got.slice(0, 16)}… does not match ${f.sha256.slice(0, 16)}… recorded in the index`;
  }
  return null;
}
