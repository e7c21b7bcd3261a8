/**
 * Hugging Face tokenizer files from GGUF metadata.
 *
 * A GGUF file carries its tokenizer as `tokenizer.ggml.*` keys: the token list, a type per
 * token, BPE merges (byte-level vocabularies) or SentencePiece scores, the special token ids
 * and flags, and `tokenizer.chat_template`. `tokenizerFilesFromGguf` turns them into the
 * `tokenizer.json` and `tokenizer_config.json` that Hugging Face's tokenizers (Rust, Python and
 * @huggingface/transformers) load, written the way Hugging Face's own files for the same model
 * families are, so that token ids match the original tokenizer exactly.
 *
 * Families (docs/gguf-tokenizers.md has the full mapping and the evidence):
 *
 *   - `tokenizer.ggml.model = gpt2` (byte-level BPE) with `tokenizer.ggml.pre`
 *       - `llama-bpe` / `llama3` / `llama-v3` (Llama-3): the Llama-3 split regex, then
 *         ByteLevel without its own regex; BPE with `ignore_merges`.
 *       - `smollm` (SmolLM / SmolLM2): every numeral on its own, then ByteLevel with the GPT-2
 *         regex.
 *       - `gpt-2` (GPT-2): ByteLevel with the GPT-2 regex.
 *       - `qwen2` (Qwen2 / Qwen2.5 / Qwen3): the Qwen2 split regex (Llama-3's with single
 *         digits), then ByteLevel without its own regex (no NFC: as transformers' GGUF loader).
 *   - `tokenizer.ggml.model = llama` (SentencePiece-style BPE; Llama-2, TinyLlama, Mistral v0.1):
 *     `▁` for spaces with one prepended (unless `tokenizer.ggml.add_space_prefix` is false),
 *     byte fallback to `<0xXX>` tokens, merges recovered from the scores.
 *   - `tokenizer.ggml.model = llama` of architecture gemma / gemma2 / gemma3 (Gemma's
 *     SentencePiece BPE, as transformers' GGUF loader reads it): spaces become `▁` with none
 *     prepended; a token of spaces only, which llama.cpp stores as real spaces, is spelled with
 *     `▁`; the merges are recovered from the vocabulary in the order of the file (Gemma's scores
 *     do not follow its merge order; see `gemmaMerges`).
 *
 * Anything else is refused with a one-line error naming the value and the file. The function
 * is pure: it reads the metadata map and returns plain JSON objects.
 */
import { join } from 'node:path';
import { makeDirs, writeFileAtomicSync } from '../util/io.js';
import { GGUF_KEYS as K, GgufMeta, type GgufKey, type GgufMetadata } from '../formats/gguf-meta.js';
import { writeJsonAtomic } from '../store/json.js';

/** llama.cpp's token types (`tokenizer.ggml.token_type`). */
export const GGUF_TOKEN_TYPE = {
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/** Metadata as read from a GGUF file (src/formats/gguf-meta.ts). */
export type { GgufMetadata } from '../formats/gguf-meta.js';

/** The tokenizer family a GGUF vocabulary was recognised as. */
export type GgufTokenizerFamily = 'llama3' | 'smollm' | 'gpt2' | 'qwen2' | 'llama-spm' | 'gemma-spm';

/** The files of a Hugging Face tokenizer folder, as JSON values. */
export interface TokenizerFiles {
  family: GgufTokenizerFamily;
  /** tokenizer.json (Hugging Face tokenizers format, version 1.0). */
  tokenizerJson: Record<string, unknown>;
  /** tokenizer_config.json. */
  tokenizerConfigJson: Record<string, unknown>;
  /** special_tokens_map.json. */
  specialTokensMap: Record<string, unknown>;
}

/** The Llama-3 pre-tokenizer split (Hugging Face's tokenizer.json for Llama-3 / 3.1 / 3.2). */
export const LLAMA3_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The Qwen2 / Qwen2.5 / Qwen3 pre-tokenizer split (as Llama-3's, with every digit on its own). */
export const QWEN2_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Pre-tokenizer names (`tokenizer.ggml.pre`) accepted for byte-level vocabularies. */
const BYTE_LEVEL_PRE: Record<string, GgufTokenizerFamily> = {
  'llama-bpe': 'llama3',
  llama3: 'llama3',
  'llama-v3': 'llama3',
  smollm: 'smollm',
  'gpt-2': 'gpt2',
  qwen2: 'qwen2',
};

/** `clean_up_tokenization_spaces` in Hugging Face's tokenizer_config.json for each family. */
const CLEAN_UP_SPACES: Record<GgufTokenizerFamily, boolean> = {
  llama3: true,
  smollm: false,
  gpt2: true,
  qwen2: false,
  'llama-spm': false,
  'gemma-spm': false,
};

/** Whether llama.cpp adds BOS when the file has no `tokenizer.ggml.add_bos_token`. */
const DEFAULT_ADD_BOS: Record<GgufTokenizerFamily, boolean> = {
  llama3: true,
  smollm: false,
  gpt2: false,
  qwen2: false,
  'llama-spm': true,
  'gemma-spm': true,
};

/** Architectures whose SentencePiece vocabulary is read as Gemma's (transformers' gemma_tokenizer). */
const GEMMA_ARCHS = new Set(['gemma', 'gemma2', 'gemma3']);

const SPM_SPACE = '\u2581';

/** An entry of tokenizer.json's `added_tokens`. */
interface AddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

function addedToken(id: number, content: string, special: boolean): AddedToken {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special };
}

/**
 * Build tokenizer.json, tokenizer_config.json and special_tokens_map.json from the metadata of
 * a GGUF file. `file` names the GGUF in error messages. Throws a LobesError for a tokenizer
 * model or pre-tokenizer outside the supported families, or for missing or inconsistent keys.
 */
export function tokenizerFilesFromGguf(metadata: GgufMetadata, file: string): TokenizerFiles {
  const m: GgufMeta = new GgufMeta(metadata, file);
  const model = m.read(K.tokenizerModel);
  if (model === undefined) {
    m.fail(K.tokenizerModel.key, 'the file has no tokenizer (no tokenizer.ggml.model key)',
      'use a GGUF that embeds its vocabulary');
  }
  const arch = m.read(K.architecture) ?? 'llama';
  const tokens = m.read(K.tokens);
  if (!tokens || tokens.length === 0) m.fail(K.tokens.key, 'no token list');
  const n = tokens.length;
  const types = m.read(K.tokenType);
  if (!types)
    m.fail(K.tokenType.key, 'no token types',
      'the file predates token types; convert it again with a current llama.cpp');
  if (types.length !== n) m.fail(K.tokenType.key, `${types.length} token types for ${n} tokens`);
  for (let i = 0; i < n; i++) {
    const t = types[i]!;
    if (!(Number.isInteger(t) && t >= 1 && t <= 6))
      m.fail(`tokenizer.ggml.token_type[${i}]`, `unknown token type ${t} (llama.cpp defines 1 to 6)`);
  }

  let family: GgufTokenizerFamily;
  const pre = m.read(K.tokenizerPre);
  if (model === 'gpt2') {
    if (pre === undefined) {
      m.fail(K.tokenizerPre.key, 'byte-level BPE vocabulary without a pre-tokenizer name: the text split is unknown',
        'convert the model again with a current llama.cpp, which records it');
    }
    const f = BYTE_LEVEL_PRE[pre];
    if (!f) {
      m.fail(K.tokenizerPre.key,
        `unsupported pre-tokenizer "${pre}" (supported: ${Object.keys(BYTE_LEVEL_PRE).join(', ')})`,
        'convert the original Hugging Face model to ONNX instead');
    }
    family = f;
  } else if (model === 'llama') {
    if (pre !== undefined && pre !== 'default') {
      m.fail(K.tokenizerPre.key,
        `unsupported pre-tokenizer "${pre}" for a SentencePiece vocabulary (supported: default)`);
    }
    if (arch !== 'llama' && !GEMMA_ARCHS.has(arch)) {
      m.fail(K.architecture.key,
        `SentencePiece vocabulary of architecture "${arch}" is not supported (supported: llama, gemma, gemma2, gemma3)`);
    }
    family = arch === 'llama' ? 'llama-spm' : 'gemma-spm';
  } else {
    m.fail(K.tokenizerModel.key, `unsupported tokenizer model "${model}" (supported: gpt2, llama)`,
      'convert the original Hugging Face model to ONNX instead');
  }

  const id = (key: GgufKey<'int'>, fallback: number | undefined): number | undefined => {
    const v = m.read(key) ?? fallback;
    if (v !== undefined && (v < 0 || v >= n)) m.fail(key.key, `token id ${v} outside the vocabulary of ${n}`);
    return v;
  };
  const gemma = family === 'gemma-spm';
  const spm = family === 'llama-spm' || gemma;
  // Gemma: a token of spaces only (llama.cpp writes "▁▁" as two spaces) is looked up as "▁▁".
  const spelled = gemma
    ? tokens.map((t) => (t.includes(' ') && t.trim() === '' ? SPM_SPACE.repeat(Array.from(t).length) : t))
    : tokens;
  // llama.cpp's defaults for a SentencePiece vocabulary: <unk> 0, <s> 1, </s> 2.
  const bosId = id(K.bosTokenId, spm ? 1 : undefined);
  const eosId = id(K.eosTokenId, spm ? 2 : undefined);
  const unkId = id(K.unknownTokenId, spm ? 0 : undefined);
  const padId = id(K.paddingTokenId, undefined);
  const addBos = m.read(K.addBosToken) ?? DEFAULT_ADD_BOS[family];
  const addEos = m.read(K.addEosToken) ?? false;
  if (addBos && bosId === undefined) m.fail(K.bosTokenId.key, 'add_bos_token is set but there is no BOS token id');
  if (addEos && eosId === undefined) m.fail(K.eosTokenId.key, 'add_eos_token is set but there is no EOS token id');

  // Control, unknown and user-defined tokens are matched whole in the text before the model
  // runs (llama.cpp's special-token partition); Hugging Face keeps them as added tokens.
  const added: AddedToken[] = [];
  for (let i = 0; i < n; i++) {
    const t = types[i]!;
    if (t === GGUF_TOKEN_TYPE.CONTROL || t === GGUF_TOKEN_TYPE.UNKNOWN) added.push(addedToken(i, tokens[i]!, true));
    else if (t === GGUF_TOKEN_TYPE.USER_DEFINED) added.push(addedToken(i, tokens[i]!, false));
  }

  const vocab: Record<string, number> = Object.create(null);
  for (let i = 0; i < n; i++) {
    const t = spelled[i]!;
    // A token listed twice: the first id (transformers' Gemma reading keeps the last).
    if (!(t in vocab) || gemma) vocab[t] = i;
  }

  const tok = (i: number | undefined): string | null => (i === undefined ? null : tokens[i]!);
  const addSpacePrefix = spm && !gemma ? m.read(K.addSpacePrefix) ?? true : false;

  let modelJson: Record<string, unknown>;
  let normalizer: unknown = null;
  let preTokenizer: unknown = null;
  let decoder: unknown;
  const byteLevelPost = (addPrefixSpace: boolean) => ({ type: 'ByteLevel', add_prefix_space: addPrefixSpace,
    trim_offsets: false, use_regex: true });
  let postLead: unknown = null;

  if (!spm) {
    const merges = m.read(K.merges);
    if (!merges) m.fail(K.merges.key, 'byte-level BPE vocabulary without merges');
    const pairs: [string, string][] = new Array(merges.length);
    for (let i = 0; i < merges.length; i++) {
      const s = merges[i]!;
      // llama.cpp splits at the first space after the first character.
      const cut = s.indexOf(' ', 1);
      if (cut < 0) m.fail(`${K.merges.key}[${i}]`, `merge ${JSON.stringify(s)} is not two tokens separated by a space`);
      pairs[i] = [s.slice(0, cut), s.slice(cut + 1)];
    }
    modelJson = {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: family === 'llama3',
      vocab,
      merges: pairs,
    };
    if (family === 'llama3') {
      preTokenizer = {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: LLAMA3_SPLIT_REGEX }, behavior: 'Isolated', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      };
      postLead = byteLevelPost(true);
      decoder = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
    } else if (family === 'qwen2') {
      // The Qwen2 split, then ByteLevel without its own regex, as transformers' GGUF loader and
      // llama.cpp read a qwen2 vocabulary: without the NFC normalizer of Qwen2's own
      // tokenizer.json, which only changes texts not already in NFC.
      preTokenizer = {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: QWEN2_SPLIT_REGEX }, behavior: 'Isolated', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      };
      postLead = byteLevelPost(false);
      decoder = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
    } else {
      const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
      // SmolLM's tokenizer.json declares Digits(individual_digits) before ByteLevel. The same
      // split is written as a Split on \p{N}: identical in Hugging Face's Rust tokenizers, and
      // @huggingface/transformers' Digits only splits ASCII digits.
      preTokenizer = family === 'smollm'
        ? { type: 'Sequence',
          pretokenizers: [{ type: 'Split', pattern: { Regex: '\\p{N}' }, behavior: 'Isolated', invert: false },
            byteLevel] }
        : byteLevel;
      postLead = byteLevelPost(false);
      decoder = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
    }
  } else {
    const scores = m.read(K.scores);
    if (!scores) m.fail(K.scores.key, 'SentencePiece vocabulary without scores');
    if (scores.length !== n) m.fail(K.scores.key, `${scores.length} scores for ${n} tokens`);
    if (unkId === undefined) m.fail(K.unknownTokenId.key, 'SentencePiece vocabulary without an unknown token');
    for (let b = 0; b < 256; b++) {
      const name = `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
      const at = vocab[name];
      if (at === undefined || types[at] !== GGUF_TOKEN_TYPE.BYTE) {
        m.fail(K.tokens.key, `SentencePiece vocabulary without the byte token ${name}`,
          'only byte-fallback vocabularies (Llama-2 style) are supported');
      }
    }
    modelJson = {
      type: 'BPE',
      dropout: null,
      unk_token: tokens[unkId]!,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges: gemma ? gemmaMerges(spelled, vocab) : spmMerges(tokens, types, scores, vocab),
    };
    const replaceSpaces = { type: 'Replace', pattern: { String: ' ' }, content: SPM_SPACE };
    normalizer = addSpacePrefix
      ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: SPM_SPACE }, replaceSpaces] }
      : { type: 'Sequence', normalizers: [replaceSpaces] };
    decoder = {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: SPM_SPACE }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(addSpacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
        // (Gemma: no space prepended, none stripped; GemmaTokenizer's Split on " " after the
        // normalizer has replaced every space is a no-op and is left out.)
      ],
    };
  }

  const template = addBos || addEos || spm
    ? templateProcessing(addBos ? tok(bosId)! : null, bosId, addEos ? tok(eosId)! : null, eosId)
    : null;
  let postProcessor: unknown;
  if (spm) postProcessor = template;
  else postProcessor = template ? { type: 'Sequence', processors: [postLead, template] } : postLead;

  const tokenizerJson: Record<string, unknown> = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer,
    pre_tokenizer: preTokenizer,
    post_processor: postProcessor,
    decoder,
    model: modelJson,
  };

  const addedTokensDecoder: Record<string, Omit<AddedToken, 'id'>> = {};
  for (const a of added) {
    const { id: i, ...rest } = a;
    addedTokensDecoder[String(i)] = rest;
  }
  const config: Record<string, unknown> = {
    add_bos_token: addBos,
    add_eos_token: addEos,
    added_tokens_decoder: addedTokensDecoder,
  };
  const specialMap: Record<string, unknown> = {};
  for (const [name, tid] of [['bos_token', bosId], ['eos_token', eosId], ['pad_token', padId], ['unk_token',
    unkId]] as const)
  {
    if (tid === undefined) continue;
    config[name] = tokens[tid]!;
    specialMap[name] = { content: tokens[tid]!, lstrip: false, normalized: false, rstrip: false, single_word: false };
  }
  const chat = chatTemplate(m);
  if (chat !== undefined) config.chat_template = chat;
  config.clean_up_tokenization_spaces = CLEAN_UP_SPACES[family];
  if (spm && !gemma) config.legacy = true;
  const ctx = m.read(K.contextLength);
  if (ctx !== undefined) config.model_max_length = ctx;
  config.tokenizer_class = 'PreTrainedTokenizerFast';

  return { family, tokenizerJson, tokenizerConfigJson: config, specialTokensMap: specialMap };
}

/**
 * Merges of a SentencePiece BPE vocabulary from its scores: every split of every normal token
 * into two tokens of the vocabulary, highest merged-token score first, then by the left and
 * the right token's id. This is the order of Hugging Face's conversion of the sentencepiece
 * model (it gives back the 61249 merges of Llama-2's tokenizer.json exactly), and the order in
 * which SentencePiece and llama.cpp merge (the best-scoring pair first).
 */
export function spmMerges(
  tokens: readonly string[],
  types: ArrayLike<number>,
  scores: ArrayLike<number>,
  vocab: Record<string, number>,
): [string, string][] {
  const cands: { score: number; l: number; r: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (types[i] !== GGUF_TOKEN_TYPE.NORMAL) continue;
    const cps = Array.from(tokens[i]!);
    if (cps.length < 2) continue;
    for (let k = 1; k < cps.length; k++) {
      const l = vocab[cps.slice(0, k).join('')];
      const r = vocab[cps.slice(k).join('')];
      if (l !== undefined && r !== undefined) cands.push({ score: scores[i]!, l, r });
    }
  }
  cands.sort((a, b) => b.score - a.score || a.l - b.l || a.r - b.r);
  return cands.map((c) => [tokens[c.l]!, tokens[c.r]!]);
}

/**
 * Merges of Gemma's SentencePiece vocabulary as transformers' GGUF loader recovers them
 * (gemma_tokenizer → generate_merges with each token's score its negated position in the
 * file): for every token in file order, each split into two tokens of the vocabulary (sorted
 * by the left, then the right token's id); then all of them, stably, by position in the file
 * (first first), then the longer left piece, then the longer right piece. Lengths are in code
 * points, as Python counts them. `vocab` maps each spelling to its (last) id.
 */
export function gemmaMerges(spelled: readonly string[], vocab: Record<string, number>): [string, string][] {
  const seen = new Set<string>();
  const cands: { pos: number; l: string; r: string; ll: number; lr: number }[] = [];
  for (const t of spelled) {
    // A dict keeps its first insertion: the token's place in the iteration; its value the last position.
    if (seen.has(t)) continue;
    seen.add(t);
    const cps = Array.from(t);
    const local: { l: string; r: string; ll: number; lr: number }[] = [];
    for (let k = 1; k < cps.length; k++) {
      const l = cps.slice(0, k).join('');
      const r = cps.slice(k).join('');
      if (l in vocab && r in vocab) local.push({ l, r, ll: k, lr: cps.length - k });
    }
    local.sort((a, b) => vocab[a.l]! - vocab[b.l]! || vocab[a.r]! - vocab[b.r]!);
    const pos = vocab[t]!;
    for (const c of local) cands.push({ pos, ...c });
  }
  // Python's sorted(key=(score, len l, len r), reverse=True) with score −position: stable.
  cands.sort((a, b) => a.pos - b.pos || b.ll - a.ll || b.lr - a.lr);
  return cands.map((c) => [c.l, c.r]);
}

/**
 * Hugging Face's TemplateProcessing for a Llama tokenizer: `[BOS] $A [EOS]` and
 * `[BOS] $A [EOS] [BOS]:1 $B:1 [EOS]:1`, with BOS / EOS only where they are added.
 */
function templateProcessing(bos: string | null, bosId: number | undefined, eos: string | null,
  eosId: number | undefined): Record<string, unknown>
{
  const special = (id: string, typeId: number) => ({ SpecialToken: { id, type_id: typeId } });
  const seq = (id: 'A' | 'B', typeId: number) => ({ Sequence: { id, type_id: typeId } });
  const single: unknown[] = [];
  const pair: unknown[] = [];
  if (bos) single.push(special(bos, 0));
  single.push(seq('A', 0));
  if (eos) single.push(special(eos, 0));
  pair.push(...single);
  if (bos) pair.push(special(bos, 1));
  pair.push(seq('B', 1));
  if (eos) pair.push(special(eos, 1));
  const specialTokens: Record<string, unknown> = {};
  if (bos) specialTokens[bos] = { id: bos, ids: [bosId], tokens: [bos] };
  if (eos) specialTokens[eos] = { id: eos, ids: [eosId], tokens: [eos] };
  return { type: 'TemplateProcessing', single, pair, special_tokens: specialTokens };
}

/**
 * `tokenizer.chat_template`, or, when the file also has named templates
 * (`tokenizer.chat_template.NAME`), the list form Hugging Face uses for several templates.
 */
function chatTemplate(m: GgufMeta): string | { name: string; template: string }[] | undefined {
  const main = m.read(K.chatTemplate);
  const named: { name: string; template: string }[] = [];
  for (const key of m.map.keys()) {
    if (key.startsWith(`${K.chatTemplate.key}.`)) {
      named.push({ name: key.slice(K.chatTemplate.key.length + 1), template: m.str(key)! });
    }
  }
  if (named.length === 0) return main;
  named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return main === undefined ? named : [{ name: 'default', template: main }, ...named];
}

/**
 * Write the tokenizer files into `dir` (created if missing): tokenizer.json,
 * tokenizer_config.json and special_tokens_map.json, each atomically.
 */
export function writeTokenizerFiles(dir: string, files: TokenizerFiles): void {
  makeDirs(dir);
  writeFileAtomicSync(join(dir, 'tokenizer.json'), JSON.stringify(files.tokenizerJson));
  writeJsonAtomic(join(dir, 'tokenizer_config.json'), files.tokenizerConfigJson, 2);
  writeJsonAtomic(join(dir, 'special_tokens_map.json'), files.specialTokensMap, 2);
}
