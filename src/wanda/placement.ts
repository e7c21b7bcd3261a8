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
import { density, components, type Masks } from './regions.js';
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
export function randomPlacement(counts: ArrayLike<number>, matrices: WandaMatrix[], rng: Rng, scratch?: Int32Array): Masks {
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
  for (let i = 0; i < c; i++) {
    const j = i + rng.int(n - i);
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a;
}

/** Density and component counts of R random placements of a set with `counts` blocks per matrix. */
export function placementNull(counts: ArrayLike<number>, matrices: WandaMatrix[], R: number, seed: number): { density: Float64Array; components: Float64Array } {
  const rng = new Rng(seed);
  const dens = new Float64Array(R);
  const comp = new Float64Array(R);
  const maxN = matrices.reduce((a, m) => Math.max(a, m.rowBlocks * m.colBlocks), 0);
  const scratch = new Int32Array(maxN);
  for (let r = 0; r < R; r++) {
    const s = randomPlacement(counts, matrices, rng, scratch);
    dens[r] = density(s, matrices);
    comp[r] = components(s, matrices);
  }
  return { density: dens, components: comp };
}
