import { promises as fsp, openSync, writeSync, fsyncSync, closeSync, renameSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Write a file so that readers see either the old content or the complete new one:
 * write to a temporary sibling, fsync, rename over the target, fsync the directory.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  writeFileAtomicSync(file, data);
}

export function writeFileAtomicSync(file: string, data: string | Uint8Array | Uint8Array[]): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.tmp-${process.pid}-${Math.floor(Math.random() * 1e9)}`);
  const fd = openSync(tmp, 'w');
  try {
    const parts = Array.isArray(data) ? data : [typeof data === 'string' ? Buffer.from(data, 'utf8') : data];
    for (const p of parts) {
      let off = 0;
      while (off < p.byteLength) off += writeSync(fd, p, off, p.byteLength - off);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  fsyncDir(dir);
}

export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems do not allow fsync on directories; the rename is still atomic.
  }
}

/** Remove leftovers of interrupted atomic writes in a directory. */
export async function cleanTempFiles(dir: string): Promise<void> {
  let names: string[] = [];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return;
  }
  await Promise.all(names.filter((n) => /^\..*\.tmp-\d+-\d+$/.test(n)).map((n) => fsp.rm(path.join(dir, n), { force: true })));
}
