/**
 * A Hugging Face checkpoint folder (config.json, model.safetensors or shards with
 * model.safetensors.index.json, tokenizer.json and tokenizer_config.json) as a Llama spec and a
 * weight source for the ONNX writer (src/convert/llama-onnx), read one row range of one tensor
 * at a time.
 *
 * Families: llama (LlamaForCausalLM), mistral (a sliding window in every layer, or none), qwen2 (Qwen2 / Qwen2.5:
 * q/k/v biases), qwen3 (per-head q_norm / k_norm, head_dim set on its own), phi3 (Phi-3 /
 * Phi-4(-mini): fused qkv_proj and gate_up_proj split into their parts (src/convert/fused.ts),
 * partial rotary, longrope, a sliding window in every layer or none), gemma / gemma2 /
 * gemma3_text (Gemma 1, 2, 3 text: (1 + w) norms, sqrt(hidden) embeddings, tanh-GELU; 2 and 3
 * with norms after attention and MLP, query_pre_attn_scalar, soft-capping (2), sliding layers
 * by layer_types with their own rope (3), q/k norms (3): LlamaSpec.gemma). Weights in F32, F16
 * or BF16 (decoded to float32 as they are read, or BF16 bits copied as they are for bf16 storage). Every difference lobes' graphs do not express
 * is refused by name, before anything is written: a family outside these (experts, attention
 * sinks, a vision tower, fused weights), an activation other than the family's, biases where
 * the family has none, sliding windows on some layers only (outside Gemma), rope scaling other
 * than linear, llama3, yarn and longrope, a tensor the family does not have.
 *
 * config.json spellings read: rope_theta and rope_scaling at the top level (rope_scaling's kind
 * as `rope_type` or the older `type`), or transformers 5's rope_parameters (rope_theta and the
 * scaling in one object).
 *
 * A sharded checkpoint's index must agree with its files: every shard it names present, every
 * tensor it places in a shard held by that shard, every tensor of those shards placed by it, and
 * its metadata.total_size (when given) the sum of the tensors' bytes; otherwise one line says
 * which tensor or shard disagrees.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { ModelError } from '../util/errors.js';
import { RangeFile, readFileRange } from '../util/io.js';
import { bf16ArrayToFloat, halfArrayToFloat } from '../util/half.js';
import { DTYPE_BYTES, readSafetensorsHeader, type StHeader } from '../formats/safetensors.js';
import { expectedWeights, type LlamaSpec, type LlamaWeightSource } from './llama-onnx/index.js';
import { phi3FusedWeights, phi3Parts, SplitWeightSource } from './fused.js';
import type { HfFamily } from './hf-config.js';
import { hfSpec } from './hf-spec.js';
export { hfRope, HF_FAMILIES, type HfFamily } from './hf-config.js';

export const HF_CONFIG = 'config.json';
export const HF_INDEX = 'model.safetensors.index.json';
export const HF_SINGLE = 'model.safetensors';

/** Tokenizer files of a checkpoint carried into the converted folder (tokenizer.json is required). */
export const HF_TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json',
  'chat_template.jinja', 'chat_template.json'];

/** One file of a checkpoint that shapes the converted model's numbers. */
export interface HfFile {
  /** Name relative to the checkpoint folder. */
  name: string;
  path: string;
  bytes: number;
  role: 'config' | 'index' | 'weights' | 'tokenizer';
}

/** A checkpoint opened for conversion. */
export interface HfCheckpoint {
  dir: string;
  family: HfFamily;
  config: Record<string, any>;
  spec: LlamaSpec;
  /** The weights (close() releases the shard held open). */
  weights: LlamaWeightSource & { close(): void };
  /** Every file read: config.json, the index, the shards holding the weights, the tokenizer files. */
  files: HfFile[];
  /** Tensor name → header of the shard holding it. */
  tensors: Map<string, StHeader>;
  /** dtypes of the weights read, counted. */
  dtypes: Record<string, number>;
  /** dtypes of the 2-D weights read (projections, embeddings, lm_head), counted. */
  matrixDtypes: Record<string, number>;
}

/** Whether `p` is a folder holding config.json and safetensors weights (and no ONNX graph). */
export function isHfCheckpoint(p: string): boolean {
  try {
    if (!statSync(p).isDirectory()) return false;
    const names = readdirSync(p);
    if (!names.includes(HF_CONFIG)) return false;
    if (names.some((n) => n.endsWith('.onnx'))) return false;
    return names.includes(HF_INDEX) || names.some((n) => n.endsWith('.safetensors'));
  } catch {
    return false;
  }
}

function readJson(file: string, what: string): any {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new ModelError(`cannot read the ${what} (${e?.code ?? e?.message})`, { file });
  }
  try {
    return JSON.parse(text);
  } catch (e: any) {
    throw new ModelError(`the ${what} is not valid JSON (${e.message})`, { file });
  }
}

/**
 * The shards of a checkpoint and the tensor → shard map, checked for agreement between the
 * index and the files (see the module comment).
 */
export function checkpointTensors(dir: string): { tensors: Map<string, StHeader>; shards: string[]; index: boolean } {
  const indexFile = path.join(dir, HF_INDEX);
  const tensors = new Map<string, StHeader>();
  if (existsSync(indexFile)) {
    const idx = readJson(indexFile, 'safetensors index');
    const map = idx?.weight_map;
    if (!map || typeof map !== 'object' || Array.isArray(map))
      throw new ModelError('has no "weight_map" object', { file: indexFile });
    const headers = new Map<string, StHeader>();
    for (const [name, shard] of Object.entries(map)) {
      if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\') || shard.startsWith('.'))
        throw new ModelError(`places ${name} in ${JSON.stringify(shard)}, which is not a file name in the folder`, {
          file: indexFile,
        });
      if (!headers.has(shard)) {
        const f = path.join(dir, shard);
        if (!existsSync(f))
          throw new ModelError(`names the shard ${shard} (for ${name}), which is not in the folder`, { file: indexFile,
            hint: 'download the missing shard, or the checkpoint again' });
        headers.set(shard, readSafetensorsHeader(f));
      }
      const h = headers.get(shard)!;
      if (!h.tensors.has(name))
        throw new ModelError(`places ${name} in ${shard}, which does not hold it`, { file: indexFile,
          hint: 'the index and the shards are of different checkpoints; download them again' });
      tensors.set(name, h);
    }
    let total = 0;
    for (const [shard, h] of headers) {
      for (const [name, t] of h.tensors) {
        const placed = map[name];
        if (placed !== shard)
          throw new ModelError(
            `${shard} holds ${name}, which the index ${placed === undefined ? 'does not list' : `places in ${placed}`}`,
            { file: indexFile, hint: 'the index and the shards are of different checkpoints; download them again' },
          );
        total += t.byteLength;
      }
    }
    const declared = idx?.metadata?.total_size;
    if (typeof declared === 'number' && declared !== total) {
      throw new ModelError(`metadata.total_size is ${declared} but the shards it names hold ${total} bytes of tensors`,
        { file: indexFile, hint: 'the index and the shards are of different checkpoints; download them again' });
    }
    return { tensors, shards: [...headers.keys()].sort(), index: true };
  }
  const files = readdirSync(dir).filter((n) => n.endsWith('.safetensors')).sort();
  let use: string[];
  if (files.includes(HF_SINGLE)) use = [HF_SINGLE];
  else if (files.length === 1) use = files;
  else if (files.length === 0) throw new ModelError('no .safetensors weights in the folder', { file: dir });
  else
    throw new ModelError(
      `${files.length} .safetensors files (${files.slice(0, 3).join(', ')}${
        files.length > 3 ? ', …' : ''
      }) but no ${HF_INDEX} saying which holds what`,
      { file: dir, hint: 'add the index the checkpoint came with' },
    );
  const h = readSafetensorsHeader(path.join(dir, use[0]!));
  for (const name of h.tensors.keys()) tensors.set(name, h);
  return { tensors, shards: use, index: false };
}

/** Tensors a checkpoint may hold that the converted graph does not need (dropped knowingly). */
const IGNORED = /^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;

/**
 * A weight source over a checkpoint's shards, by Hugging Face name, decoded to float32 a row
 * range at a time. rowsInto reads into one reused byte buffer and decodes into the caller's
 * buffer, so that streaming gigabytes allocates (and page-faults) nothing per chunk; each shard
 * stays open while it is read.
 */
export class SafetensorsWeightSource implements LlamaWeightSource {
  private raw = new Uint8Array(0);
  private open: { file: string; f: RangeFile } | null = null;

  constructor(
    private readonly tensors: Map<string, StHeader>,
    private readonly dir: string,
  ) {}

  private info(name: string) {
    const h = this.tensors.get(name);
    const t = h?.tensors.get(name);
    if (!h || !t) throw new ModelError('weight not found in the checkpoint', { file: this.dir, where: name });
    return { h, t };
  }

  shape(name: string): number[] {
    return [...this.info(name).t.shape];
  }

  rows(name: string, r0: number, r1: number): Float32Array {
    const { t } = this.info(name);
    const cols = t.shape.length === 1 ? 1 : t.shape.slice(1).reduce((a, b) => a * b, 1);
    return this.rowsInto(name, r0, r1, new Float32Array((r1 - r0) * cols));
  }

  rowsInto(name: string, r0: number, r1: number, out: Float32Array): Float32Array {
    const { h, t } = this.info(name);
    const rows = t.shape[0] ?? 1;
    if (!(r0 >= 0 && r1 >= r0 && r1 <= rows))
      throw new ModelError(`rows [${r0}, ${r1}) out of range for ${rows}`, { file: h.file, where: name });
    const rowBytes = rows === 0 ? 0 : t.byteLength / rows;
    const es = DTYPE_BYTES[t.dtype];
    const n = ((r1 - r0) * rowBytes) / es;
    const f = this.openShard(h.file, name);
    const bytes = (r1 - r0) * rowBytes;
    if (this.raw.byteLength < bytes) this.raw = new Uint8Array(new ArrayBuffer(bytes));
    const raw = this.raw.subarray(0, bytes);
    f.readInto(raw, t.offset + r0 * rowBytes);
    const dst = out.subarray(0, n);
    if (t.dtype === 'BF16') bf16ArrayToFloat(new Uint16Array(raw.buffer, 0, n), dst as Float32Array<ArrayBuffer>);
    else if (t.dtype === 'F16') halfArrayToFloat(new Uint16Array(raw.buffer, 0, n), dst as Float32Array<ArrayBuffer>);
    else if (t.dtype === 'F32') dst.set(new Float32Array(raw.buffer, 0, n));
    else
      throw new ModelError(`has dtype ${t.dtype}; lobes reads F32, F16 and BF16 weights`, { file: h.file,
        where: name });
    return dst;
  }

  /** Rows [r0, r1) of a BF16 tensor as its stored bit patterns, read straight into `out` (null for F32 and F16 tensors). */
  bf16RowsInto(name: string, r0: number, r1: number, out: Uint16Array): Uint16Array | null {
    const { h, t } = this.info(name);
    if (t.dtype !== 'BF16') return null;
    const rows = t.shape[0] ?? 1;
    if (!(r0 >= 0 && r1 >= r0 && r1 <= rows))
      throw new ModelError(`rows [${r0}, ${r1}) out of range for ${rows}`, { file: h.file, where: name });
    const rowBytes = rows === 0 ? 0 : t.byteLength / rows;
    const n = ((r1 - r0) * rowBytes) / 2;
    if (out.length < n)
      throw new ModelError(`a buffer of ${out.length} values for ${n}`, { file: h.file, where: name });
    this.openShard(h.file, name).readInto(new Uint8Array(out.buffer, out.byteOffset, n * 2), t.offset + r0 * rowBytes);
    return out.subarray(0, n);
  }

  private openShard(file: string, name: string): RangeFile {
    if (this.open?.file !== file) {
      this.open?.f.close();
      this.open = { file, f: RangeFile.open(file, 'safetensors file', name) };
    }
    return this.open.f;
  }

  /** Close the shard held open. */
  close(): void {
    this.open?.f.close();
    this.open = null;
  }
}

/**
 * Open a checkpoint folder for conversion: config.json → spec (family checked), the shards'
 * headers (index checked against them), every tensor the spec needs present with its shape and
 * a float dtype, no tensor the family does not have, and tokenizer.json present. Nothing beyond
 * the headers is read.
 */
export function openHfCheckpoint(dir: string): HfCheckpoint {
  const abs = path.resolve(dir);
  const cfgFile = path.join(abs, HF_CONFIG);
  if (!existsSync(cfgFile))
    throw new ModelError(`no ${HF_CONFIG}: not a Hugging Face checkpoint folder`, { file: abs });
  const config = readJson(cfgFile, 'model config');
  if (!config || typeof config !== 'object' || Array.isArray(config))
    throw new ModelError('is not a JSON object', { file: cfgFile });
  const { family, spec } = hfSpec(config, cfgFile);
  const { tensors, shards, index } = checkpointTensors(abs);
  // Phi-3: the checkpoint holds qkv_proj and gate_up_proj in place of their parts.
  const want = new Map(expectedWeights(spec));
  if (family === 'phi3') {
    for (const f of phi3FusedWeights(spec)) {
      for (const [part] of f.parts) want.delete(part);
      want.set(f.fused, [f.parts.reduce((a, [, r]) => a + r, 0), f.cols]);
    }
  }
  const dtypes: Record<string, number> = {};
  const matrixDtypes: Record<string, number> = {};
  for (const [name, h] of tensors) {
    const t = h.tensors.get(name)!;
    const where = `tensor ${JSON.stringify(name)}`;
    const file = h.file;
    if (!want.has(name)) {
      if (IGNORED.test(name) || (name === 'lm_head.weight' && spec.tiedEmbeddings)) continue;
      const why = /\.bias$/.test(name)
        ? `a bias ${family} does not have`
        : /experts|router|gate\.weight$/.test(name)
        ? 'an expert or router weight (mixture of experts)'
        : `not part of the ${family} architecture lobes converts`;
      throw new ModelError(`is ${why}; converting without it would change the numbers`, { file, where });
    }
    const shape = want.get(name)!;
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new ModelError(`has shape [${t.shape.join(', ')}] but config.json implies [${shape.join(', ')}]`, { file,
        where });
    }
    if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16')
      throw new ModelError(`has dtype ${t.dtype}; lobes reads F32, F16 and BF16 weights`, { file, where,
        hint: 'quantized checkpoints (GPTQ, AWQ, bitsandbytes) are not read; use the original weights' });
    dtypes[t.dtype] = (dtypes[t.dtype] ?? 0) + 1;
    if (t.shape.length === 2) matrixDtypes[t.dtype] = (matrixDtypes[t.dtype] ?? 0) + 1;
  }
  for (const name of want.keys()) {
    if (!tensors.has(name)) {
      const hint = name === 'lm_head.weight'
        ? 'config.json says the embeddings are not tied (tie_word_embeddings false), so lm_head.weight must be there'
        : 'the checkpoint is incomplete or of another configuration';
      throw new ModelError(`weight ${name} is missing from the checkpoint`, { file: abs, hint });
    }
  }
  if (!existsSync(path.join(abs, 'tokenizer.json')))
    throw new ModelError('no tokenizer.json: lobes reads the fast tokenizer file Hugging Face checkpoints carry', {
      file: abs,
      hint: 'save the tokenizer with tokenizer.save_pretrained(DIR) next to the weights',
    });
  const files: HfFile[] = [];
  const add = (name: string, role: HfFile['role']) => {
    const p = path.join(abs, name);
    files.push({ name, path: p, bytes: statSync(p).size, role });
  };
  add(HF_CONFIG, 'config');
  if (index) add(HF_INDEX, 'index');
  for (const s of shards) add(s, 'weights');
  for (const f of HF_TOKENIZER_FILES) if (existsSync(path.join(abs, f))) add(f, 'tokenizer');
  const st = new SafetensorsWeightSource(tensors, abs);
  const weights = family === 'phi3'
    ? Object.assign(new SplitWeightSource(st, phi3Parts(spec)), { close: () => st.close() })
    : st;
  return { dir: abs, family, config, spec, weights, files, tensors, dtypes, matrixDtypes };
}

/**
 * sha256 of every byte before a checkpoint's weights: config.json, the index, each shard's
 * header, and the tokenizer files, by name. Together with the files' sizes and modification
 * times it keys the conversion cache without reading the weights.
 */
export function hfHeaderSha256(ck: HfCheckpoint): string {
  const h = createHash('sha256');
  for (const f of ck.files) {
    h.update(`${f.name}\n${f.bytes}\n`);
    if (f.role === 'weights') {
      const head = readSafetensorsHeader(f.path);
      h.update(readFileRange(f.path, 0, head.dataStart, 'safetensors file'));
    } else h.update(readFileSync(f.path));
  }
  return h.digest('hex');
}

/**
 * The tokenizer files to write into the converted folder: each as it is, except that
 * tokenizer_config.json gains the chat template of chat_template.jinja (transformers 5 saves it
 * there) when it has none of its own, so that every tokenizer reader finds it.
 */
export function hfTokenizerFiles(ck: HfCheckpoint): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of ck.files) if (f.role === 'tokenizer') out[f.name] = readFileSync(f.path, 'utf8');
  const jinja = out['chat_template.jinja'];
  if (jinja !== undefined) {
    const cfg = out['tokenizer_config.json'] !== undefined
      ? readJson(path.join(ck.dir, 'tokenizer_config.json'), 'tokenizer config')
      : {};
    if (cfg.chat_template === undefined) {
      cfg.chat_template = jinja;
      out['tokenizer_config.json'] = JSON.stringify(cfg, null, 2) + '\n';
    }
  }
  return out;
}
