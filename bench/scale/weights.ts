/**
 * Seeded random Llama weights at any shape (the 8B shape by default), readable row by row in
 * any order, and the Hugging Face checkpoint (bf16 safetensors, sharded, config.json) written
 * from them. The ONNX exports of bench/scale-8b.ts read the same source, so the checkpoint and
 * the exports hold the same weights: every value is a bfloat16 number (exactly representable in
 * float16 and float32 too), so the bf16 checkpoint and the fp16 export are bit-for-bit the
 * same numbers and the int4 export is their 4-bit quantization.
 *
 * Values: projections and embeddings are close to normal with standard deviation 0.02 (Hugging
 * Face's Llama initializer_range; the sum of four uniform bytes, rounded to bfloat16), so
 * activations stay finite through 32 layers and 4-bit quantization errs as it does on trained
 * weights; norm weights are 1 + N(0, 0.05²) the same way.
 * Row r of tensor t draws from its own xoshiro128** stream seeded with mix(seed, t, r), so any
 * row can be produced alone.
 */
import { existsSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { bf16ArrayToFloat } from '../../src/util/half.js';
import type { StTensorSpec } from '../../src/formats/safetensors.js';
import { writeShardedSafetensors, type ShardedWriteResult } from '../../src/formats/safetensors-shards.js';
import type { LlamaSpec } from '../../src/convert/llama-onnx/index.js';

/** Shape and hyper-parameters of a Llama model: the writer's own LlamaSpec. */
export type ScaleSpec = LlamaSpec;

/** Llama-3.1-8B's shape and hyper-parameters (its config.json). */
export const LLAMA_31_8B: ScaleSpec = {
  layers: 32,
  hidden: 4096,
  intermediate: 14336,
  heads: 32,
  kvHeads: 8,
  headDim: 128,
  vocab: 128256,
  rmsNormEps: 1e-5,
  ropeTheta: 500000,
  ropeScaling: { rope_type: 'llama3', factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0,
    original_max_position_embeddings: 8192 },
  maxPositions: 131072,
  tiedEmbeddings: false,
  bosTokenId: 128000,
  eosTokenId: 128001,
  padTokenId: null,
};

/** Hugging Face tensor names and shapes, in LlamaForCausalLM's state_dict order. */
export function llamaTensors(s: ScaleSpec): { name: string; shape: number[] }[] {
  const out: { name: string; shape: number[] }[] = [{ name: 'model.embed_tokens.weight', shape: [s.vocab, s.hidden] }];
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}.`;
    out.push(
      { name: `${p}self_attn.q_proj.weight`, shape: [q, s.hidden] },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, s.hidden] },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, s.hidden] },
      { name: `${p}self_attn.o_proj.weight`, shape: [s.hidden, q] },
      { name: `${p}mlp.gate_proj.weight`, shape: [s.intermediate, s.hidden] },
      { name: `${p}mlp.up_proj.weight`, shape: [s.intermediate, s.hidden] },
      { name: `${p}mlp.down_proj.weight`, shape: [s.hidden, s.intermediate] },
      { name: `${p}input_layernorm.weight`, shape: [s.hidden] },
      { name: `${p}post_attention_layernorm.weight`, shape: [s.hidden] },
    );
  }
  out.push({ name: 'model.norm.weight', shape: [s.hidden] });
  if (!s.tiedEmbeddings) out.push({ name: 'lm_head.weight', shape: [s.vocab, s.hidden] });
  return out;
}

/** Standard deviation of projection and embedding weights (Hugging Face's Llama initializer_range). */
export const STD = 0.02;
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** Seeded weights of a Llama model (the writer's LlamaWeightSource interface). */
export class SeededLlamaWeights {
  private readonly shapes = new Map<string, number[]>();
  private readonly ids = new Map<string, number>();

  constructor(
    readonly spec: ScaleSpec,
    readonly seed = 8,
  ) {
    llamaTensors(spec).forEach((t, i) => {
      this.shapes.set(t.name, t.shape);
      this.ids.set(t.name, i);
    });
  }

  /** All tensors, in state_dict order. */
  tensors(): { name: string; shape: number[] }[] {
    return llamaTensors(this.spec);
  }

  /** [rows, cols] of a weight ([n] for norms). */
  shape(name: string): number[] {
    const s = this.shapes.get(name);
    if (!s) throw new Error(`no weight ${JSON.stringify(name)} in a ${this.spec.layers}-layer Llama`);
    return s;
  }

  /** Rows [r0, r1) as bfloat16 bit patterns, row-major (a 1-D weight is one row). */
  bf16Rows(name: string, r0: number, r1: number, out?: Uint16Array): Uint16Array {
    const shape = this.shape(name);
    const id = this.ids.get(name)!;
    const cols = shape.length === 1 ? shape[0]! : shape[1]!;
    const rows = shape.length === 1 ? 1 : shape[0]!;
    if (r0 < 0 || r1 > rows || r0 > r1)
      throw new Error(`rows [${r0}, ${r1}) out of range for ${name} with ${rows} rows`);
    const n = (r1 - r0) * cols;
    const dst = out && out.length >= n ? out.subarray(0, n) : new Uint16Array(n);
    const norm = shape.length === 1;
    for (let r = r0; r < r1; r++) {
      // xoshiro128** seeded through splitmix32 (as src/util/rng.ts), inlined: 8 billion values per model
      let x = (this.seed ^ Math.imul(id + 1, 0x9e3779b1) ^ Math.imul(r + 1, 0x85ebca77)) >>> 0;
      const st = [0, 0, 0, 0];
      for (let k = 0; k < 4; k++) {
        x = (x + 0x9e3779b9) >>> 0;
        let z = x;
        z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
        z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
        st[k] = (z ^ (z >>> 16)) >>> 0;
      }
      let s0 = st[0]! | 1, s1 = st[1]!, s2 = st[2]!, s3 = st[3]!;
      const o = (r - r0) * cols;
      for (let j = 0; j < cols; j++) {
        const m5 = Math.imul(s1, 5);
        const u = Math.imul((m5 << 7) | (m5 >>> 25), 9) >>> 0;
        const t = s1 << 9;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = (s3 << 11) | (s3 >>> 21);
        // Irwin–Hall: the sum of the four bytes of u is close to normal (mean 510, sd 147.8)
        const sum = (u & 255) + ((u >>> 8) & 255) + ((u >>> 16) & 255) + (u >>> 24);
        F32[0] = norm ? 1 + (sum - 510) * (0.05 / 147.8) : (sum - 510) * (STD / 147.8);
        const b = U32[0]!;
        dst[o + j] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff; // round to nearest even
      }
    }
    return dst;
  }

  /**
   * Rows [r0, r1) as float32 (the bfloat16 values exactly), row-major; for a 1-D weight [n],
   * elements [r0, r1) (the writer's convention: n rows of one value).
   */
  rows(name: string, r0: number, r1: number): Float32Array {
    if (this.shape(name).length === 1) return bf16ArrayToFloat(this.bf16Rows(name, 0, 1)).slice(r0, r1);
    return bf16ArrayToFloat(this.bf16Rows(name, r0, r1));
  }
}

/** Hugging Face config.json of a LlamaForCausalLM with this spec. */
export function hfConfig(s: ScaleSpec, dtype = 'bfloat16'): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: s.hidden,
    intermediate_size: s.intermediate,
    num_hidden_layers: s.layers,
    num_attention_heads: s.heads,
    num_key_value_heads: s.kvHeads,
    head_dim: s.headDim,
    vocab_size: s.vocab,
    rms_norm_eps: s.rmsNormEps,
    rope_theta: s.ropeTheta,
    rope_scaling: s.ropeScaling,
    max_position_embeddings: s.maxPositions,
    tie_word_embeddings: s.tiedEmbeddings,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    bos_token_id: s.bosTokenId ?? null,
    eos_token_id: s.eosTokenId ?? null,
    pad_token_id: s.padTokenId ?? null,
    torch_dtype: dtype,
  };
}

/** Rows per piece when streaming a tensor: about `bytes` per piece. */
export function rowsPerPiece(cols: number, bytesPerValue: number, bytes = 32 << 20): number {
  return Math.max(1, Math.floor(bytes / (cols * bytesPerValue)));
}

/**
 * Write the bf16 Hugging Face checkpoint of `w` into `dir` (sharded at 5 GB like the published
 * Llama checkpoints, model.safetensors.index.json, config.json). Memory: one 32 MB piece.
 */
export async function writeCheckpoint(dir: string, w: SeededLlamaWeights,
  onProgress?: (done: number, total: number) => void): Promise<ShardedWriteResult>
{
  const specs: StTensorSpec[] = w.tensors().map((t) => ({ name: t.name, dtype: 'BF16', shape: t.shape }));
  const buf = new Uint16Array(16 << 20);
  const res = await writeShardedSafetensors(
    dir,
    specs,
    (t, write) => {
      const rows = t.shape.length === 1 ? 1 : t.shape[0]!;
      const cols = t.shape.length === 1 ? t.shape[0]! : t.shape[1]!;
      const per = rowsPerPiece(cols, 2);
      for (let r = 0; r < rows; r += per) write(w.bf16Rows(t.name, r, Math.min(rows, r + per), buf));
    },
    { metadata: { format: 'pt' }, onProgress },
  );
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(hfConfig(w.spec), null, 2) + '\n');
  return res;
}

/** Is `dir` a complete checkpoint written by writeCheckpoint? */
export function checkpointReady(dir: string): boolean {
  return existsSync(path.join(dir, 'config.json')) &&
    (existsSync(path.join(dir, 'model.safetensors.index.json')) || existsSync(path.join(dir, 'model.safetensors')));
}
