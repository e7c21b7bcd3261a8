/**
 * src/util/resolution.ts: the normal tail against scipy, the smallest attainable Holm p against
 * statsmodels over every combination of floors (test/goldens/verdict/make_verdict_goldens.py
 * wrote verdict_goldens.json), and the verdicts on planted families: a family whose R is too
 * small is "not testable", a null without spread has no p, a capped count is read on the normal
 * approximation and says so.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { familyVerdicts, holmReach, normalUpper, planPermutations, verdictNumbers,
  verdictWords } from '../../src/util/resolution.js';
import { withNull } from '../../src/cluster/space.js';
import { permutationSizing } from '../../src/cluster/run.js';
import { wandaPermutationPlan } from '../../src/wanda/run.js';
import { cases } from '../goldens/cases.js';
import { declareFamily, indexMembers } from '../../src/util/families.js';

/** A family of n tests named by their order (the verdicts run within a declared family). */
const fam = (n: number) => declareFamily({ name: 'planted', claim: 'planted tests', members: indexMembers(n) });

const G = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '..', 'goldens', 'verdict', 'verdict_goldens.json'), 'utf8'),
);

describe('the numbers behind a verdict', () => {
  it('P(Z ≥ z) as scipy.stats.norm.sf, to 2e-7 relative, far into the tail', () => {
    for (const g of cases(G, 'normalUpper'))
      expect(Math.abs(normalUpper(g.z) - g.sf) / g.sf, `z = ${g.z}`).toBeLessThan(2e-7);
  });

  it('the smallest attainable Holm p of each member: statsmodels over every combination of floors', () => {
    for (const f of cases(G, 'holmReach')) {
      const floors = f.R.map((R: number) => 1 / (R + 1));
      f.reach.forEach((r: number, i: number) =>
        expect(holmReach(floors, i), `R = ${f.R.join(',')}, member ${i}`).toBeCloseTo(r, 12)
      );
    }
  });

  it('counts sized to their families: what permutationsForFamily gives, capped for cost, or as the user gave', () => {
    expect(planPermutations(5, undefined, 100)).toEqual({ R: 99, family: 5, needed: 99, sizing: 'sized' });
    expect(planPermutations(30, undefined, 20)).toEqual({ R: 20, family: 30, needed: 599, sizing: 'capped' });
    expect(planPermutations(5, 50, 100)).toEqual({ R: 50, family: 5, needed: 99, sizing: 'user' });
    // cluster: 5 classifiers on a run (the probe, two kNN, two token baselines), 3 on a matrix
    expect(permutationSizing({}, true, 0).probePermutations).toMatchObject({ R: 99, sizing: 'sized' });
    expect(permutationSizing({}, false, 0).probePermutations).toMatchObject({ R: 59, sizing: 'sized' });
    expect(permutationSizing({}, true, 0).permutations).toMatchObject({ R: 200, sizing: 'sized' });
    // a smaller --permutations given: the probe takes it, and it is the user's count
    expect(permutationSizing({ permutations: 39 }, false, 0).probePermutations).toMatchObject({ R: 39,
      sizing: 'user' });
    expect(permutationSizing({ permutations: 500 }, false, 0).probePermutations).toMatchObject({ R: 59,
      sizing: 'sized' });
    expect(permutationSizing({}, true, 30).sweepPermutations).toMatchObject({ R: 20, needed: 599, sizing: 'capped' });
    // wanda: 5 groups give 10 pairs and 20 set differences, which need 399
    expect(wandaPermutationPlan(5, undefined)).toMatchObject({ R: 399, family: 20, sizing: 'sized' });
    expect(wandaPermutationPlan(2, undefined)).toMatchObject({ R: 199, sizing: 'sized' });
    expect(wandaPermutationPlan(6, undefined)).toMatchObject({ R: 399, needed: 599, sizing: 'capped' });
    expect(wandaPermutationPlan(5, 199)).toMatchObject({ R: 199, sizing: 'user' });
  });
});

describe('verdicts on planted families', () => {
  // the SmolLM2 demo's family: the probe and two token baselines at 50 permutations, two kNN at 200, all at their floors
  const demo = (R: number, sizing?: 'user' | 'sized') =>
    [R, 200, 200, R, R].map((r) => ({ p: 1 / (r + 1), z: 6, R: r, sizing }));

  it('a family whose R is too small is not testable, never "does not pass"', () => {
    const v = familyVerdicts(demo(50, 'user'), fam(demo(50, 'user').length));
    expect(v.map((x) => x.status)).toEqual(['not-testable', 'pass', 'pass', 'not-testable', 'not-testable']);
    expect(v[0]!.reach).toBeCloseTo(3 / 51, 12);
    expect(verdictWords(v[0]!)).toBe(
      'not testable at R = 50: its smallest attainable Holm-adjusted p is 0.059 > 0.05 over 5 tests (99 permutations would reach it)',
    );
    expect(verdictNumbers(v[0]!, 'classifiers')).toBe(
      'p = 0.02 (the floor 1/(R+1) of 50 permutations), z = 6.0, normal approx. p = 1e-9, Holm 0.06 over 5 classifiers in family planted',
    );
    // sized to the family, the same effects pass
    expect(familyVerdicts(demo(99, 'sized'), fam(demo(99, 'sized').length)).map((x) => x.status)).toEqual(['pass',
      'pass', 'pass', 'pass', 'pass']);
  });

  it('a null without spread gives no p, and says why', () => {
    const m = withNull(0.2, [0.19, 0.21], new Float64Array(50).fill(0.2));
    expect(m.p).toBeNull();
    expect(m.z).toBeNull();
    expect(m.nullSd).toBe(0);
    const [v, w] = familyVerdicts([{ p: m.p, z: m.z, R: 50, nullSd: m.nullSd, nullMean: m.nullMean }, { p: 0.01, z: 3,
      R: 99 }], fam(2));
    expect(v!.status).toBe('degenerate');
    expect(verdictWords(v!)).toBe(
      'no p: the null has no spread (every one of the 50 shuffles scored 0.2000), so a p would only count ties',
    );
    // it stays out of the family: the other member is judged alone
    expect(w!.family).toBe(1);
    expect(w!.adjusted).toBe(0.01);
  });

  it('a count held down for cost is read on the normal approximation of z, and says so', () => {
    const layers = Array.from({ length: 30 },
      (_, i) => ({ p: 1 / 21, z: i < 3 ? 5 : 0.2, R: 20, sizing: 'capped' as const }));
    const v = familyVerdicts(layers, fam(layers.length));
    expect(v.every((x) => x.basis === 'normal')).toBe(true);
    expect(v.filter((x) => x.status === 'pass').length).toBe(3);
    expect(verdictWords(v[0]!)).toMatch(
      /^passes \(on the normal approximation: read from the normal approximation of z: R = 20 is below the 599 permutations the family of 30 needs/,
    );
    // the same count given by the user: a permutation test that cannot pass
    expect(
      familyVerdicts(layers.map((l) => ({ ...l, sizing: 'user' as const })), fam(layers.length)).every((x) =>
        x.status === 'not-testable'
      ),
    ).toBe(true);
  });
});
