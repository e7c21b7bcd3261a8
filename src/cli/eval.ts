import { INTERVENE_HELP, INTERVENE_OPTION, interventionsOf } from './intervene.js';
import { parseCommand, intOption, requireValues, type CommandSpec } from './args.js';
import { UsageError } from '../util/errors.js';
import { parseShard, expandOut } from '../store/layout.js';
import { DEFAULT_CHUNK_UNITS, DEFAULT_EVAL_BATCH } from '../eval/run.js';
import { LONG_PROMPT_TOKEN_BUDGET } from '../runtime/batching.js';
import type { EvalSummary } from '../eval/summary.js';
import { formatSummary } from '../eval/format.js';
import { controlModel, controlSeedOf } from './control.js';
import { CHAT_TEMPLATE_OPTION, DEVICE_OPTIONS, HELP, LIMIT_OPTIONS, MODEL_OPTIONS, OUTPUT_OPTIONS, deviceOf, limitOf,
  modelArg } from './options.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

const spec = {
  usage:
    'lobes eval --model MODEL_DIR|FILE.gguf --data SPEC --out DIR [--task iae|gae|both] [--limit N [--by LABELS]] [--shuffles K] [--orders random|cyclic] [--seed N] [--cot N] [--device cpu|cuda|webgpu] [--device-id N] [--batch N | --token-budget N] [--chunk-units N] [--shard i/n|auto] [--chat-template auto|on|off] [--answer-prefix TEXT] [--prompt TEMPLATE_FILE] [--bootstrap B] [--share-prefix auto|on|off] [--skip-longer-than N] [--ignore-plan] [--scoring letter|cloze] [--target-delimiter TEXT] [--mutual-info] [--cache DIR] [--layout genai|explicit] [--control random [--control-seed N]] [--intervene SPEC ...] [--skip-invalid] [--quiet] [--json]\n' +
    '       lobes eval merge SHARD_DIR... --out DIR      (lobes eval merge --help)\n' +
    '       lobes eval label RUN EVAL_DIR [--axis correct]      (lobes eval label --help)',
  name: 'lobes eval',
  help: `
Evaluate a model on SocialEval (IAE and GAE) or on any multiple-choice items, scoring the
answer letter's next-token logit (docs/eval.md). Results go to DIR: records.jsonl (every
item, every shuffle: prompt, candidate tokens, logits, pick; the vote), episodes.jsonl (GAE
walks), summary.json (accuracies with bootstrap 95% CIs and chance levels, position bias).
Rerunning the same command resumes an interrupted evaluation; a rerun with different
settings is refused.

${HELP.model}
${HELP.cache}
  --layout L           graph layout of a GGUF's conversion: genai (default: with the KV cache that
                       --cot and --share-prefix use) or explicit
  --control random     evaluate a random-weights control of the model instead: the weights
                       lobes extract --control random draws for the same model and seed
                       (docs/controls.md), in the layout of the trained model's conversion (a
                       GGUF: genai, with its KV cache); recorded in eval.json as model.control
  --control-seed N     seed of the control's weights (default 0)
${INTERVENE_HELP}
  --data SPEC          socialeval:PATH[?lang=en|zh&...]  (SocialEval world trees), or
                       jsonl:FILE?question=F&options=F&answer=F[&label=F,...][&id=F]
  --out DIR            evaluation folder to create or resume; {i}/{n} are replaced by the shard
  --task T             iae, gae or both (default both; socialeval: only)
${HELP.limit}; world trees (GAE) are
                       stratified by language and category
  --shuffles K         option orders per item, majority vote (default 3)
  --orders MODE        random: K independent shuffles (default, as SocialEval); cyclic: K
                       rotations of one shuffle, so that with K = the number of options every
                       option sits in every slot once
${HELP.seed('the option orders, --limit and the bootstrap')}
  --cot N              generate up to N tokens of reasoning greedily (KV cache) before the
                       answer, with the published explanation prompts (default 0: none)
${HELP.device}
  --batch N            prompts per batch (default ${DEFAULT_EVAL_BATCH}); --token-budget N: padded tokens per batch
                       (on the CPU: at most ${LONG_PROMPT_TOKEN_BUDGET} unless --token-budget is given)
  --chunk-units N      units (items or world trees) per record chunk (default ${DEFAULT_CHUNK_UNITS}); shards need the same
  --shard S            i/n (0-based), auto or auto/N, as for lobes extract
${HELP.chatTemplate('auto')}
  --answer-prefix T    text the letter follows (default {"choice": " for SocialEval, "Answer: " otherwise)
  --prompt FILE        template for jsonl items: {question}, {choices}, any {FIELD} of the line
  --bootstrap B        bootstrap resamples for the CIs (default 2000)
  --skip-longer-than N skip items (and GAE decisions) whose prompt is longer than N tokens, listing
                       them (default and 0: the model's context length from its config files;
                       a larger N is capped there, since positions past the context are outside
                       what the model was trained on); a prompt is never cut (formerly --max-tokens)
  --ignore-plan        run even if the memory plan says a batch needs more memory than the
                       device has (with a warning)
  --share-prefix M     auto (default: on for --device cpu when the model has a KV cache), on, off:
                       score an item's shuffles through the KV cache, computing the tokens
                       before the options once
  --scoring S          letter (default): the answer letter's logit; cloze: every option's text
                       scored as a continuation of the prompt, lm-evaluation-harness style
                       (acc, acc_norm per character, acc_bytes per UTF-8 byte; docs/eval.md)
  --target-delimiter T cloze: text between the prompt and each option (default " ", or "" when
                       the prompt is cut where its {choices} would go, as for SocialEval)
  --mutual-info        cloze: also score each option without the prompt (acc_mutual_info)
  --skip-invalid       leave out invalid items/trees (reported) instead of stopping (an item
                       with more than 26 options is invalid where its options are lettered)
${HELP.quiet}
  --json               print summary.json on stdout

lobes eval merge joins shard folders of one evaluation. lobes eval label writes the label axis
"correct" (correct / wrong / unevaluated) into a run directory from an evaluation of the same
items, for lobes cluster RUN --by correct and lobes wanda RUN --by correct.
`,
  options: {
    ...MODEL_OPTIONS,
    data: { type: 'string' },
    out: { type: 'string' },
    task: { type: 'string', choices: ['iae', 'gae', 'both'] as const },
    ...LIMIT_OPTIONS,
    shuffles: { type: 'string' },
    orders: { type: 'string', choices: ['random', 'cyclic'] as const },
    cot: { type: 'string' },
    ...DEVICE_OPTIONS,
    batch: { type: 'string' },
    'token-budget': { type: 'string' },
    'chunk-units': { type: 'string' },
    shard: { type: 'string' },
    ...CHAT_TEMPLATE_OPTION,
    'answer-prefix': { type: 'string' },
    prompt: { type: 'string', key: 'promptFile' },
    bootstrap: { type: 'string' },
    'share-prefix': { type: 'string', choices: ['auto', 'on', 'off'] as const },
    'skip-longer-than': { type: 'string', key: 'maxTokens' },
    'max-tokens': { type: 'string', renamed: 'skip-longer-than' },
    'ignore-plan': { type: 'boolean' },
    layout: { type: 'string', choices: ['genai', 'explicit'] as const },
    control: { type: 'string', choices: ['random'] as const },
    'control-seed': { type: 'string', key: 'control.seed' },
    ...INTERVENE_OPTION,
    scoring: { type: 'string', choices: ['letter', 'cloze'] as const },
    'target-delimiter': { type: 'string' },
    'mutual-info': { type: 'boolean' },
    'skip-invalid': { type: 'boolean' },
    ...OUTPUT_OPTIONS,
  },
  positionals: [0, 1] as [number, number],
} as const;

const mergeSpec: CommandSpec = {
  usage: 'lobes eval merge SHARD_DIR... --out DIR [--quiet] [--json]',
  name: 'lobes eval merge',
  help: `
Join the complete shard folders of one evaluation (lobes eval --shard i/n) into one folder,
after checking they are the same evaluation (every setting but the shard) and cover every
chunk exactly once. The merged records.jsonl is the file one unsharded evaluation writes.

  SHARD_DIR...         the shard folders
  --out DIR            new (or empty) folder for the merged evaluation
${HELP.quiet}
  --json               print the merged manifest as JSON on stdout
`,
  options: { out: { type: 'string' }, ...OUTPUT_OPTIONS },
  positionals: [1, Infinity],
};

const labelSpec: CommandSpec = {
  usage: 'lobes eval label RUN EVAL_DIR [--axis correct] [--quiet] [--json]',
  name: 'lobes eval label',
  help: `
Write a label axis into a run directory from an evaluation of the same items: correct, wrong
or unevaluated (not in the evaluation, e.g. outside its --limit sample), so that
lobes cluster RUN --by correct and lobes wanda RUN --by correct compare what the model got
right with what it got wrong.

  RUN                  the run directory (lobes extract)
  EVAL_DIR             the evaluation folder (lobes eval)
  --axis NAME          name of the label axis (default correct)
${HELP.quiet}
  --json               print what was written as JSON on stdout
`,
  options: { axis: { type: 'string' }, ...OUTPUT_OPTIONS },
  positionals: [2, 2],
};

async function merge(argv: string[]): Promise<number> {
  const p = parseCommand(argv, mergeSpec);
  if (!p) return 0;
  const v = p.values;
  if (!v.out) throw new UsageError('--out is required', `usage: ${mergeSpec.usage}`);
  const { mergeEvals } = await import('../eval/merge.js');
  const m = await mergeEvals(p.positionals, v.out, { io: stderrIO({ quiet: !!v.quiet }) });
  if (v.json) process.stdout.write(JSON.stringify(m, null, 2) + '\n');
  return 0;
}

async function label(argv: string[]): Promise<number> {
  const p = parseCommand(argv, labelSpec);
  if (!p) return 0;
  const v = p.values;
  const [runDir, evalDir] = [p.positionals[0]!, p.positionals[1]!];
  const { labelRunFromEval } = await import('../eval/link.js');
  const r = await labelRunFromEval(runDir, evalDir, { axis: v.axis });
  if (!v.quiet) {
    process.stderr.write(
      `eval label: ${r.file}: ${r.counts.correct} correct, ${r.counts.wrong} wrong, ${r.counts.unevaluated} unevaluated of ${r.samples} samples (lobes cluster ${runDir} --by ${r.axis})\n`,
    );
  }
  // A note on what the label means is a warning: it prints under --quiet too.
  if (r.otherModel)
    process.stderr.write('eval label: warning: the evaluation scored another model than the run captured\n');
  if (v.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'merge') return merge(argv.slice(1));
  if (argv[0] === 'label') return label(argv.slice(1));
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  const v = requireValues(p.values, ['data', 'out'] as const, 'usage: lobes eval --model MODEL --data SPEC --out DIR');
  const { model: modelArgument } = modelArg(p, spec.usage);
  const { limit, by, seed } = limitOf(v);
  const shard = parseShard(v.shard);
  const { runEval, readEvalResults } = await import('../eval/run.js');
  // The data and the prompt file are checked before a model is loaded or converted (minutes for a GGUF).
  const { checkDataSpec, checkInputFile } = await import('../data/index.js');
  checkDataSpec(v.data, ['socialeval', 'jsonl']);
  if (v.prompt) checkInputFile(v.prompt);
  const { modelFolder } = await import('./convert.js');
  const controlSeed = controlSeedOf(v);
  const layout = v.layout ?? 'genai';
  const interventions = interventionsOf(v);
  const model = await modelFolder(modelArgument, { cache: v.cache, layout, quiet: !!v.quiet });
  const control = controlSeed === null
    ? null
    : await controlModel(modelArgument, model, { seed: controlSeed, cache: v.cache, quiet: !!v.quiet, layout,
      command: 'eval' });
  const { device, deviceId } = deviceOf(v);
  const m = await runEval({
    model: control?.dir ?? model.dir,
    modelSource: model.source,
    control: control?.info ?? null,
    data: v.data,
    out: expandOut(v.out, shard),
    task: v.task ?? 'both',
    device,
    deviceId,
    shuffles: v.shuffles !== undefined ? intOption(v.shuffles, '--shuffles', 3, 1) : undefined,
    orders: v.orders as 'random' | 'cyclic' | undefined,
    seed,
    limit,
    by,
    cot: intOption(v.cot, '--cot', 0, 0),
    batch: v.batch !== undefined ? intOption(v.batch, '--batch', DEFAULT_EVAL_BATCH, 1) : undefined,
    tokenBudget: v['token-budget'] !== undefined ? intOption(v['token-budget'], '--token-budget', 0, 1) : undefined,
    chunkUnits: intOption(v['chunk-units'], '--chunk-units', DEFAULT_CHUNK_UNITS, 1),
    shard,
    chatTemplate: v['chat-template'] ?? 'auto',
    answerPrefix: v['answer-prefix'],
    promptFile: v.prompt,
    bootstrap: intOption(v.bootstrap, '--bootstrap', 2000, 0),
    sharePrefix: v['share-prefix'] ?? 'auto',
    maxTokens: v['skip-longer-than'] !== undefined
      ? intOption(v['skip-longer-than'], '--skip-longer-than', 0, 0)
      : undefined,
    skipInvalid: !!v['skip-invalid'],
    ignorePlan: !!v['ignore-plan'],
    scoring: (v.scoring ?? 'letter') as 'letter' | 'cloze',
    targetDelimiter: v['target-delimiter'] ?? null,
    mutualInfo: !!v['mutual-info'],
    ...(interventions.length ? { interventions } : {}),
    io: stderrIO({ quiet: !!v.quiet, signal: interruptSignal('eval') }),
  });
  const r = readEvalResults(expandOut(v.out, shard));
  if (v.json) process.stdout.write(JSON.stringify(r.summary as EvalSummary, null, 2) + '\n');
  else if (!v.quiet) process.stdout.write(formatSummary(r.summary, m));
  return 0;
}
