/**
 * "Did you mean" for names a user types: flags, commands, label axes, option values.
 * The nearest candidate by edit distance (Damerau–Levenshtein: insertions, deletions,
 * substitutions and swaps of neighbours), when it is close enough to be a typo.
 */

/** Edit distance between two strings, counting a swap of two neighbouring letters as one edit. */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  const d: number[][] = Array.from({ length: m + 1 }, (_, i) => {
    const row = new Array<number>(n + 1).fill(0);
    row[0] = i;
    return row;
  });
  for (let j = 0; j <= n; j++) d[0]![j] = j;
  for (let i = 1; i <= m; i++) {
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[m]![n]!;
}

/**
 * The candidate `word` most likely is a typo of, or null: the nearest by edit distance (case
 * ignored) within a third of the word's length (at least 1, at most 3 edits), or the only
 * candidate that starts with the word. Ties go to the first candidate given.
 */
export function nearest(word: string, candidates: readonly string[]): string | null {
  const w = word.toLowerCase();
  let best: string | null = null;
  let bestD = Infinity;
  for (const c of candidates) {
    const dist = editDistance(w, c.toLowerCase());
    if (dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  if (best !== null && bestD > 0 && bestD <= Math.min(3, Math.max(1, Math.floor(w.length / 3)))) return best;
  const prefixed = candidates.filter((c) => w.length >= 2 && c.toLowerCase().startsWith(w));
  if (prefixed.length === 1) return prefixed[0]!;
  return bestD === 0 ? best : null;
}

/** ` (did you mean X?)`-style hint text for an unknown `word`, or '' when nothing is close. */
export function didYouMean(word: string, candidates: readonly string[],
  show: (c: string) => string = (c) => c): string
{
  const n = nearest(word, candidates);
  return n === null ? '' : `did you mean ${show(n)}?`;
}
