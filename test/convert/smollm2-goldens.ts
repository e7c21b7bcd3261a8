/**
 * Hugging Face goldens for the real SmolLM2-135M-Instruct GGUF (test/goldens/
 * make_smollm2_goldens.py): texts, token ids, last-token final.hidden in full, per-layer
 * mlp.in / mlp.down_in as exact norms and 128-dimensional sign sketches, greedy continuations
 * and weight hashes.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './gguf-fixtures.js';

export const SMOL_GOLDENS_DIR = path.join(ROOT, 'test', 'goldens', 'smollm2');

export interface SmolGoldens {
  texts: string[];
  ids: number[][];
  sketch_dim: number;
  config: { layers: number; hidden: number; intermediate: number; heads: number; kv_heads: number; vocab: number };
  greedy: { prompt: string; text: string; ids: number[]; new_ids: number[]; new_text: string; min_margin: number }[];
  weights: Record<string, { shape: number[]; sha256: string }>;
  /** [texts, hidden] */
  final: Float32Array;
  /** [texts, layers, 2] (mlp.in, mlp.down_in) */
  norms: Float32Array;
  /** [texts, layers, 2, sketch_dim] */
  sketches: Float32Array;
}

export function loadSmolGoldens(): SmolGoldens {
  const meta = JSON.parse(readFileSync(path.join(SMOL_GOLDENS_DIR, 'goldens.json'), 'utf8'));
  const raw = readFileSync(path.join(SMOL_GOLDENS_DIR, 'goldens.bin'));
  const all = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  const T = meta.texts.length;
  const L = meta.config.layers;
  const nf = T * meta.config.hidden;
  const nn = T * L * 2;
  return { ...meta, final: all.subarray(0, nf), norms: all.subarray(nf, nf + nn),
    sketches: all.subarray(nf + nn, nf + nn + nn * meta.sketch_dim) };
}

/** The sign of S[k, j] (S = sign / sqrt(K)): the integer hash of make_smollm2_goldens.py's sign_matrix. */
export function sketchSign(k: number, j: number): number {
  let h = (Math.imul(j, 2654435761 | 0) + Math.imul(k, 40503) + 12345) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  h = Math.imul(h, 0x045d9f3b) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return h & 1 ? -1 : 1;
}

/** S v for a vector v (float64). */
export function sketch(v: ArrayLike<number>, K: number): Float64Array {
  const out = new Float64Array(K);
  const scale = 1 / Math.sqrt(K);
  for (let k = 0; k < K; k++) {
    let acc = 0;
    for (let j = 0; j < v.length; j++) acc += sketchSign(k, j) * v[j]!;
    out[k] = acc * scale;
  }
  return out;
}
