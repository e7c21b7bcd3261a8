import * as path from 'node:path';
import { parseCommand } from './args.js';
import { modelArg, FORCE_OPTION, OUTPUT_OPTIONS, QUIET_TEXT, helpLine } from './options.js';
import { UsageError } from '../util/errors.js';
import { Progress, fmtTime } from '../util/progress.js';
import type { ConvertResult, WeightsMode } from '../convert/convert.js';
import { readJsonFile } from '../store/json.js';
import { stderrIO } from '../util/jobio.js';

const spec = {
  usage:
    'lobes convert --model MODEL.gguf|CHECKPOINT_DIR --out DIR [--dtype fp32|fp16] [--weights auto|q4|fp16|fp32|bf16] [--layout explicit|genai] [--force] [--quiet] [--json]',
  help: `
Convert a llama-architecture GGUF (llama.cpp, Ollama, LM Studio: Llama 2/3.x, Mistral 7B,
TinyLlama, SmolLM) or a Hugging Face checkpoint folder (config.json, safetensors weights,
tokenizer.json: Llama, Mistral without a sliding window, Qwen2/2.5, Qwen3) into an ONNX model
folder: model.onnx + model.onnx.data, config.json, tokenizer.json / tokenizer_config.json
(built from the GGUF metadata, or the checkpoint's own), and lobes-convert.json (where it came
from). See docs/models-supported.md for what converts and what is refused. The weights are streamed a tensor at a time; the folder appears only
when complete. Other commands take the GGUF directly (--model FILE.gguf) and convert it once
into a cache; see docs/gguf.md.

  --model FILE.gguf the GGUF file (an Ollama blob under ~/.ollama/models/blobs/ works as is),
                    or a Hugging Face checkpoint folder (single or sharded safetensors, F32,
                    F16 or BF16); the path as the first argument is the same
  --out DIR         the folder to write (must not exist or be empty, unless --force)
  --dtype T         compute dtype of the graph: fp32 (default) or fp16 (for GPUs)
  --weights W       projection weights: auto (default: the smallest storage that keeps every
                    weight exact: q4 for Q4_0/Q4_1/Q5_0/Q8_0/Q2_K-Q6_K files, fp16 for F16,
                    else fp32; a checkpoint: fp16 when every weight is F16, bf16 when every
                    matrix is BF16, else fp32), q4 (MatMulNBits; GGML blocks kept as they are
                    where they map, others quantized to 4 bits), fp16 or fp32 (dequantized), or
                    bf16 (a BF16 checkpoint's bits kept, cast to fp32 in the graph; refused for
                    anything it would round)
  --layout L        explicit (default: the layout lobes' captures read) or genai
                    (onnxruntime-genai style: GroupQueryAttention, KV cache; fastest on CUDA)
  --force           replace a non-empty --out folder
${helpLine('--quiet', QUIET_TEXT, 20)}
  --json            print the conversion summary as JSON on stdout
`,
  options: {
    model: { type: 'string' },
    out: { type: 'string' },
    dtype: { type: 'string', choices: ['fp32', 'fp16'] as const },
    weights: { type: 'string', choices: ['auto', 'q4', 'fp16', 'fp32', 'bf16'] as const },
    layout: { type: 'string', choices: ['explicit', 'genai'] as const },
    force: { ...FORCE_OPTION.force, key: 'overwrite' },
    ...OUTPUT_OPTIONS,
  },
  positionals: [0, 1] as [number, number],
} as const;

/** One-paragraph text summary of a conversion. */
export function convertSummary(r: ConvertResult): string {
  const s = r.spec;
  const rope = s.ropeScaling ? `, rope scaling ${String(s.ropeScaling.rope_type)}` : '';
  const storage = Object.entries(r.storage)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  const lines = [
    `wrote ${r.dir} in ${fmtTime(r.seconds)} (${((r.modelBytes + r.dataBytes) / 1e6).toFixed(1)} MB)`,
    `model: ${s.layers} layers, hidden ${s.hidden}, intermediate ${s.intermediate}, ${s.heads} heads / ${s.kvHeads} KV heads, vocab ${s.vocab}${
      s.tiedEmbeddings ? ', tied embeddings' : ''
    }${rope}`,
    `graph: ${r.options.layout} layout, ${r.options.dtype} compute, ${r.options.weights} weights${
      r.weightsReason ? ` (auto: ${r.weightsReason})` : ''
    }`,
    `weights: ${storage}`,
  ];
  if (r.requantized.length)
    lines.push(
      `re-quantized to 4 bits from dequantized rows (not exact): ${r.requantized.length} weights, e.g. ${
        r.requantized[0]
      }`,
    );
  return lines.join('\n') + '\n';
}

/**
 * The conversion's progress bar in MB. The writer's planned total is an estimate for blocks given
 * by the source, refined upward as it writes: the bar follows it and never shows more done than
 * the total.
 */
export function convertProgress(quiet: boolean,
  stream?: NodeJS.WriteStream): { onProgress: (done: number, total: number) => void; finish: () => void }
{
  let bar: Progress | null = null;
  return {
    onProgress: (done, total) => {
      bar ??= new Progress({ label: 'convert', total: Math.round(total / 1e6), unit: 'MB',
        io: stderrIO({ quiet, ...(stream ? { stream } : {}) }) });
      bar.setTotal(Math.round(total / 1e6));
      bar.set(Math.round(Math.min(done, total) / 1e6));
    },
    finish: () => bar?.finish(),
  };
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  const v = p.values;
  if (!v.out) throw new UsageError('--out is required', `usage: ${spec.usage}`);
  const { convertGguf, convertHfCheckpoint, resolveConvertOptions } = await import('../convert/convert.js');
  const { isHfCheckpoint } = await import('../convert/hf-checkpoint.js');
  const opts = resolveConvertOptions({ dtype: v.dtype, weights: v.weights as WeightsMode | undefined,
    layout: v.layout });
  const progress = convertProgress(!!v.quiet || !!v.json);
  const model = modelArg(p, spec.usage).model;
  const res = await (isHfCheckpoint(model) ? convertHfCheckpoint : convertGguf)(model, path.resolve(v.out), {
    ...opts,
    overwrite: !!v.force,
    onProgress: progress.onProgress,
  });
  progress.finish();
  if (v.json) process.stdout.write(JSON.stringify(res, null, 2) + '\n');
  else process.stdout.write(convertSummary(res));
  return 0;
}

/**
 * The model folder for a --model argument: the argument itself, or the cached ONNX conversion
 * of a GGUF file (converted now when not cached, with a progress bar). `cache` is --cache;
 * `layout` the conversion's graph layout (default: the converter's).
 */
export async function modelFolder(model: string,
  opts: { cache?: string; quiet?: boolean; layout?: 'genai' | 'explicit'; weights?: WeightsMode;
    dtype?: 'fp32' | 'fp16' } = {}): Promise<import('../convert/cache.js').ResolvedModel>
{
  const { resolveModel } = await import('../convert/cache.js');
  const progress = convertProgress(!!opts.quiet);
  let hashing: Progress | null = null;
  const res = await resolveModel(model, {
    cache: opts.cache,
    onHash: (done, total) => {
      if (total < 256e6) return;
      hashing ??= new Progress({ label: 'sha256 of the GGUF (once)', total: Math.round(total / 1e6), unit: 'MB',
        io: stderrIO({ quiet: opts.quiet }) });
      hashing.set(Math.round(done / 1e6));
      if (done >= total) hashing.finish();
    },
    ...(opts.layout ? { layout: opts.layout } : {}),
    ...(opts.weights ? { weights: opts.weights } : {}),
    ...(opts.dtype ? { dtype: opts.dtype } : {}),
    io: stderrIO({ quiet: opts.quiet }),
    onProgress: progress.onProgress,
  });
  progress.finish();
  if (res.converted && !opts.quiet) process.stderr.write(convertSummary(res.converted));
  return res;
}

/**
 * The folder a random-weights control is drawn from: the model folder itself, or, when it is a
 * GGUF's conversion with 4-bit MatMulNBits weights (which the control does not redraw), an fp16
 * conversion of the same GGUF made now into the same cache (once; reused after).
 */
export async function controlSourceFolder(model: string, resolved: import('../convert/cache.js').ResolvedModel,
  opts: { cache?: string; quiet?: boolean; command?: string }): Promise<string>
{
  if (!resolved.source) return resolved.dir;
  const weights: unknown = readJsonFile(path.join(resolved.dir, 'lobes-convert.json'), { fallback: null })?.options
    ?.weights;
  if (weights !== 'q4') return resolved.dir;
  if (!opts.quiet)
    process.stderr.write(
      `${
        opts.command ?? 'extract'
      }: the control is drawn from an fp16 conversion of ${resolved.source.path} (its 4-bit weights are not redrawn in place)\n`,
    );
  return (await modelFolder(model, { cache: opts.cache, quiet: opts.quiet, weights: 'fp16' })).dir;
}
