/**
 * How much the region findings depend on the two choices the paper does not fix for a given
 * model: the block size and the fraction of blocks kept. `lobes wanda --sweep` re-runs the
 * block-resolution analysis (its own weight pass per block size, the same label permutations
 * and placement nulls) for every block size × top fraction and summarises each in one row:
 *
 *   pairs whose Jaccard is below the label null after Holm, the median density of the
 *   differences over a random set's, differences denser than random blocks after Holm, and the
 *   block-size rule's verdict on that grid.
 */
import { LobesError, UsageError, opt } from '../util/errors.js';
import { csvField } from '../util/csv.js';
import { weightPass } from './pass.js';
import { analyze, matrixInfo } from './analyze.js';
import { addInference } from './inference.js';
import { blockCheck } from './blocksize.js';
import type { MatrixRef } from './kernel.js';
import type { ActivationSource } from './stats.js';
import type { TopSpec } from './regions.js';
import type { WandaSensitivityRow } from './types.js';

/** The sweep's default grid. */
export const SWEEP_BLOCKS = [16, 32, 64, 128];
export const SWEEP_TOPS = [0.05, 0.1, 0.2];

export interface SweepInput {
  matrices: MatrixRef[];
  source: ActivationSource;
  labels: string[];
  /** Each sample's item group, or null (the null shuffles within them). */
  itemGroups?: Int32Array | null;
}

export interface SweepOptions {
  blocks?: number[];
  tops?: number[];
  scope: TopSpec['scope'];
  permutations: number;
  seed: number;
  threads?: number;
  alpha?: number;
  onConfig?: (done: number, total: number) => void;
}

const median = (xs: number[]) => {
  if (!xs.length) return null;
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * Refuse a sweep grid that cannot give distinct, readable rows, before any work: a repeated
 * size or fraction, or a block size above every matrix's longer side (the whole matrix would
 * be one block: a "99999×99999" row).
 */
export function checkSweepGrid(grid: { blocks?: number[]; tops?: number[] },
  matrices: readonly { dOut: number; dIn: number }[]): void
{
  checkSweepRepeats(grid);
  const blocks = grid.blocks ?? SWEEP_BLOCKS;
  const side = Math.max(0, ...matrices.map((m) => Math.max(m.dOut, m.dIn)));
  const over = blocks.filter((b) => b > side);
  if (matrices.length && over.length)
    throw new UsageError(
      `${opt('sweep')}: block size ${over.join(', ')} is larger than every matrix (the longest side is ${side})`,
      `give block sizes up to ${side}`,
    );
}

/**
 * The options runWanda refuses together, before the run is opened: a sweep needs block
 * resolution and a grid without repeats (its sizes past the matrices are checked once they are
 * located); weight resolution selects weights per matrix, so the other scopes do not apply.
 */
export function checkOptionPairs(sweep: boolean | { blocks?: number[]; tops?: number[] } | undefined,
  resolution: 'block' | 'weight', scope: string): void
{
  if (sweep && resolution !== 'block')
    throw new UsageError({ option: 'sweep', also: ['resolution'],
      message: `${opt('sweep')} needs ${opt('resolution', 'block')}` });
  if (resolution === 'weight' && scope !== 'matrix')
    throw new UsageError(
      `${opt('resolution', 'weight')} selects weights per matrix; ${opt('top.scope', scope)} is not available with it`,
    );
  if (sweep) checkSweepRepeats(sweep === true ? {} : sweep);
}

/** Refuse a sweep grid with a repeated size or fraction. */
export function checkSweepRepeats(grid: { blocks?: number[]; tops?: number[] }): void {
  for (const [xs, what] of [[grid.blocks ?? SWEEP_BLOCKS, 'block size'], [grid.tops ?? SWEEP_TOPS,
    'top fraction']] as const)
  {
    const dup = xs.find((x, i) => xs.indexOf(x) !== i);
    if (dup !== undefined)
      throw new UsageError(`${opt('sweep')}: ${what} ${dup} is given twice (it would be a duplicate row)`);
  }
}

/** One summary row per block size × top fraction. */
export async function sensitivitySweep(input: SweepInput, o: SweepOptions): Promise<WandaSensitivityRow[]> {
  const blocks = o.blocks ?? SWEEP_BLOCKS;
  const tops = o.tops ?? SWEEP_TOPS;
  const alpha = o.alpha ?? 0.05;
  if (!blocks.every((b) => Number.isInteger(b) && b >= 1))
    throw new LobesError(`sweep block sizes must be positive integers, got ${blocks.join(', ')}`);
  if (!tops.every((t) => t > 0 && t <= 1))
    throw new LobesError(`sweep top fractions must be in (0, 1], got ${tops.join(', ')}`);
  const rows: WandaSensitivityRow[] = [];
  const total = blocks.length * tops.length;
  for (const b of blocks) {
    const block: [number, number] = [b, b];
    const colsums = await weightPass(input.matrices, { rowBlock: b, threads: o.threads });
    const infos = input.matrices.map((m) => matrixInfo(m.name, m.layer, m.proj, m.input, m.dOut, m.dIn, block));
    for (const f of tops) {
      const top: TopSpec = { kind: 'fraction', value: f, scope: o.scope };
      const res = await analyze({ matrices: infos, colsums, source: input.source, labels: input.labels,
        itemGroups: input.itemGroups }, { block, top, permutations: o.permutations, seed: o.seed, threads: o.threads });
      const m = addInference(res.metrics, res.regions, res.nulls, { placements: o.permutations, seed: o.seed });
      const diffs = m.pairs.flatMap((p) => [p.placementAminusB, p.placementBminusA]).filter((x) => !!x);
      const pass = (xs: (number | null | undefined)[]) =>
        xs.filter((x) => x !== null && x !== undefined && x <= alpha).length;
      const check = blockCheck(input.matrices, block, top, false);
      rows.push({
        block: b,
        top: f,
        selected: m.groups[0]?.regionSize ?? 0,
        coarse: check.coarse.length > 0,
        pairs: m.pairs.length,
        meanJaccard: m.pairs.length ? m.pairs.reduce((a, p) => a + p.jaccard.value, 0) / m.pairs.length : null,
        jaccardBelowNull: pass(m.pairs.map((p) => p.jaccard.pLower)),
        jaccardBelowNullHolm: pass(m.pairs.map((p) => p.jaccard.pLowerHolm)),
        differences: diffs.length,
        medianDensityRatio: median(diffs.map((d) => d!.densityRatio).filter((x): x is number => x !== null)),
        denserThanRandomHolm: pass(diffs.map((d) => d!.density.pHolm)),
        denserThanLabelNullHolm: pass(m.pairs.flatMap((p) => [p.densityAminusB.pHolm, p.densityBminusA.pHolm])),
      });
      o.onConfig?.(rows.length, total);
    }
  }
  return rows;
}

/** sensitivity.csv: the sweep's table. */
export function sensitivityCsv(rows: WandaSensitivityRow[]): string {
  const cols = ['block', 'top', 'selected', 'coarse', 'pairs', 'meanJaccard', 'jaccardBelowNull',
    'jaccardBelowNullHolm', 'differences', 'medianDensityRatio', 'denserThanRandomHolm',
    'denserThanLabelNullHolm'] as const;
  return [cols.join(','), ...rows.map((r) => cols.map((c) => csvField(r[c] as string | number | null)).join(','))].join(
    '\n',
  ) + '\n';
}
