/**
 * The chunk index (RUN/activations/index.json): which chunk files are complete, with
 * their sizes and sha256. It is rewritten atomically after every chunk's files are
 * durable, so a chunk is either listed with files that were fully written or not listed.
 */
import { createHash } from 'node:crypto';
import { openSync, closeSync, fstatSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { readFileRange } from '../util/io.js';
import type { HookInfo } from './types.js';
import { INDEX, ACTIVATIONS, chunkRelPath } from './layout.js';
import { sha256Stream } from './filehash.js';
import { readJsonFile, writeJsonAtomic } from './json.js';

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

/** RUN/activations/index.json. */
export function indexPath(runDir: string): string {
  return path.join(runDir, INDEX);
}

export function readChunkIndex(runDir: string): ChunkIndex {
  const file = indexPath(runDir);
  if (!existsSync(file))
    throw new LobesError('chunk index is missing', { file,
      hint: 'the run was never started or its folder was damaged' });
  const idx: ChunkIndex = readJsonFile(file, { unreadable: (e) => `chunk index is not valid JSON (${e.message})`,
    invalid: (msg) => `chunk index is not valid JSON (${msg})` });
  if (!idx || idx.format !== 'lobes-chunks' || !Array.isArray(idx.chunks) || !Array.isArray(idx.hooks) ||
    !(idx.chunkRows > 0))
  {
    throw new LobesError('not a lobes chunk index (format, chunkRows, hooks or chunks missing)', { file });
  }
  let prev = -1;
  for (const c of idx.chunks) {
    if (!Number.isInteger(c.chunk) || c.chunk <= prev || c.start !== c.chunk * idx.chunkRows || !(c.rows > 0) ||
      c.rows > idx.chunkRows)
    {
      throw new LobesError(
        `chunk entry ${JSON.stringify({ chunk: c.chunk, start: c.start, rows: c.rows })} is inconsistent`,
        { file },
      );
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
  writeJsonAtomic(indexPath(runDir), idx);
}

/** sha256 of a file, read in 4 MiB pieces (src/store/filehash.ts sha256Stream). */
export function sha256File(file: string): { sha256: string; bytes: number } {
  return sha256Stream(file);
}

/** What to do about a bad chunk file. */
export const REPAIR_HINT = 'rerun the lobes extract command with --repair to extract bad chunks again';

/**
 * Check a chunk file's bytes against its index entry and hook: sha256, the safetensors
 * header and its metadata. Returns where the tensor data starts; throws naming the file.
 */
export function checkChunkBytes(bytes: Uint8Array, file: string, h: HookInfo, entry: ChunkEntry): number {
  const rec = entry.files[h.name]!;
  if (bytes.byteLength !== rec.bytes)
    throw new LobesError(
      `chunk file has ${bytes.byteLength} bytes, the index records ${rec.bytes} (truncated or overwritten)`,
      { file, hint: REPAIR_HINT },
    );
  const sha = createHash('sha256').update(bytes).digest('hex');
  if (sha !== rec.sha256)
    throw new LobesError(
      `chunk file is corrupted: sha256 ${sha.slice(0, 16)}… does not match ${
        rec.sha256.slice(0, 16)
      }… recorded in the index`,
      { file, hint: REPAIR_HINT },
    );
  const bad = (why: string) => new LobesError(`chunk file ${why}`, { file, hint: REPAIR_HINT });
  if (bytes.byteLength < 8) throw bad('is too short for a safetensors header');
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (8 + n > bytes.byteLength) throw bad('has a header longer than the file');
  let header: any;
  try {
    header = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + 8, n).toString('utf8'));
  } catch {
    throw bad('has a header that is not JSON');
  }
  const t = header?.[h.name];
  const meta = header?.__metadata__ ?? {};
  const rowBytes = h.dim * (h.dtype === 'F16' ? 2 : 4);
  if (!t || t.dtype !== h.dtype || !Array.isArray(t.shape) || t.shape.length !== 2 || t.shape[0] !== entry.rows ||
    t.shape[1] !== h.dim)
  {
    throw bad(`does not hold ${h.name} as ${h.dtype} [${entry.rows}, ${h.dim}]`);
  }
  const others = Object.keys(header).filter((k) => k !== h.name && k !== '__metadata__');
  if (others.length)
    throw bad(
      `holds ${others.length === 1 ? 'a tensor' : `${others.length} tensors`} besides ${h.name} (${
        others.slice(0, 3).map((k) => JSON.stringify(k)).join(', ')
      }${others.length > 3 ? ', …' : ''}); lobes writes one per chunk file`,
    );
  const off = t.data_offsets;
  if (!Array.isArray(off) || off[0] !== 0 || off[1] !== entry.rows * rowBytes || 8 + n + off[1] > bytes.byteLength)
    throw bad(`has data offsets ${JSON.stringify(off)} that do not fit [${entry.rows}, ${h.dim}]`);
  if (8 + n + off[1] !== bytes.byteLength)
    throw bad(`has ${bytes.byteLength - 8 - n - off[1]} bytes after its ${h.name} data; lobes writes none`);
  if (meta.hook !== h.name)
    throw bad(
      `says it holds capture point ${
        JSON.stringify(meta.hook)
      }, not ${h.name} (a file copied from another capture point?)`,
    );
  if (meta.row_start !== String(entry.start)) {
    throw bad(
      `holds rows from ${
        JSON.stringify(meta.row_start)
      } on (row_start), but its slot in the index is chunk ${entry.chunk}, rows from ${entry.start} (a chunk file copied over another?)`,
    );
  }
  return 8 + n;
}

/**
 * Check one chunk file of hook `h` against its index entry. `full` reads it and checks it
 * whole (checkChunkBytes: sha256, header, hook and row_start); otherwise only its presence
 * and size are checked. Returns a problem description or null.
 */
export function checkChunkFile(runDir: string, h: HookInfo, entry: ChunkEntry, full: boolean): string | null {
  const f = entry.files[h.name]!;
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
  if (size !== f.bytes)
    return `${file}: chunk file has ${size} bytes, the index records ${f.bytes} (truncated or overwritten)`;
  if (full) {
    try {
      checkChunkBytes(readFileRange(file, 0, size, 'chunk file'), file, h, entry);
    } catch (e) {
      if (e instanceof LobesError) return e.message.replace(/ \(rerun the lobes extract.*\)$/, '');
      throw e;
    }
  }
  return null;
}
