import { parseCommand, intOption, numOption, parseInteger, parseNumber } from './args.js';
import { UsageError } from '../util/errors.js';
import { runWanda, DEFAULT_PERMUTATIONS, MAX_SIZED_PERMUTATIONS } from '../wanda/run.js';
import type { TopSpec } from '../wanda/regions.js';
import { verdictTable, verdictTableLines } from '../report/verdict-table.js';
import { OUTPUT_OPTIONS, QUIET_TEXT, helpLine } from './options.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

const USAGE =
  'lobes wanda RUN [--model DIR|FILE.gguf] [--by LABEL] [--block 256|auto] [--top FRACTION] [--top-count N] [--scope matrix|layer|global] [--permutations R] [--seed N] [--group AXIS|none] [--resolution block|weight] [--sweep all|BLOCKS/TOPS] [--threads N] [--json] [--quiet]';

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
  --block N|RxC|auto block size in W[d_out, d_in] (default auto: the paper's 256 wherever every
                     matrix then has ≥ 16 blocks on its short side and ≥ 10 selected; otherwise
                     the largest power of two below it that does; N or RxC forces a size)
  --top FRACTION     keep this fraction of blocks per group (default 0.1)
  --top-count N      keep N blocks per group instead of a fraction
  --scope S          where the top blocks are chosen: matrix (default), layer or global
  --permutations R   label shuffles for the null (default: what the 2P set differences of the
                     groups' P pairs need for Holm at 0.05, at least ${DEFAULT_PERMUTATIONS} and at most
                     ${MAX_SIZED_PERMUTATIONS}, 399 for 5 groups; 0 = no null; a smaller count makes the
                     verdicts say "not testable at R = N")
  --seed N           seed of the shuffles (default 0; recorded in settings.json)
  --group AXIS|none  a label axis holding each item's group (e.g. its world tree): the label
                     null shuffles the labels only within each group (default: the axis
                     item_group a dataset's group= or SocialEval's trees wrote, if any)
  --sweep all|B/T    also run the analysis at every block size × top fraction and summarise
                     each in one row (metrics.sensitivity, sensitivity.csv); all: the grid
                     16,32,64,128 / 0.05,0.1,0.2; or e.g. --sweep 32,64/0.1,0.2 (both lists,
                     no repeats, no size above the largest matrix side)
  --resolution R     block (default): rank pooled blocks; weight: rank individual weights
                     (top-k per matrix) and report their block shares
  --threads N        worker threads for the weight pass and the permutation null (default: all cores)
  --json             print the metrics as JSON on stdout
${helpLine('--quiet', QUIET_TEXT, 21)}
`;

/**
 * --sweep: '' or 'all' for the default grid, else BLOCKS/TOPS as comma lists, both given. Each
 * size and fraction goes through the shared parsers; repeats and sizes past the model's
 * matrices are refused by runWanda (checkSweepGrid) before any work.
 */
function parseSweep(v: string | undefined): boolean | { blocks: number[]; tops: number[] } | undefined {
  if (v === undefined) return undefined;
  if (v === '' || v === 'all' || v === 'default') return true;
  const m = /^([^/]*)\/([^/]*)$/.exec(v);
  if (!m) throw new UsageError(`--sweep must be all or BLOCKS/TOPS (e.g. 16,32,64/0.05,0.1), got ${JSON.stringify(v)}`);
  if (m[1] === '' || m[2] === '')
    throw new UsageError(`--sweep ${v} has no ${m[1] === '' ? 'block sizes' : 'top fractions'}`,
      'give both lists, e.g. --sweep 16,32/0.05,0.1, or --sweep all for the default grid');
  const blocks = m[1]!.split(',').map((x) => parseInteger(x, '--sweep block size', 1));
  const tops = m[2]!.split(',').map((x) => parseNumber(x, '--sweep top fraction', 0, 1));
  if (tops.includes(0))
    throw new UsageError(`--sweep ${v}: a top fraction of 0 keeps no block`, 'give fractions above 0, up to 1');
  return { blocks, tops };
}

function parseBlock(v: string | undefined): [number, number] | 'auto' | undefined {
  if (v === undefined) return undefined;
  if (v === 'auto') return 'auto';
  const m = /^(\d+)(?:x(\d+))?$/.exec(v);
  if (!m) throw new UsageError(`--block must be N, RxC or auto (e.g. 256, 128x256), got ${JSON.stringify(v)}`);
  const r = parseInteger(m[1]!, '--block', 1);
  const c = m[2] !== undefined ? parseInteger(m[2], '--block', 1) : r;
  return [r, c];
}

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, {
    usage: USAGE,
    help: HELP,
    positionals: [1, 1],
    options: {
      model: { type: 'string', key: 'weights' },
      'weights-from': { type: 'string', key: 'weights' },
      weights: { type: 'string', renamed: 'weights-from' },
      by: { type: 'string' },
      block: { type: 'string' },
      top: { type: 'string', key: 'top.value' },
      'top-count': { type: 'string' },
      scope: { type: 'string', choices: ['matrix', 'layer', 'global'] as const, key: 'top.scope' },
      permutations: { type: 'string' },
      group: { type: 'string' },
      seed: { type: 'string' },
      resolution: { type: 'string', choices: ['block', 'weight'] as const },
      sweep: { type: 'string' },
      threads: { type: 'string' },
      ...OUTPUT_OPTIONS,
    },
  });
  if (!p) return 0;
  const v = p.values;
  if (v.top !== undefined && v['top-count'] !== undefined) throw new UsageError('give --top or --top-count, not both');
  if (v.model !== undefined && v['weights-from'] !== undefined && v.model !== v['weights-from'])
    throw new UsageError('--model and --weights-from name the same thing; give one');
  const scope = (v.scope ?? 'matrix') as TopSpec['scope'];
  const top: Partial<TopSpec> = v['top-count'] !== undefined
    ? { kind: 'count', value: intOption(v['top-count'], '--top-count', 1, 1), scope }
    : { kind: 'fraction', value: numOption(v.top, '--top', 0.1, 0, 1), scope };
  const resolution = v.resolution ?? 'block';
  const res = await runWanda(p.positionals[0], {
    weights: v['weights-from'] ?? v.model,
    by: v.by,
    group: v.group === 'none' ? null : v.group,
    block: parseBlock(v.block),
    top,
    // undefined when not given: runWanda sizes the count to the groups' families
    permutations: v.permutations === undefined
      ? undefined
      : intOption(v.permutations, '--permutations', DEFAULT_PERMUTATIONS, 0),
    seed: intOption(v.seed, '--seed', 0, 0, 0xffffffff),
    resolution,
    sweep: parseSweep(v.sweep),
    threads: v.threads !== undefined ? intOption(v.threads, '--threads', 1, 1) : undefined,
    io: stderrIO({ quiet: !!v.quiet || !!v.json, signal: interruptSignal('wanda') }),
  });
  if (v.json) {
    process.stdout.write(
      JSON.stringify({ dir: res.dir, settings: res.settings, metrics: res.metrics }, null, 1) + '\n',
    );
  } else {
    const vt = verdictTable(null, null, res.settings, res.metrics);
    const out: string[] = [...(vt ? verdictTableLines(vt) : []),
      `wrote ${res.dir} (blocks ${res.settings.block.join('×')})`,
      `groups (${res.settings.by}): ${res.metrics.groups.map((g) => `${g.group} (${g.n})`).join(', ')}`];
    const p = (x: number | null | undefined, h?: number | null) => (x === null || x === undefined
      ? ''
      : ` (p=${x.toFixed(3)}${h !== null && h !== undefined ? `, Holm ${h.toFixed(3)}` : ''})`);
    const ratio = (
      x: number | null | undefined,
    ) => (x === null || x === undefined ? '' : `, ${x.toFixed(1)}× a random set's density`);
    for (const pr of res.metrics.pairs) {
      out.push(
        `${pr.a} vs ${pr.b}: Jaccard ${pr.jaccard.value.toFixed(3)}${p(pr.jaccard.pLower, pr.jaccard.pLowerHolm)}; ` +
          `${pr.a}\\${pr.b} ${pr.sizeAminusB} blocks${
            ratio(pr.placementAminusB?.densityRatio)
          }, ${pr.b}\\${pr.a} ${pr.sizeBminusA} blocks${ratio(pr.placementBminusA?.densityRatio)}`,
      );
    }
    const R = res.settings.permutations;
    if (res.metrics.pairs.length && R > 0)
      out.push(
        `p: share of ${R} label permutations with an overlap as low (smallest possible ${
          (1 / (R + 1)).toFixed(4)
        }); Holm over the ${res.metrics.pairs.length} pairs. Isolation is the same test as Jaccard (equal region sizes) and is not repeated.`,
      );
    if (res.metrics.sensitivity) {
      out.push(
        "sensitivity (block × top): pairs with Jaccard below the label null after Holm; median density over a random set's; differences denser than random after Holm",
      );
      for (const r of res.metrics.sensitivity)
        out.push(
          `  ${r.block}×${r.block}, top ${r.top}: ${r.jaccardBelowNullHolm}/${r.pairs}; ${
            r.medianDensityRatio === null ? '—' : r.medianDensityRatio.toFixed(2) + '×'
          }; ${r.denserThanRandomHolm}/${r.differences}${r.coarse ? ' (too coarse)' : ''}`,
        );
    }
    for (const c of res.metrics.channels ?? []) {
      out.push(
        `activation RMS by group, ${c.hook}: spread ${c.value.toExponential(2)}${p(c.p, c.pHolm)}, ${
          c.channelsBH05 ?? 0
        } of ${c.channels} channels pass BH at 0.05`,
      );
    }
    process.stdout.write(out.join('\n') + '\n');
  }
  return 0;
}
