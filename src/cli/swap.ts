import { parseCommand, intOption, numOption } from './args.js';
import { runSwap, summaryLines } from '../swap/run.js';
import { DEFAULT_PROBE_REPEATS } from '../cluster/probecv.js';
import { UsageError } from '../util/errors.js';
import { OUTPUT_OPTIONS } from './options.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

const USAGE =
  'lobes swap RUN [--points HOOK,...] [--seed N] [--bootstrap B] [--permutations R] [--conditional-permutations R] [--control CONTROL_RUN] [--probe-repeats 5] [--probe-c C|nested] [--probe-pca 50] [--class-weight balanced] [--words token-counts|token-embedding-mean] [--group none] [--model DIR] [--threads N] [--out DIR] [--json] [--quiet]';

const HELP = `
The question/response swap analysis of a run extracted from socialeval:DIR?swap=SEED (every
response shown after its own question and after a question naming another aspect). On the
swapped samples, at every final and residual-stream capture point of the run (last token and
mean over the tokens), the probe of lobes cluster is fitted for the question's aspect and for the
response's aspect; the token baselines of the same texts go through the same probe. Each label is
tested beyond the other: its null shuffles it only within the strata of the other label (Holm over
points × labels). Paired bootstrap CIs: question − response, state − words, and (words + state) −
words. Writes RUN/swap/ (settings.json, swap.json, swap.csv).

  RUN                 a run of a swap composition (labels question_aspect, response_aspect, swapped)
  --points LIST       only these capture points (default: final.hidden, final.mean and every
                      layers.{i}.resid_out and layers.{i}.resid_out.mean the run holds)
  --seed N            seed of the folds, bootstrap and permutations (default 0)
  --bootstrap B       bootstrap resamples of every CI (default 1000)
  --permutations R    label permutations of each probe's plain null (default 20); when given
                      alone, also the most the conditional nulls get
  --conditional-permutations R  permutations of each conditional null (default: sized to the
                      family of points × labels, at most 100; beyond, the verdicts read z's
                      normal approximation)
  --control RUN       a random-weights control run (lobes extract --control random) of the same
                      model and data: the same probes and conditional tests on it, side by side
  --probe-repeats N   repeats of the stratified k-fold CV (default 5)
  --probe-c C|nested  the probe's C, or nested (default) as lobes cluster
  --probe-pca K       in-fold PCA components per feature block (default 50; 0 = every dimension)
  --class-weight balanced  weigh each class by n / (K · n_c)
  --words NAME        the word features of the incremental probe (default token-counts)
  --group none        ignore the run's groups (item_group, e.g. each response's world tree):
                      by default the folds keep groups whole, the bootstraps resample them, and
                      the conditional nulls shuffle within the cells of the other label × group
  --model DIR         the run's model folder, when it has moved (checked by hash)
  --threads N         worker threads (default: all cores; results do not depend on it)
  --out DIR           output folder (default RUN/swap)
  --json              print swap.json on stdout
  --quiet             no progress output
`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(argv, {
    usage: USAGE,
    help: HELP,
    positionals: [1, 1],
    options: {
      points: { type: 'string' },
      seed: { type: 'string' },
      bootstrap: { type: 'string' },
      permutations: { type: 'string' },
      'conditional-permutations': { type: 'string' },
      control: { type: 'string' },
      'probe-repeats': { type: 'string' },
      'probe-c': { type: 'string' },
      'probe-pca': { type: 'string' },
      'class-weight': { type: 'string' },
      words: { type: 'string' },
      group: { type: 'string' },
      model: { type: 'string' },
      threads: { type: 'string' },
      out: { type: 'string' },
      ...OUTPUT_OPTIONS,
    },
  });
  if (!parsed) return 0;
  const v = parsed.values;
  const cw = v['class-weight'];
  if (cw !== undefined && cw !== 'balanced')
    throw new UsageError(`--class-weight ${cw}: the only class weighting is 'balanced'`);
  if (v.group !== undefined && v.group !== 'none')
    throw new UsageError(`--group ${v.group}: swap reads the run's item_group axis; the only choice is --group none`);
  const { result, outDir } = await runSwap(parsed.positionals[0], {
    points: v.points?.split(',').map((s: string) => s.trim()).filter(Boolean),
    seed: intOption(v.seed, '--seed', 0, 0, 2 ** 32 - 1),
    bootstrap: intOption(v.bootstrap, '--bootstrap', 1000, 0),
    permutations: v.permutations === undefined ? undefined : intOption(v.permutations, '--permutations', 20, 0),
    conditionalPermutations: v['conditional-permutations'] === undefined
      ? undefined
      : intOption(v['conditional-permutations'], '--conditional-permutations', 0, 0),
    control: v.control,
    probeRepeats: intOption(v['probe-repeats'], '--probe-repeats', DEFAULT_PROBE_REPEATS, 1, 100),
    probeC: v['probe-c'] === undefined || v['probe-c'] === 'nested'
      ? 'nested'
      : numOption(v['probe-c'], '--probe-c', 1, 1e-9),
    probePca: intOption(v['probe-pca'], '--probe-pca', 50, 0),
    classWeight: cw === 'balanced' ? 'balanced' : null,
    words: v.words,
    ungrouped: v.group === 'none',
    model: v.model,
    threads: v.threads === undefined ? undefined : intOption(v.threads, '--threads', 1, 1, 256),
    out: v.out,
    io: stderrIO({ quiet: !!v.quiet || !!v.json, signal: interruptSignal('swap') }),
  });
  if (v.json) process.stdout.write(JSON.stringify(result, null, 1) + '\n');
  else process.stdout.write([...summaryLines(result), ...(outDir ? [`wrote ${outDir}`] : [])].join('\n') + '\n');
  return 0;
}
