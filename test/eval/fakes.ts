/**
 * Stand-ins for the tokenizer and the model, for evaluation tests that need to control what
 * the "model" answers: every prompt becomes one token that names it; the scorer hands the
 * prompt text and the item it belongs to (from the slot's `where`) to a policy that returns
 * the letter logits.
 */
import type { EvalTokenizer, AnswerSlot } from '../../src/runtime/eval-tokenizer.js';
import type { Scorer, HeadOutput, KvState } from '../../src/runtime/scorer.js';
import type { EvalDeps } from '../../src/eval/run.js';

/** What a policy sees: the prompt text, the item id and shuffle, the number of letters. */
export interface Seen {
  text: string;
  id: string;
  shuffle: number;
  k: number;
}

export type Policy = (p: Seen) => number[];

const CAND0 = 1000;

/** Fake deps: a one-token-per-prompt tokenizer and a scorer that asks `policy`. */
export function fakeEvalDeps(policy: Policy, opts: { delayMs?: number } = {}): Partial<EvalDeps> {
  const prompts: Seen[] = [];
  const tok: EvalTokenizer = {
    source: 'fake',
    chat: null,
    encode: (t) => Array.from(t.slice(0, 8), (c) => c.charCodeAt(0)),
    encodePiece: (t) => Array.from(t.slice(0, 8), (c) => c.charCodeAt(0)),
    decode: (ids) => String.fromCharCode(...ids),
    eos: new Set([0]),
    padId: 0,
    answerSlot(text: string, letters: string[], where: string): AnswerSlot {
      const m = /^item (.*), shuffle (\d+)$/.exec(where)!;
      prompts.push({ text, id: m[1]!, shuffle: Number(m[2]), k: letters.length });
      return { ids: [prompts.length - 1 + 1], candidates: letters.map((_, i) => CAND0 + i), continuations: letters,
        answerAt: text.length };
    },
    pieceSlot(): AnswerSlot {
      throw new Error('no generation in the fake tokenizer');
    },
  };
  const scorer: Scorer = {
    info: { dir: 'fake',
      arch: { family: 'fake', layers: 1, hidden: 1, intermediate: 1, heads: 1, kvHeads: 1, vocab: 2000, dtype: 'fp32',
        quantization: null } as any, points: [], providers: [], inputs: [] },
    hasPast: false,
    multiTokenExtend: false,
    async score(rows: number[][], candidates: number[]): Promise<HeadOutput> {
      if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
      const k = candidates.length;
      const cand = new Float32Array(rows.length * k);
      rows.forEach((r, b) => {
        const p = prompts[r[0]! - 1]!;
        const l = policy(p);
        candidates.forEach((c, j) => (cand[b * k + j] = c - CAND0 < l.length ? l[c - CAND0]! : -100));
      });
      return { cand, lse: new Float32Array(rows.length).fill(10), top: new Int32Array(rows.length).fill(CAND0), k };
    },
    async prefill(): Promise<{ out: HeadOutput; state: KvState }> {
      throw new Error('no KV cache in the fake scorer');
    },
    async extend(): Promise<{ out: HeadOutput; state: KvState }> {
      throw new Error('no KV cache in the fake scorer');
    },
    async close() {},
  };
  return { openScorer: async () => scorer, loadTokenizer: async () => tok };
}

/** Logits with 1 at `slot` and 0 elsewhere. */
export function oneHot(k: number, slot: number): number[] {
  return Array.from({ length: k }, (_, i) => (i === slot ? 1 : 0));
}

/** The slot of the option whose line `L{sep}{text}` is in the prompt's options. */
export function slotOf(text: string, option: string, sep: string, k: number): number {
  const hits: number[] = [];
  for (let i = 0; i < k; i++) {
    const line = `${String.fromCharCode(65 + i)}${sep}${option}`;
    if (text.includes(`\n${line}\n`)) hits.push(i);
  }
  if (hits.length !== 1) throw new Error(`option found at ${hits.length} slots`);
  return hits[0]!;
}
