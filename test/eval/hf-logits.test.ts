/**
 * Scoring against Hugging Face: for 22 SocialEval prompts (IAE and GAE, English and Chinese),
 * SmolLM2-135M-Instruct's letter logits at the answer position equal those of transformers
 * running the same GGUF file (test/eval/fixtures/make_eval_goldens.py, float32), and lobes'
 * prompt text, token ids and candidate tokens equal HF's. The ONNX model is lobes' conversion
 * of ../shared's GGUF file.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadSocialEvalBench, gaeFields } from '../../src/data/socialeval-eval.js';
import { renderPrompt, type PromptItem } from '../../src/data/prompt.js';
import { SOCIALEVAL_TEMPLATES } from '../../src/data/prompt-templates.js';
import { loadEvalTokenizer, type EvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { openScorer } from '../../src/eval/engine.js';
import type { Scorer } from '../../src/runtime/scorer.js';
import { softmax } from '../../src/eval/score.js';
import { smollm2Onnx } from './smollm2.js';
import { cases } from '../goldens/cases.js';

interface Row {
  task: 'iae' | 'gae';
  lang: 'en' | 'zh';
  id?: string;
  tree?: string;
  path?: string[];
  order: number[];
  text: string;
  ids: number[];
  candidates: number[];
  logits: number[];
  logsumexp: number;
  argmax: number;
}
const GOLD = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/hf-logits.json'), 'utf8')) as { rows: Row[];
  prefix: string };
const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const model = await smollm2Onnx();
if (typeof model !== 'string') console.warn(`test/eval/hf-logits: skipped: ${model.skip}`);

describe.skipIf(typeof model !== 'string')('letter logits of SmolLM2-135M-Instruct equal Hugging Face transformers',
  () => {
    let tok: EvalTokenizer;
    let scorer: Scorer;
    const rendered: { text: string; letters: string[] }[] = [];
    beforeAll(async () => {
      tok = await loadEvalTokenizer(model as string, { chatTemplate: 'on' });
      scorer = await openScorer(model as string, { device: 'cpu' });
      const benches = { en: loadSocialEvalBench(`socialeval:${DATA}?lang=en`, { iae: true, gae: true }),
        zh: loadSocialEvalBench(`socialeval:${DATA}?lang=zh`, { iae: true, gae: true }) };
      for (const g of cases<Row>(GOLD, 'rows')) {
        const b = benches[g.lang];
        let item: PromptItem;
        if (g.task === 'iae') {
          const it = b.iae.find((x) => x.id === g.id)!;
          item = { id: it.id, fields: it.fields, options: it.options };
        } else {
          const f = gaeFields(b.gae.find((t) => t.stem === g.tree)!, g.path!);
          item = { id: g.tree!, fields: f.fields, options: f.options };
        }
        rendered.push(
          renderPrompt(item, g.order, { template: SOCIALEVAL_TEMPLATES[g.task][g.lang],
            separator: g.task === 'iae' ? '. ' : ': ', chat: tok.chat, answerPrefix: GOLD.prefix }),
        );
      }
    }, 600_000);
    afterAll(async () => scorer?.close());

    it('has at least 20 prompts in both languages and both tasks', () => {
      expect(GOLD.rows.length).toBeGreaterThanOrEqual(20);
      expect(new Set(GOLD.rows.map((r) => `${r.task}/${r.lang}`)).size).toBe(4);
    });

    it('the prompt text after the chat template, its token ids and the candidate tokens equal HF', () => {
      GOLD.rows.forEach((g, i) => {
        expect(rendered[i]!.text, `row ${i}`).toBe(g.text);
        const slot = tok.answerSlot(rendered[i]!.text, rendered[i]!.letters, `row ${i}`);
        expect(slot.ids, `row ${i}`).toEqual(g.ids);
        expect(slot.candidates, `row ${i}`).toEqual(g.candidates);
        expect(slot.answerAt).toBe(g.text.length);
      });
    });

    it('logits, log-sum-exp and argmax at the answer position (batched, right-padded)', async () => {
      let worst = 0;
      // Rows of similar length together (less padding), four per batch.
      const byLength = GOLD.rows.map((_, i) => i).sort((a, b) => GOLD.rows[a]!.ids.length - GOLD.rows[b]!.ids.length);
      for (let at = 0; at < byLength.length; at += 4) {
        const rows = byLength.slice(at, at + 4).map((i) => GOLD.rows[i]!);
        const cands = [...new Set(rows.flatMap((r) => r.candidates))];
        const h = await scorer.score(rows.map((r) => r.ids), cands, tok.padId);
        rows.forEach((g, r) => {
          const got = g.candidates.map((c) => h.cand[r * h.k + cands.indexOf(c)]!);
          for (let j = 0; j < got.length; j++) {
            worst = Math.max(worst, Math.abs(got[j]! - g.logits[j]!));
            expect(Math.abs(got[j]! - g.logits[j]!), `row ${byLength[at + r]} letter ${j}`).toBeLessThan(0.02);
          }
          expect(Math.abs(h.lse[r]! - g.logsumexp), `row ${byLength[at + r]} lse`).toBeLessThan(0.02);
          expect(h.top[r]).toBe(g.argmax);
          const p = softmax(got);
          const q = softmax(g.logits);
          for (let j = 0; j < p.length; j++) expect(Math.abs(p[j]! - q[j]!)).toBeLessThan(2e-3);
        });
      }
      console.log(`test/eval/hf-logits: largest |lobes − HF| letter logit: ${worst.toExponential(2)}`);
    }, 600_000);
  });
