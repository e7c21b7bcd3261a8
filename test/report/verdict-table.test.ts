/**
 * The verdict table on planted metrics whose verdicts are known by hand: the Holm-adjusted p of
 * its family (raw p = 0.04 twice is 0.08: at chance), "not testable at R = 50" where 5 tests
 * at the floor of 50 permutations cannot reach 0.05, a region family with one pair far below its
 * null, and the table agreeing with the sentences made from the same verdicts.
 */
import { describe, it, expect } from 'vitest';
import { verdictLines } from '../../src/report/verdict.js';
import { verdictTable, verdictTableLines } from '../../src/report/verdict-table.js';

const clf = (bal: number, p: number) => ({
  accuracy: { value: 0.4, ci95: [0.38, 0.42], p, nullMean: 0.35, nullBand: [0.33, 0.37] },
  balancedAccuracy: { value: bal, ci95: [bal - 0.02, bal + 0.02], p, nullMean: 0.2, nullBand: [0.19, 0.21] },
  macroF1: { value: bal, ci95: [bal - 0.02, bal + 0.02], p, nullMean: 0.16, nullBand: [0.14, 0.18] },
  recall: [],
  confusion: [],
});
const metrics = (probe: number, probeP: number, tokens: number, tokensP: number) =>
  ({
    classes: ['a', 'b', 'c', 'd', 'e'],
    n: 500,
    dim: 16,
    chance: { balancedAccuracy: 0.2, majorityRate: 0.38, majorityClass: 'a', counts: [190, 80, 80, 80, 70] },
    spaces: [{ space: 'original-euclidean', silhouette: null, daviesBouldin: null, knn: null, probe: clf(probe, probeP),
      probeDims: 16, perClass: [] }],
    baselines: [{ name: 'token-counts', description: '', dim: 100, probeDims: 16, probe: clf(tokens, tokensP) }],
  }) as unknown as NonNullable<Parameters<typeof verdictTable>[0]>;
const settings = (extra: object = {}) =>
  ({ by: 'aspect', point: 'layers.29.resid_out', ...extra }) as unknown as Parameters<typeof verdictTable>[1];

describe('the verdict table', () => {
  it('one family: raw p = 0.04 twice is Holm 0.08 over 2 classifiers, at chance; chance, null and CI as the metrics hold them', () => {
    const t = verdictTable(metrics(0.3, 0.04, 0.25, 0.04), settings(), null, null)!;
    expect(t.axis).toBe('aspect');
    expect(t.rows.map((r) => r.question)).toEqual([
      'Does the representation at layers.29.resid_out separate the 5 values of "aspect"? (linear probe, 16 dims, balanced accuracy)',
      'Do the texts\' tokens alone separate "aspect"? (token-counts probe, balanced accuracy)',
    ]);
    const probe = t.rows[0]!;
    expect(probe).toEqual({ question: probe.question, anchor: 'metrics', value: '0.30 [0.28, 0.32]', chance: '0.20',
      nul: '0.20 [0.19, 0.21]', p: '0.08 (Holm over 2 in family classifiers)', verdict: 'at chance', status: 'fail' });
    // alone, 0.04 passes
    const one = metrics(0.3, 0.04, 0.25, 0.04) as any;
    one.baselines = [];
    expect(verdictTable(one, settings(), null, null)!.rows[0]).toMatchObject({ p: '0.04 (one test)',
      verdict: 'above chance', status: 'pass' });
  });

  it('5 classifiers at the floor of 50 permutations: not testable at R = 50, never "at chance"', () => {
    const m = metrics(0.43, 1 / 51, 0.3, 1 / 51) as any;
    m.spaces.push({ space: 'original-cosine', silhouette: null, daviesBouldin: null, knn: clf(0.25, 0.3),
      perClass: [] });
    m.spaces.push({ space: 'embedding', silhouette: null, daviesBouldin: null, knn: clf(0.24, 0.4), perClass: [] });
    m.baselines.push({ ...m.baselines[0], name: 'token-embedding-mean', probe: clf(0.28, 1 / 51) });
    const t = verdictTable(m,
      settings({ permutations: 200, probePermutations: 50,
        sizing: { probePermutations: { R: 50, family: 5, needed: 99, sizing: 'user' } } }), null, null)!;
    const probe = t.rows.find((r) => r.question.includes('linear probe'))!;
    expect(probe.verdict).toBe('not testable at R = 50');
    expect(probe.status).toBe('not-testable');
    expect(probe.p).toContain('Holm over 5 in family classifiers; raw p at the floor 1/(R+1), R = 50');
    // the sentences say the same of the same test
    const lines = verdictLines(m,
      settings({ permutations: 200, probePermutations: 50,
        sizing: { probePermutations: { R: 50, family: 5, needed: 99, sizing: 'user' } } }));
    expect(lines.find((l) => l.startsWith('Linear probe'))).toContain('not testable at R = 50');
    // the terminal's lines: the question, then the verdict and its numbers
    const out = verdictTableLines(t);
    expect(out[0]).toBe(
      'Verdicts for "aspect" (value [95% CI] | chance | null mean [95% band] | adjusted p (family) | verdict):',
    );
    expect(out[1]).toBe(`  ${probe.question}`);
    expect(out[2]).toMatch(
      /^ {4}NOT TESTABLE AT R = 50: 0\.43 \[0\.41, 0\.45\] \| chance 0\.20 \| null 0\.20 \[0\.19, 0\.21\] \| p 0\.10 \(Holm over 5 in family classifiers/,
    );
  });

  it('region pairs: one of 3 far below its null is "below chance in 1 of 3", with the smallest Holm p over the pairs', () => {
    const pair = (a: string, b: string, j: number, pLower: number, z: number) => ({ a, b,
      jaccard: { value: j, p: 1 - pLower, pLower, nullMean: 0.5, percentile: null, z: -z }, sizeAminusB: 10,
      sizeBminusA: 10 });
    const wm = { groups: [], permutations: 999,
      pairs: [pair('x', 'y', 0.1, 0.001, 6), pair('x', 'z', 0.45, 0.3, 0.5), pair('y', 'z', 0.5, 0.5, 0)] } as any;
    const t = verdictTable(null, null, { by: 'aspect' } as any, wm)!;
    expect(t.rows).toHaveLength(1);
    expect(t.rows[0]).toMatchObject({ anchor: 'regions', value: 'median 0.45 (0.10 to 0.50)', nul: 'median 0.50',
      p: '0.003 (the smallest; Holm over 3 in family region-pairs)', verdict: 'below chance in 1 of 3',
      status: 'pass' });
  });
});
