/**
 * The conditional permutation null of a probe: does a state carry label A beyond what label B
 * explains? The plain label-permutation null shuffles A over every item, which breaks A's
 * dependence on B; where A and B are dependent (on a question/response swap they are never
 * equal), a state that carries only B then predicts A above that null. This null shuffles A only
 * among the items that share a value of B (the strata of B), so every shuffled labelling keeps
 * the joint counts of (A, B) and each item's B, and the state's link to B. Under "the state
 * carries nothing of A that B does not" (A independent of the state given B), the observed
 * labelling is one more draw of the same distribution, and the rank p is exact.
 *
 * A stratum with a single item, or whose items all have the same A, contributes no shuffle:
 * `exchangeability` counts the items that can move. With none, the test is not testable.
 *
 * With groups (the items' world trees, `group=`), the strata are the cells of B × group
 * (`cellsOf`): A is shuffled only among items that share both B and the group, so every group
 * keeps its own values of A within each value of B, as cluster's within-groups null keeps each
 * group's labels (src/cluster/metrics.ts permutationDesign). A state that reads A only through
 * the group then scores the shuffles as it scores the data, and is not taken for one that
 * carries A; where every cell holds one value of A, nothing can move and the test is not testable.
 */
import { Rng } from '../util/rng.js';

/** Which items the conditional null can shuffle. */
export interface Exchangeability {
  /** Items in strata that hold at least two items with at least two different values of A. */
  items: number;
  /** Strata of B that contribute a shuffle. */
  strata: number;
  /** Strata of B present. */
  of: number;
}

/** The strata of `strata` as lists of item indices, in order of first appearance (also the groups of metrics.ts permutationDesign). */
export function strataMembers(strata: Int32Array): number[][] {
  const byValue = new Map<number, number[]>();
  for (let i = 0; i < strata.length; i++) {
    let g = byValue.get(strata[i]!);
    if (!g) byValue.set(strata[i]!, g = []);
    g.push(i);
  }
  return [...byValue.values()];
}

/** How many items of `a` the shuffles within the strata of `strata` can move. */
export function exchangeability(a: Int32Array, strata: Int32Array): Exchangeability {
  if (a.length !== strata.length) throw new Error(`exchangeability: ${a.length} labels but ${strata.length} strata`);
  const gs = strataMembers(strata);
  let items = 0;
  let n = 0;
  for (const g of gs) {
    if (g.length < 2) continue;
    const first = a[g[0]!];
    if (g.every((i) => a[i] === first)) continue;
    items += g.length;
    n++;
  }
  return { items, strata: n, of: gs.length };
}

/**
 * The cells of `strata` × `groups` as one code per item (the strata of the grouped conditional
 * null); without groups, `strata` itself.
 */
export function cellsOf(strata: Int32Array, groups: Int32Array | null | undefined): Int32Array {
  if (!groups) return strata;
  if (groups.length !== strata.length) throw new Error(`cellsOf: ${strata.length} strata but ${groups.length} groups`);
  const code = new Map<string, number>();
  return Int32Array.from(strata, (s, i) => {
    const k = `${s}\u0000${groups[i]}`;
    let c = code.get(k);
    if (c === undefined) code.set(k, c = code.size);
    return c;
  });
}

/**
 * `count` labellings of `a`, each shuffling the values of `a` among the items of every stratum of
 * `strata` (Fisher–Yates within each stratum, from a generator seeded by `seed`): each stratum keeps
 * its multiset of values of `a`.
 */
export function stratifiedPermutations(a: Int32Array, strata: Int32Array, count: number, seed: number): Int32Array[] {
  if (a.length !== strata.length)
    throw new Error(`stratifiedPermutations: ${a.length} labels but ${strata.length} strata`);
  const gs = strataMembers(strata).filter((g) => g.length > 1);
  const rng = new Rng(seed);
  const vals = new Int32Array(a.length);
  const out: Int32Array[] = [];
  for (let r = 0; r < count; r++) {
    const p = Int32Array.from(a);
    for (const g of gs) shuffleWithin(rng, a, p, g, vals);
    out.push(p);
  }
  return out;
}

/**
 * One Fisher–Yates shuffle of the values `from` holds at the items `members`, written to `to` at
 * the same items (`from` and `to` may be one array); `buf` holds at least members.length values.
 */
export function shuffleWithin(rng: Rng, from: Int32Array, to: Int32Array, members: readonly number[],
  buf: Int32Array): void
{
  for (let k = 0; k < members.length; k++) buf[k] = from[members[k]!]!;
  rng.shuffle(buf.subarray(0, members.length));
  for (let k = 0; k < members.length; k++) to[members[k]!] = buf[k]!;
}
