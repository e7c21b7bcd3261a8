/**
 * What `lobes attend` needs from a tokenizer beyond ids: each token's piece (its string in the
 * vocabulary), whether it is special, and how pieces encode bytes (words.ts). Read from the model
 * folder's tokenizer.json (the Hugging Face tokenizers format), the file the extract tokenizer
 * loads too.
 */
import { join } from 'node:path';
import { LobesError } from '../util/errors.js';
import { tokenizerDir } from '../runtime/tokenize.js';
import type { TokenScheme } from './words.js';
import { readJsonFile } from '../store/json.js';

export interface TokenTable {
  scheme: TokenScheme;
  /** The piece of a token id ('' for an id outside the vocabulary). */
  piece(id: number): string;
  /** Whether a token id is a special token (BOS, EOS, chat-template markers). */
  special(id: number): boolean;
}

/** Every `type` in a tokenizers component (a Sequence lists its parts). */
function types(c: any): string[] {
  if (!c || typeof c !== 'object') return [];
  const inner = [...(c.pretokenizers ?? []), ...(c.decoders ?? []), ...(c.normalizers ?? [])];
  return [String(c.type ?? ''), ...inner.flatMap(types)];
}

/** Which byte encoding a tokenizer.json's pieces use. */
export function tokenScheme(tj: any): TokenScheme {
  const t = [...types(tj.pre_tokenizer), ...types(tj.decoder)];
  if (t.includes('ByteLevel')) return 'byte-level';
  const decoders = [...(tj.decoder?.decoders ?? []), tj.decoder].filter(Boolean);
  const replacesMeta = decoders.some((d: any) => d.type === 'Replace' && d.pattern?.String === '\u2581');
  if (t.includes('Metaspace') || replacesMeta || tj.model?.byte_fallback) return 'sentencepiece';
  return 'plain';
}

/** The token table of a parsed tokenizer.json. */
export function tokenTableOf(tj: any): TokenTable {
  const pieces: string[] = [];
  const vocab = tj.model?.vocab;
  if (Array.isArray(vocab))
    vocab.forEach((e: any, id: number) => (pieces[id] = Array.isArray(e) ? String(e[0]) : String(e)));
  else if (vocab && typeof vocab === 'object') { for (const [p, id] of Object.entries(vocab)) pieces[Number(id)] = p; }
  const specials = new Set<number>();
  for (const a of tj.added_tokens ?? []) {
    pieces[a.id] = String(a.content);
    if (a.special) specials.add(a.id);
  }
  const scheme = tokenScheme(tj);
  return { scheme, piece: (id) => pieces[id] ?? '', special: (id) => specials.has(id) };
}

/** The token table of a model folder (its tokenizer.json). */
export function loadTokenTable(modelDir: string): TokenTable {
  const dir = tokenizerDir(modelDir);
  if (!dir)
    throw new LobesError('no tokenizer.json in the model folder', { file: modelDir,
      hint: 'copy tokenizer.json and tokenizer_config.json from the original model next to the .onnx file' });
  const file = join(dir, 'tokenizer.json');
  const said = (m: string) => `cannot read the tokenizer: ${m.split('\n')[0]}`;
  const tj = readJsonFile(file, { unreadable: (e) => said(String(e.message)), invalid: said });
  return tokenTableOf(tj);
}
