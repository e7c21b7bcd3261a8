/**
 * Block sets as bits, for the permutation null: every shuffled labelling selects the top
 * blocks of every group and counts, for every group and pair, the integers the region metrics
 * are ratios of (src/wanda/hooknull.ts). regions.ts does the same on one byte per block,
 * allocating a mask per set; here a matrix's set is R rows of W = ⌈K/32⌉ 32-bit words (bit c
 * of a row is word c >> 5, bit c & 31), reused across labellings, and the counts come from
 * word operations:
 *   size            Σ popcount(row)
 *   |A∩B|, |A∖B|    Σ popcount(a & b), Σ popcount(a & ~b)
 *   density         in-set slots = 2 · (horizontal pairs popcount(row & row >> 1) + vertical
 *                   pairs popcount(row_r & row_r+1)); slots = 4|S| minus the set's blocks in
 *                   the first and last row and in the first and last column (a block on two
 *                   edges, or a one-row matrix's row, is subtracted twice, as it loses two)
 *   components      runs of consecutive bits in each row, joined (union–find) with the runs of
 *                   the row above that share a column: runs − successful joins.
 * The selection is selectTop's for scope 'matrix' (the k-th largest by kthLargest, then the
 * values above it, then ties in flat order), so every count equals regions.ts's exactly
 * (test/wanda/bitsets.test.ts compares them on random, tied and edge-shaped sets).
 */
import { keepCount, kthLargest, type TopSpec } from './regions.js';
import type { WandaMatrix } from './types.js';

/** Where each matrix's rows live in a set's words. */
export interface BitLayout {
  R: number[];
  K: number[];
  W: number[];
  /** First word of matrix m. */
  off: number[];
  words: number;
}

export function bitLayout(matrices: readonly WandaMatrix[]): BitLayout {
  const L: BitLayout = { R: [], K: [], W: [], off: [], words: 0 };
  for (const m of matrices) {
    const W = Math.ceil(m.colBlocks / 32);
    L.R.push(m.rowBlocks);
    L.K.push(m.colBlocks);
    L.W.push(W);
    L.off.push(L.words);
    L.words += m.rowBlocks * W;
  }
  return L;
}

export function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * selectTop(scores, matrices, { ...top, scope: 'matrix' }) as bits into `out` (layout.words
 * long; overwritten). `work` is scratch of at least the largest map's length.
 */
export function selectTopBits(scores: readonly Float32Array[], L: BitLayout, top: TopSpec, out: Uint32Array,
  work: Float32Array): void
{
  out.fill(0, 0, L.words);
  for (let m = 0; m < scores.length; m++) {
    const s = scores[m]!;
    const n = s.length;
    const k = keepCount(top, n);
    if (k === 0) continue;
    const v = work.subarray(0, n);
    v.set(s);
    const thr = kthLargest(v, k);
    const K = L.K[m]!;
    const W = L.W[m]!;
    const off = L.off[m]!;
    let taken = 0;
    for (let r = 0, i = 0; r < L.R[m]!; r++) {
      const o = off + r * W;
      for (let c = 0; c < K; c++, i++) {
        if (s[i]! > thr) {
          out[o + (c >>> 5)] |= 1 << (c & 31);
          taken++;
        }
      }
    }
    for (let r = 0, i = 0; r < L.R[m]! && taken < k; r++) {
      const o = off + r * W;
      for (let c = 0; c < K && taken < k; c++, i++) {
        if (s[i] === thr) {
          out[o + (c >>> 5)] |= 1 << (c & 31);
          taken++;
        }
      }
    }
  }
}

/** Σ popcount(a & b): |A ∩ B|. */
export function countAnd(a: Uint32Array, b: Uint32Array, words: number): number {
  let n = 0;
  for (let i = 0; i < words; i++) n += popcount(a[i]! & b[i]!);
  return n;
}

/** out = a & ~b. */
export function andNot(a: Uint32Array, b: Uint32Array, out: Uint32Array, words: number): void {
  for (let i = 0; i < words; i++) out[i] = a[i]! & ~b[i]!;
}

/** densityCounts of the set, with its size: [size, inSet, slots] into res. */
export function densityBits(x: Uint32Array, L: BitLayout, res: Float64Array): void {
  let size = 0;
  let pairs = 0;
  let edge = 0;
  for (let m = 0; m < L.R.length; m++) {
    const R = L.R[m]!;
    const K = L.K[m]!;
    const W = L.W[m]!;
    const off = L.off[m]!;
    const lastWord = (K - 1) >>> 5;
    const lastBit = (K - 1) & 31;
    for (let r = 0; r < R; r++) {
      const o = off + r * W;
      for (let w = 0; w < W; w++) {
        const a = x[o + w]!;
        if (a === 0) continue;
        const pa = popcount(a);
        size += pa;
        // Bit c and c + 1 both set: a & (a >> 1), with bit 31 taking the next word's bit 0.
        const next = w + 1 < W ? x[o + w + 1]! : 0;
        pairs += popcount(a & ((a >>> 1) | (next << 31)));
        if (r + 1 < R) pairs += popcount(a & x[o + W + w]!);
        if (r === 0) edge += pa;
        if (r === R - 1) edge += pa;
      }
      edge += (x[o]! & 1) + ((x[o + lastWord]! >>> lastBit) & 1);
    }
  }
  res[0] = size;
  res[1] = 2 * pairs;
  res[2] = 4 * size - edge;
}

/** Scratch for componentsBits: room for every run of the largest matrix. */
export class RunScratch {
  parent: Int32Array;
  start: Int32Array;
  end: Int32Array;
  constructor(L: BitLayout) {
    let most = 1;
    for (let m = 0; m < L.R.length; m++) most = Math.max(most, L.R[m]! * Math.ceil(L.K[m]! / 2));
    this.parent = new Int32Array(most);
    this.start = new Int32Array(most);
    this.end = new Int32Array(most);
  }
}

/** components(): 4-connected components within each matrix, summed. */
export function componentsBits(x: Uint32Array, L: BitLayout, sc: RunScratch): number {
  const { parent, start, end } = sc;
  let count = 0;
  for (let m = 0; m < L.R.length; m++) {
    const R = L.R[m]!;
    const W = L.W[m]!;
    const off = L.off[m]!;
    let runs = 0;
    let prev0 = 0;
    let prev1 = 0;
    for (let r = 0; r < R; r++) {
      const o = off + r * W;
      const cur0 = runs;
      // The row's runs [start, end] in column order: a run starts at a set bit whose left
      // neighbour is clear and ends at one whose right neighbour is clear (across words).
      let ns = runs;
      let ne = runs;
      for (let w = 0; w < W; w++) {
        const a = x[o + w]!;
        if (a === 0) continue;
        const left = (a << 1) | (w > 0 ? x[o + w - 1]! >>> 31 : 0);
        const right = (a >>> 1) | (w + 1 < W ? x[o + w + 1]! << 31 : 0);
        const base = w << 5;
        for (let s = a & ~left; s !== 0; s &= s - 1) start[ns++] = base + 31 - Math.clz32(s & -s);
        for (let e = a & ~right; e !== 0; e &= e - 1) end[ne++] = base + 31 - Math.clz32(e & -e);
      }
      for (let q = runs; q < ns; q++) parent[q] = q;
      runs = ns;
      // Join with the runs of the row above that share a column (both lists in column order).
      let i = prev0;
      let j = cur0;
      while (i < prev1 && j < runs) {
        if (end[i]! >= start[j]! && end[j]! >= start[i]!) {
          let a = i;
          while (parent[a] !== a) a = parent[a] = parent[parent[a]!]!;
          let b = j;
          while (parent[b] !== b) b = parent[b] = parent[parent[b]!]!;
          if (a !== b) {
            parent[a > b ? a : b] = a > b ? b : a;
            count--;
          }
        }
        if (end[i]! < end[j]!) i++;
        else j++;
      }
      prev0 = cur0;
      prev1 = runs;
    }
    count += runs;
  }
  return count;
}
