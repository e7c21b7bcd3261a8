/**
 * The exclusive writer lock of a job folder (a run, an evaluation, an attend folder).
 *
 * One process writes a folder at a time. The lock is a file, `.lobes-lock`, created with
 * O_EXCL and holding who wrote it: pid, host, the process's start time (Linux: the start
 * tick in /proc/PID/stat, so a reused pid is not mistaken for the holder), the command and
 * when. Acquiring a held lock:
 *   - holder on this host and alive (same pid, same start time): wait up to `timeoutMs`
 *     (default 0: refuse at once), then refuse naming the holder and the lock file;
 *   - holder on this host and gone (no such pid, or the pid now belongs to another process):
 *     the lock is stale (a crash or kill -9); it is taken over, and the caller is told;
 *   - holder on another host (a shared file system): lobes cannot tell whether it is alive,
 *     so it refuses, naming the host, pid and age, and says how to clear the lock.
 * Release removes the file only while it is still this holder's (the token matches).
 */
import { closeSync, openSync, readFileSync, renameSync, rmSync, writeSync, existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { LobesError, systemError } from '../util/errors.js';

export const LOCK_FILE = '.lobes-lock';

/** What a lock file records. */
export interface LockInfo {
  format: 'lobes-lock';
  pid: number;
  host: string;
  /** Process start tick from /proc/PID/stat (Linux), else null. */
  start: string | null;
  /** The command that holds it, e.g. `lobes extract`. */
  command: string;
  createdAt: string;
  /** Random token: release removes the file only while it holds this token. */
  token: string;
}

export interface LockOptions {
  /** What holds the lock, named in messages (e.g. 'lobes extract'). */
  command: string;
  /** How long to wait for a live holder on this host (ms; default 0 = refuse at once). */
  timeoutMs?: number;
  /** Poll interval while waiting (ms; default 200). */
  pollMs?: number;
  /** Told when a stale lock is taken over. */
  log?: (line: string) => void;
}

/** A held lock. */
export interface FolderLock {
  readonly file: string;
  readonly info: LockInfo;
  /** Remove the lock file if it is still this holder's. Safe to call twice. */
  release(): void;
}

/** The start tick of a process (field 22 of /proc/PID/stat), or null where /proc is not available. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the process `pid` exists on this host (EPERM: it exists but belongs to another user). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e.code === 'EPERM';
  }
}

/** 'live', 'stale' (the holder is gone), or 'foreign' (another host: unknown). */
export function lockState(info: LockInfo): 'live' | 'stale' | 'foreign' {
  if (info.host !== os.hostname()) return 'foreign';
  if (!Number.isInteger(info.pid) || info.pid <= 0 || !pidAlive(info.pid)) return 'stale';
  if (info.start !== null) {
    const now = processStart(info.pid);
    if (now !== null && now !== info.start) return 'stale';
  }
  return 'live';
}

function readLock(file: string): LockInfo | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    if (e.code === 'ENOENT') return null;
    throw systemError(e, file) ?? e;
  }
  try {
    const j = JSON.parse(text);
    if (j && j.format === 'lobes-lock' && Number.isInteger(j.pid) && typeof j.host === 'string') return j as LockInfo;
  } catch {
    // fall through: unreadable lock
  }
  // A lock file cut short by a crash between create and write: its writer never held the folder.
  return { format: 'lobes-lock', pid: -1, host: os.hostname(), start: null, command: 'unknown', createdAt: '', token: '' };
}

function age(info: LockInfo): string {
  const t = Date.parse(info.createdAt);
  if (!Number.isFinite(t)) return 'unknown age';
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  return s < 120 ? `${s} s ago` : s < 7200 ? `${Math.round(s / 60)} min ago` : `${(s / 3600).toFixed(1)} h ago`;
}

function tryCreate(file: string, info: LockInfo): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (e: any) {
    if (e.code === 'EEXIST') return false;
    throw systemError(e, file) ?? e;
  }
  try {
    writeSync(fd, JSON.stringify(info) + '\n');
  } finally {
    closeSync(fd);
  }
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Take the writer lock of `dir` (which must exist): `dir/.lobes-lock`. Throws a one-line LobesError when another process holds it. */
export function lockFolder(dir: string, opts: LockOptions): Promise<FolderLock> {
  return acquireLock(path.join(dir, LOCK_FILE), dir, opts);
}

/**
 * Take the lock file `file` (its folder must exist), guarding `what` (named in messages).
 * The same rules as lockFolder; e.g. a conversion cache entry guards itself with `<entry>.lock`.
 */
export async function acquireLock(file: string, what: string, opts: LockOptions): Promise<FolderLock> {
  const dir = what;
  const info: LockInfo = { format: 'lobes-lock', pid: process.pid, host: os.hostname(), start: processStart(process.pid), command: opts.command, createdAt: new Date().toISOString(), token: randomBytes(12).toString('hex') };
  const deadline = Date.now() + (opts.timeoutMs ?? 0);
  for (;;) {
    if (tryCreate(file, info)) break;
    const held = readLock(file);
    if (!held) continue; // released between our attempt and the read
    const state = lockState(held);
    if (state === 'stale') {
      // Move the stale file aside atomically so that two takers cannot both remove a fresh lock.
      const aside = `${file}.stale-${process.pid}-${info.token}`;
      try {
        renameSync(file, aside);
      } catch (e: any) {
        if (e.code === 'ENOENT') continue;
        throw systemError(e, file) ?? e;
      }
      const moved = readLock(aside);
      if (moved && moved.token !== held.token && lockState(moved) === 'live') {
        // Between the read and the rename another process took the lock: give it back.
        try {
          renameSync(aside, file);
        } catch {
          rmSync(aside, { force: true });
        }
        continue;
      }
      rmSync(aside, { force: true });
      opts.log?.(`note: ${dir}: took over the lock of ${held.command} (pid ${held.pid}, ${age(held)}), which is no longer running`);
      continue;
    }
    if (state === 'foreign') {
      throw new LobesError(`another lobes process may be writing this folder: ${held.command} (pid ${held.pid} on host ${held.host}, started ${age(held)})`, {
        file,
        hint: `wait for it to finish; if it is no longer running on ${held.host}, delete ${file} and run again`,
      });
    }
    if (Date.now() >= deadline) {
      throw new LobesError(`another lobes process is writing this folder: ${held.command} (pid ${held.pid}, started ${age(held)})`, {
        file,
        hint: 'wait for it to finish, or write to another folder',
      });
    }
    await sleep(opts.pollMs ?? 200);
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    process.off('exit', release);
    const now = readLock(file);
    if (now && now.token === info.token) rmSync(file, { force: true });
  };
  process.on('exit', release);
  return { file, info, release };
}

/** Whether `dir` holds a lock file (any state). */
export function hasLock(dir: string): boolean {
  return existsSync(path.join(dir, LOCK_FILE));
}
