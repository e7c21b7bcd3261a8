/**
 * From token weights to words: align each token with the characters of the prompt it encodes,
 * cut the prompt into words, and give every word the attention mass of the tokens over it, with
 * the prompt part (context, question, option:A, ...) it sits in.
 *
 * Tokens to characters. A token stands for bytes of the prompt's UTF-8 encoding:
 *   byte-level BPE (GPT-2, Llama-3, SmolLM): each character of the piece is one byte through
 *     GPT-2's bytes-to-unicode table ('Ġ' is the space byte);
 *   SentencePiece (Llama-2 and friends): '▁' is a space, '<0xNN>' is byte NN, other characters
 *     are their UTF-8; the space SentencePiece puts in front of the text matches nothing and is
 *     skipped;
 *   special tokens (BOS, chat-template markers): their content, when the text holds it (a chat
 *     template written out in the prompt), else nothing (a BOS the tokenizer adds).
 * Tokens are matched left to right against the prompt's bytes; a token that does not match where
 * the previous one ended is looked for a few bytes ahead, and counted as unaligned (no
 * characters) when it is not found. A token that covers part of a character (a Chinese character
 * split over two byte-level tokens) covers that whole character.
 *
 * Words. The prompt is cut into units, independently of the tokenizer:
 *   word   a run of letters, marks and digits, with apostrophes and hyphens between letters
 *          (don't, well-being) and points or commas between digits (3.14, 1,000) inside;
 *   cjk    one Chinese or Japanese character (Han, Hiragana, Katakana), or with
 *          `cjk: 'segment'` one word of Intl.Segmenter's dictionary segmentation of each run
 *          of such characters;
 *   punct  one punctuation or symbol character.
 * Whitespace is no unit. So a byte-level continuation piece ("ing" after " runn") lands in the
 * word it continues, a SentencePiece '▁' starts one, and punctuation glued to a word by the
 * tokenizer is a unit of its own.
 *
 * Weights. A token's weight is shared among the units it overlaps, in proportion to the
 * overlapping characters; a token over whitespace only (a newline token) gives its weight to no
 * unit. Prompt parts get every token's weight in proportion to its characters in each part;
 * tokens with no characters go to the pseudo-part 'special' (when special) or 'unaligned'.
 */

/** A named span of the prompt (character offsets, UTF-16 code units of the JavaScript string). */
export interface PromptPart {
  name: string;
  start: number;
  end: number;
}

/** How the tokenizer's pieces encode bytes. */
export type TokenScheme = 'byte-level' | 'sentencepiece' | 'plain';

/** A token's characters in the prompt: [start, end) in UTF-16 code units; start === end when it has none. */
export interface TokenSpan {
  start: number;
  end: number;
  /** A whitespace token with no characters (SentencePiece's space in front of the text). */
  space?: boolean;
}

export type UnitKind = 'word' | 'cjk' | 'punct';

/** A unit of the prompt: a word, a CJK character or segment, or a punctuation character. */
export interface TextUnit {
  text: string;
  start: number;
  end: number;
  kind: UnitKind;
}

/** A unit with its attention. */
export interface WordWeight extends TextUnit {
  /** Prompt part of the unit's first character ('template' outside every span). */
  part: string;
  /** Sum of the shares of the token weights over it. */
  weight: number;
  /** Indices of the tokens over it. */
  tokens: number[];
  /** False when the unit is template text or lies under special tokens only (dropped from keywords). */
  content: boolean;
}

export interface Aggregation {
  /** Every unit of the prompt, in text order. */
  words: WordWeight[];
  /** Attention mass per prompt part (token weights spread over their characters), plus 'special' and 'unaligned'. */
  partMass: Record<string, number>;
  /** Mass of tokens over whitespace only (also counted in the parts they lie in, except a SentencePiece leading space). */
  whitespaceMass: number;
  /** Tokens that could not be placed in the prompt (neither special nor found). */
  unaligned: number;
}

/** Parts outside every span. */
export const TEMPLATE_PART = 'template';
/** The one part of a prompt given without parts. */
export const TEXT_PART = 'text';
/** Pseudo-part of special tokens that have no characters in the prompt (a BOS the tokenizer adds). */
export const SPECIAL_PART = 'special';
/** Pseudo-part of tokens that could not be placed. */
export const UNALIGNED_PART = 'unaligned';

let byteDecoder: Map<string, number> | null = null;

/** GPT-2's bytes-to-unicode table, inverted: the byte each piece character stands for. */
function byteLevelTable(): Map<string, number> {
  if (byteDecoder) return byteDecoder;
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const m = new Map<string, number>();
  for (const b of printable) m.set(String.fromCharCode(b), b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.includes(b)) m.set(String.fromCharCode(256 + n++), b);
  }
  byteDecoder = m;
  return m;
}

const utf8 = new TextEncoder();

/** The bytes a token piece stands for under `scheme`; special tokens stand for their content. */
export function tokenBytes(piece: string, scheme: TokenScheme, special: boolean): Uint8Array {
  if (special || scheme === 'plain') return utf8.encode(piece);
  if (scheme === 'byte-level') {
    const t = byteLevelTable();
    const out: number[] = [];
    for (const ch of piece) {
      const b = t.get(ch);
      if (b === undefined) return utf8.encode(piece); // an added token that is not byte-level encoded
      out.push(b);
    }
    return Uint8Array.from(out);
  }
  const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  if (m) return Uint8Array.of(parseInt(m[1]!, 16));
  return utf8.encode(piece.replace(/\u2581/g, ' '));
}

/** UTF-8 bytes of `text` with, per byte, the UTF-16 offset of its code point and the code point's UTF-16 length. */
function byteMap(text: string): { bytes: Uint8Array; at: Int32Array; len: Int8Array } {
  const bytes = utf8.encode(text);
  const at = new Int32Array(bytes.length);
  const len = new Int8Array(bytes.length);
  let b = 0;
  let i = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (let k = 0; k < n; k++) {
      at[b + k] = i;
      len[b + k] = ch.length;
    }
    b += n;
    i += ch.length;
  }
  return { bytes, at, len };
}

function matchAt(hay: Uint8Array, pos: number, needle: Uint8Array): boolean {
  if (pos + needle.length > hay.length) return false;
  for (let k = 0; k < needle.length; k++) if (hay[pos + k] !== needle[k]) return false;
  return true;
}

/** How far ahead (bytes) a token that does not match where the previous ended is looked for. */
const LOOKAHEAD = 16;

/** U+FFFD in UTF-8: what decoding writes for bytes that are not a character. */
const REPLACEMENT = Uint8Array.of(0xef, 0xbf, 0xbd);

/**
 * Place each token in `text`: its character span. `pieces` are the tokens' bytes (tokenBytes).
 * Returns the spans and how many non-special tokens could not be placed.
 */
export function alignTokens(text: string, pieces: Uint8Array[],
  special: boolean[]): { spans: TokenSpan[]; unaligned: number }
{
  const { bytes, at, len } = byteMap(text);
  const charOf = (b: number) => (b >= bytes.length ? text.length : at[b]!);
  const charEnd = (b: number) => at[b]! + len[b]!;
  const spans: TokenSpan[] = [];
  let cur = 0;
  let unaligned = 0;
  for (let i = 0; i < pieces.length; i++) {
    let p = pieces[i]!;
    const here = charOf(cur);
    if (p.length === 0) {
      spans.push({ start: here, end: here });
      continue;
    }
    let pos = -1;
    if (matchAt(bytes, cur, p)) pos = cur;
    else if (p[0] === 0x20 && matchAt(bytes, cur, p.subarray(1))) {
      // SentencePiece's space in front of the text (or of a segment after a special token).
      p = p.subarray(1);
      pos = cur;
    } else if (!special[i]) {
      for (let d = 1; d <= LOOKAHEAD && pos < 0; d++) if (matchAt(bytes, cur + d, p)) pos = cur + d;
    }
    if (pos >= 0 && p.length === 0) {
      spans.push({ start: here, end: here, space: true });
      continue;
    }
    if (pos < 0 && !special[i] && matchAt(bytes, cur, REPLACEMENT)) {
      // Bytes that are no character on their own (a generated token ending inside a character):
      // decoding wrote U+FFFD for them, one per byte at most; the token covers those characters.
      let end = cur;
      for (let k = 0; k < p.length && matchAt(bytes, end, REPLACEMENT); k++) end += REPLACEMENT.length;
      spans.push({ start: here, end: charOf(end) });
      cur = end;
      continue;
    }
    if (pos < 0) {
      if (!special[i]) unaligned++;
      spans.push({ start: here, end: here });
      continue;
    }
    spans.push({ start: charOf(pos), end: charEnd(pos + p.length - 1) });
    cur = pos + p.length;
  }
  return { spans, unaligned };
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const WORD = /[\p{L}\p{M}\p{N}_]/u;
const SPACE = /\s/u;
const LETTER_JOIN = new Set(["'", '\u2019', '-', '\u2010', '\u2011']);
const DIGIT_JOIN = new Set(['.', ',']);
const DIGIT = /\p{N}/u;

interface Ch {
  s: string;
  i: number;
}

/** Cut `text` into units (see the module comment). */
export function segmentUnits(text: string, opts: { cjk?: 'char' | 'segment' } = {}): TextUnit[] {
  const chars: Ch[] = [];
  let i = 0;
  for (const s of text) {
    chars.push({ s, i });
    i += s.length;
  }
  const units: TextUnit[] = [];
  const isWord = (c: Ch | undefined) => !!c && WORD.test(c.s) && !CJK.test(c.s);
  let k = 0;
  while (k < chars.length) {
    const c = chars[k]!;
    if (SPACE.test(c.s)) {
      k++;
      continue;
    }
    if (CJK.test(c.s)) {
      let e = k + 1;
      while (e < chars.length && CJK.test(chars[e]!.s)) e++;
      const start = c.i;
      const end = e < chars.length ? chars[e]!.i : text.length;
      if (opts.cjk === 'segment') {
        const seg = new Intl.Segmenter('zh', { granularity: 'word' });
        for (const s of seg.segment(text.slice(start, end)))
          units.push({ text: s.segment, start: start + s.index, end: start + s.index + s.segment.length, kind: 'cjk' });
      } else {
        for (let j = k; j < e; j++)
          units.push({ text: chars[j]!.s, start: chars[j]!.i, end: chars[j]!.i + chars[j]!.s.length, kind: 'cjk' });
      }
      k = e;
      continue;
    }
    if (isWord(c)) {
      let e = k + 1;
      for (;;) {
        if (isWord(chars[e])) e++;
        else if (chars[e] && isWord(chars[e + 1]) &&
          ((LETTER_JOIN.has(chars[e]!.s) && !DIGIT.test(chars[e - 1]!.s)) ||
            (DIGIT_JOIN.has(chars[e]!.s) && DIGIT.test(chars[e - 1]!.s) && DIGIT.test(chars[e + 1]!.s)))) e += 2;
        else break;
      }
      const end = e < chars.length ? chars[e]!.i : text.length;
      units.push({ text: text.slice(c.i, end), start: c.i, end, kind: 'word' });
      k = e;
      continue;
    }
    units.push({ text: c.s, start: c.i, end: c.i + c.s.length, kind: 'punct' });
    k++;
  }
  return units;
}

/** Each character's part index into `names` (TEMPLATE_PART outside every span). */
function partOfChars(text: string, parts: PromptPart[], names: string[]): Int32Array {
  const out = new Int32Array(text.length).fill(names.indexOf(TEMPLATE_PART));
  for (const p of parts) {
    const pi = names.indexOf(p.name);
    for (let c = Math.max(0, p.start); c < Math.min(text.length, p.end); c++) out[c] = pi;
  }
  return out;
}

/**
 * Give every unit and part its attention. `weights[i]` is token i's weight, `spans[i]` its
 * characters, `special[i]` whether it is a special token; `parts` name spans of `text` (none:
 * the whole text is the part 'text');
 * `nonContent` are parts whose units are not content (the chat template, an answer prefix).
 */
export function aggregate(
  text: string,
  spans: TokenSpan[],
  special: boolean[],
  weights: ArrayLike<number>,
  parts: PromptPart[],
  units: TextUnit[],
  nonContent: ReadonlySet<string> = new Set([TEMPLATE_PART]),
): Aggregation {
  if (parts.length === 0) parts = [{ name: TEXT_PART, start: 0, end: text.length }];
  const names = [...new Set([...parts.map((p) => p.name), TEMPLATE_PART])];
  const charPart = partOfChars(text, parts, names);
  const unitOf = new Int32Array(text.length).fill(-1);
  units.forEach((u, k) => {
    for (let c = u.start; c < u.end; c++) unitOf[c] = k;
  });
  const words: WordWeight[] = units.map((u) => ({ ...u, part: names[charPart[u.start]!] ?? TEMPLATE_PART, weight: 0,
    tokens: [], content: false })
  );
  const partMass: Record<string, number> = {};
  for (const n of names) partMass[n] = 0;
  partMass[SPECIAL_PART] = 0;
  partMass[UNALIGNED_PART] = 0;
  let whitespaceMass = 0;
  let unaligned = 0;
  for (let i = 0; i < spans.length; i++) {
    const w = weights[i]!;
    const { start, end } = spans[i]!;
    if (end <= start) {
      if (special[i]) partMass[SPECIAL_PART]! += w;
      else if (spans[i]!.space) {
        whitespaceMass += w;
        partMass[text.length ? names[charPart[Math.min(start, text.length - 1)]!]! : TEMPLATE_PART]! += w;
      } else {
        partMass[UNALIGNED_PART]! += w;
        unaligned++;
      }
      continue;
    }
    const n = end - start;
    const share = new Map<number, number>();
    let inUnits = 0;
    for (let c = start; c < end; c++) {
      partMass[names[charPart[c]!]!]! += w / n;
      const u = unitOf[c]!;
      if (u >= 0) {
        share.set(u, (share.get(u) ?? 0) + 1);
        inUnits++;
      }
    }
    if (inUnits === 0) {
      whitespaceMass += w;
      continue;
    }
    for (const [u, cnt] of share) {
      const word = words[u]!;
      word.weight += (w * cnt) / inUnits;
      word.tokens.push(i);
      if (!special[i]) word.content = true;
    }
  }
  for (const word of words) if (nonContent.has(word.part)) word.content = false;
  return { words, partMass, whitespaceMass, unaligned };
}

/** The `k` heaviest content units (words and CJK units; punctuation excluded), heaviest first, ties in text order. */
export function topWords(words: WordWeight[], k: number): WordWeight[] {
  return words
    .map((w, i) => ({ w, i }))
    .filter(({ w }) => w.content && w.kind !== 'punct')
    .sort((a, b) => b.w.weight - a.w.weight || a.i - b.i)
    .slice(0, k)
    .map(({ w }) => w);
}
