/**
 * src/util/lock.ts: who holds a lock, when it is stale, and that a wait always ends with a
 * one-line message naming the lock file. Holders are planted as lock files naming a real
 * live process (a child `sleep`), a dead pid, a reused pid (live, other start time) or
 * another host.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync, readdirSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { acquireLock, pidAlive, processStartMs, tryLock } from '../../src/util/lock.js';

let dir: string;
let child: ChildProcess;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lobes-lock-'));
  // a live holder is a JavaScript runtime, as lobes is (a lock of any other program is stale)
  child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
});
afterAll(() => {
  child.kill();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
const lockFile = () => path.join(dir, `l${n++}.lock`);
const plant = (file: string, o: Record<string, unknown>) =>
  writeFileSync(file, JSON.stringify({ takenAt: new Date().toISOString(), ...o }));

/** A pid that no process has (the highest pid of a child that has exited). */
async function deadPid(): Promise<number> {
  const c = spawn('true');
  await new Promise((r) => c.on('exit', r));
  expect(pidAlive(c.pid!)).toBe(false);
  return c.pid!;
}

describe('lock files', () => {
  it('a lock of a live pid that runs another program than lobes is stale after a look at its command line', async () => {
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 100));
      const f = lockFile();
      plant(f, { pid: other.pid, host: hostname(), processStartMs: processStartMs(other.pid!) });
      const t0 = Date.now();
      const l = await acquireLock(f, { timeoutMs: 5000, pollMs: 20 });
      expect(l).not.toBeNull();
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(JSON.parse(readFileSync(f, 'utf8')).pid).toBe(process.pid);
      l!.release();
      expect(pidAlive(other.pid!)).toBe(true);
    } finally {
      other.kill();
    }
  });

  it('takes a free lock, records pid, host and start time, and releases it', () => {
    const f = lockFile();
    const l = tryLock(f, { purpose: 'testing' });
    expect('release' in l).toBe(true);
    const h = JSON.parse(readFileSync(f, 'utf8'));
    expect(h.pid).toBe(process.pid);
    expect(h.host).toBe(hostname());
    expect(Math.abs(h.processStartMs - (Date.now() - process.uptime() * 1000))).toBeLessThan(3000);
    expect(h.purpose).toBe('testing');
    // A second attempt by this same process sees a live holder.
    const again = tryLock(f);
    expect('holder' in again && again.holder.pid).toBe(process.pid);
    (l as any).release();
    expect(existsSync(f)).toBe(false);
  });

  it('removes the lock of a dead process on this host', async () => {
    const f = lockFile();
    plant(f, { pid: await deadPid(), host: hostname(), processStartMs: Date.now() - 1000 });
    const l = await acquireLock(f, { timeoutMs: 2000, pollMs: 20 });
    expect(l).not.toBeNull();
    expect(JSON.parse(readFileSync(f, 'utf8')).pid).toBe(process.pid);
    l!.release();
  });

  it('removes the lock of a reused pid (alive, but started at another time)', async () => {
    const f = lockFile();
    const start = processStartMs(child.pid!);
    expect(start).not.toBeNull();
    plant(f, { pid: child.pid, host: hostname(), processStartMs: start! - 3600_000 });
    const l = await acquireLock(f, { timeoutMs: 2000, pollMs: 20 });
    expect(l).not.toBeNull();
    l!.release();
  });

  it('waits for a live holder, then stops with a one-line message naming the lock file and the holder', async () => {
    const f = lockFile();
    plant(f, { pid: child.pid, host: hostname(), processStartMs: processStartMs(child.pid!) });
    const before = readFileSync(f);
    const waits: number[] = [];
    const t0 = Date.now();
    const err = await acquireLock(f, { timeoutMs: 600, pollMs: 50, onWait: (h) => waits.push(h.pid) }).catch((e) => e);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(waits).toEqual([child.pid]);
    expect(err.message).not.toMatch(/\n/);
    expect(err.message).toContain(f);
    expect(err.message).toContain(`pid ${child.pid} on ${hostname()}`);
    expect(err.message).toMatch(/remove the lock file/);
    // The holder's lock is untouched.
    expect(readFileSync(f).equals(before)).toBe(true);
  });

  it('reports an old lock of another host instead of waiting on it, and leaves it', async () => {
    const f = lockFile();
    plant(f, { pid: 4242, host: 'other-node-7', processStartMs: 0 });
    const old = (Date.now() - 3 * 3600_000) / 1000;
    utimesSync(f, old, old);
    const t0 = Date.now();
    const err = await acquireLock(f, { timeoutMs: 60_000, foreignStaleMs: 3600_000, pollMs: 20 }).catch((e) => e);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(err.message).toContain(f);
    expect(err.message).toMatch(/pid 4242 on other-node-7.*another host, for 18\d min/);
    expect(existsSync(f)).toBe(true);
  });

  it('waits on a fresh lock of another host until the timeout', async () => {
    const f = lockFile();
    plant(f, { pid: 4242, host: 'other-node-7', processStartMs: 0 });
    const err = await acquireLock(f, { timeoutMs: 300, pollMs: 20 }).catch((e) => e);
    expect(err.message).toMatch(/waited \d+ s for the lock held by pid 4242 on other-node-7/);
  });

  it('treats an empty lock as being written for a few seconds, then as stale', async () => {
    const f = lockFile();
    writeFileSync(f, '');
    expect('holder' in tryLock(f)).toBe(true);
    const old = (Date.now() - 60_000) / 1000;
    utimesSync(f, old, old);
    const l = tryLock(f);
    expect('release' in l).toBe(true);
    (l as any).release();
  });

  it('ends the wait without the lock when `until` says so', async () => {
    const f = lockFile();
    plant(f, { pid: child.pid, host: hostname(), processStartMs: processStartMs(child.pid!) });
    let looks = 0;
    const l = await acquireLock(f, { timeoutMs: 5000, pollMs: 10, until: () => ++looks >= 3 });
    expect(l).toBeNull();
    expect(existsSync(f)).toBe(true);
  });

  it('release never removes a lock another process took after this one lost it', () => {
    const f = lockFile();
    const l = tryLock(f) as any;
    plant(f, { pid: child.pid, host: hostname(), processStartMs: processStartMs(child.pid!) });
    l.release();
    expect(existsSync(f)).toBe(true);
    expect(readdirSync(dir).filter((x) => x.includes('.stale-'))).toEqual([]);
  });
});
