/**
 * Structural rules of the source tree (docs/architecture.md): no import cycles among the
 * modules of src/, lower layers import only from below, no source file over 500 lines without
 * a reason at its top, and the checks really read what they check (a planted cycle is found,
 * a planted long file is named).
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';

const SRC = path.resolve(import.meta.dirname, '..', 'src');

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Relative static imports and re-exports of each file, resolved to .ts files (type-only imports included: they are dependencies of the design too). */
export function importGraph(files: Map<string, string>): Map<string, string[]> {
  const g = new Map<string, string[]>();
  const re = /^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms;
  for (const [file, text] of files) {
    const deps: string[] = [];
    for (const m of text.matchAll(re)) {
      const target = path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts'));
      if (files.has(target)) deps.push(target);
    }
    g.set(file, deps);
  }
  return g;
}

/** Every elementary cycle found by a depth-first search (one per back edge), as file lists. */
export function findCycles(g: Map<string, string[]>): string[][] {
  const state = new Map<string, 0 | 1 | 2>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (v: string) => {
    state.set(v, 1);
    stack.push(v);
    for (const w of g.get(v) ?? []) {
      const s = state.get(w) ?? 0;
      if (s === 0) visit(w);
      else if (s === 1) cycles.push(stack.slice(stack.indexOf(w)).concat(w));
    }
    stack.pop();
    state.set(v, 2);
  };
  for (const v of g.keys()) if (!state.get(v)) visit(v);
  return cycles;
}

/** Lines of a source file above which its top must say why it is one file. */
export const MAX_LINES = 500;

/**
 * Files over MAX_LINES lines whose first 40 lines carry no `// Long file:` reason (a line
 * comment, or a line inside the top block comment, starting with those words).
 */
export function unexplainedLongFiles(files: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (lines.length <= MAX_LINES) continue;
    const head = lines.slice(0, 40);
    if (!head.some((l) => /^\s*(?:\/\/|\*)\s*Long file:\s*\S/.test(l))) out.push(`${file} (${lines.length} lines)`);
  }
  return out;
}

describe('source structure', () => {
  const files = new Map(sourceFiles(SRC).map((f) => [f, readFileSync(f, 'utf8')]));

  it('src/ has no import cycles', () => {
    const g = importGraph(files);
    const edges = [...g.values()].reduce((n, d) => n + d.length, 0);
    expect(edges, 'the import graph was not read').toBeGreaterThan(200);
    const cycles = findCycles(g).map((c) => c.map((f) => path.relative(SRC, f)).join(' → '));
    expect(cycles).toEqual([]);
  });

  it('lower layers import only from the layers below them', () => {
    // folder → folders (or top-level modules) of src/ it may import from, besides itself
    const allowed: Record<string, string[]> = {
      util: ['version.ts'], // version.ts reads package.json and imports nothing from src/
      formats: ['util'],
      onnx: ['util'],
      data: ['util', 'version.ts'],
      store: ['util', 'formats', 'hooks.ts', 'version.ts'],
    };
    const g = importGraph(files);
    const bad: string[] = [];
    for (const [file, deps] of g) {
      const layer = path.relative(SRC, file).split(path.sep)[0]!;
      const ok = allowed[layer];
      if (!ok) continue;
      for (const d of deps) {
        const target = path.relative(SRC, d).split(path.sep)[0]!;
        if (target !== layer && !ok.includes(target)) bad.push(`${path.relative(SRC, file)} → ${path.relative(SRC, d)}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it(`no source file over ${MAX_LINES} lines without a reason at its top`, () => {
    const bad = unexplainedLongFiles(files).map((f) => path.relative(SRC, f));
    expect(bad, 'split the file by job, or say at its top why it is one file (// Long file: …)').toEqual([]);
  });

  it('names a planted long file and accepts one that says why (the check can fail)', () => {
    const body = 'const x = 1;\n'.repeat(MAX_LINES + 1);
    const planted = new Map([
      ['long.ts', body],
      ['explained.ts', '/**\n * Something.\n *\n * Long file: one state machine, read top to bottom.\n */\n' + body],
      ['short.ts', 'const x = 1;\n'.repeat(MAX_LINES)],
    ]);
    expect(unexplainedLongFiles(planted)).toEqual([`long.ts (${MAX_LINES + 1} lines)`]);
  });

  it('finds a planted cycle (the check can fail)', () => {
    const a = path.join(SRC, 'x/a.ts');
    const b = path.join(SRC, 'x/b.ts');
    const planted = new Map([
      [a, "import { b } from './b.js';\n"],
      [b, "export {\n  a,\n} from './a.js';\n"],
    ]);
    expect(findCycles(importGraph(planted))).toEqual([[a, b, a]]);
  });
});
