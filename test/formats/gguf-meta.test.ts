/**
 * The GGUF key table and its typed reader (src/formats/gguf-meta.ts) on crafted GGUF headers
 * written with lobes' GGUF writer: every kind of key reads the value written (integers of every
 * width, floats, bools, strings, arrays), `{arch}` keys follow general.architecture, absent keys
 * read as undefined, and each wrong type is one line naming the file, the key and the cause.
 * The model consistency check reads the same keys leniently (a wrong type declares nothing).
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { readGgufHeader, type GgufValue } from '../../src/formats/gguf.js';
import { writeGguf } from '../../src/formats/gguf-write.js';
import { GGUF_KEYS as K, GgufMeta } from '../../src/formats/gguf-meta.js';
import { fromGguf } from '../../src/runtime/consistency.js';
import { LobesError } from '../../src/util/errors.js';
import { tmpDir, cleanupTmp } from './helpers.js';

const dir = tmpDir();
afterAll(cleanupTmp);

let n = 0;
/** A GGUF holding only these metadata entries (no tensors); returns its reader. */
function crafted(entries: [string, GgufValue][]): GgufMeta {
  const file = path.join(dir, `m${n++}.gguf`);
  writeGguf(file, entries, []);
  return new GgufMeta(readGgufHeader(file).metadata, file);
}

function oneLine(fn: () => unknown): string {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(LobesError);
  const msg = (err as Error).message;
  expect(msg).not.toContain('\n');
  return msg;
}

describe('GGUF metadata keys and their typed reader', () => {
  it("reads each kind of key as written, {arch} keys under the file's architecture, absent keys as undefined", () => {
    const m = crafted([
      ['general.architecture', { type: 'string', value: 'mistral' }],
      ['mistral.context_length', { type: 'uint32', value: 32768 }],
      ['mistral.block_count', { type: 'uint8', value: 32 }],
      ['mistral.attention.head_count_kv', { type: 'int16', value: 8 }],
      ['mistral.embedding_length', { type: 'uint64', value: 4096n }],
      ['mistral.rope.freq_base', { type: 'float32', value: 1000000 }],
      ['mistral.attention.layer_norm_rms_epsilon', { type: 'float64', value: 1e-5 }],
      ['mistral.attention.head_count', { type: 'int32', value: 32 }],
      ['llama.context_length', { type: 'uint32', value: 1 }],
      ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
      ['tokenizer.ggml.tokens', { type: 'array', value: { itemType: 'string', items: ['<s>', 'a', 'b'] } }],
      ['tokenizer.ggml.token_type', { type: 'array', value: { itemType: 'int32', items: new Int32Array([3, 1, 1]) } }],
      ['tokenizer.ggml.scores', { type: 'array',
        value: { itemType: 'float32', items: new Float32Array([0, -1.5, -2]) } }],
    ]);
    expect(m.arch).toBe('mistral');
    expect(m.key(K.contextLength)).toBe('mistral.context_length');
    expect(m.read(K.architecture)).toBe('mistral');
    expect(m.read(K.contextLength)).toBe(32768);
    expect(m.read(K.blockCount)).toBe(32);
    expect(m.read(K.headCountKv)).toBe(8);
    expect(m.read(K.embeddingLength)).toBe(4096);
    expect(m.read(K.headCount)).toBe(32);
    expect(m.read(K.ropeFreqBase)).toBe(1000000);
    expect(m.read(K.rmsNormEps)).toBe(1e-5);
    expect(m.read(K.addBosToken)).toBe(true);
    expect(m.read(K.tokens)).toEqual(['<s>', 'a', 'b']);
    expect(Array.from(m.read(K.tokenType)!)).toEqual([3, 1, 1]);
    expect(Array.from(m.read(K.scores)!)).toEqual([0, -1.5, -2]);
    // absent
    expect(m.read(K.feedForwardLength)).toBeUndefined();
    expect(m.read(K.bosTokenId)).toBeUndefined();
    expect(m.read(K.merges)).toBeUndefined();
    expect(m.has(K.ropeScalingType)).toBe(false);
  });

  it('names the file, the key and the cause in one line for every wrong type', () => {
    const m = crafted([
      ['general.architecture', { type: 'string', value: 'llama' }],
      ['llama.context_length', { type: 'string', value: '4096' }],
      ['llama.block_count', { type: 'array', value: { itemType: 'uint32', items: new Uint32Array([1, 2]) } }],
      ['llama.rope.freq_base', { type: 'bool', value: true }],
      ['llama.embedding_length', { type: 'uint64', value: 2n ** 60n }],
      ['tokenizer.ggml.model', { type: 'uint32', value: 2 }],
      ['tokenizer.ggml.add_bos_token', { type: 'uint8', value: 1 }],
      ['tokenizer.ggml.tokens', { type: 'array', value: { itemType: 'int32', items: new Int32Array([1]) } }],
      ['tokenizer.ggml.merges', { type: 'string', value: 'a b' }],
      ['tokenizer.ggml.scores', { type: 'string', value: 'x' }],
    ]);
    const cases: [() => unknown, string, RegExp][] = [
      [() => m.read(K.contextLength), 'llama.context_length', /expected an integer, got the string "4096"/],
      [() => m.read(K.blockCount), 'llama.block_count', /expected an integer, got a typed array/],
      [() => m.read(K.ropeFreqBase), 'llama.rope.freq_base', /expected a number, got boolean true/],
      [() => m.read(K.embeddingLength), 'llama.embedding_length', /1152921504606846976 is beyond 2\^53/],
      [() => m.read(K.tokenizerModel), 'tokenizer.ggml.model', /expected a string, got number 2/],
      [() => m.read(K.addBosToken), 'tokenizer.ggml.add_bos_token', /expected a boolean, got number 1/],
      [() => m.read(K.tokens), 'tokenizer.ggml.tokens', /expected an array of strings, got a typed array/],
      [() => m.read(K.merges), 'tokenizer.ggml.merges', /expected an array of strings, got the string "a b"/],
      [() => m.read(K.scores), 'tokenizer.ggml.scores', /expected an array of numbers, got the string "x"/],
    ];
    for (const [fn, key, cause] of cases) {
      const msg = oneLine(fn);
      expect(msg, key).toContain(m.file);
      expect(msg, key).toContain(`${key}: `);
      expect(msg, key).toMatch(cause);
    }
  });

  it('the consistency check reads the same keys, leniently: a wrongly typed key declares nothing', () => {
    const good = crafted([
      ['general.architecture', { type: 'string', value: 'llama' }],
      ['llama.context_length', { type: 'uint32', value: 2048 }],
      ['llama.attention.head_count', { type: 'uint32', value: 9 }],
      ['llama.embedding_length', { type: 'uint32', value: 576 }],
      ['llama.rope.freq_base', { type: 'float32', value: 100000 }],
    ]);
    const f = fromGguf(good.file)!;
    expect(f).toMatchObject({ contextLength: 2048, heads: 9, kvHeads: 9, headDim: 64, ropeTheta: 100000,
      ropeThetaField: 'llama.rope.freq_base', ropeScaling: null });
    const bad = crafted([
      ['general.architecture', { type: 'string', value: 'llama' }],
      ['llama.context_length', { type: 'string', value: 'long' }],
      ['llama.attention.head_count', { type: 'uint32', value: 9 }],
    ]);
    const g = fromGguf(bad.file)!;
    expect(g.contextLength).toBeUndefined();
    expect(g.heads).toBe(9);
    expect(g.ropeTheta).toBe(10000);
  });
});
