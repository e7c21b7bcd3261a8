/**
 * A lock file that says who holds it, for work one process does while others wait (a GGUF
 * conversion into the cache, a job folder written by one command at a time).
 *
 * The file is created exclusively (O_CREAT | O_EXCL) and holds JSON: pid, host, the holder's
 * process start time (ms since the epoch), when the lock was taken, and what for. A waiting
 * process decides, each time it looks:
 *  - the holder is on this host and its pid is gone, or the pid now belongs to a process that
 *    started at another time than the holder (the pid was reused), or runs a program that
 *    cannot be lobes (its /proc/PID/cmdline is not a JavaScript runtime): the lock is stale and is
 *    removed (by renaming it aside first, so two waiters never both remove a fresh lock);
 *  - the holder is on another host (a shared file system) and the lock is older than
 *    `foreignStaleMs`: nothing here can tell whether it is alive, so the wait stops with a
 *    one-line error naming the lock file, the holder and what to do;
 *  - otherwise it waits, up to `timeoutMs` (default $LOBES_LOCK_TIMEOUT seconds, else one
 *    hour), then stops with a one-line error naming the lock file and the holder.
 * An unreadable or empty lock (a holder between create and write, or one that died there) is
 * waited on for a few seconds and then treated as stale.
 */
import { closeSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { LobesError } from './errors.js';

/** What a lock file records about its holder. */
export interface LockHolder {
  pid: number;
  host: string;
  /** When the holder process started (ms since the epoch; null where unknown). */
  processStartMs: number | null;
  /** When the lock was taken (ISO time). */
  takenAt: string;
  /** What the lock is for, in words. */
  purpose?: string;
}

export interface LockOptions {
  /** What the lock is for (recorded, and named in messages). */
  purpose?: string;
  /** Longest wait in ms (default $LOBES_LOCK_TIMEOUT seconds, else 3600 s). */
  timeoutMs?: number;
  /** Age after which another host's lock is reported instead of waited on (default 24 h). */
  foreignStaleMs?: number;
  /** Time between looks, ms (default 500). */
  pollMs?: number;
  /** Told once when the lock is held by another live process (and the wait begins). */
  onWait?: (holder: LockHolder) => void;
  /** Checked after each look: a value ends the wait without the lock (e.g. the work was done by the holder). */
  until?: () => boolean;
}

/** A held lock. */
export interface Lock {
  file: string;
  release(): void;
}

const EMPTY_GRACE_MS = 5000;

/** This process's start time, ms since the epoch (rounded to the clock tick where /proc says it). */
export function processStartMs(pid: number = process.pid): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name (which may hold spaces and parentheses): field 22 is the start time in clock ticks since boot.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(rest[19]);
    const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'));
    if (!Number.isFinite(ticks) || !btime) return null;
    return Number(btime[1]) * 1000 + (ticks * 1000) / 100;
  } catch {
    return pid === process.pid ? Math.round(Date.now() - process.uptime() * 1000) : null;
  }
}

/** Whether `pid` is a running process on this host (EPERM: it is, but someone else's). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === 'EPERM';
  }
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8'));
    if (!h || typeof h.pid !== 'number' || typeof h.host !== 'string') return null;
    return { pid: h.pid, host: h.host, processStartMs: typeof h.processStartMs === 'number' ? h.processStartMs : null,
      takenAt: String(h.takenAt ?? h.startedAt ?? ''), purpose: typeof h.purpose === 'string' ? h.purpose : undefined };
  } catch {
    return null;
  }
}

function ageMs(file: string): number | null {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

/**
 * The command line of a process on this host (/proc/PID/cmdline, arguments joined by spaces);
 * null where it cannot be read (another OS, or no such process).
 */
export function processCommand(pid: number): string | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    return raw ? raw.split('\0').filter(Boolean).join(' ') : null;
  } catch {
    return null;
  }
}

/**
 * Whether a command line can be a lobes process: lobes runs in a JavaScript runtime (node, bun,
 * deno; through npx, tsx or vitest too), so a lock whose live pid runs anything else (a shell,
 * `sleep`, a database) is not held by lobes. Unknown (null): assume it can.
 */
function canBeLobes(cmd: string | null): boolean {
  if (cmd === null) return true;
  const prog = path.basename(cmd.split(' ')[0] ?? '');
  return /^(node|nodejs|bun|deno|npx|npm|tsx|vitest|lobes)(\d|\.|-|$)/i.test(prog) || /\blobes\b/.test(cmd);
}

/**
 * Whether a holder on this host is gone: its pid is dead, was reused by a process started at
 * another time, or now runs a program that cannot be lobes (checked by its command line).
 */
function deadHere(h: LockHolder): boolean {
  if (!pidAlive(h.pid)) return true;
  if (!canBeLobes(processCommand(h.pid))) return true;
  if (h.processStartMs === null) return false;
  const now = processStartMs(h.pid);
  // /proc start times are in clock ticks; allow a generous margin.
  return now !== null && Math.abs(now - h.processStartMs) > 2000;
}

/** Remove a stale lock without ever removing a fresh one another waiter just created. */
function removeStale(file: string, seen: LockHolder | null): void {
  const aside = `${file}.stale-${process.pid}-${Date.now()}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // someone else removed it
  }
  const got = readHolder(aside);
  const same = seen === null
    ? got === null
    : got !== null && got.pid === seen.pid && got.host === seen.host && got.takenAt === seen.takenAt;
  if (same) rmSync(aside, { force: true });
  else {
    // A fresh lock slipped in between the look and the rename: put it back.
    try {
      renameSync(aside, file);
    } catch {
      rmSync(aside, { force: true });
    }
  }
}

function describeHolder(h: LockHolder): string {
  const cmd = h.host === hostname() ? processCommand(h.pid) : null;
  return `pid ${h.pid} on ${h.host}${h.takenAt ? ` since ${h.takenAt}` : ''}${h.purpose ? ` (${h.purpose})` : ''}${
    cmd ? `, running ${JSON.stringify(cmd.length > 120 ? cmd.slice(0, 117) + '...' : cmd)}` : ''
  }`;
}

/** One attempt: the lock, or the live holder that has it. Stale locks are removed and retried. */
export function tryLock(file: string, opts: Pick<LockOptions, 'purpose' | 'foreignStaleMs'> = {}): Lock | {
  holder: LockHolder;
} {
  const host = hostname();
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      try {
        const me: LockHolder = { pid: process.pid, host, processStartMs: processStartMs(),
          takenAt: new Date().toISOString(), ...(opts.purpose ? { purpose: opts.purpose } : {}) };
        writeSync(fd, JSON.stringify(me) + '\n');
      } finally {
        closeSync(fd);
      }
      let released = false;
      return {
        file,
        release: () => {
          if (released) return;
          released = true;
          const h = readHolder(file);
          if (h && h.pid === process.pid && h.host === host) rmSync(file, { force: true });
        },
      };
    } catch (e: any) {
      if (e?.code !== 'EEXIST')
        throw new LobesError(`cannot create the lock file (${e?.code ?? e?.message})`, { file,
          hint: 'check that its folder exists and is writable' });
    }
    const h = readHolder(file);
    if (!h) {
      const age = ageMs(file);
      if (age !== null && age < EMPTY_GRACE_MS)
        return { holder: { pid: 0, host: '?', processStartMs: null, takenAt: '' } };
      removeStale(file, null);
      continue;
    }
    if (h.host === host) {
      if (deadHere(h)) {
        removeStale(file, h);
        continue;
      }
      return { holder: h };
    }
    const age = ageMs(file);
    const limit = opts.foreignStaleMs ?? 24 * 3600_000;
    if (age !== null && age > limit) {
      throw new LobesError(
        `the lock is held by ${describeHolder(h)}, another host, for ${
          Math.round(age / 60000)
        } min; lobes cannot tell from here whether that process still runs`,
        {
          file,
          hint: `if no lobes process on ${h.host} is using it, remove the lock file and run again`,
          code: 'E_LOCKED',
        },
      );
    }
    return { holder: h };
  }
  throw new LobesError('the lock file keeps reappearing while stale locks are removed', { file,
    hint: 'another process is racing for it; run again', code: 'E_LOCKED' });
}

function defaultTimeoutMs(): number {
  const s = Number(process.env.LOBES_LOCK_TIMEOUT);
  return Number.isFinite(s) && s > 0 ? s * 1000 : 3600_000;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Take the lock, waiting while another live process holds it. Returns null when `until`
 * said the wait is over without it. Throws a one-line LobesError on timeout, or when another
 * host's lock is older than `foreignStaleMs`.
 */
export async function acquireLock(file: string, opts: LockOptions = {}): Promise<Lock | null> {
  const timeout = opts.timeoutMs ?? defaultTimeoutMs();
  const poll = opts.pollMs ?? 500;
  const t0 = Date.now();
  let told = false;
  for (;;) {
    const got = tryLock(file, opts);
    if ('release' in got) return got;
    if (!told && got.holder.pid !== 0) {
      opts.onWait?.(got.holder);
      told = true;
    }
    if (Date.now() - t0 >= timeout) {
      throw new LobesError(
        `waited ${Math.round((Date.now() - t0) / 1000)} s for the lock held by ${
          got.holder.pid ? describeHolder(got.holder) : 'a process that has not written its name yet'
        }`,
        {
          file,
          hint:
            'if that process is not running lobes any more, remove the lock file; or wait longer with LOBES_LOCK_TIMEOUT=SECONDS',
          code: 'E_LOCKED',
        },
      );
    }
    await sleep(Math.min(poll, Math.max(1, timeout - (Date.now() - t0))));
    if (opts.until?.()) return null;
  }
}
