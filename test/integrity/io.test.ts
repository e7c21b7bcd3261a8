/**
 * The building blocks of run integrity: atomic output folders, the file-hash cache (and what
 * it trusts), and operating-system errors as one-line LobesErrors.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync,
  writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { writeDirAtomic } from '../../src/util/io.js';
import { LobesError, systemError } from '../../src/util/errors.js';
import { hashFileCached, hashFilesInBackground } from '../../src/store/filehash.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

describe('writeDirAtomic', () => {
  let root: string;
  beforeAll(() => (root = mkdtempSync(path.join(tmpdir(), 'lobes-dir-atomic-'))));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const isOutput = { replaces: (d: string) => existsSync(path.join(d, 'settings.json')) };

  it('replaces the folder whole; a failure half-way leaves the previous folder as it was and nothing beside it', async () => {
    const dir = path.join(root, 'out');
    await writeDirAtomic(dir, (tmp) => {
      writeFileSync(path.join(tmp, 'settings.json'), 'v1');
      writeFileSync(path.join(tmp, 'metrics.json'), 'v1');
    }, isOutput);
    await expect(
      writeDirAtomic(dir, (tmp) => {
        writeFileSync(path.join(tmp, 'settings.json'), 'v2');
        throw new Error('disk full half-way');
      }, isOutput),
    ).rejects.toThrow(/disk full half-way/);
    expect(readdirSync(root)).toEqual(['out']);
    expect(readdirSync(dir).sort()).toEqual(['metrics.json', 'settings.json']);
    expect(readFileSync(path.join(dir, 'settings.json'), 'utf8')).toBe('v1');
    // A complete write replaces every file, dropping those the new result does not have.
    await writeDirAtomic(dir, (tmp) => writeFileSync(path.join(tmp, 'settings.json'), 'v3'), isOutput);
    expect(readdirSync(dir)).toEqual(['settings.json']);
    expect(readdirSync(root)).toEqual(['out']);
  });

  it('folders it had to create are removed again when it fails', async () => {
    const dir = path.join(root, 'a/b/c');
    await expect(writeDirAtomic(dir, () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(existsSync(path.join(root, 'a'))).toBe(false);
  });

  it('refuses to replace a non-empty folder it does not recognize as an earlier output, or a file', async () => {
    const mine = path.join(root, 'my-files');
    mkdirSync(mine);
    writeFileSync(path.join(mine, 'thesis.tex'), 'precious');
    await expect(writeDirAtomic(mine, () => undefined, isOutput)).rejects.toThrow(
      /my-files: folder exists and holds files this command did not write \(thesis\.tex\); it is not replaced/,
    );
    expect(readFileSync(path.join(mine, 'thesis.tex'), 'utf8')).toBe('precious');
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(writeDirAtomic(file, () => undefined)).rejects.toThrow(/a-file: exists and is not a folder/);
  });

  it('after a crash between its two renames, the next call puts the previous folder back first', async () => {
    const dir = path.join(root, 'crashed');
    // What a process that died (pid 2^22 + 1 is above Linux's default pid_max) left: the old folder moved aside, no new one.
    const old = path.join(root, `.crashed.old-${2 ** 22 + 1}-5`);
    mkdirSync(old);
    writeFileSync(path.join(old, 'settings.json'), 'old');
    const tmp = path.join(root, `.crashed.tmp-${2 ** 22 + 1}-5`);
    mkdirSync(tmp);
    await expect(writeDirAtomic(dir, () => Promise.reject(new Error('again')), isOutput)).rejects.toThrow('again');
    expect(readFileSync(path.join(dir, 'settings.json'), 'utf8')).toBe('old');
    expect(existsSync(old) || existsSync(tmp)).toBe(false);
  });
});

describe('the file-hash cache', () => {
  let root: string;
  let saved: string | undefined;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-hash-cache-'));
    saved = process.env.LOBES_HASH_CACHE;
    process.env.LOBES_HASH_CACHE = path.join(root, 'cache.json');
  });
  afterAll(() => {
    process.env.LOBES_HASH_CACHE = saved;
    rmSync(root, { recursive: true, force: true });
  });

  it('answers from the cache for an unchanged file, and hashes again after an edit that keeps size and modification time', () => {
    const f = path.join(root, 'weights.bin');
    writeFileSync(f, Buffer.alloc(1 << 20, 7));
    // A whole-second modification time, so that it can be set back exactly after the edit.
    const second = 1_700_000_000;
    utimesSync(f, second, second);
    expect(hashFileCached(f).sha256).toBe(sha(readFileSync(f)));
    const cache = JSON.parse(readFileSync(path.join(root, 'cache.json'), 'utf8'));
    expect(Object.keys(cache.entries)).toEqual([f]);
    // A planted wrong hash for the unchanged file is what the cache answers: it is trusted.
    cache.entries[f].sha256 = '1'.repeat(64);
    writeFileSync(path.join(root, 'cache.json'), JSON.stringify(cache));
    expect(hashFileCached(f).sha256).toBe('1'.repeat(64));
    // Same size, same mtime, other bytes: the change time moved, so the file is hashed again.
    const before = statSync(f, { bigint: true });
    const b = readFileSync(f);
    b[12345] = 8;
    writeFileSync(f, b);
    utimesSync(f, second, second);
    const after = statSync(f, { bigint: true });
    expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);
    expect(hashFileCached(f).sha256).toBe(sha(b));
  });

  it('hashes on a worker thread by the same rules: cached answers for unchanged files, a new hash after an edit, errors for a missing file', async () => {
    const f = path.join(root, 'bg.bin');
    const g = path.join(root, 'bg2.bin');
    writeFileSync(f, Buffer.alloc(3 << 20, 5));
    writeFileSync(g, 'second');
    const second = 1_700_000_000;
    utimesSync(f, second, second);
    const got = await hashFilesInBackground([f, g], 'file', { minWorkerBytes: 0 }).done;
    expect(got.map((h) => h.sha256)).toEqual([sha(readFileSync(f)), sha('second')]);
    expect(got[0]!.bytes).toBe(3 << 20);
    // Remembered: a planted hash for the unchanged file is what the cache (and hashFileCached) answer.
    const cache = JSON.parse(readFileSync(path.join(root, 'cache.json'), 'utf8'));
    cache.entries[f].sha256 = '2'.repeat(64);
    writeFileSync(path.join(root, 'cache.json'), JSON.stringify(cache));
    expect((await hashFilesInBackground([f], 'file', { minWorkerBytes: 0 }).done)[0]!.sha256).toBe('2'.repeat(64));
    expect(hashFileCached(f).sha256).toBe('2'.repeat(64));
    // An edit that keeps size and mtime moves the change time: hashed again.
    const b = readFileSync(f);
    b[99] = 6;
    writeFileSync(f, b);
    utimesSync(f, second, second);
    expect((await hashFilesInBackground([f], 'file', { minWorkerBytes: 0 }).done)[0]!.sha256).toBe(sha(b));
    // a small file is hashed on the calling thread, by the same rules
    expect((await hashFilesInBackground([g]).done)[0]!.sha256).toBe(sha('second'));
    await expect(hashFilesInBackground([path.join(root, 'missing.bin')], 'file', { minWorkerBytes: 0 }).done).rejects
      .toThrow(/missing\.bin/);
  });

  it('LOBES_HASH_CACHE=off hashes every time', () => {
    process.env.LOBES_HASH_CACHE = 'off';
    const f = path.join(root, 'x.bin');
    writeFileSync(f, 'abc');
    expect(hashFileCached(f).sha256).toBe(sha('abc'));
    process.env.LOBES_HASH_CACHE = path.join(root, 'cache.json');
  });
});

describe('operating-system errors', () => {
  it('ENOSPC, EISDIR, ENOTDIR, EEXIST and EACCES become one-line LobesErrors naming the path and what to do', () => {
    const mk = (code: string, syscall: string, p?: string) =>
      Object.assign(new Error(`${code}: raw`), { code, syscall, ...(p ? { path: p } : {}) });
    const cases: [Error, string | undefined, RegExp][] = [
      [mk('ENOSPC', 'write'), '/runs/a/cluster/coords.json',
        /^\/runs\/a\/cluster\/coords\.json: no space left on the device \(ENOSPC, write\) \(free some space/],
      [mk('EISDIR', 'open', '/x/out'), undefined, /^\/x\/out: is a folder where a file was expected \(EISDIR, open\)/],
      [mk('ENOTDIR', 'mkdir', '/x/file/run'), undefined,
        /^\/x\/file\/run: a part of the path is not a folder \(ENOTDIR, mkdir\)/],
      [mk('EEXIST', 'mkdir', '/x/file'), undefined,
        /^\/x\/file: exists as a file where a folder is needed \(EEXIST, mkdir\)/],
      [mk('EACCES', 'open', '/root/x'), undefined,
        /^\/root\/x: permission denied \(EACCES, open\) \(check the permissions/],
    ];
    for (const [e, file, re] of cases) {
      const l = systemError(e, file);
      expect(l).toBeInstanceOf(LobesError);
      expect(l!.message).toMatch(re);
      expect(l!.message).not.toMatch(/\n/);
      expect(l!.exitCode).toBe(1);
    }
    expect(systemError(new Error('plain'))).toBeNull();
    expect(systemError(mk('EWHATEVER', 'x'))).toBeNull();
  });
});
