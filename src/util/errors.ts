/**
 * Errors a user can act on. Every failure that reaches the CLI is a LobesError whose
 * message is one line: what went wrong, where (file, place, sample id) and, when there
 * is one, what to do about it. The CLI prints `lobes: <message>` and exits non-zero.
 */
export interface ErrorPlace {
  /** File the problem is in (printed as given). */
  file?: string;
  /** Place inside the file: a line, a tensor name, a node, a sample id, a byte offset. */
  where?: string;
  /** What to do about it. */
  hint?: string;
  /** Exit code for the CLI (default 1; 2 is reserved for usage errors). */
  exitCode?: number;
}

export class LobesError extends Error {
  readonly file?: string;
  readonly where?: string;
  readonly hint?: string;
  readonly exitCode: number;
  /** `message` says what went wrong; `place` where, and what to do. */
  constructor(message: string, place: ErrorPlace = {}) {
    const loc = [place.file, place.where].filter(Boolean).join(': ');
    const msg = (loc ? `${loc}: ` : '') + message + (place.hint ? ` (${place.hint})` : '');
    super(msg.replace(/[\r\n]+/g, ' '));
    this.name = 'LobesError';
    this.file = place.file;
    this.where = place.where;
    this.hint = place.hint;
    this.exitCode = place.exitCode ?? 1;
  }
}

/** A usage error: bad flags or arguments. Exit code 2. */
export class UsageError extends LobesError {
  constructor(message: string, hint?: string) {
    super(message, { hint, exitCode: 2 });
    this.name = 'UsageError';
  }
}

/** Several problems found at once (e.g. every invalid item of a dataset). */
export class LobesErrors extends LobesError {
  readonly problems: LobesError[];
  constructor(summary: string, problems: LobesError[], place: ErrorPlace = {}) {
    super(`${summary}: ${problems.length} problem${problems.length === 1 ? '' : 's'}; first: ${problems[0]?.message ?? 'none'}`, place);
    this.name = 'LobesErrors';
    this.problems = problems;
  }
}

export function isLobesError(e: unknown): e is LobesError {
  return e instanceof LobesError;
}
