/**
 * Structural rules of the source tree (docs/architecture.md): no import cycles among the
 * modules of src/, lower layers import only from below, no source file over 500 lines without
 * a reason at its top, and the checks really read what they check (a planted cycle is found,
 * a planted long file is named), and only the store modules name the files of a run folder
 * (a planted literal is found).
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

/**
 * The files of a run folder and of its analyses' folders (docs/run-format.md). Only the store
 * modules (RUN_FOLDER_MODULES) name them; everything else reads and writes through those.
 */
export const RUN_FOLDER_FILES = [
  // the run (src/store/layout.ts)
  'manifest.json', 'samples.jsonl', 'index.json',
  // wanda (src/wanda/store.ts)
  'settings.json', 'regions.json', 'metrics.json', 'metrics.csv', 'channels.csv', 'sensitivity.csv', 'pooled.safetensors',
  // cluster (src/cluster/store.ts)
  'coords.json', 'coords.csv', 'items.json', 'sweep.json',
  // swap (RUN/swap, written by src/cluster/store.ts)
  'swap.json',
  // eval (src/eval/store.ts) and attend (src/attend/store.ts)
  'eval.json', 'records.jsonl', 'episodes.jsonl', 'summary.json', 'items.jsonl', 'attend.json',
  // ablate (src/ablate/store.ts)
  'ablation.json', 'job.json',
];

/** Folders of a run: a path joined from a literal one of these is built outside its store module. */
export const RUN_FOLDER_DIRS = ['activations', 'labels', 'wanda', 'cluster', 'swap', 'eval', 'attend', 'ablate'];

/**
 * The modules that may name a run folder's files, each for a reason (paths under src/).
 * A store module is the one place its folder's names, reads and writes live.
 */
export const RUN_FOLDER_MODULES: Record<string, string> = {
  'store/layout.ts': 'the run folder: manifest, samples, activations and their index',
  'store/labels.ts': 'label overlays, RUN/labels/AXIS.json',
  'store/records.ts': 'the record chunks of a JSON-lines job (eval) and their index',
  'wanda/store.ts': 'RUN/wanda',
  'cluster/store.ts': 'RUN/cluster or cluster --out',
  'eval/store.ts': 'an evaluation folder (RUN/eval or eval --out)',
  'attend/store.ts': 'an attend folder (RUN/attend or attend --out)',
  'ablate/store.ts': 'an ablation folder',
  // The output guard knows which entries are the run itself and the forms of wanda and cluster
  // folders written before outputs carried lobes' marker; src/util cannot import the stores.
  'util/output.ts': 'the output guard: the run\'s own entries and the unmarked forms of older outputs',
  // Lineage names the run's files it records as inputs (samples.jsonl); the analyses index reads
  // an analysis folder's settings.json only to say what a rerun replaces.
  'store/lineage.ts': 'lineage: the inputs an output records (the run, its samples, chunks, overlays)',
  'store/analyses.ts': 'the analysis folders of a run (one per label axis and capture point)',
};

/** The stores of the outputs written whole (a marker with each file's sha256): they read only through lineage. */
export const LINEAGE_READERS = ['wanda/store.ts', 'cluster/store.ts'];

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
    for (const fn of ['readFileSync', 'readJsonFile', 'createReadStream', 'openSync']) if (new RegExp(`\\b${fn}\\s*\\(`).test(code)) out.push(`${rel}: reads a file with ${fn}`);
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
  it('the analysis stores read their outputs only through lineage (verified against the sha256 each file was written with)', () => {
    const bad = unverifiedReads(files, LINEAGE_READERS);
    expect(bad, 'read wanda and cluster outputs with readOutputJson/readOutputFile (src/store/lineage.ts) and check them with checkOutputCurrent').toEqual([]);
  });

  it('names a planted store that reads an output file directly, or skips the currency check (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'wanda/store.ts'), "import { readFileSync } from 'node:fs';\nconst x = JSON.parse(readFileSync(f, 'utf8'));\ncheckOutputCurrent(a);\n"],
      [path.join(SRC, 'cluster/store.ts'), "const s = readOutputJson(d, 'settings.json');\n"],
    ]);
    expect(unverifiedReads(planted, LINEAGE_READERS)).toEqual(['wanda/store.ts: reads a file with readFileSync', 'cluster/store.ts: never calls checkOutputCurrent']);
  });

  it('every Holm and BH adjustment runs through a declared family (src/util/families.ts)', () => {
    for (const m of ADJUSTERS) expect(files.has(path.join(SRC, m)), m).toBe(true);
    expect(undeclaredAdjustments(files), 'adjust p-values with declareFamily(...).adjust (src/util/families.ts)').toEqual([]);
  });

  it('finds a planted Holm call outside the registry, and not one in a comment (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'cluster/x.ts'), "const h = holm(ps);\n"],
      [path.join(SRC, 'wanda/y.ts'), "// holm(ps) in a comment\nconst q = benjaminiHochberg (ps);\n"],
      [path.join(SRC, 'util/families.ts'), "return holm(p);\n"],
    ]);
    expect(undeclaredAdjustments(planted)).toEqual(['cluster/x.ts: holm(', 'wanda/y.ts: benjaminiHochberg(']);
  });

  it('only the store modules name the files of a run folder', () => {
    const allowed = Object.keys(RUN_FOLDER_MODULES);
    for (const m of allowed) {
      expect(files.has(path.join(SRC, m)), `${m} is in the allow-list but is not a source file`).toBe(true);
    }
    const bad = runFolderNames(files, allowed);
    expect(bad, 'read and write run-folder files through their store module (src/store, src/<analysis>/store.ts)').toEqual([]);
  });

  it('finds a planted run-folder file name and a planted folder join (the check can fail)', () => {
    const planted = new Map([
      [path.join(SRC, 'report/x.ts'), "const f = path.join(dir, 'settings.json');\n"],
      [path.join(SRC, 'report/y.ts'), 'const f = `${run}/wanda/regions.json`;\n'],
      [path.join(SRC, 'report/z.ts'), "const d = path.join(runDir, 'cluster');\n"],
      [path.join(SRC, 'report/ok.ts'), "// reads settings.json through the store\nconst m = 'no settings.json here, only words';\nconst x = { kind: 'wanda' };\n"],
      [path.join(SRC, 'wanda/store.ts'), "const SETTINGS = 'settings.json';\n"],
    ]);
    expect(runFolderNames(planted, ['wanda/store.ts'])).toEqual([
      "report/x.ts: 'settings.json'",
      "report/y.ts: '/wanda/regions.json'",
      "report/z.ts: join(runDir, 'cluster'",
    ]);
  });
});
