/**
 * GGUF → ONNX model folder: a llama GGUF (src/convert/gguf-llama.ts) streamed through the
 * project's Llama graph writer (src/convert/llama-onnx), with tokenizer.json /
 * tokenizer_config.json built from the GGUF metadata (src/convert/tokenizer.ts), config.json,
 * and lobes-convert.json recording where the folder came from.
 *
 *   const r = await convertGguf('SmolLM2-135M-Instruct.Q4_1.gguf', 'smollm2-onnx', { weights: 'q4' });
 *
 * Everything that can be checked is checked before the first byte is written (architecture,
 * hyperparameters, tensor names, shapes and types, tokenizer metadata); the folder is then
 * built in a temporary sibling and renamed into place, so an interrupted or failed conversion
 * leaves nothing behind. Memory is one row chunk of one tensor, or one quantized weight in
 * MatMulNBits form (--weights q4), never the model.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, opt } from '../util/errors.js';
import { readExactly } from '../util/io.js';
import { LOBES_VERSION } from '../version.js';
import { NBITS_MAPPING } from '../formats/ggml-nbits.js';
import { writeLlamaOnnx, WRITER_VERSION, type LlamaLayout, type LlamaSpec } from './llama-onnx/index.js';
import { openGgufLlama, type GgufLlama } from './gguf-llama.js';
import { tokenizerFilesFromGguf } from './tokenizer.js';
import { checkFilesUnchanged, checkForceTarget, checkSourceUnchanged, filesSnapshot, sourceSnapshot } from './guard.js';
import { hfHeaderSha256, hfTokenizerFiles, openHfCheckpoint, type HfCheckpoint } from './hf-checkpoint.js';

/**
 * Bump when a converted folder would differ for the same GGUF and options (cache entries are
 * keyed by it). 2: the explicit layout keeps a quantized lm_head's blocks as MatMulNBits.
 * 3: --weights auto stores a BF16 checkpoint's matrices as bf16 (was fp32).
 */
export const CONVERTER_VERSION = '3';

/**
 * --weights: how projection weights are stored; 'auto' picks the smallest exact storage (see
 * `chooseWeights`, `chooseCheckpointWeights`). 'bf16' (a BF16 checkpoint only) keeps the
 * bfloat16 bits of every matrix, read through a Cast to fp32.
 */
export type WeightsMode = 'auto' | 'q4' | 'fp16' | 'fp32' | 'bf16';

/** A resolved weight storage (WeightsMode without auto). */
export type WeightsStorage = Exclude<WeightsMode, 'auto'>;

export interface ConvertOptions {
  /** Compute dtype of the graph (default fp32). */
  dtype?: 'fp32' | 'fp16';
  /** Projection weight storage (default auto). */
  weights?: WeightsMode;
  /** Graph layout (default explicit: what lobes' captures read directly). */
  layout?: LlamaLayout;
  /** Replace a non-empty output folder. */
  overwrite?: boolean;
  /** Called as model.onnx.data grows: bytes written, planned total, current tensor. */
  onProgress?: (doneBytes: number, totalBytes: number, tensor: string) => void;
}

/** Which GGUF a folder was converted from: enough to tell whether it still is that file. */
export interface GgufIdentity {
  /** Absolute path of the GGUF. */
  path: string;
  size: number;
  mtimeMs: number;
  /** sha256 of the header, metadata and tensor infos (every byte before the data section). */
  headerSha256: string;
}

/** What `convertGguf` did. */
export interface ConvertResult {
  dir: string;
  /** The GGUF converted (absent for a Hugging Face checkpoint). */
  gguf?: GgufIdentity;
  /** The Hugging Face checkpoint converted (absent for a GGUF). */
  checkpoint?: HfIdentity;
  spec: LlamaSpec;
  /** Options as used (auto resolved). */
  options: { dtype: 'fp32' | 'fp16'; weights: WeightsStorage; layout: LlamaLayout };
  /** Why `weights` was chosen when --weights was auto, else null. */
  weightsReason: string | null;
  /** How each weight was stored, counted: exact MatMulNBits blocks, re-quantized, float. */
  storage: Record<string, number>;
  /** Projections quantized by the writer from float rows (not exact; empty when every weight mapped). */
  requantized: string[];
  modelBytes: number;
  dataBytes: number;
  seconds: number;
  /** The writer's phases in seconds: streaming the weights (fsync included), the fsync alone, encoding the graph, all. */
  phases?: { weights: number; sync: number; graph: number; total: number };
}

/** Which Hugging Face checkpoint a folder was converted from: enough to tell whether it still is that checkpoint. */
export interface HfIdentity {
  /** Absolute path of the checkpoint folder. */
  path: string;
  family: string;
  /** Bytes of the files read, all together. */
  size: number;
  /** Latest modification time among them. */
  mtimeMs: number;
  /** sha256 of config.json, the index, every shard's header and the tokenizer files (hfHeaderSha256). */
  headerSha256: string;
  /** The files read (names relative to the folder) with their sizes. */
  files: { name: string; bytes: number; role: string }[];
}

/** Identity of an opened checkpoint (reads config, index, shard headers and tokenizer files). */
export function hfIdentity(ck: HfCheckpoint): HfIdentity {
  let mtimeMs = 0;
  for (const f of ck.files) mtimeMs = Math.max(mtimeMs, statSync(f.path).mtimeMs);
  return {
    path: ck.dir,
    family: ck.family,
    size: ck.files.reduce((a, f) => a + f.bytes, 0),
    mtimeMs,
    headerSha256: hfHeaderSha256(ck),
    files: ck.files.map((f) => ({ name: f.name, bytes: f.bytes, role: f.role })),
  };
}

/** The provenance file written into every converted folder. */
export const CONVERT_RECORD = 'lobes-convert.json';

/**
 * sha256 of every byte before the data section: header, metadata and tensor infos. Together
 * with size and mtime it identifies a GGUF without reading its gigabytes of weights.
 */
export function ggufIdentity(file: string, dataStart: number): GgufIdentity {
  const abs = path.resolve(file);
  const st = statSync(abs);
  const h = createHash('sha256');
  const fd = openSync(abs, 'r');
  try {
    const buf = Buffer.alloc(1 << 20);
    for (let pos = 0; pos < dataStart;) {
      const n = Math.min(buf.length, dataStart - pos);
      readExactly(fd, buf.subarray(0, n), pos, abs);
      h.update(buf.subarray(0, n));
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
  return { path: abs, size: st.size, mtimeMs: st.mtimeMs, headerSha256: h.digest('hex') };
}

const PROJECTION = /(_proj|lm_head)\.weight$/;

/**
 * Resolve --weights auto: the smallest storage that keeps every projection weight exact.
 * q4 when each projection's GGML type has a MatMulNBits form (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q2_K…Q6_K): the blocks are kept, except 8-bit blocks with a min (Q5_1, Q5_K), which ONNX
 * Runtime cannot run and the writer expands to float exactly; fp16 when each is F16; otherwise
 * fp32 (F32 and BF16 weights, or a mix of float and quantized types), which an fp16 graph
 * cannot take, so it gets fp16 (rounded).
 */
export function chooseWeights(model: GgufLlama,
  dtype: 'fp32' | 'fp16'): { weights: 'q4' | 'fp16' | 'fp32'; reason: string }
{
  const types = new Map<string, number>();
  for (const m of model.mapped)
    if (m.shape.length === 2 && PROJECTION.test(m.name))
      types.set(m.tensor.typeName, (types.get(m.tensor.typeName) ?? 0) + 1);
  const list = [...types.keys()].sort().join(', ');
  const allBlocks = [...types.keys()].every((t) => NBITS_MAPPING[t]);
  if (allBlocks && model.spec.modelType === 'phi3') {
    // The parts of phi3's fused attn_qkv / ffn_up are row ranges whose blocks are not carried over.
    return { weights: dtype === 'fp16' ? 'fp16' : 'fp32',
      reason: `projections are ${list}; phi3's fused qkv and gate/up weights are split by rows and dequantized (${
        dtype === 'fp16' ? 'rounded to fp16' : 'fp32 holds every one exactly'
      })` };
  }
  if (allBlocks) return { weights: 'q4', reason: `every projection is ${list}, which MatMulNBits holds exactly` };
  if ([...types.keys()].every((t) => t === 'F16')) return { weights: 'fp16', reason: 'every projection is F16' };
  if (dtype === 'fp16')
    return { weights: 'fp16', reason: `projections are ${list}; an fp16 graph stores them as fp16 (rounded)` };
  return { weights: 'fp32', reason: `projections are ${list}; fp32 holds every one exactly` };
}

/** Validate and fill in the options (usage errors name the flag). */
export function resolveConvertOptions(
  opts: ConvertOptions,
): { dtype: 'fp32' | 'fp16'; weights: WeightsMode; layout: LlamaLayout } {
  const dtype = opts.dtype ?? 'fp32';
  const weights = opts.weights ?? 'auto';
  const layout = opts.layout ?? 'explicit';
  if (dtype !== 'fp32' && dtype !== 'fp16')
    throw new UsageError(`${opt('dtype')} must be fp32 or fp16, got ${JSON.stringify(dtype)}`);
  if (!['auto', 'q4', 'fp16', 'fp32', 'bf16'].includes(weights))
    throw new UsageError(`${opt('weights')} must be auto, q4, fp16, fp32 or bf16, got ${JSON.stringify(weights)}`);
  if (layout !== 'explicit' && layout !== 'genai')
    throw new UsageError(`${opt('layout')} must be explicit or genai, got ${JSON.stringify(layout)}`);
  if (dtype === 'fp16' && (weights === 'fp32' || weights === 'bf16'))
    throw new UsageError(
      `${opt('weights', weights)} needs ${opt('dtype', 'fp32')} (an fp16 graph would cast them down at every run)`,
      `use ${opt('weights', 'fp16')} or q4 with ${opt('dtype', 'fp16')}`,
    );
  return { dtype, weights, layout };
}

/**
 * Convert a llama GGUF into an ONNX model folder `out` (model.onnx, model.onnx.data,
 * config.json, generation_config.json, tokenizer files, lobes-convert.json; genai_config.json
 * for the genai layout). Throws a one-line LobesError for anything it cannot convert, before
 * writing anything; the folder appears only when complete.
 */
export async function convertGguf(file: string, out: string, opts: ConvertOptions = {}): Promise<ConvertResult> {
  const t0 = performance.now();
  const o = resolveConvertOptions(opts);
  if (o.weights === 'bf16')
    throw new UsageError(
      `${opt('weights', 'bf16')} is for a Hugging Face BF16 checkpoint; a GGUF converts with auto, q4, fp16 or fp32`,
      `use ${opt('weights', 'auto')} (the smallest exact storage)`,
    );
  const model = openGgufLlama(file);
  try {
    if (opts.overwrite) checkForceTarget(path.resolve(out), file, CONVERT_RECORD);
    // Taken before the first weight is read, compared when the folder is complete (./guard.ts).
    const before = sourceSnapshot(file, model.gguf.dataStart);
    const tok = tokenizerFilesFromGguf(model.gguf.metadata, file);
    const chosen = o.weights === 'auto' ? chooseWeights(model, o.dtype) : null;
    const weights = chosen?.weights ?? (o.weights as 'q4' | 'fp16' | 'fp32');
    const identity = ggufIdentity(file, model.gguf.dataStart);
    const options = { dtype: o.dtype, weights, layout: o.layout };
    const record = convertRecord({ ...identity, format: 'gguf', version: model.gguf.version,
      tensors: model.gguf.tensors.length }, { ...options, weightsRequested: o.weights }, chosen?.reason ?? null,
      tok.family);
    const res = await writeLlamaOnnx(out, model.spec, model.weights, {
      layout: o.layout,
      dtype: o.dtype,
      weights,
      overwrite: !!opts.overwrite,
      onProgress: opts.onProgress,
      beforeCommit: () => checkSourceUnchanged(file, model.gguf.dataStart, before),
      extraFiles: {
        'tokenizer.json': JSON.stringify(tok.tokenizerJson),
        'tokenizer_config.json': JSON.stringify(tok.tokenizerConfigJson, null, 2) + '\n',
        'special_tokens_map.json': JSON.stringify(tok.specialTokensMap, null, 2) + '\n',
        [CONVERT_RECORD]: JSON.stringify(record, null, 2) + '\n',
      },
    });
    return { gguf: identity, spec: model.spec, options, weightsReason: chosen?.reason ?? null, ...written(res, t0) };
  } finally {
    model.close();
  }
}

/**
 * Hugging Face float weights kept as they are: fp16 when every weight is F16; bf16 (an fp32
 * graph) when every matrix (projections, embeddings, lm_head) is BF16: the same bits in half
 * the bytes of fp32, cast to fp32 in the graph; otherwise fp32 (exact for F32, F16 and BF16).
 */
export function chooseCheckpointWeights(ck: HfCheckpoint,
  dtype: 'fp32' | 'fp16'): { weights: 'fp16' | 'fp32' | 'bf16'; reason: string }
{
  const list = Object.keys(ck.dtypes).sort().join(', ');
  if (list === 'F16') return { weights: 'fp16', reason: 'every weight is F16' };
  if (dtype === 'fp16')
    return { weights: 'fp16', reason: `weights are ${list}; an fp16 graph stores them as fp16 (rounded)` };
  if (bf16Refusal(ck) === null) {
    const norms = list === 'BF16' ? '' : ` (the norms, ${list}, as fp32)`;
    return { weights: 'bf16',
      reason:
        `every matrix is BF16; bf16 storage keeps their bits exactly in half the bytes of fp32, cast to fp32 in the graph${norms}` };
  }
  return { weights: 'fp32', reason: `weights are ${list}; fp32 holds every one exactly` };
}

/** Why --weights bf16 would round a checkpoint's matrices (null: every 2-D weight is BF16, so it keeps them exactly). */
export function bf16Refusal(ck: HfCheckpoint): string | null {
  const other = Object.keys(ck.matrixDtypes).filter((d) => d !== 'BF16').sort();
  if (!other.length) return null;
  return `${opt('weights', 'bf16')} keeps BF16 weights bit for bit, but ${
    other.map((d) => `${ck.matrixDtypes[d]} ${d}`).join(' and ')
  } of the matrices of ${ck.dir} would be rounded`;
}

/**
 * Convert a Hugging Face checkpoint folder (src/convert/hf-checkpoint.ts) into an ONNX model
 * folder `out`, as convertGguf does for a GGUF: everything checked before the first byte is
 * written, the weights streamed a row chunk of one tensor at a time, the tokenizer files carried
 * over, lobes-convert.json recording the checkpoint's files, and the folder renamed into place
 * complete. A checkpoint file that changes while it is read abandons the folder.
 */
export async function convertHfCheckpoint(dir: string, out: string, opts: ConvertOptions = {}): Promise<ConvertResult> {
  const t0 = performance.now();
  const o = resolveConvertOptions(opts);
  const ck = openHfCheckpoint(dir);
  if (opts.overwrite) checkForceTarget(path.resolve(out), ck.dir, CONVERT_RECORD);
  const before = filesSnapshot(ck.files.map((f) => f.path));
  const chosen = o.weights === 'auto' ? chooseCheckpointWeights(ck, o.dtype) : null;
  const weights = chosen?.weights ?? (o.weights as WeightsStorage);
  if (weights === 'bf16') {
    const why = bf16Refusal(ck);
    if (why) {
      ck.weights.close();
      throw new UsageError(why, `use ${opt('weights', 'fp32')} (exact for every float dtype) or auto`);
    }
  }
  const identity = hfIdentity(ck);
  const options = { dtype: o.dtype, weights, layout: o.layout };
  const record = convertRecord({ ...identity, format: 'hf-checkpoint', dtypes: ck.dtypes }, { ...options,
    weightsRequested: o.weights }, chosen?.reason ?? null, 'tokenizer.json');
  let res;
  try {
    res = await writeLlamaOnnx(out, ck.spec, ck.weights, {
      layout: o.layout,
      dtype: o.dtype,
      weights,
      overwrite: !!opts.overwrite,
      onProgress: opts.onProgress,
      beforeCommit: () => checkFilesUnchanged(before, 'checkpoint file'),
      extraFiles: { ...hfTokenizerFiles(ck), [CONVERT_RECORD]: JSON.stringify(record, null, 2) + '\n' },
    });
  } finally {
    ck.weights.close();
  }
  return { checkpoint: identity, spec: ck.spec, options, weightsReason: chosen?.reason ?? null, ...written(res, t0),
    phases: res.seconds };
}

/** What a conversion wrote: its folder, the count of tensors per storage, the re-quantized ones, sizes and time since `t0`. */
function written(res: { dir: string; storage: Record<string, string>; modelBytes: number; dataBytes: number },
  t0: number)
{
  const storage: Record<string, number> = {};
  const requantized: string[] = [];
  for (const [name, how] of Object.entries(res.storage)) {
    storage[how] = (storage[how] ?? 0) + 1;
    if (how.endsWith(':rows')) requantized.push(name);
  }
  return { dir: res.dir, storage, requantized, modelBytes: res.modelBytes, dataBytes: res.dataBytes,
    seconds: (performance.now() - t0) / 1000 };
}

/** The CONVERT_RECORD a converted folder carries: versions, time, the source, the options and why the weights were chosen. */
function convertRecord(source: Record<string, unknown>, options: Record<string, unknown>, weightsReason: string | null,
  tokenizer: string)
{
  return {
    format: 'lobes-convert',
    converterVersion: CONVERTER_VERSION,
    writerVersion: WRITER_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date().toISOString(),
    source,
    options,
    weightsReason,
    tokenizer,
  };
}
