import { parseCommand, intOption } from './args.js';
import { UsageError } from '../util/errors.js';
import { runAttend, DEFAULT_BOOTSTRAP, DEFAULT_LAYERS, DEFAULT_TOP } from '../attend/run.js';
import type { Device } from '../runtime/types.js';
import type { AttendPosition } from '../attend/types.js';
import type { ItemSelection } from '../attend/inputs.js';

const USAGE =
  'lobes attend MODEL_DIR|FILE.gguf (--data SPEC | --eval EVAL_DIR [--items wrong|right|all]) --out DIR [--layers LIST|last:N|all] [--position answer|last] [--top N] [--cjk char|segment] [--chat-template] [--max-tokens N] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--bootstrap B] [--seed N] [--per-layer] [--limit N] [--cache DIR] [--overwrite] [--quiet] [--json]';

const HELP = `
Which words a model looks at when it answers: the attention of the answering position over the
prompt, every head of the chosen layers averaged (SocialEval App. C.4: the last 20 layers, the
top 30 words), aggregated to words with the prompt part each comes from, per item and as
per-part shares with bootstrap intervals, right against wrong items. Writes DIR/items.jsonl and
DIR/summary.json (format: docs/attend.md); lobes report DIR shows them.

  MODEL                ONNX model folder (explicit or fused attention, see docs/attend.md), or a
                       llama GGUF file (converted once into the cache; see lobes convert --help)
  --data SPEC          items of a dataset: builtin:NAME, socialeval:PATH, jsonl:…, csv:…
  --eval DIR           the records of lobes eval (DIR/records.jsonl), each read up to the
                       position where the model answered
  --items SEL          with --eval: wrong (default), right or all records
  --out DIR            output folder (new, empty, or an earlier attend folder with --overwrite)
  --layers L           decoder layers to average: last:N (default ${DEFAULT_LAYERS}), all, or a list
                       like 0,3,10-19 (0-based)
  --position P         answer: the answering position of a multiple-choice prompt (default for
                       --eval and socialeval: data, which is rendered as lobes eval renders it);
                       last: the last token of each text (default otherwise)
  --top N              top words kept per item and keywords per group (default ${DEFAULT_TOP})
  --cjk MODE           Chinese and Japanese words: char (default) or segment (Intl.Segmenter)
  --chat-template      --position last: wrap each text as a user turn of the chat template
  --max-tokens N       keep the last N tokens of each prompt
  --device D           cpu (default), cuda or webgpu; --device-id N picks the GPU
  --batch N            rows per batch (default 8); --token-budget N caps rows × longest
  --bootstrap B        bootstrap resamples for the 95% intervals (default ${DEFAULT_BOOTSTRAP}; 0: none)
  --seed N             seed of the bootstrap (default 0)
  --per-layer          also store each layer's head-averaged weights per item
  --limit N            read only the first N items
  --cache DIR          where converted GGUF models are kept (default $LOBES_CACHE/gguf or
                       ~/.cache/lobes/gguf)
  --overwrite          replace an earlier attend folder at --out
  --quiet              no progress output
  --json               print the summary as JSON on stdout
`;

const DEVICES: Device[] = ['cpu', 'cuda', 'webgpu'];

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, {
    usage: USAGE,
    help: HELP,
    positionals: [1, 1],
    options: {
      data: { type: 'string' },
      eval: { type: 'string' },
      items: { type: 'string' },
      out: { type: 'string' },
      layers: { type: 'string' },
      position: { type: 'string' },
      top: { type: 'string' },
      cjk: { type: 'string' },
      'chat-template': { type: 'boolean' },
      'max-tokens': { type: 'string' },
      device: { type: 'string' },
      'device-id': { type: 'string' },
      batch: { type: 'string' },
      'token-budget': { type: 'string' },
      bootstrap: { type: 'string' },
      seed: { type: 'string' },
      'per-layer': { type: 'boolean' },
      limit: { type: 'string' },
      cache: { type: 'string' },
      overwrite: { type: 'boolean' },
      quiet: { type: 'boolean', short: 'q' },
      json: { type: 'boolean' },
    },
  });
  if (!p) return 0;
  const v = p.values;
  if (!v.out) throw new UsageError('--out is required', `usage: ${USAGE.slice(0, 80)}…`);
  if (!v.data === !v.eval) throw new UsageError('give exactly one of --data SPEC and --eval DIR');
  const position = v.position as AttendPosition | undefined;
  if (position !== undefined && position !== 'answer' && position !== 'last') throw new UsageError(`--position must be answer or last, got ${JSON.stringify(v.position)}`);
  const items = v.items as ItemSelection | undefined;
  if (items !== undefined && !['wrong', 'right', 'all'].includes(items)) throw new UsageError(`--items must be wrong, right or all, got ${JSON.stringify(v.items)}`);
  const cjk = (v.cjk ?? 'char') as 'char' | 'segment';
  if (cjk !== 'char' && cjk !== 'segment') throw new UsageError(`--cjk must be char or segment, got ${JSON.stringify(v.cjk)}`);
  const device = (v.device ?? 'cpu') as Device;
  if (!DEVICES.includes(device)) throw new UsageError(`--device must be one of ${DEVICES.join(', ')}, got ${JSON.stringify(v.device)}`);
  const { modelFolder } = await import('./convert.js');
  const model = await modelFolder(p.positionals[0]!, { cache: v.cache, quiet: !!v.quiet });
  const summary = await runAttend({
    model: model.dir,
    modelSource: model.source,
    data: v.data,
    eval: v.eval,
    items,
    out: v.out,
    layers: v.layers,
    position,
    top: intOption(v.top, '--top', DEFAULT_TOP, 1),
    cjk,
    chatTemplate: !!v['chat-template'],
    maxTokens: v['max-tokens'] !== undefined ? intOption(v['max-tokens'], '--max-tokens', 0, 1) : null,
    device,
    deviceId: v['device-id'] !== undefined ? intOption(v['device-id'], '--device-id', 0, 0) : undefined,
    batch: v.batch !== undefined ? intOption(v.batch, '--batch', 8, 1) : undefined,
    tokenBudget: v['token-budget'] !== undefined ? intOption(v['token-budget'], '--token-budget', 0, 1) : undefined,
    bootstrap: intOption(v.bootstrap, '--bootstrap', DEFAULT_BOOTSTRAP, 0),
    seed: intOption(v.seed, '--seed', 0),
    perLayer: !!v['per-layer'],
    limit: v.limit !== undefined ? intOption(v.limit, '--limit', 0, 1) : null,
    overwrite: !!v.overwrite,
    quiet: !!v.quiet,
  });
  if (v.json) process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  return 0;
}
