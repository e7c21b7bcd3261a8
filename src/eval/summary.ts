/**
 * Accuracy tables from records and episodes (DIR/summary.json), each figure with its 95%
 * interval, its chance level and an exact test against chance. A count of 0/1 outcomes (an
 * accuracy, a success rate) gets the Clopper–Pearson interval (and Wilson's beside it): a
 * percentile bootstrap is too narrow at the slice sizes of a benchmark (3/21 gives [0, 28.6]
 * where Clopper–Pearson gives [3.0, 36.3]; 0/8 gives [0, 0]). Its test against chance is the
 * exact upper tail of the number of successes when unit i succeeds with its own chance p_i
 * (a Poisson-binomial), Holm-adjusted within each breakdown table. Means over groups and the
 * accuracy before the vote keep a seeded percentile bootstrap over units. A mean over groups
 * is given only when every group has at least MIN_MACRO_CELL units: smaller cells vanish from
 * resamples and their accuracy is a few coin flips.
 *
 * IAE / multiple choice: the voted accuracy overall (micro: every item once), per language,
 * aspect, ability (IAE; a composite item counts toward each of its abilities and aspects, as
 * SocialEval's run_iae.py counts it) or label value (generic items); the macro average over
 * abilities (run_iae.py's "Overall Average") overall and per language; the accuracy of single
 * shuffles before the vote; the position bias (how often each letter slot is picked, and how
 * often it holds the answer); the letters' share of the full-vocabulary probability.
 * Chance: 1/k for an item with k options; a slice's chance is the mean over its items.
 *
 * GAE: the success rate (goal achievement 2) of the episodes that reach an ending, overall,
 * per world category, major orientation and language, and the macro average over categories
 * (run_gae.py's "Overall Average"). Items and walks skipped for --max-tokens are listed and
 * left out of every figure. Chance of a tree: the probability that uniformly random
 * choices reach a successful ending, given that they reach an ending.
 */
import { Rng } from '../util/rng.js';
import { clopperPearson, wilson, poissonBinomialUpper } from '../util/stats.js';
import { declareFamily } from '../util/families.js';
import { ORIENTATION_CATEGORIES } from '../data/socialeval-eval.js';
import type { EpisodeRecord, EvalRecord } from './types.js';
import { summarizeCloze } from './summary-cloze.js';
import type { Accuracy, AccuracyTable, PositionBias, ItemSummary, GaeSummary, EvalSummary } from './summary-types.js';

export type { Accuracy, AccuracyRow, AccuracyTable, PositionBias, ItemSummary, GaeSummary,
  EvalSummary } from './summary-types.js';

export interface SummaryOptions {
  bootstrap?: number;
  seed?: number;
}

const mean = (xs: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i]!;
  return xs.length ? s / xs.length : NaN;
};

function quantiles(v: Float64Array): [number, number] {
  v.sort();
  const q = (p: number) => {
    const pos = p * (v.length - 1);
    const lo = Math.floor(pos);
    const hi = Math.min(lo + 1, v.length - 1);
    return v[lo]! + (v[hi]! - v[lo]!) * (pos - lo);
  };
  return [q(0.025), q(0.975)];
}

/**
 * Percentile bootstrap 95% CI of a statistic of n units: `stat(counts)` gets how many times
 * each unit is drawn in one resample. NaN statistics (an empty resampled slice) are skipped.
 */
export function bootstrapStat(n: number, B: number, seed: number, stat: (weights: Uint32Array) => number): [number,
  number] | null
{
  if (n === 0 || B <= 0) return null;
  const rng = new Rng(seed);
  const w = new Uint32Array(n);
  const vals: number[] = [];
  for (let b = 0; b < B; b++) {
    w.fill(0);
    for (let t = 0; t < n; t++) w[rng.int(n)]!++;
    const v = stat(w);
    if (Number.isFinite(v)) vals.push(v);
  }
  return vals.length ? quantiles(Float64Array.from(vals)) : null;
}

/** Fewest units a group needs for a mean over groups (abilities, world categories) to be given. */
export const MIN_MACRO_CELL = 10;

/**
 * Accuracy of outcomes with their per-unit chance. 0/1 outcomes: Clopper–Pearson ci95,
 * Wilson, and the exact Poisson-binomial test against chance; the bootstrap over units is kept
 * as bootstrap95. Other outcomes (shares in [0, 1]): the bootstrap is ci95.
 */
export function accuracyOf(hits: ArrayLike<number>, chance: ArrayLike<number>, B: number, seed: number): Accuracy {
  const n = hits.length;
  let c = 0;
  let binary = true;
  for (let i = 0; i < n; i++) {
    c += hits[i]!;
    if (hits[i] !== 0 && hits[i] !== 1) binary = false;
  }
  const boot = bootstrapStat(n, B, seed, (w) => {
    let s = 0;
    let m = 0;
    for (let i = 0; i < n; i++) {
      s += w[i]! * hits[i]!;
      m += w[i]!;
    }
    return s / m;
  });
  if (!binary)
    return { n, correct: c, accuracy: n ? c / n : NaN, ci95: boot, ciMethod: 'bootstrap', chance: mean(chance),
      pChance: null };
  return {
    n,
    correct: c,
    accuracy: n ? c / n : NaN,
    ci95: clopperPearson(c, n),
    ciMethod: 'clopper-pearson',
    wilson95: wilson(c, n),
    bootstrap95: boot,
    chance: mean(chance),
    pChance: n ? poissonBinomialUpper(chance, c) : null,
  };
}

/** Groups with fewer than MIN_MACRO_CELL units, as "name (n)", or [] when every group is big enough. */
export function smallCells(groups: string[][]): string[] {
  const count = new Map<string, number>();
  for (const g of groups) for (const k of g) count.set(k, (count.get(k) ?? 0) + 1);
  return [...count.entries()].filter(([, c]) => c < MIN_MACRO_CELL).sort((a, b) =>
    a[1] - b[1] || a[0].localeCompare(b[0])
  ).map(([k, c]) => `${k} (${c})`);
}

/** The mean over groups when every group has enough units, else null and the reason. */
function macroIfCells(what: string, hits: ArrayLike<number>, chance: ArrayLike<number>, groups: string[][], B: number,
  seed: number): { acc: Accuracy | null; omitted: string | null }
{
  const small = smallCells(groups);
  if (small.length)
    return { acc: null,
      omitted: `no mean over ${what}: ${small.length} ${
        small.length > 1 ? 'have' : 'has'
      } fewer than ${MIN_MACRO_CELL} items (${small.slice(0, 8).join(', ')}${small.length > 8 ? ', …' : ''})` };
  return { acc: macroAccuracy(hits, chance, groups, B, seed), omitted: null };
}

/** Macro accuracy: the mean over groups of the groups' accuracies; units may belong to several groups. */
export function macroAccuracy(hits: ArrayLike<number>, chance: ArrayLike<number>, groups: string[][], B: number,
  seed: number): Accuracy
{
  const n = hits.length;
  const keys = [...new Set(groups.flat())].sort();
  const gi = new Map(keys.map((k, i) => [k, i]));
  const member = groups.map((g) => g.map((k) => gi.get(k)!));
  const stat = (w: ArrayLike<number>, vals: ArrayLike<number>) => {
    const s = new Float64Array(keys.length);
    const m = new Float64Array(keys.length);
    for (let i = 0; i < n; i++) {
      for (const g of member[i]!) {
        s[g]! += w[i]! * vals[i]!;
        m[g]! += w[i]!;
      }
    }
    let tot = 0;
    let cnt = 0;
    for (let g = 0; g < keys.length; g++) {
      if (m[g]! > 0) {
        tot += s[g]! / m[g]!;
        cnt++;
      }
    }
    return cnt ? tot / cnt : NaN;
  };
  const ones = new Float64Array(n).fill(1);
  let c = 0;
  for (let i = 0; i < n; i++) c += hits[i]!;
  return { n, correct: c, accuracy: stat(ones, hits), ci95: bootstrapStat(n, B, seed, (w) => stat(w, hits)),
    ciMethod: 'bootstrap', chance: stat(ones, chance), pChance: null };
}

/** One row per key: the units of that key (a unit may have several keys). */
function table(by: string, keysOf: (i: number) => string[], hits: ArrayLike<number>, chance: ArrayLike<number>,
  B: number, seed: number): AccuracyTable
{
  const idx = new Map<string, number[]>();
  for (let i = 0; i < hits.length; i++) {
    for (const k of keysOf(i)) {
      if (!idx.has(k)) idx.set(k, []);
      idx.get(k)!.push(i);
    }
  }
  // the family, declared from the units' keys (the input) before any row is tested
  const keys = [...idx.keys()].sort();
  const fam = declareFamily({ name: `accuracy by ${by}`, claim: `the model is above chance on a value of ${by}`,
    members: keys });
  const rows = keys.map((key) => {
    const ii = idx.get(key)!;
    return { key, ...accuracyOf(ii.map((i) => hits[i]!), ii.map((i) => chance[i]!), B, seed) };
  });
  const adj = fam.adjustBy(new Map(rows.map((r) => [r.key, r.pChance ?? null])));
  rows.forEach((r) => (r.pChanceHolm = adj.get(r.key)));
  return { by, rows, family: fam.record() };
}

function positionBias(records: EvalRecord[]): PositionBias[] {
  const byK = new Map<number, { prompts: number; pick: number[]; ans: number[] }>();
  for (const r of records) {
    const k = r.options.length;
    if (!byK.has(k)) byK.set(k, { prompts: 0, pick: new Array(k).fill(0), ans: new Array(k).fill(0) });
    const b = byK.get(k)!;
    for (const s of r.shuffles) {
      b.prompts++;
      b.pick[s.pick]++;
      if (r.answer !== null) b.ans[s.order.indexOf(r.answer)]++;
    }
  }
  const answered = records.some((r) => r.answer !== null);
  return [...byK.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([k, b]) => ({ k, prompts: b.prompts, pickRate: b.pick.map((x) => x / b.prompts),
      answerRate: answered ? b.ans.map((x) => x / b.prompts) : null })
    );
}

function massStats(records: EvalRecord[]): { mean: number; min: number } {
  const m = records.flatMap((r) => r.shuffles.map((s) => s.letterMass));
  return { mean: mean(m), min: m.length ? Math.min(...m) : NaN };
}

/** The abilities an IAE record counts toward ('A + B' counts toward A and B). */
export function creditedAbilities(r: EvalRecord): string[] {
  return r.ability ? r.ability.split(' + ') : [];
}

/** Summary of item records (IAE or generic multiple choice). */
export function summarizeItems(all: EvalRecord[], task: 'iae' | 'mcq', o: SummaryOptions = {}): ItemSummary {
  const records = all.filter((r) => !r.skipped);
  const skipped = all.filter((r) => r.skipped).map((r) => r.id);
  const B = o.bootstrap ?? 2000;
  const seed = o.seed ?? 0;
  const hits = records.map((r) => (r.correct ? 1 : 0));
  const chance = records.map((r) => 1 / r.options.length);
  const tables: AccuracyTable[] = [];
  const languages = [...new Set(records.map((r) => r.language ?? ''))].filter(Boolean);
  if (languages.length)
    tables.push(table('language', (i) => (records[i]!.language ? [records[i]!.language!] : []), hits, chance, B, seed));
  let macro: Accuracy | null = null;
  const omitted: string[] = [];
  const macroByLanguage: Record<string, Accuracy> = {};
  if (task === 'iae') {
    const abil = records.map(creditedAbilities);
    tables.push(
      table('aspect', (i) => (records[i]!.aspect ? records[i]!.aspect!.split(' + ') : []), hits, chance, B, seed),
    );
    tables.push(table('ability', (i) => abil[i]!, hits, chance, B, seed));
    const all = macroIfCells('abilities', hits, chance, abil, B, seed);
    macro = all.acc;
    if (all.omitted) omitted.push(all.omitted);
    for (const l of languages) {
      const ii = records.flatMap((r, i) => (r.language === l ? [i] : []));
      const m = macroIfCells(`abilities (${l})`, ii.map((i) => hits[i]!), ii.map((i) => chance[i]!),
        ii.map((i) => abil[i]!), B, seed);
      if (m.acc) macroByLanguage[l] = m.acc;
      else omitted.push(m.omitted!);
    }
  } else {
    const axes = [...new Set(records.flatMap((r) => Object.keys(r.labels)))].filter((a) => a !== 'language').sort();
    for (const a of axes)
      tables.push(
        table(`label:${a}`, (i) => (records[i]!.labels[a] !== undefined ? [records[i]!.labels[a]!] : []), hits, chance,
          B, seed),
      );
  }
  // Before the vote: each item's share of correct single shuffles, bootstrapped over items.
  const per = records.map((r) => mean(r.shuffles.map((s) => (s.order[s.pick] === r.answer ? 1 : 0))));
  const unvoted = accuracyOf(per, chance, B, seed);
  unvoted.correct = records.reduce((a, r) => a + r.shuffles.filter((s) => s.order[s.pick] === r.answer).length, 0);
  unvoted.n = records.reduce((a, r) => a + r.shuffles.length, 0);
  return {
    task,
    items: records.length,
    skipped,
    overall: accuracyOf(hits, chance, B, seed),
    macro,
    macroOmitted: omitted.length ? omitted.join('; ') : null,
    macroByLanguage,
    unvoted,
    tables,
    positionBias: positionBias(records),
    letterMass: massStats(records),
    declaredFamilies: tables.map((t) => t.family!),
  };
}

/** Summary of GAE episodes and their decision records. */
export function summarizeGae(episodes: EpisodeRecord[], records: EvalRecord[], o: SummaryOptions = {}): GaeSummary {
  const B = o.bootstrap ?? 2000;
  const seed = o.seed ?? 0;
  const ended = episodes.filter((e) => e.end === 'ending');
  const hits = ended.map((e) => (e.success ? 1 : 0));
  const chance = ended.map((e) => e.chance);
  const catOrder = Object.values(ORIENTATION_CATEGORIES).map((c) => c.category);
  const tables: AccuracyTable[] = [
    table('category', (i) => [ended[i]!.category], hits, chance, B, seed),
    table('group', (i) => [ended[i]!.group], hits, chance, B, seed),
    table('language', (i) => (ended[i]!.language ? [ended[i]!.language!] : []), hits, chance, B, seed),
  ];
  tables[0]!.rows.sort((a, b) => catOrder.indexOf(a.key) - catOrder.indexOf(b.key));
  const macroByLanguage: Record<string, Accuracy> = {};
  const omitted: string[] = [];
  const all = macroIfCells('world categories', hits, chance, ended.map((e) => [e.category]), B, seed);
  if (all.omitted) omitted.push(all.omitted);
  for (const l of [...new Set(ended.map((e) => e.language ?? ''))].filter(Boolean)) {
    const ii = ended.flatMap((e, i) => (e.language === l ? [i] : []));
    const m = macroIfCells(`world categories (${l})`, ii.map((i) => hits[i]!), ii.map((i) => chance[i]!),
      ii.map((i) => [ended[i]!.category]), B, seed);
    if (m.acc) macroByLanguage[l] = m.acc;
    else omitted.push(m.omitted!);
  }
  return {
    trees: episodes.length,
    ended: ended.length,
    stuck: episodes.filter((e) => e.end === 'stuck').map((e) => e.tree),
    skipped: episodes.filter((e) => e.end === 'skipped').map((e) => e.tree),
    decisions: records.filter((r) => !r.skipped).length,
    overall: accuracyOf(hits, chance, B, seed),
    macro: all.acc,
    macroOmitted: omitted.length ? omitted.join('; ') : null,
    macroByLanguage,
    tables,
    positionBias: positionBias(records.filter((r) => !r.skipped)),
    letterMass: massStats(records.filter((r) => !r.skipped)),
    declaredFamilies: tables.map((t) => t.family!),
  };
}

/** The whole summary of an evaluation's records and episodes. */
export function summarize(records: EvalRecord[], episodes: EpisodeRecord[], o: SummaryOptions = {}): EvalSummary {
  const out: EvalSummary = { format: 'lobes-eval-summary',
    bootstrap: { resamples: o.bootstrap ?? 2000, seed: o.seed ?? 0 } };
  const iae = records.filter((r) => r.task === 'iae');
  const mcq = records.filter((r) => r.task === 'mcq');
  const gae = records.filter((r) => r.task === 'gae');
  if (iae.length) out.iae = summarizeItems(iae, 'iae', o);
  if (mcq.length) out.mcq = summarizeItems(mcq, 'mcq', o);
  if (episodes.length) out.gae = summarizeGae(episodes, gae, o);
  if (records.some((r) => r.cloze)) out.cloze = summarizeCloze(records);
  return out;
}
