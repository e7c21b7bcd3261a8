/**
 * Is there a signal under a model's letter-slot preference? From an evaluation's records alone:
 *
 *  - the probability the model gives the correct option, averaged over its shuffles (chance 1/k);
 *  - the accuracy after removing the model's average preference for each slot: the mean logit
 *    of each slot over all prompts with k options (estimated without the answers) is subtracted
 *    before the pick and the vote;
 *
 * each with a bootstrap 95% CI over items.
 *
 *   npx tsx bench/eval-debias.ts EVAL_DIR [EVAL_DIR...]
 */
import { readEvalResults } from '../src/eval/run.js';
import { accuracyOf } from '../src/eval/summary.js';
import { argmax, softmax, vote } from '../src/eval/score.js';
import type { EvalRecord } from '../src/eval/types.js';

function analyse(dir: string): void {
  const { records } = readEvalResults(dir);
  const items = records.filter((r): r is EvalRecord & { answer: number } => r.answer !== null);
  if (!items.length) {
    console.log(`${dir}: no items with an answer`);
    return;
  }
  // Mean logit per slot, per number of options.
  const prior = new Map<number, number[]>();
  const counts = new Map<number, number>();
  for (const r of items) {
    const k = r.options.length;
    const p = prior.get(k) ?? new Array(k).fill(0);
    for (const s of r.shuffles) s.logits.forEach((x, i) => (p[i] += x));
    prior.set(k, p);
    counts.set(k, (counts.get(k) ?? 0) + r.shuffles.length);
  }
  for (const [k, p] of prior) prior.set(k, p.map((x) => x / counts.get(k)!));
  const pCorrect: number[] = [];
  const debiased: number[] = [];
  const chance = items.map((r) => 1 / r.options.length);
  for (const r of items) {
    const pr = prior.get(r.options.length)!;
    pCorrect.push(r.shuffles.reduce((a, s) => a + s.probs[s.order.indexOf(r.answer)]!, 0) / r.shuffles.length);
    const sh = r.shuffles.map((s) => {
      const l = s.logits.map((x, i) => x - pr[i]!);
      return { order: s.order, pick: argmax(l), probs: softmax(l) };
    });
    debiased.push(vote(sh, r.options.length) === r.answer ? 1 : 0);
  }
  const fmt = (a: ReturnType<typeof accuracyOf>) =>
    `${(100 * a.accuracy).toFixed(1)}% [${(100 * a.ci95![0]).toFixed(1)}, ${(100 * a.ci95![1]).toFixed(1)}] (chance ${
      (100 * a.chance).toFixed(1)
    }%)`;
  console.log(`${dir}: ${items.length} items`);
  console.log(
    `  slot prior (mean logit per slot): ${
      [...prior].map(([k, p]) => `k=${k}: ${p.map((x) => x.toFixed(2)).join(', ')}`).join('; ')
    }`,
  );
  console.log(`  probability of the correct option, mean over shuffles: ${fmt(accuracyOf(pCorrect, chance, 2000, 0))}`);
  console.log(`  voted accuracy with the slot prior removed: ${fmt(accuracyOf(debiased, chance, 2000, 0))}`);
}

for (const d of process.argv.slice(2)) analyse(d);
