/**
 * Qwen2 and Qwen3 GGUFs (general.architecture qwen2 / qwen3, llama.cpp's tensor names
 * attn_q.bias, attn_q_norm, ...) → lobes, against transformers reading the same GGUF with its own
 * GGUF loader (test/goldens/make_hf_checkpoint_goldens.py writes each file with the `gguf`
 * package from the checkpoint's weights): every capture point and the logits within 1e-4
 * relative, English and Chinese texts of mixed lengths in one padded batch. The qwen3 file's
 * transformers logits equal the checkpoint's (no rope scaling to lose); the qwen2 checkpoint's
 * llama3 rope scaling is not carried by llama.cpp's format, so its oracle is the GGUF's own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertGguf } from '../../src/convert/convert.js';
import { openGgufLlama } from '../../src/convert/gguf-llama.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { CKPTS, META, expectGoldens } from './hf-families.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-gguf-qwen-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.each(['qwen2', 'qwen3'] as const)('%s GGUF', (family) => {
  const file = path.join(CKPTS, META.families[family]!.gguf!);
  it('is read as its family: biases or q/k norms, no rotary row permutation', () => {
    const g = openGgufLlama(file);
    try {
      expect(g.spec.modelType).toBe(family);
      expect(!!g.spec.attnBias).toBe(family === 'qwen2');
      expect(!!g.spec.qkNorm).toBe(family === 'qwen3');
      expect(g.mapped.every((m) => m.permutedHeads === 0)).toBe(true);
      if (family === 'qwen3') expect(g.spec.headDim).toBe(128);
      if (family === 'qwen2') expect(g.spec.tiedEmbeddings).toBe(true);
    } finally {
      g.close();
    }
  });

  it('converts, and every capture point and the logits equal transformers loading the GGUF (left and right padding)', async () => {
    const out = path.join(tmp, family);
    await convertGguf(file, out, {});
    const worst = Math.max(await expectGoldens(out, `${family}-gguf`, 'left'),
      await expectGoldens(out, `${family}-gguf`, 'right'));
    console.log(`${family} GGUF: max relative error vs transformers' GGUF loader ${worst.toExponential(2)}`);
  });

  it("the tokenizer built from the GGUF (pre-tokenizer qwen2) gives transformers' GGUF tokenizer's ids", async () => {
    const out = path.join(tmp, `${family}-tok`);
    await convertGguf(file, out, {});
    const tok = await loadTokenizer(out, { maxTokens: null, chatTemplate: false });
    const g = (META.families[family] as any).gguf_tokenizer as { texts: string[]; ids: number[][] };
    expect(g.texts.length).toBeGreaterThanOrEqual(7);
    for (let i = 0; i < g.texts.length; i++)
      expect(tok.encode(g.texts[i]!).ids, JSON.stringify(g.texts[i])).toEqual(g.ids[i]);
  });

  it('converts to the genai layout with the same captures and logits (right padding)', async () => {
    const out = path.join(tmp, `${family}-genai`);
    await convertGguf(file, out, { layout: 'genai' });
    const worst = await expectGoldens(out, `${family}-gguf`, 'right');
    console.log(`${family} GGUF genai: max relative error vs transformers' GGUF loader ${worst.toExponential(2)}`);
  });
});
