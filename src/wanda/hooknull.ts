/**
 * The label-permutation null of one capture point, whole, on one thread: the group sums of x²
 * of every labelling, the pooled maps of the matrices the capture point feeds, their top
 * blocks, and per labelling the integer counts that every null metric is a ratio of (set
 * sizes, intersections, neighbour slots, components), with the channel test of the capture
 * point. With regions selected per matrix, a region metric over all matrices is a ratio of
 * sums over matrices of such counts; integer sums do not depend on the order they are added
 * in, so the capture points' counts can be merged as they arrive (mergeHookCounts) and give
 * exactly the numbers of the whole analysis. A capture point can therefore be finished on any
 * thread as soon as the weight pass has the column sums of the matrices it feeds.
 *
 * The group sums are those of groupSquareSums (src/wanda/stats.ts): each accumulator adds the
 * rows of its group in row order (the same additions in the same order, so the same bits),
 * but cache-blocked: for a few rows at a time, a tile of features of every labelling's
 * accumulators is finished before the next tile, so that the accumulators stay in the CPU
 * cache instead of all labellings' being streamed from memory for every row.
 */
import { LobesError } from '../util/errors.js';
import { createSimd, type SimdKernel } from './simd.js';
import { matrixPooler, rmsScaler, squareRow, type ActivationSource } from './stats.js';
import { selectTop, minus, size, intersectionSize, densityCounts, components, type Masks, type TopSpec } from './regions.js';
import { ChannelNull } from './channels.js';
import { emptyNulls, pairList, type Nulls } from './nulls.js';
import type { WandaChannelTest, WandaMatrix } from './types.js';

/** Per pair and labelling: |A∩B|, |A∖B|, |B∖A|, then in-set slots and slots of A∖B and of B∖A, then components of A∖B and of B∖A. */
const PAIR_FIELDS = 9;
/** Per group and labelling: |A|, in-set slots, slots, components. */
const GROUP_FIELDS = 4;

/** Counts per labelling for G groups. */
export function countStride(G: number): number {
  return pairList(G).length * PAIR_FIELDS + G * GROUP_FIELDS;
}

export interface HookNullJob {
  hook: string;
  /** Layer of the capture point (for the channel test). */
  layer: number;
  /** Samples. */
  n: number;
  /** Labellings, (R + 1) × n group indices (-1 = left out), the observed one first. */
  labelings: Int32Array;
  /** Group sizes, and names (for the channel test). */
  counts: number[];
  groups: string[];
  /** The matrices fed by the capture point (output order) and their column sums. */
  matrices: WandaMatrix[];
  C: Float32Array[];
  block: [number, number];
  /** Selection, per matrix. */
  top: TopSpec;
  /** Bytes of group sums for one batch of labellings (one read of the capture point per batch). */
  batchBytes: number;
}

export interface HookNullResult {
  /** The observed labelling's pooled maps, [group][matrix]. */
  observed: Float32Array[][];
  /** R × countStride(G) counts (permutation r at r · stride). */
  counts: Float64Array;
  /** The channel test (before the family correction). */
  channel: WandaChannelTest;
}

/** Rows squared at once. */
const SUB_ROWS = 32;
/** Every labelling's accumulators of one tile of features fit in this (a share of a 1 MiB L2). */
const TILE_BYTES = 512 << 10;

/**
 * The whole null of one capture point (see the module comment). `kernel`: a SIMD instance
 * whose memory holds the group sums (kept by the caller across capture points, so that its
 * memory is grown and faulted in once per thread rather than once per capture point).
 */
export async function hookNull(src: ActivationSource, job: HookNullJob, kernel: SimdKernel | null = createSimd()): Promise<HookNullResult> {
  const { hook, n, counts, matrices, top } = job;
  if (top.scope !== 'matrix') throw new Error('hookNull selects per matrix');
  const [rb, cb] = job.block;
  const d = src.dim(hook);
  if (d === null) throw new LobesError(`capture point ${hook} is not in the run`, { file: src.where });
  if (src.n !== n) throw new LobesError(`the run has ${src.n} samples here, ${n} in the analysis`, { file: src.where, hint: 'the run changed while it was analysed; run the analysis again' });
  const G = counts.length;
  const L = job.labelings.length / n;
  const R = L - 1;
  const pairs = pairList(G);
  const stride = countStride(G);
  const out = new Float64Array(R * stride);
  const pool = matrixPooler(d, matrices.map((m, i) => ({ C: job.C[i]!, dOut: m.dOut, dIn: m.dIn })), rb, cb);
  const channel = new ChannelNull(hook, d, counts, R);
  const dPad = d + (d & 1);
  const B = Math.max(1, Math.min(L, Math.floor(job.batchBytes / (G * dPad * 8))));
  const k = kernel;
  const observed: Float32Array[][] = [];
  const s = new Float64Array(G * d);
  for (let l0 = 0; l0 < L; l0 += B) {
    const nb = Math.min(B, L - l0);
    const acc = await squareSums(src, hook, d, job.labelings, n, l0, nb, G, k);
    for (let t = 0; t < nb; t++) {
      const l = l0 + t;
      for (let g = 0; g < G; g++) {
        const o = (t * G + g) * dPad;
        rmsScaler(acc.subarray(o, o + d), 0, d, counts[g]!, s.subarray(g * d, (g + 1) * d));
      }
      channel.add(l, s);
      const maps = pool(counts.map((_, g) => s.subarray(g * d, (g + 1) * d)));
      if (l === 0) observed.push(...maps);
      const masks = maps.map((m) => selectTop(m, matrices, top));
      if (l > 0) countMasks(masks, pairs, matrices, out, (l - 1) * stride);
    }
  }
  return { observed, counts: out, channel: channel.result(job.groups, job.layer) };
}

/**
 * Group sums of x² of labellings l0 .. l0 + nb − 1: Float64Array [nb][G][dPad] (dPad = d
 * rounded up to even), each value the sum of its group's rows in row order.
 */
async function squareSums(src: ActivationSource, hook: string, d: number, labelings: Int32Array, n: number, l0: number, nb: number, G: number, kernel: SimdKernel | null): Promise<Float64Array> {
  const dPad = d + (d & 1);
  const nvec = dPad >> 1;
  const accBytes = nb * G * dPad * 8;
  const x2Off = accBytes;
  const listOff = x2Off + SUB_ROWS * dPad * 8;
  // At most two words of head per labelling and group, one per labelled row.
  const end = listOff + nb * (2 * G + SUB_ROWS) * 4;
  const k = kernel && end < 2 ** 31 && kernel.ensure(end) ? kernel : null;
  const mem = k ? k.memory.buffer : new ArrayBuffer(end);
  const acc = new Float64Array(mem, 0, nb * G * dPad);
  acc.fill(0);
  const x2 = new Float64Array(mem, x2Off, SUB_ROWS * dPad);
  x2.fill(0);
  const list = new Int32Array(mem, listOff, nb * (2 * G + SUB_ROWS));
  // Vectors (two features) per tile: every labelling's accumulators of a tile fit in TILE_BYTES.
  const tile = Math.max(1, Math.min(nvec, Math.floor(TILE_BYTES / (nb * G * 16))));
  let seen = 0;
  for await (const chunk of src.iterate(hook, Math.max(1, Math.floor((4 << 20) / (4 * d))))) {
    const data = chunk.data;
    if (data.length !== chunk.rows * d) throw new LobesError(`chunk at row ${chunk.start} has ${data.length} values, expected ${chunk.rows} x ${d}`, { file: src.where, where: hook });
    if (chunk.start + chunk.rows > n) throw new LobesError(`capture point ${hook} has more rows than the run's ${n} samples`, { file: src.where });
    for (let r0 = 0; r0 < chunk.rows; r0 += SUB_ROWS) {
      const rows = Math.min(SUB_ROWS, chunk.rows - r0);
      for (let r = 0; r < rows; r++) squareRow(src, hook, data, (r0 + r) * d, d, chunk.start + r0 + r, x2, r * dPad);
      // Entries [accumulator, rows, row addresses...]: labelling by labelling, group by group, rows in order.
      let ne = 0;
      let w = 0;
      for (let t = 0; t < nb; t++) {
        const lo = (l0 + t) * n + chunk.start + r0;
        for (let g = 0; g < G; g++) {
          const head = w;
          w += 2;
          for (let r = 0; r < rows; r++) if (labelings[lo + r] === g) list[w++] = x2Off + r * dPad * 8;
          if (w === head + 2) {
            w = head;
            continue;
          }
          list[head] = (t * G + g) * dPad * 8;
          list[head + 1] = w - head - 2;
          ne++;
        }
      }
      if (ne === 0) continue;
      for (let v0 = 0; v0 < nvec; v0 += tile) {
        const nv = Math.min(tile, nvec - v0);
        if (k) k.addgroups(listOff, ne, nv, v0 * 16);
        else {
          for (let e = 0, p = 0; e < ne; e++) {
            const a = list[p]! / 8 + 2 * v0;
            const ns = list[p + 1]!;
            for (let q = 0; q < ns; q++) {
              const b = (list[p + 2 + q]! - x2Off) / 8 + 2 * v0;
              for (let j = 0; j < 2 * nv; j++) acc[a + j] += x2[b + j]!;
            }
            p += 2 + ns;
          }
        }
      }
    }
    seen += chunk.rows;
  }
  if (seen !== src.n) throw new LobesError(`capture point ${hook} has ${seen} rows but the run has ${src.n} samples`, { file: src.where });
  // A view into the kernel's memory: used before the next batch grows it.
  return acc;
}

/** One labelling's counts (see PAIR_FIELDS, GROUP_FIELDS) of the groups' masks into out[o ..]. */
function countMasks(masks: Masks[], pairs: [number, number][], matrices: WandaMatrix[], out: Float64Array, o: number): void {
  const gBase = o + pairs.length * PAIR_FIELDS;
  masks.forEach((m, g) => {
    const dc = densityCounts(m, matrices);
    const x = gBase + g * GROUP_FIELDS;
    out[x] = size(m);
    out[x + 1] = dc.inSet;
    out[x + 2] = dc.slots;
    out[x + 3] = components(m, matrices);
  });
  pairs.forEach(([a, b], p) => {
    const amb = minus(masks[a]!, masks[b]!);
    const bma = minus(masks[b]!, masks[a]!);
    const da = densityCounts(amb, matrices);
    const db = densityCounts(bma, matrices);
    const x = o + p * PAIR_FIELDS;
    out[x] = intersectionSize(masks[a]!, masks[b]!);
    out[x + 1] = size(amb);
    out[x + 2] = size(bma);
    out[x + 3] = da.inSet;
    out[x + 4] = da.slots;
    out[x + 5] = db.inSet;
    out[x + 6] = db.slots;
    out[x + 7] = components(amb, matrices);
    out[x + 8] = components(bma, matrices);
  });
}

/** Add one capture point's counts into the total (integers: any order gives the same sums). */
export function mergeHookCounts(total: Float64Array, counts: Float64Array): void {
  for (let i = 0; i < total.length; i++) total[i] += counts[i]!;
}

/** The null distributions from the counts summed over every capture point: the values recordNull gives for the whole masks. */
export function nullsFromCounts(total: Float64Array, G: number, R: number): Nulls {
  const pairs = pairList(G);
  const stride = countStride(G);
  const nulls = emptyNulls(pairs.length, G, R);
  const ratio = (num: number, den: number) => (den === 0 ? 0 : num / den);
  for (let r = 0; r < R; r++) {
    const o = r * stride;
    const gBase = o + pairs.length * PAIR_FIELDS;
    const sizeOf = (g: number) => total[gBase + g * GROUP_FIELDS]!;
    pairs.forEach(([a, b], p) => {
      const x = o + p * PAIR_FIELDS;
      const inter = total[x]!;
      const v = nulls.pairs[p]!;
      v.jaccard[r] = ratio(inter, sizeOf(a) + sizeOf(b) - inter);
      v.isolationAB[r] = ratio(total[x + 1]!, sizeOf(a));
      v.isolationBA[r] = ratio(total[x + 2]!, sizeOf(b));
      v.densityAminusB[r] = ratio(total[x + 3]!, total[x + 4]!);
      v.densityBminusA[r] = ratio(total[x + 5]!, total[x + 6]!);
      v.componentsAminusB[r] = total[x + 7]!;
      v.componentsBminusA[r] = total[x + 8]!;
    });
    for (let g = 0; g < G; g++) {
      const x = gBase + g * GROUP_FIELDS;
      nulls.groups[g]!.density[r] = ratio(total[x + 1]!, total[x + 2]!);
      nulls.groups[g]!.components[r] = total[x + 3]!;
    }
  }
  return nulls;
}
