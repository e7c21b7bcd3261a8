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
import { createSimd, align16, type SimdKernel } from './simd.js';
import { matrixPooler, rmsScaler, squareRow, type ActivationSource } from './stats.js';
import type { TopSpec } from './regions.js';
import { bitLayout, selectTopBits, countAnd, andNot, densityBits, componentsBits, RunScratch,
  type BitLayout } from './bitsets.js';
import { ChannelNull, channelSpreadSimd, spreadParamBytes } from './channels.js';
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

/** Labellings whose groups' scalers are pooled in one call. */
const POOLED_LABELINGS = 4;
/**
 * Rows squared and added per pass: 128 (each accumulator is loaded and stored once per pass,
 * so more rows mean less traffic), fewer for very wide capture points so that the squared rows
 * stay within 16 MiB, and at least 32.
 */
const subRows = (dPad: number): number => Math.max(32, Math.min(128, Math.floor((16 << 20) / (dPad * 8))));
/** Every labelling's accumulators of one tile of features fit in this (a share of a 1 MiB L2). */
const TILE_BYTES = 512 << 10;

/**
 * The whole null of one capture point (see the module comment). `kernel`: a SIMD instance
 * whose memory holds the group sums (kept by the caller across capture points, so that its
 * memory is grown and faulted in once per thread rather than once per capture point).
 */
export async function hookNull(src: ActivationSource, job: HookNullJob,
  kernel: SimdKernel | null = createSimd()): Promise<HookNullResult>
{
  const { hook, n, counts, matrices, top } = job;
  if (top.scope !== 'matrix') throw new Error('hookNull selects per matrix');
  const [rb, cb] = job.block;
  const d = src.dim(hook);
  if (d === null) throw new LobesError(`capture point ${hook} is not in the run`, { file: src.where });
  if (src.n !== n)
    throw new LobesError(`the run has ${src.n} samples here, ${n} in the analysis`, { file: src.where,
      hint: 'the run changed while it was analysed; run the analysis again' });
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
  // Four labellings' scalers are pooled together: 4·G scalers, a multiple of four, so that
  // every read of C serves four of them (poolrow4) even when G is not a multiple of four.
  // They live in the kernel's memory past the group sums, with the channel test's parameters
  // and output, so that the RMS and the channel spread run there too (rms, spread).
  const sLen = POOLED_LABELINGS * G * d;
  const sOff = align16(sumsBytes(B, G, dPad));
  const pOff = sOff + align16(sLen * 8);
  const tOff = pOff + align16(spreadParamBytes(G));
  const fast = k && tOff + d * 8 < 2 ** 31 && k.ensure(tOff + d * 8) ? k : null;
  const s = fast ? new Float64Array(fast.memory.buffer, sOff, sLen) : new Float64Array(sLen);
  const counter = new MaskCounter(matrices, G);
  for (let l0 = 0; l0 < L; l0 += B) {
    const nb = Math.min(B, L - l0);
    const acc = await squareSums(src, hook, d, job.labelings, n, l0, nb, G, k);
    const simd = fast !== null && acc.buffer === fast.memory.buffer ? fast : null;
    for (let t0 = 0; t0 < nb; t0 += POOLED_LABELINGS) {
      const nt = Math.min(POOLED_LABELINGS, nb - t0);
      const scalers: Float64Array[] = [];
      for (let u = 0; u < nt; u++) {
        const su = s.subarray(u * G * d, (u + 1) * G * d);
        for (let g = 0; g < G; g++) {
          const o = ((t0 + u) * G + g) * dPad;
          const sg = su.subarray(g * d, (g + 1) * d);
          if (simd) rmsSimd(simd, acc, o, sg, d, counts[g]!, pOff);
          else rmsScaler(acc.subarray(o, o + d), 0, d, counts[g]!, sg);
          scalers.push(sg);
        }
        channel.add(l0 + t0 + u, su, simd ? channelSpreadSimd(simd, su.byteOffset, d, counts, pOff, tOff) : undefined);
      }
      const maps = pool(scalers);
      for (let u = 0; u < nt; u++) {
        const l = l0 + t0 + u;
        const mu = maps.slice(u * G, (u + 1) * G);
        if (l === 0) observed.push(...mu);
        else counter.count(mu, top, pairs, out, (l - 1) * stride);
      }
    }
  }
  return { observed, counts: out, channel: channel.result(job.groups, job.layer) };
}

/** Bytes of squareSums' kernel memory for nb labellings (group sums, squared rows, entry list). */
function sumsBytes(nb: number, G: number, dPad: number): number {
  const rows = subRows(dPad);
  return nb * G * dPad * 8 + rows * dPad * 8 + nb * (2 * G + rows) * 4;
}

/** rmsScaler of the group sums at acc[o ..] into dst through the kernel (acc and dst in its memory; inv at p). */
function rmsSimd(k: SimdKernel, acc: Float64Array, o: number, dst: Float64Array, d: number, count: number,
  p: number): void
{
  const inv = count > 0 ? 1 / count : 0;
  new Float64Array(k.memory.buffer, p, 1)[0] = inv;
  if (d >> 1 > 0) k.rms(acc.byteOffset + o * 8, dst.byteOffset, d >> 1, p);
  if (d & 1) rmsScaler(acc.subarray(o + d - 1, o + d), 0, 1, count, dst.subarray(d - 1));
}

/**
 * Group sums of x² of labellings l0 .. l0 + nb − 1: Float64Array [nb][G][dPad] (dPad = d
 * rounded up to even), each value the sum of its group's rows in row order.
 */
async function squareSums(src: ActivationSource, hook: string, d: number, labelings: Int32Array, n: number, l0: number,
  nb: number, G: number, kernel: SimdKernel | null): Promise<Float64Array>
{
  const dPad = d + (d & 1);
  const nvec = dPad >> 1;
  const x2Off = nb * G * dPad * 8;
  const rowsPerPass = subRows(dPad);
  const listOff = x2Off + rowsPerPass * dPad * 8;
  // At most two words of head per labelling and group, one per labelled row.
  const end = sumsBytes(nb, G, dPad);
  const k = kernel && end < 2 ** 31 && kernel.ensure(end) ? kernel : null;
  const mem = k ? k.memory.buffer : new ArrayBuffer(end);
  const acc = new Float64Array(mem, 0, nb * G * dPad);
  acc.fill(0);
  const x2 = new Float64Array(mem, x2Off, rowsPerPass * dPad);
  x2.fill(0);
  const list = new Int32Array(mem, listOff, nb * (2 * G + rowsPerPass));
  // Vectors (two features) per tile: every labelling's accumulators of a tile fit in TILE_BYTES.
  const tile = Math.max(1, Math.min(nvec, Math.floor(TILE_BYTES / (nb * G * 16))));
  let seen = 0;
  for await (const chunk of src.iterate(hook, Math.max(1, Math.floor((4 << 20) / (4 * d))))) {
    const data = chunk.data;
    if (data.length !== chunk.rows * d)
      throw new LobesError(`chunk at row ${chunk.start} has ${data.length} values, expected ${chunk.rows} x ${d}`, {
        file: src.where,
        where: hook,
      });
    if (chunk.start + chunk.rows > n)
      throw new LobesError(`capture point ${hook} has more rows than the run's ${n} samples`, { file: src.where });
    for (let r0 = 0; r0 < chunk.rows; r0 += rowsPerPass) {
      const rows = Math.min(rowsPerPass, chunk.rows - r0);
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
  if (seen !== src.n)
    throw new LobesError(`capture point ${hook} has ${seen} rows but the run has ${src.n} samples`, {
      file: src.where,
    });
  // A view into the kernel's memory: used before the next batch grows it.
  return acc;
}

/** One labelling's counts (see PAIR_FIELDS, GROUP_FIELDS) from its groups' pooled maps, on block sets as bits (src/wanda/bitsets.ts): the numbers regions.ts's masks give. */
class MaskCounter {
  private readonly L: BitLayout;
  private readonly sets: Uint32Array[];
  private readonly amb: Uint32Array;
  private readonly bma: Uint32Array;
  private readonly work: Float32Array;
  private readonly runs: RunScratch;
  private readonly res = new Float64Array(3);
  constructor(matrices: WandaMatrix[], G: number) {
    this.L = bitLayout(matrices);
    const words = this.L.words;
    this.sets = Array.from({ length: G }, () => new Uint32Array(words));
    this.amb = new Uint32Array(words);
    this.bma = new Uint32Array(words);
    this.work = new Float32Array(Math.max(1, ...matrices.map((m) => m.rowBlocks * m.colBlocks)));
    this.runs = new RunScratch(this.L);
  }

  count(maps: Float32Array[][], top: TopSpec, pairs: [number, number][], out: Float64Array, o: number): void {
    const { L, sets, amb, bma, res, runs } = this;
    const words = L.words;
    maps.forEach((m, g) => selectTopBits(m, L, top, sets[g]!, this.work));
    const gBase = o + pairs.length * PAIR_FIELDS;
    sets.forEach((set, g) => {
      densityBits(set, L, res);
      const x = gBase + g * GROUP_FIELDS;
      out[x] = res[0]!;
      out[x + 1] = res[1]!;
      out[x + 2] = res[2]!;
      out[x + 3] = componentsBits(set, L, runs);
    });
    pairs.forEach(([a, b], p) => {
      const x = o + p * PAIR_FIELDS;
      andNot(sets[a]!, sets[b]!, amb, words);
      andNot(sets[b]!, sets[a]!, bma, words);
      out[x] = countAnd(sets[a]!, sets[b]!, words);
      densityBits(amb, L, res);
      out[x + 1] = res[0]!;
      out[x + 3] = res[1]!;
      out[x + 4] = res[2]!;
      out[x + 7] = componentsBits(amb, L, runs);
      densityBits(bma, L, res);
      out[x + 2] = res[0]!;
      out[x + 5] = res[1]!;
      out[x + 6] = res[2]!;
      out[x + 8] = componentsBits(bma, L, runs);
    });
  }
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
