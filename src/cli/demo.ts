import * as path from 'node:path';
import { existsSync } from 'node:fs';
import { parseCommand, intOption } from './args.js';
import { LobesError } from '../util/errors.js';
import { BUILTIN_MODEL_DIR } from '../report/load.js';
import { MODEL_OPTIONS, OUTPUT_OPTIONS, QUIET_TEXT, helpLine } from './options.js';
import { stderrIO } from '../util/jobio.js';

const SPEC = {
  usage:
    'lobes demo [--model FILE.gguf|MODEL_DIR] [--cache DIR] [--out DIR] [--seed N] [--permutations N] [--quiet] [--json]',
  help: `
Run the whole pipeline on the built-in dataset (builtin:social) and a model: extract ->
wanda -> cluster -> report, and print where the report is. Without --model it uses the
built-in tiny model (models/tiny-llama), whose weights are random: its figures demonstrate
the pipeline, not a finding about any language model.

  --model M          a real model: a llama GGUF file (converted once into the cache; e.g.
                     SmolLM2-135M-Instruct, or an Ollama blob) or an ONNX model folder
  --cache DIR        where converted GGUF models are kept (default $LOBES_CACHE/gguf or ~/.cache/lobes/gguf)
  --out DIR          where to write (default ./lobes-demo): DIR/run (the run) and DIR/report.html
                     (a report.html lobes did not write there is refused before anything runs)
  --seed N           seed for wanda's permutations and t-SNE (default 0)
  --permutations N   label permutations for the p-values (default: each analysis sizes its
                     own to the family its p-values are read in; a smaller count makes the
                     verdicts say "not testable at R = N")
${helpLine('--quiet', QUIET_TEXT, 21)}
  --json             print {"run": DIR, "report": FILE} on stdout`,
  options: {
    ...MODEL_OPTIONS,
    out: { type: 'string' },
    seed: { type: 'string' },
    permutations: { type: 'string' },
    ...OUTPUT_OPTIONS,
  },
  positionals: [0, 0] as [number, number],
} as const;

/** Import one pipeline stage, or say plainly which stage this build lacks. */
async function stage<T>(name: string, load: () => Promise<any>, fn: string): Promise<T> {
  let mod: any;
  try {
    mod = await load();
  } catch (e: any) {
    throw new LobesError(`the ${name} stage is not available in this build (${String(e?.message ?? e).split('\n')[0]})`,
      { hint: 'the demo needs extract, wanda, cluster and report' });
  }
  if (typeof mod?.[fn] !== 'function')
    throw new LobesError(`the ${name} stage is not available in this build (${fn} is missing)`);
  return mod[fn] as T;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const v = args.values;
  const out = path.resolve(v.out ?? 'lobes-demo');
  const seed = intOption(v.seed, '--seed', 0, 0, 2 ** 32 - 1);
  // undefined unless given: wanda and cluster then size their counts to their families
  const permutations = v.permutations === undefined ? undefined : intOption(v.permutations, '--permutations', 100, 0);
  const quiet = !!v.quiet;
  const say = (m: string) => {
    if (!quiet) process.stderr.write(`demo: ${m}\n`);
  };
  const runDir = path.join(out, 'run');
  // The page's place is checked before the pipeline runs and before a GGUF is converted: a
  // report.html lobes did not write (or a folder or link there) is refused now, not after
  // minutes of extract, wanda and cluster.
  const checkPageFile = await stage<(file: string, sources?: readonly string[]) => void>('report',
    () => import('../report/index.js'), 'checkPageFile');
  checkPageFile(path.join(out, 'report.html'), [runDir]);
  if (!v.model && !existsSync(path.join(BUILTIN_MODEL_DIR, 'model.onnx'))) {
    throw new LobesError('the built-in tiny model is missing', { file: BUILTIN_MODEL_DIR,
      hint: 'reinstall lobes; the package ships models/tiny-llama' });
  }
  const { modelFolder } = await import('./convert.js');
  const model = v.model
    ? await modelFolder(v.model, { cache: v.cache, quiet })
    : { dir: BUILTIN_MODEL_DIR, source: null };
  const builtin = !v.model;
  const runExtract = await stage<(o: any) => Promise<unknown>>('extract', () => import('../extract/run.js'),
    'runExtract');
  const runWanda = await stage<(r: string, o: any) => Promise<{ settings: { block: number[] } }>>('wanda',
    () => import('../wanda/run.js'), 'runWanda');
  const runCluster = await stage<(r: string, o: any) => Promise<unknown>>('cluster', () => import('../cluster/run.js'),
    'runCluster');
  const writeReport = await stage<(r: string, o?: string) => Promise<string>>('report',
    () => import('../report/index.js'), 'writeReport');

  if (builtin) say(`the built-in model has random weights: these figures show the pipeline working, not a finding`);
  say(`1/4 extract: builtin:social through ${model.source ? model.source.path : model.dir} -> ${runDir}`);
  await runExtract({ model: model.dir, modelSource: model.source, data: 'builtin:social', out: runDir,
    capture: ['final', 'mlp'], dtype: 'fp32', io: stderrIO({ quiet }) });
  // Blocks as wanda chooses them by default: the paper's 256 x 256 where every projection then has
  // enough blocks for regions to be read, else the largest power of two below it that does.
  say('2/4 wanda: importance, regions and set differences by aspect');
  const w = await runWanda(runDir, { by: 'aspect', seed, permutations, io: stderrIO({ quiet }) });
  say(
    `    blocks ${w.settings.block.join(' x ')}${
      w.settings.block[0] === 256 ? " (the paper's)" : " (the paper's 256 x 256 would be too coarse for this model)"
    }`,
  );
  say('3/4 cluster: t-SNE of final.hidden and separation metrics');
  await runCluster(runDir, { seed, input: { by: 'aspect' }, metrics: { permutations },
    execution: { io: stderrIO({ quiet }) } });
  say('4/4 report');
  const report = await writeReport(runDir, path.join(out, 'report.html'));
  if (v.json) process.stdout.write(JSON.stringify({ run: runDir, report }) + '\n');
  else if (builtin)
    process.stdout.write(
      `report: ${report}\n(random-weights demo model: the figures demonstrate the pipeline, not a finding)\n`,
    );
  else
    process.stdout.write(
      `report: ${report}\n(150 built-in items: read each figure with its permutation null and chance level)\n`,
    );
  return 0;
}
