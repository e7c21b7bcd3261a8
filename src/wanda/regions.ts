/**
 * Regions (top blocks per group), set differences and their structure metrics.
 * A region is held as one Uint8Array mask per matrix ([rowBlocks * colBlocks], 1 = in).
 */
import type { WandaMatrix } from './types.js';

export type Masks = Uint8Array[];
export type TopScope = 'matrix' | 'layer' | 'global';
export interface TopSpec {
  kind: 'fraction' | 'count';
  value: number;
  scope: TopScope;
}

/** Number of blocks kept from a pool of `n`: round(fraction * n) (at least 1), or min(count, n). */
export function keepCount(top: TopSpec, n: number): number {
  if (n === 0) return 0;
  if (top.kind === 'count') return Math.min(n, Math.max(0, Math.floor(top.value)));
  return Math.min(n, Math.max(1, Math.round(top.value * n)));
}

/**
 * Top blocks of one group: `scores[m]` are the pooled maps in matrix order. Pools are formed
 * per matrix, per layer or over everything; within a pool blocks are ranked by score
 * (descending), ties broken by matrix order then flat index, so the result is deterministic.
 * Selection is linear in the pool size (no sort).
 */
export function selectTop(scores: Float32Array[], matrices: WandaMatrix[], top: TopSpec): Masks {
  const masks = scores.map((s) => new Uint8Array(s.length));
  const pools: number[][] = [];
  if (top.scope === 'matrix') scores.forEach((_, m) => pools.push([m]));
  else if (top.scope === 'global') pools.push(scores.map((_, m) => m));
  else {
    const byLayer = new Map<number, number[]>();
    matrices.forEach((mx, m) => {
      if (!byLayer.has(mx.layer)) byLayer.set(mx.layer, []);
      byLayer.get(mx.layer)!.push(m);
    });
    for (const ms of byLayer.values()) pools.push(ms);
  }
  for (const pool of pools) {
    let n = 0;
    for (const m of pool) n += scores[m].length;
    const k = keepCount(top, n);
    if (k === 0) continue;
    // Values in pool order (matrix order, then flat index); the k-th largest by selection;
    // everything above it, then ties in pool order: the same set a stable sort would give.
    const vals = new Float32Array(n);
    let p = 0;
    for (const m of pool) {
      vals.set(scores[m], p);
      p += scores[m].length;
    }
    const thr = kthLargest(vals.slice(), k);
    let taken = 0;
    for (const m of pool) {
      const s = scores[m];
      for (let i = 0; i < s.length; i++)
        if (s[i] > thr) {
          masks[m][i] = 1;
          taken++;
        }
    }
    for (const m of pool) {
      const s = scores[m];
      for (let i = 0; i < s.length && taken < k; i++)
        if (s[i] === thr) {
          masks[m][i] = 1;
          taken++;
        }
    }
  }
  return masks;
}

/** k-th largest value of a (the array is reordered). Hoare selection with median-of-three pivots. */
export function kthLargest(a: Float32Array, k: number): number {
  if (k < 1 || k > a.length) throw new RangeError(`k=${k} out of range for ${a.length}`);
  const target = k - 1;
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const x = a[lo], y = a[mid], z = a[hi];
    const pivot = x > y ? (y > z ? y : x > z ? z : x) : x > z ? x : y > z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return a[target];
  }
  return a[target];
}

export function size(a: Masks): number {
  let n = 0;
  for (const m of a) for (let i = 0; i < m.length; i++) n += m[i];
  return n;
}

export function minus(a: Masks, b: Masks): Masks {
  return a.map((m, k) => {
    const o = new Uint8Array(m.length);
    const bm = b[k];
    for (let i = 0; i < m.length; i++) o[i] = m[i] & (bm[i] ^ 1);
    return o;
  });
}

export function intersectionSize(a: Masks, b: Masks): number {
  let n = 0;
  for (let k = 0; k < a.length; k++) {
    const x = a[k];
    const y = b[k];
    for (let i = 0; i < x.length; i++) n += x[i] & y[i];
  }
  return n;
}

/** |A ∩ B| / |A ∪ B| (0 when both are empty). */
export function jaccard(a: Masks, b: Masks): number {
  const inter = intersectionSize(a, b);
  const union = size(a) + size(b) - inter;
  return union === 0 ? 0 : inter / union;
}

/**
 * Spatial density of a block set: over the set's blocks, the share of their in-bounds
 * 4-neighbours (up, down, left, right in the same matrix) that are in the set too.
 * 0 for an empty set; 1 when every neighbour of every block is in the set.
 */
export function density(a: Masks, matrices: WandaMatrix[]): number {
  const { inSet, slots } = densityCounts(a, matrices);
  return slots === 0 ? 0 : inSet / slots;
}

/** density's numerator and denominator: in-set neighbour slots and neighbour slots of the set's blocks (integers, summed over matrices). */
export function densityCounts(a: Masks, matrices: WandaMatrix[]): { inSet: number; slots: number } {
  let inSet = 0;
  let slots = 0;
  for (let k = 0; k < a.length; k++) {
    const m = a[k];
    const R = matrices[k].rowBlocks;
    const K = matrices[k].colBlocks;
    for (let r = 0; r < R; r++) {
      for (let c = 0; c < K; c++) {
        if (!m[r * K + c]) continue;
        if (r > 0) {
          slots++;
          inSet += m[(r - 1) * K + c];
        }
        if (r < R - 1) {
          slots++;
          inSet += m[(r + 1) * K + c];
        }
        if (c > 0) {
          slots++;
          inSet += m[r * K + c - 1];
        }
        if (c < K - 1) {
          slots++;
          inSet += m[r * K + c + 1];
        }
      }
    }
  }
  return { inSet, slots };
}

/** Number of 4-connected components of a block set (within each matrix, summed). */
export function components(a: Masks, matrices: WandaMatrix[]): number {
  let count = 0;
  for (let k = 0; k < a.length; k++) {
    const m = a[k];
    const R = matrices[k].rowBlocks;
    const K = matrices[k].colBlocks;
    const seen = new Uint8Array(m.length);
    const stack = new Int32Array(m.length);
    for (let start = 0; start < m.length; start++) {
      if (!m[start] || seen[start]) continue;
      count++;
      let sp = 0;
      stack[sp++] = start;
      seen[start] = 1;
      while (sp > 0) {
        const i = stack[--sp];
        const r = Math.floor(i / K);
        const c = i - r * K;
        // The four neighbours, without allocating (this runs for every block of every labelling).
        if (r > 0 && m[i - K] && !seen[i - K]) {
          seen[i - K] = 1;
          stack[sp++] = i - K;
        }
        if (r < R - 1 && m[i + K] && !seen[i + K]) {
          seen[i + K] = 1;
          stack[sp++] = i + K;
        }
        if (c > 0 && m[i - 1] && !seen[i - 1]) {
          seen[i - 1] = 1;
          stack[sp++] = i - 1;
        }
        if (c < K - 1 && m[i + 1] && !seen[i + 1]) {
          seen[i + 1] = 1;
          stack[sp++] = i + 1;
        }
      }
    }
  }
  return count;
}

/** Sorted flat indices per matrix name. */
export function toBlockSet(a: Masks, matrices: WandaMatrix[]): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  a.forEach((m, k) => {
    const idx: number[] = [];
    for (let i = 0; i < m.length; i++) if (m[i]) idx.push(i);
    out[matrices[k].name] = idx;
  });
  return out;
}

/** Counts of a set per layer (index = layer number) and per projection. */
export function distribution(a: Masks, matrices: WandaMatrix[]): { byLayer: number[]; byProj: Record<string, number> } {
  const layers = matrices.reduce((x, m) => Math.max(x, m.layer + 1), 0);
  const byLayer = new Array<number>(layers).fill(0);
  const byProj: Record<string, number> = {};
  a.forEach((m, k) => {
    let n = 0;
    for (let i = 0; i < m.length; i++) n += m[i];
    byLayer[matrices[k].layer] += n;
    byProj[matrices[k].proj] = (byProj[matrices[k].proj] ?? 0) + n;
  });
  return { byLayer, byProj };
}
