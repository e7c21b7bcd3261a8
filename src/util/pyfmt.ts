/**
 * The two Python formattings SocialEval's published evaluation scripts put into their
 * prompts, reproduced exactly so that lobes' prompts are the benchmark's prompts:
 *
 * - `pyRepr`: Python 3's repr() of str / None / list / dict (what `str.format` writes
 *   for a list of profile dicts, as run_iae.py does for `user_profile`);
 * - `pyJsonDumps`: `json.dumps(value, ensure_ascii=False)` with its default separators
 *   `', '` and `': '` (as run_gae.py does for `main_profile` and `user_profile`).
 */

export type PyValue = string | number | boolean | null | PyValue[] | { [k: string]: PyValue };

/** Characters Python's str.isprintable() rejects (other than the ASCII space), which repr escapes. */
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function escapeChar(cp: number): string {
  if (cp < 0x100) return '\\x' + cp.toString(16).padStart(2, '0');
  if (cp < 0x10000) return '\\u' + cp.toString(16).padStart(4, '0');
  return '\\U' + cp.toString(16).padStart(8, '0');
}

/** Python 3 repr() of a str: quote choice, backslash escapes, non-printable characters as \x/\u/\U. */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += '\\' + quote;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) out += escapeChar(cp);
    else out += ch;
  }
  return out + quote;
}

/** Python 3 repr() of a JSON-like value (dict keys in insertion order). */
export function pyRepr(v: PyValue): string {
  if (v === null) return 'None';
  if (typeof v === 'string') return pyStrRepr(v);
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pyFloat(v);
  if (Array.isArray(v)) return '[' + v.map(pyRepr).join(', ') + ']';
  return '{' + Object.entries(v).map(([k, x]) => `${pyStrRepr(k)}: ${pyRepr(x)}`).join(', ') + '}';
}

function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const s = String(x);
  return /[.e]/.test(s) ? s : s + '.0';
}

/** Python's json.dumps(v, ensure_ascii=False): separators ', ' and ': ', non-ASCII kept. */
export function pyJsonDumps(v: PyValue): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pyFloat(v);
  if (Array.isArray(v)) return '[' + v.map(pyJsonDumps).join(', ') + ']';
  return '{' + Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJsonDumps(x)}`).join(', ') + '}';
}
