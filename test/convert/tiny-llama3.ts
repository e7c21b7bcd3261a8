/**
 * The tiny Llama-3.1-shaped GGUF made by test/goldens/make_gguf_llama3_tiny.py (llama.cpp's
 * Q/K row permutation, rope_freqs for llama3 scaling, ten GGML block types) and its Hugging
 * Face goldens, and small helpers the conversion tests share.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './gguf-fixtures.js';

export const TINY_DIR = path.join(ROOT, 'test', 'goldens', 'gguf-llama3-tiny');
export const TINY_GGUF = path.join(TINY_DIR, 'tiny-llama3.gguf');

export interface TinyGoldens {
  config: { layers: number; hidden: number; intermediate: number; heads: number; kv_heads: number; head_dim: number;
    vocab: number; rope_theta: number; rope_scaling: Record<string, unknown>; tied: boolean };
  types: Record<string, string>;
  rope_freqs: number[];
  sequences: number[][];
  hooks: string[];
  dims: number[];
  /** goldens[s].get(hook) = float32 vector of sequence s. */
  vectors: Map<string, Float32Array>[];
}

export function loadTinyGoldens(): TinyGoldens {
  const meta = JSON.parse(readFileSync(path.join(TINY_DIR, 'goldens.json'), 'utf8'));
  const raw = readFileSync(path.join(TINY_DIR, 'goldens.bin'));
  const all = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  const total = (meta.dims as number[]).reduce((a, b) => a + b, 0);
  const vectors = (meta.sequences as number[][]).map((_, s) => {
    const m = new Map<string, Float32Array>();
    let off = s * total;
    (meta.hooks as string[]).forEach((h, k) => {
      m.set(h, all.subarray(off, off + meta.dims[k]));
      off += meta.dims[k];
    });
    return m;
  });
  return { ...meta, vectors };
}

/** ‖a − b‖ / ‖b‖ in float64. */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

/** Token sequences as a right-padded batch for a capture engine. */
export function batchOf(seqs: number[][],
  pad = 0): { inputIds: BigInt64Array; attentionMask: BigInt64Array; batch: number; seq: number; lastIndex: Int32Array }
{
  const seq = Math.max(...seqs.map((s) => s.length));
  const inputIds = new BigInt64Array(seqs.length * seq).fill(BigInt(pad));
  const attentionMask = new BigInt64Array(seqs.length * seq);
  seqs.forEach((s, r) => {
    s.forEach((t, j) => {
      inputIds[r * seq + j] = BigInt(t);
      attentionMask[r * seq + j] = 1n;
    });
  });
  return { inputIds, attentionMask, batch: seqs.length, seq, lastIndex: Int32Array.from(seqs, (s) => s.length - 1) };
}
