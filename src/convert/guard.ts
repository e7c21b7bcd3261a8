/**
 * Guards of a conversion:
 *
 * - the source must not change while it is read: a snapshot of the GGUF (device, inode, size,
 *   modification and status-change times in nanoseconds, the sha256 of every byte before the
 *   data section, and the sha256 of 64 pieces of 4 KiB spread evenly over the data section)
 *   is taken before the first weight is read and again when the folder is complete; any
 *   difference abandons the folder. A rewrite in place, even one that puts the modification
 *   time back, moves the status-change time; a copy renamed over the file changes the inode.
 * - `--force` replaces only a folder that lobes convert wrote: one holding its record
 *   (lobes-convert.json, format "lobes-convert") and nothing but the files a conversion
 *   writes, and never one that holds the source GGUF itself.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, openSync, readdirSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { readExactly } from '../util/io.js';
import { readJsonFile } from '../store/json.js';

/** What is compared before and after a conversion. */
export interface SourceSnapshot {
  dev: string;
  ino: string;
  size: string;
  mtimeNs: string;
  ctimeNs: string;
  headerSha256: string;
  sampleSha256: string;
}

const PIECES = 64;
const PIECE = 4096;

/** Snapshot of a GGUF whose data section starts at `dataStart`. */
export function sourceSnapshot(file: string, dataStart: number): SourceSnapshot {
  const fd = openSync(file, 'r');
  try {
    const st = fstatSync(fd, { bigint: true });
    const size = Number(st.size);
    const head = createHash('sha256');
    const buf = new Uint8Array(1 << 20);
    for (let pos = 0; pos < Math.min(dataStart, size);) {
      const n = Math.min(buf.length, dataStart - pos);
      readExactly(fd, buf.subarray(0, n), pos, file);
      head.update(buf.subarray(0, n));
      pos += n;
    }
    const sample = createHash('sha256');
    const span = Math.max(0, size - dataStart);
    const piece = buf.subarray(0, Math.min(PIECE, span));
    if (piece.length > 0) {
      for (let k = 0; k < PIECES; k++) {
        const at = dataStart + Math.floor(((span - piece.length) * k) / (PIECES - 1));
        readExactly(fd, piece, at, file);
        sample.update(piece);
      }
    }
    return { dev: String(st.dev), ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs),
      ctimeNs: String(st.ctimeNs), headerSha256: head.digest('hex'), sampleSha256: sample.digest('hex') };
  } finally {
    closeSync(fd);
  }
}

const WHAT: Record<keyof SourceSnapshot, string> = {
  dev: 'device',
  ino: 'inode (the file was replaced)',
  size: 'size',
  mtimeNs: 'modification time',
  ctimeNs: 'status-change time (the file was written)',
  headerSha256: 'header bytes',
  sampleSha256: 'sampled weight bytes',
};

/** Throw when the GGUF at `file` is no longer the one `before` describes. */
export function checkSourceUnchanged(file: string, dataStart: number, before: SourceSnapshot): void {
  let after: SourceSnapshot;
  try {
    after = sourceSnapshot(file, dataStart);
  } catch (e: any) {
    throw new LobesError(
      `the GGUF could not be read again after the conversion (${
        e instanceof LobesError ? e.message : (e?.code ?? e?.message)
      }); nothing was written`,
      { file, hint: 'convert again once the file is in place' },
    );
  }
  const changed = (Object.keys(WHAT) as (keyof SourceSnapshot)[]).filter((k) => before[k] !== after[k]);
  if (changed.length) {
    throw new LobesError(
      `the GGUF changed while it was being converted (${changed.map((k) => WHAT[k]).join(', ')}); nothing was written`,
      {
        file,
        hint: 'convert again once nothing is writing the file',
      },
    );
  }
}

/** Device, inode, size and times (ns) of each file of a source read as several files (a checkpoint folder). */
export type FilesSnapshot = Map<string, string>;

function statLine(file: string): string {
  const st = statSync(file, { bigint: true });
  return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(' ');
}

/** Snapshot of each file in `files`, taken before the first weight is read. */
export function filesSnapshot(files: readonly string[]): FilesSnapshot {
  return new Map(files.map((f) => [f, statLine(f)]));
}

/**
 * Throw when a file of `before` is no longer the one it was (replaced, written, resized or
 * gone): a rewrite in place moves the status-change time, a copy renamed over it the inode.
 */
export function checkFilesUnchanged(before: FilesSnapshot, what = 'source file'): void {
  for (const [f, line] of before) {
    let now: string;
    try {
      now = statLine(f);
    } catch (e: any) {
      throw new LobesError(
        `the ${what} could not be read again after the conversion (${e?.code ?? e?.message}); nothing was written`,
        { file: f, hint: 'convert again once the file is in place' },
      );
    }
    if (now !== line)
      throw new LobesError(`the ${what} changed while it was being converted; nothing was written`, { file: f,
        hint: 'convert again once nothing is writing the files' });
  }
}

/** Files a conversion writes into its folder (and the cache's record). */
export const CONVERT_OUTPUT_FILES = new Set([
  'model.onnx',
  'model.onnx.data',
  'config.json',
  'generation_config.json',
  'genai_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'chat_template.json',
  'lobes-convert.json',
  'lobes-cache.json',
]);

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Before `--force` replaces `out`: it must be a folder lobes convert wrote (its record inside,
 * nothing else but conversion outputs) that does not hold the source. An absent or empty
 * folder needs no check.
 */
export function checkForceTarget(out: string, source: string, record: string): void {
  if (!existsSync(out) || !statSync(out).isDirectory()) return;
  const names = readdirSync(out);
  if (names.length === 0) return;
  const outReal = real(out);
  const srcReal = real(source);
  const rel = path.relative(outReal, srcReal);
  if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) {
    throw new LobesError(
      `${opt('overwrite')} would replace the folder that holds the source GGUF (${
        path.basename(source)
      }); nothing was changed`,
      { file: out, hint: `choose another ${opt('out')}`, code: 'E_EXISTS' },
    );
  }
  const rec = readJsonFile(path.join(out, record), { fallback: null });
  if (rec?.format !== 'lobes-convert') {
    throw new LobesError(
      `${opt('overwrite')} replaces only a folder lobes convert wrote (one holding its ${record}); this one has ${
        rec === null ? 'none' : 'another record'
      }, so nothing was changed`,
      { file: out, hint: `choose another ${opt('out')}, or empty the folder yourself`, code: 'E_EXISTS' },
    );
  }
  const foreign = names.filter((n) => !CONVERT_OUTPUT_FILES.has(n)).sort();
  if (foreign.length) {
    throw new LobesError(
      `${opt('overwrite')} would remove ${
        foreign.length === 1 ? 'a file' : `${foreign.length} files`
      } lobes convert did not write (${foreign.slice(0, 3).join(', ')}${
        foreign.length > 3 ? ', …' : ''
      }); nothing was changed`,
      { file: out, hint: `move them out, or choose another ${opt('out')}`, code: 'E_EXISTS' },
    );
  }
}
