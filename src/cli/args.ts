import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../util/errors.js';

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandSpec<O extends Options> {
  /** e.g. "lobes wanda RUN [--weights DIR] ..." */
  usage: string;
  /** One paragraph describing the command and each option. */
  help: string;
  options: O;
  /** Number of positional arguments allowed: [min, max] (max Infinity for variadic). */
  positionals: [number, number];
}

/** A command line parsed by parseCommand: option values and positional arguments. */
export interface ParsedCommand {
  values: Record<string, any>;
  positionals: string[];
}

/**
 * Parse argv for one command. `--help` prints usage and help to stdout and returns null
 * (the command then exits 0). Unknown flags and wrong positional counts are UsageErrors.
 */
export function parseCommand<O extends Options>(argv: string[], spec: CommandSpec<O>): ParsedCommand | null {
  const options = { ...spec.options, help: { type: 'boolean', short: 'h' } } as O & { help: { type: 'boolean'; short: 'h' } };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e: any) {
    throw new UsageError(String(e.message).split('\n')[0], `see: ${spec.usage.split(' ').slice(0, 2).join(' ')} --help`);
  }
  if ((parsed.values as any).help) {
    process.stdout.write(`usage: ${spec.usage}\n\n${spec.help.trim()}\n`);
    return null;
  }
  const [min, max] = spec.positionals;
  const n = parsed.positionals.length;
  if (n < min || n > max) {
    throw new UsageError(`expected ${min === max ? min : max === Infinity ? `at least ${min}` : `${min} to ${max}`} argument${max === 1 ? '' : 's'}, got ${n}`, `usage: ${spec.usage}`);
  }
  return { values: parsed.values as Record<string, any>, positionals: parsed.positionals };
}

/** Parse an integer option, with a usage error naming the flag. */
export function intOption(v: string | undefined, flag: string, def: number, min = -Infinity, max = Infinity): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be an integer${min > -Infinity ? ` >= ${min}` : ''}${max < Infinity ? ` <= ${max}` : ''}, got ${JSON.stringify(v)}`);
  return n;
}

/** Parse a number option, with a usage error naming the flag. */
export function numOption(v: string | undefined, flag: string, def: number, min = -Infinity, max = Infinity): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`${flag} must be a number${min > -Infinity ? ` >= ${min}` : ''}${max < Infinity ? ` <= ${max}` : ''}, got ${JSON.stringify(v)}`);
  return n;
}
