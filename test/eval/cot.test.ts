/**
 * --cot N: greedy reasoning with the KV cache, then the answer suffix and the letter scores.
 * Checked against scoring without a cache: each generated token is the argmax of a full
 * forward pass over the prompt and the tokens before it, and the letter logits equal a full
 * pass over prompt + kept reasoning + suffix. Also the cut at the answer key.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { cutAtAnswerKey, cotAnswer } from '../../src/eval/evaluate.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { loadEvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { openScorer } from '../../src/eval/engine.js';
import { expectLobesError } from '../runtime/helpers.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');

describe('the answer key in generated reasoning', () => {
  const decode = (ids: number[]) => String.fromCharCode(...ids);
  const enc = (s: string) => Array.from(s, (c) => c.charCodeAt(0));
  it('keeps the tokens before the key and the text between them and the key', () => {
    expect(cutAtAnswerKey(enc('{"explaination": "be calm", "choice": "B'), decode, '"choice"')).toEqual({ kept: 28,
      rest: '' });
    expect(cutAtAnswerKey(enc('no key here'), decode, '"choice"')).toBeNull();
    // A token that straddles the key: the kept tokens end before it, the rest is re-typed.
    const pieces = ['{"x": 1, ', ' "', 'choice', '": "A'];
    const ids = pieces.map((_, i) => i);
    const dec = (xs: number[]) => xs.map((i) => pieces[i]).join('');
    expect(cutAtAnswerKey(ids, dec, '"choice"')).toEqual({ kept: 1, rest: ' ' });
    expect(cotAnswer('{"choice": "')).toEqual({ key: '"choice"', cont: '"choice": "', forced: '\n{"choice": "' });
    expect(cotAnswer('Answer: ')).toEqual({ key: 'Answer:', cont: 'Answer: ', forced: '\nAnswer: ' });
  });
});

describe.skipIf(!existsSync(DATA))('--cot on a model with a KV cache', () => {
  let root: string;
  beforeAll(() => void (root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-cot-'))));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('greedy tokens and the final letter logits equal full forward passes', async () => {
    const model = ensureGeneratedModel('tiny-llama-past');
    const out = path.join(root, 'cot');
    await runEval({ model, data: `socialeval:${DATA}?lang=en`, out, task: 'iae', limit: 1, cot: 5, shuffles: 2,
      quiet: true, bootstrap: 50, maxTokens: 0 });
    const r = readEvalResults(out);
    expect(r.manifest.settings.cot).toBe(5);
    const tok = await loadEvalTokenizer(model, { chatTemplate: 'auto' });
    const sc = await openScorer(model, { device: 'cpu' });
    try {
      for (const rec of r.records) {
        for (const s of rec.shuffles) {
          const c = s.cot!;
          expect(c.generated).toBeLessThanOrEqual(5);
          // A random model never writes the key: the answer prefix is forced after its reasoning.
          expect(c.forced).toBe(true);
          expect(c.suffix).toBe('\n{"choice": "');
          const base = s.prompt.slice(0, s.prompt.length - c.text.length - c.suffix.length);
          expect(base + c.text + c.suffix).toBe(s.prompt);
          expect(base).toContain('"explaination"'); // the published explanation prompt
          const ids0 = tok.encode(base);
          for (let j = 0; j < c.ids.length; j++) {
            const h = await sc.score([[...ids0, ...c.ids.slice(0, j)]], [0], tok.padId);
            expect(h.top[0], `token ${j}`).toBe(c.ids[j]);
          }
          const slot = tok.pieceSlot(c.suffix, s.letters, 'suffix');
          expect(s.tokens).toBe(ids0.length + c.ids.length + slot.ids.length);
          expect(s.letterTokenIds).toEqual(slot.candidates);
          const h = await sc.score([[...ids0, ...c.ids, ...slot.ids]], slot.candidates, tok.padId);
          s.logits.forEach((x, j) => expect(Math.abs(x - h.cand[j]!)).toBeLessThan(1e-3));
          expect(s.parts.map((p) => p.name).slice(-2)).toEqual(
            c.text ? ['reasoning', 'answer_prefix'] : ['template', 'answer_prefix'],
          );
        }
      }
    } finally {
      await sc.close();
    }
  }, 600_000);

  it('needs a model with KV-cache inputs', async () => {
    const e = await expectLobesError(
      runEval({ model: ensureGeneratedModel('tiny-llama'), data: `socialeval:${DATA}?lang=en`,
        out: path.join(root, 'nocache'), task: 'iae', limit: 1, cot: 4, quiet: true, maxTokens: 0 }),
    );
    expect(e.message).toMatch(/: cot needs a model with KV-cache inputs/);
    expect(existsSync(path.join(root, 'nocache'))).toBe(false);
  });
});
