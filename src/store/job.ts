/**
 * A job folder: the output folder of a command that writes over time and resumes (extract's
 * run, eval, attend). Claiming it is the same for every such command:
 *
 *   1. the folder must be missing, empty, or an earlier attempt of the same job (`isJob`);
 *      anything else is refused before a byte is written (lobes never writes into, or takes
 *      over, a folder it did not make);
 *   2. the folder is created if needed, and its writer lock taken (src/store/lock.ts), so two
 *      processes never write one folder;
 *   3. on failure before anything was written, a folder this claim created is removed again,
 *      so a refused command leaves nothing behind.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, systemError } from '../util/errors.js';
import { lockFolder, LOCK_FILE, type FolderLock } from './lock.js';

export interface ClaimOptions {
  /** The command, named in lock messages (e.g. 'lobes eval'). */
  command: string;
  /** Whether a non-empty folder is an earlier attempt of this job (its manifest is there). */
  isJob: (dir: string) => boolean;
  /** What the job folder is, for the refusal (e.g. 'a lobes evaluation'). */
  what: string;
  log?: (line: string) => void;
  /** Wait for a live holder this long (ms; default 0). */
  timeoutMs?: number;
}

export interface JobFolder {
  readonly dir: string;
  readonly lock: FolderLock;
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
  if (!st.isDirectory()) throw new LobesError('exists and is not a folder', { file: dir, hint: 'give a folder path for --out' });
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
    throw new LobesError(`output folder exists and is not ${opts.what}; lobes does not write into it`, { file: dir, hint: 'give a new or empty folder' });
  }
  let created: string | undefined;
  try {
    created = e === null ? mkdirSync(dir, { recursive: true }) : undefined;
  } catch (err) {
    throw systemError(err, dir) ?? err;
  }
  let lock: FolderLock;
  try {
    lock = await lockFolder(dir, { command: opts.command, log: opts.log, timeoutMs: opts.timeoutMs });
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
