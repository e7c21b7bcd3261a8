/**
 * The shared command-line vocabulary: the parser (did-you-mean, negative numbers, choices,
 * old spellings), --model in every model command, EPIPE through a real pipe, the subcommand
 * help of eval merge, and --limit's sample (seeded, stratified).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseCommand, type CommandSpec } from '../../src/cli/args.js';
import { main } from '../../src/cli/main.js';
import { limitItems, stratifiedSample } from '../../src/data/subset.js';
import { UsageError } from '../../src/util/errors.js';
import { editDistance, nearest } from '../../src/util/suggest.js';
import { capture } from '../capture.js';
import { hintAsCli } from '../flags.js';

const ROOT = path.resolve(__dirname, '../..');
const BIN = path.join(ROOT, 'src/cli/bin.ts');

afterEach(() => vi.restoreAllMocks());

const SPEC: CommandSpec = {
  usage: 'lobes try RUN [--permutations R] [--seed N] [--device D]',
  help: 'help text',
  options: {
    permutations: { type: 'string' },
    seed: { type: 'string' },
    shift: { type: 'string' },
    device: { type: 'string', choices: ['cpu', 'cuda', 'webgpu'] },
    'chat-template': { type: 'string', choices: ['auto', 'on', 'off'], bare: 'on' },
    force: { type: 'boolean' },
    overwrite: { type: 'boolean', renamed: 'force' },
    quiet: { type: 'boolean', short: 'q' },
  },
  positionals: [0, 2],
};

function usageError(f: () => unknown): UsageError {
  try {
    f();
  } catch (e) {
    if (e instanceof UsageError) return e;
    throw e;
  }
  throw new Error('no usage error');
}

describe('the shared parser', () => {
  it('names the nearest flag for a typo, and none for a word that is nothing like a flag', () => {
    const e = usageError(() => parseCommand(['run', '--permutation', '5'], SPEC));
    expect(e.message).toBe('unknown option --permutation (did you mean --permutations? see: lobes try --help)');
    expect(usageError(() => parseCommand(['--sede', '1'], SPEC)).hint).toContain('did you mean --seed?');
    expect(usageError(() => parseCommand(['--devcie', 'cpu'], SPEC)).hint).toContain('did you mean --device?');
    expect(usageError(() => parseCommand(['--xylophone'], SPEC)).hint).not.toContain('did you mean');
    expect(usageError(() => parseCommand(['-z'], SPEC)).message).toContain('unknown option -z');
  });

  it('edit distance: an independent check on known pairs, swaps count once', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('permutation', 'permutations')).toBe(1);
    expect(editDistance('devcie', 'device')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(nearest('aspct', ['ability', 'aspect', 'language'])).toBe('aspect');
    expect(nearest('zzz', ['ability', 'aspect'])).toBeNull();
  });

  it('reads a negative number as a value, never as a flag', () => {
    expect(parseCommand(['--seed', '-1'], SPEC)!.values.seed).toBe('-1');
    expect(parseCommand(['--shift', '-0.5'], SPEC)!.values.shift).toBe('-0.5');
    expect(parseCommand(['--shift', '-.5', 'x'], SPEC)!.positionals).toEqual(['x']);
    expect(usageError(() => parseCommand(['--seed', '--quiet'], SPEC)).message).toMatch(/^--seed needs a value /);
  });

  it('a negative --seed is refused for what it is, not as an ambiguous argument', async () => {
    const c = capture();
    expect(await main(['demo', '--seed', '-1'])).toBe(2);
    expect(c.err()).toMatch(/--seed must be a decimal integer from 0 to 4294967295, got "-1"/);
    expect(c.err()).not.toContain('ambiguous');
  });

  it('checks choices and suggests only allowed values', () => {
    const e = usageError(() => parseCommand(['--device', 'cdua'], SPEC));
    expect(e.message).toContain('--device must be cpu, cuda or webgpu, got "cdua"');
    expect(e.hint).toBe('did you mean --device cuda?');
    expect(usageError(() => parseCommand(['--device', 'metal'], SPEC)).hint).toBeUndefined();
  });

  it('a bare option takes its next word only when that word is one of its values', () => {
    expect(parseCommand(['--chat-template'], SPEC)!.values['chat-template']).toBe('on');
    expect(parseCommand(['--chat-template', 'off'], SPEC)!.values['chat-template']).toBe('off');
    const p = parseCommand(['--chat-template', 'model-dir'], SPEC)!;
    expect(p.values['chat-template']).toBe('on');
    expect(p.positionals).toEqual(['model-dir']);
  });

  it('an old spelling still works, with a one-line note', () => {
    const c = capture();
    expect(parseCommand(['--overwrite'], SPEC)!.values).toMatchObject({ force: true });
    expect(c.err()).toBe('lobes try: note: --overwrite is now --force (the old name still works for now)\n');
  });

  it('unknown commands get a did-you-mean too', async () => {
    const c = capture();
    expect(await main(['extarct'])).toBe(2);
    expect(c.err()).toContain('did you mean lobes extract?');
  });
});

describe('every model command takes --model, and MODEL first is the same', () => {
  const missing = path.join(tmpdir(), 'lobes-no-such-model-dir');
  const out = () => path.join(mkdtempSync(path.join(tmpdir(), 'lobes-cliopts-')), 'out');
  const mcq = path.join(mkdtempSync(path.join(tmpdir(), 'lobes-mcq-')), 'items.jsonl');
  writeFileSync(mcq, JSON.stringify({ id: 'q1', question: 'Which?', options: ['a', 'b'], answer: 0 }) + '\n');
  const cases: [string, (m: string[]) => string[]][] = [
    ['extract', (m) => ['extract', ...m, '--data', 'builtin:social', '--out', out()]],
    ['eval',
      (m) => ['eval', ...m, '--data', `jsonl:${mcq}?question=question&options=options&answer=answer`, '--out', out()]],
    ['attend', (m) => ['attend', ...m, '--data', 'builtin:social', '--out', out()]],
    ['inspect', (m) => ['inspect', ...m]],
    ['convert', (m) => ['convert', ...m, '--out', out()]],
  ];
  for (const [name, argv] of cases) {
    it(name, async () => {
      let c = capture();
      const a = await main(argv(['--model', missing]));
      const errFlag = c.err();
      vi.restoreAllMocks();
      c = capture();
      const b = await main(argv([missing]));
      const errPositional = c.err();
      // not a usage error: the model was read and looked for
      expect(a, errFlag).toBe(1);
      expect(errFlag).toContain(missing);
      expect(b).toBe(1);
      expect(errPositional.replace(/\/tmp\/lobes-cliopts-\w+/g, '')).toBe(
        errFlag.replace(/\/tmp\/lobes-cliopts-\w+/g, ''),
      );
      vi.restoreAllMocks();
      c = capture();
      expect(await main(argv(['--model', missing, path.join(tmpdir(), 'another')]))).toBe(2);
      expect(c.err()).toContain('the model is given twice');
    });
  }
});

describe('subcommand help', () => {
  it('lobes eval merge --help and lobes eval label --help are their own', async () => {
    const help = async (argv: string[]) => {
      const c = capture();
      expect(await main(argv)).toBe(0);
      vi.restoreAllMocks();
      return c.out();
    };
    const top = await help(['eval', '--help']);
    const merge = await help(['eval', 'merge', '--help']);
    const label = await help(['eval', 'label', '--help']);
    expect(merge).not.toBe(top);
    expect(merge.startsWith('usage: lobes eval merge SHARD_DIR... --out DIR')).toBe(true);
    expect(merge).not.toContain('--shuffles');
    expect(label.startsWith('usage: lobes eval label RUN EVAL_DIR')).toBe(true);
    expect(top).toContain('--shuffles');
  });
});

describe('EPIPE', () => {
  it('a reader that stops early ends the command quietly with exit 0', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-epipe-'));
    const file = path.join(dir, 'big.jsonl');
    // larger than a pipe's buffer, so the writer meets the closed pipe
    const lines: string[] = [];
    for (let i = 0; i < 20000; i++)
      lines.push(
        JSON.stringify({ id: `s${i}`, text: `text number ${i} `.repeat(4), labels: { group: i % 2 ? 'a' : 'b' } }),
      );
    writeFileSync(file, lines.join('\n') + '\n');
    const cmd =
      `"${process.execPath}" --import tsx "${BIN}" data export "jsonl:${file}" | head -1; echo "status=\${PIPESTATUS[0]}" >&2`;
    const r = spawnSync('bash', ['-c', cmd], { cwd: ROOT, encoding: 'utf8' });
    expect(JSON.parse(r.stdout.trim()).id).toBe('s0');
    expect(r.stderr).toContain('status=0');
    expect(r.stderr).not.toContain('EPIPE');
    expect(r.stderr).not.toMatch(/at .*\(node:/);
  }, 60000);
});

describe('--limit: one seeded stratified sample', () => {
  const items = (n: number) =>
    Array.from({ length: n },
      (_, i) => ({ id: `item-${i}`,
        labels: { language: i % 3 === 0 ? 'zh' : 'en', aspect: ['A', 'B', 'C', 'D'][i % 4]!, other: String(i % 7) } }));

  it('gives each stratum its proportional share (largest remainders), computed here independently', () => {
    const xs = items(97);
    for (const n of [1, 5, 10, 33, 60, 96]) {
      const { items: got, record } = limitItems(xs, ['language', 'aspect', 'other'], { limit: n, seed: 3 });
      expect(record.by).toEqual(['language', 'aspect']);
      expect(got.length).toBe(n);
      const size = new Map<string, number>();
      for (const x of xs)
        size.set(`${x.labels.language}/${x.labels.aspect}`,
          (size.get(`${x.labels.language}/${x.labels.aspect}`) ?? 0) + 1);
      const keys = [...size.keys()].sort();
      const exact = keys.map((k) => (n * size.get(k)!) / xs.length);
      const quota = exact.map(Math.floor);
      const left = n - quota.reduce((a, b) => a + b, 0);
      const rema = keys.map((k, i) => ({ k, i, r: exact[i]! - quota[i]! })).sort((a, b) =>
        b.r - a.r || (a.k < b.k ? -1 : 1)
      );
      for (const x of rema.slice(0, left)) quota[x.i]!++;
      const gotPer = new Map<string, number>();
      for (const x of got)
        gotPer.set(`${x.labels.language}/${x.labels.aspect}`,
          (gotPer.get(`${x.labels.language}/${x.labels.aspect}`) ?? 0) + 1);
      keys.forEach((k, i) => expect(gotPer.get(k) ?? 0, `${n} ${k}`).toBe(quota[i]));
    }
  });

  it('is seeded, keeps the data order, and can pick any item', () => {
    const xs = items(200);
    const ids = (s: { id: string }[]) => s.map((x) => x.id);
    const a = limitItems(xs, ['language', 'aspect'], { limit: 20, seed: 1 }).items;
    expect(ids(limitItems(xs, ['language', 'aspect'], { limit: 20, seed: 1 }).items)).toEqual(ids(a));
    expect(ids(limitItems(xs, ['language', 'aspect'], { limit: 20, seed: 2 }).items)).not.toEqual(ids(a));
    // data order kept
    const pos = new Map(xs.map((x, i) => [x.id, i]));
    const at = ids(a).map((id) => pos.get(id)!);
    expect([...at].sort((p, q) => p - q)).toEqual(at);
    // not just the first ones
    expect(ids(a)).not.toEqual(ids(xs.slice(0, 20)));
    // every item can be chosen: over many seeds, each id turns up
    const seen = new Set<string>();
    for (let s = 0; s < 200; s++) for (const x of stratifiedSample(xs, () => '', (x) => x.id, 10, s)) seen.add(x.id);
    expect(seen.size).toBe(200);
  });

  it('--by names the strata; an unknown axis gets the nearest name', () => {
    const xs = items(40);
    const byOther = limitItems(xs, ['language', 'aspect', 'other'], { limit: 14, by: ['other'], seed: 0 }).items;
    const per = new Map<string, number>();
    for (const x of byOther) per.set(x.labels.other, (per.get(x.labels.other) ?? 0) + 1);
    expect([...per.values()].every((v) => v === 2)).toBe(true);
    const e = usageError(() => limitItems(xs, ['language', 'aspect'], { limit: 5, by: ['aspct'], seed: 0 }));
    expect(e.message).toContain('the data has no label axis "aspct"');
    expect(e.hint).toBe('did you mean by aspect?');
    expect(hintAsCli(e)).toBe('did you mean --by aspect?');
  });
});

describe('checks before long work', () => {
  it('extract refuses a folder without a tokenizer before hashing its weights', async () => {
    const { runExtract } = await import('../../src/extract/run.js');
    const model = mkdtempSync(path.join(tmpdir(), 'lobes-notok-'));
    const hashed: string[] = [];
    // a weight file that cannot be hashed: reading it first would fail with another message
    const modelFiles = () => {
      hashed.push('listed');
      return [{ path: path.join(model, 'model.onnx.data'), name: 'model.onnx.data', role: 'data' as const }];
    };
    await expect(
      runExtract({ model, data: 'builtin:social', out: path.join(model, 'run'), quiet: true, deps: { modelFiles } }),
    ).rejects.toThrow(/no tokenizer\.json in the model folder/);
    expect(hashed).toEqual(['listed']);
  });

  it('a label axis that is not in the run names the nearest one', async () => {
    const { chooseAxis } = await import('../../src/wanda/run.js');
    const e = usageError(() => chooseAxis(['aspect', 'ability', 'language'], 'langauge'));
    expect(e.message).toContain('label axis "langauge" is not in the run (axes: aspect, ability, language)');
    expect(e.hint).toBe('did you mean by language?');
    expect(hintAsCli(e)).toBe('did you mean --by language?');
  });
});
