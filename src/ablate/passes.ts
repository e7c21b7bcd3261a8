/**
 * The parts of a `lobes ablate` job that runAblate (src/ablate/run.ts) calls around its passes:
 * loading the task's items (the continuation items or, with --task iae, eval's multiple-choice
 * items, each with a label among the wanda groups), splitting the continuations into tokens
 * against the model's context, opening the --task iae scorer of one pass and refusing a model at
 * chance, the edits that zero a set of blocks, and the |W|-magnitude baselines' pass ids and
 * rows (their specificity and the paired tests of each region against its baseline).
 */
import { LobesError } from '../util/errors.js';
import { signedRank } from '../util/wilcoxon.js';
import { checkContext, modelContext } from '../runtime/plan.js';
import { splitContinuation, type LoglikEngine } from '../runtime/loglik.js';
import type { EvalTokenizer } from '../runtime/eval-tokenizer.js';
import type { Scorer } from '../runtime/scorer.js';
import type { ItemUnit } from '../eval/units.js';
import type { LimitRecord } from '../data/subset.js';
import type { WandaMatrix } from '../wanda/types.js';
import { loadAblateItems, type AblateItem } from './items.js';
import { blockEdits, type Edit, type StoredMatrix } from './patch.js';
import { hfBlocks, type Masks, type RegionSpec } from './regions.js';
import { ablationStats } from './stats.js';
import { IAE_TOKEN_BUDGET, chanceTest, loadIaeItems, requireAboveChance, type IaeOutcome,
  type IaeSettings } from './iae.js';
import type { AblateMagnitude } from './store.js';
import type { AblateDeps, AblateOptions } from './options.js';

/** The pseudo-group name and pass id of the |W| baselines. */
export const MAGNITUDE = '|W|';
export const magnitudeKey = (nullSet: number) => `${MAGNITUDE}:${nullSet}`;

/**
 * Per region: its |W| baseline's specificity for the region's target, against the region's own
 * random regions, and the per-item paired tests of the region against its baseline (one-sided
 * signed-rank: the region costs the items more), on the target's items and on the others.
 */
export function magnitudeRows(specs: RegionSpec[], labels: string[], labelOf: Int32Array, ll: Float64Array[],
  of: (i: number) => { region: Float64Array; magnitude: Float64Array; random: Float64Array[]; blocks: number },
  bootstrap: number, seed: number): AblateMagnitude[]
{
  return specs.flatMap((r, i) => {
    const x = of(i);
    const st = ablationStats({ labels, labelOf, before: ll[0]!,
      regions: [{ name: r.name, minus: r.minus, after: x.magnitude, random: x.random }], bootstrap, seed });
    const sp = st.specificity[0];
    if (!sp) return [];
    const t = labels.indexOf(r.name);
    const own: number[] = [];
    const others: number[] = [];
    labelOf.forEach((l, k) => (l === t ? own : others).push(k));
    const side = (idx: number[]) => ({ n: idx.length,
      p: signedRank(idx.map((k) => x.region[k]! - x.magnitude[k]!), 'less')?.p ?? null });
    return [{ region: r.name, minus: r.minus, blocks: x.blocks, specificity: { ...sp, paired: undefined },
      cells: st.cells,
      versusRegion: { test: 'wilcoxon-signed-rank' as const, alternative: 'less' as const, own: side(own),
        others: side(others) } }];
  });
}

export type TaskItems =
  & ({ kind: 'continuation'; items: AblateItem[] } | { kind: 'iae'; units: ItemUnit[]; unitsSha256: string })
  & { spec: string; limit: LimitRecord | null };

/** The continuation task's items with a label among the wanda groups. */
export async function loadContinuations(spec: string, o: { limit: number | null; by?: string[]; seed: number },
  by: string, labels: string[]): Promise<TaskItems>
{
  const data = await loadAblateItems(spec, o);
  if (!data.axes.includes(by)) throw noAxis(by, data.axes);
  const items = data.items.filter((it) => labels.includes(it.labels[by] ?? ''));
  if (!items.length) throw noItems(data.spec, by, labels);
  return { kind: 'continuation', items, spec: data.spec, limit: data.limit };
}

/** --task iae: eval's multiple-choice items with a label among the wanda groups. */
export async function loadTask(spec: string, s: IaeSettings, o: { limit: number | null; by?: string[]; seed: number },
  by: string, labels: string[]): Promise<TaskItems>
{
  const d = loadIaeItems(spec, s, o);
  if (!d.axes.includes(by)) throw noAxis(by, d.axes);
  const units = d.units.filter((u) => labels.includes(u.facts.labels[by] ?? ''));
  if (!units.length) throw noItems(d.spec, by, labels);
  return { kind: 'iae', units, unitsSha256: d.unitsSha256, spec: d.spec, limit: d.limit };
}

const noAxis = (by: string, axes: string[]) =>
  new LobesError(
    `the data has no label axis ${JSON.stringify(by)}, which the wanda results group by (axes: ${axes.join(', ')})`,
    { hint: 'give data labelled on the same axis as the run' },
  );
const noItems = (spec: string, by: string, labels: string[]) =>
  new LobesError(`no item of ${spec} has a ${by} label among the wanda groups (${labels.join(', ')})`);

/** The continuation task's token split of every item, checked against the model's context. */
export function splitItems(items: AblateItem[], tok: EvalTokenizer,
  modelDir: string): { context: number[]; continuation: number[] }[]
{
  const split = items.map((it) => {
    const s = splitContinuation(tok, it.context, it.continuation, tok.prefixId ?? 0);
    if (!s.context.length) throw new LobesError('the context has no tokens', { where: `item ${it.id}` });
    if (!s.continuation.length)
      throw new LobesError('the continuation has no tokens of its own after the context', { where: `item ${it.id}` });
    return s;
  });
  checkContext(split.map((s, i) => ({ id: items[i]!.id, tokens: s.context.length + s.continuation.length })),
    modelContext(modelDir),
    () => 'leave out the longer items (lobes ablate scores each context and continuation whole)');
  return split;
}

/** --task iae: the scorer of one pass on the model in `dir` (letter: eval's scorer; cloze: the log-likelihood engine). */
export async function openIae(deps: AblateDeps, dir: string, s: IaeSettings,
  o: AblateOptions): Promise<{ engine: LoglikEngine | null; scorer: Scorer | null }>
{
  const device = o.device ?? 'cpu';
  if (s.scoring === 'cloze')
    return {
      engine: await deps.openLoglik(dir, { device, deviceId: o.deviceId, threads: o.threads, cache: 'auto',
        batch: o.batch ?? 8, tokenBudget: IAE_TOKEN_BUDGET, ...ivOpt(o) }),
      scorer: null,
    };
  return { engine: null,
    scorer: await deps.openScorer(dir, { device, deviceId: o.deviceId, threads: o.threads, generation: device === 'cpu',
      ...ivOpt(o) }) };
}

/** --task iae: refuse unless the pass before ablating answers above chance. */
export function checkChance(before: IaeOutcome[], items: TaskItems, s: IaeSettings): void {
  if (items.kind !== 'iae') return;
  const scored = before.map((b, i) => (b.correct === null ? -1 : i)).filter((i) => i >= 0);
  const t = chanceTest(scored.map((i) => before[i]!.correct!),
    scored.map((i) => 1 / items.units[i]!.facts.options.length));
  requireAboveChance(t, `${s.scoring} scoring, ${s.metric}`);
}

/** The edits zeroing every block of a set. */
export function zeroEdits(masks: Masks, matrices: WandaMatrix[], block: [number, number],
  stored: Map<number, StoredMatrix>): Edit[]
{
  return hfBlocks(masks, matrices, block).flatMap((b) => blockEdits(stored.get(b.matrix)!, b));
}

/** The engines' `interventions` option when the job has edits. */
export const ivOpt = (o: AblateOptions) => (o.interventions?.length ? { interventions: o.interventions } : {});
