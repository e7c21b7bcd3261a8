/**
 * A folder's files with the size and sha256 each had when it was written, and the check of a
 * folder against them: what the conversion cache (lobes-cache.json) and the random-weights
 * control (lobes-control.json) record, so that an entry altered after it was written (even at
 * the same size and modification time) is never used.
 *
 * Hashing happens once, in the build folder before its rename; the machine's file-hash cache
 * (src/store/filehash.ts) learns the hashes at the final place, so that a later check costs a
 * `stat` per file (what that trusts: src/store/filehash.ts, docs/gguf.md).
 */
import { readdirSync, statSync, type BigIntStats } from 'node:fs';
import * as path from 'node:path';
import { hashFileCached, rememberFileHash, sha256Stream, type FileHash } from '../store/filehash.js';

/** One file of a folder as recorded. */
export interface RecordedFile {
  bytes: number;
  sha256: string;
}

/** Hashes of a build folder, to be recorded, and what to tell the hash cache after the rename. */
export interface FolderHashes {
  files: Record<string, RecordedFile>;
  stats: Map<string, { hash: FileHash; st: BigIntStats }>;
}

/** The files of a folder (the record file excluded), sorted. */
export function folderFiles(dir: string, record: string): string[] {
  return readdirSync(dir)
    .filter((f) => f !== record)
    .sort();
}

/** sha256 and size of every file of a finished build folder (the record file excluded). */
export function hashFolder(dir: string, record: string, what = 'file'): FolderHashes {
  const files: Record<string, RecordedFile> = {};
  const stats = new Map<string, { hash: FileHash; st: BigIntStats }>();
  for (const f of folderFiles(dir, record)) {
    const p = path.join(dir, f);
    const st = statSync(p, { bigint: true });
    const hash = sha256Stream(p, undefined, what);
    files[f] = { bytes: hash.bytes, sha256: hash.sha256 };
    stats.set(f, { hash, st });
  }
  return { files, stats };
}

/** After the rename: the hash cache learns each file at its final place (when unchanged since hashed). */
export function rememberFolder(dir: string, h: FolderHashes): void {
  for (const [f, s] of h.stats) rememberFileHash(path.join(dir, f), s.hash, s.st);
}

/** Why `dir`'s files are not the recorded ones (first difference), or null when they are. */
export function folderProblem(dir: string, want: Record<string, RecordedFile>, record: string, what = 'file'): string
  | null
{
  const extra = folderFiles(dir, record).filter((f) => !(f in want));
  if (extra.length) return `${extra[0]} was added`;
  for (const [f, w] of Object.entries(want)) {
    const p = path.join(dir, f);
    let size: number;
    try {
      size = statSync(p).size;
    } catch {
      return `${f} is missing`;
    }
    if (size !== w.bytes) return `${f} has ${size} bytes, ${w.bytes} when written`;
    const got = hashFileCached(p, { what }).sha256;
    if (got !== w.sha256) return `${f} has sha256 ${got.slice(0, 12)}…, ${String(w.sha256).slice(0, 12)}… when written`;
  }
  return null;
}
