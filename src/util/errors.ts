/**
 * Errors a user can act on. Every failure that reaches the CLI is a LobesError whose
 * message is one line: what went wrong, where (file, place, sample id) and, when there
 * is one, what to do about it. The CLI prints `lobes: <message>` and exits non-zero.
 * Each carries a stable machine-readable `code` (ERROR_CODES; docs/api.md lists them).
 *
 * An error about an option names it by its library key (the field of the run function's
 * options object, e.g. `resolution`, `probePermutations`): the message says "sweep needs
 * resolution block" and `option` (and `also`) hold the keys. Messages mark each option they
 * name with opt(key, value?), so the CLI can spell the same line with its flags
 * ("--sweep needs --resolution block"; src/cli/args.ts holds each command's flag of each key).
 */

/** What kind of failure a LobesError is, for scripts: stable across versions. */
export const ERROR_CODES = {
  E_INPUT:
    'bad input: a file, dataset, run or setting lobes cannot use as it is (the default, operating-system failures included)',
  E_USAGE: 'bad flags or arguments (UsageError, exit code 2)',
  E_STALE: 'an output whose inputs changed since it was written, or that belongs to another run',
  E_LOCKED: 'another lobes process holds the folder or file lock',
  E_EXISTS: "refused to write over a file or folder lobes did not write (or another command's output)",
  E_MODEL: 'a model lobes cannot read, convert or capture from',
  E_ABORTED: 'the call was cancelled through its AbortSignal; a job folder is left resumable',
} as const;

/** One of ERROR_CODES' keys. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The marks opt() puts around an option named in a message: \u0001key[\u0002value]\u0003. */
// eslint-disable-next-line no-control-regex -- the marks are control characters so that no message text can look like one
const OPTION_MARK = /\u0001([^\u0001\u0002\u0003]+)(?:\u0002([^\u0001\u0002\u0003]*))?\u0003/g;

/**
 * Option `key` (a library option key, e.g. `resolution`), with the value it takes when the
 * message names one (`opt('resolution', 'block')`), marked in an error message or hint: the
 * error reads "resolution block", the CLI prints "--resolution block".
 */
export function opt(key: string, value?: string | number): string {
  return `\u0001${key}${value === undefined ? '' : `\u0002${value}`}\u0003`;
}

/** `text` with each option opt() marked spelled by `spell` (default: its library key), its value after a space. */
export function optionText(text: string, spell: (key: string) => string = (key) => key): string {
  return text.replace(OPTION_MARK,
    (_, key: string, value: string | undefined) => spell(key) + (value === undefined ? '' : ` ${value}`));
}

/** The option keys opt() marked in `text`, in order, each once. */
export function optionsIn(text: string): string[] {
  return [...new Set([...text.matchAll(OPTION_MARK)].map((m) => m[1]!))];
}

export interface ErrorPlace {
  /** File the problem is in (printed as given; `.` and `..` by their full path). */
  file?: string;
  /** Place inside the file: a line, a tensor name, a node, a sample id, a byte offset. */
  where?: string;
  /** What to do about it. */
  hint?: string;
  /** Exit code for the CLI (default 1; 2 is reserved for usage errors). */
  exitCode?: number;
  /** The kind of failure (default E_INPUT). */
  code?: ErrorCode;
  /** The library option key the error is about (default: the first one opt() marks in the message or hint). */
  option?: string;
  /** Other option keys the message involves (default: the rest of those opt() marks). */
  also?: string[];
}

export class LobesError extends Error {
  readonly file?: string;
  readonly where?: string;
  readonly hint?: string;
  readonly exitCode: number;
  /** The kind of failure, for scripts (ERROR_CODES). */
  readonly code: ErrorCode;
  /** The library option key the error is about (e.g. `sweep`), when it is about one. */
  readonly option?: string;
  /** Other option keys the message names (e.g. `['resolution']`). */
  readonly also?: string[];
  /** The message and hint with their options marked (opt()), for a caller that spells them otherwise (the CLI: optionText). */
  readonly marked?: { message: string; hint?: string };
  /** `message` says what went wrong; `place` where, and what to do. */
  constructor(message: string, place: ErrorPlace = {}) {
    // A file given as `.` or `..` (the working folder, or a path that ends in it) is named by
    // its full path: "lobes extract: .: no .onnx file" names nothing a user can find.
    const file = place.file !== undefined && /(^|\/)\.\.?\/?$/.test(place.file) ? fullPath(place.file) : place.file;
    const loc = [file, place.where].filter(Boolean).join(': ');
    const msg = ((loc ? `${loc}: ` : '') + message + (place.hint ? ` (${place.hint})` : '')).replace(/[\r\n]+/g, ' ');
    super(optionText(msg));
    this.name = 'LobesError';
    this.file = file;
    this.where = place.where;
    this.hint = place.hint === undefined ? undefined : optionText(place.hint);
    const named = optionsIn(msg);
    const option = place.option ?? named[0];
    if (option !== undefined) {
      this.option = option;
      const also = place.also ?? named.filter((k) => k !== option);
      if (also.length) this.also = also;
    }
    if (named.length) this.marked = { message: msg, ...(place.hint !== undefined ? { hint: place.hint } : {}) };
    this.exitCode = place.exitCode ?? 1;
    this.code = place.code ?? 'E_INPUT';
  }
}

/** A usage error in library terms: the option it is about, by its library key, and what is wrong with it. */
export interface UsageProblem {
  /** The library option key (a field of the run function's options object), e.g. `sweep`. */
  option: string;
  /** What went wrong, naming options by their keys (marked with opt() where lobes' CLI should spell them as flags). */
  message: string;
  /** What to do about it. */
  hint?: string;
  /** Other option keys the message involves, e.g. `['resolution']` (default: the others opt() marks). */
  also?: string[];
  /** The kind of failure (default E_USAGE). */
  code?: ErrorCode;
  file?: string;
  where?: string;
}

/**
 * A usage error: bad options or arguments. Exit code 2. `new UsageError({ option, message, ... })`
 * names the option it is about; `new UsageError(message, hint)` is one about none in particular
 * (or whose options opt() marks in the message).
 */
export class UsageError extends LobesError {
  constructor(problem: string | UsageProblem, hint?: string) {
    const p: Omit<UsageProblem, 'option'> & { option?: string } = typeof problem === 'string'
      ? { message: problem, hint }
      : problem;
    super(p.message, { ...p, exitCode: 2, code: p.code ?? 'E_USAGE' });
    this.name = 'UsageError';
  }
}

/** A model lobes cannot read, convert or capture from (code E_MODEL). */
export class ModelError extends LobesError {
  constructor(message: string, place: Omit<ErrorPlace, 'code'> = {}) {
    super(message, { ...place, code: 'E_MODEL' });
    this.name = 'ModelError';
  }
}

/**
 * Throw a LobesError with code E_ABORTED when `signal` has been aborted; `where` names the
 * unit the job stopped before (e.g. "before chunk 3"). Called between units of work, so what was
 * written stays as a kill would leave it, and the same call again resumes.
 */
export function throwIfAborted(signal: AbortSignal | undefined, command: string, where?: string): void {
  if (!signal?.aborted) return;
  const reason = signal.reason instanceof Error
    ? signal.reason.message
    : typeof signal.reason === 'string'
    ? signal.reason
    : null;
  throw new LobesError(
    `${command} was cancelled${where ? ` ${where}` : ''}${
      reason && !/^This operation was aborted$/.test(reason) ? ` (${reason})` : ''
    }`,
    {
      hint: 'the same call again resumes where it stopped',
      code: 'E_ABORTED',
    },
  );
}

/** Several problems found at once (e.g. every invalid item of a dataset). */
export class LobesErrors extends LobesError {
  readonly problems: LobesError[];
  constructor(summary: string, problems: LobesError[], place: ErrorPlace = {}) {
    super(
      `${summary}: ${problems.length} problem${problems.length === 1 ? '' : 's'}; first: ${
        problems[0]?.message ?? 'none'
      }`,
      { code: problems[0]?.code, ...place },
    );
    this.name = 'LobesErrors';
    this.problems = problems;
  }
}

export function isLobesError(e: unknown): e is LobesError {
  return e instanceof LobesError;
}

/** What an operating-system error code means for the user, and what to do about it. */
const SYSTEM_ERRORS: Record<string, { what: string; hint: string }> = {
  ENOSPC: { what: 'no space left on the device',
    hint: 'free some space or write to another disk; earlier results were left as they were' },
  EDQUOT: { what: 'disk quota exceeded',
    hint: 'free some space or write to another disk; earlier results were left as they were' },
  EFBIG: { what: 'file too large for the file system', hint: 'write to another file system' },
  EISDIR: { what: 'is a folder where a file was expected', hint: 'give a file path, not a folder' },
  ENOTDIR: { what: 'a part of the path is not a folder',
    hint: 'check the path: a file stands where a folder is needed' },
  EEXIST: { what: 'already exists', hint: 'remove it or choose another path' },
  ENOTEMPTY: { what: 'folder is not empty', hint: 'remove it or choose another path' },
  EACCES: { what: 'permission denied', hint: 'check the permissions, or choose another path' },
  EPERM: { what: 'operation not permitted', hint: 'check the permissions, or choose another path' },
  EROFS: { what: 'read-only file system', hint: 'write to a writable folder' },
  ENOENT: { what: 'no such file or folder', hint: 'check the path' },
  ENAMETOOLONG: { what: 'file name too long', hint: 'choose a shorter path' },
  ELOOP: { what: 'too many symbolic links', hint: 'check the path for a symbolic-link loop' },
  EMFILE: { what: 'too many open files', hint: 'raise the limit (ulimit -n) and retry' },
  ENFILE: { what: 'too many open files in the system', hint: 'close other programs or raise the limit and retry' },
  EIO: { what: 'input/output error', hint: 'the disk or network file system failed; check it and retry' },
  EBUSY: { what: 'resource busy', hint: 'retry when the file is no longer in use' },
  ETXTBSY: { what: 'file is busy', hint: 'retry when the file is no longer in use' },
  ENXIO: { what: 'no such device or address (a special file?)', hint: 'give a regular file' },
  ESPIPE: { what: 'cannot seek (a pipe or special file?)', hint: 'give a regular file' },
  EXDEV: { what: 'cannot move between file systems', hint: 'keep the output on one file system' },
};

/**
 * The one-line LobesError for an operating-system failure (a Node error carrying `code`,
 * such as ENOSPC, EISDIR or EACCES), naming the path and what to do; null for anything
 * else. `file` names the path when the error itself has none (writes on an open file).
 */
export function systemError(e: unknown, file?: string): LobesError | null {
  const known = systemKnown(e);
  if (!known) return null;
  const err = e as { path?: unknown; dest?: unknown };
  const at = file ?? (typeof err.path === 'string' ? err.path : undefined);
  const dest = typeof err.dest === 'string' && err.dest !== at ? ` (to ${err.dest})` : '';
  return new LobesError(`${known.what}${dest} (${known.code})`, { file: at, hint: known.hint });
}

/** What an operating-system error means, as "read-only file system (EROFS, mkdir)"; null when not one. */
export function systemCause(e: unknown): string | null {
  const known = systemKnown(e);
  return known ? `${known.what} (${known.code})` : null;
}

function systemKnown(e: unknown): { what: string; hint: string; code: string } | null {
  if (e instanceof LobesError || !e || typeof e !== 'object') return null;
  const err = e as { code?: unknown; syscall?: unknown };
  if (typeof err.code !== 'string') return null;
  let known = SYSTEM_ERRORS[err.code];
  if (!known) return null;
  if (err.code === 'EEXIST' && err.syscall === 'mkdir')
    known = { what: 'exists as a file where a folder is needed', hint: 'choose another path, or move the file away' };
  const op = typeof err.syscall === 'string' ? `, ${err.syscall}` : '';
  return { ...known, code: `${err.code}${op}` };
}

/** Rethrow an operating-system error as its one-line LobesError naming `file`; other errors unchanged. */
export function rethrowSystem(e: unknown, file?: string): never {
  throw systemError(e, file) ?? e;
}

/**
 * `file` from the working folder, `.` and `..` resolved (no node:path here: the report page's
 * script type-checks the error types without Node's).
 */
function fullPath(file: string): string {
  const cwd = (globalThis as { process?: { cwd(): string } }).process?.cwd();
  if (!cwd) return file;
  const parts: string[] = [];
  for (const p of (file.startsWith('/') ? file : `${cwd}/${file}`).split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return '/' + parts.join('/');
}
