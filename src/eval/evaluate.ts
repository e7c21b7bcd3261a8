/**
 * Evaluating units: every shuffle of every item is rendered, its answer slot found, and
 * scored (in batches planned by length, or one at a time after greedy chain-of-thought
 * generation with --cot N); GAE world trees are walked in lockstep, one decision round at a
 * time, each decision voted over its shuffles. Results do not depend on which other units
 * are evaluated with them beyond floating-point batching effects: the batch plan of a chunk
 * is made from that chunk's prompts alone (as extract does), so a chunk's numbers are the
 * same after a crash and rerun. The scoring of the jobs (batched, shared-prefix, --cot) is in
 * src/eval/jobs.ts.
 */
import { LobesError } from '../util/errors.js';
import { gaeFields, randomWalkOutcome, type WorldTree } from '../data/socialeval-eval.js';
import type { PromptItem } from '../data/prompt.js';
import { itemRecord, shuffleRecord, skippedRecord, type ItemFacts } from './records.js';
import { optionOrders } from './score.js';
import type { EpisodeRecord, EvalRecord, ShuffleRecord } from './types.js';
import type { PromptStyle, Unit } from './units.js';
import { scoreClozeSteps, type ClozeStep } from './cloze.js';
import { scoreJobs, tooLong, type EvaluateContext, type Job, type Scored } from './jobs.js';

export { cotAnswer, cutAtAnswerKey, newStats, type EvalStats, type EvaluateContext } from './jobs.js';

/** The jobs of one item: one per shuffle. */
function itemJobs(item: PromptItem, style: PromptStyle, ctx: EvaluateContext): Job[] {
  return optionOrders(item.id, item.options.length, ctx.shuffles, ctx.seed, false, ctx.orders ?? 'random').map((order,
    s) => ({ item, order, style, where: `item ${item.id}, shuffle ${s}` })
  );
}

function shuffleRecords(jobs: Job[], scored: Scored[], at: number): ShuffleRecord[] {
  return jobs.map((j, s) => shuffleRecord(scored[at + s]!.rendered, j.order, scored[at + s]!.score));
}

/** A walker through one world tree. */
interface Walker {
  unit: number;
  tree: WorldTree;
  style: PromptStyle;
  path: string[];
  records: EvalRecord[];
  end: EpisodeRecord['end'] | null;
}

/** The facts of a GAE decision record. */
function stepFacts(t: WorldTree, cid: string, options: string[]): ItemFacts {
  return {
    id: `${t.stem}/gae/${cid}`,
    task: 'gae',
    language: t.language,
    ability: null,
    aspect: null,
    labels: { language: t.language, orientation: t.orientation, category: t.category, group: t.group },
    options,
    answer: null,
  };
}

/** The episode of a finished walk. */
function episodeOf(w: Walker): EpisodeRecord {
  const t = w.tree;
  const last = t.nodes.get(w.path[w.path.length - 1]!);
  const ga = w.end === 'ending' ? (last?.goalAchievement ?? null) : null;
  const rw = randomWalkOutcome(t);
  return {
    tree: t.stem,
    language: t.language,
    orientation: t.orientation,
    category: t.category,
    group: t.group,
    path: w.path,
    end: w.end!,
    goalAchievement: ga,
    success: ga === 2,
    chance: rw.ending > 0 ? rw.success / rw.ending : 0,
  };
}

/**
 * Letter scoring of decisions (items or GAE steps): each one's shuffles, skipped when too
 * long; records in step order. `onStep` is called as steps are done.
 */
async function letterSteps(steps: readonly ClozeStep[], ctx: EvaluateContext,
  onStep?: () => void): Promise<EvalRecord[]>
{
  const out: (EvalRecord | null)[] = steps.map(() => null);
  const groups: Job[][] = [];
  const owners: number[] = [];
  steps.forEach((s, i) => {
    const g = itemJobs(s.item, s.style, ctx);
    const why = tooLong(g, ctx);
    if (why) {
      out[i] = skippedRecord(s.facts, why);
      onStep?.();
      return;
    }
    groups.push(g);
    owners.push(i);
  });
  const scored = await scoreJobs(groups, ctx, onStep);
  let at = 0;
  groups.forEach((g, n) => {
    out[owners[n]!] = itemRecord(steps[owners[n]!]!.facts, shuffleRecords(g, scored, at));
    at += g.length;
  });
  return out.map((r) => r!);
}

/**
 * Evaluate units in order; returns their records (item records, then per tree its decision
 * records in order) and the GAE episodes, both in unit order.
 */
export async function evaluateUnits(units: readonly Unit[],
  ctx: EvaluateContext): Promise<{ records: EvalRecord[]; episodes: EpisodeRecord[] }>
{
  const perUnit: EvalRecord[][] = units.map(() => []);
  const decide = ctx.cloze
    ? (steps: ClozeStep[], onStep?: () => void) => scoreClozeSteps(steps, { ...ctx, cloze: ctx.cloze! }, onStep)
    : (steps: ClozeStep[], onStep?: () => void) => letterSteps(steps, ctx, onStep);
  // Items: all of them scored together, done as scored (one at a time) or all at once after batches.
  const itemIdx = units.flatMap((u, i) => (u.kind === 'item' ? [i] : []));
  const itemSteps = itemIdx.map((i) => {
    const u = units[i]! as Extract<Unit, { kind: 'item' }>;
    return { facts: u.facts, item: u.prompt, style: u.style };
  });
  let ticked = 0;
  const recs = await decide(itemSteps, () => {
    ticked++;
    ctx.onUnit?.();
  });
  for (; ticked < itemSteps.length; ticked++) ctx.onUnit?.();
  itemIdx.forEach((i, n) => perUnit[i]!.push(recs[n]!));
  // Trees: one decision round at a time across every tree of the chunk.
  const walkers: Walker[] = units.flatMap((u,
    i) => (u.kind === 'tree' ? [{ unit: i, tree: u.tree, style: u.style, path: ['0'], records: [], end: null }] : [])
  );
  for (;;) {
    const active: { w: Walker; item: PromptItem; next: string[]; step: ClozeStep }[] = [];
    for (const w of walkers) {
      if (w.end) continue;
      const cid = w.path[w.path.length - 1]!;
      const node = w.tree.nodes.get(cid);
      if (node?.type === 'ending') {
        w.end = 'ending';
        ctx.onUnit?.();
        continue;
      }
      if (!node || node.choices.length === 0) {
        w.end = 'stuck';
        ctx.onUnit?.();
        continue;
      }
      const g = gaeFields(w.tree, w.path);
      const item: PromptItem = { id: `${w.tree.stem}/gae/${cid}`, fields: g.fields, options: g.options };
      if (g.options.length < 2) {
        // A single choice is no decision: follow it without asking the model.
        w.path.push(g.next[0]!);
        continue;
      }
      active.push({ w, item, next: g.next,
        step: {
          facts: { ...stepFacts(w.tree, cid, item.options),
            gae: { tree: w.tree.stem, node: cid, depth: w.path.length - 1, next: g.next } },
          item,
          style: w.style,
        } });
    }
    if (active.length === 0) {
      if (walkers.every((w) => w.end)) break;
      continue;
    }
    const recs = await decide(active.map((a) => a.step));
    active.forEach((a, n) => {
      const rec = recs[n]!;
      const cid = a.w.path[a.w.path.length - 1]!;
      a.w.records.push(rec);
      if (rec.skipped) {
        a.w.end = 'skipped';
        ctx.onUnit?.();
        return;
      }
      const nxt = a.next[rec.vote]!;
      if (a.w.path.includes(nxt))
        throw new LobesError(`choice at node ${cid} leads back to node ${nxt} (the plot is not a tree)`, {
          file: a.w.tree.file,
        });
      a.w.path.push(nxt);
    });
  }
  for (const w of walkers) perUnit[w.unit]!.push(...w.records);
  return { records: perUnit.flat(), episodes: walkers.map(episodeOf) };
}
