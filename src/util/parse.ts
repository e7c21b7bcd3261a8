/**
 * The value parsers of the command line, one per kind of value, shared by every command
 * (src/cli/args.ts re-exports them; --shard's environment variables use them too).
 */
import { UsageError } from './errors.js';

/** A decimal integer as it is written on a command line: digits, an optional minus sign, nothing else. */
const DECIMAL_INT = /^-?\d+$/;
/** A decimal number: digits with an optional fraction and exponent (no hex, no spaces, no Infinity). */
const DECIMAL_NUM = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** "from 0 to 4294967295", "of at least 1", "of at most 9" or "". */
function rangeText(min: number, max: number): string {
  if (min > -Infinity && max < Infinity) return ` from ${min} to ${max}`;
  if (min > -Infinity) return ` of at least ${min}`;
  if (max < Infinity) return ` of at most ${max}`;
  return '';
}

/**
 * The one integer parser of the command line (every integer flag, and the integers inside
 * --shard, --block, --sweep and --layers): decimal digits only (`0x10`, `1e2`, `" 3"` and `3.0`
 * are refused), range-checked, and never past 2^53 - 1, where a double stops counting by ones
 * (`99999999999999999999` would otherwise be recorded as 1e20). `flag` names the value in the message.
 */
export function parseInteger(v: string, flag: string, min = -Infinity, max = Infinity): number {
  const n = DECIMAL_INT.test(v) ? Number(v) : NaN;
  if (n > Number.MAX_SAFE_INTEGER && max === Infinity)
    throw new UsageError(`${flag} ${v} is too large (at most ${Number.MAX_SAFE_INTEGER})`);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`${flag} must be a decimal integer${rangeText(min, max)}, got ${JSON.stringify(v)}`);
  return n;
}

/** The one decimal-number parser of the command line: as parseInteger, with a fraction and an exponent allowed. */
export function parseNumber(v: string, flag: string, min = -Infinity, max = Infinity): number {
  const n = DECIMAL_NUM.test(v) ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < min || n > max)
    throw new UsageError(`${flag} must be a decimal number${rangeText(min, max)}, got ${JSON.stringify(v)}`);
  return n;
}
