import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LobesError } from '../../src/util/errors.js';
import { spawnSync } from 'node:child_process';
import { RangeFile, cleanTempFiles, readExactly, readFileRange, writeFileAtomic,
  writeFileAtomicSync } from '../../src/util/io.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lobes-io-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Bytes 0, 1, ..., n-1 modulo 251 (a prime, so no power-of-two period). */
function pattern(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = i % 251;
  return b;
}

function caught(fn: () => unknown): LobesError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LobesError);
    expect((e as Error).message).not.toMatch(/\n/);
    return e as LobesError;
  }
  throw new Error('expected a LobesError');
}

describe('exact reads', () => {
  it('fills the buffer from the given offset, in as many reads as the cap needs', () => {
    const f = path.join(dir, 'data.bin');
    writeFileSync(f, pattern(1000));
    const fd = openSync(f, 'r');
    try {
      const dst = new Uint8Array(100);
      readExactly(fd, dst, 300, f, { maxRead: 7 });
      for (let i = 0; i < 100; i++) expect(dst[i]).toBe((300 + i) % 251);
    } finally {
      closeSync(fd);
    }
  });

  it('refuses a file that ends early, naming the file and the byte where it ended', () => {
    const f = path.join(dir, 'short.bin');
    writeFileSync(f, pattern(50));
    const fd = openSync(f, 'r');
    try {
      const e = caught(() => readExactly(fd, new Uint8Array(40), 20, f, { where: 'tensor w' }));
      expect(e.message).toContain(f);
      expect(e.message).toContain('tensor w');
      expect(e.message).toMatch(/end of file at byte 50\b/);
    } finally {
      closeSync(fd);
    }
  });

  it('RangeFile reads typed arrays at byte offsets and reports the size', () => {
    const f = path.join(dir, 'floats.bin');
    const values = [1.5, -2.25, 3e-8, 65504, -0];
    const b = Buffer.alloc(4 + values.length * 4);
    values.forEach((v, i) => b.writeFloatLE(v, 4 + 4 * i));
    writeFileSync(f, b);
    const rf = RangeFile.open(f);
    try {
      expect(rf.size).toBe(b.length);
      const out = new Float32Array(values.length);
      rf.readInto(out, 4);
      expect(Array.from(out)).toEqual(values.map((v) => Math.fround(v)));
      const bytes = rf.read(8, 4);
      expect(bytes.byteOffset % 8).toBe(0);
      expect(Buffer.from(bytes)).toEqual(b.subarray(8, 12));
      expect(() => rf.read(b.length - 2, 4)).toThrow(/end of file at byte 24\b/);
    } finally {
      rf.close();
    }
  });

  it('a file that cannot be opened is named, with the kind of file', () => {
    const f = path.join(dir, 'missing.npy');
    const e = caught(() => readFileRange(f, 0, 4, '.npy file'));
    expect(e.message).toContain(f);
    expect(e.message).toMatch(/cannot open \.npy file \(ENOENT\)/);
  });
});

describe('atomic writes', () => {
  it('write text, bytes and byte parts (in order), creating the folder', async () => {
    const a = path.join(dir, 'sub', 'a.txt');
    writeFileAtomicSync(a, 'héllo\n');
    expect(readFileSync(a, 'utf8')).toBe('héllo\n');
    const b = path.join(dir, 'sub2', 'b.bin');
    await writeFileAtomic(b, [Uint8Array.from([1, 2]), new Uint8Array(0), pattern(600)]);
    expect(readFileSync(b)).toEqual(Buffer.concat([Buffer.from([1, 2]), pattern(600)]));
    writeFileAtomicSync(a, Uint8Array.from([9]));
    expect(readFileSync(a)).toEqual(Buffer.from([9]));
    // No temporary files are left next to the targets.
    expect(readdirSync(path.join(dir, 'sub'))).toEqual(['a.txt']);
    expect(readdirSync(path.join(dir, 'sub2'))).toEqual(['b.bin']);
  });

  it('a failed write removes its temporary file and leaves the target as it was', async () => {
    // Renaming a file over a non-empty folder fails.
    const target = path.join(dir, 'target');
    mkdirSync(target);
    writeFileSync(path.join(target, 'keep'), 'x');
    expect(() => writeFileAtomicSync(target, 'new')).toThrow();
    await expect(writeFileAtomic(target, 'new')).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(['target']);
    expect(readFileSync(path.join(target, 'keep'), 'utf8')).toBe('x');
  });

  it('cleanTempFiles removes leftovers of interrupted writes only, not the temporary files of a process still writing', async () => {
    // a process that has exited: its pid names a writer that is gone
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(path.join(dir, `.chunk-000001.safetensors.tmp-${gone}-456`), 'partial');
    writeFileSync(path.join(dir, `.chunk-000002.safetensors.tmp-${process.pid}-789`), 'being written');
    writeFileSync(path.join(dir, 'chunk-000001.safetensors'), 'done');
    writeFileSync(path.join(dir, '.hidden'), 'keep');
    await cleanTempFiles(dir);
    expect(readdirSync(dir).sort()).toEqual([`.chunk-000002.safetensors.tmp-${process.pid}-789`, '.hidden',
      'chunk-000001.safetensors']);
  });
});
