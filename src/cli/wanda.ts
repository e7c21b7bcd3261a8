import { parseCommand, intOption, numOption } from './args.js';
import { UsageError } from '../util/errors.js';
import { runWanda, DEFAULT_PERMUTATIONS } from '../wanda/run.js';
import type { TopSpec } from '../wanda/regions.js';

const USAGE =
  'lobes wanda RUN [--model DIR|FILE.gguf] [--by LABEL] [--block 256|auto] [--top FRACTION] [--top-count N] [--scope matrix|layer|global] [--permutations R] [--seed N] [--resolution block|weight] [--threads N] [--json] [--quiet]';

const HELP = `
Wanda importance per group, pooled in blocks, top-block regions per group, set differences
between every pair of groups, and their structure metrics against a label-permutation null.
Writes RUN/wanda/ (pooled.safetensors, regions.json, metrics.json, metrics.csv, settings.json).

  --model M          the model whose weights are scored: an ONNX model folder/file, a llama GGUF
                     file (its dequantized weights, streamed a tensor at a time) or a safetensors
                     checkpoint (file, folder, or sharded with model.safetensors.index.json)
                     (default: the run's model; for a run extracted from a GGUF, that GGUF
                     while it is unchanged, else the converted folder)
  --weights-from M   the same as --model (formerly --weights)
  --by LABEL         label axis whose values are the groups (default: aspect)
  --block N|RxC|auto block size in W[d_out, d_in] (default 256, the paper's); auto: the largest
                     power of two ≤ 256 that gives every matrix ≥ 16 blocks on its short side and
                     keeps ≥ 10 of them in the top selection (docs/wanda.md); a warning names
                     every matrix that is coarser than that
  --top FRACTION     keep this fraction of blocks per group (default 0.1)
  --top-count N      keep N blocks per group instead of a fraction
  --scope S          where the top blocks are chosen: matrix (default), layer or global
  --permutations R   label shuffles for the null (default ${DEFAULT_PERMUTATIONS}; 0 = no null)
  --seed N           seed of the shuffles (default 0; recorded in settings.json)
  --resolution R     block (default): rank pooled blocks; weight: rank individual weights
                     (top-k per matrix) and report their block shares
  --threads N        worker threads for the weight pass and the permutation null (default: all cores)
  --json             print the metrics as JSON on stdout
  --quiet            no progress output (warnings still print)
`;

function parseBlock(v: string | undefined): [number, number] | 'auto' | undefined {
  if (v === undefined) return undefined;
  if (v === 'auto') return 'auto';
  const m = /^(\d+)(?:x(\d+))?$/.exec(v);
  if (!m) throw new UsageError(`--block must be N, RxC or auto (e.g. 256, 128x256), got ${JSON.stringify(v)}`);
  const r = Number(m[1]);
  const c = m[2] !== undefined ? Number(m[2]) : r;
  if (r < 1 || c < 1) throw new UsageError('--block sizes must be at least 1');
  return [r, c];
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, {
    usage: USAGE,
    help: HELP,
    positionals: [1, 1],
    options: {
      model: { type: 'string' },
      'weights-from': { type: 'string' },
      weights: { type: 'string', renamed: 'weights-from' },
      by: { type: 'string' },
      block: { type: 'string' },
      top: { type: 'string' },
      'top-count': { type: 'string' },
      scope: { type: 'string', choices: ['matrix', 'layer', 'global'] },
      permutations: { type: 'string' },
      seed: { type: 'string' },
      resolution: { type: 'string', choices: ['block', 'weight'] },
      threads: { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean', short: 'q' },
    },
  });
  if (!p) return 0;
  const v = p.values;
  if (v.top !== undefined && v['top-count'] !== undefined) throw new UsageError('give --top or --top-count, not both');
  if (v.model !== undefined && v['weights-from'] !== undefined && v.model !== v['weights-from']) throw new UsageError('--model and --weights-from name the same thing; give one');
  const scope = (v.scope ?? 'matrix') as TopSpec['scope'];
  const top: Partial<TopSpec> =
    v['top-count'] !== undefined
      ? { kind: 'count', value: intOption(v['top-count'], '--top-count', 1, 1), scope }
      : { kind: 'fraction', value: numOption(v.top, '--top', 0.1, 0, 1), scope };
  const resolution = v.resolution ?? 'block';
  const res = await runWanda(p.positionals[0], {
    weights: v['weights-from'] ?? v.model,
    by: v.by,
    block: parseBlock(v.block),
    top,
    permutations: intOption(v.permutations, '--permutations', DEFAULT_PERMUTATIONS, 0),
    seed: intOption(v.seed, '--seed', 0, 0, 0xffffffff),
    resolution,
    threads: v.threads !== undefined ? intOption(v.threads, '--threads', 1, 1) : undefined,
    quiet: !!v.quiet || !!v.json,
  });
  if (v.json) {
    process.stdout.write(JSON.stringify({ dir: res.dir, settings: res.settings, metrics: res.metrics }, null, 1) + '\n');
  } else {
    const out: string[] = [`wrote ${res.dir} (blocks ${res.settings.block.join('×')})`, `groups (${res.settings.by}): ${res.metrics.groups.map((g) => `${g.group} (${g.n})`).join(', ')}`];
    const p = (x: number | null | undefined) => (x === null || x === undefined ? '' : ` (p=${x.toFixed(3)})`);
    for (const pr of res.metrics.pairs) {
      out.push(
        `${pr.a} vs ${pr.b}: Jaccard ${pr.jaccard.value.toFixed(3)}${p(pr.jaccard.pLower)}, ` +
          `isolation ${pr.a}\\${pr.b} ${pr.isolationAB.value.toFixed(3)}${p(pr.isolationAB.p)} (${pr.sizeAminusB} blocks), ` +
          `${pr.b}\\${pr.a} ${pr.isolationBA.value.toFixed(3)}${p(pr.isolationBA.p)} (${pr.sizeBminusA} blocks)`,
      );
    }
    if (res.metrics.pairs.length && res.settings.permutations > 0) out.push(`p: share of ${res.settings.permutations} label permutations at least as extreme (Jaccard: as low; isolation: as high)`);
    process.stdout.write(out.join('\n') + '\n');
  }
  return 0;
}
