/**
 * The block sets `lobes ablate` zeroes: a group's region from RUN/wanda (or a set difference),
 * the blocks as Hugging Face coordinates, and the random regions of the null.
 *
 * A block (bi, bj) of matrix W [d_out, d_in] (Hugging Face layout) with block size [br, bc]
 * covers rows [bi·br, min((bi+1)·br, d_out)) and cols [bj·bc, min((bj+1)·bc, d_in)); wanda's
 * maps are ceil(d_out/br) × ceil(d_in/bc), so a matrix whose size is not a multiple of the block
 * has smaller blocks at its edges.
 *
 * The random regions keep the region's block count per matrix (scope `matrix`, the default),
 * per layer (`layer`: the count of each layer is spread uniformly over that layer's matrices'
 * blocks) or in all (`global`), each drawn uniformly without replacement.
 */
import * as path from 'node:path';
import { LobesError, UsageError, opt } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { didYouMean } from '../util/suggest.js';
import type { WandaMatrix, WandaRegions, WandaSettings } from '../wanda/types.js';
import { readWanda, wandaDir, wandaFile } from '../wanda/store.js';
import { selectTop } from '../wanda/regions.js';
import type { RunManifest } from '../store/types.js';

export type Masks = Uint8Array[];
export type NullScope = 'matrix' | 'layer' | 'global';
export const NULL_SCOPES: readonly NullScope[] = ['matrix', 'layer', 'global'];

/** The wanda results an ablation reads. */
export interface WandaResults {
  dir: string;
  settings: WandaSettings;
  regions: WandaRegions;
  /** The pooled block scores of a group for a matrix (RUN/wanda/pooled.safetensors); null when the folder has none. */
  pooled?: ((group: string, matrix: string) => Float32Array | null) | null;
}

/** One zeroed block in Hugging Face coordinates. */
export interface HfBlock {
  /** e.g. `model.layers.3.mlp.up_proj.weight`. */
  tensor: string;
  /** [start, end) over output features (rows of W [d_out, d_in]). */
  rows: [number, number];
  /** [start, end) over input features. */
  cols: [number, number];
}

/**
 * RUN/wanda read through the wanda store (readWanda: the contract, block ranges, differences and
 * the provenance against the run), plus what an ablation needs beyond it: wanda's block size and
 * a region for every group. One-line error naming the file when any of it is missing or broken.
 */
export function readWandaResults(runDir: string, manifest: RunManifest, by?: string): WandaResults {
  const dir = by === undefined ? wandaDir(runDir) : wandaDir(runDir, { manifest, axis: by });
  const w = readWanda(runDir, manifest, dir);
  const file = wandaFile(dir, 'regions');
  if (!w)
    throw new LobesError(
      `the run has no wanda results${by === undefined ? '' : ` by ${by}`} (${path.basename(file)} is missing)`,
      { file, hint: `run lobes wanda ${runDir}${by === undefined ? '' : ` --by ${by}`} first` },
    );
  const sfile = wandaFile(w.dir, 'settings');
  const b = w.settings.block as unknown;
  if (!Array.isArray(b) || b.length !== 2 || !b.every((x) => Number.isInteger(x) && x > 0))
    throw new LobesError('expected "block" as two positive integers', { file: sfile, where: 'block' });
  for (const g of w.settings.groups)
    if (!w.regions.regions[g])
      throw new LobesError(`group ${JSON.stringify(g)} of settings.json has no region`, { file });
  return { dir: w.dir, settings: w.settings, regions: w.regions, pooled: w.pooled };
}

/** Whether a --top fraction is the one the wanda results' regions were kept at. */
export function isStoredTop(w: WandaResults, top: number): boolean {
  return w.settings.top.kind === 'fraction' && Math.abs(w.settings.top.value - top) < 1e-12;
}

/**
 * Every group's region at another top fraction, from the stored pooled block scores: the top
 * round(f · n) blocks of each pool (wanda's own selection, src/wanda/regions.ts selectTop, with
 * the scope wanda kept its regions in). Refused, saying why, when the stored regions are not that
 * selection of the stored scores at wanda's own top (block resolution only: --resolution weight
 * keeps weights, not blocks; no pooled.safetensors; regions.json not reproduced).
 */
export function groupMasksAtTop(w: WandaResults, top: number): (group: string) => Masks {
  const file = wandaFile(w.dir, 'regions');
  const hint = `leave out ${opt('tops')} to ablate the stored regions, or run lobes wanda at that --top`;
  if (w.settings.resolution === 'weight')
    throw new LobesError(
      `${opt('tops', top)}: the regions were kept with ${
        opt('resolution', 'weight')
      } (the top weights by |W|·s, then blocks by their share), which the pooled block scores do not determine`,
      { file, hint },
    );
  if (!w.pooled)
    throw new LobesError(
      `${
        opt('tops', top)
      }: the wanda results hold no pooled block scores (pooled.safetensors), from which regions at another top are computed`,
      { file, hint },
    );
  const pooled = w.pooled;
  const scores = (g: string) =>
    w.regions.matrices.map((m) => {
      const s = pooled(g, m.name);
      if (!s)
        throw new LobesError(
          `${opt('tops', top)}: pooled.safetensors has no scores for group ${JSON.stringify(g)} and matrix ${m.name}`,
          { file, hint },
        );
      return s;
    });
  // The stored regions must be the stored scores' own top selection, or other tops would not be comparable to them.
  for (const g of w.settings.groups) {
    const again = selectTop(scores(g), w.regions.matrices, w.settings.top);
    const stored = masksOf(w, g);
    if (again.some((m, k) => m.some((v, i) => v !== stored[k]![i])))
      throw new LobesError(
        `${
          opt('tops', top)
        }: region ${g} of regions.json is not the top selection of its pooled block scores at wanda's ${
          opt('top.value', w.settings.top.value)
        }, so regions at other tops cannot be computed from them`,
        { file, hint },
      );
  }
  const spec = { kind: 'fraction' as const, value: top, scope: w.settings.top.scope };
  return (g: string) => selectTop(scores(g), w.regions.matrices, spec);
}

/** The masks of a block set given as sorted flat indices per matrix name. */
function masksOf(w: WandaResults, group: string): Masks {
  const set = w.regions.regions[group]!;
  return w.regions.matrices.map((m) => {
    const mask = new Uint8Array(m.rowBlocks * m.colBlocks);
    for (const i of set[m.name] ?? []) {
      if (!Number.isInteger(i) || i < 0 || i >= mask.length)
        throw new LobesError(`block ${i} is outside the ${m.rowBlocks}×${m.colBlocks} map of ${m.name}`, {
          file: wandaFile(w.dir, 'regions'),
          where: `region ${group}`,
        });
      mask[i] = 1;
    }
    return mask;
  });
}

function checkGroup(w: WandaResults, name: string, flag: string): void {
  if (w.settings.groups.includes(name)) return;
  const near = didYouMean(name, w.settings.groups);
  throw new UsageError(
    `${flag} ${JSON.stringify(name)} is not a group of the run's wanda results (groups by ${w.settings.by}: ${
      w.settings.groups.join(', ')
    })`,
    near || undefined,
  );
}

/** A region to ablate: a group's region, or a set difference. */
export interface RegionSpec {
  name: string;
  /** A group, `others` (the union of every other group's region), or null. */
  minus: string | null;
}

/** The key of a region at a --top dose other than the stored one: `A@0.01`, `A∖B@0.01`. */
export function doseKey(r: RegionSpec, top: number): string {
  return `${regionKey(r)}@${top}`;
}

/** The key naming a region in records and outputs: `A`, or `A∖B`. */
export function regionKey(r: RegionSpec): string {
  return r.minus === null ? r.name : `${r.name}∖${r.minus}`;
}

/** The regions a command asks for: --region A or all, with --minus B or others. */
export function regionSpecs(w: WandaResults, region: string, minus: string | null): RegionSpec[] {
  const names = region === 'all' ? [...w.settings.groups] : [region];
  if (region !== 'all') checkGroup(w, region, opt('region'));
  if (minus !== null && minus !== 'others') {
    checkGroup(w, minus, opt('minus'));
    if (region === minus)
      throw new UsageError(
        `${opt('region')} and ${opt('minus')} are the same group (${region}); the difference is empty`,
      );
  }
  return names.filter((n) => n !== minus).map((name) => ({ name, minus }));
}

/** The masks of a region spec (empty regions are an error naming it). */
export function regionMasks(w: WandaResults, r: RegionSpec, groupMasks: (group: string) => Masks = (g) => masksOf(w, g),
  top?: number): Masks
{
  const a = groupMasks(r.name);
  if (r.minus !== null) {
    const others = r.minus === 'others' ? w.settings.groups.filter((g) => g !== r.name) : [r.minus];
    for (const g of others) {
      const b = groupMasks(g);
      a.forEach((m, k) => {
        for (let i = 0; i < m.length; i++) if (b[k]![i]) m[i] = 0;
      });
    }
  }
  if (countBlocks(a) === 0) {
    throw new LobesError(
      `region ${top === undefined ? regionKey(r) : doseKey(r, top)} is empty: it has no block to zero`,
      { file: wandaFile(w.dir, 'regions'), hint: r.minus
        ? 'every block of the region is also in the subtracted one; choose another pair or a larger --top in lobes wanda'
        : 'run lobes wanda with a larger --top' },
    );
  }
  return a;
}

export function countBlocks(a: Masks): number {
  let s = 0;
  for (const m of a) for (let i = 0; i < m.length; i++) s += m[i]!;
  return s;
}

/** Hugging Face tensor name of a wanda matrix (`layers.3.mlp.up_proj` -> `model.layers.3.mlp.up_proj.weight`). */
export function hfTensor(m: WandaMatrix): string {
  return `model.${m.name}.weight`;
}

/** The blocks of a set in Hugging Face coordinates, in matrix order then flat index. */
export function hfBlocks(masks: Masks, matrices: WandaMatrix[],
  block: [number, number]): (HfBlock & { matrix: number })[]
{
  const out: (HfBlock & { matrix: number })[] = [];
  const [br, bc] = block;
  matrices.forEach((m, k) => {
    const mask = masks[k]!;
    for (let i = 0; i < mask.length; i++) {
      if (!mask[i]) continue;
      const bi = Math.floor(i / m.colBlocks);
      const bj = i % m.colBlocks;
      out.push({ matrix: k, tensor: hfTensor(m), rows: [bi * br, Math.min((bi + 1) * br, m.dOut)],
        cols: [bj * bc, Math.min((bj + 1) * bc, m.dIn)] });
    }
  });
  return out;
}

/** The pools random blocks are drawn in: one per matrix, per layer, or one over every matrix. */
export function nullPools(matrices: WandaMatrix[], scope: NullScope): number[][] {
  if (scope === 'matrix') return matrices.map((_, k) => [k]);
  if (scope === 'global') return [matrices.map((_, k) => k)];
  const byLayer = new Map<number, number[]>();
  matrices.forEach((m, k) => byLayer.set(m.layer, [...(byLayer.get(m.layer) ?? []), k]));
  return [...byLayer.values()];
}

/** A signature of a set's size per pool: sets with equal signatures share their random regions. */
export function poolCounts(masks: Masks, pools: number[][]): number[] {
  return pools.map((p) => p.reduce((s, k) => s + countBlocks([masks[k]!]), 0));
}

/** A uniformly random set with `counts[p]` blocks in pool p (partial Fisher–Yates over the pool's blocks). */
export function randomRegion(counts: readonly number[], pools: number[][], matrices: WandaMatrix[],
  seed: number): Masks
{
  const rng = new Rng(seed);
  const masks = matrices.map((m) => new Uint8Array(m.rowBlocks * m.colBlocks));
  pools.forEach((pool, p) => {
    const sizes = pool.map((k) => masks[k]!.length);
    const n = sizes.reduce((a, b) => a + b, 0);
    const c = counts[p]!;
    if (c > n) throw new LobesError(`a random region needs ${c} blocks from a pool of ${n}`);
    const idx = new Int32Array(n);
    for (let i = 0; i < n; i++) idx[i] = i;
    for (let i = 0; i < c; i++) {
      const j = i + rng.int(n - i);
      const t = idx[i]!;
      idx[i] = idx[j]!;
      idx[j] = t;
      // Flat index over the pool -> (matrix, block).
      let f = idx[i]!;
      let q = 0;
      while (f >= sizes[q]!) f -= sizes[q++]!;
      masks[pool[q]!]![f] = 1;
    }
  });
  return masks;
}

/**
 * The |W|-magnitude baseline of a region: in each pool, as many blocks as the region has there,
 * the ones with the largest mean |W| (ties in matrix then index order). `meanAbs[k]` is the mean
 * |W| of every block of matrix k. Wanda's score is |W| times the group's activation norms; this
 * region keeps |W| alone.
 */
export function magnitudeRegion(counts: readonly number[], pools: number[][], meanAbs: Float64Array[]): Masks {
  const masks = meanAbs.map((m) => new Uint8Array(m.length));
  pools.forEach((pool, p) => {
    const all: [number, number, number][] = [];
    for (const k of pool) meanAbs[k]!.forEach((v, i) => all.push([v, k, i]));
    all.sort((a, b) => b[0] - a[0] || a[1] - b[1] || a[2] - b[2]);
    for (let j = 0; j < counts[p]!; j++) masks[all[j]![1]]![all[j]![2]] = 1;
  });
  return masks;
}

/** Mean |W| of each block of a matrix from its column sums of |W| per row block (C [rowBlocks, d_in], src/wanda/kernel.ts). */
export function blockMeanAbs(C: Float32Array, m: WandaMatrix, block: [number, number]): Float64Array {
  const [br, bc] = block;
  const out = new Float64Array(m.rowBlocks * m.colBlocks);
  for (let bi = 0; bi < m.rowBlocks; bi++) {
    const rows = Math.min((bi + 1) * br, m.dOut) - bi * br;
    for (let bj = 0; bj < m.colBlocks; bj++) {
      const c1 = Math.min((bj + 1) * bc, m.dIn);
      let s = 0;
      for (let c = bj * bc; c < c1; c++) s += C[bi * m.dIn + c]!;
      out[bi * m.colBlocks + bj] = s / (rows * (c1 - bj * bc));
    }
  }
  return out;
}

/** The seed of random region j of null set s (recorded in ablation.json). */
export function randomSeed(seed: number, set: number, j: number): number {
  return (Math.imul(seed >>> 0, 1000003) + Math.imul(set + 1, 7919) + j) >>> 0;
}
