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
  const cfg = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.build.json'), {}, { ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: () => {} })!;
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

  it('every run function is exported in one of the two calling styles docs/api.md names, with its option type', () => {
    const file = path.join(ROOT, 'src/index.ts');
    const cfg = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.build.json'), {}, { ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => {} })!;
    const program = ts.createProgram([file], cfg.options);
    const checker = program.getTypeChecker();
    const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!);
    const byName = new Map(exports.map((s) => [s.getName(), s]));
    /** The parameter names and the first parameter's type of an exported function. */
    const shape = (name: string) => {
      const sym = byName.get(name);
      expect(sym, `${name} is not exported`).toBeDefined();
      const target = sym!.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym!) : sym!;
      const sig = checker.getSignaturesOfType(checker.getTypeOfSymbol(target), ts.SignatureKind.Call)[0]!;
      const decl = (p: ts.Symbol) => p.valueDeclaration as ts.ParameterDeclaration;
      return { params: sig.parameters.map((p) => p.getName()),
        first: sig.parameters[0]
          ? checker.typeToString(checker.getTypeOfSymbolAtLocation(sig.parameters[0], decl(sig.parameters[0])))
          : '' };
    };
    // The two shapes, as docs/api.md ("Calling styles and cancellation") lists them.
    const md = readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');
    const listed = (style: string) => {
      const line = md.split('\n').find((l) => l.startsWith(`- **${style}**`));
      expect(line, `docs/api.md lists the ${style} style`).toBeDefined();
      const para = md.slice(md.indexOf(line!)).split(/\n(?=- |\n)/)[0]!;
      return [...para.matchAll(/`(run[A-Z]\w*)`/g)].map((m) => m[1]!);
    };
    const optsOnly = listed('(opts)');
    const runFirst = listed('(run, opts)');
    expect(optsOnly.sort()).toEqual(['runAblate', 'runAttend', 'runDoctor', 'runEval', 'runExtract']);
    expect(runFirst.sort()).toEqual(['runCluster', 'runLens', 'runSwap', 'runWanda']);
    for (const n of optsOnly) expect(shape(n).params, n).toHaveLength(1);
    for (const n of runFirst) {
      const s = shape(n);
      expect(s.params, n).toHaveLength(2);
      expect(s.first, n).toMatch(/^(string \| RunReader|RunReader \| string)$/);
    }
    // Every exported run* function is one of them, but for the two helpers that are not jobs.
    const runs = [...byName.keys()].filter((n) => /^run[A-Z]/.test(n) && !['runIdentity', 'runPayload'].includes(n));
    expect(runs.sort()).toEqual([...optsOnly, ...runFirst].sort());
    // Each job's option type is exported too.
    for (const t of ['ExtractOptions', 'EvalOptions', 'AttendOptions', 'AblateOptions', 'DoctorOptions',
      'ClusterOptions', 'WandaOptions', 'RunSwapOptions', 'LensOptions']) expect(byName.has(t), t).toBe(true);
  });

  it('has no wildcard re-exports (each export is chosen)', () => {
    const src = readFileSync(path.join(ROOT, 'src/index.ts'), 'utf8');
    expect(src).not.toMatch(/export \*|export type \*/);
  });

  it('subpath exports name modules that exist (in src, and in dist when built)', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const subpaths = Object.entries(pkg.exports as Record<string, string | { default: string; types: string }>).filter((
      [k],
    ) => k !== './package.json');
    expect(subpaths.map(([k]) => k).sort()).toEqual(['.', './models', './onnx']);
    for (const [, v] of subpaths) {
      const target = typeof v === 'string' ? v : v.default;
      const src = path.join(ROOT, target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'));
      expect(existsSync(src), src).toBe(true);
      if (existsSync(path.join(ROOT, 'dist/index.js'))) expect(existsSync(path.join(ROOT, target)), target).toBe(true);
    }
  });
});
