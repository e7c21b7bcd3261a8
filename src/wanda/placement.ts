/**
 * The random-placement null of a block set: the same number of blocks in each matrix, placed
 * uniformly at random (without replacement) within that matrix. It answers "is this set more
 * clustered than any set of its size?", which the label-permutation null does not: shuffled
 * groups still follow the one |W| map that every group shares, so their regions are already
 * clustered far above a random set of the same size.
 *
 * The random set's expected density is known exactly as a ratio of expectations. In a matrix
 * of n blocks with E 4-neighbour edges, a random k-subset has
 *
 *   E[in-set neighbour slots] = 2E · k(k − 1) / (n(n − 1))     (each ordered adjacent pair both in)
 *   E[neighbour slots]        = 2E · k / n                      (k blocks of mean degree 2E/n)
 *
 * and summed over matrices, randomDensity = Σ E[in-set] / Σ E[slots] ((k − 1)/(n − 1) for one
 * matrix). densityRatio = density / randomDensity is the density normalised for the set's size.
 */
import { Rng } from '../util/rng.js';
import type { Masks } from './regions.js';
import { bitLayout, densityBits, componentsBits, RunScratch, type BitLayout } from './bitsets.js';
import type { WandaMatrix } from './types.js';

/** Blocks of a set in each matrix. */
export function countsPerMatrix(a: Masks): Int32Array {
  const out = new Int32Array(a.length);
  a.forEach((m, k) => {
    let s = 0;
    for (let i = 0; i < m.length; i++) s += m[i]!;
    out[k] = s;
  });
  return out;
}

/** Number of 4-neighbour edges of an R × K map. */
export function edges(R: number, K: number): number {
  return R * (K - 1) + K * (R - 1);
}

/** Expected in-set neighbour slots and neighbour slots of random sets with `counts` blocks per matrix. */
export function randomSlots(counts: ArrayLike<number>, matrices: WandaMatrix[]): { inSet: number; slots: number } {
  let inSet = 0;
  let slots = 0;
  matrices.forEach((m, k) => {
    const n = m.rowBlocks * m.colBlocks;
    const c = counts[k]!;
    if (c === 0 || n === 0) return;
    const e2 = 2 * edges(m.rowBlocks, m.colBlocks);
    slots += (e2 * c) / n;
    if (n > 1) inSet += (e2 * c * (c - 1)) / (n * (n - 1));
  });
  return { inSet, slots };
}

/** The density a random set of these per-matrix sizes has (ratio of expectations; 0 when it has no neighbour slots). */
export function randomDensity(counts: ArrayLike<number>, matrices: WandaMatrix[]): number {
  const r = randomSlots(counts, matrices);
  return r.slots > 0 ? r.inSet / r.slots : 0;
}

/** A uniformly random set with counts[k] blocks in matrix k (partial Fisher–Yates per matrix). */
export function randomPlacement(counts: ArrayLike<number>, matrices: WandaMatrix[], rng: Rng,
  scratch?: Int32Array): Masks
{
  return matrices.map((m, k) => {
    const n = m.rowBlocks * m.colBlocks;
    const mask = new Uint8Array(n);
    const c = Math.min(n, counts[k]!);
    if (c === 0) return mask;
    if (2 * c > n) {
      // Place the complement instead (fewer draws), then invert.
      const inv = randomSubset(n, n - c, rng, scratch);
      mask.fill(1);
      for (let i = 0; i < n - c; i++) mask[inv[i]!] = 0;
      return mask;
    }
    const idx = randomSubset(n, c, rng, scratch);
    for (let i = 0; i < c; i++) mask[idx[i]!] = 1;
    return mask;
  });
}

function randomSubset(n: number, c: number, rng: Rng, scratch?: Int32Array): Int32Array {
  const a = scratch && scratch.length >= n ? scratch : new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  drawFront(a, n, c, rng);
  return a;
}

/** The first c steps of a Fisher–Yates shuffle of a[0 .. n): a[0 .. c) becomes a uniform c-subset. */
function drawFront(a: Int32Array, n: number, c: number, rng: Rng): void {
  for (let i = 0; i < c; i++) {
    const j = i + rng.int(n - i);
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
}

/**
 * Density and component counts of R random placements of a set with `counts` blocks per matrix:
 * randomPlacement's sets (the same draws in the same order), held as bits and counted by
 * src/wanda/bitsets.ts, which gives regions.ts's density and components exactly.
 */
export function placementNull(counts: ArrayLike<number>, matrices: WandaMatrix[], R: number,
  seed: number): { density: Float64Array; components: Float64Array }
{
  const rng = new Rng(seed);
  const dens = new Float64Array(R);
  const comp = new Float64Array(R);
  const maxN = matrices.reduce((a, m) => Math.max(a, m.rowBlocks * m.colBlocks), 0);
  const ident = Int32Array.from({ length: maxN }, (_, i) => i);
  const L = bitLayout(matrices);
  const bits = new Uint32Array(L.words);
  const runs = new RunScratch(L);
  const res = new Float64Array(3);
  for (let r = 0; r < R; r++) {
    placeBits(counts, L, rng, ident, bits);
    densityBits(bits, L, res);
    dens[r] = res[2] === 0 ? 0 : res[1]! / res[2]!;
    comp[r] = componentsBits(bits, L, runs);
  }
  return { density: dens, components: comp };
}

/**
 * randomPlacement into bits (overwritten): the same draws (drawFront, as randomSubset). `ident`
 * holds 0, 1, 2, … on entry and on return: only the swapped positions are put back, instead of
 * writing the whole index array for every matrix of every placement.
 */
function placeBits(counts: ArrayLike<number>, L: BitLayout, rng: Rng, ident: Int32Array, bits: Uint32Array): void {
  bits.fill(0);
  const flip = (k: number, i: number) => {
    const r = Math.floor(i / L.K[k]!);
    const c = i - r * L.K[k]!;
    bits[L.off[k]! + r * L.W[k]! + (c >>> 5)] ^= 1 << (c & 31);
  };
  for (let k = 0; k < L.R.length; k++) {
    const K = L.K[k]!;
    const W = L.W[k]!;
    const n = L.R[k]! * K;
    const c = Math.min(n, counts[k]!);
    if (c === 0) continue;
    const drawn = 2 * c > n ? n - c : c;
    if (drawn < c) {
      // More than half: the complement is drawn, as randomPlacement does.
      for (let r = 0; r < L.R[k]!; r++) {
        for (let w = 0; w < W; w++) {
          const nb = Math.min(32, K - 32 * w);
          bits[L.off[k]! + r * W + w] = nb === 32 ? -1 : (1 << nb) - 1;
        }
      }
    }
    drawFront(ident, n, drawn, rng);
    for (let i = 0; i < drawn; i++) flip(k, ident[i]!);
    // Back to the identity. Positions past `drawn` change only when swapped with some i, and
    // then their original value stays at that i (position i is not touched after step i); so
    // resetting [0, drawn) and the positions of the values ≥ drawn found there restores all.
    for (let i = 0; i < drawn; i++) {
      const v = ident[i]!;
      ident[i] = i;
      if (v >= drawn) ident[v] = v;
    }
  }
}
