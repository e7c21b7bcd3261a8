/**
 * Reading an analysis's JSON files with one-line errors naming the file and the place: the
 * store modules of the analyses (src/wanda/store.ts, src/cluster/store.ts, src/eval/store.ts)
 * check their contracts with these.
 */
import { readFileSync } from 'node:fs';
import { LobesError } from '../util/errors.js';

/** Parse a JSON file; an unreadable or invalid file is a LobesError naming it. */
export function readJsonFile(file: string): any {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new LobesError(`cannot read (${e.code ?? e.message})`, { file });
  }
  try {
    return JSON.parse(text);
  } catch (e: any) {
    throw new LobesError(`invalid JSON: ${String(e.message).split('\n')[0]}`, { file });
  }
}

/** Throw `cause` at `where` in `file` unless `cond` holds. */
export function need(cond: unknown, file: string, where: string, cause: string): asserts cond {
  if (!cond) throw new LobesError(cause, { file, where });
}

export const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const isStrArr = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
