/**
 * Accuracy tables on hand-made records: micro and macro averages computed by hand, composite
 * items credited to each of their abilities, chance levels, the position bias, and the
 * bootstrap interval against the normal approximation; GAE: stuck walks left out, the
 * macro over categories.
 */
import { describe, it, expect } from 'vitest';
import { summarize, accuracyOf, macroAccuracy } from '../../src/eval/summary.js';
import type { EvalRecord, EpisodeRecord } from '../../src/eval/types.js';

function rec(id: string, ability: string, aspect: string, language: string, k: number, picks: number[][],
  answer = 0): EvalRecord
{
  // picks: per shuffle [order..., pick] – order as given, pick the last element.
  const shuffles = picks.map((p) => {
    const order = p.slice(0, k);
    const pick = p[k]!;
    const logits = order.map((_, s) => (s === pick ? 1 : 0));
    return { order, prompt: '', parts: [], tokens: 1, letters: [], letterTokenIds: [], continuations: [], answerAt: 0,
      logits, probs: [], letterMass: 0.5, logSumExp: 0, topTokenId: 0, pick };
  });
  const counts = new Map<number, number>();
  for (const s of shuffles) counts.set(s.order[s.pick]!, (counts.get(s.order[s.pick]!) ?? 0) + 1);
  const vote = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  return { id, task: 'iae', language, ability, aspect, labels: {},
    options: Array.from({ length: k }, (_, i) => `o${i}`), answer, shuffles, vote, correct: vote === answer };
}

describe('IAE summary', () => {
  // a1: 2 items (1 right), a2: 1 item (right), composite a1 + a3 (wrong); k = 4 except one k = 2.
  const rs = [
    rec('i1', 'Teamwork Skill', 'Cooperation', 'en', 4, [[0, 1, 2, 3, 0], [1, 0, 2, 3, 1], [2, 3, 0, 1, 2]]),
    rec('i2', 'Teamwork Skill', 'Cooperation', 'zh', 4, [[0, 1, 2, 3, 1], [1, 0, 2, 3, 0], [3, 2, 1, 0, 0]]),
    rec('i3', 'Stress Regulation', 'Emotional Resilience', 'en', 2, [[1, 0, 1], [0, 1, 0], [0, 1, 0]]),
    rec('i4', 'Creative Skill + Teamwork Skill', 'Innovation + Cooperation', 'en', 4, [[3, 2, 1, 0, 0], [1, 3, 2, 0, 1],
      [2, 0, 1, 3, 3]]),
  ];
  const s = summarize(rs, [], { bootstrap: 300, seed: 1 }).iae!;

  it('micro, macro over abilities (composites count toward each), unvoted, chance', () => {
    expect(rs.map((r) => r.correct)).toEqual([true, false, true, false]);
    expect(s.overall.accuracy).toBe(0.5);
    expect(s.overall.chance).toBeCloseTo((0.25 + 0.25 + 0.5 + 0.25) / 4, 12);
    // Abilities: Teamwork {i1 ✓, i2 ✗, i4 ✗} = 1/3, Stress {i3 ✓} = 1, Creative {i4 ✗} = 0.
    // Cells of 1-3 items: the summary gives no mean over abilities and says why; the mean itself:
    expect(s.macro).toBeNull();
    expect(s.macroOmitted).toContain(
      'no mean over abilities: 3 have fewer than 10 items (Creative Skill (1), Stress Regulation (1), Teamwork Skill (3))',
    );
    const abil = rs.map((r) => r.ability!.split(' + '));
    const macro = macroAccuracy([1, 0, 1, 0], [0.25, 0.25, 0.5, 0.25], abil, 100, 0);
    expect(macro.accuracy).toBeCloseTo((1 / 3 + 1 + 0) / 3, 12);
    expect(macro.chance).toBeCloseTo((0.25 + 0.5 + 0.25) / 3, 12);
    const ab = Object.fromEntries(s.tables.find((t) => t.by === 'ability')!.rows.map((r) => [r.key, [r.n, r.correct]]));
    expect(ab).toEqual({ 'Creative Skill': [1, 0], 'Stress Regulation': [1, 1], 'Teamwork Skill': [3, 1] });
    const asp = Object.fromEntries(s.tables.find((t) => t.by === 'aspect')!.rows.map((r) => [r.key, [r.n, r.correct]]));
    expect(asp).toEqual({ Cooperation: [3, 1], 'Emotional Resilience': [1, 1], Innovation: [1, 0] });
    expect(s.macroByLanguage).toEqual({});
    expect(macroAccuracy([1, 1, 0], [0.25, 0.5, 0.25], [abil[0]!, abil[2]!, abil[3]!], 100, 0).accuracy).toBeCloseTo(
      (1 / 2 + 1 + 0) / 3,
      12,
    );
    // Single shuffles (order[pick]): i1 0, 0, 0 → 3/3; i2 1, 1, 3 → 0/3; i3 0, 0, 0 → 3/3; i4 3, 3, 3 → 0/3.
    expect(s.unvoted.correct).toBe(6);
    expect(s.unvoted.n).toBe(12);
    expect(s.unvoted.accuracy).toBeCloseTo(0.5, 12);
  });

  it('position bias per number of options', () => {
    const b4 = s.positionBias.find((b) => b.k === 4)!;
    expect(b4.prompts).toBe(9);
    // Picks: i1 slots 0, 1, 2; i2 1, 0, 0; i4 0, 1, 3.
    expect(b4.pickRate).toEqual([4 / 9, 3 / 9, 1 / 9, 1 / 9]);
    // The answer (option 0) sits at: i1 slots 0,1,2; i2 0,1,3; i4 3,3,1.
    expect(b4.answerRate).toEqual([2 / 9, 3 / 9, 1 / 9, 3 / 9]);
  });

  it('bootstrap CI of an accuracy is close to the normal approximation', () => {
    const n = 400;
    const hits = Array.from({ length: n }, (_, i) => (i % 10 < 3 ? 1 : 0));
    const a = accuracyOf(hits, new Array(n).fill(0.25), 4000, 3);
    const se = Math.sqrt((0.3 * 0.7) / n);
    expect(a.accuracy).toBeCloseTo(0.3, 12);
    expect(Math.abs(a.bootstrap95![0] - (0.3 - 1.96 * se))).toBeLessThan(0.01);
    expect(Math.abs(a.bootstrap95![1] - (0.3 + 1.96 * se))).toBeLessThan(0.01);
    // The reported interval of a count is Clopper–Pearson: at n = 400 close to the normal one too.
    expect(a.ciMethod).toBe('clopper-pearson');
    expect(Math.abs(a.ci95![0] - (0.3 - 1.96 * se))).toBeLessThan(0.01);
    // 3 of 3: the bootstrap collapses to [1, 1]; the exact interval does not (lower end 0.025^(1/3)).
    const all = accuracyOf([1, 1, 1], [0.5, 0.5, 0.5], 100, 0);
    expect(all.bootstrap95).toEqual([1, 1]);
    expect(all.ci95![0]).toBeCloseTo(0.025 ** (1 / 3), 9);
    expect(all.ci95![1]).toBe(1);
    expect(all.pChance).toBeCloseTo(0.125, 12);
    const m = macroAccuracy([1, 0, 1, 1], [0.25, 0.25, 0.5, 0.5], [['a'], ['a'], ['b'], ['a', 'b']], 100, 0);
    expect(m.accuracy).toBeCloseTo((2 / 3 + 1) / 2, 12);
  });
});

describe('GAE summary', () => {
  const ep = (tree: string, category: string, group: string, success: boolean, end: 'ending' | 'stuck' = 'ending',
    chance = 0.2): EpisodeRecord => ({
      tree,
      language: 'en',
      orientation: '',
      category,
      group,
      path: ['0'],
      end,
      goalAchievement: success ? 2 : 0,
      success,
      chance,
    });
  const eps = [ep('t1', 'Cooperation', 'Prosocial', true), ep('t2', 'Cooperation', 'Prosocial', false),
    ep('t3', 'Conflict', 'Antisocial', true, 'ending', 0.1), ep('t4', 'Conflict', 'Antisocial', false, 'stuck')];
  const s = summarize([], eps, { bootstrap: 100 }).gae!;
  it('success over walks that reached an ending; macro over categories; chance', () => {
    expect(s.ended).toBe(3);
    expect(s.stuck).toEqual(['t4']);
    expect(s.overall.accuracy).toBeCloseTo(2 / 3, 12);
    // Categories of 1 and 2 trees: no mean over categories, and the summary says why.
    expect(s.macro).toBeNull();
    expect(s.macroOmitted).toMatch(
      /no mean over world categories: 2 have fewer than 10 items \(Conflict \(1\), Cooperation \(2\)\)/,
    );
    expect(macroAccuracy([1, 0, 1], [0.2, 0.2, 0.1], [['Cooperation'], ['Cooperation'], ['Conflict']], 100, 0).accuracy)
      .toBeCloseTo((0.5 + 1) / 2, 12);
    expect(s.overall.chance).toBeCloseTo((0.2 + 0.2 + 0.1) / 3, 12);
    // Exact test against each tree's own chance: P(at least 2 of 3 succeed), enumerated here.
    const ps = [0.2, 0.2, 0.1];
    let tail = 0;
    for (let mask = 0; mask < 8; mask++) {
      const k = [0, 1, 2].filter((i) => mask & (1 << i)).length;
      if (k >= 2) tail += ps.reduce((a, p, i) => a * (mask & (1 << i) ? p : 1 - p), 1);
    }
    expect(s.overall.pChance).toBeCloseTo(tail, 14);
    // Clopper–Pearson for 2 of 3 (lower end: P(X ≥ 2 | p) = 0.025; upper: P(X ≤ 2 | p) = 1 − p³ = 0.025).
    expect(s.overall.ci95![1]).toBeCloseTo(0.975 ** (1 / 3), 9);
    const lo = s.overall.ci95![0];
    expect(3 * lo * lo * (1 - lo) + lo ** 3).toBeCloseTo(0.025, 9);
    expect(s.tables.find((t) => t.by === 'group')!.rows.map((r) => [r.key, r.n, r.correct])).toEqual([
      ['Antisocial', 1, 1],
      ['Prosocial', 2, 1],
    ]);
  });
});
