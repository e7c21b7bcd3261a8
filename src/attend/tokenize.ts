/**
 * The tokenizer as `lobes attend` needs it: the chat template, encoding with and without the
 * tokenizer's added special tokens, and the token table (pieces, special tokens, byte scheme).
 * Loaded offline from the model folder with @huggingface/transformers, like extraction's.
 *
 * The encodings match the other commands: `lobes extract` encodes a plain text with special
 * tokens (the tokenizer's BOS) and a chat-templated text without (the template writes its own
 * markers); `lobes eval` encodes a prompt with special tokens only when no chat template wraps it.
 */
import { join } from 'node:path';
import { openHfTokenizer } from '../runtime/tokenize.js';
import { loadTokenTable, type TokenTable } from './tokens.js';

export interface AttendTokenizer {
  source: string;
  /** Wrap a text as one user turn with the chat template and the generation prompt; null when the tokenizer has none. */
  chat: ((content: string) => string) | null;
  /** Token ids of a text, with the tokenizer's added special tokens (BOS) when `special`. */
  encode(text: string, special: boolean): number[];
  table: TokenTable;
  padId: number;
  bosId: number | null;
}

/** Load the tokenizer of a model folder. */
export async function loadAttendTokenizer(modelDir: string): Promise<AttendTokenizer> {
  const { dir, tok, hasTemplate } = await openHfTokenizer(modelDir);
  const table = loadTokenTable(modelDir);
  return {
    source: `${join(dir, 'tokenizer.json')}`,
    chat: hasTemplate
      ? (content: string) =>
        tok.apply_chat_template([{ role: 'user', content }], { tokenize: false, add_generation_prompt: true }) as string
      : null,
    encode: (text, special) => Array.from(tok.encode(text, { add_special_tokens: special }) as number[]),
    table,
    padId: tok.pad_token_id ?? tok.eos_token_id ?? 0,
    bosId: tok.bos_token_id ?? null,
  };
}
