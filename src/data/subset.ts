/**
 * `--limit N`: a seeded sample of N items stratified by label axes, the same rule in
 * `lobes extract`, `lobes eval` and `lobes attend` (docs/cli.md).
 *
 * The strata are the combinations of the `--by` axes' values. Each stratum gets a share of N
 * proportional to its size (floors, then the largest remainders, ties by stratum name), and
 * inside a stratum the items with the smallest seeded hash of their id are kept. An item's
 * fate depends only on its id, its stratum, the stratum sizes, N and the seed, not on the
 * order of the data or on which command reads it: the same items with the same labels give
 * the same sample everywhere. The sample keeps the data's order.
 */
import { UsageError } from '../util/errors.js';
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
      throw new UsageError(`--by: the data has no label axis ${JSON.stringify(a)} (axes: ${axes.join(', ') || 'none'})`, near ? `did you mean --by ${near}?` : undefined);
    }
  }
  return [...by];
}

/** 32-bit hash of a string (FNV-1a with a final avalanche), for ranking ids. */
function rankHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The sample: at most `n` of `xs`, stratified by `stratum`, ranked inside each stratum by the
 * seeded hash of `id`; in the original order. All of `xs` when n >= xs.length.
 */
export function stratifiedSample<T>(xs: readonly T[], id: (x: T) => string, stratum: (x: T) => string, n: number, seed: number): T[] {
  if (n >= xs.length) return [...xs];
  const groups = new Map<string, number[]>();
  xs.forEach((x, i) => {
    const k = stratum(x);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(i);
  });
  const keys = [...groups.keys()].sort();
  const exact = keys.map((k) => (n * groups.get(k)!.length) / xs.length);
  const quota = exact.map(Math.floor);
  let left = n - quota.reduce((a, b) => a + b, 0);
  const order = keys.map((_, i) => i).sort((a, b) => exact[b]! - quota[b]! - (exact[a]! - quota[a]!) || (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0));
  for (const i of order) {
    if (left <= 0) break;
    quota[i]!++;
    left--;
  }
  const keep = new Set<number>();
  keys.forEach((k, gi) => {
    const ranked = groups.get(k)!.map((i) => ({ i, id: id(xs[i]!), h: rankHash(`${seed >>> 0}\u0000${id(xs[i]!)}`) }));
    ranked.sort((a, b) => a.h - b.h || (a.id < b.id ? -1 : a.id > b.id ? 1 : a.i - b.i));
    for (const r of ranked.slice(0, quota[gi])) keep.add(r.i);
  });
  return xs.filter((_, i) => keep.has(i));
}

/**
 * Apply a --limit to labelled items: the axes resolved against `axes` (limitAxes), the
 * stratum of an item the values of those axes. Returns the sample and its record.
 */
export function limitItems<T extends { id: string; labels: Record<string, string> }>(xs: readonly T[], axes: readonly string[], spec: LimitSpec): { items: T[]; record: LimitRecord } {
  const by = limitAxes(spec.by, axes);
  const items = stratifiedSample(xs, (x) => x.id, (x) => by.map((a) => x.labels[a] ?? '').join('\u0000'), spec.limit, spec.seed);
  return { items, record: { limit: spec.limit, by, seed: spec.seed, of: xs.length } };
}
