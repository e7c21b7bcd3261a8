/**
 * The registry of multiplicity families (src/util/families.ts): a family adjusts exactly one
 * p-value per declared member, with a declared correction, and records how many it adjusted;
 * its Holm and BH are statsmodels' (the goldens of test/util/stats.test.ts, recomputed here by
 * hand on a small family); and the analyses write their families in the registry's shape, with
 * sizes equal to the p-values they adjusted.
 */
import { describe, expect, it } from 'vitest';
import { declareFamily } from '../../src/util/families.js';
import { adjustFamilies } from '../../src/cluster/multiplicity.js';
import { adjustConditional } from '../../src/swap/swap.js';
import type { ClusterMetrics } from '../../src/cluster/types.js';

describe('a declared family', () => {
  const fam = () =>
    declareFamily({ name: 'planted', claim: 'three planted tests', members: ['a', 'b', 'c'],
      correction: ['holm', 'bh'] });

  it('adjusts one p per member: Holm and BH by hand, a missing p out of the count and the size', () => {
    const f = fam();
    // Holm: sorted 0.01, 0.02 (b is missing): 2·0.01 = 0.02, max(0.02, 1·0.02) = 0.02
    expect(f.adjust([0.02, null, 0.01])).toEqual([0.02, null, 0.02]);
    // BH: 2·0.01/1 = 0.02, 2·0.02/2 = 0.02
    expect(f.adjust([0.02, null, 0.01], 'bh')).toEqual([0.02, null, 0.02]);
    expect(f.record()).toEqual({ family: 'planted', claim: 'three planted tests', size: 2, members: ['a', 'b', 'c'],
      correction: ['holm', 'bh'], alpha: 0.05 });
    const g = fam();
    expect(g.adjust([0.01, 0.04, 0.03])).toEqual([0.03, 0.06, 0.06]);
    expect(g.record().size).toBe(3);
  });

  it('a test added after the fact, or one left out, throws; so does an undeclared correction', () => {
    expect(() => fam().adjust([0.01, 0.02, 0.03, 0.04])).toThrow(
      /family planted: declared with 3 members, adjusted over 4 p-values/,
    );
    expect(() => fam().adjust([0.01, 0.02])).toThrow(/declared with 3 members, adjusted over 2/);
    const holmOnly = declareFamily({ name: 'h', claim: 'x', members: ['a'] });
    expect(() => holmOnly.adjust([0.01], 'bh')).toThrow(/bh was not declared/);
    expect(() => declareFamily({ name: 'd', claim: 'x', members: ['a', 'a'] })).toThrow(/declared twice/);
    // an unadjusted family has size 0
    expect(holmOnly.record().size).toBe(0);
  });
});

describe('the families the analyses write', () => {
  it('cluster: each family records its claim, its corrections and a size equal to the p-values adjusted', () => {
    const m = (p: number | null) => ({ value: 0.5, ci95: null, p, nullMean: 0.2, nullBand: null, z: 3, permutations: 99,
      nullSd: 0.05 });
    const cls = (p: number | null) => ({ accuracy: m(p), balancedAccuracy: m(p), macroF1: m(p), recall: [],
      confusion: [] });
    const metrics = {
      spaces: [
        { space: 'original-euclidean', probe: cls(0.01), knn: null },
        { space: 'original-cosine', knn: cls(0.02), probe: null },
        { space: 'embedding', knn: cls(null), probe: null },
      ],
      baselines: [],
    } as unknown as ClusterMetrics;
    adjustFamilies(metrics);
    const f = metrics.families!.find((x) => x.family === 'classifiers')!;
    expect(f.members).toEqual(['original-euclidean:probe', 'original-cosine:knn', 'embedding:knn']);
    // three members, two with a p: the size is what Holm divided by
    expect(f.size).toBe(2);
    expect(f.correction).toEqual(['holm', 'bh']);
    expect(f.claim).toMatch(/separate/);
    expect(metrics.spaces[0]!.probe!.balancedAccuracy.pHolm).toBeCloseTo(0.02, 12);
  });

  it("swap: the conditional family in the registry's shape, its size the tests with a p", () => {
    const t = (p: number | null) => ({ value: 0.3, ci95: null, p, nullMean: 0.2, nullBand: null,
      z: p === null ? null : 2, permutations: 99, nullSd: 0.03 });
    const lab = (p: number | null) => ({
      conditional: { given: 'response', exchangeable: { items: 10, strata: 2, of: 2 }, accuracy: t(p),
        balancedAccuracy: t(p), macroF1: t(p) },
    });
    const points = [{ point: 'final.hidden', question: lab(0.01), response: lab(null) }, { point: 'final.mean',
      question: lab(0.02), response: lab(0.03) }];
    const fam = adjustConditional(points as never, { R: 99, needed: 79, sizing: 'sized' } as never);
    expect(fam).toMatchObject({ family: 'conditional', size: 3,
      members: ['final.hidden:question', 'final.hidden:response', 'final.mean:question', 'final.mean:response'],
      correction: ['holm'], alpha: 0.05 });
    expect(typeof fam.claim).toBe('string');
  });
});
