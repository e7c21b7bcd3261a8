/**
 * GGUF tokenizer metadata built from Hugging Face tokenizer files the way llama.cpp's
 * convert_hf_to_gguf.py writes it, mirroring test/goldens/make_tokenizer_goldens.py
 * (which writes the same vocabularies with the `gguf` package and records a digest of every
 * tokenizer key). `metadataDigest` computes that digest, so a test can check that the metadata
 * here is what the gguf package wrote, key by key.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf, type GgufValue } from '../../src/formats/gguf.js';
import { writeGguf } from '../../src/formats/gguf-write.js';
import { GgmlType } from '../../src/formats/ggml.js';

const GGML_F32 = GgmlType.F32;

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, '..', '..');
export const SHARED = resolve(ROOT, '..', 'shared');
export const LLAMA3_DIR = join(ROOT, 'node_modules', '@lenml', 'tokenizer-llama3_1', 'models');
export const SPM_DIR = join(SHARED, 'models', 'ort-genai-tiny-llama-fp16');
export const SMOL_GGUF = join(SHARED, 'models', 'smollm2-135m-instruct', 'SmolLM2-135M-Instruct.Q4_1.gguf');
export const GOLDENS_FILE = join(ROOT, 'test', 'goldens', 'tokenizer-goldens.json');

export interface Goldens {
  texts: string[];
  conversations: { role: string; content: string }[][];
  families: Record<string, {
    source: string;
    ids: number[][];
    chat: { text: string; ids: number[] }[];
    gguf_digest?: Record<string, string>;
    disagreements: Record<string, number[]>;
  }>;
}

export function loadGoldens(): Goldens {
  return JSON.parse(readFileSync(GOLDENS_FILE, 'utf8')) as Goldens;
}

export function readJson(file: string): any {
  return JSON.parse(readFileSync(file, 'utf8'));
}

export function haveShared(...files: string[]): boolean {
  return files.every((f) => existsSync(f));
}

const NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;

/** Metadata as plain values (strings, numbers, booleans, string arrays, Int32Array, Float32Array). */
export type PlainMetadata = Map<string, unknown>;

function llamaHparams(meta: PlainMetadata, contextLength: number): void {
  meta.set('general.architecture', 'llama');
  meta.set('llama.context_length', contextLength);
}

/** Which special ids and flags gguf.SpecialVocab takes from tokenizer.json / tokenizer_config.json. */
function specialVocab(meta: PlainMetadata, tj: any, tc: any, n: number): void {
  const idOf = (content: string | undefined): number | undefined => {
    if (typeof content !== 'string') return undefined;
    const a = (tj.added_tokens as any[]).find((t) => t.content === content);
    return a && a.id < n ? a.id : undefined;
  };
  for (const [typ, key] of [['bos', 'bos_token_id'], ['eos', 'eos_token_id'], ['unk', 'unknown_token_id'], ['pad',
    'padding_token_id']] as const)
  {
    const entry = tc[`${typ}_token`];
    const id = idOf(typeof entry === 'object' && entry ? entry.content : entry);
    if (id !== undefined) meta.set(`tokenizer.ggml.${key}`, id);
  }
  // TemplateProcessing `single: [BOS, $A]` with `pair: [BOS, $A, BOS:1, $B:1]`: add_bos true, add_sep false.
  const pp = tj.post_processor;
  const procs: any[] = pp ? (pp.processors ?? [pp]) : [];
  for (const p of procs) {
    if (p.type !== 'TemplateProcessing') continue;
    const first = p.single[0]?.SpecialToken?.id;
    if (p.single.length > 1 && first) meta.set('tokenizer.ggml.add_bos_token', first === tc.bos_token);
    if (p.pair?.length) meta.set('tokenizer.ggml.add_sep_token', false);
  }
  for (const typ of ['bos', 'eos']) {
    if (typeof tc[`add_${typ}_token`] === 'boolean')
      meta.set(`tokenizer.ggml.add_${typ}_token`, tc[`add_${typ}_token`]);
  }
  if (typeof tc.chat_template === 'string') meta.set('tokenizer.chat_template', tc.chat_template);
}

/**
 * convert_hf_to_gguf.py's byte-level BPE path (`_set_vocab_gpt2`) for a tokenizer folder:
 * tokens by id (added tokens included), CONTROL for special added tokens, USER_DEFINED for the
 * others, merges as "left right" strings, `pre` as given.
 */
export function byteLevelMetadataFromHf(dir: string, pre: string, contextLength: number): PlainMetadata {
  const tj = readJson(join(dir, 'tokenizer.json'));
  const tc = readJson(join(dir, 'tokenizer_config.json'));
  const byId = new Map<number, string>();
  for (const [t, i] of Object.entries(tj.model.vocab as Record<string, number>)) byId.set(i, t);
  const added = new Map<number, any>();
  for (const a of tj.added_tokens) {
    byId.set(a.id, a.content);
    added.set(a.id, a);
  }
  let n = 0;
  for (const i of byId.keys()) n = Math.max(n, i + 1);
  const tokens: string[] = new Array(n);
  const types = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const t = byId.get(i);
    if (t === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = UNUSED;
    } else {
      tokens[i] = t;
      types[i] = added.has(i) ? (added.get(i).special ? CONTROL : USER_DEFINED) : NORMAL;
    }
  }
  const merges: string[] = (tj.model.merges as any[]).map((m) =>
    typeof m === 'string' ? m : (m as string[]).map((p) => p.replaceAll(' ', '\u0120')).join(' ')
  );
  const meta: PlainMetadata = new Map();
  llamaHparams(meta, contextLength);
  meta.set('tokenizer.ggml.model', 'gpt2');
  meta.set('tokenizer.ggml.pre', pre);
  meta.set('tokenizer.ggml.tokens', tokens);
  meta.set('tokenizer.ggml.token_type', types);
  meta.set('tokenizer.ggml.merges', merges);
  specialVocab(meta, tj, tc, n);
  return meta;
}

/**
 * SentencePiece scores recovered from a Llama-2 tokenizer.json (see the goldens script): normal
 * piece i scores -(i - 259), pieces of two or more U+2581 only -1e9, the rest 0.
 */
export function recoveredSpmScores(pieces: string[]): Float32Array {
  const s = new Float32Array(pieces.length);
  for (let i = 259; i < pieces.length; i++) {
    const p = pieces[i]!;
    s[i] = Array.from(p).length >= 2 && /^\u2581+$/.test(p) ? -1e9 : -(i - 259);
  }
  return s;
}

/**
 * convert_hf_to_gguf.py's SentencePiece path (`_set_vocab_sentencepiece`) for a Llama-2 style
 * tokenizer folder, with the scores recovered from the merges.
 */
export function spmMetadataFromHf(dir: string): PlainMetadata {
  const tj = readJson(join(dir, 'tokenizer.json'));
  const tc = readJson(join(dir, 'tokenizer_config.json'));
  const vocab = tj.model.vocab as Record<string, number>;
  const n = Object.keys(vocab).length;
  const tokens: string[] = new Array(n);
  for (const [p, i] of Object.entries(vocab)) tokens[i] = p;
  const scores = recoveredSpmScores(tokens);
  const unk = tj.model.unk_token as string;
  const control = new Set(
    (tj.added_tokens as any[]).filter((a) => a.special && a.content !== unk).map((a) => a.content),
  );
  const types = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const p = tokens[i]!;
    types[i] = p === unk ? UNKNOWN : control.has(p) ? CONTROL : /^<0x[0-9A-F]{2}>$/.test(p) ? BYTE : NORMAL;
  }
  for (const [sid, data] of Object.entries(tc.added_tokens_decoder ?? {}) as [string, any][]) {
    const i = Number(sid);
    if (i >= n || types[i] === UNUSED) continue;
    types[i] = data.special ? CONTROL : USER_DEFINED;
    scores[i] = -1000;
    tokens[i] = data.content;
  }
  const meta: PlainMetadata = new Map();
  llamaHparams(meta, tc.model_max_length ?? 2048);
  meta.set('tokenizer.ggml.model', 'llama');
  meta.set('tokenizer.ggml.pre', 'default');
  meta.set('tokenizer.ggml.tokens', tokens);
  meta.set('tokenizer.ggml.scores', scores);
  meta.set('tokenizer.ggml.token_type', types);
  specialVocab(meta, tj, tc, n);
  return meta;
}

/**
 * sha256 per key, as make_tokenizer_goldens.py's metadata_digest computes it over the GGUF it
 * wrote: strings as UTF-8, integers and booleans as text, string arrays as UTF-8 + NUL per
 * item, integer arrays as int32 LE, float arrays as float32 LE.
 */
export function metadataDigest(meta: ReadonlyMap<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const value = (key: string): unknown => {
    let v: any = meta.get(key);
    if (v && typeof v === 'object' && 'type' in v && 'value' in v) v = v.value;
    if (v && typeof v === 'object' && 'itemType' in v && 'items' in v) v = v.items;
    return v;
  };
  const arch = value('general.architecture') as string;
  const keys = [...meta.keys()].filter((k) =>
    k.startsWith('tokenizer.') || k === 'general.architecture' || k === `${arch}.context_length`
  );
  for (const key of keys.sort()) {
    const v = value(key);
    const h = createHash('sha256');
    if (typeof v === 'string') h.update(Buffer.from(v, 'utf8'));
    else if (typeof v === 'boolean') h.update(v ? 'true' : 'false');
    else if (typeof v === 'number' || typeof v === 'bigint') h.update(String(v));
    else if (Array.isArray(v)) {
      for (const s of v as string[]) h.update(Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]));
    } else if (v instanceof Float32Array || v instanceof Int32Array)
      h.update(Buffer.from(v.buffer, v.byteOffset, v.byteLength));
    else throw new Error(`cannot digest ${key}`);
    out[key] = h.digest('hex');
  }
  return out;
}

/**
 * Write plain metadata to a GGUF file with lobes' writer (integers as uint32, as the gguf
 * package writes token ids and lengths) and one small F32 tensor.
 */
export function writeMetadataGguf(file: string, meta: PlainMetadata): void {
  const entries: [string, GgufValue][] = [];
  for (const [key, v] of meta) {
    if (typeof v === 'string') entries.push([key, { type: 'string', value: v }]);
    else if (typeof v === 'boolean') entries.push([key, { type: 'bool', value: v }]);
    else if (typeof v === 'number') entries.push([key, { type: 'uint32', value: v }]);
    else if (Array.isArray(v))
      entries.push([key, { type: 'array', value: { itemType: 'string', items: v as string[] } }]);
    else if (v instanceof Int32Array) entries.push([key, { type: 'array', value: { itemType: 'int32', items: v } }]);
    else if (v instanceof Float32Array)
      entries.push([key, { type: 'array', value: { itemType: 'float32', items: v } }]);
    else throw new Error(`cannot write ${key}`);
  }
  writeGguf(file, entries, [{ name: 'output_norm.weight', dims: [8], type: GGML_F32,
    data: new Float32Array(8).fill(1) }]);
}

/** Read a GGUF's metadata with lobes' reader. */
export function readMetadataGguf(file: string): { file: string; metadata: Map<string, GgufValue> } {
  const g = openGguf(file);
  try {
    return { file: g.file, metadata: g.metadata };
  } finally {
    g.close();
  }
}
