/** `lobes lens RUN`: the command module of the logit lens (declared in src/lens/analysis.ts). */
import { parseCommand, intOption } from '../cli/args.js';
import { DEFAULT_TOP_K, lensLines, runLens } from './run.js';
import { stderrIO } from '../util/jobio.js';

const SPEC = {
  usage: 'lobes lens RUN [--model DIR] [--top-k K] [--out DIR] [--json] [--quiet]',
  help: `
The logit lens: every layer's residual stream at the run's captured position (the last token,
layers.{i}.resid_out) read through the model's final RMSNorm (its weight and epsilon) and its
unembedding (lm_head, or the tied embeddings), as if that layer were the last. Per layer: the
top-k tokens with their probabilities, the entropy, and the KL divergence of the final layer's
distribution from it; for items with answer options (the label "answer", a letter), the rank
and probability of the correct option's token and the accuracy over the options, with chance.
Writes RUN/lens/ (settings.json, lens.json).

  RUN            a run extracted with --capture resid (every layer's layers.{i}.resid_out)
  --model DIR    the run's model folder, when it has moved (checked by hash)
  --top-k K      tokens listed per layer and item (default ${DEFAULT_TOP_K})
  --out DIR      output folder (default RUN/lens)
  --json         print lens.json on stdout
  --quiet        no progress output`,
  options: { model: { type: 'string' }, 'top-k': { type: 'string' }, out: { type: 'string' }, json: { type: 'boolean' },
    quiet: { type: 'boolean', short: 'q' } },
  positionals: [1, 1] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const v = args.values;
  const { result, outDir } = await runLens(args.positionals[0]!, { model: v.model,
    topK: intOption(v['top-k'], '--top-k', DEFAULT_TOP_K, 1, 1000), out: v.out,
    io: stderrIO({ quiet: !!v.quiet || !!v.json }) });
  if (v.json) process.stdout.write(JSON.stringify(result) + '\n');
  else process.stdout.write([...lensLines(result), ...(outDir ? [`wrote ${outDir}`] : [])].join('\n') + '\n');
  return 0;
}
