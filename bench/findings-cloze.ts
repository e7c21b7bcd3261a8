/**
 * The cloze-scoring finding (docs/findings.md, "Cloze scoring"): what bench/findings-cloze.sh's
 * evaluations keep in the repository, and the table bench/findings-summary.ts prints from it.
 *
 * - `clozeItems` reduces a `lobes eval --scoring cloze --mutual-info` evaluation to one small
 *   object per item: the answer, the four picks (acc, acc_norm, acc_bytes, acc_mutual_info), per
 *   option the log-likelihood, the unconditional one, the lengths, and the option's overlap with
 *   the context (below). `checkClozeFile` recomputes the evaluation's own cloze summary from
 *   those picks, so a committed file that disagrees with its evaluation is refused.
 * - The **surface-overlap control**: pick the option whose words share most with the context the
 *   model reads (the published prompt up to its options). Units are src/attend/words.ts's
 *   (words lower-cased; each Han character one unit; punctuation left out), counted once each.
 *   Two scores: the share of the option's distinct units found in the context, and their count.
 *   A third control picks the longest option (characters): acc_mutual_info sums over tokens.
 *   Ties are broken uniformly at random (seeded): SocialEval lists the correct option first, so
 *   the "first option" rule of the model's metrics would credit every tie to the answer.
 * - `clozeTable`: per metric and language k/n, accuracy, exact (Clopper–Pearson) 95% interval,
 *   chance (mean 1/k), the exact one-sided test against chance (Poisson-binomial over the items'
 *   own 1/k; the binomial when every item has k options), and Holm over the family of the model's
 *   metrics × languages; the controls' rows beside them (tested alone, not in the family), and per
 *   language the paired exact (McNemar) test of acc_mutual_info against each control.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { segmentUnits } from '../src/attend/words.js';
import type { EvalRecord } from '../src/eval/types.js';
import type { ClozeTaskSummary } from '../src/eval/summary-types.js';
import { Rng } from '../src/util/rng.js';
import { binomialLower, binomialUpper, clopperPearson, holm, poissonBinomialUpper } from '../src/util/stats.js';

/** One option of a committed item. */
export interface ClozeFileOption {
  /** log-likelihood of delimiter + option after the context. */
  ll: number;
  /** the same after the prefix token alone (acc_mutual_info's ll₀). */
  ll0: number;
  tokens: number;
  chars: number;
  bytes: number;
  /** [distinct units of the option found in the context, distinct units of the option]. */
  overlap: [number, number];
}

/** One committed item: a scored IAE item, or a skipped one (no options then). */
export interface ClozeFileItem {
  id: string;
  aspect: string | null;
  answer: number;
  skipped?: string;
  pick?: number;
  pickNorm?: number;
  pickBytes?: number;
  pickMutualInfo?: number;
  options?: ClozeFileOption[];
}

/** One evaluation (or one shard of one) in a committed file, and how many of the file's items are its. */
export interface ClozeFileEval {
  /** Where it came from: the data, the settings, the shard, the GGUF's identity, the records' sha256. */
  source: Record<string, unknown>;
  /** The evaluation's own summary.json cloze entry for IAE. */
  summary: ClozeTaskSummary;
  /** Its items are the next `items` of the file's items, in order. */
  items: number;
}

/** bench/cloze/*.json: one evaluation, or the finished shards of one, reduced. */
export interface ClozeFile {
  about: string;
  evaluations: ClozeFileEval[];
  items: ClozeFileItem[];
}

export const METRICS = ['acc', 'acc_norm', 'acc_bytes', 'acc_mutual_info'] as const;
export type ClozeMetricName = (typeof METRICS)[number];

/** Distinct overlap units of a text: lower-cased words and single Han (kana) characters, no punctuation. */
export function overlapUnits(text: string): Set<string> {
  const out = new Set<string>();
  for (const u of segmentUnits(text, { cjk: 'char' })) if (u.kind !== 'punct') out.add(u.text.toLowerCase());
  return out;
}

/** [distinct units of `option` that occur in `context`, distinct units of `option`]. */
export function overlapOf(context: Set<string>, option: string): [number, number] {
  const u = overlapUnits(option);
  let shared = 0;
  for (const w of u) if (context.has(w)) shared++;
  return [shared, u.size];
}

/** The committed items of an evaluation's records (IAE items with cloze records, skipped ones kept with their reason). */
export function clozeItems(records: readonly EvalRecord[]): ClozeFileItem[] {
  const out: ClozeFileItem[] = [];
  for (const r of records) {
    if (r.task !== 'iae' || r.answer === null) continue;
    if (r.skipped) {
      out.push({ id: r.id, aspect: r.aspect, answer: r.answer, skipped: r.skipped });
      continue;
    }
    const c = r.cloze;
    if (!c) throw new Error(`record ${r.id} has no cloze scores: the evaluation was not run with --scoring cloze`);
    if (c.pickMutualInfo === null)
      throw new Error(`record ${r.id} has no acc_mutual_info pick: the evaluation was not run with --mutual-info`);
    const ctx = overlapUnits(c.context);
    out.push({
      id: r.id,
      aspect: r.aspect,
      answer: r.answer,
      pick: c.pick,
      pickNorm: c.pickNorm,
      pickBytes: c.pickBytes,
      pickMutualInfo: c.pickMutualInfo,
      options: c.options.map((o, i) => ({ ll: o.logprob, ll0: o.unconditional!, tokens: o.tokens, chars: o.chars,
        bytes: o.bytes, overlap: overlapOf(ctx, r.options[i]!) })
      ),
    });
  }
  return out;
}

const scored = (items: readonly ClozeFileItem[]) => items.filter((i) => !i.skipped && i.options);

/** Per scored item: did the metric pick the answer. */
export function metricHits(items: readonly ClozeFileItem[], metric: ClozeMetricName): boolean[] {
  const key = { acc: 'pick', acc_norm: 'pickNorm', acc_bytes: 'pickBytes', acc_mutual_info: 'pickMutualInfo' } as const;
  return scored(items).map((i) => i[key[metric]] === i.answer);
}

/** The surface controls: a score per option, the highest picked. */
export const CONTROLS = {
  'overlap (share)': (o: ClozeFileOption) => (o.overlap[1] ? o.overlap[0] / o.overlap[1] : 0),
  'overlap (count)': (o: ClozeFileOption) => o.overlap[0],
  'longest option': (o: ClozeFileOption) => o.chars,
} as const;
export type ControlName = keyof typeof CONTROLS;

/**
 * Per scored item: a surface control's pick and whether it is the answer. Ties are broken
 * uniformly at random from Rng(seed), one draw per tied item in item order.
 */
export function controlHits(items: readonly ClozeFileItem[], control: ControlName,
  seed = 0): { picks: number[]; hits: boolean[]; ties: number }
{
  const rng = new Rng(seed);
  const score = CONTROLS[control];
  let ties = 0;
  const its = scored(items);
  const picks = its.map((it) => {
    const s = it.options!.map(score);
    const best = Math.max(...s);
    const top = s.flatMap((v, j) => (v === best ? [j] : []));
    if (top.length > 1) ties++;
    return top.length > 1 ? top[rng.int(top.length)]! : top[0]!;
  });
  return { picks, hits: picks.map((p, i) => p === its[i]!.answer), ties };
}

/** The overlap control by share (shared / option units; an option without units scores 0) or by count (shared). */
export function overlapHits(items: readonly ClozeFileItem[], by: 'share' | 'count',
  seed = 0): { picks: number[]; hits: boolean[]; ties: number }
{
  return controlHits(items, by === 'share' ? 'overlap (share)' : 'overlap (count)', seed);
}

/** Refuses a committed file whose items do not reproduce each evaluation's own counts. */
export function checkClozeFile(f: ClozeFile, name: string): void {
  let at = 0;
  for (const [j, e] of f.evaluations.entries()) {
    const items = f.items.slice(at, at + e.items);
    at += e.items;
    for (const m of METRICS) {
      const s = e.summary[m];
      if (!s) throw new Error(`${name}: evaluation ${j} has no ${m} in its summary (run it with --mutual-info)`);
      const h = metricHits(items, m);
      const k = h.filter(Boolean).length;
      if (h.length !== s.n || k !== s.correct)
        throw new Error(
          `${name}: ${m} of evaluation ${j} is ${k}/${h.length} from the items but ${s.correct}/${s.n} in its summary`,
        );
    }
  }
  if (at !== f.items.length) throw new Error(`${name}: its evaluations list ${at} items but it has ${f.items.length}`);
}

/** Exact two-sided McNemar test of paired hits: twice the smaller binomial tail of the discordant pairs at ½. */
export function mcnemarExact(a: readonly boolean[],
  b: readonly boolean[]): { onlyA: number; onlyB: number; p: number }
{
  if (a.length !== b.length) throw new Error(`paired hits of different lengths (${a.length}, ${b.length})`);
  let onlyA = 0;
  let onlyB = 0;
  a.forEach((x, i) => {
    if (x && !b[i]) onlyA++;
    if (!x && b[i]) onlyB++;
  });
  const n = onlyA + onlyB;
  const small = Math.min(onlyA, onlyB);
  const p = n === 0 ? 1 : Math.min(1, 2 * Math.min(binomialLower(small, n, 0.5), binomialUpper(n - small, n, 0.5)));
  return { onlyA, onlyB, p };
}

/** One row of the table: a metric's hits on one language's items against the items' chance. */
export interface ClozeRow {
  language: string;
  metric: string;
  k: number;
  n: number;
  accuracy: number;
  ci95: [number, number] | null;
  chance: number;
  p: number;
  /** Holm over the family (the model's metrics × languages); null for the controls. */
  pHolm: number | null;
}

function row(language: string, metric: string, hits: boolean[], chances: number[]): ClozeRow {
  const k = hits.filter(Boolean).length;
  const n = hits.length;
  return { language, metric, k, n, accuracy: n ? k / n : NaN, ci95: clopperPearson(k, n),
    chance: chances.reduce((a, c) => a + c, 0) / n, p: poissonBinomialUpper(chances, k), pHolm: null };
}

/**
 * The rows of the cloze table: the model's four metrics for every language (Holm-adjusted
 * together), then the overlap control (share, count) per language, unadjusted.
 */
export function clozeRows(sets: readonly { language: string; items: readonly ClozeFileItem[] }[],
  seed = 0): { model: ClozeRow[]; control: (ClozeRow & { ties: number })[] }
{
  const model: ClozeRow[] = [];
  const control: (ClozeRow & { ties: number })[] = [];
  for (const { language, items } of sets) {
    const chances = scored(items).map((i) => 1 / i.options!.length);
    for (const m of METRICS) model.push(row(language, m, metricHits(items, m), chances));
    for (const c of Object.keys(CONTROLS) as ControlName[]) {
      const o = controlHits(items, c, seed);
      control.push({ ...row(language, c, o.hits, chances), ties: o.ties });
    }
  }
  const h = holm(model.map((r) => r.p));
  model.forEach((r, i) => (r.pHolm = h[i] ?? null));
  return { model, control };
}

const pct = (v: number) => (100 * v).toFixed(1);
const fp = (p: number | null) => (p === null ? '—' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

/** Markdown of the cloze finding: the table, the overlap control, the paired test, the skipped items. */
export function clozeTable(sets: readonly { language: string; label: string; items: readonly ClozeFileItem[] }[],
  seed = 0): string[]
{
  if (!sets.length) return [];
  const { model, control } = clozeRows(sets, seed);
  const label = new Map(sets.map((s) => [s.language, s.label]));
  const out = [
    '### Cloze scoring (lobes eval --scoring cloze --mutual-info; bench/cloze/)',
    '',
    `| language | metric | correct / n | accuracy % | exact 95% CI | chance % | P(X ≥ k) at chance | Holm (${model.length} tests: metrics × languages) |`,
    '|---|---|---|---|---|---|---|---|',
  ];
  const line = (r: ClozeRow, holmCell: string) =>
    out.push(
      `| ${label.get(r.language)} | ${r.metric} | ${r.k} / ${r.n} | ${pct(r.accuracy)} | ${
        r.ci95 ? `[${pct(r.ci95[0])}, ${pct(r.ci95[1])}]` : '—'
      } | ${pct(r.chance)} | ${fp(r.p)} | ${holmCell} |`,
    );
  for (const r of model) line(r, fp(r.pHolm));
  for (const r of control) line(r, `control, not in the family; ${r.ties} tied items`);
  out.push('');
  out.push(
    `Surface controls: overlap, the option sharing the largest share (count) of its distinct words (Han characters) with the context; longest option, the option with the most characters. Ties broken at random (seed ${seed}).`,
    '',
  );
  for (const s of sets) {
    const mi = metricHits(s.items, 'acc_mutual_info');
    const miPicks = scored(s.items).map((i) => i.pickMutualInfo);
    for (const c of Object.keys(CONTROLS) as ControlName[]) {
      const o = controlHits(s.items, c, seed);
      const t = mcnemarExact(mi, o.hits);
      const both = mi.filter((x, i) => x && o.hits[i]).length;
      const same = miPicks.filter((p, j) => p === o.picks[j]).length;
      out.push(
        `- ${s.label}, acc_mutual_info vs ${c}, paired: both right ${both}, only acc_mutual_info ${t.onlyA}, only ${c} ${t.onlyB} (exact McNemar p = ${
          fp(t.p)
        }); the same option picked on ${same} of ${mi.length} items.`,
      );
    }
    const skipped = s.items.filter((i) => i.skipped);
    if (skipped.length)
      out.push(
        `- ${s.label}: ${skipped.length} of ${s.items.length} items skipped (${
          skipped.map((i) => `${i.id}: ${i.skipped}`).join('; ')
        }).`,
      );
  }
  return [...out, ''];
}

/**
 * Over every IAE item of a language (the data, not a sample): how often the correct option is
 * the only longest (Unicode code points, acc_norm's length), how often it shares the longest
 * length with others, and the chance that a random option is the longest (mean 1/k).
 */
export function longestAnswer(
  items: readonly { options: string[]; answer: number }[],
): { n: number; alone: number; tied: number; chance: number } {
  let alone = 0;
  let tied = 0;
  let chance = 0;
  for (const it of items) {
    const len = it.options.map((o) => [...o].length);
    const best = Math.max(...len);
    const top = len.filter((l) => l === best).length;
    if (len[it.answer] === best) {
      if (top === 1) alone++;
      else tied++;
    }
    chance += 1 / it.options.length;
  }
  return { n: items.length, alone, tied, chance: items.length ? chance / items.length : NaN };
}

/** The committed evaluations bench/findings-summary.ts reads, in the table's order: [file, language, label]. */
export const CLOZE_FILES: [string, string, string][] = [
  ['smollm2-en.json', 'en', 'English'],
  ['smollm2-zh.json', 'zh', 'Chinese'],
];
/** The English sample through the random-weights control (seed 0), when it was run: reported beside the family, not in it. */
export const CLOZE_CONTROL_FILE = 'smollm2-en-control.json';

function readClozeFile(file: string): ClozeFile {
  const f = JSON.parse(readFileSync(file, 'utf8')) as ClozeFile;
  checkClozeFile(f, file);
  return f;
}

/**
 * Trained against the random-weights control on the items both scored, per metric: the paired
 * exact McNemar test of their hits (the same items, so the comparison is paired, not two marginal
 * intervals side by side).
 */
export function pairedWithControl(trained: readonly ClozeFileItem[], control: readonly ClozeFileItem[]): string[] {
  const byId = new Map(scored(control).map((i) => [i.id, i]));
  const both = scored(trained).filter((i) => byId.has(i.id));
  const ctl = both.map((i) => byId.get(i.id)!);
  if (!both.length) return [];
  return METRICS.map((m) => {
    const a = metricHits(both, m);
    const b = metricHits(ctl, m);
    const t = mcnemarExact(a, b);
    const ka = a.filter(Boolean).length;
    const kb = b.filter(Boolean).length;
    return `${m}, trained vs random weights on the same ${both.length} items: ${ka} against ${kb} right (${
      pct(ka / both.length)
    }% − ${pct(kb / both.length)}% = ${
      ((100 * (ka - kb)) / both.length).toFixed(1)
    } points); only trained ${t.onlyA}, only control ${t.onlyB}, exact McNemar p = ${fp(t.p)}.`;
  });
}

/** The cloze section of the findings summary from the files of `dir` (bench/cloze/), or nothing when none is there. */
export function clozeLines(dir: string,
  data: { language: string; label: string; items: readonly { options: string[]; answer: number }[] }[] = []): string[]
{
  const sets = CLOZE_FILES.filter(([f]) => existsSync(path.join(dir, f))).map(([f, language, label]) => ({ language,
    label, items: readClozeFile(path.join(dir, f)).items })
  );
  if (!sets.length) return [];
  const out = clozeTable(sets);
  const ctl = path.join(dir, CLOZE_CONTROL_FILE);
  if (existsSync(ctl)) {
    const items = readClozeFile(ctl).items;
    const { model } = clozeRows([{ language: 'en', items }]);
    out.push('Random-weights control (English, the same items; not in the family):', '',
      '| metric | correct / n | accuracy % | exact 95% CI | chance % | P(X ≥ k) at chance |',
      '|---|---|---|---|---|---|');
    for (const r of model)
      out.push(
        `| ${r.metric} | ${r.k} / ${r.n} | ${pct(r.accuracy)} | ${
          r.ci95 ? `[${pct(r.ci95[0])}, ${pct(r.ci95[1])}]` : '—'
        } | ${pct(r.chance)} | ${fp(r.p)} |`,
      );
    out.push('');
    const trained = sets.find((s) => s.language === 'en');
    if (trained) { for (const l of pairedWithControl(trained.items, items)) out.push(`- ${l}`); }
    out.push('');
  }
  for (const [f, , label] of [...CLOZE_FILES,
    [CLOZE_CONTROL_FILE, 'en', 'English, random-weights control'] as [string, string, string]])
  {
    const file = path.join(dir, f);
    if (!existsSync(file)) continue;
    const c = readClozeFile(file);
    const src = c.evaluations.map((e) =>
      e.source as { dataset?: string; settings?: { limit?: number; seed?: number }; shard?: string | null;
        wallMs?: number | null }
    );
    const shards = src.filter((s) => s.shard).map((s) => s.shard);
    const wall = src.reduce((a, s) => a + (s.wallMs ?? 0), 0);
    const tokens = c.evaluations.reduce((a, e) => a + e.summary.meanTokens * e.items, 0) / c.items.length;
    out.push(
      `- ${label}: ${src[0]?.dataset}, --limit ${src[0]?.settings?.limit} --seed ${src[0]?.settings?.seed}` +
        `${
          shards.length
            ? `, shards ${shards.join(', ')} of the sample (${c.items.length} items)`
            : ` (${c.items.length} items)`
        }; ` +
        `${tokens.toFixed(1)} tokens per option; evaluation wall time ${(wall / 1000).toFixed(0)} s.`,
    );
  }
  for (const d of data) {
    const l = longestAnswer(d.items);
    out.push(
      `- ${d.label}, every IAE item of the data (no model): the correct option is the only longest in ${l.alone} of ${l.n} (${
        pct(l.alone / l.n)
      }%) and tied for the longest in ${l.tied}; a random option would be the longest in ${pct(l.chance)}%.`,
    );
  }
  return [...out, ''];
}
