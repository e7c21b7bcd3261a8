/**
 * A small byte-level BPE tokenizer for the generated models: 256 byte tokens, a merge list
 * learned deterministically from TOKENIZER_CORPUS, and three special tokens. Written out as a
 * Hugging Face tokenizer.json + tokenizer_config.json that @huggingface/transformers loads.
 */
import { TOKENIZER_CORPUS } from './corpus.js';
import { LobesError } from '../util/errors.js';

export const BOS_TOKEN = '<|begin_of_text|>';
export const EOS_TOKEN = '<|end_of_text|>';
export const PAD_TOKEN = '<|pad|>';

/** Pre-tokenizer split (GPT-2 style; every construct is valid in both JS and the HF Rust regex). */
export const SPLIT_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

export const CHAT_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}{{ message['role'] + ': ' + message['content'] | trim + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";

/** GPT-2 byte → printable character map (bytes that are printable keep their code point). */
export function byteToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const keepSet = new Set(keep);
  const out: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    out[b] = String.fromCodePoint(keepSet.has(b) ? b : 256 + extra++);
  }
  return out;
}

export interface BpeTokenizer {
  /** Token strings by id (byte-level alphabet), specials last. */
  vocab: string[];
  merges: [string, string][];
  bosId: number;
  eosId: number;
  padId: number;
}

/** Split text into pre-tokens as the tokenizer.json pre_tokenizer does. */
export function preTokenize(text: string): string[] {
  const re = new RegExp(SPLIT_PATTERN, 'gu');
  return text.match(re) ?? [];
}

function toByteSymbols(piece: string, b2u: string[]): string[] {
  const bytes = new TextEncoder().encode(piece);
  const out: string[] = [];
  for (const b of bytes) out.push(b2u[b]);
  return out;
}

/**
 * Learn `numMerges` merges over the corpus. Each step merges the most frequent adjacent pair;
 * ties go to the pair whose "left right" string sorts first, so the result is fully determined.
 */
export function trainBpe(corpus: readonly string[], numMerges: number): BpeTokenizer {
  const b2u = byteToUnicode();
  const counts = new Map<string, number>();
  for (const text of corpus) {
    for (const piece of preTokenize(text)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
  }
  const words: { syms: string[]; n: number }[] = [...counts.keys()]
    .sort()
    .map((p) => ({ syms: toByteSymbols(p, b2u), n: counts.get(p)! }));
  const vocab = b2u.slice();
  const known = new Set(vocab);
  const merges: [string, string][] = [];
  const target = 256 + numMerges;
  while (vocab.length < target) {
    const pairs = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.syms.length; i++) {
        const key = w.syms[i] + ' ' + w.syms[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + w.n);
      }
    }
    let best: string | null = null;
    let bestN = 0;
    for (const [key, n] of pairs) {
      if (n > bestN || (n === bestN && best !== null && key < best)) {
        best = key;
        bestN = n;
      }
    }
    if (best === null) break;
    const [a, b] = best.split(' ') as [string, string];
    const merged = a + b;
    merges.push([a, b]);
    if (!known.has(merged)) {
      known.add(merged);
      vocab.push(merged);
    }
    for (const w of words) {
      const s = w.syms;
      const next: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          next.push(merged);
          i++;
        } else next.push(s[i]);
      }
      w.syms = next;
    }
  }
  const bosId = vocab.length;
  vocab.push(BOS_TOKEN, EOS_TOKEN, PAD_TOKEN);
  return { vocab, merges, bosId, eosId: bosId + 1, padId: bosId + 2 };
}

/** The tokenizer of a model with `vocabSize` tokens: vocabSize − 259 merges. */
export function buildTokenizer(vocabSize: number): BpeTokenizer {
  if (vocabSize < 260) throw new LobesError(`vocab size ${vocabSize} < 260 (256 bytes + 3 specials + 1 merge)`);
  const tok = trainBpe(TOKENIZER_CORPUS, vocabSize - 259);
  if (tok.vocab.length !== vocabSize) {
    throw new LobesError(`corpus too small for vocab ${vocabSize}: learned ${tok.vocab.length} tokens`);
  }
  return tok;
}

/** Encode without the BOS (reference implementation of the BPE in tokenizer.json). */
export function encodeBpe(tok: BpeTokenizer, text: string): number[] {
  const b2u = byteToUnicode();
  const rank = new Map<string, number>();
  tok.merges.forEach(([a, b], i) => rank.set(a + ' ' + b, i));
  const ids = new Map<string, number>();
  tok.vocab.forEach((t, i) => {
    if (!ids.has(t)) ids.set(t, i);
  });
  const out: number[] = [];
  for (const piece of preTokenize(text)) {
    let syms = toByteSymbols(piece, b2u);
    for (;;) {
      let bestI = -1;
      let bestR = Infinity;
      for (let i = 0; i + 1 < syms.length; i++) {
        const r = rank.get(syms[i] + ' ' + syms[i + 1]);
        if (r !== undefined && r < bestR) {
          bestR = r;
          bestI = i;
        }
      }
      if (bestI < 0) break;
      syms = [...syms.slice(0, bestI), syms[bestI] + syms[bestI + 1], ...syms.slice(bestI + 2)];
    }
    for (const s of syms) out.push(ids.get(s)!);
  }
  return out;
}

/** tokenizer.json content (HF tokenizers format). */
export function tokenizerJson(tok: BpeTokenizer): object {
  const vocabObj: Record<string, number> = {};
  const nBase = tok.bosId;
  for (let i = 0; i < nBase; i++) vocabObj[tok.vocab[i]] = i;
  const special = (id: number) => ({
    id,
    content: tok.vocab[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [special(tok.bosId), special(tok.eosId), special(tok.padId)],
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: SPLIT_PATTERN }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: BOS_TOKEN, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: BOS_TOKEN, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: BOS_TOKEN, type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { [BOS_TOKEN]: { id: BOS_TOKEN, ids: [tok.bosId], tokens: [BOS_TOKEN] } },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: vocabObj,
      merges: tok.merges.map(([a, b]) => `${a} ${b}`),
    },
  };
}

/** tokenizer_config.json content. */
export function tokenizerConfigJson(tok: BpeTokenizer): object {
  const decoder: Record<string, object> = {};
  for (const id of [tok.bosId, tok.eosId, tok.padId]) {
    decoder[String(id)] = {
      content: tok.vocab[id],
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: true,
    };
  }
  return {
    added_tokens_decoder: decoder,
    bos_token: BOS_TOKEN,
    eos_token: EOS_TOKEN,
    pad_token: PAD_TOKEN,
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_input_names: ['input_ids', 'attention_mask'],
    model_max_length: 2048,
    tokenizer_class: 'PreTrainedTokenizerFast',
  };
}
