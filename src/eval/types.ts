/**
 * The evaluation records (DIR/records.jsonl, one item per line, in dataset order) and the
 * per-tree GAE episodes (DIR/episodes.jsonl). A record holds everything needed to recompute
 * its score: the prompt exactly as tokenized, the candidate tokens, their logits, the picks
 * and the vote (docs/eval.md, "Records").
 */
import type { PromptPart } from '../data/prompt.js';

export type { PromptPart, RenderedPrompt } from '../data/prompt.js';

export type EvalTask = 'iae' | 'gae' | 'mcq';

/** One presentation of an item: its options in one order, and what the model made of it. */
export interface ShuffleRecord {
  /** order[slot] = index into the record's `options` shown at letter slot. */
  order: number[];
  /** RenderedPrompt.text exactly as tokenized (chat template and answer prefix included). */
  prompt: string;
  /** Named spans of `prompt` (they tile it). */
  parts: PromptPart[];
  /** Tokens the model read before the answer (the scored position is the last of them). */
  tokens: number;
  letters: string[];
  /** Token id scored for each slot's letter. */
  letterTokenIds: number[];
  /** The text each candidate token stands for: the letter, or the prompt's last characters and the letter when the tokenizer merges them (see answerAt). */
  continuations: string[];
  /**
   * Character offset in `prompt` where the scored continuation starts: prompt.length when the
   * letter is its own token after the prompt; smaller when the tokenizer writes the prompt's
   * last characters and the letter as one token (the model then reads the prompt up to here).
   */
  answerAt: number;
  /** lm_head logits of the candidate tokens at the answering position, per slot. */
  logits: number[];
  /** Softmax over the letters (per slot). */
  probs: number[];
  /** Probability of all letters together under the full-vocabulary softmax. */
  letterMass: number;
  /** Full-vocabulary log-sum-exp of the logits at the answering position. */
  logSumExp: number;
  /** The most likely next token over the whole vocabulary. */
  topTokenId: number;
  /** Slot picked (highest logit; ties to the lower slot). */
  pick: number;
  /** With --cot N: the generated reasoning and how the answer slot was reached. */
  cot?: CotRecord;
}

export interface CotRecord {
  /** Tokens generated (greedy) before the answer. */
  generated: number;
  /** The generated token ids kept before the answer suffix (the model read prompt + these + the suffix). */
  ids: number[];
  /** The generated text kept before the answer suffix. */
  text: string;
  /** Text lobes added before the letter (empty when the model wrote the answer prefix itself). */
  suffix: string;
  /** True when the model did not write the answer key itself within the budget. */
  forced: boolean;
  /** Why generation stopped: 'answer' (wrote the answer key), 'eos', or 'budget'. */
  stop: 'answer' | 'eos' | 'budget';
}

/** One evaluated item (IAE skill choice, GAE decision step, or a generic multiple-choice item). */
export interface EvalRecord {
  id: string;
  task: EvalTask;
  language: string | null;
  /** BESSI ability ('A + B' for composite items), or null. */
  ability: string | null;
  aspect: string | null;
  /** Every label axis of the item (ability, aspect, language, orientation, user labels). */
  labels: Record<string, string>;
  /** Option texts in the dataset's order. */
  options: string[];
  /** Index into `options` of the correct one (null for GAE steps, which have none). */
  answer: number | null;
  shuffles: ShuffleRecord[];
  /** Index into `options` chosen by the vote (-1 when the item was skipped). */
  vote: number;
  correct: boolean | null;
  /** Why the item was not scored (its prompt is longer than --max-tokens); it then has no shuffles. */
  skipped?: string;
  /** With --scoring cloze: every option scored as a continuation of the context (then `shuffles` is empty and `vote` is the acc pick). */
  cloze?: ClozeRecord;
  /** GAE steps: the tree, the node, and the node each option leads to. */
  gae?: { tree: string; node: string; depth: number; next: string[] };
}

/** One option scored as a continuation (--scoring cloze). */
export interface ClozeOption {
  /** The continuation scored: the target delimiter and the option's text. */
  text: string;
  /** Σ log p(token | context, earlier tokens) over the continuation's tokens. */
  logprob: number;
  /** Continuation tokens (after lm-eval's split). */
  tokens: number;
  /** Unicode code points of the option's text (acc_norm's length; the delimiter is not counted). */
  chars: number;
  /** UTF-8 bytes of the option's text (acc_bytes' length). */
  bytes: number;
  /** Every continuation token is the model's argmax. */
  greedy: boolean;
  /** Per-token log-probabilities (float32). */
  tokenLogprobs: number[];
  /** With --mutual-info: the same continuation's log-likelihood after the prefix token alone. */
  unconditional?: number;
}

/** What cloze scoring made of one item. */
export interface ClozeRecord {
  /** The context text exactly as tokenized (before lm-eval moves its trailing whitespace into the continuation). */
  context: string;
  contextTokens: number;
  delimiter: string;
  /** Per option, in the dataset's order. */
  options: ClozeOption[];
  /** argmax logprob (acc). */
  pick: number;
  /** argmax logprob / chars (acc_norm). */
  pickNorm: number;
  /** argmax logprob / bytes (acc_bytes). */
  pickBytes: number;
  /** argmax (logprob − unconditional) (acc_mutual_info), null without --mutual-info. */
  pickMutualInfo: number | null;
}

/** One GAE episode: the protagonist's walk through one world tree. */
export interface EpisodeRecord {
  tree: string;
  language: string | null;
  /** `[self,altruism]` orientation of the protagonist. */
  orientation: string;
  /** Sub-orientation (Cooperation, …) and major orientation (Prosocial, …). */
  category: string;
  group: string;
  /** Node ids visited, from the beginning to the last. */
  path: string[];
  /**
   * How the walk ended: at an ending; stuck at a node without choices or a missing node; or
   * skipped at a decision whose prompt is longer than --max-tokens.
   */
  end: 'ending' | 'stuck' | 'skipped';
  /** The ending's "goal achievement" (0, 1, 2; null when the file gives none). */
  goalAchievement: number | null;
  /** goal achievement == 2, as SocialEval's run_gae.py counts success. */
  success: boolean;
  /** Probability that uniformly random choices reach a successful ending (the tree's chance level). */
  chance: number;
}
