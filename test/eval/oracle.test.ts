/**
 * Oracle scorers on the real SocialEval items: what each must score is known without lobes.
 *  - always the correct letter: 100% on every slice, before and after the vote;
 *  - always slot A: each shuffle is right when the answer was shuffled into slot A, so the
 *    accuracy before voting is the chance 1/k up to sampling error; after 3 shuffles the vote
 *    is a symmetric function of three independent uniform picks (majority, ties to the first
 *    shuffle's pick), so it is right with probability exactly 1/k (e.g. k = 4: 1/64 for three
 *    picks of the answer + 9/64 for two + 6/64 for three different picks led by the answer
 *    = 16/64); and every vote equals that rule recomputed here;
 *  - random logits: accuracy within its bootstrap CI of chance;
 *  - GAE, a goal-seeking walker that knows the tree: it succeeds exactly on the trees with a
 *    reachable successful ending (computed here by its own recursion).
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { loadSocialEvalBench, gaeFields, type WorldTree } from '../../src/data/socialeval-eval.js';
import { fakeEvalDeps, oneHot, slotOf, type Policy } from './fakes.js';
import { Rng } from '../../src/util/rng.js';
import { optionOrders } from '../../src/eval/score.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const MODEL = path.resolve(__dirname, '../../models/tiny-llama');
const have = existsSync(DATA);
if (!have) console.warn(`test/eval/oracle: skipped: ${DATA} is absent`);

describe.skipIf(!have)('oracle scorers on SocialEval', () => {
  const bench = have ? loadSocialEvalBench(`socialeval:${DATA}?lang=en`, { iae: true, gae: true }) : null;
  const correct = new Map(bench?.iae.map((x) => [x.id, x.options[0]!]) ?? []);
  const trees = new Map(bench?.gae.map((t) => [t.stem, t]) ?? []);
  const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-eval-oracle-'));

  async function evaluate(name: string, policy: Policy, task: 'iae' | 'gae', limit: number | null = null) {
    const out = path.join(tmp, name);
    await runEval({ model: MODEL, data: `socialeval:${DATA}?lang=en`, out, task, limit, quiet: true, bootstrap: 500,
      deps: fakeEvalDeps(policy) });
    return readEvalResults(out);
  }

  let always: Awaited<ReturnType<typeof evaluate>>;
  let slotA: Awaited<ReturnType<typeof evaluate>>;
  beforeAll(async () => {
    always = await evaluate('correct', (p) => oneHot(p.k, slotOf(p.text, correct.get(p.id)!, '. ', p.k)), 'iae');
    slotA = await evaluate('slotA', (p) => oneHot(p.k, 0), 'iae');
  }, 300_000);

  it('always correct: 100% on every slice', () => {
    const s = always.summary.iae!;
    expect(s.items).toBe(bench!.iae.length);
    expect(s.overall.accuracy).toBe(1);
    // SocialEval's abilities include cells under 10 items: no mean over abilities, and the summary names them.
    const small = s.tables.find((t) => t.by === 'ability')!.rows.filter((r) => r.n < 10);
    if (small.length) {
      expect(s.macro).toBeNull();
      expect(s.macroOmitted).toContain(
        `no mean over abilities: ${small.length} ${small.length > 1 ? 'have' : 'has'} fewer than 10 items`,
      );
    } else expect(s.macro!.accuracy).toBe(1);
    // 100% correct: the exact interval's lower end is 0.025^(1/n), not the bootstrap's [1, 1].
    expect(s.overall.ci95![0]).toBeCloseTo(0.025 ** (1 / s.items), 9);
    expect(s.unvoted.accuracy).toBe(1);
    for (const t of s.tables) for (const r of t.rows) expect(r.accuracy, `${t.by}=${r.key}`).toBe(1);
    expect(s.tables.find((t) => t.by === 'ability')!.rows.length).toBeGreaterThanOrEqual(30);
    expect(s.tables.find((t) => t.by === 'aspect')!.rows.map((r) => r.key)).toEqual(['Cooperation',
      'Emotional Resilience', 'Innovation', 'Self-Management', 'Social Engagement']);
  });

  it('always slot A: ≈ 1/k before the vote, 1/k after it, and the votes follow the documented rule', () => {
    const s = slotA.summary.iae!;
    const chance = slotA.records.reduce((a, r) => a + 1 / r.options.length, 0) / slotA.records.length;
    expect(s.overall.chance).toBeCloseTo(chance, 12);
    const nP = s.unvoted.n;
    expect(nP).toBe(3 * slotA.records.length);
    expect(Math.abs(s.unvoted.accuracy - chance)).toBeLessThan(4 * Math.sqrt((chance * (1 - chance)) / nP));
    const n = s.items;
    expect(Math.abs(s.overall.accuracy - chance)).toBeLessThan(4 * Math.sqrt((chance * (1 - chance)) / n));
    // Position bias: every pick is slot A; the answer is spread over the slots by the shuffles.
    const b4 = s.positionBias.find((b) => b.k === 4)!;
    expect(b4.pickRate).toEqual([1, 0, 0, 0]);
    for (const r of b4.answerRate!) expect(Math.abs(r - 0.25)).toBeLessThan(0.03);
    for (const r of slotA.records) {
      const picks = r.shuffles.map((x) => x.order[0]!);
      const counts = new Map<number, number>();
      for (const p of picks) counts.set(p, (counts.get(p) ?? 0) + 1);
      const top = Math.max(...counts.values());
      const expected = top >= 2 ? [...counts.entries()].find(([, c]) => c === top)![0] : picks[0]!;
      expect(r.vote, r.id).toBe(expected);
      expect(r.correct).toBe(expected === 0);
    }
  });

  it('random logits: accuracy within its CI of chance', async () => {
    const res = await evaluate('random', (p) => {
      const rng = new Rng(
        p.id.length * 7919 + p.shuffle * 104729 + [...p.id].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 0),
      );
      return Array.from({ length: p.k }, () => rng.normal());
    }, 'iae');
    const s = res.summary.iae!;
    expect(s.overall.ci95![0]).toBeLessThanOrEqual(s.overall.chance);
    expect(s.overall.ci95![1]).toBeGreaterThanOrEqual(s.overall.chance);
    expect(s.unvoted.ci95![0]).toBeLessThanOrEqual(s.unvoted.chance);
    expect(s.unvoted.ci95![1]).toBeGreaterThanOrEqual(s.unvoted.chance);
  }, 300_000);

  it('GAE: a goal-seeking walker succeeds exactly where success is reachable', async () => {
    const reach = (t: WorldTree, c: string): boolean => {
      const n = t.nodes.get(c);
      if (!n) return false;
      if (n.type === 'ending') return n.goalAchievement === 2;
      return n.choices.some((ch) => reach(t, ch.next));
    };
    const res = await evaluate('gae', (p) => {
      const [stem, cid] = p.id.split('/gae/') as [string, string];
      const t = trees.get(stem)!;
      // Rebuild the walk's path from the parents to get the options as the prompt shows them.
      const pth = [cid];
      while (pth[0] !== '0') pth.unshift(t.parent.get(pth[0]!)!);
      const g = gaeFields(t, pth);
      const good = g.next.findIndex((nx) => reach(t, nx));
      const target = good >= 0 ? good : 0;
      // Some nodes offer two options with the same text: find the slot from the shuffle's order
      // (seeded by the item id, as documented), and check the text is at that slot.
      const order = optionOrders(p.id, g.options.length, 3, 0)[p.shuffle]!;
      const slot = order.indexOf(target);
      expect(p.text).toContain(`\n${String.fromCharCode(65 + slot)}: ${g.options[target]}\n`);
      return oneHot(p.k, slot);
    }, 'gae');
    const eps = res.episodes;
    expect(eps.length).toBe(bench!.gae.length);
    for (const e of eps) {
      const t = trees.get(e.tree)!;
      if (e.end === 'ending') expect(e.success, e.tree).toBe(reach(t, '0'));
      else expect(reach(t, '0') && e.end === 'stuck').toBe(false);
    }
    const ended = eps.filter((e) => e.end === 'ending');
    expect(res.summary.gae!.overall.accuracy).toBeCloseTo(
      ended.filter((e) => reach(trees.get(e.tree)!, '0')).length / ended.length,
      12,
    );
    // Each decision is recorded with the node it was taken at and the node it led to.
    for (const r of res.records) {
      const e = eps.find((x) => x.tree === r.gae!.tree)!;
      expect(e.path[r.gae!.depth]).toBe(r.gae!.node);
      expect(e.path[r.gae!.depth + 1]).toBe(r.gae!.next[r.vote]);
    }
  }, 300_000);
});
