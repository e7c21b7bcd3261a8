import { parseCommand, intOption } from './args.js';
import { UsageError } from '../util/errors.js';
import { parseShard, expandOut } from '../store/layout.js';
import type { Device } from '../runtime/types.js';
import { DEFAULT_CHUNK_UNITS, DEFAULT_EVAL_BATCH } from '../eval/run.js';
import type { EvalSummary } from '../eval/summary.js';
import { formatSummary } from '../eval/format.js';

const spec = {
  usage:
    'lobes eval MODEL_DIR|FILE.gguf --data SPEC --out DIR [--task iae|gae|both] [--limit N] [--shuffles K] [--orders random|cyclic] [--seed N] [--cot N] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--chunk-units N] [--shard i/n|auto] [--chat-template auto|on|off] [--answer-prefix TEXT] [--prompt TEMPLATE_FILE] [--bootstrap B] [--share-prefix auto|on|off] [--max-tokens N] [--scoring letter|cloze] [--target-delimiter TEXT] [--mutual-info] [--cache DIR] [--layout genai|explicit] [--skip-invalid] [--quiet] [--json]\n' +
    '       lobes eval merge SHARD_DIR... --out DIR\n' +
    '       lobes eval label RUN EVAL_DIR [--axis correct]',
  help: `
Evaluate a model on SocialEval (IAE and GAE) or on any multiple-choice items, scoring the
answer letter's next-token logit (docs/eval.md). Results go to DIR: records.jsonl (every
item, every shuffle: prompt, candidate tokens, logits, pick; the vote), episodes.jsonl (GAE
walks), summary.json (accuracies with bootstrap 95% CIs and chance levels, position bias).
Rerunning the same command resumes an interrupted evaluation; a rerun with different
settings is refused.

  MODEL                ONNX model folder (model.onnx and tokenizer files), or a GGUF file
                       (converted once into the cache; see lobes convert --help)
  --cache DIR          where converted GGUF models are kept (default $LOBES_CACHE/gguf or
                       ~/.cache/lobes/gguf)
  --layout L           graph layout of a GGUF's conversion: genai (default: with the KV cache that
                       --cot and --share-prefix use) or explicit
  --data SPEC          socialeval:PATH[?lang=en|zh&...]  (SocialEval world trees), or
                       jsonl:FILE?question=F&options=F&answer=F[&label=F,...][&id=F]
  --out DIR            evaluation folder to create or resume; {i}/{n} are replaced by the shard
  --task T             iae, gae or both (default both; socialeval: only)
  --limit N            a seeded subset: N items stratified by language and aspect, and N world
                       trees stratified by language and category (quick looks)
  --shuffles K         option orders per item, majority vote (default 3)
  --orders MODE        random: K independent shuffles (default, as SocialEval); cyclic: K
                       rotations of one shuffle, so that with K = the number of options every
                       option sits in every slot once
  --seed N             seed of the option orders, --limit and the bootstrap (default 0)
  --cot N              generate up to N tokens of reasoning greedily (KV cache) before the
                       answer, with the published explanation prompts (default 0: none)
  --device D           cpu (default), cuda or webgpu; --device-id N picks the GPU
  --batch N            prompts per batch (default ${DEFAULT_EVAL_BATCH}); --token-budget N: padded tokens per batch
  --chunk-units N      units (items or world trees) per record chunk (default ${DEFAULT_CHUNK_UNITS}); shards need the same
  --shard S            i/n (0-based), auto or auto/N, as for lobes extract
  --chat-template M    auto (default: use the tokenizer's chat template if it has one), on, off
  --answer-prefix T    text the letter follows (default {"choice": " for SocialEval, "Answer: " otherwise)
  --prompt FILE        template for jsonl items: {question}, {choices}, any {FIELD} of the line
  --bootstrap B        bootstrap resamples for the CIs (default 2000)
  --max-tokens N       skip items (and GAE decisions) whose prompt is longer than N tokens, listing
                       them (default: the model's context length from its config files; 0: no limit)
  --share-prefix M     auto (default: on for --device cpu when the model has a KV cache), on, off:
                       score an item's shuffles through the KV cache, computing the tokens
                       before the options once
  --scoring S          letter (default): the answer letter's logit; cloze: every option's text
                       scored as a continuation of the prompt, lm-evaluation-harness style
                       (acc, acc_norm per character, acc_bytes per UTF-8 byte; docs/eval.md)
  --target-delimiter T cloze: text between the prompt and each option (default " ", or "" when
                       the prompt is cut where its {choices} would go, as for SocialEval)
  --mutual-info        cloze: also score each option without the prompt (acc_mutual_info)
  --skip-invalid       leave out invalid items/trees (reported) instead of stopping
  --json               print summary.json on stdout

lobes eval merge joins shard folders of one evaluation. lobes eval label writes the label axis
"correct" (correct / wrong / unevaluated) into a run directory from an evaluation of the same
items, for lobes cluster RUN --by correct and lobes wanda RUN --by correct.
`,
  options: {
    data: { type: 'string' },
    out: { type: 'string' },
    task: { type: 'string' },
    limit: { type: 'string' },
    shuffles: { type: 'string' },
    orders: { type: 'string' },
    seed: { type: 'string' },
    cot: { type: 'string' },
    device: { type: 'string' },
    'device-id': { type: 'string' },
    batch: { type: 'string' },
    'token-budget': { type: 'string' },
    'chunk-units': { type: 'string' },
    shard: { type: 'string' },
    'chat-template': { type: 'string' },
    'answer-prefix': { type: 'string' },
    prompt: { type: 'string' },
    bootstrap: { type: 'string' },
    'share-prefix': { type: 'string' },
    'max-tokens': { type: 'string' },
    cache: { type: 'string' },
    layout: { type: 'string' },
    axis: { type: 'string' },
    scoring: { type: 'string' },
    'target-delimiter': { type: 'string' },
    'mutual-info': { type: 'boolean' },
    'skip-invalid': { type: 'boolean' },
    quiet: { type: 'boolean', short: 'q' },
    json: { type: 'boolean' },
  },
  positionals: [1, Infinity] as [number, number],
} as const;

const DEVICES: Device[] = ['cpu', 'cuda', 'webgpu'];

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  const v = p.values;
  const [first, ...rest] = p.positionals;
  if (first === 'merge') {
    if (rest.length < 1) throw new UsageError('lobes eval merge needs at least one shard folder');
    if (!v.out) throw new UsageError('--out is required');
    const { mergeEvals } = await import('../eval/merge.js');
    const m = await mergeEvals(rest, v.out, { quiet: !!v.quiet });
    if (v.json) process.stdout.write(JSON.stringify(m, null, 2) + '\n');
    return 0;
  }
  if (first === 'label') {
    if (rest.length !== 2) throw new UsageError('lobes eval label needs RUN and EVAL_DIR', 'usage: lobes eval label RUN EVAL_DIR [--axis correct]');
    const { labelRunFromEval } = await import('../eval/link.js');
    const r = await labelRunFromEval(rest[0]!, rest[1]!, { axis: v.axis });
    if (!v.quiet) {
      process.stderr.write(`eval label: ${r.file}: ${r.counts.correct} correct, ${r.counts.wrong} wrong, ${r.counts.unevaluated} unevaluated of ${r.samples} samples (lobes cluster ${rest[0]} --by ${r.axis})\n`);
      if (r.otherModel) process.stderr.write('eval label: note: the evaluation scored another model than the run captured\n');
    }
    if (v.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    return 0;
  }
  if (rest.length) throw new UsageError(`expected one MODEL, got ${p.positionals.length} arguments`, `usage: ${spec.usage.split('\n')[0]!.slice(0, 60)}…`);
  for (const k of ['data', 'out']) if (!v[k]) throw new UsageError(`--${k} is required`, 'usage: lobes eval MODEL --data SPEC --out DIR');
  const task = v.task ?? 'both';
  if (!['iae', 'gae', 'both'].includes(task)) throw new UsageError(`--task must be iae, gae or both, got ${JSON.stringify(task)}`);
  const device = (v.device ?? 'cpu') as Device;
  if (!DEVICES.includes(device)) throw new UsageError(`--device must be one of ${DEVICES.join(', ')}, got ${JSON.stringify(v.device)}`);
  const chat = v['chat-template'] ?? 'auto';
  if (!['auto', 'on', 'off'].includes(chat)) throw new UsageError(`--chat-template must be auto, on or off, got ${JSON.stringify(chat)}`);
  const share = v['share-prefix'] ?? 'auto';
  if (!['auto', 'on', 'off'].includes(share)) throw new UsageError(`--share-prefix must be auto, on or off, got ${JSON.stringify(share)}`);
  const shard = parseShard(v.shard);
  const { runEval, readEvalResults } = await import('../eval/run.js');
  const layout = v.layout ?? 'genai';
  if (layout !== 'genai' && layout !== 'explicit') throw new UsageError(`--layout must be genai or explicit, got ${JSON.stringify(layout)}`);
  const { modelFolder } = await import('./convert.js');
  const model = await modelFolder(first!, { cache: v.cache, layout, quiet: !!v.quiet });
  const m = await runEval({
    model: model.dir,
    modelSource: model.source,
    data: v.data,
    out: expandOut(v.out, shard),
    task: task as 'iae' | 'gae' | 'both',
    device,
    deviceId: v['device-id'] !== undefined ? intOption(v['device-id'], '--device-id', 0, 0) : undefined,
    shuffles: v.shuffles !== undefined ? intOption(v.shuffles, '--shuffles', 3, 1) : undefined,
    orders: v.orders as 'random' | 'cyclic' | undefined,
    seed: intOption(v.seed, '--seed', 0, 0),
    limit: v.limit !== undefined ? intOption(v.limit, '--limit', 0, 1) : null,
    cot: intOption(v.cot, '--cot', 0, 0),
    batch: v.batch !== undefined ? intOption(v.batch, '--batch', DEFAULT_EVAL_BATCH, 1) : undefined,
    tokenBudget: v['token-budget'] !== undefined ? intOption(v['token-budget'], '--token-budget', 0, 1) : undefined,
    chunkUnits: intOption(v['chunk-units'], '--chunk-units', DEFAULT_CHUNK_UNITS, 1),
    shard,
    chatTemplate: chat as 'auto' | 'on' | 'off',
    answerPrefix: v['answer-prefix'],
    promptFile: v.prompt,
    bootstrap: intOption(v.bootstrap, '--bootstrap', 2000, 0),
    sharePrefix: share as 'auto' | 'on' | 'off',
    maxTokens: v['max-tokens'] !== undefined ? intOption(v['max-tokens'], '--max-tokens', 0, 0) : undefined,
    skipInvalid: !!v['skip-invalid'],
    scoring: (v.scoring ?? 'letter') as 'letter' | 'cloze',
    targetDelimiter: v['target-delimiter'] ?? null,
    mutualInfo: !!v['mutual-info'],
    quiet: !!v.quiet,
  });
  const r = readEvalResults(expandOut(v.out, shard));
  if (v.json) process.stdout.write(JSON.stringify(r.summary as EvalSummary, null, 2) + '\n');
  else if (!v.quiet) process.stdout.write(formatSummary(r.summary, m));
  return 0;
}
