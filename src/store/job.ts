/**
 * A job folder: the output folder of a command that writes over time and resumes (extract's
 * run, eval, attend). Claiming it is the same for every such command:
 *
 *   1. the folder must be missing, empty, or an earlier attempt of the same job (`isJob`);
 *      anything else is refused before a byte is written (lobes never writes into, or takes
 *      over, a folder it did not make);
 *   2. the folder is created if needed, and its writer lock `.lobes-lock` taken (the lock file of
 *      src/util/lock.ts: pid, host and process start time; a dead or reused pid's lock is stale and
 *      taken over), so two processes never write one folder; a live holder is refused at once;
 *   3. on failure before anything was written, a folder this claim created is removed again,
 *      so a refused command leaves nothing behind.
 */
import { existsSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { makeDirs } from '../util/io.js';
import * as os from 'node:os';
import * as path from 'node:path';
import { LobesError, opt, systemError } from '../util/errors.js';
import { tryLock, type Lock } from '../util/lock.js';

/** The writer lock's file inside a job folder. */
export const LOCK_FILE = '.lobes-lock';

export interface ClaimOptions {
  /** The command, named in lock messages (e.g. 'lobes eval'). */
  command: string;
  /** Whether a non-empty folder is an earlier attempt of this job (its manifest is there). */
  isJob: (dir: string) => boolean;
  /** What the job folder is, for the refusal (e.g. 'a lobes evaluation'). */
  what: string;
  log?: (line: string) => void;
}

export interface JobFolder {
  readonly dir: string;
  readonly lock: Lock;
  /** Release the lock; when `failed` and this claim created the folder and it is still empty, remove it. */
  close(failed: boolean): void;
}

/** The folder's entries other than its lock file; null when it does not exist. */
function entries(dir: string): string[] | null {
  if (!existsSync(dir)) return null;
  let st;
  try {
    st = statSync(dir);
  } catch (e) {
    throw systemError(e, dir) ?? e;
  }
  if (!st.isDirectory())
    throw new LobesError('exists and is not a folder', { file: dir, hint: `give a folder path for ${opt('out')}` });
  return readdirSync(dir).filter((n) => n !== LOCK_FILE);
}

/** Whether a folder is missing or holds nothing but (maybe) a lock file. */
export function isFreshFolder(dir: string): boolean {
  const e = entries(dir);
  return e === null || e.length === 0;
}

/**
 * Claim `dir` for a job (see the top of this file). The caller reads the folder's state (a
 * previous manifest) only after the claim, under the lock.
 */
export async function claimJobFolder(dir: string, opts: ClaimOptions): Promise<JobFolder> {
  const e = entries(dir);
  if (e !== null && e.length > 0 && !opts.isJob(dir)) {
    throw new LobesError(`output folder exists and is not ${opts.what}; lobes does not write into it`, { file: dir,
      hint: 'give a new or empty folder', code: 'E_EXISTS' });
  }
  // makeDirs names a read-only disk as such (a recursive mkdir there reports ENOENT).
  const created = e === null ? makeDirs(dir) : undefined;
  let lock: Lock;
  try {
    lock = lockFolder(dir, opts.command);
  } catch (err) {
    if (created) removeEmptyChain(dir, created);
    throw err;
  }
  return {
    dir,
    lock,
    close(failed: boolean) {
      lock.release();
      if (failed && created) removeEmptyChain(dir, created);
    },
  };
}

/**
 * Run `work` as the only writer of `dir`: claim the folder (claimJobFolder), run, and release it,
 * as failed unless `work` returned (so a folder this claim created is removed if still empty).
 * Every job command (extract, eval, attend, ablate and the merges) goes through it.
 */
export async function withJobFolder<T>(dir: string, opts: ClaimOptions,
  work: (job: JobFolder) => Promise<T> | T): Promise<T>
{
  const job = await claimJobFolder(dir, opts);
  let failed = true;
  try {
    const out = await work(job);
    failed = false;
    return out;
  } finally {
    job.close(failed);
  }
}

/** Take `dir/.lobes-lock`, or refuse naming the process that holds it. */
function lockFolder(dir: string, command: string): Lock {
  const file = path.join(dir, LOCK_FILE);
  const got = tryLock(file, { purpose: command });
  if ('release' in got) return got;
  const h = got.holder;
  if (h.pid === 0)
    throw new LobesError('another lobes process is starting to write this folder', { file,
      hint: 'wait for it, or write to another folder', code: 'E_LOCKED' });
  const who = `${h.purpose ?? 'a lobes command'} (pid ${h.pid}${h.host !== os.hostname() ? ` on host ${h.host}` : ''}${
    h.takenAt ? `, since ${h.takenAt}` : ''
  })`;
  if (h.host !== os.hostname()) {
    throw new LobesError(`another lobes process may be writing this folder: ${who}`, { file,
      hint: `wait for it to finish; if it no longer runs on ${h.host}, delete ${file} and run again`,
      code: 'E_LOCKED' });
  }
  throw new LobesError(`another lobes process is writing this folder: ${who}`, { file,
    hint: 'wait for it to finish, or write to another folder', code: 'E_LOCKED' });
}

/** Remove `dir` and its parents up to `top` (the first folder mkdir created), each only while empty. */
function removeEmptyChain(dir: string, top: string): void {
  let d = path.resolve(dir);
  const stop = path.resolve(top);
  for (;;) {
    try {
      if (readdirSync(d).length) return;
      rmdirSync(d);
    } catch {
      return;
    }
    if (d === stop) return;
    const p = path.dirname(d);
    if (p === d) return;
    d = p;
  }
}
