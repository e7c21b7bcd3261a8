/**
 * Families declared from the plan and written into the outputs (src/util/families.ts, issue 41):
 * the registry's guards (a result for a member the family did not declare throws, and so does a
 * member left without one; a member marked not tested stays a member, out of the size), and the
 * families that were declared but not written: eval's accuracy-by tables, ablate's random-region
 * and shuffled-label families (each dose's in test/ablate/dose.test.ts), wanda's per-channel
 * families (test/wanda/inference.test.ts). Each family's members are checked against what the
 * settings and the input imply, computed here, its size against the p-values it had, and its
 * adjusted p-values against a Holm written here (not src/util/stats.ts's).
 */
import { describe, expect, it } from 'vitest';
import { declareFamily, type FamilyRecord } from '../../src/util/families.js';
import { ablationStats, pairedSide } from '../../src/ablate/stats.js';
import { shuffledLabelTests } from '../../src/ablate/shuffled.js';
import { summarize } from '../../src/eval/summary.js';
import { adjustConditional, conditionalFamily } from '../../src/swap/swap.js';
import type { EvalRecord } from '../../src/eval/types.js';
import { holmRef } from './holm-ref.js';

describe("the registry's guards", () => {
  const fam = () => declareFamily({ name: 'planted', claim: 'three planted tests', members: ['a', 'b', 'c'] });

  it("adjustBy takes the p-values by member name: an undeclared member's result throws, and so does a member without one", () => {
    const got = fam().adjustBy({ a: 0.01, b: null, c: 0.04 });
    expect([...got.entries()]).toEqual([['a', 0.02], ['b', null], ['c', 0.04]]);
    // a member added once the results are in (a result-dependent member change)
    expect(() => fam().adjustBy({ a: 0.01, b: 0.02, c: 0.03, d: 0.001 })).toThrow(
      /a result for d, which the family did not declare/,
    );
    // a member dropped once the results are in
    expect(() => fam().adjustBy(new Map([['a', 0.01], ['c', 0.03]]))).toThrow(/member b has no result/);
  });

  it('a member marked not tested stays a member with its reason, out of the size; it cannot carry a p, nor be marked after the adjustment', () => {
    const f = fam().notTested('b', 'class B is empty');
    f.adjust([0.01, null, 0.04]);
    expect(f.record()).toEqual({ family: 'planted', claim: 'three planted tests', size: 2, members: ['a', 'b', 'c'],
      correction: ['holm'], alpha: 0.05, notTested: [{ member: 'b', reason: 'class B is empty' }] });
    expect(() => fam().notTested('b', 'x').adjust([0.01, 0.02, 0.03])).toThrow(
      /member b was marked not tested \(x\) but is adjusted with p = 0.02/,
    );
    expect(() => f.notTested('a', 'late')).toThrow(/marked not tested after the family was adjusted/);
    expect(() => fam().notTested('z', 'x')).toThrow(/z is not a declared member/);
    // a family whose every member was tested lists no notTested
    const g = fam();
    g.adjust([0.01, 0.02, 0.03]);
    expect(g.record().notTested).toBeUndefined();
  });
});

/** Expect a written family to have these members, a size equal to its finite p's, and adjusted p's equal to holmRef of them. */
function expectFamily(f: FamilyRecord | undefined, members: string[], p: (number | null | undefined)[],
  adjusted: (number | null | undefined)[]): void
{
  expect(f, 'the family is written').toBeDefined();
  expect(f!.members).toEqual(members);
  expect(f!.size).toBe(p.filter((v) => v !== null && v !== undefined && Number.isFinite(v)).length);
  const want = holmRef(p);
  adjusted.forEach((v, i) => (want[i] === null ? expect(v ?? null).toBeNull() : expect(v).toBeCloseTo(want[i]!, 12)));
}

describe('ablate: the random-region and shuffled-label families', () => {
  // 12 items of A, B, C (label D has none); regions A (its own items cost more), B (its changes are gains:
  // no cost ratio), X (not a label: cells only); K = 4 random regions, one of which changes nothing.
  const labels = ['A', 'B', 'C', 'D'];
  const labelOf = Int32Array.from({ length: 12 }, (_, i) => i % 3);
  const before = Float64Array.from({ length: 12 }, (_, i) => -10 - i / 10);
  const shift = (f: (i: number) => number) => Float64Array.from(before, (b, i) => b + f(i));
  const random = [shift((i) => -0.1 - 0.01 * (i % 5)), shift((i) => -0.12 + 0.01 * (i % 4)),
    shift((i) => -0.09 - 0.02 * (i % 3)), shift(() => 0)];
  const regions = [
    { name: 'A', minus: null, after: shift((i) => (i % 3 === 0 ? -0.5 - 0.01 * i : -0.1)), random },
    { name: 'B', minus: null, after: shift((i) => 0.2 + 0.01 * i), random },
    { name: 'X', minus: null, after: shift(() => -0.1), random },
  ];
  const stats = () => ablationStats({ labels, labelOf, before, regions, bootstrap: 50, seed: 1 });

  it("the cells and specificity families have the members the regions and the items' labels imply", () => {
    const st = stats();
    const fams = new Map(st.families.map((f) => [f.family, f]));
    // every region × every label with items (D has none); specificity: every region whose name is a label with items
    const cells = ['A', 'B', 'X'].flatMap((r) => ['A', 'B', 'C'].map((l) => `${r} on ${l}`));
    expectFamily(fams.get('cells'), cells, st.cells.map((c) => c.pT), st.cells.map((c) => c.pTHolm));
    expectFamily(fams.get('specificity-rank'), ['A', 'B'], st.specificity.map((s) => s.p),
      st.specificity.map((s) => s.pHolm));
    // B's changes are gains: it has no cost ratio, and stays a member of the specificity family
    expect(st.specificity.find((s) => s.region === 'B')!.ratioP).toBeNull();
    expectFamily(fams.get('specificity'), ['A', 'B'], st.specificity.map((s) => s.pT),
      st.specificity.map((s) => s.pTHolm));
    const ratio = holmRef(st.specificity.map((s) => s.ratioP));
    expect(ratio[1]).toBeNull();
    expect(st.specificity[1]!.ratioPHolm).toBeNull();
    expect(st.specificity[0]!.ratioPHolm).toBeCloseTo(ratio[0]!, 12);
  });

  it('each specificity row writes its two random-region families: K members, the size its tested random regions', () => {
    const st = stats();
    for (const s of st.specificity) {
      for (const [side, what] of [['own', 'own items'], ['others', 'other items']] as const) {
        const ps = s.paired![side];
        const f = ps.family;
        expect(f?.family).toBe(`random-regions-of-region ${s.region} (${what})`);
        // the random region that changes nothing gives the region's own differences, not a tie-free test: its p is whatever signedRank says
        expectFamily(f, ['random 0', 'random 1', 'random 2', 'random 3'], ps.p, ps.pHolm);
      }
    }
    // a random region identical to the region: no non-zero difference, no p, out of the size
    const d = Float64Array.from({ length: 6 }, (_, i) => -0.1 * i);
    const same = pairedSide(d, [d, Float64Array.from(d, (v, i) => v + 0.05 * (i - 2.5))], [0, 1, 2, 3, 4, 5],
      'R (own items)');
    expect(same.p[0]).toBeNull();
    expectFamily(same.family, ['random 0', 'random 1'], same.p, same.pHolm);
    expect(same.family!.size).toBe(1);
  });

  it('the shuffled-label family: every region with a target, whatever its p', () => {
    const shuffled = [0, 1, 2, 3, 4].map((s) => shift((i) => -0.1 - 0.05 * (((i + s) % 3) === 0 ? 1 : 0)));
    const { rows, family } = shuffledLabelTests({ labels, labelOf, before,
      regions: regions.map((r) => ({ name: r.name, minus: r.minus, after: r.after, shuffled })) });
    expect(family.family).toBe('shuffled-label-regions');
    // B's ratio p is null (no cost ratio); it is a member all the same
    expect(rows.find((r) => r.region === 'B')!.ratioP).toBeNull();
    expectFamily(family, ['A', 'B'], rows.map((r) => r.contrastP), rows.map((r) => r.contrastPHolm));
    expect(rows.map((r) => r.ratioPHolm)).toEqual(holmRef(rows.map((r) => r.ratioP)));
  });
});

describe('eval: the accuracy-by families in the summary', () => {
  const rec = (id: string, aspect: string, language: string, correct: boolean): EvalRecord => {
    const shuffles = [0, 1, 2].map(() => ({ order: [0, 1, 2, 3], prompt: '', parts: [], tokens: 1, letters: [],
      letterTokenIds: [], continuations: [], answerAt: 0, logits: [1, 0, 0, 0], probs: [], letterMass: 0.5,
      logSumExp: 0, topTokenId: 0, pick: correct ? 0 : 1 })
    );
    return { id, task: 'iae', language, ability: 'Teamwork Skill', aspect, labels: {}, options: ['a', 'b', 'c', 'd'],
      answer: 0, shuffles, vote: correct ? 0 : 1, correct } as unknown as EvalRecord;
  };
  const rs = Array.from({ length: 30 },
    (_, i) =>
      rec(`i${i}`, ['Cooperation', 'Innovation', 'Self-Management'][i % 3]!, i % 2 ? 'en' : 'zh',
        i % 3 === 0 || i % 7 === 0));

  it('each table carries its family: the keys of the input, sorted, Holm over their p vs chance', () => {
    const s = summarize(rs, [], { bootstrap: 50, seed: 1 }).iae!;
    for (const t of s.tables) {
      const keys = [
        ...new Set(rs.flatMap((r) => (t.by === 'language'
          ? [r.language!]
          : t.by === 'aspect'
          ? r.aspect!.split(' + ')
          : r.ability!.split(' + '))
        )),
      ].sort();
      expect(t.family!.family).toBe(`accuracy by ${t.by}`);
      expectFamily(t.family, keys, t.rows.map((r) => r.pChance), t.rows.map((r) => r.pChanceHolm));
    }
    expect(s.tables.map((t) => t.by)).toEqual(['language', 'aspect', 'ability']);
    expect(s.declaredFamilies).toEqual(s.tables.map((t) => t.family));
    // the summary as written (JSON) carries them
    const back = JSON.parse(JSON.stringify(s));
    expect(back.declaredFamilies.map((f: FamilyRecord) => [f.family, f.size])).toEqual([['accuracy by language', 2], [
      'accuracy by aspect',
      3,
    ], ['accuracy by ability', 1]]);
  });
});

describe('swap: the conditional family, declared from the points', () => {
  it('every point × both labels; results of other points than the declared ones throw', () => {
    expect(conditionalFamily(['final.hidden', 'layers.1.resid_out.mean']).members).toEqual(['final.hidden:question',
      'final.hidden:response', 'layers.1.resid_out.mean:question', 'layers.1.resid_out.mean:response']);
    const t = (p: number | null) => ({ value: 0.3, ci95: null, p, nullMean: 0.2, nullBand: null,
      z: p === null ? null : 2, permutations: 99, nullSd: 0.03 });
    const lab = (p: number | null) => ({
      conditional: { given: 'response', exchangeable: { items: 10, strata: 2, of: 2 }, accuracy: t(p),
        balancedAccuracy: t(p), macroF1: t(p) },
    });
    const points = [{ point: 'final.hidden', question: lab(0.01), response: lab(null) }, { point: 'final.mean',
      question: lab(0.02), response: lab(0.03) }];
    const plan = { R: 99, needed: 79, sizing: 'sized' } as never;
    expect(() => adjustConditional(points as never, plan, conditionalFamily(['final.hidden']))).toThrow(
      /family conditional: declared with final.hidden:question, final.hidden:response, tested/,
    );
    const fam = adjustConditional(points as never, plan, conditionalFamily(['final.hidden', 'final.mean']));
    expect(fam.size).toBe(3);
    const want = holmRef([0.01, null, 0.02, 0.03]);
    points.flatMap((p) => [p.question, p.response]).forEach((l, i) => (want[i] === null
      ? expect((l.conditional.balancedAccuracy as { pHolm?: number | null }).pHolm).toBeNull()
      : expect((l.conditional.balancedAccuracy as { pHolm?: number | null }).pHolm).toBeCloseTo(want[i]!, 12))
    );
  });
});
