/**
 * Tokenization with @huggingface/transformers, from the model folder only (no network, no
 * cache writes). Special tokens follow the tokenizer's own configuration (its
 * post-processor adds BOS when the model expects it); with `chatTemplate` each text becomes
 * one user turn of the tokenizer's chat template followed by the generation prompt.
 * `maxTokens` keeps the END of the sequence (the last token is the one analysed); a leading
 * BOS is kept in front. Batches are padded on the right: a single forward pass with right
 * padding is correct for every attention kernel (GroupQueryAttention expects it).
 */
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { LobesTokenizer, Tokenized, TokenizerOptions } from './types.js';
import { LobesError, opt } from '../util/errors.js';

/** Folder holding tokenizer.json for a model folder (the folder itself, or the parent of an onnx/ folder). */
export function tokenizerDir(modelDir: string): string | null {
  let d = resolve(modelDir);
  if (d.endsWith('.onnx')) d = dirname(d);
  if (existsSync(join(d, 'tokenizer.json'))) return d;
  if (basename(d) === 'onnx' && existsSync(join(dirname(d), 'tokenizer.json'))) return dirname(d);
  return null;
}

/**
 * The transformers.js tokenizer of a model folder, offline (no network, no cache writes), with
 * the folder it came from and whether it has a chat template. Extract, eval and attend each build
 * their own encoding on it.
 */
export async function openHfTokenizer(modelDir: string): Promise<{ dir: string; tok: any; hasTemplate: boolean }> {
  const dir = tokenizerDir(modelDir);
  if (!dir) {
    throw new LobesError('no tokenizer.json in the model folder', {
      file: resolve(modelDir),
      hint: 'copy tokenizer.json and tokenizer_config.json from the original model next to the .onnx file',
    });
  }
  const tf = await import('@huggingface/transformers');
  tf.env.allowRemoteModels = false;
  tf.env.allowLocalModels = true;
  (tf.env as any).useFSCache = false;
  (tf.env as any).useBrowserCache = false;
  let tok: any;
  try {
    tok = await tf.AutoTokenizer.from_pretrained(dir, { local_files_only: true } as any);
  } catch (e) {
    throw new LobesError(`cannot load the tokenizer: ${String((e as Error).message ?? e).split('\n')[0]}`, {
      file: dir,
      hint: 'the folder needs tokenizer.json and tokenizer_config.json',
    });
  }
  return { dir, tok, hasTemplate: !!(tok.chat_template || tok.config?.chat_template) };
}

export async function loadTokenizer(modelDir: string, opts: TokenizerOptions): Promise<LobesTokenizer> {
  if (opts.maxTokens !== null && (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 1)) {
    throw new LobesError(`${opt('maxTokens')} must be a positive integer, got ${opts.maxTokens}`);
  }
  const { dir, tok, hasTemplate } = await openHfTokenizer(modelDir);
  if (opts.chatTemplate && !hasTemplate) {
    throw new LobesError('the tokenizer has no chat template', { file: join(dir, 'tokenizer_config.json'),
      hint: 'drop the chat-template option' });
  }
  const bosId: number | null = tok.bos_token_id ?? null;
  const probe: number[] = Array.from(tok.encode('a', { add_special_tokens: true }) as number[]);
  const addBos = bosId !== null && probe[0] === bosId;
  const padId: number = tok.pad_token_id ?? tok.eos_token_id ?? 0;
  const maxTokens = opts.maxTokens;

  const encode = (text: string): Tokenized => {
    if (typeof text !== 'string' || text.trim() === '') throw new LobesError('empty text: nothing to analyse');
    let ids: number[];
    if (opts.chatTemplate) {
      const s: string = tok.apply_chat_template([{ role: 'user', content: text }], { tokenize: false,
        add_generation_prompt: true });
      ids = Array.from(tok.encode(s, { add_special_tokens: false }) as number[]);
    } else {
      ids = Array.from(tok.encode(text, { add_special_tokens: true }) as number[]);
    }
    const fullLength = ids.length;
    if (maxTokens !== null && ids.length > maxTokens) {
      const keepBos = bosId !== null && ids[0] === bosId && maxTokens > 1;
      ids = keepBos ? [ids[0]!, ...ids.slice(ids.length - (maxTokens - 1))] : ids.slice(ids.length - maxTokens);
      return { ids, fullLength, truncated: true };
    }
    return { ids, fullLength, truncated: false };
  };

  return {
    source: `${dir} (tokenizer.json)`,
    addBos,
    chatTemplate: opts.chatTemplate,
    padId,
    paddingSide: 'right',
    encode,
  };
}
