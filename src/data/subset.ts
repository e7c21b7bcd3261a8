/**
 * `--limit N`: a seeded sample of N items stratified by label axes, the same rule in
 * `lobes extract`, `lobes eval` and `lobes attend` (docs/cli.md).
 *
 * The strata are the combinations of the `--by` axes' values. Each stratum gets a share of N
 * proportional to its size (floors, then the largest remainders, ties by stratum name), and
 * inside a stratum the items with the smallest sha256 of the seed and their own id are kept.
 * An item's rank depends only on its id and the seed, never on the other items or their order,
 * so the sample depends only on the items' ids and labels, N, the strata and the seed, not on
 * which command reads them or in which order; and two lists that differ by a few items (eval
 * reads SocialEval's composite items, extract by default does not) share nearly all of their
 * samples. The sample keeps the data's order.
 */
import { createHash } from 'node:crypto';
import { UsageError, opt } from '../util/errors.js';
import { nearest } from '../util/suggest.js';

/** What --limit, --by and --seed ask for. */
export interface LimitSpec {
  limit: number;
  /** Label axes to stratify by (default: defaultLimitAxes). */
  by?: string[];
  seed: number;
}

/** What a --limit sample was, as recorded in a run's or job's settings. */
export interface LimitRecord {
  limit: number;
  by: string[];
  seed: number;
  /** Items before the sample. */
  of: number;
}

/** The default strata: language and aspect where the data has them, else its first axis, else none. */
export function defaultLimitAxes(axes: readonly string[]): string[] {
  const pick = ['language', 'aspect'].filter((a) => axes.includes(a));
  if (pick.length) return pick;
  return axes.length ? [axes[0]!] : [];
}

/** The axes to stratify by: `by` checked against the data's axes (an unknown name is refused with the nearest), or the default. */
export function limitAxes(by: readonly string[] | undefined, axes: readonly string[]): string[] {
  if (by === undefined) return defaultLimitAxes(axes);
  for (const a of by) {
    if (!axes.includes(a)) {
      const near = nearest(a, axes);
      throw new UsageError(
        `${opt('by')}: the data has no label axis ${JSON.stringify(a)} (axes: ${axes.join(', ') || 'none'})`,
        near ? `did you mean ${opt('by', near)}?` : undefined,
      );
    }
  }
  return [...by];
}

/** An item's rank in a --limit sample: the hex sha256 of the seed and the item's id (smallest first). */
export function limitRank(seed: number, id: string): string {
  return createHash('sha256').update(`${seed}\u0000${id}`).digest('hex');
}

/**
 * The sample: at most `n` of `xs`, stratified by `stratum`: each stratum's quota of its items
 * with the smallest limitRank(seed, id) (equal ids, which the loaders refuse, by data order);
 * in the original order. All of `xs` when n >= xs.length.
 */
export function stratifiedSample<T>(xs: readonly T[], stratum: (x: T) => string, id: (x: T) => string, n: number,
  seed: number): T[]
{
  if (n >= xs.length) return [...xs];
  const groups = new Map<string, number[]>();
  xs.forEach((x, i) => {
    const k = stratum(x);
    let g = groups.get(k);
    if (!g) groups.set(k, g = []);
    g.push(i);
  });
  const keys = [...groups.keys()].sort();
  const exact = keys.map((k) => (n * groups.get(k)!.length) / xs.length);
  const quota = exact.map(Math.floor);
  let left = n - quota.reduce((a, b) => a + b, 0);
  const order = keys.map((_, i) => i).sort((a, b) =>
    exact[b]! - quota[b]! - (exact[a]! - quota[a]!) || keys[a]!.localeCompare(keys[b]!)
  );
  for (const i of order) {
    if (left <= 0) break;
    quota[i]!++;
    left--;
  }
  const rank = xs.map((x) => limitRank(seed, id(x)));
  const keep = new Set<number>();
  keys.forEach((k, gi) => {
    const idx = [...groups.get(k)!].sort((a, b) => (rank[a]! < rank[b]! ? -1 : rank[a]! > rank[b]! ? 1 : a - b));
    for (const i of idx.slice(0, quota[gi])) keep.add(i);
  });
  return xs.filter((_, i) => keep.has(i));
}

/**
 * Apply a --limit to labelled items: the axes resolved against `axes` (limitAxes), the
 * stratum of an item the values of those axes. Returns the sample and its record. A limit
 * above the item count takes them all, with a note on stderr.
 */
export function limitItems<T extends { id: string; labels: Record<string, string> }>(xs: readonly T[],
  axes: readonly string[], spec: LimitSpec): { items: T[]; record: LimitRecord }
{
  const by = limitAxes(spec.by, axes);
  // A limit past the item count takes every item; it is said (the record keeps both numbers).
  if (spec.limit > xs.length)
    process.stderr.write(
      `lobes: note: --limit ${spec.limit} is more than the ${xs.length} items; all ${xs.length} are used\n`,
    );
  const items = stratifiedSample(xs, (x) => by.map((a) => x.labels[a] ?? '').join('/'), (x) => x.id, spec.limit,
    spec.seed);
  return { items, record: { limit: spec.limit, by, seed: spec.seed, of: xs.length } };
}
