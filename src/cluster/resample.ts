/**
 * Bootstrap resamples of items, plain or grouped: every bootstrap of cluster (the probe's
 * repeated-CV scores and paired differences in src/cluster/paired.ts, kNN's scores in
 * src/cluster/scores.ts, the silhouette in src/cluster/metrics.ts) draws its rows here, so a run
 * with groups (SocialEval's world trees, `group=FIELD`) resamples groups, then items within them,
 * everywhere alike.
 */
import { Rng } from '../util/rng.js';

/**
 * A resample of the items: n items with replacement, or with `members` (the items of each
 * group) a two-stage one: as many groups as there are, drawn with replacement, and within each
 * drawn group as many of its items as it has, drawn with replacement (items of one group, e.g.
 * one SocialEval world tree, are not independent draws). Without groups the draws are
 * rng.int(n) n times, in order.
 */
export function resampleRows(n: number, rng: Rng, members: Int32Array[] | null, into?: Int32Array): Int32Array {
  if (!members) {
    const rows = into && into.length === n ? into : new Int32Array(n);
    for (let t = 0; t < n; t++) rows[t] = rng.int(n);
    return rows;
  }
  const out: number[] = [];
  const G = members.length;
  for (let t = 0; t < G; t++) {
    const m = members[rng.int(G)]!;
    for (let k = 0; k < m.length; k++) out.push(m[rng.int(m.length)]!);
  }
  return Int32Array.from(out);
}

/** The items of each group (groups numbered 0..G-1), or null without groups. */
export function groupMembers(groups: Int32Array | null | undefined): Int32Array[] | null {
  if (!groups) return null;
  let G = 0;
  for (const g of groups) G = Math.max(G, g + 1);
  const lists: number[][] = Array.from({ length: G }, () => []);
  groups.forEach((g, i) => lists[g]!.push(i));
  return lists.filter((l) => l.length > 0).map((l) => Int32Array.from(l));
}
