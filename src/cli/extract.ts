import { parseCommand, intOption, requireValues } from './args.js';
import { UsageError } from '../util/errors.js';
import { runExtract, DEFAULT_CHUNK_ROWS, DEFAULT_BATCH } from '../extract/run.js';
import { parseShard, expandOut } from '../store/layout.js';
import type { CaptureFamily } from '../runtime/types.js';
import { CAPTURE_FAMILIES } from '../hooks.js';
import { modelFolder } from './convert.js';
import { INTERVENE_HELP, INTERVENE_OPTION, interventionsOf } from './intervene.js';
import { checkDataSpec } from '../data/index.js';
import { controlModel, controlSeedOf } from './control.js';
import type { ControlInfo } from '../store/types.js';
import { CHAT_TEMPLATE_OPTION, DEVICE_OPTIONS, HELP, LAYERS_OPTION, LIMIT_OPTIONS, MAX_TOKENS_OPTION, MODEL_OPTIONS,
  OUTPUT_OPTIONS, deviceOf, limitOf, maxTokensOf, modelArg, chatTemplateOn } from './options.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

const spec = {
  usage:
    'lobes extract --model MODEL_DIR|FILE.gguf --data SPEC --out RUN [--capture final,mlp,resid,mean] [--layers L] [--limit N [--by LABELS] [--seed N]] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--max-tokens N] [--dtype fp16|fp32] [--shard i/n|auto|auto/N] [--chunk-rows N] [--chat-template [auto|on|off]] [--control random [--control-seed N]] [--intervene SPEC ...] [--cache DIR] [--ignore-plan] [--repair] [--strict] [--quiet] [--json]',
  help: `
Run a model over a dataset and store the last token's activations in a run directory
(format: docs/run-format.md). Rerunning the same command continues an interrupted run
from its last complete chunk; a rerun with different settings is refused.

${HELP.model}
${HELP.cache}
  --data SPEC          builtin:NAME, socialeval:PATH, jsonl:PATH?text=F&label=F, csv:PATH?...
  --out RUN            run folder to create or resume; {i} and {n} are replaced by the shard
  --capture LIST       final (final.hidden), mlp (layers.*.mlp.in / mlp.down_in),
                       resid (layers.*.resid_out), mean (final.mean, layers.*.resid_out.mean:
                       averaged over the text's tokens); default final,mlp
${HELP.layers}; the per-layer
                       points of --capture are stored for these layers only (default all)
${HELP.limit}
${HELP.seed('the --limit sample')}
${HELP.device}
  --batch N            rows per batch (default ${DEFAULT_BATCH})
  --token-budget N     at most N padded tokens per batch (instead of, or with, --batch)
${HELP.maxTokens}; a text longer than the
                       model's context (config.json, genai_config.json or the graph's rotary
                       cache) is refused unless --max-tokens brings it within
  --dtype T            fp16 (default) or fp32 for the stored values
  --shard S            i/n (0-based): this process extracts shard i of n (contiguous whole
                       chunks of dataset order); auto: i/n from SLURM_ARRAY_TASK_ID/_MIN/
                       _COUNT or JOB_COMPLETION_INDEX with auto/N or LOBES_SHARD_COUNT
  --chunk-rows N       rows per chunk file (default ${DEFAULT_CHUNK_ROWS}); shards of one run need the same value
${HELP.chatTemplate('off')}; on wraps each text as a user turn
  --control random     extract through a random-weights control of the model instead: the same
                       graph and tokenizer with every projection and the embedding drawn from
                       N(0, σ²) (σ: each trained tensor's standard deviation) and norm scales 1
                       (docs/controls.md); built once in the cache, recorded in the manifest; a
                       GGUF with 4-bit weights is drawn from an fp16 conversion made once
  --control-seed N     seed of the control's weights (default 0)
${INTERVENE_HELP}
  --ignore-plan        start even if the disk plan or the memory plan of a batch says it will
                       not fit (formerly --force)
  --repair             on resume, extract bad chunk files again and rewrite a damaged samples.jsonl
  --strict             refuse a model whose graph disagrees with its config files (RoPE base,
                       RMSNorm epsilon, heads; see lobes inspect) instead of warning
${HELP.quiet}
  --json               print the final manifest as JSON on stdout
`,
  options: {
    ...MODEL_OPTIONS,
    data: { type: 'string' },
    out: { type: 'string' },
    capture: { type: 'string' },
    ...LAYERS_OPTION,
    ...LIMIT_OPTIONS,
    ...DEVICE_OPTIONS,
    batch: { type: 'string' },
    'token-budget': { type: 'string' },
    ...MAX_TOKENS_OPTION,
    dtype: { type: 'string', choices: ['fp16', 'fp32'] as const },
    shard: { type: 'string' },
    'chunk-rows': { type: 'string' },
    ...CHAT_TEMPLATE_OPTION,
    control: { type: 'string', choices: ['random'] as const },
    'control-seed': { type: 'string', key: 'control.seed' },
    ...INTERVENE_OPTION,
    'ignore-plan': { type: 'boolean', key: 'force' },
    force: { type: 'boolean', renamed: 'ignore-plan' },
    repair: { type: 'boolean' },
    strict: { type: 'boolean' },
    ...OUTPUT_OPTIONS,
  },
  positionals: [0, 1] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  const v = requireValues(p.values, ['data', 'out'] as const, `usage: ${spec.usage.slice(0, 60)}…`);
  const { model: modelArgument } = modelArg(p, spec.usage);
  const capture = String(v.capture ?? 'final,mlp')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const c of capture)
    if (!CAPTURE_FAMILIES.includes(c as CaptureFamily))
      throw new UsageError(
        `--capture: unknown capture family ${JSON.stringify(c)} (use ${CAPTURE_FAMILIES.join(', ')})`,
      );
  if (capture.length === 0) throw new UsageError(`--capture needs at least one of ${CAPTURE_FAMILIES.join(', ')}`);
  const { limit, by, seed } = limitOf(v);
  if (v.seed !== undefined && limit === null)
    throw new UsageError(
      '--seed here seeds the --limit sample; give --limit N with it (--control-seed seeds the control)',
    );
  const shard = parseShard(v.shard);
  const interventions = interventionsOf(v);
  // The data is checked before a model is loaded or converted (minutes for a GGUF).
  checkDataSpec(v.data);
  const model = await modelFolder(modelArgument, { cache: v.cache, quiet: !!v.quiet });
  const seed0 = controlSeedOf(v);
  let dir = model.dir;
  let control: ControlInfo | undefined;
  if (seed0 !== null) {
    const c = await controlModel(modelArgument, model, { seed: seed0, cache: v.cache, quiet: !!v.quiet,
      command: 'extract' });
    dir = c.dir;
    control = c.info;
  }
  const { device, deviceId } = deviceOf(v);
  const manifest = await runExtract({
    model: dir,
    modelSource: model.source,
    control,
    data: v.data,
    out: expandOut(v.out, shard),
    capture: [...new Set(capture)] as CaptureFamily[],
    layers: v.layers,
    limit: limit !== null ? { limit, by, seed } : null,
    device,
    deviceId,
    batch: v.batch !== undefined ? intOption(v.batch, '--batch', DEFAULT_BATCH, 1) : undefined,
    tokenBudget: v['token-budget'] !== undefined ? intOption(v['token-budget'], '--token-budget', 0, 1) : undefined,
    maxTokens: maxTokensOf(v),
    dtype: v.dtype ?? 'fp16',
    chatTemplate: await chatTemplateOn(v['chat-template'] ?? 'off', dir),
    shard,
    chunkRows: intOption(v['chunk-rows'], '--chunk-rows', DEFAULT_CHUNK_ROWS, 1),
    io: stderrIO({ quiet: !!v.quiet, signal: interruptSignal('extract') }),
    force: !!v['ignore-plan'],
    repair: !!v.repair,
    strict: !!v.strict,
    ...(interventions.length ? { interventions } : {}),
  });
  if (v.json) process.stdout.write(JSON.stringify(manifest, null, 2) + '\n');
  return 0;
}
