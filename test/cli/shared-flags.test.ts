/**
 * The shared flags have one home (src/cli/options.ts): no command module defines --quiet,
 * --json or --force itself, and every command's help gives --quiet the shared wording unless
 * the command words it for what it silences there (listed here, each with its line).
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { HELP, QUIET_TEXT, helpLine } from '../../src/cli/options.js';
import { capture } from '../capture.js';

const CLI = path.resolve(import.meta.dirname, '../../src/cli');

afterEach(() => vi.restoreAllMocks());

/** `file:line` of each option definition of a shared flag outside options.ts (a renamed old spelling is not one). */
export function ownDefinitions(sources: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of sources) {
    if (file === 'options.ts') continue;
    text.split('\n').forEach((l, i) => {
      if (/\b(?:quiet|json|force):\s*\{\s*type:/.test(l) && !/renamed:/.test(l)) out.push(`${file}:${i + 1}`);
    });
  }
  return out;
}

/** The --quiet lines worded for their command (what it silences there), by command. */
const NARROWER: Record<string, string> = {
  'data inspect': 'no progress output while tokenizing (warnings still print)',
  'data export': 'no summary on standard error',
  merge: 'no progress output',
  swap: 'no progress output',
};

async function helpOf(cmd: string[]): Promise<string> {
  const c = capture();
  try {
    await main([...cmd, '--help']);
    return c.out() + c.err();
  } finally {
    vi.restoreAllMocks();
  }
}

describe('shared flags', () => {
  it('no command module defines --quiet, --json or --force itself', () => {
    const sources = new Map(
      readdirSync(CLI).filter((f) => f.endsWith('.ts')).map((f) => [f, readFileSync(path.join(CLI, f), 'utf8')]),
    );
    expect(sources.size).toBeGreaterThan(15);
    expect(ownDefinitions(sources),
      'spread QUIET_OPTION, JSON_OPTION, OUTPUT_OPTIONS or FORCE_OPTION from src/cli/options.ts').toEqual([]);
  });

  it('finds a planted definition (the check can fail)', () => {
    const planted = new Map([
      ['merge.ts', "  options: {\n    quiet: { type: 'boolean', short: 'q' },\n  },\n"],
      ['extract.ts', "    force: { type: 'boolean', renamed: 'ignore-plan' },\n"],
      ['options.ts', "export const QUIET_OPTION = { quiet: { type: 'boolean', short: 'q' } };\n"],
    ]);
    expect(ownDefinitions(planted)).toEqual(['merge.ts:2']);
  });

  it("HELP.quiet is the shared wording at the shared column, and helpLine keeps a command's column", () => {
    expect(HELP.quiet).toBe(`  --quiet${' '.repeat(14)}${QUIET_TEXT}`);
    expect(helpLine('--quiet', QUIET_TEXT, 22)).toBe(`  --quiet${' '.repeat(13)}${QUIET_TEXT}`);
  });

  it('every command says what --quiet does: the shared wording, or its own narrower one', async () => {
    const commands = [['ablate'], ['attend'], ['attend', 'merge'], ['cluster'], ['convert'], ['data', 'inspect'], [
      'data',
      'export',
    ], ['demo'], ['eval'], ['eval', 'merge'], ['extract'], ['merge'], ['swap'], ['wanda']];
    for (const cmd of commands) {
      const line = (await helpOf(cmd)).split('\n').find((l) => /^ {2}--quiet\b/.test(l));
      expect(line, `${cmd.join(' ')} --help has a --quiet line`).toBeDefined();
      expect(line!.replace(/^ {2}--quiet\s+/, ''), cmd.join(' ')).toBe(NARROWER[cmd.join(' ')] ?? QUIET_TEXT);
    }
  });
});
