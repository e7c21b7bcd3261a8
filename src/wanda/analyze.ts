/**
 * The analysis after the weight pass, on in-memory inputs: group statistics, pooled maps,
 * regions, set differences, metrics and the permutation null. Needs only C (the column
 * sums of |W| per row block) and the activations; it never touches the weights.
 *
 *   pooled_g[bi, bj] = (1 / area) * Σ_{j∈bj} s_g[j] * C[bi, j]
 *
 * Labellings (the observed one, then R seeded shuffles of the group labels over the used
 * samples, which keep every group's size) are processed in batches: each batch reads each
 * capture point once and accumulates x^2 sums for all its labellings together.
 */
import { LobesError, opt } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { designShuffle, permutationDesign, type PermutationDesign } from '../cluster/metrics.js';

import type { ActivationSource } from './stats.js';
import { hookPooler } from './sumpool.js';
import type { HookPooled } from './stats.js';
import { ChannelNull } from './channels.js';
import { countStride, mergeHookCounts, nullsFromCounts, type HookNullResult } from './hooknull.js';
import { PAIR_NULLS, pairList, emptyNulls, type NullMetric, type Nulls } from './nulls.js';
import { selectTop, minus, jaccard, size, density, components, toBlockSet, distribution, type Masks,
  type TopSpec } from './regions.js';
import type { WandaMatrix, WandaRegions, WandaMetrics, WandaPairMetrics, NullTested,
  WandaChannelTest } from './types.js';

export interface AnalyzeInput {
  /** Matrices in output order; `input` names the capture point feeding each. */
  matrices: WandaMatrix[];
  /**
   * C per matrix name: Float32Array [rowBlocks * dIn] for the row-block height block[0], or a
   * promise of it (the weight pass still running: a capture point's null starts as soon as the
   * matrices it feeds have theirs).
   */
  colsums: Map<string, Float32Array | Promise<Float32Array>>;
  source: ActivationSource;
  /** Group label per sample; '' leaves the sample out. */
  labels: string[];
  /** Group order (default: sorted distinct non-empty labels). */
  groups?: string[];
  /**
   * Each sample's item group (its world tree, `--group`), numbered from 0, or null: the null's
   * shuffles then move labels only within each item group (labellingDesign).
   */
  itemGroups?: Int32Array | null;
}

export interface AnalyzeOptions {
  /** [rows, cols] block size. */
  block: [number, number];
  top: TopSpec;
  permutations: number;
  seed: number;
  /** Memory for one batch of labellings' pooled maps (default 256 MiB). */
  batchBytes?: number;
  /**
   * Worker threads for the group sums of x² and the pooling (default 1: the calling thread).
   * With T > 1 and a run directory as the source, T capture points are done at once, each by
   * a thread that reads it itself; up to T capture points' sums are held at once. The results
   * are identical.
   */
  threads?: number;
  /** Called after each labelling (0 = observed) is finished (labelling by labelling only). */
  onLabeling?: (done: number, total: number) => void;
  /** Called after each capture point is finished (per capture point), or each read of one for one batch of labellings. */
  onStep?: (done: number, total: number) => void;
  /**
   * Finish the null capture point by capture point (src/wanda/hooknull.ts) where regions are
   * selected per matrix (default true; the results are identical); false: labelling by labelling.
   */
  perHook?: boolean;
}

export { NULL_METRICS, NULL_COUNTS, pairList, emptyNulls, type NullMetric, type GroupNullMetric,
  type Nulls } from './nulls.js';

export interface AnalyzeResult {
  groups: string[];
  counts: number[];
  /** Observed pooled maps, key `${group}|${matrix}`, [rowBlocks, colBlocks]. */
  pooled: Map<string, Float32Array>;
  regions: WandaRegions;
  metrics: WandaMetrics;
  /** Null distributions per pair index / group index and metric (length R). */
  nulls: Nulls;
  /** The per-channel RMS test per capture point, before the correction across capture points. */
  channels?: WandaChannelTest[];
}

export function matrixInfo(name: string, layer: number, proj: string, input: string, dOut: number, dIn: number,
  block: [number, number]): WandaMatrix
{
  return { name, layer, proj, input, dOut, dIn, rowBlocks: Math.ceil(dOut / block[0]),
    colBlocks: Math.ceil(dIn / block[1]) };
}

/** Group index per sample (-1 when left out) and the group order. */
export function encodeLabels(labels: string[],
  groups?: string[]): { groups: string[]; index: Int32Array; counts: number[] }
{
  const gs = groups ?? [...new Set(labels.filter((l) => l !== ''))].sort();
  const pos = new Map(gs.map((g, i) => [g, i]));
  const index = new Int32Array(labels.length);
  const counts = new Array<number>(gs.length).fill(0);
  labels.forEach((l, r) => {
    const g = l === '' ? -1 : pos.get(l);
    if (g === undefined) index[r] = -1;
    else {
      index[r] = g;
      if (g >= 0) counts[g]++;
    }
  });
  return { groups: gs, index, counts };
}

/** Groups of the labels, requiring at least two non-empty groups. */
export function checkedGroups(labels: string[],
  groups?: string[]): { groups: string[]; index: Int32Array; counts: number[] }
{
  const enc = encodeLabels(labels, groups);
  const G = enc.groups.length;
  if (G < 2)
    throw new LobesError(
      `need at least 2 groups to compare, found ${G} (${
        enc.groups.map((g) => JSON.stringify(g)).join(', ') || 'none'
      })`,
      { hint: `choose another ${opt('by')} axis` },
    );
  enc.counts.forEach((c, g) => {
    if (c === 0) throw new LobesError(`group ${JSON.stringify(enc.groups[g])} has no samples`);
  });
  return enc;
}

/** Every matrix's input must be captured with dim = d_in. */
export function checkDims(matrices: WandaMatrix[], source: ActivationSource): void {
  for (const m of matrices) {
    const d = source.dim(m.input);
    if (d === null)
      throw new LobesError(`capture point ${m.input} (input of ${m.name}) is not in the run`, { file: source.where });
    if (d !== m.dIn)
      throw new LobesError(`weights of ${m.name} have d_in=${m.dIn} but capture point ${m.input} has dim ${d}`, {
        file: source.where,
        hint: 'the weights do not belong to the model of this run',
      });
  }
}

/** Null summary of an observed value against R permutation values. */
export function nullTest(value: number, nulls: Float64Array | null): NullTested {
  if (!nulls || nulls.length === 0) return { value, p: null, percentile: null, nullMean: null, pLower: null };
  let ge = 0, le = 0, lt = 0, eq = 0, sum = 0;
  for (const v of nulls) {
    if (v >= value) ge++;
    if (v <= value) le++;
    if (v < value) lt++;
    if (v === value) eq++;
    sum += v;
  }
  const R = nulls.length;
  return { value, p: (1 + ge) / (R + 1), percentile: (100 * (lt + 0.5 * eq)) / R, nullMean: sum / R,
    pLower: (1 + le) / (R + 1) };
}

export async function analyze(input: AnalyzeInput, opts: AnalyzeOptions): Promise<AnalyzeResult> {
  const { matrices, colsums, source } = input;
  const rb = opts.block[0];
  if (input.labels.length !== source.n) throw new LobesError(`${input.labels.length} labels for ${source.n} samples`);
  const enc = checkedGroups(input.labels, input.groups);
  for (const m of matrices) {
    const C = colsums.get(m.name);
    if (!C) throw new LobesError(`no weight column sums for ${m.name}`);
    if (!(C instanceof Promise)) checkColsums(m, C, rb);
  }
  checkDims(matrices, source);
  if (opts.top.scope === 'matrix' && opts.perHook !== false) return analyzePerHook(input, opts, enc);
  const ready = new Map<string, Float32Array>();
  for (const m of matrices) ready.set(m.name, checkColsums(m, await colsums.get(m.name)!, rb));
  return analyzeByLabeling({ ...input, colsums: ready }, opts, enc);
}

function checkColsums(m: WandaMatrix, C: Float32Array, rb: number): Float32Array {
  if (C.length !== Math.ceil(m.dOut / rb) * m.dIn)
    throw new LobesError(
      `column sums of ${m.name} have ${C.length} values, expected ${Math.ceil(m.dOut / rb)} x ${m.dIn}`,
    );
  return C;
}

/** The capture points of the matrices (first-seen order) and, per capture point, the indices of the matrices it feeds. */
function hooksOf(matrices: WandaMatrix[]): { hooks: string[]; fed: number[][] } {
  const hooks = [...new Set(matrices.map((m) => m.input))];
  return { hooks, fed: hooks.map((hook) => matrices.flatMap((m, k) => (m.input === hook ? [k] : []))) };
}

/** Memory for one thread's batch of group sums in the per-capture-point null. */
const HOOK_BATCH_BYTES = 256 * 2 ** 20;

/**
 * The null capture point by capture point (src/wanda/hooknull.ts): each on a worker thread
 * (or the calling thread) as soon as its matrices' column sums are in, its counts merged as
 * they arrive. Regions are selected per matrix here, so the result is that of analyzeByLabeling.
 */
async function analyzePerHook(input: AnalyzeInput, opts: AnalyzeOptions,
  enc: { groups: string[]; index: Int32Array; counts: number[] }): Promise<AnalyzeResult>
{
  const { matrices, colsums, source } = input;
  const G = enc.groups.length;
  const n = source.n;
  const R = opts.permutations;
  const L = R + 1;
  // Every labelling, shared with the worker threads (not copied).
  const labelings = new Int32Array(new SharedArrayBuffer(L * n * 4));
  const gen = labelingGenerator(enc.index, n, opts.seed, input.itemGroups);
  for (let l = 0; l < L; l++) labelings.set(gen(), l * n);
  const { hooks, fed } = hooksOf(matrices);
  const threads = Math.max(1, Math.min(opts.threads ?? 1, hooks.length));
  const batchBytes = opts.batchBytes ??
    Math.min(HOOK_BATCH_BYTES, Math.floor((NULL_THREADS_BYTES - threads * WORKER_BASE_BYTES) / threads));
  const pooler = hookPooler(source, threads);
  const total = new Float64Array(R * countStride(G));
  const results: HookNullResult[] = new Array(hooks.length);
  let steps = 0;
  try {
    await Promise.all(
      hooks.map(async (hook, i) => {
        const ms = fed[i]!.map((k) => matrices[k]!);
        const C = await Promise.all(ms.map(async (m) => checkColsums(m, await colsums.get(m.name)!, opts.block[0])));
        const res = await pooler.hookNull({ hook, layer: ms[0]!.layer, n, labelings, counts: enc.counts,
          groups: enc.groups, matrices: ms, C, block: opts.block, top: opts.top, batchBytes });
        mergeHookCounts(total, res.counts);
        results[i] = res;
        opts.onStep?.(++steps, hooks.length);
      }),
    );
  } finally {
    await pooler.close();
  }
  const observed: Float32Array[][] = Array.from({ length: G }, () => new Array<Float32Array>(matrices.length));
  results.forEach((res, i) =>
    fed[i]!.forEach((k, j) => enc.groups.forEach((_, g) => (observed[g]![k] = res.observed[g]![j]!)))
  );
  const masks = observed.map((sc) => selectTop(sc, matrices, opts.top));
  const res = summarize(enc, matrices, observed, masks, R > 0 ? nullsFromCounts(total, G, R) : null);
  res.channels = results.map((r) => r.channel);
  return res;
}

/** The null labelling by labelling: each batch of labellings reads every capture point once; any selection scope. */
async function analyzeByLabeling(
  input: { matrices: WandaMatrix[]; colsums: Map<string, Float32Array>; source: ActivationSource;
    itemGroups?: Int32Array | null },
  opts: AnalyzeOptions,
  enc: { groups: string[]; index: Int32Array; counts: number[] },
): Promise<AnalyzeResult> {
  const { matrices, colsums, source } = input;
  const [rb, cb] = opts.block;
  const G = enc.groups.length;
  const R = opts.permutations;
  const total = R + 1;
  const totalBlocks = matrices.reduce((a, m) => a + m.rowBlocks * m.colBlocks, 0);
  const maxD = matrices.reduce((a, m) => Math.max(a, m.dIn), 0);
  // Pooled maps (4 bytes per block) and the group sums of x² (8 bytes per feature, twice: accumulators and copies).
  const perLabeling = G * (totalBlocks * 4 + maxD * 16);
  const B = Math.max(1, Math.min(total, Math.floor((opts.batchBytes ?? 256 << 20) / perLabeling)));

  const gen = labelingGenerator(enc.index, source.n, opts.seed, input.itemGroups);
  const pairs = pairList(G);
  const nullVals = emptyNulls(pairs.length, G, R);

  const { hooks, fed: fedIdx } = hooksOf(matrices);
  let observed: { pooled: Float32Array[][]; masks: Masks[] } | null = null;
  let done = 0;
  let steps = 0;
  const totalSteps = Math.ceil(total / B) * hooks.length;

  const pooler = hookPooler(source, nullThreads(opts.threads ?? 1, hooks.length, B, G, maxD));
  // The matrices each capture point feeds, with their column sums.
  const fed = fedIdx.map((ks) => ({ ks,
    mats: ks.map((k) => ({ C: colsums.get(matrices[k].name)!, dOut: matrices[k].dOut, dIn: matrices[k].dIn })) })
  );
  const channelNulls = hooks.map((hook) => new ChannelNull(hook, source.dim(hook)!, enc.counts, R));
  try {
    for (let l0 = 0; l0 < total; l0 += B) {
      const nb = Math.min(B, total - l0);
      const labelings: Int32Array[] = [];
      for (let t = 0; t < nb; t++) labelings.push(gen());
      // pooled[t][g][m]
      const pooled: Float32Array[][][] = labelings.map(() =>
        Array.from({ length: G }, () => new Array<Float32Array>(matrices.length))
      );
      // Up to `pooler.threads` capture points at once; collected in capture-point order.
      const started: (Promise<HookPooled> | undefined)[] = [];
      const launch = (i: number) => {
        const p = pooler.pooled(hooks[i], labelings, enc.counts, fed[i].mats, rb, cb);
        p.catch(() => {}); // awaited below, in order; an earlier failure must not leave it unhandled
        started[i] = p;
      };
      for (let i = 0; i < Math.min(pooler.threads, hooks.length); i++) launch(i);
      for (let i = 0; i < hooks.length; i++) {
        const out = await started[i]!;
        const maps = out.pooled;
        started[i] = undefined;
        for (let t = 0; t < nb; t++) channelNulls[i].add(l0 + t, out.scalers[t]);
        if (i + pooler.threads < hooks.length) launch(i + pooler.threads);
        for (let t = 0; t < nb; t++)
          for (let g = 0; g < G; g++) fed[i].ks.forEach((k, j) => (pooled[t][g][k] = maps[t][g][j]));
        opts.onStep?.(++steps, totalSteps);
      }
      for (let t = 0; t < nb; t++) {
        const l = l0 + t;
        const masks = pooled[t].map((sc) => selectTop(sc, matrices, opts.top));
        if (l === 0) observed = { pooled: pooled[t], masks };
        else recordNull(nullVals, pairs, masks, matrices, l - 1);
        done++;
        opts.onLabeling?.(done, total);
      }
    }
  } finally {
    await pooler.close();
  }

  const res = summarize(enc, matrices, observed!.pooled, observed!.masks, R > 0 ? nullVals : null);
  res.channels = channelNulls.map((c, i) => c.result(enc.groups, matrices[fed[i].ks[0]].layer));
  return res;
}

/** Memory the worker threads of the null may hold together (their sums and their own heaps). */
export const NULL_THREADS_BYTES = 2 * 2 ** 30;
/** What one worker thread of the null is taken to need besides its sums (its own JavaScript heap and reader, and up to 16 MiB of squared rows: hooknull.ts subRows). */
const WORKER_BASE_BYTES = 48 * 2 ** 20;

/**
 * Threads for the null: at most `threads`, one per capture point, and no more than fit in
 * NULL_THREADS_BYTES when each holds the group sums of a batch of B labellings of the widest
 * capture point twice (accumulators and compact copies, 8 bytes a value) plus its base.
 */
export function nullThreads(threads: number, hooks: number, B: number, G: number, maxD: number): number {
  const perThread = B * G * maxD * 16 + WORKER_BASE_BYTES;
  return Math.max(1, Math.min(threads, hooks, Math.floor(NULL_THREADS_BYTES / perThread)));
}

/**
 * How the null may shuffle the used samples' labels (`used`: their labels) given their item
 * groups: freely without groups; with groups, only within each item group (cluster's
 * within-groups design, src/cluster/metrics.ts permutationDesign), so every group keeps its
 * labels and each label its size. Where every item group holds one label, cluster would shuffle
 * whole groups, which changes the labels' sizes that the pooled maps divide by: refused.
 */
export function labellingDesign(used: Int32Array, itemGroups: Int32Array | null | undefined): PermutationDesign {
  const d = permutationDesign(used, itemGroups);
  if (d.kind === 'groups')
    throw new LobesError(
      `every item group holds one label, so the label null could only shuffle whole groups, which changes the labels' sizes`,
      { hint: `analyse without groups (${opt('group', 'none')}), or group by another axis` },
    );
  return d;
}

/** Seeded labellings: the observed one first, then shuffles of the used samples' groups (within their item groups, given `itemGroups`). */
export function labelingGenerator(index: Int32Array, n: number, seed: number,
  itemGroups?: Int32Array | null): () => Int32Array
{
  const used: number[] = [];
  index.forEach((g, r) => g >= 0 && used.push(r));
  const usedGroups = Int32Array.from(used.map((r) => index[r]));
  const design = labellingDesign(usedGroups, itemGroups ? Int32Array.from(used, (r) => itemGroups[r]!) : null);
  const rng = new Rng(seed);
  let first = true;
  return () => {
    if (first) {
      first = false;
      return index;
    }
    const perm = usedGroups.slice();
    designShuffle(rng, perm, design);
    const L = new Int32Array(n).fill(-1);
    for (let u = 0; u < used.length; u++) L[used[u]] = perm[u];
    return L;
  };
}

/** Record permutation r's values of every tested metric. */
export function recordNull(nullVals: Nulls, pairs: [number, number][], masks: Masks[], matrices: WandaMatrix[],
  r: number): void
{
  pairs.forEach(([a, b], p) => {
    const v = pairValues(masks[a], masks[b], matrices);
    for (const k of PAIR_NULLS) nullVals.pairs[p][k][r] = v[k];
  });
  masks.forEach((m, g) => {
    nullVals.groups[g].density[r] = density(m, matrices);
    nullVals.groups[g].components[r] = components(m, matrices);
  });
}

/** Outputs from the observed pooled maps and masks and the null distributions. */
export function summarize(
  enc: { groups: string[]; counts: number[] },
  matrices: WandaMatrix[],
  obsPooled: Float32Array[][],
  obsMasks: Masks[],
  nulls: Nulls | null,
): AnalyzeResult {
  const obs = { pooled: obsPooled, masks: obsMasks };
  const pairs = pairList(enc.groups.length);
  const R = nulls?.groups[0]?.density.length ?? 0;
  const nullVals = nulls ?? emptyNulls(pairs.length, enc.groups.length, 0);
  const pooledOut = new Map<string, Float32Array>();
  enc.groups.forEach((g, gi) => matrices.forEach((m, k) => pooledOut.set(`${g}|${m.name}`, obs.pooled[gi][k])));
  const regions: WandaRegions = {
    matrices,
    regions: Object.fromEntries(enc.groups.map((g, gi) => [g, toBlockSet(obs.masks[gi], matrices)])),
    differences: pairs.map(([a, b]) => ({
      a: enc.groups[a],
      b: enc.groups[b],
      aMinusB: toBlockSet(minus(obs.masks[a], obs.masks[b]), matrices),
      bMinusA: toBlockSet(minus(obs.masks[b], obs.masks[a]), matrices),
    })),
  };
  const pairMetrics: WandaPairMetrics[] = pairs.map(([a, b], p) => {
    const A = obs.masks[a];
    const Bm = obs.masks[b];
    const amb = minus(A, Bm);
    const bma = minus(Bm, A);
    const v = pairValues(A, Bm, matrices);
    const nv = R > 0 ? nullVals.pairs[p] : null;
    const da = distribution(amb, matrices);
    const db = distribution(bma, matrices);
    return {
      a: enc.groups[a],
      b: enc.groups[b],
      jaccard: nullTest(v.jaccard, nv?.jaccard ?? null),
      isolationAB: nullTest(v.isolationAB, nv?.isolationAB ?? null),
      isolationBA: nullTest(v.isolationBA, nv?.isolationBA ?? null),
      sizeAminusB: size(amb),
      sizeBminusA: size(bma),
      densityAminusB: nullTest(v.densityAminusB, nv?.densityAminusB ?? null),
      densityBminusA: nullTest(v.densityBminusA, nv?.densityBminusA ?? null),
      componentsAminusB: v.componentsAminusB,
      componentsBminusA: v.componentsBminusA,
      componentsAminusBNull: nullTest(v.componentsAminusB, nv?.componentsAminusB ?? null),
      componentsBminusANull: nullTest(v.componentsBminusA, nv?.componentsBminusA ?? null),
      byLayerAminusB: da.byLayer,
      byLayerBminusA: db.byLayer,
      byProjAminusB: da.byProj,
      byProjBminusA: db.byProj,
    };
  });
  const metrics: WandaMetrics = {
    groups: enc.groups.map((g, gi) => ({
      group: g,
      n: enc.counts[gi],
      regionSize: size(obs.masks[gi]),
      density: density(obs.masks[gi], matrices),
      components: components(obs.masks[gi], matrices),
      densityNull: nullTest(density(obs.masks[gi], matrices), R > 0 ? nullVals.groups[gi].density : null),
      componentsNull: nullTest(components(obs.masks[gi], matrices), R > 0 ? nullVals.groups[gi].components : null),
    })),
    pairs: pairMetrics,
    permutations: R,
  };
  return { groups: enc.groups, counts: enc.counts, pooled: pooledOut, regions, metrics, nulls: nullVals };
}

function pairValues(A: Masks, B: Masks, matrices: WandaMatrix[]): Record<NullMetric, number> {
  const amb = minus(A, B);
  const bma = minus(B, A);
  const sa = size(A);
  const sb = size(B);
  return {
    jaccard: jaccard(A, B),
    isolationAB: sa === 0 ? 0 : size(amb) / sa,
    isolationBA: sb === 0 ? 0 : size(bma) / sb,
    densityAminusB: density(amb, matrices),
    densityBminusA: density(bma, matrices),
    componentsAminusB: components(amb, matrices),
    componentsBminusA: components(bma, matrices),
  };
}
