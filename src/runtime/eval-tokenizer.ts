/**
 * The tokenizer as evaluation needs it: the chat template, raw encoding and decoding, the
 * end-of-turn tokens, and where the answer letter goes.
 *
 * The answer slot. For a prompt text T (ending with the answer prefix) and letters L, lobes
 * tokenizes T + L for every letter. The tokens all letters share are what the model reads
 * (the stem); each letter must then add exactly one token c_L, and the candidates are those
 * tokens. When the letter is its own token after T (encode(T + L) = encode(T) + [c_L], e.g.
 * SmolLM2 and Llama-3.1 after `{"choice": "`), the stem is encode(T). When the tokenizer writes
 * T's last characters and the letter as one token (both write " A" after "Answer: "), the stem
 * is shorter and the candidates are those joint tokens: the probability scored is that of the
 * tokenizer's own spelling of T + L. A letter that would need two or more tokens is an error.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { readJsonFile } from '../store/json.js';
import { openHfTokenizer } from './tokenize.js';

/** Where the answer letters go in one prompt. */
export interface AnswerSlot {
  /** The tokens the model reads (the scored position is the last). */
  ids: number[];
  /** Candidate token per letter. */
  candidates: number[];
  /** The text each candidate stands for (the letter, with any characters of T it absorbs). */
  continuations: string[];
  /** Character offset in T where the scored continuation starts. */
  answerAt: number;
}

export interface EvalTokenizer {
  source: string;
  /** Wrap a user message with the chat template and the generation prompt (null: no template). */
  chat: ((content: string) => string) | null;
  /** Token ids of a whole prompt text (special tokens added only without a chat template). */
  encode(text: string): number[];
  /** Token ids of a piece of text, no special tokens. */
  encodePiece(text: string): number[];
  decode(ids: number[]): string;
  /** Tokens that end the assistant's turn. */
  eos: Set<number>;
  padId: number;
  /**
   * The token a context-free continuation is scored after (lm-evaluation-harness's prefix
   * token: BOS, else EOS); absent in stand-ins without one.
   */
  prefixId?: number | null;
  /** The answer slot of a prompt text for these letters. */
  answerSlot(text: string, letters: string[], where: string): AnswerSlot;
  /** The answer slot of a piece of text fed after other tokens (its ids alone, no special tokens). */
  pieceSlot(piece: string, letters: string[], where: string): AnswerSlot;
}

export interface EvalTokenizerOptions {
  /** 'auto' uses the chat template when the tokenizer has one. */
  chatTemplate: 'auto' | 'on' | 'off';
}

const END_OF_TURN = ['<|im_end|>', '<|eot_id|>', '<|eom_id|>', '<|end_of_text|>', '<|endoftext|>', '</s>',
  '<end_of_turn>', '<|end|>'];

function commonPrefix(seqs: number[][]): number {
  let n = 0;
  const first = seqs[0]!;
  for (; n < first.length; n++) if (!seqs.every((s) => s[n] === first[n])) break;
  return n;
}

/** Whether every sequence is one token longer than what they all share. */
function oneTokenEach(seqs: number[][]): boolean {
  const stem = commonPrefix(seqs);
  return seqs.every((s) => s.length === stem + 1);
}

/**
 * The error for letters that are not one token each after the prompt. The letter named is
 * the one that breaks the rule: the letter without which the others are one token each (a
 * letter that splits, or that changes how the end of the prompt tokenizes, shortens what all
 * share, so the first letter alone would look wrong); when no single letter is to blame,
 * every letter's tokens are listed.
 */
export function unscorableLetter(letters: string[], withLetter: number[][], where: string,
  decode: (ids: number[]) => string): LobesError
{
  const hint = `choose another ${opt('answerPrefix')}`;
  let culprit = -1;
  if (letters.length > 2) {
    for (let i = 0; i < letters.length && culprit < 0; i++)
      if (oneTokenEach(withLetter.filter((_, j) => j !== i))) culprit = i;
  } else {
    // two letters: blame one that is not one token after what it shares with the other
    const stem = commonPrefix(withLetter);
    culprit = withLetter.findIndex((s) => s.length !== stem + 1);
  }
  if (culprit >= 0) {
    const others = withLetter.filter((_, j) => j !== culprit);
    const stem = letters.length > 2 ? commonPrefix(others) : commonPrefix(withLetter);
    const mine = withLetter[culprit]!;
    const shared = commonPrefix([mine, others[0]!]);
    const pieces = mine.slice(Math.min(stem, shared)).map((t) => decode([t]));
    return new LobesError(
      `the answer letter ${
        JSON.stringify(letters[culprit])
      } cannot be scored: it is not one token after the answer prefix for this tokenizer (the prompt ends with ${
        JSON.stringify(pieces)
      } where the other letters end with one token)`,
      { where, hint },
    );
  }
  const stem = commonPrefix(withLetter);
  const ends = letters.map((L, i) => `${L}: ${JSON.stringify(withLetter[i]!.slice(stem).map((t) => decode([t])))}`)
    .join(', ');
  return new LobesError(
    `the answer letters are not one token each after the answer prefix for this tokenizer (${ends})`,
    { where, hint },
  );
}

/** Load the tokenizer of a model folder (tokenizer.json + tokenizer_config.json), offline. */
export async function loadEvalTokenizer(modelDir: string, opts: EvalTokenizerOptions): Promise<EvalTokenizer> {
  const { dir, tok, hasTemplate } = await openHfTokenizer(modelDir);
  if (opts.chatTemplate === 'on' && !hasTemplate)
    throw new LobesError('the tokenizer has no chat template', { file: path.join(dir, 'tokenizer_config.json'),
      hint: `use ${opt('chatTemplate', 'off')}` });
  const useChat = opts.chatTemplate === 'on' || (opts.chatTemplate === 'auto' && hasTemplate);
  const tj = readJsonFile(path.join(dir, 'tokenizer.json'));
  const added: { content: string; special: boolean; rstrip?: boolean; lstrip?: boolean; id: number }[] =
    Array.isArray(tj.added_tokens) ? tj.added_tokens : [];
  // Special tokens split the text before anything else, so the tokens after the last one in a
  // prompt do not depend on what comes before it (unless it swallows whitespace).
  const splitters = added.filter((a) => a.special && !a.rstrip && a.content.length > 0).map((a) => a.content);
  const vocabId = (t: string): number | null => added.find((a) => a.content === t)?.id ?? null;
  const eos = new Set<number>();
  if (typeof tok.eos_token_id === 'number') eos.add(tok.eos_token_id);
  const gc = path.join(dir, 'generation_config.json');
  if (existsSync(gc)) {
    try {
      const g = JSON.parse(readFileSync(gc, 'utf8'));
      for (const x of [g.eos_token_id].flat()) if (typeof x === 'number') eos.add(x);
    } catch {
      // generation_config.json is optional; an unreadable one adds nothing.
    }
  }
  for (const t of END_OF_TURN) {
    const id = vocabId(t);
    if (id !== null) eos.add(id);
  }
  const encodePiece = (t: string): number[] => Array.from(tok.encode(t, { add_special_tokens: false }) as number[]);
  const encode = (t: string): number[] => Array.from(tok.encode(t, { add_special_tokens: !useChat }) as number[]);
  const decode = (ids: number[]): string =>
    tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  const chat = useChat
    ? (content: string): string =>
      tok.apply_chat_template([{ role: 'user', content }], { tokenize: false, add_generation_prompt: true }) as string
    : null;
  const slotCache = new Map<string,
    { stemCut: number; candidates: number[]; continuations: string[]; absorbed: number }>();

  /** The letter analysis of a text tail (cached: every prompt of a run shares its tail). */
  const tailSlot = (tail: string, letters: string[], where: string, enc: (t: string) => number[]) => {
    const key = `${letters.join('')}\u0000${tail}`;
    const hit = slotCache.get(key);
    if (hit) return hit;
    const base = enc(tail);
    const withLetter = letters.map((L) => enc(tail + L));
    const stem = commonPrefix(withLetter);
    if (withLetter.some((s) => s.length !== stem + 1)) throw unscorableLetter(letters, withLetter, where, decode);
    for (let i = 0; i < stem; i++)
      if (base[i] !== withLetter[0]![i])
        throw new LobesError(
          'the prompt tokenizes differently with and without the answer letter before the answer position',
          { where, hint: `choose another ${opt('answerPrefix')}` },
        );
    const candidates = withLetter.map((s) => s[stem]!);
    if (new Set(candidates).size !== candidates.length)
      throw new LobesError(`two answer letters map to the same token after the answer prefix`, { where });
    const continuations = candidates.map((c) => decode([c]));
    // Characters of the prompt the candidate tokens absorb (same for every letter).
    const absorbed = continuations[0]!.length - letters[0]!.length;
    const ok = absorbed >= 0 &&
      continuations.every((c, i) =>
        c.length - letters[i]!.length === absorbed && c.endsWith(letters[i]!) && tail.endsWith(c.slice(0, absorbed))
      );
    if (!ok)
      throw new LobesError(`cannot align the answer tokens ${JSON.stringify(continuations)} with the end of the prompt`,
        { where, hint: `choose another ${opt('answerPrefix')}` });
    const r = { stemCut: base.length - stem, candidates, continuations, absorbed };
    if (tail.length < 4096) slotCache.set(key, r);
    return r;
  };

  const answerSlot = (text: string, letters: string[], where: string): AnswerSlot => {
    const full = encode(text);
    let cut = -1;
    for (const s of splitters) {
      const i = text.lastIndexOf(s);
      if (i >= 0) cut = Math.max(cut, i + s.length);
    }
    let r;
    if (cut > 0) {
      const tail = text.slice(cut);
      r = tailSlot(tail, letters, where, encodePiece);
      const tailIds = encodePiece(tail);
      const ok = tailIds.length <= full.length && tailIds.every((t, i) => full[full.length - tailIds.length + i] === t);
      if (!ok) r = null;
    } else r = null;
    if (!r) r = tailSlot(text, letters, where, encode);
    if (r.stemCut > full.length - 1) throw new LobesError('the prompt has no tokens before the answer', { where });
    return { ids: full.slice(0, full.length - r.stemCut), candidates: r.candidates, continuations: r.continuations,
      answerAt: text.length - r.absorbed };
  };

  const pieceSlot = (piece: string, letters: string[], where: string): AnswerSlot => {
    const r = tailSlot(piece, letters, where, encodePiece);
    const ids = encodePiece(piece);
    return { ids: ids.slice(0, ids.length - r.stemCut), candidates: r.candidates, continuations: r.continuations,
      answerAt: piece.length - r.absorbed };
  };

  return {
    source: `${dir} (tokenizer.json)`,
    pieceSlot,
    chat,
    encode,
    encodePiece,
    decode,
    eos,
    padId: tok.pad_token_id ?? tok.eos_token_id ?? 0,
    prefixId: tok.bos_token_id ?? tok.eos_token_id ?? null,
    answerSlot,
  };
}
