/**
 * Tests that close gaps found by planting bugs (mutation testing): each assertion fails under
 * the mutant named in its title.
 */
import { describe, it, expect } from 'vitest';
import { vote } from '../../src/eval/score.js';
import { accuracyOf, summarizeItems } from '../../src/eval/summary.js';
import { Rng } from '../../src/util/rng.js';
import type { EvalRecord } from '../../src/eval/types.js';

describe('mutants that earlier tests let live', () => {
  it('vote: a 1-1-1 tie goes to the larger summed probability, not to the first shuffle (mutant: tie-break ignored)', () => {
    // Three shuffles of three options, each picking another option once.
    const shuffles = [
      { order: [0, 1, 2], pick: 0, probs: [0.40, 0.25, 0.35] }, // picks option 0
      { order: [1, 2, 0], pick: 0, probs: [0.38, 0.34, 0.28] }, // picks option 1
      { order: [2, 0, 1], pick: 0, probs: [0.36, 0.30, 0.34] }, // picks option 2
    ];
    // Summed probability by option: 0: .40+.28+.30 = .98, 1: .25+.38+.34 = .97, 2: .35+.34+.36 = 1.05.
    expect(vote(shuffles, 3)).toBe(2);
  });

  it('the bootstrap interval is the 2.5th and 97.5th percentile of a resampled mean (mutant: 90% interval)', () => {
    const hits = Array.from({ length: 37 }, (_, i) => (i % 3 === 0 ? 1 : 0));
    const chance = hits.map(() => 0.25);
    const B = 400;
    const seed = 11;
    const acc = accuracyOf(hits, chance, B, seed);
    // The same random stream, written here: each resample draws n units with replacement.
    const rng = new Rng(seed);
    const means: number[] = [];
    for (let b = 0; b < B; b++) {
      const w = new Uint32Array(hits.length);
      for (let t = 0; t < hits.length; t++) w[rng.int(hits.length)]!++;
      let s = 0;
      for (let i = 0; i < hits.length; i++) s += w[i]! * hits[i]!;
      means.push(s / hits.length);
    }
    means.sort((a, b) => a - b);
    const q = (p: number) => {
      const pos = p * (means.length - 1);
      const lo = Math.floor(pos);
      return means[lo]! + (means[Math.min(lo + 1, means.length - 1)]! - means[lo]!) * (pos - lo);
    };
    expect(acc.bootstrap95![0]).toBeCloseTo(q(0.025), 12);
    expect(acc.bootstrap95![1]).toBeCloseTo(q(0.975), 12);
  });

  it('chance is the mean over the scored items only (mutant: skipped items counted)', () => {
    const rec = (id: string, k: number, correct: boolean, skipped?: string): EvalRecord =>
      ({
        id,
        task: 'mcq',
        language: null,
        ability: null,
        aspect: null,
        labels: {},
        options: Array.from({ length: k }, (_, i) => `o${i}`),
        answer: 0,
        shuffles: skipped
          ? []
          : [{ order: Array.from({ length: k }, (_, i) => i), pick: correct ? 0 : 1,
            probs: Array.from({ length: k }, () => 1 / k), letters: [], prompt: '', tokens: 1, logits: [],
            letterMass: 1, logSumExp: 0, topTokenId: 0 }],
        vote: skipped ? -1 : correct ? 0 : 1,
        correct: skipped ? null : correct,
        ...(skipped ? { skipped } : {}),
      }) as unknown as EvalRecord;
    const records = [rec('a', 4, true), rec('b', 4, false), rec('c', 4, false),
      rec('long', 2, false, 'the prompt has 9000 tokens; --skip-longer-than is 2048')];
    const s = summarizeItems(records, 'mcq', { bootstrap: 0 });
    expect(s.items).toBe(3);
    expect(s.skipped).toEqual(['long']);
    expect(s.overall.chance).toBe(0.25);
  });
});
