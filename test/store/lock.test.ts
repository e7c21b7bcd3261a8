/**
 * The job-folder writer lock (src/store/lock.ts): a live holder is refused (at once, or after
 * the wait), a dead holder's lock and a reused pid's lock are taken over, a lock from another
 * host is refused with a way out, and release removes only the holder's own file.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { lockFolder, lockState, processStart, LOCK_FILE, type LockInfo } from '../../src/store/lock.js';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'lobes-lock-'));

function lockOf(over: Partial<LockInfo>): LockInfo {
  return { format: 'lobes-lock', pid: process.pid, host: os.hostname(), start: processStart(process.pid), command: 'lobes extract', createdAt: new Date().toISOString(), token: 'x', ...over };
}

/** A pid that certainly ended: a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(r.stdout.toString());
}

describe('folder writer lock', () => {
  it('refuses a second writer while the first holds the folder, and admits one after release', async () => {
    const d = tmp();
    const a = await lockFolder(d, { command: 'lobes extract' });
    await expect(lockFolder(d, { command: 'lobes extract' })).rejects.toThrow(/another lobes process is writing this folder: lobes extract \(pid \d+, started .*\.lobes-lock|\.lobes-lock: another lobes process is writing this folder/);
    a.release();
    expect(existsSync(path.join(d, LOCK_FILE))).toBe(false);
    const b = await lockFolder(d, { command: 'lobes eval' });
    expect(JSON.parse(readFileSync(path.join(d, LOCK_FILE), 'utf8')).command).toBe('lobes eval');
    b.release();
  });

  it('waits up to the timeout for a live holder, then refuses; a release during the wait lets it in', async () => {
    const d = tmp();
    const a = await lockFolder(d, { command: 'lobes convert' });
    const t0 = Date.now();
    await expect(lockFolder(d, { command: 'lobes convert', timeoutMs: 300, pollMs: 50 })).rejects.toThrow(/another lobes process/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    setTimeout(() => a.release(), 150);
    const b = await lockFolder(d, { command: 'lobes convert', timeoutMs: 5000, pollMs: 20 });
    expect(b.info.pid).toBe(process.pid);
    b.release();
  });

  it('takes over the lock of a process that is gone (kill -9), and says so', async () => {
    const d = tmp();
    writeFileSync(path.join(d, LOCK_FILE), JSON.stringify(lockOf({ pid: deadPid(), token: 'dead' })));
    const notes: string[] = [];
    const l = await lockFolder(d, { command: 'lobes extract', log: (x) => notes.push(x) });
    expect(notes.join('\n')).toMatch(/took over the lock of lobes extract \(pid \d+, .*\), which is no longer running/);
    expect(JSON.parse(readFileSync(l.file, 'utf8')).token).toBe(l.info.token);
    l.release();
  });

  it('treats a reused pid (same pid, another start time) as stale', () => {
    const start = processStart(process.pid);
    if (start === null) {
      console.log('lock.test.ts: no /proc here; the pid-reuse check is not tested');
      return;
    }
    expect(lockState(lockOf({}))).toBe('live');
    expect(lockState(lockOf({ start: String(Number(start) + 1) }))).toBe('stale');
  });

  it('takes over a lock file cut short by a crash (not JSON)', async () => {
    const d = tmp();
    writeFileSync(path.join(d, LOCK_FILE), '{"format":"lobes-lo');
    const l = await lockFolder(d, { command: 'lobes eval' });
    l.release();
  });

  it('refuses a lock held on another host, naming it and how to clear it', async () => {
    const d = tmp();
    writeFileSync(path.join(d, LOCK_FILE), JSON.stringify(lockOf({ host: 'node17.cluster', pid: 4242, token: 'far' })));
    await expect(lockFolder(d, { command: 'lobes extract' })).rejects.toThrow(/pid 4242 on host node17\.cluster.*delete .*\.lobes-lock and run again/);
    // The foreign lock is left as it was.
    expect(JSON.parse(readFileSync(path.join(d, LOCK_FILE), 'utf8')).token).toBe('far');
  });

  it('release leaves a lock that is no longer the holder’s', async () => {
    const d = tmp();
    const l = await lockFolder(d, { command: 'lobes extract' });
    writeFileSync(l.file, JSON.stringify(lockOf({ token: 'someone-else' })));
    l.release();
    expect(existsSync(l.file)).toBe(true);
  });
});
