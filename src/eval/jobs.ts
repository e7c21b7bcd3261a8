/**
 * The scoring of jobs for src/eval/evaluate.ts: a job is one shuffle of one prompt; jobs are
 * scored in batches planned by length (right-padded, one candidate list per batch), through
 * the KV cache with the shared prefix of one item's shuffles, or one at a time after greedy
 * chain-of-thought generation (--cot N), with the --max-tokens and memory checks before they
 * run. Also the evaluation's context and throughput counters, and the answer suffix of --cot.
 */
import { opt } from '../util/errors.js';
import { planBatches } from '../runtime/batching.js';
import { checkBatchMemory } from '../runtime/plan.js';
import { renderPrompt, type PromptItem, type PromptPart, type RenderedPrompt } from '../data/prompt.js';
import type { ShuffleScore } from './records.js';
import type { OrderMode } from './score.js';
import type { Scorer, KvState, HeadOutput } from '../runtime/scorer.js';
import type { AnswerSlot, EvalTokenizer } from '../runtime/eval-tokenizer.js';
import type { PromptStyle } from './units.js';
import type { ClozeSettings, MemoryCheck } from './cloze.js';

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
export interface Job {
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
export interface Scored {
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
export function tooLong(group: Job[], ctx: EvaluateContext): string | null {
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
export async function scoreJobs(groups: Job[][], ctx: EvaluateContext, onGroup?: () => void): Promise<Scored[]> {
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
