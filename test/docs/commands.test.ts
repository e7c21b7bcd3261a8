/**
 * Every `lobes …` command line that README.md and docs/*.md show works as written.
 *
 * The commands are read from the Markdown (test/docs/doc-commands.ts), so a new page or example
 * is run without editing this file. Each page's commands run in order, through bash, in one
 * temporary folder per page (so a page's `--out runs/x` is there for its next command), with
 * HOME in a temporary folder too (the GGUF cache `~/.cache/lobes` lands there). `lobes` and
 * `npx lobes` are this checkout's command line (src/cli/bin.ts through tsx). Each must exit 0.
 *
 * What a command needs and this machine cannot give, or gives only slowly, is handled by four
 * tables below, each entry with its reason:
 *   - PLACEHOLDERS: a name in the docs (a user's model, a data folder) → the shipped or shared
 *     file that stands in for it, the same for every command;
 *   - STAND_INS: an input a page's commands read but that only a skipped command makes
 *     (e.g. runs/8b, extracted on a GPU): made first in that page's folder by a small command;
 *   - SLICES: a page whose commands read some of the SocialEval files instead of all, where
 *     their cost grows with the items and the page only checks that they run as written;
 *   - SKIPS: commands not run here (a GPU, the network, hours of compute), matched by page and
 *     a piece of the command's text. A command a page repeats (a recap) runs once. A new example in the docs that cannot run here needs an
 *     entry; an entry that matches no command fails the test, so the list stays true.
 * Commands writing PNG/SVG need Chromium, and commands reading ../shared need it present: they
 * skip with a printed reason otherwise.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, mkdirSync, existsSync, readdirSync, writeFileSync, rmSync, copyFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { scanDocs, type DocCommand } from './doc-commands.js';
import { chromiumProblem } from '../../src/report/browser.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHARED = path.resolve(ROOT, '..', 'shared');
const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs');
const BIN = path.join(ROOT, 'src', 'cli', 'bin.ts');
const TINY = path.join(ROOT, 'models', 'tiny-llama');
/** A 2-layer Llama-3 GGUF with its tokenizer (test/goldens/make_gguf_llama3_tiny.py). */
const TINY_GGUF = path.join(ROOT, 'test', 'goldens', 'gguf-llama3-tiny', 'tiny-llama3.gguf');
const WORLDTREE = path.join(SHARED, 'socialeval', 'worldtree_data');

/**
 * Names in the docs → what stands in for them (literal text, longest first). A real model is
 * replaced by a tiny one of the same kind (an ONNX folder by models/tiny-llama, a GGUF by the
 * tiny Llama-3 GGUF): SmolLM2-135M takes seconds per SocialEval prompt, an 8B model minutes.
 */
const PLACEHOLDERS: [string | RegExp, string][] = [
  // the shipped model, named from the repository root (not inside an absolute path)
  [/(?<![\w/.-])models\/tiny-llama/g, TINY],
  ['../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf', TINY_GGUF],
  ['~/models/SmolLM2-135M-Instruct.Q4_1.gguf', TINY_GGUF],
  ['~/.lmstudio/models/PUBLISHER/REPO/FILE.gguf', TINY_GGUF],
  ['~/.ollama/models/blobs/sha256-…', TINY_GGUF],
  ['SmolLM2-135M-Instruct.Q4_1.gguf', TINY_GGUF],
  ['smollm2.gguf', TINY_GGUF],
  ['model.gguf', TINY_GGUF],
  ['llama-70b', TINY],
  ['llama-8b', TINY],
  ['path/to/worldtree_data', WORLDTREE],
  ['socialeval:DATA', `socialeval:${WORLDTREE}`],
  ['eval MODEL ', `eval ${TINY} `],
  ['socialeval:DIR', `socialeval:${WORLDTREE}`],
  ['--model M ', `--model ${TINY} `],
  ['../shared/', `${SHARED}/`],
  // absolute scratch paths of a page become folders of the page's own temporary folder
  ['/tmp/find2/', 'find2/'],
  ['/tmp/find/', 'find/'],
];

/**
 * A page whose commands read a slice of the SocialEval folder instead of all of it: the slice's
 * files are copied into the page's folder first, and `name` in the page's commands (before
 * PLACEHOLDERS) names that copy. Commands that read ../shared skip without it as before.
 */
interface Slice {
  doc: string;
  /** The name in the page's commands (before PLACEHOLDERS) and what it becomes, given the copy's folder. */
  name: (copy: string) => [string, string];
  /** The files of the SocialEval folder the copy holds. */
  files: RegExp;
  why: string;
}
const SLICES: Slice[] = [
  {
    doc: 'docs/datasets.md',
    name: (copy) => ['socialeval:DIR', `socialeval:${copy}`],
    files: /^\[1,-1\]_/,
    why:
      'lobes swap with its defaults on every English item (1,985 swapped samples) took 211 s of the suite; the files of one orientation ([1,-1], 265 English items, 265 swapped) hold all 5 aspects on both sides of the swap, at least 27 per class, enough for the nested 5-fold CV, and the page checks that its commands run as written, which does not depend on the item count (the analysis itself is checked on planted data in test/swap/swap.test.ts)',
  },
  {
    doc: 'docs/findings-ablation.md',
    name: (copy) => ['../shared/socialeval/worldtree_data', copy],
    files: /^\[1,-1\]_/,
    why:
      "the page's last block extracts every English item (1,985; 12 s of the suite on the tiny GGUF) for wanda and an ablation the suite skips; 265 items of one orientation give wanda its regions by aspect all the same, and the first block's --limit 500 and --limit 75 draw from them (stratified by aspect)",
  },
];
const sliceDir = (dir: string) => path.join(dir, 'socialeval-slice');

/** Files a page's commands read as the user's own (written into the page's folder first). */
const FILES: Record<string, string> = {
  // eval.md's jsonl multiple choice: question q, options choices, answer gold, label topic
  'items.jsonl': [
    { q: 'Where do people usually sleep?', choices: ['in a bed', 'in a river', 'on a cloud'], gold: 0, topic: 'home' },
    { q: 'What do you say when someone helps you?', choices: ['go away', 'thank you', 'nothing'], gold: 1,
      topic: 'manners' },
    { q: 'Which is a fruit?', choices: ['a chair', 'a stone', 'an apple'], gold: 2, topic: 'home' },
    { q: 'How do you greet a friend?', choices: ['hello', 'goodbye forever', 'ignore them'], gold: 0,
      topic: 'manners' },
  ].map((o) => JSON.stringify(o)).join('\n') + '\n',
  // intervene.md's steering direction: the page computes it from runs/plain with `node direction.mjs`
  // (not a lobes command, so not run here); a fixed vector of models/tiny-llama's width (64) stands in
  'direction.json': JSON.stringify(Array.from({ length: 64 }, (_, j) => Math.round(Math.sin(j + 1) * 1000) / 4000)),
};

interface StandIn {
  doc: string;
  /** What the page's commands read. */
  makes: string;
  /** A lobes command (run like a documented one, after PLACEHOLDERS). */
  command: string;
  why: string;
}
const STAND_INS: StandIn[] = [
  ...['runs/8b', 'runs/70b'].map((run) => ({
    doc: 'README.md',
    makes: run,
    command: `lobes extract --model ${TINY} --data builtin:social --out ${run} --capture final,mlp`,
    why: 'the README extracts it with an 8B/70B model on CUDA; the tiny model on the built-in set stands in',
  })),
  // eval.md: the evaluation's items must be samples of the run it labels: one slice of the English
  // items (orientation [1,-1], 265 samples) for both
  {
    doc: 'docs/eval.md',
    makes: 'runs/8b',
    command: `lobes extract --model ${TINY} --data "socialeval:${WORLDTREE}?lang=en&orientation=[1,-1]" --out runs/8b`,
    why: 'the README extracts it with an 8B model on CUDA; 265 English SocialEval items on the tiny model stand in',
  },
  ...['8b-en', '70b-en'].map((name) => ({
    doc: 'docs/eval.md',
    makes: `eval/${name}`,
    command:
      `lobes eval --model ${TINY} --data "socialeval:${WORLDTREE}?lang=en&orientation=[1,-1]" --task iae --limit 16 --out eval/${name}`,
    why: "made by an 8B/70B evaluation of every IAE item on CUDA; 16 of the run's items on the tiny model stand in",
  })),
  {
    doc: 'docs/attend.md',
    makes: 'runs/smol-eval',
    command:
      `lobes eval smollm2.gguf --data "socialeval:${WORLDTREE}?lang=en" --task iae --limit 4 --out runs/smol-eval`,
    why:
      'the page evaluates every IAE item (633, three orders each); 4 items on the tiny GGUF stand in, so that attend reads an evaluation of the same GGUF',
  },
];

interface Skip {
  doc: string;
  /** A piece of the command's text as written (with exact: the whole command). */
  has: string;
  exact?: boolean;
  reason: string;
}
const GPU = 'needs a CUDA GPU';
const SKIPS: Skip[] = [
  { doc: 'README.md', has: 'npx lobes demo', exact: true,
    reason:
      "test/report/demo.test.ts runs the demo on the built-in model; docs/gguf.md's `lobes demo --model … --out smollm2-demo` runs here" },
  { doc: 'README.md', has: '--data builtin:social --out runs/llama31-8b --device cuda', reason: GPU },
  { doc: 'README.md', has: 'lobes demo --model ~/.lmstudio',
    reason: "the same command as docs/gguf.md's `lobes demo --model SmolLM2-135M-Instruct.Q4_1.gguf`, run there" },
  { doc: 'README.md', has: '--install-cuda-from-wheels', reason: 'downloads CUDA wheels from PyPI (network, 2 GB)' },
  { doc: 'README.md', has: 'lobes doctor --device cuda', reason: GPU },
  { doc: 'README.md', has: '--out runs/8b  --device cuda', reason: `${GPU} (runs/8b is a stand-in)` },
  { doc: 'README.md', has: '--out runs/70b --device cuda', reason: `${GPU} (runs/70b is a stand-in)` },
  { doc: 'docs/attend.md', has: 'lobes eval  smollm2.gguf',
    reason: 'every IAE item (633, three orders each): too long for the suite (runs/smol-eval is a stand-in)' },
  { doc: 'docs/attend.md', has: '--cot 256 --out runs/smol-attend-cot',
    reason:
      'generates up to 256 tokens for each of the 633 IAE items: hours on CPU; the --cot path is checked against Hugging Face in test/attend/cot.test.ts' },
  { doc: 'docs/eval.md', has: '--task both --limit 64',
    reason: '30 s of CPU on the tiny model (64 items of both tasks); the IAE path runs with --limit 32 below' },
  { doc: 'docs/eval.md', has: '--out eval/8b-en --device cuda', reason: `${GPU} (eval/8b-en is a stand-in)` },
  { doc: 'docs/eval.md', has: '--cot 512', reason: GPU },
  {
    doc: 'docs/eval.md',
    has: 'lobes cluster runs/8b --by correct',
    reason:
      'the tiny stand-in answers each of its 16 evaluated items wrong, and unevaluated items are left out of the comparison, so "correct" has one class here; test/eval/link.test.ts runs cluster --by correct on a planted evaluation',
  },
  { doc: 'docs/eval.md', has: 'lobes wanda runs/8b --by correct',
    reason:
      'one class of "correct" on the tiny stand-in, as for cluster above; test/wanda/planted.test.ts runs wanda --by another axis beside the first' },
  { doc: 'docs/eval.md', has: '--task iae --limit 32 --out eval/smol-en',
    reason:
      '96 prompts of a GGUF: a minute on a shared 2-core machine; the GGUF evaluation runs in docs/attend.md (runs/smol-eval)' },
  { doc: 'docs/eval.md', has: '--task iae --scoring cloze --mutual-info',
    reason: 'every IAE item (633): too long for the suite; cloze runs on items.jsonl above' },
  { doc: 'docs/eval.md',
    has: 'lobes eval --model llama-8b --data "socialeval:DATA?lang=en" --task iae --out eval/8b-en',
    reason: 'every IAE item (633): too long for the suite (eval/8b-en is a stand-in)' },
  { doc: 'docs/gguf.md', has: 'npx lobes demo --model SmolLM2-135M-Instruct.Q4_1.gguf', exact: true,
    reason: "the same demo as the page's second example (--out smollm2-demo), which runs" },
  { doc: 'docs/scale.md', has: 'lobes doctor --device cuda', reason: GPU },
  { doc: 'docs/scale.md', has: '--install-cuda-from-wheels',
    reason: 'downloads CUDA wheels from PyPI (network, 2 GB)' },
  { doc: 'docs/scale.md', has: '--install-vulkan-from', reason: "needs libvulkan from a user's download" },
  { doc: 'docs/scale.md', has: 'lobes doctor --device webgpu', reason: 'needs a GPU adapter' },
  { doc: 'docs/findings-ablation.md', has: '--out runs/abl/zh-minus',
    reason:
      "reads the findings run runs/findings/zh-qr, which bench/findings-smollm2.sh makes (every Chinese item, hours); the page's first block runs the same kind of ablation from its own extraction" },
  {
    doc: 'docs/findings-swap.md',
    has: '--out runs/swap/en-swap-ctl',
    reason:
      'reads runs/swap/smollm2-fp32, which bench/swap-smollm2.sh makes, and extracts 1,200 texts through its random-weights control (400 s on a shared 2-core machine); extract --control random is checked in test/extract-run/control.test.ts, and on a generated model beside lobes swap --control in test/swap/swap.test.ts',
  },
  { doc: 'docs/findings-swap.md', has: '--control runs/swap/en-swap-ctl',
    reason:
      'reads the runs bench/swap-smollm2.sh and the command above make (the analysis of both took 408 s); lobes swap --control runs on a generated model and its control in test/swap/swap.test.ts' },
  { doc: 'docs/findings-ablation.md', has: '--out runs/abl/en-full --random 10',
    reason:
      "every English item (1,985) × 12 passes: minutes even on the tiny stand-in model; the page's first block runs the same kind of ablation with --limit" },
];

export function mapPlaceholders(text: string, page?: { doc: string; dir: string }): string {
  let out = text;
  for (const sl of SLICES) {
    if (page?.doc !== sl.doc) continue;
    const [from, to] = sl.name(sliceDir(page.dir));
    out = out.split(from).join(to);
  }
  for (const [from, to] of PLACEHOLDERS)
    out = typeof from === 'string' ? out.split(from).join(to) : out.replace(from, to);
  return out;
}

/** The reason a command (placeholders mapped) that reads ../shared cannot run here, or null. */
function sharedAbsent(mapped: string): string | null {
  return mapped.includes(SHARED) && !existsSync(SHARED) ? `${SHARED} is absent` : null;
}

/** Why this command cannot run here, or null. */
function missing(mapped: string): string | null {
  if (/--(png|svg)\b/.test(mapped)) {
    const p = chromiumProblem();
    if (p) return p;
  }
  return sharedAbsent(mapped);
}

const HOME = mkdtempSync(path.join(tmpdir(), 'lobes-docs-home-'));
const PRELUDE = [
  `lobes() { node --import ${JSON.stringify(TSX)} ${JSON.stringify(BIN)} "$@"; }`,
  'npx() { if [ "$1" = lobes ]; then shift; lobes "$@"; else echo "unexpected npx $1" >&2; return 127; fi; }',
].join('\n');

function sh(cwd: string, doc: string, vars: string[],
  command: string): { code: number; tail: string; seconds: number }
{
  const t0 = performance.now();
  const map = (t: string) => mapPlaceholders(t, { doc, dir: cwd });
  const script = [PRELUDE, ...vars.map(map), map(command)].join('\n');
  const r = spawnSync('bash', ['-c', script], {
    cwd,
    env: { ...process.env, HOME },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const tail = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-12).join('\n');
  return { code: r.status ?? 1, tail, seconds: (performance.now() - t0) / 1000 };
}

const scan = scanDocs(ROOT, (d) => readdirSync(d));
const skipOf = (c: DocCommand) =>
  SKIPS.find((k) => k.doc === c.doc && (k.exact ? c.command === k.has : c.command.includes(k.has)));
const used = new Set(scan.commands.map(skipOf).filter((s) => s !== undefined));
const byDoc = new Map<string, DocCommand[]>();
for (const c of scan.commands) byDoc.set(c.doc, [...(byDoc.get(c.doc) ?? []), c]);
/** LOBES_DOCS=docs/eval.md,README.md runs those pages only (while editing a page). */
const ONLY = process.env.LOBES_DOCS ? new Set(process.env.LOBES_DOCS.split(',')) : null;
/** One command's time limit: the slowest runs in seconds on an idle machine; shared CI runners are slower. */
const LIMIT_MS = 300_000;
const timings: string[] = [];
const skipped: string[] = [];
const pageDirs: string[] = [];

describe('the documented command lines', () => {
  it('are found in the docs, synopses apart', () => {
    // the README's own first line, a continued command, and a command that uses a block variable
    const texts = scan.commands.map((c) => c.command);
    expect(texts).toContain('npx lobes demo');
    expect(scan.commands.some((c) => c.vars.length > 0 && c.command.includes('$'))).toBe(true);
    expect(scan.synopses.some((c) => c.doc === 'docs/cluster.md')).toBe(true);
    expect(texts.every((t) => !t.includes('\\') && !/\s#\s/.test(t))).toBe(true);
  });

  afterAll(() => {
    console.log(
      `documented commands: ${scan.commands.length} (${scan.synopses.length} synopses not run), seconds each:\n${
        timings.join('\n')
      }`,
    );
    if (skipped.length) console.log(`skipped, each with its reason:\n${skipped.join('\n')}`);
    for (const d of [HOME, ...pageDirs]) rmSync(d, { recursive: true, force: true });
  });

  for (const [doc, commands] of byDoc) {
    if (ONLY && !ONLY.has(doc)) continue;
    describe(doc, () => {
      const dir = mkdtempSync(path.join(tmpdir(), `lobes-docs-${path.basename(doc, '.md')}-`));
      pageDirs.push(dir);
      beforeAll(() => {
        for (const [name, text] of Object.entries(FILES)) writeFileSync(path.join(dir, name), text);
        for (const sl of SLICES.filter((x) => x.doc === doc && existsSync(WORLDTREE))) {
          mkdirSync(sliceDir(dir));
          for (const f of readdirSync(WORLDTREE).filter((n) => sl.files.test(n)))
            copyFileSync(path.join(WORLDTREE, f), path.join(sliceDir(dir), f));
        }
        for (const s of STAND_INS.filter((x) => x.doc === doc)) {
          if (missing(mapPlaceholders(s.command))) continue;
          mkdirSync(path.dirname(path.join(dir, s.makes)), { recursive: true });
          const r = sh(dir, doc, [], s.command);
          timings.push(`${r.seconds.toFixed(1).padStart(6)} s  ${doc} stand-in ${s.makes}`);
          if (r.code !== 0) throw new Error(`stand-in ${s.makes} (${s.command}) exited ${r.code}:\n${r.tail}`);
        }
      }, LIMIT_MS);
      const seen = new Map<string, number>();
      // Without ../shared, a command that reads it is skipped, and so is every later command of
      // the page (they may read what it, or a stand-in made from ../shared, would have written).
      let after: string | null = STAND_INS.some((s) => s.doc === doc && sharedAbsent(mapPlaceholders(s.command)))
        ? `a stand-in of this page needs ${SHARED}, which is absent`
        : null;
      for (const c of commands) {
        const skip = skipOf(c);
        const name = `${c.doc}:${c.line} ${c.command}`;
        // a page that repeats a command (a recap) runs it once
        const key = [...c.vars, c.command].join('\n');
        const again = seen.has(key) ? `the same command as line ${seen.get(key)} of the page, run there` : null;
        if (!seen.has(key)) seen.set(key, c.line);
        const mapped = [...c.vars, c.command].map((t) => mapPlaceholders(t)).join('\n');
        const why = skip?.reason ?? again ?? after ?? missing(mapped);
        if (!after && sharedAbsent(mapped)) after = `an earlier command of this page needs ${SHARED}, which is absent`;
        if (why) {
          skipped.push(`  ${name}: ${why}`);
          it.skip(`${name}  [skipped: ${why}]`, () => {});
          continue;
        }
        it(name, () => {
          const r = sh(dir, doc, c.vars, c.command);
          timings.push(`${r.seconds.toFixed(1).padStart(6)} s  ${name}`);
          expect(r.code, `${name}\nexited ${r.code}; the last lines:\n${r.tail}`).toBe(0);
        }, LIMIT_MS);
      }
    });
  }

  it('has no skip entry that matches no documented command', () => {
    const stale = SKIPS.filter((s) => !used.has(s)).map((s) => `${s.doc}: ${s.has}`);
    expect(stale).toEqual([]);
  });
});
