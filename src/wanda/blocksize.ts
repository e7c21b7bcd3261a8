/**
 * A block size that fits the model (`lobes wanda --block auto`) and the check that tells when
 * a block size is too coarse for regions to mean anything (docs/wanda.md, "Block size").
 *
 * Rule: every scored matrix needs at least MIN_SHORT_SIDE blocks along its shorter side, and the
 * top selection must keep at least MIN_SELECTED of its blocks. `auto` is the largest power of two
 * not above 256 (the paper's setting) for which every matrix passes; 1 when none does.
 */
import { keepCount, type TopSpec } from './regions.js';
import type { WandaSettings } from './types.js';

/** Blocks needed along the shorter side of every matrix. */
export const MIN_SHORT_SIDE = 16;
/** Blocks the top selection must keep in every matrix. */
export const MIN_SELECTED = 10;
/** The paper's block size (SocialEval App. D, after Deng et al. 2024), the largest `auto` picks. */
export const PAPER_BLOCK = 256;

/** A matrix as the rule sees it. */
export interface BlockShape {
  name: string;
  proj: string;
  layer: number;
  dOut: number;
  dIn: number;
}

/**
 * Blocks the selection is expected to keep in one matrix of `blocks` blocks: its own top share
 * with scope matrix; with scope layer or global, the pool's selection shared out in proportion
 * to the matrix's blocks (the selection within a pool follows the data).
 */
export function expectedSelected(top: TopSpec, blocks: number, poolBlocks: number): number {
  if (top.scope === 'matrix' || poolBlocks <= blocks) return keepCount(top, blocks);
  return Math.floor((keepCount(top, poolBlocks) * blocks) / poolBlocks);
}

/** Total blocks of each matrix's selection pool (itself, its layer, or all matrices). */
function poolSizes(ms: BlockShape[], block: [number, number], scope: TopSpec['scope']): number[] {
  const nb = (m: BlockShape) => Math.ceil(m.dOut / block[0]) * Math.ceil(m.dIn / block[1]);
  if (scope === 'matrix') return ms.map(nb);
  if (scope === 'global') {
    const all = ms.reduce((a, m) => a + nb(m), 0);
    return ms.map(() => all);
  }
  const byLayer = new Map<number, number>();
  for (const m of ms) byLayer.set(m.layer, (byLayer.get(m.layer) ?? 0) + nb(m));
  return ms.map((m) => byLayer.get(m.layer)!);
}

/** The matrices, grouped by projection, that fail the rule at `block` (empty: all pass). */
export function coarseMatrices(ms: BlockShape[], block: [number, number],
  top: TopSpec): NonNullable<WandaSettings['blockCheck']>['coarse']
{
  const pools = poolSizes(ms, block, top.scope);
  const byProj = new Map<string,
    { proj: string; rowBlocks: number; colBlocks: number; selected: number; matrices: number }>();
  ms.forEach((m, i) => {
    const rb = Math.ceil(m.dOut / block[0]);
    const cb = Math.ceil(m.dIn / block[1]);
    const selected = expectedSelected(top, rb * cb, pools[i]);
    if (Math.min(rb, cb) >= MIN_SHORT_SIDE && selected >= MIN_SELECTED) return;
    const e = byProj.get(m.proj);
    if (e) e.matrices++;
    else byProj.set(m.proj, { proj: m.proj, rowBlocks: rb, colBlocks: cb, selected, matrices: 1 });
  });
  return [...byProj.values()];
}

/** The `auto` block size: the largest power of two ≤ 256 at which no matrix is coarse (1 when none). */
export function autoBlockSize(ms: BlockShape[], top: TopSpec): number {
  for (let b = PAPER_BLOCK; b > 1; b >>= 1) if (coarseMatrices(ms, [b, b], top).length === 0) return b;
  return 1;
}

/** The check recorded in settings.json (and read by the report). */
export function blockCheck(ms: BlockShape[], block: [number, number], top: TopSpec,
  auto: boolean): NonNullable<WandaSettings['blockCheck']>
{
  const coarse = coarseMatrices(ms, block, top);
  return {
    minShortSide: MIN_SHORT_SIDE,
    minSelected: MIN_SELECTED,
    auto,
    suggested: coarse.length ? autoBlockSize(ms, top) : null,
    coarse,
  };
}

/** One warning line per coarse projection (empty when the block size fits). */
export function coarseWarnings(check: NonNullable<WandaSettings['blockCheck']>, block: [number, number]): string[] {
  return check.coarse.map(
    (c) =>
      `${c.proj} (${c.matrices} matri${c.matrices === 1 ? 'x' : 'ces'}): ${c.rowBlocks}×${c.colBlocks} blocks at ${
        block.join('×')
      }, the top selection keeps ${c.selected}; ` +
      `regions need ≥ ${check.minShortSide} blocks on the short side and ≥ ${check.minSelected} selected, so their metrics say little` +
      (check.suggested && !check.auto ? ` (--block auto: ${check.suggested})` : ''),
  );
}
