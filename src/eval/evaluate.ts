/**
 * Evaluating units: every shuffle of every item is rendered, its answer slot found, and
 * scored (in batches planned by length, or one at a time after greedy chain-of-thought
 * generation with --cot N); GAE world trees are walked in lockstep, one decision round at a
 * time, each decision voted over its shuffles. Results do not depend on which other units
 * are evaluated with them beyond floating-point batching effects: the batch plan of a chunk
 * is made from that chunk's prompts alone (as extract does), so a chunk's numbers are the
 * same after a crash and rerun.
 */
import { LobesError, opt } from '../util/errors.js';
import { planBatches } from '../runtime/batching.js';
import { checkBatchMemory } from '../runtime/plan.js';
import { gaeFields, randomWalkOutcome, type WorldTree } from '../data/socialeval-eval.js';
import { renderPrompt, type PromptItem, type PromptPart, type RenderedPrompt } from '../data/prompt.js';
import { itemRecord, shuffleRecord, skippedRecord, type ItemFacts, type ShuffleScore } from './records.js';
import { optionOrders, type OrderMode } from './score.js';
import type { EpisodeRecord, EvalRecord, ShuffleRecord } from './types.js';
import type { Scorer, KvState, HeadOutput } from '../runtime/scorer.js';
import type { AnswerSlot, EvalTokenizer } from '../runtime/eval-tokenizer.js';
import type { PromptStyle, Unit } from './units.js';
import { scoreClozeSteps, type ClozeSettings, type ClozeStep, type MemoryCheck } from './cloze.js';

/** Throughput counters of an evaluation (this attempt). */
export interface EvalStats {
  prompts: number;
  /** Tokens the model read to score (prompts, and after --cot their reasoning and suffix). */
  promptTokens: number;
  /** Padded tokens of the scoring batches. */
  paddedTokens: number;
  /** Tokens the model computed (prompt tokens minus the shared prefixes computed once). */
  computedTokens: number;
  batches: number;
  scoreMs: number;
  generateMs: number;
  generated: number;
  /** Continuation tokens scored (cloze). */
  scoredTokens?: number;
}

export interface EvaluateContext {
  /** The letter scorer (null with cloze scoring). */
  scorer: Scorer | null;
  /** Cloze scoring (--scoring cloze): options as continuations, through the log-likelihood engine. */
  cloze?: ClozeSettings | null;
  tok: EvalTokenizer;
  shuffles: number;
  seed: number;
  /** How the option orders are drawn (default random). */
  orders?: OrderMode;
  /** Greedy reasoning tokens before the answer (0: none). */
  cot: number;
  batch: number | null;
  tokenBudget: number | null;
  /**
   * Score the shuffles of one item through the KV cache: the tokens they share (everything
   * before the options) are computed once, then each shuffle's own tokens. Needs a model
   * with KV-cache inputs; the numbers equal full-sequence scoring up to floating point.
   */
  sharePrefix: boolean;
  /** Items (and GAE decisions) whose prompt is longer than this many tokens are skipped (null: no limit). */
  maxTokens: number | null;
  stats: EvalStats;
  /** The device and its memory, for the memory plan checked before each chunk's batches run (none: unchecked). */
  memory?: MemoryCheck;
  /** Called after prompts are scored. */
  onScored?: (prompts: number, tokens: number) => void;
  /** Called when a unit (an item, or a world tree's walk) is done. */
  onUnit?: () => void;
}

/**
 * How reasoning meets the answer: generation stops once the model writes `key` (the JSON key
 * `"choice"` of SocialEval's answer format; otherwise the answer prefix itself, e.g.
 * "Answer:"); the reasoning before the key is kept and `cont` is added, so the letter follows
 * the same characters as without reasoning. When the model never writes the key, `forced` is
 * added after all of its reasoning.
 */
export function cotAnswer(answerPrefix: string): { key: string; cont: string; forced: string } {
  if (answerPrefix.startsWith('{"choice"'))
    return { key: '"choice"', cont: answerPrefix.slice(1), forced: '\n' + answerPrefix };
  return { key: answerPrefix.trim() || answerPrefix, cont: answerPrefix, forced: '\n' + answerPrefix };
}

export function newStats(): EvalStats {
  return { prompts: 0, promptTokens: 0, paddedTokens: 0, computedTokens: 0, batches: 0, scoreMs: 0, generateMs: 0,
    generated: 0 };
}

/** One prompt to score. */
interface Job {
  item: PromptItem;
  order: number[];
  style: PromptStyle;
  where: string;
  rendered?: RenderedPrompt;
  slot?: AnswerSlot;
  /** Tokens the job needs (jobTokens), once computed. */
  need?: number;
}

/** Scored result of a job. */
interface Scored {
  rendered: RenderedPrompt;
  score: ShuffleScore;
}

/** Render a job with its answer prefix and find its answer slot (once). */
function prepareSlot(j: Job, tok: EvalTokenizer): void {
  if (j.slot) return;
  j.rendered = prepare(j, tok, true);
  j.slot = tok.answerSlot(j.rendered.text, j.rendered.letters, j.where);
}

/**
 * Tokens one job needs, computed once: its prompt up to the answer slot; with --cot, the prompt
 * without the answer prefix, the reasoning budget and a short answer suffix.
 */
function jobTokens(j: Job, ctx: EvaluateContext): number {
  if (j.need === undefined) {
    if (ctx.cot > 0) j.need = ctx.tok.encode(prepare(j, ctx.tok, false).text).length + ctx.cot + COT_SUFFIX_ALLOWANCE;
    else {
      prepareSlot(j, ctx.tok);
      j.need = j.slot!.ids.length;
    }
  }
  return j.need;
}

/**
 * Why a group of jobs (the shuffles of one prompt) cannot be scored within ctx.maxTokens, or
 * null. With --cot the prompt, the reasoning budget and a short answer suffix must fit.
 */
function tooLong(group: Job[], ctx: EvaluateContext): string | null {
  if (ctx.maxTokens === null) return null;
  let longest = 0;
  for (const j of group) longest = Math.max(longest, jobTokens(j, ctx));
  if (longest <= ctx.maxTokens) return null;
  return ctx.cot > 0
    ? `the prompt and ${ctx.cot} reasoning tokens need ${longest} tokens; --skip-longer-than is ${ctx.maxTokens}`
    : `the prompt has ${longest} tokens; --skip-longer-than is ${ctx.maxTokens}`;
}

/** Tokens kept free after the reasoning for the answer suffix when checking --max-tokens with --cot. */
const COT_SUFFIX_ALLOWANCE = 16;

function prepare(job: Job, tok: EvalTokenizer, withPrefix: boolean): RenderedPrompt {
  return renderPrompt(job.item, job.order, { template: job.style.template, separator: job.style.separator,
    chat: tok.chat, answerPrefix: withPrefix ? job.style.answerPrefix : '' });
}

/** Score jobs without generation: batches of right-padded prompts, one candidate list per batch. */
async function scoreBatched(jobs: Job[], ctx: EvaluateContext): Promise<Scored[]> {
  const { tok, stats } = ctx;
  const scorer = ctx.scorer!;
  for (const j of jobs) prepareSlot(j, tok);
  const lengths = Int32Array.from(jobs, (j) => j.slot!.ids.length);
  const plan = planBatches(lengths, { batch: ctx.batch ?? undefined, tokenBudget: ctx.tokenBudget ?? undefined });
  const out: Scored[] = new Array(jobs.length);
  for (const b of plan) {
    const cols = new Map<number, number>();
    for (const i of b) for (const c of jobs[i]!.slot!.candidates) if (!cols.has(c)) cols.set(c, cols.size);
    const cands = [...cols.keys()];
    const t0 = performance.now();
    const h = await scorer.score(b.map((i) => jobs[i]!.slot!.ids), cands, tok.padId);
    stats.scoreMs += performance.now() - t0;
    stats.batches++;
    let longest = 0;
    let tokens = 0;
    b.forEach((i, r) => {
      const j = jobs[i]!;
      const s = j.slot!;
      longest = Math.max(longest, s.ids.length);
      tokens += s.ids.length;
      out[i] = {
        rendered: j.rendered!,
        score: {
          tokens: s.ids.length,
          letterTokenIds: s.candidates,
          continuations: s.continuations,
          answerAt: s.answerAt,
          logits: s.candidates.map((c) => h.cand[r * h.k + cols.get(c)!]!),
          logSumExp: h.lse[r]!,
          topTokenId: h.top[r]!,
        },
      };
    });
    stats.prompts += b.length;
    stats.promptTokens += tokens;
    stats.computedTokens += tokens;
    stats.paddedTokens += longest * b.length;
    ctx.onScored?.(b.length, tokens);
  }
  return out;
}

/**
 * Where to cut greedy reasoning that wrote the answer key: the longest run of generated
 * tokens whose text ends before the key, and the text between it and the key.
 */
export function cutAtAnswerKey(gen: number[], decode: (ids: number[]) => string, key: string): { kept: number;
  rest: string } | null
{
  const text = decode(gen);
  const p = text.indexOf(key);
  if (p < 0) return null;
  const before = text.slice(0, p);
  for (let j = gen.length; j >= 0; j--) {
    const t = decode(gen.slice(0, j));
    if (before.startsWith(t)) return { kept: j, rest: before.slice(t.length) };
  }
  return { kept: 0, rest: before };
}

/** Greedy reasoning (KV cache), then the answer suffix and the letter scores. */
async function scoreWithCot(job: Job, ctx: EvaluateContext): Promise<Scored> {
  const { tok, stats } = ctx;
  const scorer = ctx.scorer!;
  const base = prepare(job, tok, false);
  const ans = cotAnswer(job.style.answerPrefix);
  const ids0 = tok.encode(base.text);
  const t0 = performance.now();
  let { out, state } = await scorer.prefill(ids0, [0]);
  // The last few caches, to back up to where the answer key starts (at most a few tokens back).
  const ring: { at: number; state: KvState }[] = [{ at: 0, state }];
  const gen: number[] = [];
  let stop: 'answer' | 'eos' | 'budget' = 'budget';
  let cut: { kept: number; rest: string } | null = null;
  for (let step = 0; step < ctx.cot; step++) {
    const next = out.top[0]!;
    if (tok.eos.has(next)) {
      stop = 'eos';
      break;
    }
    gen.push(next);
    cut = cutAtAnswerKey(gen, tok.decode, ans.key);
    if (cut) {
      stop = 'answer';
      break;
    }
    if (step === ctx.cot - 1) break;
    ({ out, state } = await scorer.extend(state, [next], [0]));
    ring.push({ at: gen.length, state });
    if (ring.length > 4) ring.shift();
  }
  stats.generated += gen.length;
  const kept = cut ? cut.kept : gen.length;
  const keptText = tok.decode(gen.slice(0, kept));
  const suffix = cut ? cut.rest + ans.cont : ans.forced;
  const slot = tok.pieceSlot(suffix, base.letters, job.where);
  const from = [...ring].reverse().find((r) => r.at <= kept);
  let head: HeadOutput;
  if (from) head = (await scorer.extend(from.state, [...gen.slice(from.at, kept), ...slot.ids], slot.candidates)).out;
  else head = (await scorer.prefill([...ids0, ...gen.slice(0, kept), ...slot.ids], slot.candidates)).out;
  stats.generateMs += performance.now() - t0;
  const tokens = ids0.length + kept + slot.ids.length;
  stats.prompts++;
  stats.promptTokens += tokens;
  stats.computedTokens += tokens;
  ctx.onScored?.(1, tokens);
  const text = base.text + keptText + suffix;
  const parts: PromptPart[] = [...base.parts];
  if (keptText) parts.push({ name: 'reasoning', start: base.text.length, end: base.text.length + keptText.length });
  parts.push({ name: 'answer_prefix', start: base.text.length + keptText.length, end: text.length });
  return {
    rendered: { text, parts, letters: base.letters },
    score: {
      tokens,
      letterTokenIds: slot.candidates,
      continuations: slot.continuations,
      answerAt: base.text.length + keptText.length + slot.answerAt,
      logits: Array.from(head.cand),
      logSumExp: head.lse[0]!,
      topTokenId: head.top[0]!,
      cot: { generated: gen.length, ids: gen.slice(0, kept), text: keptText, suffix, forced: !cut, stop },
    },
  };
}

/** Score the jobs of one group (the shuffles of one prompt) through the KV cache, sharing their common tokens. */
async function scoreShared(jobs: Job[], ctx: EvaluateContext): Promise<Scored[]> {
  const { tok, stats } = ctx;
  const scorer = ctx.scorer!;
  for (const j of jobs) prepareSlot(j, tok);
  const seqs = jobs.map((j) => j.slot!.ids);
  let L = Math.min(...seqs.map((s) => s.length)) - 1;
  for (let i = 0; i < L; i++) {
    if (!seqs.every((s) => s[i] === seqs[0]![i])) {
      L = i;
      break;
    }
  }
  const t0 = performance.now();
  const base = L > 0 ? (await scorer.prefill(seqs[0]!.slice(0, L), [0])).state : null;
  const out: Scored[] = [];
  let computed = L;
  for (const j of jobs) {
    const s = j.slot!;
    const h = base
      ? (await scorer.extend(base, s.ids.slice(L), s.candidates)).out
      : (await scorer.prefill(s.ids, s.candidates)).out;
    computed += s.ids.length - L;
    out.push({
      rendered: j.rendered!,
      score: { tokens: s.ids.length, letterTokenIds: s.candidates, continuations: s.continuations, answerAt: s.answerAt,
        logits: Array.from(h.cand), logSumExp: h.lse[0]!, topTokenId: h.top[0]! },
    });
    stats.prompts++;
    stats.promptTokens += s.ids.length;
    ctx.onScored?.(1, s.ids.length);
  }
  stats.scoreMs += performance.now() - t0;
  stats.computedTokens += computed;
  return out;
}

/**
 * The memory plan of these jobs, checked before any runs (src/runtime/plan.ts): batched
 * scoring runs the batches scoreBatched plans; shared-prefix scoring and reasoning run one
 * sequence at a time (reasoning up to its prompt plus --cot tokens).
 */
function checkMemory(jobs: Job[], ctx: EvaluateContext): void {
  const arch = ctx.scorer?.info?.arch;
  if (!ctx.memory || !arch) return;
  const items = jobs.map((j) => ({ id: j.where, tokens: jobTokens(j, ctx) }));
  const batches = ctx.cot > 0 || ctx.sharePrefix
    ? items.map((_, i) => [i])
    : planBatches(Int32Array.from(items, (x) => x.tokens), { batch: ctx.batch ?? undefined,
      tokenBudget: ctx.tokenBudget ?? undefined });
  checkBatchMemory(batches, items, arch, { device: ctx.memory.device, limit: ctx.memory.limit, force: ctx.memory.force,
    say: ctx.memory.say,
    hint: `${opt('batch', 1)} or ${opt('tokenBudget', 'N')} makes batches smaller; ${
      opt('maxTokens', 'N')
    } skips longer prompts; ${opt('ignorePlan')} runs it anyway` });
}

/** Score groups of jobs (each group: the shuffles of one prompt); results in job order. */
async function scoreJobs(groups: Job[][], ctx: EvaluateContext, onGroup?: () => void): Promise<Scored[]> {
  const jobs = groups.flat();
  if (jobs.length === 0) return [];
  checkMemory(jobs, ctx);
  if (ctx.cot > 0) {
    const out: Scored[] = [];
    for (const g of groups) {
      for (const j of g) out.push(await scoreWithCot(j, ctx));
      onGroup?.();
    }
    return out;
  }
  if (!ctx.sharePrefix) return scoreBatched(jobs, ctx);
  const out: Scored[] = [];
  for (const g of groups) {
    out.push(...(await scoreShared(g, ctx)));
    onGroup?.();
  }
  return out;
}

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
