/**
 * `lobes ablate --task iae` (docs/ablate.md, "The IAE task"): instead of one continuation's
 * log-likelihood per item, every pass answers the multiple-choice items the way `lobes eval`
 * does, with eval's own item building (src/eval/units.ts), prompts and scorers (letter: the
 * option letter's logit over seeded shuffles, voted; cloze: every option's text as a
 * continuation, picked by acc, acc_norm or acc_mutual_info), and keeps whether each item was
 * answered right.
 *
 * Statistics per region × label, on 0/1 correctness (before_i, after_i):
 * - accuracy before and after; change = mean(after − before) with the paired percentile
 *   bootstrap CI (src/ablate/stats.ts: each resampled item brings its own before and after);
 * - lost = #{before 1, after 0}, gained = #{before 0, after 1}, and the exact McNemar test:
 *   two-sided, P = min(1, 2 · P(X ≤ min(lost, gained))), X ~ Binomial(lost + gained, 1/2);
 * - p against the K random regions (lower: the region costs more accuracy than random regions
 *   of its size), floor 1/(K + 1), and pHolm: Holm over the regions within the label;
 * - the specificity contrast of each region for its own label: own items' change minus the
 *   other items' (pooled), against the random regions, Holm over the regions.
 *
 * Before any ablation the model must answer above chance: an exact one-sided test of the
 * correct count against the items' chance levels (1/k each; a Poisson-binomial, the binomial
 * when every item has k options), at 0.05; otherwise lobes refuses, since an ablation cannot
 * lower accuracy that is only chance.
 */
import { LobesError, UsageError, opt } from '../util/errors.js';
import { binomialLower, poissonBinomialUpper } from '../util/stats.js';
import { declareFamily, type FamilyRecord } from '../util/families.js';
import { loadEvalData, hashUnits, type ItemUnit } from '../eval/units.js';
import { evaluateUnits, newStats } from '../eval/evaluate.js';
import { clozeHit, clozePick } from '../eval/summary-cloze.js';
import type { Scorer } from '../runtime/scorer.js';
import type { EvalTokenizer } from '../runtime/eval-tokenizer.js';
import type { LoglikEngine } from '../runtime/loglik.js';
import { LONG_PROMPT_TOKEN_BUDGET } from '../runtime/batching.js';
import type { Device } from '../runtime/types.js';
import { limitAxes, type LimitRecord } from '../data/subset.js';
import { ablationPlan, ablationStats, adjustRows, specId, type AblateCell, type AblateSpecificity } from './stats.js';
import { regionKey } from './regions.js';

export type AblateTask = 'continuation' | 'iae';
export const ABLATE_TASKS: readonly AblateTask[] = ['continuation', 'iae'];
export type IaeScoring = 'letter' | 'cloze';
export const IAE_METRICS = ['acc', 'acc_norm', 'acc_mutual_info'] as const;
export type IaeMetric = (typeof IAE_METRICS)[number];
/** Option orders per item under letter scoring (eval's default). */
export const IAE_LETTER_SHUFFLES = 3;
/** Padded tokens per batch when scoring the items (IAE prompts run to about a thousand tokens; src/runtime/batching.ts says why). */
export const IAE_TOKEN_BUDGET = LONG_PROMPT_TOKEN_BUDGET;
/** The level of the test against chance that the model must pass before ablating. */
export const CHANCE_ALPHA = 0.05;

export interface IaeSettings {
  scoring: IaeScoring;
  metric: IaeMetric;
  /** Option orders per item (letter scoring; 1 with cloze). */
  shuffles: number;
}

/** Check --task, --scoring and --metric together; null for the continuation task. */
export function iaeSettings(task: AblateTask | undefined, scoring: IaeScoring | undefined,
  metric: IaeMetric | undefined): IaeSettings | null
{
  // checked at run time too: a JavaScript caller's string is not held to the types
  const t: string = task ?? 'continuation';
  if (!ABLATE_TASKS.includes(t as AblateTask))
    throw new UsageError(`${opt('task')} must be ${ABLATE_TASKS.join(' or ')}, got ${JSON.stringify(t)}`);
  if (t === 'continuation') {
    if (scoring !== undefined || metric !== undefined)
      throw new UsageError(`${opt('scoring')} and ${opt('metric')} apply to ${opt('task', 'iae')}`);
    return null;
  }
  const s: string = scoring ?? 'letter';
  if (s !== 'letter' && s !== 'cloze')
    throw new UsageError(`${opt('scoring')} must be letter or cloze, got ${JSON.stringify(s)}`);
  const m: string = metric ?? 'acc';
  if (!IAE_METRICS.includes(m as IaeMetric))
    throw new UsageError(`${opt('metric')} must be ${IAE_METRICS.join(', ')}, got ${JSON.stringify(m)}`);
  if (s === 'letter' && m !== 'acc')
    throw new UsageError(`${opt('metric', m)} applies to ${opt('scoring', 'cloze')}; letter scoring has acc only`);
  return { scoring: s, metric: m as IaeMetric, shuffles: s === 'letter' ? IAE_LETTER_SHUFFLES : 1 };
}

export interface IaeItems {
  spec: string;
  units: ItemUnit[];
  axes: string[];
  limit: LimitRecord | null;
  unitsSha256: string;
}

/** The multiple-choice items, built by eval (SocialEval IAE items, or jsonl multiple-choice items). */
export function loadIaeItems(spec: string, s: IaeSettings,
  o: { limit: number | null; by?: string[]; seed: number }): IaeItems
{
  const d = loadEvalData(spec, { task: 'iae', cot: false, limit: o.limit, by: o.by, seed: o.seed, scoring: s.scoring });
  const units = d.units.filter((u): u is ItemUnit => u.kind === 'item');
  const axes = [...new Set(units.flatMap((u) => Object.keys(u.facts.labels)))];
  const limit = o.limit === null ? null : { limit: o.limit, by: limitAxes(o.by, axes), seed: o.seed, of: d.available };
  return { spec: d.spec, units, axes, limit, unitsSha256: hashUnits(units) };
}

/** One item's outcome in one pass: correct under the metric (null: not scored, its prompt too long), and the option picked. */
export interface IaeOutcome {
  id: string;
  correct: boolean | null;
  pick: number;
}

export interface IaePassContext {
  settings: IaeSettings;
  tok: EvalTokenizer;
  /** Letter scoring: the scorer; cloze: the log-likelihood engine. */
  scorer: Scorer | null;
  engine: LoglikEngine | null;
  seed: number;
  batch: number;
  maxTokens: number | null;
  device: Device;
  say?: (line: string) => void;
  onItem?: () => void;
}

/** Score units with eval's scorer as eval scores them; one outcome per unit, in order. */
export async function scoreIaeUnits(units: readonly ItemUnit[], c: IaePassContext): Promise<IaeOutcome[]> {
  const cloze = c.settings.scoring === 'cloze';
  const r = await evaluateUnits(units, {
    scorer: cloze ? null : c.scorer,
    cloze: cloze ? { engine: c.engine!, delimiter: null, mutualInfo: c.settings.metric === 'acc_mutual_info' } : null,
    tok: c.tok,
    shuffles: c.settings.shuffles,
    seed: c.seed,
    cot: 0,
    batch: c.batch,
    tokenBudget: IAE_TOKEN_BUDGET,
    // letters, as lobes eval on the CPU: an item's option orders share the prompt before the
    // options, computed once through the KV cache when the model has one
    sharePrefix: !cloze && c.device === 'cpu' && !!c.scorer?.hasPast && !!c.scorer.multiTokenExtend,
    maxTokens: c.maxTokens,
    stats: newStats(),
    memory: { device: c.device, say: c.say },
    onUnit: c.onItem,
  });
  return r.records.map((rec) => ({
    id: rec.id,
    correct: rec.skipped ? null : cloze ? clozeHit(rec, c.settings.metric) : rec.correct,
    pick: cloze ? (clozePick(rec, c.settings.metric) ?? -1) : rec.vote,
  }));
}

/** The test against chance before ablating. */
export interface IaeChance {
  n: number;
  correct: number;
  accuracy: number;
  /** Mean of the items' chance levels (1/k). */
  chance: number;
  /** P(at least `correct` right | every item answered at its chance level), exact. */
  p: number;
  alpha: number;
}

/** The exact one-sided test of `correct` right answers against the items' chance levels. */
export function chanceTest(correct: readonly boolean[], chances: readonly number[]): IaeChance {
  const n = correct.length;
  const k = correct.filter(Boolean).length;
  return { n, correct: k, accuracy: n ? k / n : NaN, chance: n ? chances.reduce((a, b) => a + b, 0) / n : NaN,
    p: poissonBinomialUpper(chances, k), alpha: CHANCE_ALPHA };
}

/** Refuse (one line) unless the model answers above chance before ablating. */
export function requireAboveChance(t: IaeChance, what: string): void {
  if (t.n > 0 && t.p < t.alpha) return;
  const pct = (x: number) => (100 * x).toFixed(1) + '%';
  throw new LobesError(
    `the model is not above chance before ablating (${what}: ${t.correct}/${t.n} = ${pct(t.accuracy)} correct, chance ${
      pct(t.chance)
    }, exact one-sided p = ${t.p.toPrecision(3)} ≥ ${t.alpha}), so an ablation has no ability to remove`,
    {
      hint: `try another ${opt('scoring')} or ${opt('metric')} (with cloze, ${
        opt('metric', 'acc_mutual_info')
      }), more items, or a stronger model`,
    },
  );
}

/** The exact two-sided McNemar test of a paired 0/1 change: `lost` and `gained` discordant pairs. */
export function mcnemarExact(lost: number, gained: number): number {
  const n = lost + gained;
  if (n === 0) return 1;
  return Math.min(1, 2 * binomialLower(Math.min(lost, gained), n, 0.5));
}

/** One region × label cell of an IAE ablation. */
export interface IaeCell {
  region: string;
  minus: string | null;
  label: string;
  n: number;
  accuracyBefore: number;
  accuracyAfter: number;
  /** accuracyAfter − accuracyBefore, with its paired bootstrap 95% CI. */
  change: number;
  ci: [number, number];
  /** Items right before and wrong after; wrong before and right after. */
  lost: number;
  gained: number;
  /** Exact McNemar p (two-sided) of lost against gained. */
  pMcNemar: number;
  /** The change under each random region. */
  nullChange: number[];
  /** (1 + #{random changes ≤ change}) / (K + 1). */
  p: number;
  /** p adjusted by Holm over the regions within the label. */
  pHolm: number;
  z: number | null;
}

/** summary.json's `iae` section (versioned on its own). */
export interface IaeSection {
  version: 1;
  scoring: IaeScoring;
  metric: IaeMetric;
  shuffles: number;
  /** The test against chance before ablating (passed, or lobes would have refused). */
  chance: IaeChance;
  /** Items not scored (prompt longer than the model's context), left out of every figure. */
  skipped: string[];
  cells: IaeCell[];
}

export interface IaeStatsInput {
  labels: string[];
  labelOf: Int32Array;
  before: Uint8Array;
  regions: { name: string; minus: string | null; after: Uint8Array; random: Uint8Array[] }[];
  bootstrap: number;
  seed: number;
}

/** Cells (accuracy change), specificity rows and the IAE cells of an ablation on 0/1 correctness. */
export function iaeStats(
  x: IaeStatsInput,
): { cells: AblateCell[]; specificity: AblateSpecificity[]; iae: IaeCell[]; families: FamilyRecord[] } {
  const f = (a: Uint8Array) => Float64Array.from(a);
  // the per-label families, declared from the plan (every region × label with items) before any test runs
  const plan = ablationPlan(x);
  const fams = new Map(
    x.labels.map((
      label,
    ) => [label,
      declareFamily({ name: `iae ${label}`,
        claim: `zeroing a region changes the accuracy on ${label}'s items beyond random regions (every region)`,
        members: plan.cells.filter((c) => c.label === label).map(specId) })]
    ),
  );
  const base = ablationStats({ labels: x.labels, labelOf: x.labelOf, before: f(x.before),
    regions: x.regions.map((r) => ({ name: r.name, minus: r.minus, after: f(r.after), random: r.random.map(f) })),
    bootstrap: x.bootstrap, seed: x.seed });
  const region = new Map(x.regions.map((r) => [regionKey(r), r]));
  const iae: IaeCell[] = base.cells.map((c) => {
    const r = region.get(regionKey({ name: c.region, minus: c.minus }))!;
    const l = x.labels.indexOf(c.label);
    let lost = 0;
    let gained = 0;
    let after = 0;
    for (let i = 0; i < x.before.length; i++) {
      if (x.labelOf[i] !== l) continue;
      after += r.after[i]!;
      if (x.before[i] === 1 && r.after[i] === 0) lost++;
      if (x.before[i] === 0 && r.after[i] === 1) gained++;
    }
    return { region: c.region, minus: c.minus, label: c.label, n: c.n, accuracyBefore: c.before,
      accuracyAfter: after / c.n, change: c.delta, ci: c.ci, lost, gained, pMcNemar: mcnemarExact(lost, gained),
      nullChange: c.nullDelta, p: c.p, pHolm: NaN, z: c.z };
  });
  for (const label of x.labels) {
    const rows = iae.filter((c) => c.label === label);
    const fam = fams.get(label)!;
    const adj = adjustRows(fam, rows, specId, (c) => c.p);
    base.families.push(fam.record());
    rows.forEach((c, i) => (c.pHolm = adj[i]!));
  }
  return { ...base, iae };
}
