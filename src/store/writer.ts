/**
 * Writing a run directory's chunk files and the chunk index (the manifest and samples
 * table are written with manifest.ts).
 *
 * Order of durability: manifest.json and samples.jsonl first (complete=false), then for
 * each chunk its files (tmp + fsync + rename), then the index that lists them, and last
 * the manifest with complete=true. A crash at any point leaves a directory that the same
 * command resumes from its last listed chunk.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { writeFileAtomicSync, writeFileAtomic, cleanTempFiles } from '../util/io.js';
import { floatArrayToHalf } from '../util/half.js';
import { encodeSafetensors } from '../formats/safetensors.js';
import type { HookInfo } from './types.js';
import { ACTIVATIONS, FORMAT_VERSION, INDEX, chunkRelPath, checkHookName } from './layout.js';
import { type ChunkEntry, type ChunkIndex, type ChunkFile, readChunkIndex, writeChunkIndex,
  checkChunkFile } from './chunks.js';

/** Encode one chunk of one hook: tensor named after the hook, [rows, dim]. */
function encodeChunk(hook: HookInfo, start: number, rows: number, data: Float32Array): Uint8Array[] {
  if (data.length !== rows * hook.dim) {
    throw new LobesError(
      `capture point ${hook.name}: got ${data.length} values for ${rows} rows of dimension ${hook.dim}`,
    );
  }
  const bytes = hook.dtype === 'F16' ? floatArrayToHalf(data) : data;
  return encodeSafetensors(
    [{ name: hook.name, dtype: hook.dtype, shape: [rows, hook.dim] }].map((t) => ({ ...t, data: bytes })),
    {
      format: 'lobes-chunk',
      hook: hook.name,
      row_start: String(start),
    },
  );
}

/**
 * Appends chunks to a run directory and keeps the index current. Create it once the
 * manifest and samples are written (or verified on resume).
 */
export class ChunkWriter {
  readonly index: ChunkIndex;
  private readonly done = new Set<number>();

  private constructor(
    readonly runDir: string,
    index: ChunkIndex,
  ) {
    this.index = index;
    for (const c of index.chunks) this.done.add(c.chunk);
  }

  /** Start an empty index (new run). */
  static create(runDir: string, hooks: HookInfo[], chunkRows: number): ChunkWriter {
    for (const h of hooks) {
      checkHookName(h.name);
      mkdirSync(path.join(runDir, ACTIVATIONS, h.name), { recursive: true });
    }
    const idx: ChunkIndex = { format: 'lobes-chunks', formatVersion: FORMAT_VERSION, chunkRows, hooks, chunks: [] };
    writeChunkIndex(runDir, idx);
    return new ChunkWriter(runDir, idx);
  }

  /**
   * Reopen an existing index (resume). Every listed chunk is checked (sha256 when `verify`,
   * else size); problems are thrown naming the files, or, with `repair`, the bad chunks are
   * dropped from the index so they are written again.
   */
  static async resume(runDir: string, hooks: HookInfo[], chunkRows: number,
    opts: { verify: boolean; repair: boolean }): Promise<{ writer: ChunkWriter; repaired: string[] }>
  {
    const idx = readChunkIndex(runDir);
    const same = idx.chunkRows === chunkRows && idx.hooks.length === hooks.length &&
      idx.hooks.every((h, i) => h.name === hooks[i].name && h.dim === hooks[i].dim && h.dtype === hooks[i].dtype);
    if (!same)
      throw new LobesError('chunk index does not match the manifest (capture points or chunk size differ)', {
        file: path.join(runDir, INDEX),
        hint: 'the folder was edited by hand; start a new run',
      });
    for (const h of hooks) {
      mkdirSync(path.join(runDir, ACTIVATIONS, h.name), { recursive: true });
      await cleanTempFiles(path.join(runDir, ACTIVATIONS, h.name));
    }
    const problems: string[] = [];
    const keep: ChunkEntry[] = [];
    for (const c of idx.chunks) {
      let bad = false;
      for (const h of hooks) {
        const p = checkChunkFile(runDir, h, c, opts.verify);
        if (p) {
          problems.push(p);
          bad = true;
        }
      }
      if (!bad) keep.push(c);
    }
    if (problems.length && !opts.repair) {
      throw new LobesError(
        `${problems[0]}${
          problems.length > 1
            ? ` (and ${problems.length - 1} more bad chunk file${problems.length > 2 ? 's' : ''})`
            : ''
        }`,
        {
          hint: `rerun with ${opt('repair')} to extract the bad chunks again, or delete the run folder to start over`,
        },
      );
    }
    if (problems.length) {
      idx.chunks = keep;
      writeChunkIndex(runDir, idx);
    }
    return { writer: new ChunkWriter(runDir, idx), repaired: problems };
  }

  has(chunk: number): boolean {
    return this.done.has(chunk);
  }

  /** Write every hook's file of one chunk, then list the chunk in the index. */
  write(chunk: number, start: number, rows: number, data: Map<string, Float32Array>): ChunkEntry {
    const enc = this.encode(chunk, start, rows, data);
    for (const e of enc) writeFileAtomicSync(path.join(this.runDir, ACTIVATIONS, e.file.path), e.parts);
    return this.commit({ chunk, start, rows, files: Object.fromEntries(enc.map((e) => [e.hook, e.file])) });
  }

  /**
   * The same as write(), with the file writes done off the main thread (so they overlap the
   * model computing the next chunk). The values are encoded before this returns, so the
   * caller may reuse `data`. The chunk is listed in the index only after all its files are
   * durable.
   */
  writeAsync(chunk: number, start: number, rows: number, data: Map<string, Float32Array>): Promise<ChunkEntry> {
    const enc = this.encode(chunk, start, rows, data);
    return Promise.all(enc.map((e) => writeFileAtomic(path.join(this.runDir, ACTIVATIONS, e.file.path), e.parts))).then(
      () => this.commit({ chunk, start, rows, files: Object.fromEntries(enc.map((e) => [e.hook, e.file])) }),
    );
  }

  private encode(chunk: number, start: number, rows: number,
    data: Map<string, Float32Array>): { hook: string; parts: Uint8Array[]; file: ChunkFile }[]
  {
    return this.index.hooks.map((h) => {
      const d = data.get(h.name);
      if (!d) throw new LobesError(`the capture engine returned no values for ${h.name}`);
      const parts = encodeChunk(h, start, rows, d);
      const hash = createHash('sha256');
      let bytes = 0;
      for (const p of parts) {
        hash.update(p);
        bytes += p.byteLength;
      }
      return { hook: h.name, parts, file: { path: chunkRelPath(h.name, chunk), bytes, sha256: hash.digest('hex') } };
    });
  }

  /** List a chunk whose files are already in place (merge copies them). */
  commit(entry: ChunkEntry): ChunkEntry {
    const chunks = this.index.chunks.filter((c) => c.chunk !== entry.chunk);
    chunks.push(entry);
    chunks.sort((a, b) => a.chunk - b.chunk);
    this.index.chunks = chunks;
    writeChunkIndex(this.runDir, this.index);
    this.done.add(entry.chunk);
    return entry;
  }
}
