/**
 * Reading and writing lobes' JSON files: readJsonFile (one-line errors naming the file, or the
 * caller's own words, or a fallback for an optional file), writeJsonAtomic (the bytes each file
 * has always had: compact or indented by 1 or 2, and a newline), and the checks the store
 * modules of the analyses (src/wanda/store.ts, src/cluster/store.ts, src/eval/store.ts) run on
 * their contracts.
 */
import { readFileSync } from 'node:fs';
import { LobesError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';

/** How readJsonFile words its failures, for files whose readers have their own messages. */
export interface ReadJsonOptions {
  /** When given (undefined included): returned for a missing, unreadable or invalid file instead of an error (an optional file). */
  fallback?: unknown;
  /** The message for a file that cannot be read (default `cannot read (CODE)`), or the error to throw (an ENOENT of its own, say). */
  unreadable?: (e: NodeJS.ErrnoException) => string | Error;
  /** The message for a file that is not JSON, from the parser's message (default `invalid JSON: ITS FIRST LINE`). */
  invalid?: (message: string) => string;
  /** The hint of either message. */
  hint?: string;
}

/** Parse a JSON file; an unreadable or invalid file is a LobesError naming it (or `fallback`, or the caller's words). */
export function readJsonFile(file: string, opts: ReadJsonOptions = {}): any {
  const optional = 'fallback' in opts;
  const hint = opts.hint === undefined ? {} : { hint: opts.hint };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    if (optional) return opts.fallback;
    const m = opts.unreadable ? opts.unreadable(e) : `cannot read (${e.code ?? e.message})`;
    throw typeof m === 'string' ? new LobesError(m, { file, ...hint }) : m;
  }
  try {
    return JSON.parse(text);
  } catch (e: any) {
    if (optional) return opts.fallback;
    throw new LobesError(
      opts.invalid ? opts.invalid(String(e.message)) : `invalid JSON: ${String(e.message).split('\n')[0]}`,
      { file, ...hint },
    );
  }
}

/** Write `value` as JSON and a newline, atomically: compact (indent 0) or indented by 1 or 2 spaces, as each file has always been. */
export function writeJsonAtomic(file: string, value: unknown, indent: 0 | 1 | 2 = 0): void {
  writeFileAtomicSync(file, JSON.stringify(value, null, indent || undefined) + '\n');
}

/** Throw `cause` at `where` in `file` unless `cond` holds. */
export function need(cond: unknown, file: string, where: string, cause: string): asserts cond {
  if (!cond) throw new LobesError(cause, { file, where });
}

export const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const isStrArr = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
