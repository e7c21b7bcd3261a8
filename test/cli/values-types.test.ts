/**
 * Parsed option values are typed from the option definitions (src/cli/args.ts OptionValues):
 * checked through the type checker on small programs, one that must compile and ones that must
 * not, so a definition's choices, its boolean type, `multiple` and an old spelling reach the
 * value's type.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The type errors of `body` compiled beside src/cli/args.ts (strict, as the project is). */
function typeErrors(body: string): string[] {
  const dir = mkdtempSync(path.join(ROOT, 'test', 'cli', '.types-'));
  try {
    const file = path.join(dir, 'probe.ts');
    writeFileSync(file, `import { parseCommand } from '../../../src/cli/args.js';\n${body}\n`);
    const program = ts.createProgram([file], { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, skipLibCheck: true,
      types: ['node'] });
    return ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === file).map((d) =>
      ts.flattenDiagnosticMessageText(d.messageText, ' ')
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SPEC = `const p = parseCommand([], { usage: 'lobes t', help: '', positionals: [0, 0], options: {
  device: { type: 'string', choices: ['cpu', 'cuda'] as const },
  seed: { type: 'string' },
  quiet: { type: 'boolean' },
  intervene: { type: 'string', multiple: true },
  overwrite: { type: 'boolean', renamed: 'force' },
  force: { type: 'boolean' },
} })!;`;

describe('typed option values', () => {
  it('a choice is its union, a string a string, a boolean a boolean, a repeated option an array', () => {
    const ok = `${SPEC}
const d: 'cpu' | 'cuda' | undefined = p.values.device;
const s: string | undefined = p.values.seed;
const q: boolean | undefined = p.values.quiet;
const i: string[] | undefined = p.values.intervene;
const f: boolean | undefined = p.values.force;
export { d, s, q, i, f };`;
    expect(typeErrors(ok)).toEqual([]);
  }, 60_000);

  it('refuses a value used as what it is not, an unknown option, and an old spelling read by its old name', () => {
    const bad = [
      `${SPEC}\nconst d: 'cpu' | undefined = p.values.device; export { d };`,
      `${SPEC}\nconst q: string | undefined = p.values.quiet; export { q };`,
      `${SPEC}\nconst i: string | undefined = p.values.intervene; export { i };`,
      `${SPEC}\nconst x = p.values.nonsense; export { x };`,
      `${SPEC}\nconst o = p.values.overwrite; export { o };`,
    ];
    for (const b of bad) expect(typeErrors(b).length, b.split('\n').at(-1)).toBeGreaterThan(0);
  }, 60_000);
});
