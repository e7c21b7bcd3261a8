/**
 * Structural rules of the source tree (docs/architecture.md): no import cycles among the
 * modules of src/, lower layers import only from below, no source file over 500 lines without
 * a reason at its top, and the checks really read what they check (a planted cycle is found,
 * a planted long file is named), and only the store modules name the files of a run folder
 * (a planted literal is found).
 */
import { describe, it, expect } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { ANALYSES, pageSections, reportFlags } from '../src/analysis/registry.js';

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

/**
 * The files of a run folder and of its analyses' folders (docs/run-format.md). Only the store
 * modules (RUN_FOLDER_MODULES) name them; everything else reads and writes through those. The
 * analyses' files come from their declarations in the registry (src/analysis/registry.ts).
 */
export const RUN_FOLDER_FILES = [
  // the run (src/store/layout.ts)
  'manifest.json',
  'samples.jsonl',
  'index.json',
  ...new Set(ANALYSES.flatMap((a) => a.files)),
];

/** Folders of a run: a path joined from a literal one of these is built outside its store module. */
export const RUN_FOLDER_DIRS = ['activations', 'labels', ...ANALYSES.map((a) => a.folder)];

/**
 * The modules that may name a run folder's files, each for a reason (paths under src/).
 * A store module is the one place its folder's names, reads and writes live: the run's own
 * below, and each registered analysis's store.
 */
export const RUN_FOLDER_MODULES: Record<string, string> = {
  'store/layout.ts': 'the run folder: manifest, samples, activations and their index',
  'store/labels.ts': 'label overlays, RUN/labels/AXIS.json',
  'store/records.ts': 'the record chunks of a JSON-lines job (eval) and their index',
  ...Object.fromEntries(ANALYSES.map((a) => [a.store, `RUN/${a.folder}, written by lobes ${a.id}`])),
  // The output guard knows which entries are the run itself and the forms of wanda and cluster
  // folders written before outputs carried lobes' marker; src/util cannot import the stores.
  'util/output.ts': "the output guard: the run's own entries and the unmarked forms of older outputs",
  // Lineage names the run's files it records as inputs (samples.jsonl); the analyses index reads
  // an analysis folder's settings.json only to say what a rerun replaces.
  'store/lineage.ts': 'lineage: the inputs an output records (the run, its samples, chunks, overlays)',
  'store/analyses.ts': 'the analysis folders of a run (one per label axis and capture point)',
  // The declarations name their files once, for this list (src/analysis/types.ts).
  ...Object.fromEntries(
    ANALYSES.map((a) => [`${a.store.split('/')[0]}/analysis.ts`, `the declaration of lobes ${a.id}`]),
  ),
};

/** The stores of the outputs written whole (a marker with each file's sha256) that the report reads: they read only through lineage. */
export const LINEAGE_READERS = ANALYSES.filter((a) => a.marker && 'read' in a).map((a) => a.store);

/** Of `readers` (paths under src/), those that read a file other than through lineage, or never check currency. */
export function unverifiedReads(sources: Map<string, string>, readers: readonly string[]): string[] {
  const out: string[] = [];
  for (const rel of readers) {
    const text = sources.get(path.join(SRC, rel));
    if (text === undefined) {
      out.push(`${rel}: not a source file`);
      continue;
    }
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    for (const fn of ['readFileSync', 'readJsonFile', 'createReadStream', 'openSync'])
      if (new RegExp(`\\b${fn}\\s*\\(`).test(code)) out.push(`${rel}: reads a file with ${fn}`);
    if (!/\bcheckOutputCurrent\s*\(/.test(code)) out.push(`${rel}: never calls checkOutputCurrent`);
  }
  return out;
}

/** String literals of a TypeScript source (quotes and template pieces), comments skipped. */
export function stringLiterals(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '/' && text[i + 1] === '/') {
      i = text.indexOf('\n', i);
      if (i < 0) break;
    } else if (c === '/' && text[i + 1] === '*') {
      i = text.indexOf('*/', i + 2);
      if (i < 0) break;
      i += 2;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      let lit = '';
      while (j < text.length && text[j] !== c) {
        if (text[j] === '\\') {
          lit += text[j + 1] ?? '';
          j += 2;
          continue;
        }
        // a template's substitution splits it into pieces
        if (c === '`' && text[j] === '$' && text[j + 1] === '{') {
          out.push(lit);
          lit = '';
          let depth = 1;
          j += 2;
          while (j < text.length && depth) {
            if (text[j] === '{') depth++;
            else if (text[j] === '}') depth--;
            j++;
          }
          continue;
        }
        if (c !== '`' && text[j] === '\n') break;
        lit += text[j];
        j++;
      }
      out.push(lit);
      i = j + 1;
    } else i++;
  }
  return out;
}

/** `file: literal` for each literal outside the allowed modules that names a run folder's file or joins a path from one of its folders. */
export function runFolderNames(files: Map<string, string>, allowed: readonly string[]): string[] {
  const bad: string[] = [];
  const fileRe = new RegExp(`(?:^|/)(?:${RUN_FOLDER_FILES.map((f) => f.replace(/\./g, '\\.')).join('|')})$`);
  const joinRe = new RegExp(`\\b(?:join|resolve)\\([^()]*['"\`](?:${RUN_FOLDER_DIRS.join('|')})['"\`]`);
  for (const [file, text] of files) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    if (allowed.includes(rel)) continue;
    for (const lit of stringLiterals(text)) if (fileRe.test(lit)) bad.push(`${rel}: '${lit}'`);
    const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '');
    const m = joinRe.exec(code);
    if (m) bad.push(`${rel}: ${m[0]}`);
  }
  return bad;
}

/** The modules that may call holm and benjaminiHochberg: the registry of families, and their definitions. */
export const ADJUSTERS = ['util/families.ts', 'util/stats.ts'];

/** `file: call` for each Holm or BH call outside ADJUSTERS (comments skipped): an adjustment outside a declared family. */
export function undeclaredAdjustments(files: Map<string, string>): string[] {
  const bad: string[] = [];
  for (const [file, text] of files) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    if (ADJUSTERS.includes(rel)) continue;
    const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '');
    for (const m of code.matchAll(/\b(holm|benjaminiHochberg)\s*\(/g)) bad.push(`${rel}: ${m[1]}(`);
  }
  return bad;
}

/**
 * Library code reports only through its JobIO (src/util/jobio.ts): no `process.stderr` or
 * `console.` in src/ outside src/cli/, but for these files, each with its reason.
 */
export const STDERR_WRITERS: Record<string, string> = {
  'util/jobio.ts': 'the default JobIO (stderrIO): the one place library lines and progress reach stderr',
  'runtime/providers.ts':
    "a once-per-model-file note from inside session creation, below any job's JobIO (the engines take none)",
  'data/subset.ts':
    "limitItems' note on a --limit above the item count, called from every job's input stage without its JobIO",
};

/** The source files of src/ outside src/cli/ (and STDERR_WRITERS) that write to stderr or the console themselves. */
export function directOutput(sources: Map<string, string>, allowed: Record<string, string> = STDERR_WRITERS): string[] {
  const bad: string[] = [];
  for (const [file, text] of sources) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    if (rel.startsWith('cli/') || rel in allowed) continue;
    const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '');
    for (const m of code.matchAll(/\b(process\.stderr|console\.\w+)/g)) bad.push(`${rel}: ${m[1]}`);
  }
  return bad;
}

/** The targets of a file's `import type ... from` statements (resolved to .ts). */
export function typeOnlyImports(text: string, file: string): string[] {
  return [...text.matchAll(/^\s*import\s+type\s[^;]*?from\s+'(\.[^']+)'/gms)].map((m) =>
    path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts'))
  );
}

/** The section ids the page script's section modules declare (`id: '...'` of each exported Section), by module. */
export function clientSectionIds(sources: Map<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  const dir = path.join(SRC, 'report', 'client', 'sections');
  for (const [file, text] of sources) {
    if (path.dirname(file) !== dir) continue;
    const m = /export const \w+: Section = \{[^}]*?\bid: '([^']+)'/s.exec(text);
    if (m) out.set(path.basename(file, '.ts'), m[1]!);
  }
  return out;
}

/**
 * What is wired outside the registry: a section module of the page script whose id no analysis
 * registers, a section module the client imports other than through sections.gen.ts, an
 * analysis command written into cli/main.ts by hand, an analysis's `--X-dir` flag written into
 * cli/report.ts, an analysis id written into util/output.ts's OutputKind.
 */
export function wiredOutsideRegistry(sources: Map<string, string>,
  registered: { ids: string[]; sections: { id: string; module: string }[]; flags: string[] }): string[]
{
  const bad: string[] = [];
  const ids = new Set(registered.sections.map((s) => s.id));
  for (const [module, id] of clientSectionIds(sources)) {
    if (!ids.has(id)) bad.push(`report/client/sections/${module}.ts: section ${JSON.stringify(id)} is not registered`);
    else if (registered.sections.find((s) => s.id === id)!.module !== module)
      bad.push(`report/client/sections/${module}.ts: section ${JSON.stringify(id)} is registered with another module`);
  }
  const main = sources.get(path.join(SRC, 'report', 'client', 'main.ts')) ?? '';
  for (const m of main.matchAll(/from '\.\/sections\/([^']+)\.js'/g))
    bad.push(`report/client/main.ts: imports sections/${m[1]} itself (the page's sections come from sections.gen.ts)`);
  const cli = sources.get(path.join(SRC, 'cli', 'main.ts')) ?? '';
  for (const id of registered.ids)
    if (new RegExp(`^\\s+${id}: \\{ summary:`, 'm').test(cli))
      bad.push(`cli/main.ts: the command ${id} is written by hand (it comes from the registry)`);
  const report = sources.get(path.join(SRC, 'cli', 'report.ts')) ?? '';
  for (const lit of stringLiterals(report))
    if (/[a-z]-dir\b/.test(lit)) bad.push(`cli/report.ts: '${lit}' names an analysis's flag by hand`);
  const output = sources.get(path.join(SRC, 'util', 'output.ts')) ?? '';
  const kind = /export type OutputKind =([^;]*);/.exec(output)?.[1] ?? '';
  for (const id of registered.ids)
    if (kind.includes(`'${id}'`)) bad.push(`util/output.ts: OutputKind lists '${id}' by hand`);
  return bad;
}

/** The report modules that reach every analysis through the registry (src/analysis/registry.ts, src/report/modules.ts). */
export const THROUGH_REGISTRY = ['report/load.ts', 'report/payload.ts'];

/**
 * `file → import` for each import of `modules` (paths under src/), static or dynamic, that reaches
 * into a registered analysis's folder at run time (its store, its readers, its report module):
 * they load and show analyses only through their declarations. Type-only imports (the shapes of
 * results) are allowed.
 */
export function directAnalysisImports(sources: Map<string, string>, modules: readonly string[]): string[] {
  const folders = new Set(ANALYSES.map((a) => a.store.split('/')[0]!));
  const bad: string[] = [];
  for (const rel of modules) {
    const file = path.join(SRC, rel);
    const text = sources.get(file);
    if (text === undefined) {
      bad.push(`${rel}: not a source file`);
      continue;
    }
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    const specs = [
      ...[...code.matchAll(/^\s*(?:import|export)\s(?!type\s)[^;]*?from\s+'(\.[^']+)'/gms)].map((m) => m[1]!),
      ...[...code.matchAll(/^\s*import\s+'(\.[^']+)'/gm)].map((m) => m[1]!),
      ...[...code.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)].map((m) => m[1]!),
    ];
    for (const spec of specs) {
      const target = path.relative(SRC, path.resolve(path.dirname(file), spec)).split(path.sep).join('/');
      if (folders.has(target.split('/')[0]!)) bad.push(`${rel} → ${target.replace(/\.js$/, '.ts')}`);
    }
  }
  return bad;
}

/**
 * The lines of a source file that build an error (`new XError(`, and the lines after one left
 * open) or its hint (`hint:`, `const hint =`, `..._HINT =`), comments left out.
 */
function errorLines(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (/^\s*(\*|\/\/|\/\*)/.test(l)) continue;
    if (!/\bnew \w*Errors?\(|\bhint\b|HINT\b/.test(l)) continue;
    out.push(l);
    // a message on the lines after an open `new XError(`
    for (let j = i + 1; /\bnew \w*Errors?\($/.test(l) && j < lines.length && j <= i + 6 && !/^\s*\)/.test(lines[j]!);
      j++) out.push(lines[j]!);
  }
  return out.join('\n');
}

/** A flag a library error may still name, with the reason. */
export interface FlagAllowed {
  file: string;
  flag: string;
  reason: string;
}

/**
 * The `--flag`s that library errors (src/ outside src/cli/) name in their messages and hints:
 * a library error names an option by its key (opt('key') in the message, spelled as a flag by
 * the CLI only). A flag inside a `lobes COMMAND …` command line the hint tells the user to run
 * is the command line's own; the others must be in `allowed`, each with its reason.
 */
export function flagsInLibraryErrors(sources: Map<string, string>, allowed: readonly FlagAllowed[]): string[] {
  const bad: string[] = [];
  for (const [file, text] of sources) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    if (rel.startsWith('cli/')) continue;
    for (const lit of stringLiterals(errorLines(text))) {
      for (const m of lit.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)) {
        if (/\blobes [a-z]+\b/.test(lit.slice(0, m.index))) continue;
        if (allowed.some((a) => a.file === rel && a.flag === m[0])) continue;
        bad.push(`${rel}: ${m[0]} in ${JSON.stringify(lit.trim().slice(0, 80))}`);
      }
    }
  }
  return bad;
}

/** The flags library errors still name, each with why (flagsInLibraryErrors). */
const LIBRARY_ERROR_FLAGS: FlagAllowed[] = [
  { file: 'ablate/regions.ts', flag: '--top',
    reason:
      "wanda's own flag: the hint tells the user to run lobes wanda again with a larger --top (ablate's top is another option)" },
  { file: 'attend/inputs.ts', flag: '--control',
    reason: 'says how the evaluation was made (eval --control): a flag of lobes eval, not an option of this call' },
  { file: 'eval/engine.ts', flag: '--task',
    reason: "optimum's own flag, in the command line that exports a model with its KV cache" },
  { file: 'report/ablate.ts', flag: '--out',
    reason:
      'a flag of the lobes ablate command line the hint tells the user to run again (split from it by the run folder)' },
  { file: 'report/ablate.ts', flag: '--force',
    reason:
      'a flag of the lobes ablate command line the hint tells the user to run again (split from it by the run folder)' },
];

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
      // the t-SNE engine's stages: the ONNX graph builder (a layer over util) for the float32 kNN
      // screen; the PCA start comes from src/cluster, which imports tsne (src/cluster/tsne-pca.ts)
      tsne: ['util', 'onnx'],
    };
    // util/output.ts names its OutputKind from the registry's ids: a type, erased at run time
    const typeOnly: Record<string, string[]> = { util: ['analysis/registry.ts'] };
    const g = importGraph(files);
    const bad: string[] = [];
    for (const [file, deps] of g) {
      const layer = path.relative(SRC, file).split(path.sep)[0]!;
      const ok = allowed[layer];
      if (!ok) continue;
      for (const d of deps) {
        const rel = path.relative(SRC, d);
        const target = rel.split(path.sep)[0]!;
        if (target === layer || ok.includes(target)) continue;
        if (typeOnly[layer]?.includes(rel) && typeOnlyImports(files.get(file)!, file).includes(d)) continue;
        bad.push(`${path.relative(SRC, file)} → ${rel}`);
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
  it('the analysis stores read their outputs only through lineage (verified against the sha256 each file was written with)', () => {
    const bad = unverifiedReads(files, LINEAGE_READERS);
    expect(bad,
      'read wanda and cluster outputs with readOutputJson/readOutputFile (src/store/lineage.ts) and check them with checkOutputCurrent')
      .toEqual([]);
  });

  it('names a planted store that reads an output file directly, or skips the currency check (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'wanda/store.ts'),
        "import { readFileSync } from 'node:fs';\nconst x = JSON.parse(readFileSync(f, 'utf8'));\ncheckOutputCurrent(a);\n"],
      [path.join(SRC, 'cluster/store.ts'), "const s = readOutputJson(d, 'settings.json');\n"],
    ]);
    expect(unverifiedReads(planted, ['wanda/store.ts', 'cluster/store.ts'])).toEqual([
      'wanda/store.ts: reads a file with readFileSync',
      'cluster/store.ts: never calls checkOutputCurrent',
    ]);
  });

  it('every Holm and BH adjustment runs through a declared family (src/util/families.ts)', () => {
    for (const m of ADJUSTERS) expect(files.has(path.join(SRC, m)), m).toBe(true);
    expect(undeclaredAdjustments(files), 'adjust p-values with declareFamily(...).adjust (src/util/families.ts)')
      .toEqual([]);
  });

  it('finds a planted Holm call outside the registry, and not one in a comment (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'cluster/x.ts'), 'const h = holm(ps);\n'],
      [path.join(SRC, 'wanda/y.ts'), '// holm(ps) in a comment\nconst q = benjaminiHochberg (ps);\n'],
      [path.join(SRC, 'util/families.ts'), 'return holm(p);\n'],
    ]);
    expect(undeclaredAdjustments(planted)).toEqual(['cluster/x.ts: holm(', 'wanda/y.ts: benjaminiHochberg(']);
  });

  it('library code reports only through its JobIO: no stderr or console outside src/cli/ (src/util/jobio.ts)', () => {
    for (const f of Object.keys(STDERR_WRITERS)) expect(files.has(path.join(SRC, f)), f).toBe(true);
    expect(directOutput(files), "report through the job's JobIO (io.log, io.warn, Progress with io), src/util/jobio.ts")
      .toEqual([]);
  });

  it('finds a planted stderr write and console call in a library file, not one in a comment or in src/cli/ (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'wanda/x.ts'), "// process.stderr.write in a comment\nprocess.stderr.write('a\\n');\n"],
      [path.join(SRC, 'store/y.ts'), "console.error('b');\n"],
      [path.join(SRC, 'cli/z.ts'), "process.stderr.write('c\\n');\n"],
      [path.join(SRC, 'util/jobio.ts'), "process.stderr.write('d\\n');\n"],
    ]);
    expect(directOutput(planted)).toEqual(['wanda/x.ts: process.stderr', 'store/y.ts: console.error']);
  });

  it('only the store modules name the files of a run folder', () => {
    const allowed = Object.keys(RUN_FOLDER_MODULES);
    for (const m of allowed) {
      expect(files.has(path.join(SRC, m)), `${m} is in the allow-list but is not a source file`).toBe(true);
    }
    const bad = runFolderNames(files, allowed);
    expect(bad, 'read and write run-folder files through their store module (src/store, src/<analysis>/store.ts)')
      .toEqual([]);
  });

  it('finds a planted run-folder file name and a planted folder join (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'report/x.ts'), "const f = path.join(dir, 'settings.json');\n"],
      [path.join(SRC, 'report/y.ts'), 'const f = `${run}/wanda/regions.json`;\n'],
      [path.join(SRC, 'report/z.ts'), "const d = path.join(runDir, 'cluster');\n"],
      [path.join(SRC, 'report/ok.ts'),
        "// reads settings.json through the store\nconst m = 'no settings.json here, only words';\nconst x = { kind: 'wanda' };\n"],
      [path.join(SRC, 'wanda/store.ts'), "const SETTINGS = 'settings.json';\n"],
    ]);
    expect(runFolderNames(planted, ['wanda/store.ts'])).toEqual([
      "report/x.ts: 'settings.json'",
      "report/y.ts: '/wanda/regions.json'",
      "report/z.ts: join(runDir, 'cluster'",
    ]);
  });
  it('every registered analysis has its store, its command, its report sections and its docs page', async () => {
    const root = path.resolve(SRC, '..');
    const sections = clientSectionIds(files);
    for (const a of ANALYSES) {
      expect(files.has(path.join(SRC, a.store)), `${a.id}: store ${a.store}`).toBe(true);
      expect(existsSync(path.join(root, a.docs)), `${a.id}: docs page ${a.docs}`).toBe(true);
      expect(readFileSync(path.join(root, a.docs), 'utf8'), `${a.id}: ${a.docs} names the command`).toContain(
        `lobes ${a.id}`,
      );
      expect(typeof (await a.cli()).run, `${a.id}: command module`).toBe('function');
      for (const s of a.sections) {
        expect(sections.get(s.module), `${a.id}: section module sections/${s.module}.ts declares id ${s.id}`).toBe(
          s.id,
        );
        expect(files.get(path.join(SRC, 'report', 'client', 'sections', `${s.module}.ts`)),
          `${a.id}: sections/${s.module}.ts exports ${s.export} titled ${s.title}`).toMatch(
            new RegExp(
              `export const ${s.export}: Section = \\{\\s*title: '${s.title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`,
            ),
          );
      }
    }
    // the page script's list is the registry's, as generated
    const { sectionsModuleText, SECTIONS_MODULE } = await import('../src/analysis/generate.js');
    expect(readFileSync(path.join(root, SECTIONS_MODULE), 'utf8'), 'run npx tsx src/analysis/generate.ts').toBe(
      sectionsModuleText(),
    );
  });

  it('nothing of an analysis is wired outside the registry', () => {
    const registered = { ids: ANALYSES.map((a) => a.id), sections: pageSections(),
      flags: reportFlags().map((f) => f.name) };
    expect(wiredOutsideRegistry(files, registered)).toEqual([]);
  });

  it('names a planted unregistered section and hand-wired command, flag and kind (the check can fail)', () => {
    const registered = { ids: ANALYSES.map((a) => a.id), sections: pageSections(),
      flags: reportFlags().map((f) => f.name) };
    const planted = new Map(files);
    const sec = path.join(SRC, 'report', 'client', 'sections', 'planted.ts');
    planted.set(sec,
      "import type { Section } from '../section.js';\nexport const plantedSection: Section = {\n  title: 'Planted',\n  id: 'planted',\n  render() {},\n};\n");
    const main = path.join(SRC, 'report', 'client', 'main.ts');
    planted.set(main, files.get(main)! + "import { plantedSection } from './sections/planted.js';\n");
    const cli = path.join(SRC, 'cli', 'main.ts');
    planted.set(cli,
      files.get(cli)!.replace('const COMMANDS: Record<string, Command> = {\n',
        "const COMMANDS: Record<string, Command> = {\n  wanda: { summary: 'x', load: () => import('./wanda.js') },\n"));
    const report = path.join(SRC, 'cli', 'report.ts');
    planted.set(report, files.get(report)! + "const extra = { 'lens-dir': { type: 'string' } };\n");
    const output = path.join(SRC, 'util', 'output.ts');
    planted.set(output,
      files.get(output)!.replace("export type OutputKind = MarkedAnalysisId | 'figures'",
        "export type OutputKind = MarkedAnalysisId | 'wanda' | 'figures'"));
    expect(wiredOutsideRegistry(planted, registered)).toEqual([
      'report/client/sections/planted.ts: section "planted" is not registered',
      "report/client/main.ts: imports sections/planted itself (the page's sections come from sections.gen.ts)",
      'cli/main.ts: the command wanda is written by hand (it comes from the registry)',
      "cli/report.ts: 'lens-dir' names an analysis's flag by hand",
      "util/output.ts: OutputKind lists 'wanda' by hand",
    ]);
  });
  it("the report loads and shows every analysis through the registry (load.ts and payload.ts import no analysis's store or reader)", () => {
    expect(directAnalysisImports(files, THROUGH_REGISTRY),
      "reach the analysis through its declaration's report module (src/NAME/report.ts)").toEqual([]);
  });

  it("names a planted direct import of an analysis's store or report module, and not a type-only one (the check can fail)", () => {
    const planted = new Map(files);
    const load = path.join(SRC, 'report', 'load.ts');
    const payload = path.join(SRC, 'report', 'payload.ts');
    planted.set(load,
      "import { readWanda, wandaDir } from '../wanda/store.js';\nimport type { ClusterData } from '../cluster/store.js';\n" +
        files.get(load)!);
    planted.set(payload,
      files.get(payload)! +
        "// import { x } from '../eval/store.js';\nconst m = await import('../cluster/report.js');\nexport { attendPayload } from '../attend/report.js';\n");
    expect(directAnalysisImports(planted, THROUGH_REGISTRY)).toEqual([
      'report/load.ts → wanda/store.ts',
      'report/payload.ts → attend/report.ts',
      'report/payload.ts → cluster/report.ts',
    ]);
  });
});

describe('library errors name options, not flags', () => {
  const files = new Map(sourceFiles(SRC).map((f) => [f, readFileSync(f, 'utf8')]));

  it('no library error message or hint in src/ outside src/cli/ names a --flag (it names the option key: opt())', () => {
    for (const a of LIBRARY_ERROR_FLAGS)
      expect(files.has(path.join(SRC, a.file)), `${a.file} is in the allow-list but is not a source file`).toBe(true);
    expect(flagsInLibraryErrors(files, LIBRARY_ERROR_FLAGS)).toEqual([]);
  });

  it('finds a planted flag in a message, a hint and an open error, and not a command line, a comment, an opt() or the CLI (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'wanda/x.ts'), "throw new UsageError('--sweep needs --resolution block');\n"],
      [path.join(SRC, 'eval/y.ts'), "throw new LobesError('bad', { hint: 'use --share-prefix off' });\n"],
      [path.join(SRC, 'store/z.ts'), 'throw new UsageError(\n  `--shard auto: ${x}`,\n);\n'],
      [path.join(SRC, 'store/ok.ts'),
        "// hint: --repair\nthrow new LobesError('missing', { hint: 'rerun the lobes extract command with --repair' });\nthrow new UsageError(`${opt('shard')} must be i/n`);\nconst key = { '--shard': 1 };\n"],
      [path.join(SRC, 'cli/ok.ts'), "throw new UsageError('--sweep must be all or BLOCKS/TOPS');\n"],
    ]);
    expect(flagsInLibraryErrors(planted, [])).toEqual([
      'wanda/x.ts: --sweep in "--sweep needs --resolution block"',
      'wanda/x.ts: --resolution in "--sweep needs --resolution block"',
      'eval/y.ts: --share-prefix in "use --share-prefix off"',
      'store/z.ts: --shard in "--shard auto:"',
    ]);
    expect(flagsInLibraryErrors(planted, [{ file: 'eval/y.ts', flag: '--share-prefix', reason: 'planted' }])).not
      .toContain('eval/y.ts: --share-prefix in "use --share-prefix off"');
  });
});
