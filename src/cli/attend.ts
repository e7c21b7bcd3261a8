import { parseCommand, intOption, type CommandSpec } from './args.js';
import { UsageError } from '../util/errors.js';
import { parseShard, expandOut } from '../store/layout.js';
import { runAttend, CPU_TOKEN_BUDGET, DEFAULT_BOOTSTRAP, DEFAULT_CHUNK_UNITS, DEFAULT_LAYERS,
  DEFAULT_TOP } from '../attend/run.js';
import type { AttendPosition } from '../attend/types.js';
import type { ItemSelection } from '../attend/inputs.js';
import { INTERVENE_HELP, INTERVENE_OPTION, interventionsOf } from './intervene.js';
import { CHAT_TEMPLATE_OPTION, DEVICE_OPTIONS, FORCE_OPTION, HELP, LAYERS_OPTION, LIMIT_OPTIONS, MAX_TOKENS_OPTION,
  MODEL_OPTIONS, OUTPUT_OPTIONS, chatTemplateOn, deviceOf, limitOf, maxTokensOf, modelArg } from './options.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

const USAGE =
  'lobes attend --model MODEL_DIR|FILE.gguf (--data SPEC | --eval EVAL_DIR [--items wrong|right|all]) --out DIR [--layers LIST|last:N|all] [--position answer|last] [--top N] [--cjk char|segment] [--chat-template [auto|on|off]] [--max-tokens N] [--cot N] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--chunk-units N] [--shard i/n|auto] [--bootstrap B] [--seed N] [--per-layer] [--limit N [--by LABELS]] [--intervene SPEC ...] [--cache DIR] [--force] [--quiet] [--json]\n' +
  '       lobes attend merge SHARD_DIR... --out DIR      (lobes attend merge --help)';

const HELP_TEXT = `
Which words a model looks at when it answers: the attention of the answering position over the
prompt, every head of the chosen layers averaged (after SocialEval App. C.4: 20 layers, here the
last 20 by default, the top 30 words; --cot N lets the model reason first), aggregated to words
with the prompt part each comes from, per item and as per-part shares with bootstrap intervals,
right against wrong items. Writes DIR/items.jsonl and DIR/summary.json (format: docs/attend.md)
chunk by chunk: rerunning the same command resumes an interrupted run, and a rerun with other
settings is refused. lobes report DIR shows them.

${HELP.model}; explicit or fused
                       attention, see docs/attend.md
  --data SPEC          items of a dataset: builtin:NAME, socialeval:PATH, jsonl:…, csv:…
  --eval DIR           the records of lobes eval (DIR/records.jsonl), each read up to the
                       position where the model answered
  --items SEL          with --eval: wrong (default), right or all records
  --out DIR            attend folder to create or resume; {i}/{n} are replaced by the shard
${HELP.layers}; default ${DEFAULT_LAYERS}
  --position P         answer: the answering position of a multiple-choice prompt (default for
                       --eval and socialeval: data, which is rendered as lobes eval renders it);
                       last: the last token of each text (default otherwise)
  --top N              top words kept per item and keywords per group (default ${DEFAULT_TOP})
  --cjk MODE           Chinese and Japanese words: char (default) or segment (Intl.Segmenter)
${HELP.chatTemplate('off')}; with --position last only
${HELP.maxTokens}
  --cot N              the model first reasons: up to N tokens generated greedily (KV cache, stops
                       at end of turn) after SocialEval's prompt that asks for an explanation; then
                       the answer cue is added and attention is read where the letter comes next
                       (socialeval: data; a GGUF is converted in the genai layout for it)
${HELP.device}
  --batch N            rows per batch (default 8); --token-budget N caps rows × longest
                       (default on the CPU: ${CPU_TOKEN_BUDGET}, so long prompts tick batch by batch)
  --chunk-units N      items per record chunk (default ${DEFAULT_CHUNK_UNITS}); shards need the same
  --shard S            i/n (0-based), auto or auto/N, as for lobes extract; lobes attend merge
                       joins the shard folders
  --bootstrap B        bootstrap resamples for the 95% intervals (default ${DEFAULT_BOOTSTRAP}; 0: none)
${HELP.seed('the bootstrap and the --limit sample')}
  --per-layer          also store each layer's head-averaged weights per item
${INTERVENE_HELP}
${HELP.limit}
${HELP.cache}
  --force              replace an earlier attend job with other settings at --out (its own files;
                       formerly --overwrite)
${HELP.quiet}
  --json               print the summary as JSON on stdout
`;

const mergeSpec: CommandSpec = {
  usage: 'lobes attend merge SHARD_DIR... --out DIR [--quiet] [--json]',
  name: 'lobes attend merge',
  help: `
Join the complete shard folders of one attend job (lobes attend --shard i/n) into one folder,
after checking they are the same job (every setting but the shard) and cover every chunk
exactly once. The merged items.jsonl is the file one unsharded run writes; the summary is
computed again over every item.

  SHARD_DIR...         the shard folders
  --out DIR            new (or empty) folder for the merged attend folder
${HELP.quiet}
  --json               print the merged manifest as JSON on stdout
`,
  options: { out: { type: 'string' }, ...OUTPUT_OPTIONS },
  positionals: [1, Infinity],
};

async function merge(argv: string[]): Promise<number> {
  const p = parseCommand(argv, mergeSpec);
  if (!p) return 0;
  const v = p.values;
  if (!v.out) throw new UsageError('--out is required', `usage: ${mergeSpec.usage}`);
  const { mergeAttend } = await import('../attend/merge.js');
  const m = await mergeAttend(p.positionals, v.out, { io: stderrIO({ quiet: !!v.quiet }) });
  if (v.json) process.stdout.write(JSON.stringify(m, null, 2) + '\n');
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'merge') return merge(argv.slice(1));
  const p = parseCommand(argv, {
    usage: USAGE,
    help: HELP_TEXT,
    positionals: [0, 1],
    options: {
      ...MODEL_OPTIONS,
      data: { type: 'string' },
      eval: { type: 'string' },
      items: { type: 'string', choices: ['wrong', 'right', 'all'] as const },
      out: { type: 'string' },
      ...LAYERS_OPTION,
      position: { type: 'string', choices: ['answer', 'last'] as const },
      top: { type: 'string' },
      cjk: { type: 'string', choices: ['char', 'segment'] as const },
      ...CHAT_TEMPLATE_OPTION,
      ...MAX_TOKENS_OPTION,
      ...DEVICE_OPTIONS,
      batch: { type: 'string' },
      'token-budget': { type: 'string' },
      'chunk-units': { type: 'string' },
      shard: { type: 'string' },
      cot: { type: 'string' },
      bootstrap: { type: 'string' },
      'per-layer': { type: 'boolean' },
      ...INTERVENE_OPTION,
      ...LIMIT_OPTIONS,
      force: { ...FORCE_OPTION.force, key: 'overwrite' },
      overwrite: { type: 'boolean', renamed: 'force' },
      ...OUTPUT_OPTIONS,
    },
  });
  if (!p) return 0;
  const v = p.values;
  const { model: modelArgument } = modelArg(p, USAGE);
  if (!v.out) throw new UsageError('--out is required', `usage: ${USAGE.slice(0, 80)}…`);
  if (!v.data === !v.eval) throw new UsageError('give exactly one of --data SPEC and --eval DIR');
  const { limit, by, seed } = limitOf(v);
  const shard = parseShard(v.shard);
  const cot = intOption(v.cot, '--cot', 0, 0);
  // The data (or the evaluation) is checked before a model is loaded or converted (minutes for a GGUF).
  if (v.data) (await import('../data/index.js')).checkDataSpec(v.data);
  if (v.eval) (await import('../attend/inputs.js')).checkEvalFolder(v.eval);
  const interventions = interventionsOf(v);
  const { modelFolder } = await import('./convert.js');
  // --cot generates through the KV cache, which the genai layout of a GGUF's conversion has.
  const model = await modelFolder(modelArgument, { cache: v.cache, quiet: !!v.quiet,
    ...(cot ? { layout: 'genai' as const } : {}) });
  const { device, deviceId } = deviceOf(v);
  const summary = await runAttend({
    model: model.dir,
    modelSource: model.source,
    data: v.data,
    eval: v.eval,
    items: v.items as ItemSelection | undefined,
    out: expandOut(v.out, shard),
    shard,
    chunkUnits: intOption(v['chunk-units'], '--chunk-units', DEFAULT_CHUNK_UNITS, 1),
    cot,
    layers: v.layers,
    position: v.position as AttendPosition | undefined,
    top: intOption(v.top, '--top', DEFAULT_TOP, 1),
    cjk: v.cjk ?? 'char',
    chatTemplate: v['chat-template'] === undefined ? false : await chatTemplateOn(v['chat-template'], model.dir),
    maxTokens: maxTokensOf(v),
    device,
    deviceId,
    batch: v.batch !== undefined ? intOption(v.batch, '--batch', 8, 1) : undefined,
    tokenBudget: v['token-budget'] !== undefined ? intOption(v['token-budget'], '--token-budget', 0, 1) : undefined,
    bootstrap: intOption(v.bootstrap, '--bootstrap', DEFAULT_BOOTSTRAP, 0),
    seed,
    perLayer: !!v['per-layer'],
    limit,
    by,
    overwrite: !!v.force,
    io: stderrIO({ quiet: !!v.quiet, signal: interruptSignal('attend') }),
    ...(interventions.length ? { interventions } : {}),
  });
  if (v.json) process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  return 0;
}
