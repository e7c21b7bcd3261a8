/**
 * The question/response swap composition of `socialeval:` (`swap=SEED`): does a representation
 * of question + response follow the aspect the question names, or the aspect of the response?
 * In the published items both are the same aspect, so no analysis of them can tell. The swap
 * composition gives every response two texts:
 *
 *  - `own`: with its own question (the item as the paper reads it);
 *  - `swapped`: with the question of another item whose aspect is different.
 *
 * The pairing is seeded. For each response, in dataset order, the aspect of its swapped question
 * is drawn uniformly from the other aspects present, and the question is the next one of that
 * aspect's queue (the items of each aspect in a seeded shuffled order, taken in turn and
 * reshuffled when used up), so the questions of an aspect are used about equally often and the
 * question's aspect is about balanced within each response aspect. Each sample carries the
 * question's aspect and the response's aspect as labels (and whether it is swapped); the pairing
 * is in each sample's provenance (`question_from`) and summarised in the run manifest
 * (`dataset.composition`).
 *
 * Within the swapped samples the two labels are never equal. A state that encoded only the
 * response's aspect would therefore still predict the question's aspect above 1/K (by excluding
 * the response's aspect): `crossChance` describes that from the labels themselves. It is not a
 * test of either label; `lobes swap` tests each label beyond the other with a null that shuffles
 * it within the strata of the other (src/cluster/conditional.ts).
 */
import { UsageError } from '../util/errors.js';
import { Rng } from '../util/rng.js';
import { createHash } from 'node:crypto';
import { applyTemplate } from './template.js';
import type { Sample, SwapComposition } from './types.js';

export type { SwapComposition } from './types.js';

/** The label axes a swap composition adds. */
export const SWAP_AXES = ['question_aspect', 'response_aspect', 'question_ability', 'swapped'];

export const SWAP_PAIRING =
  'question aspect uniform over the other aspects; the questions of an aspect in seeded shuffled turns';

/** The SWAP=SEED value of a spec: a non-negative integer. */
export function swapSeed(raw: string, spec: string): number {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(raw.trim()) || Number(raw) > 2 ** 32 - 1)
    throw new UsageError(
      `dataset spec ${JSON.stringify(spec)}: swap=${JSON.stringify(raw)} is not a seed (an integer from 0 to 2^32 - 1)`,
      'e.g. swap=0',
    );
  return Number(raw);
}

/**
 * Compose the own and swapped samples of `items` (each with extras question, response and speaker,
 * and labels aspect and ability). `template` renders them (it must use {question} and {response});
 * `scenarioOf(id)` gives an item's scenario (the response's own scenario is kept). Samples come in
 * dataset order, own before swapped for each response.
 */
export function swapSamples(items: Sample[], template: string, scenarioOf: (id: string) => string, seed: number,
  spec: string): { samples: Sample[]; composition: SwapComposition }
{
  if (!template.includes('{question}') || !template.includes('{response}')) {
    throw new UsageError(
      `dataset spec ${JSON.stringify(spec)}: swap= pairs questions with responses, so the text must hold both`,
      'drop text=, or use a template with {question} and {response}',
    );
  }
  for (const s of items) {
    if (s.labels.aspect.includes(' + '))
      throw new UsageError(
        `dataset spec ${
          JSON.stringify(spec)
        }: swap= needs one aspect per item, and ${s.id} is composite (${s.labels.aspect})`,
        'drop composite=include',
      );
  }
  const aspects = [...new Set(items.map((s) => s.labels.aspect))].sort();
  if (aspects.length < 2)
    throw new UsageError(
      `dataset spec ${JSON.stringify(spec)}: swap= needs items of at least two aspects (these are all ${
        aspects[0] ?? 'none'
      })`,
      'drop the aspect= filter',
    );
  const rng = new Rng(seed);
  const byAspect = new Map(aspects.map((a) => [a, items.filter((s) => s.labels.aspect === a)]));
  const queues = new Map<string, { order: Sample[]; next: number }>(
    aspects.map((a) => [a, { order: rng.shuffle(byAspect.get(a)!.slice()), next: 0 }]),
  );
  const take = (a: string): Sample => {
    const q = queues.get(a)!;
    if (q.next === q.order.length) {
      q.order = rng.shuffle(q.order);
      q.next = 0;
    }
    return q.order[q.next++];
  };
  const samples: Sample[] = [];
  const pairs: string[] = [];
  for (const r of items) {
    const others = aspects.filter((a) => a !== r.labels.aspect);
    const q = take(others[rng.int(others.length)]);
    const ex = r.extras as { question: string; response: string; speaker: string };
    const qex = q.extras as { question: string };
    const make = (from: Sample, question: string, swapped: boolean): Sample => ({
      id: `${r.id}/${swapped ? 'swapped' : 'own'}`,
      text: applyTemplate(template, { question, response: ex.response, speaker: ex.speaker,
        scenario: scenarioOf(r.id) }),
      labels: {
        ...r.labels,
        question_aspect: from.labels.aspect,
        response_aspect: r.labels.aspect,
        question_ability: from.labels.ability,
        swapped: swapped ? 'swapped' : 'own',
      },
      provenance: { ...(r.provenance ?? {}), question_from: from.id },
      extras: { ...r.extras, question },
    });
    samples.push(make(r, ex.question, false), make(q, qex.question, true));
    pairs.push(`${r.id}\t${q.id}`);
  }
  const pairsSha256 = createHash('sha256').update(pairs.join('\n')).digest('hex');
  return { samples, composition: { kind: 'swap', seed, responses: items.length, pairing: SWAP_PAIRING, pairsSha256 } };
}

/**
 * The accuracy of the best prediction of label `a` from label `b` alone (Σ_b max_a n(a, b) / n):
 * what a probe of a state that encodes only `b` can reach on `a` (a description of the design,
 * not a test: a probe below it does not show `a` absent). Balanced accuracy likewise:
 * the mean over the classes of `a` of the recall of the best mapping b → a found by trying, for
 * each value of b, every class (exhaustive up to 10^6 mappings; beyond, the accuracy's mapping).
 */
export function crossChance(a: readonly string[],
  b: readonly string[]): { accuracy: number; balancedAccuracy: number }
{
  const A = [...new Set(a)].sort();
  const Bv = [...new Set(b)].sort();
  const n = a.length;
  const counts = Bv.map(() => new Float64Array(A.length));
  const ai = new Map(A.map((x, i) => [x, i]));
  const bi = new Map(Bv.map((x, i) => [x, i]));
  for (let t = 0; t < n; t++) counts[bi.get(b[t])!][ai.get(a[t])!]++;
  const classN = new Float64Array(A.length);
  for (const row of counts) row.forEach((c, j) => (classN[j] += c));
  let acc = 0;
  for (const row of counts) acc += Math.max(...row);
  // balanced accuracy: search every mapping from the values of b to classes of a when there are few
  let bestBal = 0;
  const total = A.length ** Bv.length;
  if (total <= 1e6) {
    const map = new Int32Array(Bv.length);
    for (let k = 0; k < total; k++) {
      let x = k;
      for (let j = 0; j < Bv.length; j++) {
        map[j] = x % A.length;
        x = Math.floor(x / A.length);
      }
      let bal = 0;
      for (let j = 0; j < Bv.length; j++) bal += classN[map[j]] ? counts[j][map[j]] / classN[map[j]] : 0;
      bestBal = Math.max(bestBal, bal / A.filter((_, c) => classN[c] > 0).length);
    }
  } else {
    const present = A.filter((_, c) => classN[c] > 0).length;
    for (const row of counts) {
      const c = row.indexOf(Math.max(...row));
      bestBal += row[c] / classN[c] / present;
    }
  }
  return { accuracy: n ? acc / n : 0, balancedAccuracy: bestBal };
}
