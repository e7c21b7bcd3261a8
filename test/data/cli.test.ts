import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/data.js';
import { main } from '../../src/cli/main.js';
import { loadDataset } from '../../src/data/index.js';
import { reasonKey } from '../../src/data/inspect.js';
import { LobesError } from '../../src/util/errors.js';
import { capture } from '../capture.js';

const dir = mkdtempSync(path.join(tmpdir(), 'lobes-data-cli-'));
const SHARED = path.resolve(__dirname, '../../../shared');
const TREES = path.join(SHARED, 'socialeval/worldtree_data');
const MODEL = path.join(SHARED, 'models/ort-genai-tiny-llama-fp16');
if (!existsSync(TREES)) console.log(`test/data/cli.test.ts: SocialEval inspect test skipped, ${TREES} is absent`);
if (!existsSync(path.join(MODEL, 'tokenizer.json')))
  console.log(`test/data/cli.test.ts: tokenizer test skipped, ${MODEL} is absent`);

afterEach(() => vi.restoreAllMocks());

describe('lobes data inspect', () => {
  it('--json gives counts per axis and language that match the loaded dataset', async () => {
    const c = capture();
    expect(await run(['inspect', 'builtin:social', '--json'])).toBe(0);
    const j = JSON.parse(c.out());
    const ds = await loadDataset('builtin:social');
    expect(j.samples).toBe(ds.samples.length);
    expect(j.axes).toEqual(ds.axes);
    for (const axis of ['aspect', 'ability', 'orientation']) {
      for (const lang of ['en', 'zh']) {
        for (const [v, n] of Object.entries(j.counts[axis].byLanguage[lang])) {
          expect(n).toBe(ds.samples.filter((s) => s.labels.language === lang && s.labels[axis] === v).length);
        }
      }
    }
    expect(j.languages).toEqual({ en: ds.samples.filter((s) => s.labels.language === 'en').length,
      zh: ds.samples.filter((s) => s.labels.language === 'zh').length });
    expect(j.excluded).toEqual([]);
  });

  it.skipIf(!existsSync(TREES))('counts the excluded items by reason; --verbose lists each with its reason',
    async () => {
      const ds = await loadDataset(`socialeval:${TREES}?lang=en`);
      expect(ds.excluded.length).toBeGreaterThan(0);
      let c = capture();
      expect(await run(['inspect', `socialeval:${TREES}?lang=en`])).toBe(0);
      const plain = c.out();
      expect(plain).toMatch(/Self-Management +\d+/);
      expect(plain).toContain(`excluded (${ds.excluded.length}):`);
      // counts per reason add up to the excluded items, and no item is listed
      const byReason = new Map<string, number>();
      for (const e of ds.excluded) {
        const k = reasonKey(e.reason);
        byReason.set(k, (byReason.get(k) ?? 0) + 1);
      }
      for (const [k, n] of byReason)
        expect(plain).toMatch(new RegExp(`  ${k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +${n}\n`));
      for (const e of ds.excluded) expect(plain).not.toContain(`  ${e.id}  ${e.file}: ${e.where}: ${e.reason}\n`);
      c = capture();
      expect(await run(['inspect', `socialeval:${TREES}?lang=en`, '--verbose'])).toBe(0);
      for (const e of ds.excluded) expect(c.out()).toContain(`  ${e.id}  ${e.file}: ${e.where}: ${e.reason}\n`);
    });

  it.skipIf(
    !existsSync(path.join(MODEL, 'tokenizer.json')) ||
      !existsSync(path.resolve(__dirname, '../../src/runtime/tokenize.ts')),
  )('--tokenizer reports the token-length distribution', async () => {
    const c = capture();
    expect(await run(['inspect', 'builtin:social?lang=zh', '--json', '--tokenizer', MODEL])).toBe(0);
    const j = JSON.parse(c.out());
    const { loadTokenizer } = await import('../../src/runtime/tokenize.js');
    const tok = await loadTokenizer(MODEL, { maxTokens: null, chatTemplate: false });
    const ds = await loadDataset('builtin:social?lang=zh');
    const lens = ds.samples.map((s) => tok.encode(s.text).fullLength).sort((a, b) => a - b);
    expect(j.tokens.min).toBe(lens[0]);
    expect(j.tokens.max).toBe(lens[lens.length - 1]);
    expect(j.tokens.mean).toBeCloseTo(lens.reduce((a, b) => a + b, 0) / lens.length, 9);
    expect(j.tokens.p50).toBe(lens[Math.ceil(0.5 * lens.length) - 1]);
    expect(j.tokens.counts.reduce((a: number, b: number) => a + b, 0)).toBe(lens.length);
  });
});

describe('lobes data export', () => {
  it('writes one sample per line, atomically', async () => {
    const out = path.join(dir, 'social.jsonl');
    const c = capture();
    expect(await run(['export', 'builtin:social?lang=en', '--out', out])).toBe(0);
    const ds = await loadDataset('builtin:social?lang=en');
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l))).toEqual(ds.samples);
    expect(c.err()).toContain(`${ds.samples.length} samples written to ${out}`);
    expect(readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
    // The export round-trips through the jsonl adapter.
    const back = await loadDataset(`jsonl:${out}?text=text&label=label&id=id`).catch((e) => e);
    // no top-level "label" field: refused, not guessed, in one error naming the fields the lines have
    expect(back).toBeInstanceOf(LobesError);
    expect(back.message).toBe(
      `${out}: no line has the field the spec names: label=label (fields found: id, text, labels, provenance, extras)`,
    );
  });

  it('on bad input lists all problems, exits non-zero and leaves an existing output untouched', async () => {
    const bad = path.join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"text":"a","l":"x","id":"1"}\n{"text":"b","id":"1","l":"y"}\nnot json\n');
    const out = path.join(dir, 'keep.jsonl');
    // an earlier export (lobes would overwrite it), so the refusal is the bad input's
    const previous = '{"id":"0","text":"previous","labels":{}}\n';
    writeFileSync(out, previous);
    const c = capture();
    const code = await main(['data', 'export', `jsonl:${bad}?text=text&label=l&id=id`, '--out', out]);
    expect(code).toBe(1);
    expect(readFileSync(out, 'utf8')).toBe(previous);
    const err = c.err();
    expect(err).toContain(`2 problems in jsonl:${bad}`);
    expect(err).toContain(`  ${bad}: line 3: invalid JSON`);
    expect(err).toContain(`  ${bad}: line 2: duplicate id "1" (first on line 1)`);
    expect(err).toMatch(/^lobes data: dataset .* has invalid input: 2 problems; first: /m);
  });

  it('--skip-invalid exports the valid items and reports each skipped one', async () => {
    const bad = path.join(dir, 'bad2.jsonl');
    writeFileSync(bad, '{"text":"a","l":"x"}\n{"text":"b"}\n');
    const c = capture();
    expect(await run(['export', `jsonl:${bad}?text=text&label=l`, '--skip-invalid'])).toBe(0);
    expect(c.out().trimEnd().split('\n').map((l) => JSON.parse(l).id)).toEqual(['bad2.jsonl:1']);
    expect(c.err()).toContain('skipped as invalid (1):');
    expect(c.err()).toContain(`  ${bad}: line 2: missing label field "l"`);
  });

  it('rejects unknown subcommands and flags with usage errors', async () => {
    capture();
    expect(await main(['data', 'frobnicate', 'builtin:social'])).toBe(2);
    expect(await main(['data', 'inspect', 'builtin:social', '--colour'])).toBe(2);
    expect(await main(['data', 'inspect'])).toBe(2);
  });
});
