/**
 * A read-only disk is named as one. Node's recursive mkdir reports ENOENT when it cannot
 * create a missing folder on a read-only file system; lobes names EROFS. The test mounts a
 * read-only tmpfs, which needs root (or CAP_SYS_ADMIN); elsewhere it is skipped.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { makeDirs, writeFileAtomicSync, writeDirAtomic } from '../../src/util/io.js';
import { TINY, lobes, writeNpy, values } from './helpers.js';
import { TINY_GGUF } from '../convert/tiny-llama3.js';

const root = mkdtempSync(path.join(tmpdir(), 'lobes-erofs-'));
const ro = path.join(root, 'ro');
const mounted = (() => {
  spawnSync('mkdir', ['-p', ro]);
  return spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=16m', 'tmpfs', ro]).status === 0;
})();
if (!mounted) console.log('skipping the read-only disk tests: cannot mount a read-only tmpfs here (needs root)');

describe.skipIf(!mounted)('a read-only disk', () => {
  beforeAll(() => {
    writeNpy(path.join(root, 'm.npy'), 12, 4, values(48, 5));
    writeFileSync(path.join(root, 'labels.txt'), 'a\nb\n'.repeat(6));
  });
  afterAll(() => {
    spawnSync('umount', [ro]);
    rmSync(root, { recursive: true, force: true });
  });

  it('is named EROFS by makeDirs, writeFileAtomicSync and writeDirAtomic, not ENOENT', async () => {
    expect(() => makeDirs(path.join(ro, 'a', 'b'))).toThrow(
      /ro\/a: read-only file system \(EROFS, mkdir\) \(write to a writable folder\)$/,
    );
    expect(() => writeFileAtomicSync(path.join(ro, 'a', 'f.txt'), 'x')).toThrow(/read-only file system \(EROFS/);
    expect(() => writeFileAtomicSync(path.join(ro, 'f.txt'), 'x')).toThrow(/read-only file system \(EROFS/);
    await expect(writeDirAtomic(path.join(ro, 'out', 'x'), () => undefined, { kind: 'cluster' })).rejects.toThrow(
      /read-only file system \(EROFS/,
    );
    await expect(writeDirAtomic(path.join(ro, 'out'), () => undefined, { kind: 'cluster' })).rejects.toThrow(
      /read-only file system \(EROFS/,
    );
  });

  it('lobes cluster --out on it fails with one line naming the read-only disk', async () => {
    const r = await lobes(['cluster', path.join(root, 'm.npy'), '--labels', path.join(root, 'labels.txt'),
      '--perplexity', '2', '--iterations', '250', '--bootstrap', '5', '--permutations', '5', '--quiet', '--out',
      path.join(ro, 'results', 'cluster')]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^lobes cluster: .*ro\/results: read-only file system \(EROFS, mkdir\)/);
    expect(r.stderr).not.toMatch(/ENOENT|no such file/);
  });

  it('lobes extract --out on it fails with one line naming the read-only disk', async () => {
    const r = await lobes(['extract', '--model', TINY, '--data', 'builtin:social', '--out', path.join(ro, 'runs', 'r1'),
      '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr, r.stderr).toMatch(/^lobes extract: .*ro\/runs: read-only file system \(EROFS, mkdir\)/);
  });
  it('a cache folder on it is named as such, with the real cause: --cache and LOBES_CACHE', async () => {
    expect(() => makeDirs(path.join(ro, 'c', 'gguf'), { what: 'cache folder', hint: 'pass --cache DIR' })).toThrow(
      /ro\/c: cannot create the cache folder: read-only file system \(EROFS, mkdir\) \(pass --cache DIR\)$/,
    );
    const a = await lobes(['inspect', TINY_GGUF, '--cache', path.join(ro, 'c')]);
    expect(a.code).toBe(1);
    expect(a.stderr.trim().split('\n')).toHaveLength(1);
    expect(a.stderr).toMatch(
      /^lobes inspect: .*ro\/c: cannot create the cache folder: read-only file system \(EROFS, mkdir\) \(pass --cache DIR, or set LOBES_CACHE\)/,
    );
    const saved = process.env.LOBES_CACHE;
    process.env.LOBES_CACHE = path.join(ro, 'lc');
    const b = await lobes(['inspect', TINY_GGUF]).finally(() => {
      if (saved === undefined) delete process.env.LOBES_CACHE;
      else process.env.LOBES_CACHE = saved;
    });
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(
      /^lobes inspect: .*ro\/lc: cannot create the cache folder: read-only file system \(EROFS, mkdir\)/,
    );
    expect(a.stderr + b.stderr).not.toMatch(/ENOENT|no such file/);
  });
});
