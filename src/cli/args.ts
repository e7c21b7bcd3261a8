/**
 * The command-line parser every command uses: Node's parseArgs, with what it lacks for lobes.
 *   - An unknown flag is a one-line usage error with the nearest known flag ("did you mean").
 *   - A negative number is a value (`--seed -1`), not a flag.
 *   - `choices` are checked here, with the nearest allowed value as the hint.
 *   - `bare`: a string option that may stand alone (`--chat-template` means `--chat-template on`);
 *     the next word is its value only when it is one of the choices (an option without
 *     choices: when it is a count, digits only, as `--shuffled` alone or `--shuffled 19`).
 *   - `renamed`: an old spelling that still works, with a one-line note on stderr.
 *   - `key`: the library option key the flag sets, where it is not the flag in camelCase
 *     (`--top-k` sets `topK`; wanda's `--model` sets `weights`). A library error names the
 *     option by its key; the CLI prints it as the flag that sets it (spellOption).
 * The shared option definitions (one meaning per flag in every command) are in options.ts.
 */
import { parseArgs } from 'node:util';
import { UsageError } from '../util/errors.js';
import { nearest } from '../util/suggest.js';
import { parseInteger, parseNumber } from '../util/parse.js';

export { parseInteger, parseNumber };

export interface OptionDef {
  type: 'string' | 'boolean';
  short?: string;
  /** The values a string option allows (checked, with a did-you-mean). */
  choices?: readonly string[];
  /** The value of a string option given alone (its next word is its value only when it is one of the choices). */
  bare?: string;
  /** An old spelling of option `renamed`: still accepted, with a note. */
  renamed?: string;
  /** May be given more than once (the value is then an array, in order). */
  multiple?: boolean;
  /** The library option key this flag sets, when it is not the flag in camelCase (errors about that key print as this flag). */
  key?: string;
}

export type Options = Record<string, OptionDef>;

export interface CommandSpec<O extends Options = Options> {
  /** e.g. "lobes wanda RUN [--weights-from DIR] ..." */
  usage: string;
  /** One paragraph describing the command and each option. */
  help: string;
  options: O;
  /** Number of positional arguments allowed: [min, max] (max Infinity for variadic). */
  positionals: [number, number];
  /** The command's name in messages (default: the usage's first two words, e.g. "lobes eval"). */
  name?: string;
}

/**
 * The value an option definition gives: a string (one of its choices, when it has them), a
 * boolean, or an array of those when it may be given more than once; undefined when not given.
 */
export type OptionValue<D extends OptionDef> = D['type'] extends 'boolean'
  ? D['multiple'] extends true ? boolean[] : boolean
  : (D['choices'] extends readonly (infer C extends string)[] ? C : string) extends infer V
    ? D['multiple'] extends true ? V[] : V
  : never;

/** The parsed values of a command's options, typed from its definitions (an old spelling is read under its new name). */
export type OptionValues<O extends Options> = {
  [K in keyof O as O[K]['renamed'] extends string ? never : K]?: OptionValue<O[K]>;
};

/** A command line parsed by parseCommand: option values and positional arguments. */
export interface ParsedCommand<O extends Options = Options> {
  values: OptionValues<O>;
  positionals: string[];
}

const NEGATIVE_NUMBER = /^-(\d|\.\d)/;

function commandName(spec: CommandSpec<Options>): string {
  return spec.name ?? spec.usage.split(' ').slice(0, 2).join(' ');
}

/**
 * Rewrite argv so that parseArgs reads it as lobes means it: `--flag -1` becomes
 * `--flag=-1`; a bare option alone gets its bare value. Unknown flags are refused here.
 */
function normalizeArgv(argv: string[], options: Options, name: string): string[] {
  const out: string[] = [];
  const shorts = new Map(Object.entries(options).filter(([, o]) => o.short).map(([k, o]) => [o.short!, k]));
  const longs = Object.keys(options);
  for (let i = 0; i < argv.length; i++) {
    const t = argv[i]!;
    if (t === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (t.startsWith('--')) {
      const eq = t.indexOf('=');
      const key = t.slice(2, eq < 0 ? undefined : eq);
      const def = options[key];
      if (!def) {
        const near = nearest(key, longs);
        throw new UsageError(`unknown option --${key}`,
          near ? `did you mean --${near}? see: ${name} --help` : `see: ${name} --help`);
      }
      if (def.type === 'string' && eq < 0) {
        const next = argv[i + 1];
        // A bare option takes the next word only when it is one of its choices (without choices: a count, digits only).
        if (def.bare !== undefined &&
          (next === undefined || !(def.choices ? def.choices.includes(next) : /^\d+$/.test(next))))
        {
          out.push(`--${key}=${def.bare}`);
          continue;
        }
        if (next === undefined || (next.startsWith('-') && next !== '-' && !NEGATIVE_NUMBER.test(next)))
          throw new UsageError(`--${key} needs a value`, `see: ${name} --help`);
        out.push(`--${key}=${next}`);
        i++;
        continue;
      }
      out.push(t);
      continue;
    }
    if (t.startsWith('-') && t.length > 1 && !NEGATIVE_NUMBER.test(t)) {
      for (const c of t.slice(1)) {
        if (!shorts.has(c)) throw new UsageError(`unknown option -${c}`, `see: ${name} --help`);
      }
      const last = shorts.get(t[t.length - 1]!)!;
      if (t.length === 2 && options[last]!.type === 'string') {
        const next = argv[i + 1];
        if (next === undefined) throw new UsageError(`-${t[1]} needs a value`, `see: ${name} --help`);
        out.push(`--${last}=${next}`);
        i++;
        continue;
      }
    }
    out.push(t);
  }
  return out;
}

/** `--top-k` for `topK` (`--scope` for `top.scope`): the flag of a library option key no command's definitions name. */
function kebabFlag(key: string): string {
  return `--${key.slice(key.lastIndexOf('.') + 1).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** The flag of each library option key a command's options set: `key`, else the flag in camelCase (an old spelling names none). */
export function flagsOfKeys(options: Options): Map<string, string> {
  const flags = new Map<string, string>();
  for (const [flag, def] of Object.entries(options)) {
    if (def.renamed) continue;
    const key = def.key ?? flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    if (!flags.has(key)) flags.set(key, `--${flag}`);
  }
  return flags;
}

/** The flags of the command being run (its last parseCommand), for spellOption. */
let commandFlags: Map<string, string> | null = null;

/** The flag that sets library option `key` in the command being run (by its definitions; a key none of them sets: the key in kebab-case). */
export function spellOption(key: string): string {
  return commandFlags?.get(key) ?? kebabFlag(key);
}

/** Forget the command's flags (main, when the command ends). */
export function releaseCommandFlags(): void {
  commandFlags = null;
}

/**
 * Parse argv for one command. `--help` prints usage and help to stdout and returns null
 * (the command then exits 0). Unknown flags, bad choices and wrong positional counts are UsageErrors.
 */
export function parseCommand<O extends Options>(argv: string[], spec: CommandSpec<O>): ParsedCommand<O> | null {
  const all: Options = { ...spec.options, help: { type: 'boolean', short: 'h' } };
  const name = commandName(spec);
  commandFlags = flagsOfKeys(spec.options);
  const args = normalizeArgv(argv, all, name);
  const nodeOptions = Object.fromEntries(
    Object.entries(all).map((
      [k, o],
    ) => [k, { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }]),
  );
  let parsed;
  try {
    parsed = parseArgs({ args, options: nodeOptions, allowPositionals: true, strict: true });
  } catch (e: any) {
    throw new UsageError(String(e.message).split('\n')[0]!, `see: ${name} --help`);
  }
  const values = parsed.values as Record<string, any>;
  if (values.help) {
    process.stdout.write(`usage: ${spec.usage}\n\n${spec.help.trim()}\n`);
    return null;
  }
  for (const [k, o] of Object.entries(spec.options)) {
    if (o.renamed && values[k] !== undefined) {
      if (values[o.renamed] !== undefined && values[o.renamed] !== values[k])
        throw new UsageError(`--${k} is the old name of --${o.renamed}; give one of them`);
      process.stderr.write(`${name}: note: --${k} is now --${o.renamed} (the old name still works for now)\n`);
      values[o.renamed] = values[k];
      delete values[k];
    }
  }
  for (const [k, o] of Object.entries(spec.options)) {
    const v = values[k];
    if (o.choices && v !== undefined && !o.choices.includes(v)) {
      const near = nearest(String(v), o.choices);
      throw new UsageError(`--${k} must be ${listOr(o.choices)}, got ${JSON.stringify(v)}`,
        near ? `did you mean --${k} ${near}?` : undefined);
    }
  }
  const [min, max] = spec.positionals;
  const n = parsed.positionals.length;
  if (n < min || n > max) {
    throw new UsageError(
      `expected ${min === max ? min : max === Infinity ? `at least ${min}` : `${min} to ${max}`} argument${
        max === 1 ? '' : 's'
      }, got ${n}${
        n > max && parsed.positionals.length
          ? ` (${parsed.positionals.slice(max).map((x) => JSON.stringify(x)).join(' ')} left over)`
          : ''
      }`,
      `usage: ${spec.usage.split('\n')[0]}`,
    );
  }
  return { values: values as OptionValues<O>, positionals: parsed.positionals };
}

/** `v` with the options `keys` checked as given (a usage error names the first missing one), typed as present. */
export function requireValues<V extends object, K extends keyof V & string>(v: V, keys: readonly K[], hint: string): V
  & { [P in K]-?: NonNullable<V[P]> }
{
  for (const k of keys) if (!v[k]) throw new UsageError(`--${k} is required`, hint);
  return v as V & { [P in K]-?: NonNullable<V[P]> };
}

/** "a, b or c". */
export function listOr(xs: readonly string[]): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`;
}

/** Parse an integer option (parseInteger), `def` when it is not given. */
export function intOption(v: string | undefined, flag: string, def: number, min = -Infinity, max = Infinity): number {
  return v === undefined ? def : parseInteger(v, flag, min, max);
}

/** Parse a number option (parseNumber), `def` when it is not given. */
export function numOption(v: string | undefined, flag: string, def: number, min = -Infinity, max = Infinity): number {
  return v === undefined ? def : parseNumber(v, flag, min, max);
}
