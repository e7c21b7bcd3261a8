/**
 * Numbers across items: the mean share of attention per prompt part with percentile-bootstrap
 * 95% intervals (items resampled with replacement, seeded), right against wrong items (the two
 * groups resampled independently for the difference), and keywords across items.
 */
import { Rng } from '../util/rng.js';
import type { AttendItem, DiffCI, Keyword, MeanCI, ShareTable } from './types.js';

function quantile(sorted: Float64Array, p: number): number {
  const pos = p * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

function mean(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i]!;
  return s / xs.length;
}

/** Bootstrap means of `xs` (B resamples). */
function bootMeans(xs: ArrayLike<number>, B: number, rng: Rng): Float64Array {
  const n = xs.length;
  const out = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += xs[rng.int(n)]!;
    out[b] = s / n;
  }
  return out;
}

/** The mean of `xs` with its 95% percentile-bootstrap interval (null interval for B = 0 or fewer than 2 values). */
export function meanCI(xs: ArrayLike<number>, B: number, rng: Rng): MeanCI {
  const n = xs.length;
  if (n === 0) return { n, mean: null, ci95: null };
  if (B <= 0 || n < 2) return { n, mean: mean(xs), ci95: null };
  const m = bootMeans(xs, B, rng).sort();
  return { n, mean: mean(xs), ci95: [quantile(m, 0.025), quantile(m, 0.975)] };
}

/** mean(a) − mean(b) with a 95% percentile-bootstrap interval (each group resampled on its own). */
export function diffCI(a: ArrayLike<number>, b: ArrayLike<number>, B: number, rng: Rng): DiffCI {
  if (a.length === 0 || b.length === 0) return { diff: null, ci95: null };
  const diff = mean(a) - mean(b);
  if (B <= 0 || a.length < 2 || b.length < 2) return { diff, ci95: null };
  const ma = bootMeans(a, B, rng);
  const mb = bootMeans(b, B, rng);
  const d = new Float64Array(B);
  for (let i = 0; i < B; i++) d[i] = ma[i]! - mb[i]!;
  d.sort();
  return { diff, ci95: [quantile(d, 0.025), quantile(d, 0.975)] };
}

/**
 * Per part, the mean share over all, right and wrong items, and wrong − right. `share` gives an
 * item's shares (a part missing from an item counts 0 for it); parts in first-seen order.
 */
export function shareTable(items: AttendItem[], share: (it: AttendItem) => Record<string, number> | undefined,
  B: number, seed: number): ShareTable
{
  const parts: string[] = [];
  for (const it of items) for (const p of Object.keys(share(it) ?? {})) if (!parts.includes(p)) parts.push(p);
  const rng = new Rng(seed);
  const values = (group: AttendItem[], p: string) => Float64Array.from(group, (it) => share(it)?.[p] ?? 0);
  const right = items.filter((it) => it.correct === true);
  const wrong = items.filter((it) => it.correct === false);
  const t: ShareTable = { parts, all: {}, right: {}, wrong: {}, wrongMinusRight: {} };
  for (const p of parts) {
    t.all[p] = meanCI(values(items, p), B, rng);
    t.right[p] = meanCI(values(right, p), B, rng);
    t.wrong[p] = meanCI(values(wrong, p), B, rng);
    t.wrongMinusRight[p] = diffCI(values(wrong, p), values(right, p), B, rng);
  }
  return t;
}

/** The key a word is counted under across items: lower-cased (cased scripts), trimmed. */
export function wordKey(text: string): string {
  return text.toLocaleLowerCase('en').trim();
}

/**
 * Function words: English articles, pronouns, prepositions, conjunctions and auxiliaries, and
 * Chinese particles and pronoun characters. They take attention in every text (the heaviest
 * units of most prompts are "the", "a", "of", 的), so a keyword list that keeps them says what
 * any text has, not what the model looked at in these items.
 */
export const FUNCTION_WORDS: ReadonlySet<string> = new Set([
  ...'a an the this that these those i me my you your he him his she her it its we us our they them their who whom which what'
    .split(' '),
  ...'of to in on at by for with from into onto over under about as than then so if or and but nor not no yes'.split(
    ' ',
  ),
  ...'is am are was were be been being do does did have has had will would shall should can could may might must'.split(
    ' ',
  ),
  ...'的 了 是 在 和 与 我 你 他 她 它 们 这 那 吗 呢 吧 啊 也 都 就 而 及 或 之 个 着 过 把 被'.split(' '),
]);

/** Parts that every item shares word for word, apart from a name (the benchmark's published instruction). */
export const INSTRUCTION_PARTS: ReadonlySet<string> = new Set(['instruction']);

/** Whether a unit counts towards the keywords: content, not punctuation, not a function word, not in the instruction. */
export function keywordUnit(w: { content: boolean; kind: string; text: string; part: string }): boolean {
  return w.content && w.kind !== 'punct' && !INSTRUCTION_PARTS.has(w.part) && !FUNCTION_WORDS.has(wordKey(w.text));
}

/**
 * Keywords across `items`: each keyword unit's (keywordUnit: no function words, nothing of the
 * instruction) weight summed within an item, then averaged over the items (0 where absent); with
 * how many items have it in their own top words and how many contain it, and the part it sits in
 * most. Heaviest `k` first (ties by key).
 */
export function keywords(items: AttendItem[], k: number): Keyword[] {
  const acc = new Map<string, { w: number; inTop: number; items: number; parts: Map<string, number> }>();
  for (const it of items) {
    const perItem = new Map<string, number>();
    for (const w of it.words) {
      if (!keywordUnit(w)) continue;
      const key = wordKey(w.text);
      perItem.set(key, (perItem.get(key) ?? 0) + w.weight);
      let a = acc.get(key);
      if (!a) acc.set(key, a = { w: 0, inTop: 0, items: 0, parts: new Map() });
      a.parts.set(w.part, (a.parts.get(w.part) ?? 0) + 1);
    }
    for (const [key, w] of perItem) {
      const a = acc.get(key)!;
      a.w += w;
      a.items++;
    }
    const tops = new Set(it.top.map((i) => wordKey(it.words[i]!.text)));
    for (const key of tops) {
      const a = acc.get(key);
      if (a) a.inTop++;
    }
  }
  const n = Math.max(items.length, 1);
  return [...acc.entries()]
    .map(([word, a]) => ({ word, weight: a.w / n, inTop: a.inTop, items: a.items,
      part: [...a.parts.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))[0]![0] })
    )
    .sort((a, b) => b.weight - a.weight || (a.word < b.word ? -1 : a.word > b.word ? 1 : 0))
    .slice(0, k);
}
