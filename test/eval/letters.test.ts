/**
 * An answer letter that cannot be scored is named. With a tokenizer where " A" … " G" are
 * tokens but " H" is not, and ": " merges when no " H" token takes the space, "x: H" ends
 * [": ", "H"] while "x: A" ends [":", " A"]: H changes how the prompt itself ends, so what all
 * letters share is one token shorter and every letter looks two tokens long. The error must
 * name H, not the first letter. The tokenizer is written here (BPE, merges by rank).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadEvalTokenizer, type EvalTokenizer } from '../../src/runtime/eval-tokenizer.js';

const LETTERS = 'ABCDEFGH'.split('');
let root: string;

/** A BPE tokenizer over x, ":", " " and the letters, with " L" tokens for `spaced` letters (merged first) and then ": ". */
async function tokenizer(name: string, spaced: string[]): Promise<EvalTokenizer> {
  const dir = path.join(root, name);
  mkdirSync(dir);
  const vocab: Record<string, number> = {};
  const add = (t: string) => (vocab[t] = Object.keys(vocab).length);
  for (const c of ['x', ':', ' ', ...LETTERS]) add(c);
  const merges: [string, string][] = [];
  for (const L of spaced) {
    add(' ' + L);
    merges.push([' ', L]);
  }
  add(': ');
  merges.push([':', ' ']);
  const model = { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab, merges };
  writeFileSync(path.join(dir, 'tokenizer.json'),
    JSON.stringify({ version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
      pre_tokenizer: null, post_processor: null, decoder: null, model }));
  writeFileSync(path.join(dir, 'tokenizer_config.json'),
    JSON.stringify({ tokenizer_class: 'PreTrainedTokenizerFast' }));
  return loadEvalTokenizer(dir, { chatTemplate: 'off' });
}

describe('an unscorable answer letter is named', () => {
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-letters-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('the tokenizer behaves as the test says (the premise)', async () => {
    const t = await tokenizer('premise', LETTERS.slice(0, 7));
    expect(t.encodePiece('x: A').map((i) => t.decode([i]))).toEqual(['x', ':', ' A']);
    expect(t.encodePiece('x: H').map((i) => t.decode([i]))).toEqual(['x', ': ', 'H']);
  });

  it('eight options, " H" not one token: the error names H, as one line', async () => {
    const t = await tokenizer('no-h', LETTERS.slice(0, 7));
    let msg = '';
    try {
      t.answerSlot('x: ', LETTERS, 'item q7');
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(msg).toMatch(
      /^item q7: the answer letter "H" cannot be scored: it is not one token after the answer prefix/,
    );
    expect(msg).toContain('[": ","H"]');
    expect(msg).not.toMatch(/letter "A"/);
    expect(msg.split('\n')).toHaveLength(1);
  });

  it('when no single letter is to blame, every letter is listed', async () => {
    const t = await tokenizer('no-gh', LETTERS.slice(0, 6));
    expect(() => t.answerSlot('x: ', LETTERS, 'item q8')).toThrow(
      /^item q8: the answer letters are not one token each after the answer prefix for this tokenizer \(A: .*G: \[": ","G"\], H: \[": ","H"\]\)/,
    );
  });
});
