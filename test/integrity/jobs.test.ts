/**
 * Job folders (src/store/job.ts): one writer per folder, nothing written into a folder lobes
 * did not make, and nothing left behind by a refused command.
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runExtract } from '../../src/extract/run.js';
import { openRun, verifyRun } from '../../src/store/index.js';
import { LOCK_FILE } from '../../src/store/job.js';
import { fakeDeps, fakeModelDir } from '../extract-run/fake.js';

const N = 40;

describe('job folders', () => {
  let root: string;
  let model: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'lobes-jobs-'));
    model = fakeModelDir(root);
  });

  it('two extractions into one folder at once: one is refused, the other writes a whole, verified run', async () => {
    const out = path.join(root, 'both');
    const go = (dtype: 'fp16' | 'fp32') =>
      runExtract({ model, data: 'fake', out, chunkRows: 8, batch: 4, dtype, quiet: true,
        deps: fakeDeps(N, { delayMs: 20 }) });
    const results = await Promise.allSettled([go('fp16'), go('fp32')]);
    const ok = results.filter((r) => r.status === 'fulfilled');
    const bad = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(1);
    expect(bad).toHaveLength(1);
    expect(String(bad[0]!.reason.message)).toMatch(
      /\.lobes-lock: another lobes process is writing this folder: lobes extract \(pid \d+/,
    );
    // A lock held on another host is not taken over: it is named, with how to clear it.
    const far = path.join(root, 'far');
    mkdirSync(far);
    writeFileSync(path.join(far, LOCK_FILE),
      JSON.stringify({ pid: 4242, host: 'node17.cluster', processStartMs: null, takenAt: new Date().toISOString(),
        purpose: 'lobes extract' }));
    const e2 = await runExtract({ model, data: 'fake', out: far, quiet: true, deps: fakeDeps(N) }).catch((e) => e);
    expect(e2.message).toMatch(
      /another lobes process may be writing this folder: lobes extract \(pid 4242 on host node17\.cluster.*delete .*\.lobes-lock and run again/,
    );
    const winner = (ok[0] as PromiseFulfilledResult<{ dtype: string }>).value.dtype;
    const run = await openRun(out);
    expect(run.manifest.dtype).toBe(winner);
    expect(await verifyRun(out)).toBeGreaterThan(0);
    // Every chunk holds the winner's dtype: no chunk of the other attempt was mixed in.
    for (const h of run.hooks()) expect(h.dtype).toBe(winner === 'fp16' ? 'F16' : 'F32');
    expect(existsSync(path.join(out, LOCK_FILE))).toBe(false);
  });

  it('refuses a folder holding other files, writing nothing into it (not even a lock)', async () => {
    const out = path.join(root, 'thesis');
    mkdirSync(out);
    writeFileSync(path.join(out, 'thesis.tex'), '\\documentclass{article}');
    const err = await runExtract({ model, data: 'fake', out, quiet: true, deps: fakeDeps(N) }).catch((e) => e);
    expect(err.message).toMatch(/thesis: output folder exists and is not a lobes run; lobes does not write into it/);
    expect(readdirSync(out)).toEqual(['thesis.tex']);
    expect(readFileSync(path.join(out, 'thesis.tex'), 'utf8')).toBe('\\documentclass{article}');
  });

  it('a refused extraction leaves no folder behind, and a stale lock from a killed run does not block the rerun', async () => {
    const out = path.join(root, 'nested', 'new-run');
    const deps = { ...fakeDeps(N), openCaptureEngine: async () => Promise.reject(new Error('engine failed to load')) };
    await expect(runExtract({ model, data: 'fake', out, quiet: true, deps })).rejects.toThrow(/engine failed to load/);
    expect(existsSync(path.join(root, 'nested'))).toBe(false);
    // A lock left by a process that no longer runs (kill -9): taken over, with a note.
    mkdirSync(out, { recursive: true });
    writeFileSync(path.join(out, LOCK_FILE),
      JSON.stringify({ pid: 2 ** 22 + 17, host: os.hostname(), processStartMs: null, takenAt: new Date().toISOString(),
        purpose: 'lobes extract' }));
    await runExtract({ model, data: 'fake', out, quiet: true, deps: fakeDeps(N) });
    expect(await verifyRun(out)).toBeGreaterThan(0);
    expect(existsSync(path.join(out, LOCK_FILE))).toBe(false);
  });
});
