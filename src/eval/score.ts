/**
 * Scoring rules, as plain functions of the numbers a record stores (so that anyone can
 * recompute a record's pick, vote and correctness from the record alone):
 *
 * - pick: the slot with the highest letter logit (ties: the lower slot);
 * - probs: softmax over the letters' logits; letterMass: Σ exp(logit − logSumExp);
 * - vote: the option picked by most shuffles; ties between options go to the larger
 *   summed probability over the shuffles, then to the earliest shuffle's pick.
 */
import { Rng, hash32 } from '../util/rng.js';

/** Index of the largest value (first one on ties). */
export function argmax(xs: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[best]!) best = i;
  return best;
}

/** Softmax of logits (computed in float64, shifted by the maximum). */
export function softmax(logits: ArrayLike<number>): number[] {
  let m = -Infinity;
  for (let i = 0; i < logits.length; i++) m = Math.max(m, logits[i]!);
  const e = Array.from({ length: logits.length }, (_, i) => Math.exp(logits[i]! - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

/** Probability of the candidate tokens together under the full-vocabulary softmax. */
export function letterMass(logits: ArrayLike<number>, logSumExp: number): number {
  let s = 0;
  for (let i = 0; i < logits.length; i++) s += Math.exp(logits[i]! - logSumExp);
  return s;
}

/** What one shuffle contributes to the vote. */
export interface ShuffleVote {
  /** order[slot] = option index at that slot. */
  order: readonly number[];
  pick: number;
  probs: readonly number[];
}

/**
 * Majority vote over shuffles, in option indices. Ties between the most-picked options go
 * to the one with the larger summed probability over the shuffles; remaining ties to the
 * earliest shuffle's pick among them. (Never to the dataset order of the options, where the
 * correct answer often comes first: that would reward a model that always picks one slot.)
 */
export function vote(shuffles: readonly ShuffleVote[], nOptions: number): number {
  const count = new Float64Array(nOptions);
  const mass = new Float64Array(nOptions);
  for (const s of shuffles) {
    count[s.order[s.pick]!]!++;
    s.order.forEach((o, slot) => (mass[o]! += s.probs[slot]!));
  }
  let bestCount = -1;
  for (let o = 0; o < nOptions; o++) bestCount = Math.max(bestCount, count[o]!);
  let bestMass = -Infinity;
  for (let o = 0; o < nOptions; o++) if (count[o] === bestCount) bestMass = Math.max(bestMass, mass[o]!);
  // Masses equal up to rounding (sums of the same numbers in another order) are ties.
  const tied = (o: number) => count[o] === bestCount && bestMass - mass[o]! <= 1e-9 * Math.max(1, Math.abs(bestMass));
  for (const s of shuffles) {
    const o = s.order[s.pick]!;
    if (tied(o)) return o;
  }
  return 0;
}

/** How an item's k option orders are drawn: independent shuffles, or rotations of one shuffle. */
export type OrderMode = 'random' | 'cyclic';

/**
 * `k` seeded permutations of n options, from an Rng seeded by hash32(seed, item id), so an
 * item's orders do not depend on which other items are evaluated, on sharding or on resuming.
 *
 * - `random`: k independent Fisher–Yates shuffles. The first is the dataset order when
 *   `identityFirst` (so shuffle 0 of every item is the unshuffled item).
 * - `cyclic`: one shuffle (the dataset order when `identityFirst`) and its rotations by
 *   floor(s·n/k) slots, s = 0..k−1 (by s mod n when k > n): order_s[i] = base[(i + offset_s) mod n].
 *   With k = n every option sits in every slot exactly once (a Latin square), so the answer's
 *   slot is balanced within each item; with k < n the answer visits k distinct slots spread
 *   around the ring. Random orders balance slots only on average over items.
 */
export function optionOrders(id: string, n: number, k: number, seed: number, identityFirst = false,
  mode: OrderMode = 'random'): number[][]
{
  const rng = new Rng(hash32(`${seed}\u0000${id}`));
  const out: number[][] = [];
  if (mode === 'cyclic') {
    const base = Array.from({ length: n }, (_, i) => i);
    if (!identityFirst) rng.shuffle(base);
    for (let s = 0; s < k; s++) {
      const off = k <= n ? Math.floor((s * n) / k) : s % n;
      out.push(base.map((_, i) => base[(i + off) % n]!));
    }
    return out;
  }
  for (let s = 0; s < k; s++) {
    const p = Array.from({ length: n }, (_, i) => i);
    if (!(identityFirst && s === 0)) {
      rng.shuffle(p);
    }
    out.push(p);
  }
  return out;
}

/** 32-bit FNV-1a of a string's UTF-16 code units (src/util/rng.ts). */
export { hash32 };
