/**
 * Cloze scoring (--scoring cloze): every option's text is scored as a continuation of the
 * prompt, with lm-evaluation-harness's conventions (docs/eval.md, "Cloze scoring"):
 *
 * - context: the prompt rendered without its options. A template with {choices} (SocialEval's
 *   published prompts, or a --prompt that has one) is cut where the first option would start
 *   (the chat template's opening, when used, stays in front); a template without {choices} is
 *   rendered whole, with the chat template around it and the answer prefix after it;
 * - continuation: target delimiter + option text; the token split is lm-eval's
 *   (src/runtime/loglik.ts, splitContinuation);
 * - ll = Σ log p(continuation tokens | context); acc picks argmax ll; acc_norm argmax
 *   ll / characters of the option (Unicode code points, lm-eval's `len(choice)`); acc_bytes
 *   argmax ll / UTF-8 bytes of the option; acc_mutual_info argmax (ll − ll_uncond), where
 *   ll_uncond scores the same continuation after the prefix token alone. Ties go to the first
 *   option (numpy's argmax).
 */
import { LobesError, opt } from '../util/errors.js';
import { renderPrompt, type PromptItem } from '../data/prompt.js';
import { loglikMemoryPlan, splitContinuation, type LoglikEngine, type LoglikRequest } from '../runtime/loglik.js';
import { checkBatchMemory } from '../runtime/plan.js';
import type { Device } from '../runtime/types.js';
import { f32, skippedRecord, type ItemFacts } from './records.js';
import type { ClozeOption, ClozeRecord, EvalRecord } from './types.js';
import type { EvalTokenizer } from '../runtime/eval-tokenizer.js';
import type { PromptStyle } from './units.js';

export interface ClozeSettings {
  engine: LoglikEngine;
  /** Text between the context and each option (null: ' ' after a whole template, '' after a prompt cut at its options). */
  delimiter: string | null;
  mutualInfo: boolean;
}

/** One decision to score: an item or a GAE step. */
export interface ClozeStep {
  facts: ItemFacts;
  item: PromptItem;
  style: PromptStyle;
}

export interface ClozeContext {
  tok: EvalTokenizer;
  cloze: ClozeSettings;
  maxTokens: number | null;
  /** Counters to add to (the evaluation's EvalStats). */
  stats: { prompts: number; promptTokens: number; computedTokens: number; scoreMs: number; scoredTokens?: number };
  onScored?: (prompts: number, tokens: number) => void;
  /** Rows and padded tokens per batch, as given to the engine (the memory plan batches as it does). */
  batch?: number | null;
  tokenBudget?: number | null;
  /** The device and its memory, for the memory plan checked before the steps' requests run (none: unchecked). */
  memory?: MemoryCheck;
}

/** The memory plan's device, limit, and whether --ignore-plan runs a plan that does not fit (with a warning through `say`). */
export interface MemoryCheck {
  device: Device;
  limit?: number;
  force?: boolean;
  say?: (line: string) => void;
}

/**
 * The memory plan of cloze requests (src/runtime/plan.ts), checked before the engine runs
 * any: the rows it will run, batched as it batches them (loglikMemoryPlan).
 */
function checkClozeMemory(reqs: readonly LoglikRequest[], names: readonly string[], ctx: ClozeContext): void {
  const arch = ctx.cloze.engine.info?.arch;
  if (!ctx.memory || !arch || !reqs.length) return;
  const p = loglikMemoryPlan(reqs, { usesCache: ctx.cloze.engine.usesCache, batch: ctx.batch ?? undefined,
    tokenBudget: ctx.tokenBudget ?? undefined });
  const items = p.tokens.map((tokens, k) => ({ id: names[p.request[k]!]!, tokens }));
  checkBatchMemory(p.batches, items, arch, {
    device: ctx.memory.device,
    limit: ctx.memory.limit,
    force: ctx.memory.force,
    say: ctx.memory.say,
    hint: `${opt('batch', 1)} or ${opt('tokenBudget', 'N')} makes batches smaller; ${
      opt('maxTokens', 'N')
    } skips longer prompts; ${opt('ignorePlan')} runs it anyway`,
  });
}

/** The context text of a step and whether it was cut at the options. */
export function clozeContext(item: PromptItem, style: PromptStyle, tok: EvalTokenizer): { text: string; cut: boolean } {
  const identity = item.options.map((_, i) => i);
  if (style.template.includes('{choices}')) {
    const r = renderPrompt(item, identity, { template: style.template, separator: style.separator, chat: tok.chat,
      answerPrefix: '' });
    const first = r.parts.find((p) => p.name.startsWith('option:'));
    if (!first) throw new LobesError('the rendered prompt has no options', { where: `item ${item.id}` });
    return { text: r.text.slice(0, first.start), cut: true };
  }
  const r = renderPrompt(item, identity, { template: style.template, separator: style.separator, chat: tok.chat,
    answerPrefix: style.answerPrefix });
  return { text: r.text, cut: false };
}

/** UTF-8 bytes of a string. */
const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');
/** Unicode code points of a string (Python's len). */
const codePoints = (s: string) => [...s].length;

/** Index of the largest value, first on ties (NaN never wins). */
function firstMax(xs: readonly number[]): number {
  let b = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[b]!) b = i;
  return b;
}

/** The picks of a cloze record from its options' numbers (anyone can recompute them from the record). */
export function clozePicks(
  options: readonly Pick<ClozeOption, 'logprob' | 'chars' | 'bytes' | 'unconditional'>[],
): { pick: number; pickNorm: number; pickBytes: number; pickMutualInfo: number | null } {
  const ll = options.map((o) => o.logprob);
  const mi = options.every((o) => o.unconditional !== undefined)
    ? options.map((o) => o.logprob - o.unconditional!)
    : null;
  return {
    pick: firstMax(ll),
    pickNorm: firstMax(options.map((o) => o.logprob / o.chars)),
    pickBytes: firstMax(options.map((o) => o.logprob / o.bytes)),
    pickMutualInfo: mi ? firstMax(mi) : null,
  };
}

/** Score steps by cloze; records in step order (skipped steps have a reason and no scores). */
export async function scoreClozeSteps(steps: readonly ClozeStep[], ctx: ClozeContext,
  onStep?: () => void): Promise<EvalRecord[]>
{
  const { tok, cloze, stats } = ctx;
  const prefixId = tok.prefixId ?? null;
  if (cloze.mutualInfo && prefixId === null)
    throw new LobesError(
      `${opt('mutualInfo')} needs a BOS or EOS token to score options without a context, and the tokenizer has neither`,
    );
  const out: (EvalRecord | null)[] = steps.map(() => null);
  const reqs: LoglikRequest[] = [];
  const plan: { step: number; context: string; delimiter: string; contextTokens: number; conts: string[]; req: number;
    uncond: number | null }[] = [];
  const uncondReq: LoglikRequest | null = cloze.mutualInfo ? { context: [prefixId!], continuations: [] } : null;
  for (const [si, s] of steps.entries()) {
    if (s.item.options.length < 2)
      throw new LobesError(`item has ${s.item.options.length} option(s); multiple choice needs at least 2`, {
        where: `item ${s.item.id}`,
      });
    const empty = s.item.options.findIndex((o) => o.trim() === '');
    if (empty >= 0) {
      out[si] = skippedRecord(s.facts, `option ${empty} is empty, so cloze scoring has no text of it to score`);
      continue;
    }
    const c = clozeContext(s.item, s.style, tok);
    const delimiter = cloze.delimiter ?? (c.cut ? '' : ' ');
    const conts = s.item.options.map((o) => delimiter + o);
    const split = conts.map((x) => splitContinuation(tok, c.text, x, prefixId ?? 0));
    const ctxIds = split[0]!.context;
    split.forEach((p, j) => {
      if (p.context.length !== ctxIds.length || p.context.some((t, k) => t !== ctxIds[k]))
        throw new LobesError(`option ${j} changes how the context tokenizes`, { where: `item ${s.item.id}` });
      if (p.continuation.length === 0)
        throw new LobesError(
          `option ${j} (${JSON.stringify(s.item.options[j])}) has no tokens of its own after the context`,
          { where: `item ${s.item.id}` },
        );
    });
    if (ctxIds.length === 0)
      throw new LobesError('the context has no tokens', { where: `item ${s.item.id}`,
        hint: 'give a prompt template with text before the options' });
    const longest = ctxIds.length + Math.max(...split.map((p) => p.continuation.length));
    if (ctx.maxTokens !== null && longest > ctx.maxTokens) {
      const rec = skippedRecord(s.facts,
        `the context and its longest option have ${longest} tokens; --skip-longer-than is ${ctx.maxTokens}`);
      out[si] = rec;
      continue;
    }
    let uncond: number | null = null;
    if (uncondReq) {
      uncond = uncondReq.continuations.length;
      for (const [j, x] of conts.entries()) {
        const u = splitContinuation(tok, '', x, prefixId!);
        if (u.context[0] !== prefixId)
          throw new LobesError(
            `option ${j} (${
              JSON.stringify(s.item.options[j])
            }) starts with the prefix token, so it cannot be scored without a context`,
            { where: `item ${s.item.id}` },
          );
        if (u.continuation.length === 0)
          throw new LobesError(
            `option ${j} (${JSON.stringify(s.item.options[j])}) has no tokens of its own without a context`,
            { where: `item ${s.item.id}` },
          );
        uncondReq.continuations.push(u.continuation);
      }
    }
    plan.push({ step: si, context: c.text, delimiter, contextTokens: ctxIds.length, conts, req: reqs.length, uncond });
    reqs.push({ context: ctxIds, continuations: split.map((p) => p.continuation) });
  }
  const t0 = performance.now();
  const before = cloze.engine.stats.computedTokens;
  const all = uncondReq && uncondReq.continuations.length ? [...reqs, uncondReq] : reqs;
  checkClozeMemory(all, [...plan.map((p) => steps[p.step]!.item.id), 'the options without a context (--mutual-info)'],
    ctx);
  // An item is done once its own options are scored (the shared no-context request of
  // --mutual-info is not waited for): tick it then, not when the whole call returns.
  const left = all.map((r) => r.continuations.length);
  const stepOf = new Map(plan.map((p) => [p.req, p.step]));
  const ticked = new Set<number>();
  const scored = await cloze.engine.score(all, (k, d) => {
    ctx.onScored?.(k, d.tokens);
    for (const r of d.requests) {
      if (--left[r]! !== 0 || !stepOf.has(r)) continue;
      ticked.add(stepOf.get(r)!);
      onStep?.();
    }
  });
  stats.scoreMs += performance.now() - t0;
  stats.computedTokens += cloze.engine.stats.computedTokens - before;
  const uncondScores = uncondReq && uncondReq.continuations.length ? scored[reqs.length]! : [];
  for (const p of plan) {
    const s = steps[p.step]!;
    const got = scored[p.req]!;
    const options: ClozeOption[] = got.map((g, j) => {
      const o: ClozeOption = { text: p.conts[j]!, logprob: g.logprob, tokens: g.tokens,
        chars: codePoints(s.item.options[j]!), bytes: utf8Bytes(s.item.options[j]!), greedy: g.greedy,
        tokenLogprobs: Array.from(g.tokenLogprobs, f32) };
      if (p.uncond !== null) o.unconditional = uncondScores[p.uncond + j]!.logprob;
      return o;
    });
    const picks = clozePicks(options);
    const rec: ClozeRecord = { context: p.context, contextTokens: p.contextTokens, delimiter: p.delimiter, options,
      ...picks };
    const er: EvalRecord = {
      id: s.facts.id,
      task: s.facts.task,
      language: s.facts.language,
      ability: s.facts.ability,
      aspect: s.facts.aspect,
      labels: s.facts.labels,
      options: s.facts.options,
      answer: s.facts.answer,
      shuffles: [],
      vote: picks.pick,
      correct: s.facts.answer === null ? null : picks.pick === s.facts.answer,
      cloze: rec,
    };
    if (s.facts.gae) er.gae = s.facts.gae;
    out[p.step] = er;
    stats.prompts += got.length;
    const toks = got.reduce((a, g) => a + g.tokens, 0);
    stats.promptTokens += p.contextTokens * got.length + toks;
    stats.scoredTokens = (stats.scoredTokens ?? 0) + toks;
  }
  // skipped steps (and any the engine did not report) are done now
  for (let i = 0; i < steps.length; i++) if (!ticked.has(i)) onStep?.();
  return out.map((r) => r!);
}
