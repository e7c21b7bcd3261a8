/**
 * The curated library API: src/index.ts exports exactly what docs/api.md lists, and the
 * package's subpath exports point at modules that exist.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Every name (value or type) src/index.ts exports, by the compiler's own resolution. */
function exportedNames(): string[] {
  const file = path.join(ROOT, 'src/index.ts');
  const cfg = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const program = ts.createProgram([file], cfg.options);
  const checker = program.getTypeChecker();
  const sym = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
  return checker.getExportsOfModule(sym).map((s) => s.getName());
}

/** Names in the first column of docs/api.md's tables (backticked, comma-separated). */
function documentedNames(): string[] {
  const md = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');
  const names: string[] = [];
  for (const line of md.split('\n')) {
    const m = /^\| (`[^|]+`) \|/.exec(line);
    if (!m) continue;
    for (const n of m[1]!.matchAll(/`([^`]+)`/g)) names.push(n[1]!);
  }
  return names;
}

describe('library API', () => {
  it('src/index.ts exports exactly the names docs/api.md documents, each once', () => {
    const doc = documentedNames();
    expect(new Set(doc).size, 'a name documented twice').toBe(doc.length);
    expect(doc.length).toBeGreaterThan(50);
    expect([...exportedNames()].sort()).toEqual([...doc].sort());
  });

  it('has no wildcard re-exports (each export is chosen)', () => {
    const src = readFileSync(path.join(ROOT, 'src/index.ts'), 'utf8');
    expect(src).not.toMatch(/export \*|export type \*/);
  });

  it('subpath exports name modules that exist (in src, and in dist when built)', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const subpaths = Object.entries(pkg.exports as Record<string, string | { default: string; types: string }>).filter(([k]) => k !== './package.json');
    expect(subpaths.map(([k]) => k).sort()).toEqual(['.', './models', './onnx']);
    for (const [, v] of subpaths) {
      const target = typeof v === 'string' ? v : v.default;
      const src = path.join(ROOT, target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));
      expect(existsSync(src), src).toBe(true);
      if (existsSync(path.join(ROOT, 'dist/index.js'))) expect(existsSync(path.join(ROOT, target)), target).toBe(true);
    }
  });
});
