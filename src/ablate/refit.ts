/**
 * Regions recomputed from the run's activations with other labels, by wanda's own machinery:
 * the group sums of x² per capture point (src/wanda/stats.ts groupSquareSums, through
 * hookPooler), the RMS scaler, the pooled block scores with the column sums of |W| of wanda's
 * weights (poolHook), and wanda's top selection (src/wanda/regions.ts selectTop) at wanda's
 * settings (block, top, scope). A labelling is a group index per run row, −1 = left out: the
 * row mask is the seam, so a subset of the rows (a fit half) is wanda on that subset.
 *
 * Two uses (docs/ablate.md):
 * - `--shuffled S`: S labellings with the groups shuffled across the used rows (each seeded,
 *   group sizes kept, as wanda's label-permutation null), whose regions are ablated as the
 *   real ones are: the null of "the real region is specific to its group's items".
 * - `--fit-split SEED`: the items split in halves stratified by label; the regions are fitted
 *   on the fit half's rows only and ablated on the test half's items.
 *
 * Before any recomputed region is used, the run's own labelling is recomputed too and must give
 * exactly the regions of regions.json; else the recomputation is not wanda's (the weights or
 * the activations changed since lobes wanda) and lobes refuses, naming the first region that
 * differs.
 */
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { Rng, hash32 } from '../util/rng.js';
import type { RunReader } from '../store/types.js';
import { encodeLabels, labellingDesign } from '../wanda/analyze.js';
import { designShuffle } from '../cluster/metrics.js';
import { runSource } from '../wanda/stats.js';
import { hookPooler } from '../wanda/sumpool.js';
import { selectTop, type TopSpec } from '../wanda/regions.js';
import { columnBlockSums, type MatrixRef } from '../wanda/kernel.js';
import { wandaFile } from '../wanda/store.js';
import type { WandaMatrix } from '../wanda/types.js';
import { countBlocks, regionKey, regionMasks, type Masks, type RegionSpec, type WandaResults } from './regions.js';
import type { StoredMatrix } from './patch.js';
import { runInputs, type LineageInput } from '../store/lineage.js';
import { shuffledLabelTests } from './shuffled.js';
import type { AblateFitSplit, AblatePass, AblateShuffled } from './store.js';

/** The run's rows as wanda grouped them: the group index of every row (−1: no value on the axis). */
export interface RefitRows {
  reader: RunReader;
  groups: string[];
  /** Group index per run row, −1 for rows wanda left out. */
  index: Int32Array;
  /** Run sample id per row. */
  ids: string[];
  /** Each row's item group (wanda's settings.group: the world tree), numbered from 0, or null: the shuffles move labels only within a group. */
  itemGroups: Int32Array | null;
  /** The axis of the item groups. */
  groupAxis: string | null;
}

/** What one labelling gives: every group's pooled block scores ([group][matrix]) and region ([group] masks). */
export interface Refitted {
  pooled: Float32Array[][];
  masks: Masks[];
}

/** The run's rows and wanda's labels on them (rows without a value on the axis are left out, as lobes wanda leaves them out). */
export async function refitRows(runDir: string, w: WandaResults, flag: string): Promise<RefitRows> {
  if (w.settings.resolution === 'weight') {
    throw new LobesError(
      `${flag}: the regions were kept with ${
        opt('resolution', 'weight')
      } (the top weights by |W|·s, then blocks by their share), which the block scores do not reproduce`,
      { file: wandaFile(w.dir, 'settings'), hint: `run lobes wanda with --resolution block to use ${flag}` },
    );
  }
  const { openRun } = await import('../store/index.js');
  const reader = await openRun(runDir);
  const by = w.settings.by;
  const read = reader.labels(by);
  const has = reader.labelled?.(by);
  const labels = has ? read.map((l, i) => (has[i] ? l : '')) : read;
  const groups = [...w.settings.groups].sort();
  const enc = encodeLabels(labels, groups);
  enc.counts.forEach((c, g) => {
    if (c === 0)
      throw new LobesError(
        `${flag}: the run has no row labelled ${JSON.stringify(groups[g])} on ${by}, a group of the wanda results`,
        { file: runDir, hint: 'the run changed since lobes wanda; run it again' },
      );
  });
  // the item groups wanda's null shuffled within, so that the shuffled-label regions shuffle alike
  const groupAxis = w.settings.group?.axis ?? null;
  if (groupAxis !== null && !reader.labelAxes().includes(groupAxis))
    throw new LobesError(
      `${flag}: the run has no label axis ${JSON.stringify(groupAxis)}, which wanda's null grouped by`,
      { file: runDir, hint: 'the run changed since lobes wanda; run it again' },
    );
  const gIndex = new Map<string, number>();
  const itemGroups = groupAxis !== null
    ? Int32Array.from(reader.labels(groupAxis), (g) => gIndex.get(g) ?? (gIndex.set(g, gIndex.size), gIndex.size - 1))
    : null;
  return { reader, groups, index: enc.index, ids: reader.samples.map((s) => s.id), itemGroups, groupAxis };
}

/** The seed of shuffle s (recorded in ablation.json). */
export function shuffleSeed(seed: number, s: number): number {
  return hash32(`${seed >>> 0}:shuffled-labels:${s}`);
}

/**
 * The groups of the used rows (index ≥ 0) shuffled among those rows (Fisher–Yates, seeded): every
 * group keeps its size; left-out rows stay out. With `itemGroups` (the world trees wanda's null
 * grouped by) only within each item group, as wanda's null shuffles (src/wanda/analyze.ts
 * labellingDesign); without, the plain shuffle, draw for draw.
 */
export function shuffledLabeling(index: Int32Array, seed: number, itemGroups?: Int32Array | null): Int32Array {
  const used: number[] = [];
  index.forEach((g, r) => g >= 0 && used.push(r));
  const perm = Int32Array.from(used, (r) => index[r]!);
  designShuffle(new Rng(seed), perm,
    labellingDesign(perm, itemGroups ? Int32Array.from(used, (r) => itemGroups[r]!) : null));
  const out = new Int32Array(index.length).fill(-1);
  used.forEach((r, u) => (out[r] = perm[u]!));
  return out;
}

/**
 * The items split in halves, stratified by label, seeded: within each label the items (in
 * their order) are shuffled and the first floor(n / 2) are the fit half, the rest the test
 * half. Returns the fit flag per item.
 */
export function splitHalves(labels: readonly string[], seed: number): Uint8Array {
  const fit = new Uint8Array(labels.length);
  const by = new Map<string, number[]>();
  labels.forEach((l, i) => by.set(l, [...(by.get(l) ?? []), i]));
  for (const l of [...by.keys()].sort()) {
    const idx = new Rng(hash32(`${seed >>> 0}:fit-split:${l}`)).shuffle(by.get(l)!.slice());
    for (let k = 0; k < Math.floor(idx.length / 2); k++) fit[idx[k]!] = 1;
  }
  return fit;
}

/**
 * The matrices' column sums of |W| per row block of wanda's block height, from wanda's own
 * weights (settings.weights): the ablated model's stored matrices when wanda scored that same
 * folder, else the weights wanda read (an ONNX folder, a safetensors checkpoint or a GGUF file).
 */
export async function wandaColsums(w: WandaResults, modelDir: string, stored: StoredMatrix[],
  runReader: RunReader): Promise<Float32Array[]>
{
  const matrices = w.regions.matrices;
  const src = w.settings.weights;
  let refs: MatrixRef[];
  if (!src?.path || path.resolve(src.path) === path.resolve(modelDir)) refs = stored.map((s) => s.ref);
  else {
    const { locateWeights } = await import('../wanda/run.js');
    const { wantedMatrices } = await import('../wanda/weights.js');
    const found = (await locateWeights(src.path, wantedMatrices(runReader.hooks()))).matrices;
    refs = matrices.map((m) => {
      const r = found.find((x) => x.name === m.name);
      if (!r)
        throw new LobesError(`wanda's weights have no matrix ${m.name}`, { file: src.path,
          hint: 'the weights changed since lobes wanda; run it again' });
      return r;
    });
  }
  return refs.map((r) => columnBlockSums(r, { rowBlock: w.settings.block[0] }));
}

/**
 * Every group's pooled scores and region under each labelling (a group index per run row, −1:
 * left out), computed capture point by capture point with wanda's group sums and pooling.
 */
export async function refitLabelings(rows: RefitRows, matrices: WandaMatrix[], C: Float32Array[],
  block: [number, number], top: TopSpec, labelings: Int32Array[]): Promise<Refitted[]>
{
  const G = rows.groups.length;
  const src = runSource(rows.reader);
  const pooler = hookPooler(src, 1);
  const pooled: Float32Array[][][] = labelings.map(() =>
    Array.from({ length: G }, () => new Array<Float32Array>(matrices.length))
  );
  // Labellings with the same group sizes share one read of each capture point.
  const bySizes = new Map<string, number[]>();
  const sizes = labelings.map((lab) => {
    const c = new Array<number>(G).fill(0);
    for (const g of lab) if (g >= 0) c[g]!++;
    return c;
  });
  sizes.forEach((c, l) => bySizes.set(c.join(','), [...(bySizes.get(c.join(',')) ?? []), l]));
  const hooks = [...new Set(matrices.map((m) => m.input))];
  try {
    for (const hook of hooks) {
      const ks = matrices.flatMap((m, k) => (m.input === hook ? [k] : []));
      const mats = ks.map((k) => ({ C: C[k]!, dOut: matrices[k]!.dOut, dIn: matrices[k]!.dIn }));
      for (const ls of bySizes.values()) {
        const out = await pooler.pooled(hook, ls.map((l) => labelings[l]!), sizes[ls[0]!]!, mats, block[0], block[1]);
        ls.forEach((l, t) =>
          out.pooled[t]!.forEach((byMatrix, g) => ks.forEach((k, j) => (pooled[l]![g]![k] = byMatrix[j]!)))
        );
      }
    }
  } finally {
    await pooler.close();
  }
  return pooled.map((p) => ({ pooled: p, masks: p.map((scores) => selectTop(scores, matrices, top)) }));
}

/** Refuse unless the recomputed regions of the run's own labelling are regions.json's, block for block. */
export function checkReproduced(w: WandaResults, groups: string[], masks: Masks[], flag: string): void {
  const matrices = w.regions.matrices;
  groups.forEach((g, gi) => {
    const stored = w.regions.regions[g]!;
    let differ = 0;
    matrices.forEach((m, k) => {
      const want = new Set(stored[m.name] ?? []);
      const got = masks[gi]![k]!;
      for (let i = 0; i < got.length; i++) if (!!got[i] !== want.has(i)) differ++;
    });
    if (differ) {
      throw new LobesError(
        `${flag}: wanda's regions recomputed from the run's activations and wanda's weights are not those of regions.json (region ${g}: ${differ} block${
          differ === 1 ? '' : 's'
        } differ of ${countBlocks(masks[gi]!)}), so regions from other labels would not be comparable`,
        { file: wandaFile(w.dir, 'regions'),
          hint: 'the run or the weights changed since lobes wanda; run lobes wanda again' },
      );
    }
  });
}

/** |A ∩ B| / |A ∪ B| of two block sets. */
export function maskJaccard(a: Masks, b: Masks): number {
  let inter = 0;
  let union = 0;
  a.forEach((m, k) => {
    for (let i = 0; i < m.length; i++) {
      inter += m[i]! & b[k]![i]!;
      union += m[i]! | b[k]![i]!;
    }
  });
  return union ? inter / union : 0;
}

/** The pass id of region r under shuffle s. */
export const shuffledKey = (s: number, r: RegionSpec) => `shuffled:${s}:${regionKey(r)}`;

/** regionMasks of a shuffled labelling's regions, or no block at all where the difference is empty (such a pass costs nothing). */
export function differenceOrEmpty(w: WandaResults, r: RegionSpec, gm: (g: string) => Masks): Masks {
  try {
    return regionMasks(w, r, gm);
  } catch (e) {
    if (!(e instanceof LobesError) || r.minus === null) throw e;
    return gm(r.name).map((m) => new Uint8Array(m.length));
  }
}

/** What --shuffled and --fit-split recomputed: the fit half (a flag per item), the fitted regions, the shuffled labellings' regions, and their record. */
export interface RefitResult {
  /** --fit-split: 1 for the items of the fit half (not scored), per item in order; null without a split. */
  fit: Uint8Array | null;
  fitted: Refitted | null;
  shuffled: Refitted[];
  seeds: number[];
  split: Omit<AblateFitSplit, 'regions'> | null;
  fitIds: string[];
  /** The run rows the fitted regions were computed from (their sample ids). */
  fitRows: string[];
  inputs: LineageInput[];
  record: Record<string, unknown>;
}

/**
 * --shuffled S and --fit-split SEED: the run's rows as wanda labelled them; with a fit split the
 * items halved (stratified by label) and the regions fitted on the fit half's rows (the caller
 * scores the test half only); S labellings shuffling the groups across the fitted-on rows; every
 * labelling's regions by wanda's machinery, after the run's own labelling has reproduced
 * regions.json. Items are matched to the run's rows by id.
 */
export async function refitRegions(runDir: string, w: WandaResults, modelDir: string, stored: StoredMatrix[],
  items: { ids: string[]; labels: string[] },
  o: { S: number; seed: number; fitSeed: number | null }): Promise<RefitResult>
{
  const flag = o.fitSeed !== null ? opt('fitSplit') : opt('shuffled');
  const rows = await refitRows(runDir, w, flag);
  const by = w.settings.by;
  const groups = rows.groups;
  const itemIds = items.ids;
  const itemLabel = items.labels;
  let base = rows.index;
  let fit: Uint8Array | null = null;
  let split: RefitResult['split'] = null;
  let fitIds: string[] = [];
  if (o.fitSeed !== null) {
    const half = splitHalves(itemLabel, o.fitSeed);
    fit = half;
    fitIds = itemIds.filter((_, i) => half[i]);
    const fitSet = new Set(fitIds);
    base = Int32Array.from(rows.index, (g, r) => (g >= 0 && fitSet.has(rows.ids[r]!) ? g : -1));
    const perGroup = groups.map((_, g) => base.reduce((a, x) => a + (x === g ? 1 : 0), 0));
    perGroup.forEach((c, g) => {
      if (c === 0)
        throw new LobesError(
          `${opt('fitSplit')}: no row of the run is an item of the fit half labelled ${
            JSON.stringify(groups[g])
          }, so its region cannot be fitted`,
          { file: runDir,
            hint: "give the items the run was extracted from (their ids are matched to the run's samples)" },
        );
    });
    const inRun = new Set(rows.ids);
    const count = (keep: (i: number) => boolean) =>
      Object.fromEntries(groups.map((g) => [g, itemLabel.filter((l, i) => l === g && keep(i)).length]));
    split = {
      seed: o.fitSeed,
      by,
      fit: { items: fitIds.length, rows: perGroup.reduce((a, b) => a + b, 0),
        byLabel: Object.fromEntries(groups.map((g, gi) => [g, perGroup[gi]!])),
        notInRun: fitIds.filter((id) => !inRun.has(id)).length },
      test: { items: itemIds.length - fitIds.length, byLabel: count((i) => !half[i]) },
      family: 'as-summary',
    };
  }
  const seeds = Array.from({ length: o.S }, (_, s) => shuffleSeed(o.seed, s));
  const labelings = [rows.index, ...(o.fitSeed !== null ? [base] : []),
    ...seeds.map((sd) => shuffledLabeling(base, sd, rows.itemGroups))];
  const C = await wandaColsums(w, modelDir, stored, rows.reader);
  const got = await refitLabelings(rows, w.regions.matrices, C, w.settings.block, w.settings.top, labelings);
  checkReproduced(w, groups, got[0]!.masks, flag);
  const fitted = o.fitSeed !== null ? got[1]! : null;
  const shuffled = got.slice(o.fitSeed !== null ? 2 : 1);
  const hooks = [...new Set(w.regions.matrices.map((m) => m.input))];
  const inputs = runInputs(rows.reader, hooks).filter((x) => x.name !== 'run');
  const record = {
    from: "the run's activations and wanda's weights, by wanda's group sums, pooling and top selection",
    weights: w.settings.weights?.path ?? modelDir,
    reproduced: "the run's own labels give the regions of regions.json, block for block",
    inputs,
    ...(o.S
      ? {
        shuffledLabels: { shuffles: o.S, seeds,
          over: o.fitSeed !== null ? "the fit half's rows" : "the run's labelled rows", family: 'regions',
          ...(rows.groupAxis !== null ? { withinGroups: rows.groupAxis } : {}) },
      }
      : {}),
  };
  const fitRows = o.fitSeed !== null ? rows.ids.filter((_, r) => base[r]! >= 0) : [];
  return { fit, fitted, shuffled, seeds, split, fitIds, fitRows, inputs, record };
}

/** summary.json's shuffled section: each region's specificity against its S shuffled-label regions. */
export function shuffledSection(refit: RefitResult, specs: RegionSpec[], passes: AblatePass[], labels: string[],
  labelOf: Int32Array, ll: Float64Array[], after: (i: number) => Float64Array): AblateShuffled
{
  const idx = new Map(passes.map((q, p) => [q.id, p]));
  const S = refit.seeds.length;
  const blocks: Record<string, number[]> = {};
  for (const r of specs)
    blocks[regionKey(r)] = Array.from({ length: S },
      (_, s) => countBlocks(passes[idx.get(shuffledKey(s, r))!]!.masks!));
  const { rows, family } = shuffledLabelTests({ labels, labelOf, before: ll[0]!,
    regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, after: after(i),
      shuffled: Array.from({ length: S }, (_, s) => ll[idx.get(shuffledKey(s, r))!]!) })
    ) });
  return { shuffles: S, seeds: refit.seeds, pFloor: 1 / (S + 1), family: 'regions', blocks, rows,
    declaredFamilies: [family] };
}
