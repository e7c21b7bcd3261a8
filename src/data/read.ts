import { readFileSync, statSync } from 'node:fs';
import { LobesError } from '../util/errors.js';

/** One problem found in an input file: where it is and what is wrong. */
export interface Problem {
  file: string;
  where?: string;
  reason: string;
  /** Id of the item it concerns, when there is one. */
  id?: string;
}

/**
 * The hint of a refusal for invalid input. The skip flag is offered only where leaving the
 * invalid items out leaves some to use (`valid` > 0): never for an empty file, a pipe, or a
 * file that could not be read, where skipping would only end in "no valid items".
 */
export function invalidInputHint(valid: number, fix: string, skipFlag?: string, what = 'them'): string {
  return valid > 0 && skipFlag ? `${fix}, or pass ${skipFlag} to leave ${what} out` : fix;
}

/**
 * A JSON Lines spec whose fields no line has: one error naming them (as the spec names them,
 * `text=question`) and the fields the lines do have, instead of one problem per line. `named`
 * pairs each spec key with its field; `anyHas` says whether some line has a field; `found` lists
 * the lines' fields in order of first appearance. Null when every named field is on some line.
 */
export function absentFieldsError(file: string, named: [key: string, field: string][],
  anyHas: (field: string) => boolean, found: Iterable<string>): LobesError | null
{
  const absent = named.filter(([, f]) => !anyHas(f));
  if (absent.length === 0) return null;
  const have = [...found];
  const list = have.length > 30 ? `${have.slice(0, 30).join(', ')}, … (${have.length} in all)` : have.join(', ');
  const one = absent.length === 1;
  return new LobesError(
    `no line has the field${one ? '' : 's'} the spec names: ${
      absent.map(([k, f]) => `${k}=${f}`).join(', ')
    } (fields found: ${list || 'none'})`,
    { file },
  );
}

export function problemError(p: Problem): LobesError {
  return new LobesError(p.reason, { file: p.file, where: p.where });
}

/** Line and column (1-based) of a character offset. */
export function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let last = -1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, col: offset - last };
}

/** Offset of the first byte that breaks UTF-8, or -1. */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  const n = b.length;
  while (i < n) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    let len: number;
    let min: number;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 1;
      min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 2;
      min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 3;
      min = 0x10000;
    } else return i;
    let cp = c & (len === 1 ? 0x1f : len === 2 ? 0x0f : 0x07);
    for (let k = 1; k <= len; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len + 1;
  }
  return -1;
}

/**
 * Read a text file that must be UTF-8. A UTF-8 byte-order mark is dropped; UTF-16 files
 * and bytes that are not UTF-8 (e.g. Latin-1) are refused with the byte offset and line.
 * Returns the text, or a Problem.
 */
export function readUtf8(file: string): { text: string } | { problem: Problem } {
  let bytes: Uint8Array;
  try {
    const st = statSync(file);
    if (st.isDirectory()) return { problem: { file, reason: 'is a folder, expected a file' } };
    // A pipe or device would block or never end.
    if (!st.isFile()) return { problem: { file, reason: 'is not a regular file (a pipe or device); give a file' } };
    bytes = readFileSync(file);
  } catch (e: any) {
    return { problem: { file, reason: e?.code === 'ENOENT' ? 'no such file' : `cannot read: ${e?.message ?? e}` } };
  }
  if (bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))) {
    return {
      problem: { file, where: 'byte 0',
        reason: 'file is UTF-16 (byte-order mark found); lobes reads UTF-8 only (re-save the file as UTF-8)' },
    };
  }
  // UTF-16 without BOM: many NUL bytes in alternating positions.
  if (bytes.length >= 4) {
    let nul = 0;
    const m = Math.min(bytes.length, 4096);
    for (let i = 0; i < m; i++) if (bytes[i] === 0) nul++;
    if (nul > m / 4)
      return {
        problem: { file, where: `byte ${bytes.indexOf(0)}`,
          reason:
            'file contains NUL bytes, probably UTF-16 or binary; lobes reads UTF-8 text only (re-save the file as UTF-8)' },
      };
  }
  let start = 0;
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
  const body = bytes.subarray(start);
  const bad = firstInvalidUtf8(body);
  if (bad >= 0) {
    let line = 1;
    for (let i = 0; i < bad; i++) if (body[i] === 10) line++;
    const hex = Array.from(body.subarray(bad, bad + 4)).map((x) => x.toString(16).padStart(2, '0')).join(' ');
    return {
      problem: { file, where: `line ${line}, byte ${bad + start}`,
        reason: `not valid UTF-8 (bytes ${hex}; Latin-1 or Windows-1252 text?); re-save the file as UTF-8` },
    };
  }
  return { text: new TextDecoder('utf-8').decode(body) };
}

/** JSON.parse with a problem naming line and column on failure. */
export function parseJson(text: string, file: string, lineOffset = 0, where?: string): { value: unknown } | {
  problem: Problem;
} {
  try {
    return { value: JSON.parse(text) };
  } catch (e: any) {
    const msg = String(e?.message ?? e);
    const m = /position (\d+)/.exec(msg);
    let place = where;
    if (!where) {
      const at = m ? Number(m[1]) : /end of JSON input/i.test(msg) ? text.length : -1;
      if (at >= 0) {
        const { line, col } = lineCol(text, at);
        place = `line ${line + lineOffset}, column ${col}`;
      }
    }
    const cause = msg.replace(/ in JSON at position \d+.*$/, '').replace(/\s*\(line \d+ column \d+\)$/, '');
    return { problem: { file, where: place, reason: `invalid JSON: ${cause}` } };
  }
}
