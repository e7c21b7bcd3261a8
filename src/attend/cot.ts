/**
 * `lobes attend --cot N` (SocialEval App. C.4: attention while the model answers after its own
 * reasoning). For each item, the model first generates up to N tokens greedily through its KV
 * cache (eval's scorer, src/eval/engine.ts), after the IAE prompt that asks for an explanation
 * and a choice (the published `iae-cot` prompt, as `lobes eval --cot` renders it). Generation
 * stops at an end-of-turn token, at the budget, or once the model writes the answer key
 * (`"choice"`); then the answer cue is appended, exactly as `lobes eval --cot` appends it
 * (cotAnswer: the rest of `"choice": "` after the key, or `\n{"choice": "` when the model never
 * wrote it), and attention is read at the cue's last token, where the answer letter comes next.
 *
 * The reasoning is a function of the item and the model alone, so a chunk's records are the
 * same bytes after a resume or in a shard.
 */
import type { PromptPart } from './words.js';
import type { CotRecord } from '../eval/types.js';
import type { Scorer } from '../runtime/scorer.js';
import type { EvalTokenizer } from '../runtime/eval-tokenizer.js';
import { cotAnswer, cutAtAnswerKey } from '../eval/evaluate.js';

/** An item before its reasoning: the prompt that asks for reasoning (no answer prefix), its parts, letters and ids. */
export interface CotBase {
  text: string;
  parts: PromptPart[];
  letters: string[];
  ids: number[];
  /** The answer prefix whose key ends the reasoning (SocialEval: `{"choice": "`). */
  answerPrefix: string;
}

/** Tokens kept free after the reasoning budget for the answer cue in the context check. */
export const COT_CUE_ALLOWANCE = 16;

/**
 * Greedy generation: from `ids`, the argmax token at each step, fed back through the KV cache,
 * until an end-of-turn token (not kept), `budget` tokens, or `stop(generated)` says so.
 * Returns the generated ids.
 */
export async function greedy(scorer: Scorer, ids: number[], budget: number, eos: Set<number>,
  stop: (gen: number[]) => boolean = () => false): Promise<{ ids: number[]; end: 'eos' | 'budget' | 'stop' }>
{
  const gen: number[] = [];
  if (budget <= 0) return { ids: gen, end: 'budget' };
  let { out, state } = await scorer.prefill(ids, [0]);
  for (;;) {
    const next = out.top[0]!;
    if (eos.has(next)) return { ids: gen, end: 'eos' };
    gen.push(next);
    if (stop(gen)) return { ids: gen, end: 'stop' };
    if (gen.length >= budget) return { ids: gen, end: 'budget' };
    ({ out, state } = await scorer.extend(state, [next], [0]));
  }
}

/**
 * The reasoning and the answer cue of one item: the prompt the model read (base text, kept
 * reasoning, cue up to the letter), its parts and its token ids (base ids, kept reasoning ids,
 * the cue's ids before the letter), and the reasoning record.
 */
export async function reason(scorer: Scorer, tok: EvalTokenizer, base: CotBase, budget: number,
  where: string): Promise<{ prompt: string; parts: PromptPart[]; ids: number[]; reasoning: CotRecord }>
{
  const ans = cotAnswer(base.answerPrefix);
  let cut: { kept: number; rest: string } | null = null;
  const g = await greedy(scorer, base.ids, budget, tok.eos,
    (gen) => (cut = cutAtAnswerKey(gen, tok.decode, ans.key)) !== null);
  const gen = g.ids;
  const c = cut as { kept: number; rest: string } | null;
  const kept = c ? c.kept : gen.length;
  const keptText = tok.decode(gen.slice(0, kept));
  const suffix = c ? c.rest + ans.cont : ans.forced;
  const slot = tok.pieceSlot(suffix, base.letters, where);
  const at = base.text.length + keptText.length;
  const prompt = base.text + keptText + suffix.slice(0, slot.answerAt);
  const parts: PromptPart[] = [...base.parts];
  if (keptText) parts.push({ name: 'reasoning', start: base.text.length, end: at });
  if (slot.answerAt > 0) parts.push({ name: 'answer_prefix', start: at, end: prompt.length });
  const stop = g.end === 'stop' ? 'answer' : g.end;
  return { prompt, parts, ids: [...base.ids, ...gen.slice(0, kept), ...slot.ids],
    reasoning: { generated: gen.length, ids: gen.slice(0, kept), text: keptText, suffix, forced: !c, stop } };
}
