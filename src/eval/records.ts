/**
 * Building records from the numbers the model returns: a shuffle's probabilities, letter
 * mass and pick; an item's vote and correctness (rules in score.ts).
 */
import type { CotRecord, EvalRecord, EvalTask, ShuffleRecord } from './types.js';
import type { RenderedPrompt } from '../data/prompt.js';
import { argmax, letterMass, softmax, vote } from './score.js';

/** The scored numbers of one prompt. */
export interface ShuffleScore {
  /** Tokens the model read before the answer. */
  tokens: number;
  letterTokenIds: number[];
  continuations: string[];
  answerAt: number;
  logits: ArrayLike<number>;
  logSumExp: number;
  topTokenId: number;
  cot?: CotRecord;
}

/** Round a float32 value to the shortest decimal that reads back as the same float32. */
export function f32(x: number): number {
  if (!Number.isFinite(x)) return x;
  const t = Math.fround(x);
  for (let p = 6; p <= 9; p++) {
    const s = Number(t.toPrecision(p));
    if (Math.fround(s) === t) return s;
  }
  return t;
}

/** One shuffle's record. Logits are stored as float32 values; probabilities from them. */
export function shuffleRecord(rendered: RenderedPrompt, order: number[], s: ShuffleScore): ShuffleRecord {
  const logits = Array.from(s.logits, f32);
  const lse = f32(s.logSumExp);
  const probs = softmax(logits);
  const rec: ShuffleRecord = {
    order,
    prompt: rendered.text,
    parts: rendered.parts,
    tokens: s.tokens,
    letters: rendered.letters,
    letterTokenIds: s.letterTokenIds,
    continuations: s.continuations,
    answerAt: s.answerAt,
    logits,
    probs,
    letterMass: letterMass(logits, lse),
    logSumExp: lse,
    topTokenId: s.topTokenId,
    pick: argmax(logits),
  };
  if (s.cot) rec.cot = s.cot;
  return rec;
}

/** What an item record is made of besides its shuffles. */
export interface ItemFacts {
  id: string;
  task: EvalTask;
  language: string | null;
  ability: string | null;
  aspect: string | null;
  labels: Record<string, string>;
  options: string[];
  answer: number | null;
  gae?: EvalRecord['gae'];
}

/** An item's record: its shuffles, the vote and whether the vote is the answer. */
export function itemRecord(f: ItemFacts, shuffles: ShuffleRecord[]): EvalRecord {
  const v = vote(shuffles, f.options.length);
  const rec: EvalRecord = {
    id: f.id,
    task: f.task,
    language: f.language,
    ability: f.ability,
    aspect: f.aspect,
    labels: f.labels,
    options: f.options,
    answer: f.answer,
    shuffles,
    vote: v,
    correct: f.answer === null ? null : v === f.answer,
  };
  if (f.gae) rec.gae = f.gae;
  return rec;
}

/** The record of an item that was not scored, and why. */
export function skippedRecord(f: ItemFacts, reason: string): EvalRecord {
  const rec: EvalRecord = { id: f.id, task: f.task, language: f.language, ability: f.ability, aspect: f.aspect,
    labels: f.labels, options: f.options, answer: f.answer, shuffles: [], vote: -1, correct: null, skipped: reason };
  if (f.gae) rec.gae = f.gae;
  return rec;
}
