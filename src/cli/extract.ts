import { parseCommand, intOption } from './args.js';
import { UsageError } from '../util/errors.js';
import { runExtract, DEFAULT_CHUNK_ROWS, DEFAULT_BATCH } from '../extract/run.js';
import { parseShard, expandOut } from '../store/layout.js';
import type { CaptureFamily, Device } from '../runtime/types.js';
import { CAPTURE_FAMILIES } from '../hooks.js';
import { controlSourceFolder, modelFolder } from './convert.js';
import { randomControlModel } from '../runtime/control.js';
import type { ControlInfo } from '../store/types.js';

const spec = {
  usage: 'lobes extract --model MODEL_DIR|FILE.gguf --data SPEC --out RUN [--capture final,mlp,resid] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--max-tokens N] [--dtype fp16|fp32] [--shard i/n|auto|auto/N] [--chunk-rows N] [--chat-template] [--control random [--control-seed N]] [--cache DIR] [--quiet] [--force] [--repair] [--strict] [--json]',
  help: `
Run a model over a dataset and store the last token's activations in a run directory
(format: docs/run-format.md). Rerunning the same command continues an interrupted run
from its last complete chunk; a rerun with different settings is refused.

  --model DIR|FILE     ONNX model folder (model.onnx and tokenizer files), or a llama GGUF
                       file (converted once into the cache; see lobes convert --help)
  --cache DIR          where converted GGUF models and random-weights controls are kept
                       (default $LOBES_CACHE/gguf or ~/.cache/lobes/gguf; controls in
                       ~/.cache/lobes/controls)
  --data SPEC          builtin:NAME, socialeval:PATH, jsonl:PATH?text=F&label=F, csv:PATH?...
  --out RUN            run folder to create or resume; {i} and {n} are replaced by the shard
  --capture LIST       final (final.hidden), mlp (layers.*.mlp.in / mlp.down_in),
                       resid (layers.*.resid_out); default final,mlp
  --device D           cpu (default), cuda or webgpu; --device-id N picks the GPU
  --batch N            rows per batch (default ${DEFAULT_BATCH})
  --token-budget N     at most N padded tokens per batch (instead of, or with, --batch)
  --max-tokens N       keep the last N tokens of each text (a text longer than the model's
                       context, from config.json, genai_config.json or the graph's rotary
                       cache, is refused unless --max-tokens brings it within)
  --dtype T            fp16 (default) or fp32 for the stored values
  --shard S            i/n (0-based): this process extracts shard i of n (contiguous whole
                       chunks of dataset order); auto: i/n from SLURM_ARRAY_TASK_ID/_MIN/
                       _COUNT or JOB_COMPLETION_INDEX with auto/N or LOBES_SHARD_COUNT
  --chunk-rows N       rows per chunk file (default ${DEFAULT_CHUNK_ROWS}); shards of one run need the same value
  --chat-template      wrap each text as a user turn with the tokenizer's chat template
  --control random     extract through a random-weights control of the model instead: the same
                       graph and tokenizer with every projection and the embedding drawn from
                       N(0, σ²) (σ: each trained tensor's standard deviation) and norm scales 1
                       (docs/controls.md); built once in the cache, recorded in the manifest; a
                       GGUF with 4-bit weights is drawn from an fp16 conversion made once
  --control-seed N     seed of the control's weights (default 0)
  --force              start even if the disk plan or the memory plan of a batch says it will not fit
  --repair             on resume, extract bad chunk files again and rewrite a damaged samples.jsonl
  --strict             refuse a model whose graph disagrees with its config files (RoPE base,
                       RMSNorm epsilon, heads; see lobes inspect) instead of warning
  --quiet              no progress output
  --json               print the final manifest as JSON on stdout
`,
  options: {
    model: { type: 'string' },
    cache: { type: 'string' },
    data: { type: 'string' },
    out: { type: 'string' },
    capture: { type: 'string' },
    device: { type: 'string' },
    'device-id': { type: 'string' },
    batch: { type: 'string' },
    'token-budget': { type: 'string' },
    'max-tokens': { type: 'string' },
    dtype: { type: 'string' },
    shard: { type: 'string' },
    'chunk-rows': { type: 'string' },
    'chat-template': { type: 'boolean' },
    control: { type: 'string' },
    'control-seed': { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
    force: { type: 'boolean' },
    repair: { type: 'boolean' },
    strict: { type: 'boolean' },
    json: { type: 'boolean' },
  },
  positionals: [0, 0] as [number, number],
} as const;

const DEVICES: Device[] = ['cpu', 'cuda', 'webgpu'];

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  const v = p.values;
  for (const k of ['model', 'data', 'out']) if (!v[k]) throw new UsageError(`--${k} is required`, `usage: ${spec.usage.slice(0, 60)}…`);
  const capture = String(v.capture ?? 'final,mlp')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const c of capture) if (!CAPTURE_FAMILIES.includes(c as CaptureFamily)) throw new UsageError(`--capture: unknown capture family ${JSON.stringify(c)} (use ${CAPTURE_FAMILIES.join(', ')})`);
  if (capture.length === 0) throw new UsageError(`--capture needs at least one of ${CAPTURE_FAMILIES.join(', ')}`);
  const device = (v.device ?? 'cpu') as Device;
  if (!DEVICES.includes(device)) throw new UsageError(`--device must be one of ${DEVICES.join(', ')}, got ${JSON.stringify(v.device)}`);
  const dtype = v.dtype ?? 'fp16';
  if (dtype !== 'fp16' && dtype !== 'fp32') throw new UsageError(`--dtype must be fp16 or fp32, got ${JSON.stringify(dtype)}`);
  const shard = parseShard(v.shard);
  const model = await modelFolder(v.model, { cache: v.cache, quiet: !!v.quiet });
  let dir = model.dir;
  let control: ControlInfo | undefined;
  if (v.control !== undefined) {
    if (v.control !== 'random') throw new UsageError(`--control must be random, got ${JSON.stringify(v.control)}`);
    const { analyseModel } = await import('../runtime/engine.js');
    dir = await controlSourceFolder(v.model, model, { cache: v.cache, quiet: !!v.quiet });
    const { arch } = analyseModel(dir).info;
    const c = await randomControlModel(dir, arch, { seed: intOption(v['control-seed'], '--control-seed', 0, 0, 2 ** 32 - 1), quiet: !!v.quiet, ...(v.cache ? { cacheDir: v.cache } : {}) });
    if (!v.quiet) process.stderr.write(`extract: random-weights control of ${dir} (seed ${c.info.seed}) at ${c.dir}\n`);
    dir = c.dir;
    control = c.info;
  } else if (v['control-seed'] !== undefined) throw new UsageError('--control-seed needs --control random');
  const manifest = await runExtract({
    model: dir,
    modelSource: model.source,
    control,
    data: v.data,
    out: expandOut(v.out, shard),
    capture: [...new Set(capture)] as CaptureFamily[],
    device,
    deviceId: v['device-id'] !== undefined ? intOption(v['device-id'], '--device-id', 0, 0) : undefined,
    batch: v.batch !== undefined ? intOption(v.batch, '--batch', DEFAULT_BATCH, 1) : undefined,
    tokenBudget: v['token-budget'] !== undefined ? intOption(v['token-budget'], '--token-budget', 0, 1) : undefined,
    maxTokens: v['max-tokens'] !== undefined ? intOption(v['max-tokens'], '--max-tokens', 0, 1) : null,
    dtype,
    chatTemplate: !!v['chat-template'],
    shard,
    chunkRows: intOption(v['chunk-rows'], '--chunk-rows', DEFAULT_CHUNK_ROWS, 1),
    quiet: !!v.quiet,
    force: !!v.force,
    repair: !!v.repair,
    strict: !!v.strict,
  });
  if (v.json) process.stdout.write(JSON.stringify(manifest, null, 2) + '\n');
  return 0;
}
