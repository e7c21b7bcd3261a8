/**
 * The GGUF metadata keys lobes reads, in one table with their types, and the one typed reader
 * of them. Every reader of GGUF metadata (convert's hyperparameters and tokenizer, the model
 * consistency check) goes through `GgufMeta`: a value of the wrong type is a one-line
 * LobesError naming the file, the key (`model.gguf: llama.context_length: expected an integer, …`)
 * and the cause.
 *
 * Keys with `{arch}` are per architecture (`llama.context_length`); the reader fills in the
 * file's `general.architecture`. Metadata is given as lobes' GGUF header reader returns it
 * (`{ type, value }`, arrays as `{ itemType, items }`, src/formats/gguf.ts) or as plain values.
 */
import { LobesError } from '../util/errors.js';

/** How a key's value is read: a string, an integer, any number, a bool, an array of strings, an array of numbers. */
export type GgufKeyType = 'string' | 'int' | 'number' | 'bool' | 'strings' | 'numbers';

export interface GgufKey<T extends GgufKeyType = GgufKeyType> {
  key: string;
  type: T;
}

const k = <T extends GgufKeyType>(key: string, type: T): GgufKey<T> => ({ key, type });

/** Every GGUF metadata key lobes reads (llama.cpp's names, gguf-py's `Keys`). */
export const GGUF_KEYS = {
  architecture: k('general.architecture', 'string'),
  contextLength: k('{arch}.context_length', 'int'),
  blockCount: k('{arch}.block_count', 'int'),
  embeddingLength: k('{arch}.embedding_length', 'int'),
  feedForwardLength: k('{arch}.feed_forward_length', 'int'),
  vocabSize: k('{arch}.vocab_size', 'int'),
  expertCount: k('{arch}.expert_count', 'int'),
  headCount: k('{arch}.attention.head_count', 'int'),
  headCountKv: k('{arch}.attention.head_count_kv', 'int'),
  keyLength: k('{arch}.attention.key_length', 'int'),
  valueLength: k('{arch}.attention.value_length', 'int'),
  rmsNormEps: k('{arch}.attention.layer_norm_rms_epsilon', 'number'),
  ropeDimensionCount: k('{arch}.rope.dimension_count', 'int'),
  ropeFreqBase: k('{arch}.rope.freq_base', 'number'),
  ropeScaleLinear: k('{arch}.rope.scale_linear', 'number'),
  ropeScalingType: k('{arch}.rope.scaling.type', 'string'),
  ropeScalingFactor: k('{arch}.rope.scaling.factor', 'number'),
  ropeScalingOriginalContext: k('{arch}.rope.scaling.original_context_length', 'int'),
  tokenizerModel: k('tokenizer.ggml.model', 'string'),
  tokenizerPre: k('tokenizer.ggml.pre', 'string'),
  tokens: k('tokenizer.ggml.tokens', 'strings'),
  tokenType: k('tokenizer.ggml.token_type', 'numbers'),
  scores: k('tokenizer.ggml.scores', 'numbers'),
  merges: k('tokenizer.ggml.merges', 'strings'),
  bosTokenId: k('tokenizer.ggml.bos_token_id', 'int'),
  eosTokenId: k('tokenizer.ggml.eos_token_id', 'int'),
  eotTokenId: k('tokenizer.ggml.eot_token_id', 'int'),
  eomTokenId: k('tokenizer.ggml.eom_token_id', 'int'),
  unknownTokenId: k('tokenizer.ggml.unknown_token_id', 'int'),
  paddingTokenId: k('tokenizer.ggml.padding_token_id', 'int'),
  addBosToken: k('tokenizer.ggml.add_bos_token', 'bool'),
  addEosToken: k('tokenizer.ggml.add_eos_token', 'bool'),
  addSpacePrefix: k('tokenizer.ggml.add_space_prefix', 'bool'),
  chatTemplate: k('tokenizer.chat_template', 'string'),
} as const;

/** The value type a key's type reads as. */
export type GgufKeyValue<T extends GgufKeyType> = T extends 'string' ? string
  : T extends 'int' | 'number' ? number :
  T extends 'bool' ? boolean
  : T extends 'strings' ? string[]
  : ArrayLike<number>;

/** Metadata: key → value, typed as the GGUF header reader gives it or plain. */
export type GgufMetadata = ReadonlyMap<string, unknown>;

/** The plain value of a metadata entry (unwraps `{ type, value }` and `{ itemType, items }`). */
export function plainGgufValue(v: unknown): unknown {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
    const o = v as Record<string, unknown>;
    if ('type' in o && 'value' in o) v = o.value;
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v)) {
    const o = v as Record<string, unknown>;
    if ('itemType' in o && 'items' in o) v = o.items;
  }
  return v;
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (ArrayBuffer.isView(v)) return 'a typed array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  return `${typeof v} ${String(v)}`;
}

/** Typed reads of a GGUF file's metadata; absent keys read as undefined, wrong types throw naming file and key. */
export class GgufMeta {
  /** The file's architecture (`general.architecture`, else llama), filling `{arch}` in keys. */
  readonly arch: string;

  constructor(readonly map: GgufMetadata, readonly file: string) {
    const a = plainGgufValue(map.get(GGUF_KEYS.architecture.key));
    this.arch = typeof a === 'string' ? a : 'llama';
  }

  /** A one-line error about `key` (a key name, or a key with an index: `tokenizer.ggml.merges[3]`): `FILE: KEY: cause`. */
  fail(key: string, cause: string, hint?: string): never {
    throw new LobesError(cause, { file: this.file, where: key, hint });
  }

  /** The key name of a table entry for this file's architecture. */
  key(k: GgufKey): string {
    return k.key.replace('{arch}', this.arch);
  }

  has(key: string | GgufKey): boolean {
    const v = plainGgufValue(this.map.get(typeof key === 'string' ? key : this.key(key)));
    return v !== undefined && v !== null;
  }

  /** A table entry's value, read by its type; undefined when absent. */
  read<T extends GgufKeyType>(k: GgufKey<T>): GgufKeyValue<T> | undefined {
    const key = this.key(k);
    const t: GgufKeyType = k.type;
    const v = t === 'string'
      ? this.str(key)
      : t === 'int'
      ? this.int(key)
      : t === 'number'
      ? this.num(key)
      : t === 'bool'
      ? this.bool(key)
      : t === 'strings'
      ? this.strings(key)
      : this.numbers(key);
    return v as GgufKeyValue<T> | undefined;
  }

  private get(key: string): unknown {
    return plainGgufValue(this.map.get(key));
  }

  str(key: string): string | undefined {
    if (!this.has(key)) return undefined;
    const v = this.get(key);
    if (typeof v !== 'string') this.fail(key, `expected a string, got ${describe(v)}`);
    return v;
  }

  /** An integer (any width; 64-bit values must be below 2^53). */
  int(key: string): number | undefined {
    if (!this.has(key)) return undefined;
    const v = this.get(key);
    if (Array.isArray(v) || ArrayBuffer.isView(v)) this.fail(key, `expected an integer, got ${describe(v)}`);
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof v === 'bigint' && !Number.isSafeInteger(n)) this.fail(key, `${v} is beyond 2^53`);
    if (typeof n !== 'number' || !Number.isSafeInteger(n)) this.fail(key, `expected an integer, got ${describe(v)}`);
    return n;
  }

  /** Any number (integers or floats). */
  num(key: string): number | undefined {
    if (!this.has(key)) return undefined;
    const v = this.get(key);
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint') return this.int(key);
    this.fail(key, `expected a number, got ${describe(v)}`);
  }

  bool(key: string): boolean | undefined {
    if (!this.has(key)) return undefined;
    const v = this.get(key);
    if (typeof v !== 'boolean') this.fail(key, `expected a boolean, got ${describe(v)}`);
    return v;
  }

  strings(key: string): string[] | undefined {
    if (!this.has(key)) return undefined;
    const v = this.get(key);
    if (!Array.isArray(v)) this.fail(key, `expected an array of strings, got ${describe(v)}`);
    for (let i = 0; i < v.length; i++) {
      if (typeof v[i] !== 'string') this.fail(`${key}[${i}]`, `expected a string, got ${describe(v[i])}`);
    }
    return v as string[];
  }

  numbers(key: string): ArrayLike<number> | undefined {
    if (!this.has(key)) return undefined;
    const v = this.get(key);
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
      if (v instanceof BigInt64Array || v instanceof BigUint64Array) return Array.from(v, Number);
      return v as unknown as ArrayLike<number>;
    }
    if (!Array.isArray(v)) this.fail(key, `expected an array of numbers, got ${describe(v)}`);
    const out = new Float64Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = typeof v[i] === 'bigint' ? Number(v[i]) : v[i];
      if (typeof x !== 'number') this.fail(`${key}[${i}]`, `expected a number, got ${describe(v[i])}`);
      out[i] = x;
    }
    return out;
  }
}
