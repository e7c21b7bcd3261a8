import { parseCommand, intOption } from './args.js';
import { UsageError } from '../util/errors.js';
import { runAttend, DEFAULT_BOOTSTRAP, DEFAULT_LAYERS, DEFAULT_TOP } from '../attend/run.js';
import type { AttendPosition } from '../attend/types.js';
import type { ItemSelection } from '../attend/inputs.js';
import { CHAT_TEMPLATE_OPTION, DEVICE_OPTIONS, FORCE_OPTION, HELP, LAYERS_OPTION, LIMIT_OPTIONS, MAX_TOKENS_OPTION, MODEL_OPTIONS, OUTPUT_OPTIONS, chatTemplateOn, deviceOf, limitOf, maxTokensOf, modelArg } from './options.js';

const USAGE =
  'lobes attend --model MODEL_DIR|FILE.gguf (--data SPEC | --eval EVAL_DIR [--items wrong|right|all]) --out DIR [--layers LIST|last:N|all] [--position answer|last] [--top N] [--cjk char|segment] [--chat-template [auto|on|off]] [--max-tokens N] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--bootstrap B] [--seed N] [--per-layer] [--limit N [--by LABELS]] [--cache DIR] [--force] [--quiet] [--json]';

const HELP_TEXT = `
Which words a model looks at when it answers: the attention of the answering position over the
prompt, every head of the chosen layers averaged (SocialEval App. C.4: the last 20 layers, the
top 30 words), aggregated to words with the prompt part each comes from, per item and as
per-part shares with bootstrap intervals, right against wrong items. Writes DIR/items.jsonl and
DIR/summary.json (format: docs/attend.md); lobes report DIR shows them.

${HELP.model}; explicit or fused
                       attention, see docs/attend.md
  --data SPEC          items of a dataset: builtin:NAME, socialeval:PATH, jsonl:…, csv:…
  --eval DIR           the records of lobes eval (DIR/records.jsonl), each read up to the
                       position where the model answered
  --items SEL          with --eval: wrong (default), right or all records
  --out DIR            output folder (new, empty, or an earlier attend folder with --force)
${HELP.layers}; default ${DEFAULT_LAYERS}
  --position P         answer: the answering position of a multiple-choice prompt (default for
                       --eval and socialeval: data, which is rendered as lobes eval renders it);
                       last: the last token of each text (default otherwise)
  --top N              top words kept per item and keywords per group (default ${DEFAULT_TOP})
  --cjk MODE           Chinese and Japanese words: char (default) or segment (Intl.Segmenter)
${HELP.chatTemplate('off')}; with --position last only
${HELP.maxTokens}
${HELP.device}
  --batch N            rows per batch (default 8); --token-budget N caps rows × longest
  --bootstrap B        bootstrap resamples for the 95% intervals (default ${DEFAULT_BOOTSTRAP}; 0: none)
${HELP.seed('the bootstrap and the --limit sample')}
  --per-layer          also store each layer's head-averaged weights per item
${HELP.limit}
${HELP.cache}
${HELP.force} (formerly --overwrite)
${HELP.quiet}
  --json               print the summary as JSON on stdout
`;

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, {
    usage: USAGE,
    help: HELP_TEXT,
    positionals: [0, 1],
    options: {
      ...MODEL_OPTIONS,
      data: { type: 'string' },
      eval: { type: 'string' },
      items: { type: 'string', choices: ['wrong', 'right', 'all'] },
      out: { type: 'string' },
      ...LAYERS_OPTION,
      position: { type: 'string', choices: ['answer', 'last'] },
      top: { type: 'string' },
      cjk: { type: 'string', choices: ['char', 'segment'] },
      ...CHAT_TEMPLATE_OPTION,
      ...MAX_TOKENS_OPTION,
      ...DEVICE_OPTIONS,
      batch: { type: 'string' },
      'token-budget': { type: 'string' },
      bootstrap: { type: 'string' },
      'per-layer': { type: 'boolean' },
      ...LIMIT_OPTIONS,
      ...FORCE_OPTION,
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
  const { modelFolder } = await import('./convert.js');
  const model = await modelFolder(modelArgument, { cache: v.cache, quiet: !!v.quiet });
  const { device, deviceId } = deviceOf(v);
  const summary = await runAttend({
    model: model.dir,
    modelSource: model.source,
    data: v.data,
    eval: v.eval,
    items: v.items as ItemSelection | undefined,
    out: v.out,
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
    quiet: !!v.quiet,
  });
  if (v.json) process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  return 0;
}
