import { parseCommand } from './args.js';
import { UsageError } from '../util/errors.js';
import { mergeRuns } from '../store/merge.js';
import { OUTPUT_OPTIONS } from './options.js';
import { stderrIO } from '../util/jobio.js';

const spec = {
  usage: 'lobes merge SHARD_RUN... --out RUN [--quiet] [--json]',
  help: `
Merge the shard runs of one extraction (lobes extract --shard ...) into one run.
The shards must come from the same model, dataset and settings, and together hold
every sample exactly once; overlapping, missing, incomplete or mismatched shards are
refused with the reason. Every chunk file is checked against its sha256 while copied.
The merged run's activation files are byte-identical to those of a single run.

  --out RUN    new (or empty) folder for the merged run
  --quiet      no progress output
  --json       print the merged manifest as JSON on stdout
`,
  options: {
    out: { type: 'string' },
    ...OUTPUT_OPTIONS,
  },
  positionals: [1, Infinity] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, spec);
  if (!p) return 0;
  if (!p.values.out) throw new UsageError('--out is required', `usage: ${spec.usage}`);
  const m = await mergeRuns(p.positionals, p.values.out, { io: stderrIO({ quiet: !!p.values.quiet }) });
  if (p.values.json) process.stdout.write(JSON.stringify(m, null, 2) + '\n');
  return 0;
}
