/**
 * The conditional test of lobes swap: a label shuffled only within the strata of the other
 * label. First the shuffles themselves (each stratum keeps its multiset of values, the items
 * that cannot move stay put, every arrangement of a stratum equally often, the exchangeable
 * counts); then planted states on a swapped design (question ≠ response on every item):
 *
 *  - a state carrying only the question's aspect predicts the response's above the plain null
 *    (the two labels are dependent), and the conditional test of the response's aspect must not
 *    reject while the plain null does;
 *  - a state carrying both must be found to carry the response's aspect beyond the question's;
 *  - where the response's aspect is a function of the question's, nothing can be shuffled and
 *    the test is not testable, in words.
 */
import { describe, expect, it } from 'vitest';
import { exchangeability, stratifiedPermutations } from '../../src/cluster/conditional.js';
import { swapAnalysis, type SwapInput, type SwapResult } from '../../src/swap/swap.js';
import { summaryLines, swapCsv, SWAP_CSV_HEADER } from '../../src/swap/run.js';
import { Rng } from '../../src/util/rng.js';

describe('stratified permutations', () => {
  // strata: 0 (12 items, values 0..2 mixed), 1 (1 item), 2 (5 items, all value 4), 3 (7 items, values 1,3)
  const strata: number[] = [];
  const a: number[] = [];
  const rng = new Rng(7);
  const add = (s: number, v: number) => {
    strata.push(s);
    a.push(v);
  };
  for (let i = 0; i < 12; i++) add(0, i % 3);
  add(1, 2);
  for (let i = 0; i < 5; i++) add(2, 4);
  for (let i = 0; i < 7; i++) add(3, i < 3 ? 1 : 3);
  // interleave the items so that the strata are not contiguous
  const order = rng.shuffle(Array.from({ length: a.length }, (_, i) => i));
  const A = Int32Array.from(order, (i) => a[i]!);
  const S = Int32Array.from(order, (i) => strata[i]!);
  const multiset = (x: Int32Array, s: number) => [...x].filter((_, i) => S[i] === s).sort((p, q) => p - q);

  it('keeps every stratum’s multiset of values, moves nothing across strata, and leaves the items that cannot move', () => {
    const perms = stratifiedPermutations(A, S, 300, 11);
    expect(perms).toHaveLength(300);
    let moved = 0;
    for (const p of perms) {
      for (const s of [0, 1, 2, 3]) expect(multiset(p, s)).toEqual(multiset(A, s));
      for (let i = 0; i < A.length; i++) if (S[i] === 1 || S[i] === 2) expect(p[i]).toBe(A[i]);
      if (p.some((v, i) => v !== A[i])) moved++;
    }
    expect(moved).toBe(300);
    // the input is left as it was; the same seed gives the same shuffles, another seed others
    expect([...A]).toEqual(order.map((i) => a[i]));
    expect(stratifiedPermutations(A, S, 5, 11)).toEqual(perms.slice(0, 5));
    expect(stratifiedPermutations(A, S, 5, 12)).not.toEqual(perms.slice(0, 5));
  });

  it('counts the exchangeable items: strata of two or more items with two or more values', () => {
    expect(exchangeability(A, S)).toEqual({ items: 12 + 7, strata: 2, of: 4 });
    expect(exchangeability(Int32Array.from([1, 1, 2]), Int32Array.from([0, 0, 1]))).toEqual({ items: 0, strata: 0,
      of: 2 });
  });

  it('draws every arrangement of a stratum equally often', () => {
    // one stratum of three distinct values beside another: 6 arrangements, 6000 draws
    const a3 = Int32Array.from([0, 1, 2, 0, 1]);
    const s3 = Int32Array.from([0, 0, 0, 1, 1]);
    const counts = new Map<string, number>();
    for (const p of stratifiedPermutations(a3, s3, 6000, 3)) {
      const key = [p[0], p[1], p[2]].join('');
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    // binomial sd of a count: sqrt(6000 · 1/6 · 5/6) ≈ 29; within 4 sd
    for (const c of counts.values()) expect(Math.abs(c - 1000)).toBeLessThan(116);
  });
});

const K = 5;
const ASPECTS = ['A', 'B', 'C', 'D', 'E'];

/**
 * n swapped samples and one capture point: unit Gaussian noise in 12 dimensions plus `q` times the
 * question's one-hot (dimensions 0–4) and `r` times the response's (dimensions 5–9). The response
 * aspects are balanced; the question's aspect is never the response's, and is the next aspect
 * 60% of the time (else uniform over the other three), so the two labels are strongly dependent
 * and a state of one predicts the other well above chance. `pair` makes the question's aspect
 * always the next one (a function of the response's), so that nothing is exchangeable.
 */
function planted(q: number, r: number, seed: number, pair = false, n = 300): SwapInput {
  const rng = new Rng(seed);
  const qs: number[] = [];
  const rs: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = i % K;
    let b = (a + 1) % K;
    if (!pair && rng.next() >= 0.6) b = (a + 2 + rng.int(K - 2)) % K;
    rs.push(a);
    qs.push(b);
  }
  const d = 12;
  const X = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) X[i * d + j] = rng.normal();
    X[i * d + qs[i]!] += q;
    X[i * d + K + rs[i]!] += r;
  }
  return { question: qs.map((c) => ASPECTS[c]!), response: rs.map((c) => ASPECTS[c]!),
    points: [{ name: 'final.hidden', layer: null, pool: 'last', dim: d, read: async () => X }], words: [], notes: [] };
}

// one point × two labels: a family of 2; 99 permutations reach Holm 0.02
const OPTS = { bootstrap: 50, permutations: 99, conditionalPermutations: 99, probeRepeats: 1, probeC: 1,
  quiet: true } as const;

describe('the conditional test on planted states', () => {
  const cache = new Map<string, SwapResult>();
  const get = async (key: string, input: () => SwapInput) => {
    if (!cache.has(key)) cache.set(key, await swapAnalysis(input(), OPTS));
    return cache.get(key)!;
  };

  for (const seed of [1, 2, 3]) {
    it(`a state of the question's aspect only (seed ${seed}): the plain null rejects the response's aspect, the conditional test does not`, async () => {
      const r = await get(`q${seed}`, () => planted(2.5, 0, seed));
      const p = r.points[0]!;
      // the response's aspect is read above chance through the question's (never equal to it)
      expect(p.response.probe.balancedAccuracy.value).toBeGreaterThan(0.35);
      expect(p.response.probe.balancedAccuracy.p).toBeLessThanOrEqual(0.05);
      const c = p.response.conditional;
      expect(c.given).toBe('question');
      expect(c.exchangeable.items).toBe(300);
      expect(c.balancedAccuracy.permutations).toBe(99);
      expect(c.balancedAccuracy.p!).toBeGreaterThan(0.05);
      expect(c.balancedAccuracy.verdict!.status).toBe('fail');
      // the conditional null keeps the dependence: its mean is where the plain null's is not
      expect(c.balancedAccuracy.nullMean!).toBeGreaterThan(p.response.probe.balancedAccuracy.nullBand![1]);
      // and the question's aspect is carried beyond the response's
      expect(p.question.conditional.balancedAccuracy.verdict!.status).toBe('pass');
      expect(p.question.conditional.balancedAccuracy.pHolm!).toBeLessThanOrEqual(0.05);
    });
  }

  it('a state of both aspects: the response’s is carried beyond the question’s', async () => {
    const r = await get('both', () => planted(2.5, 1.5, 4));
    const c = r.points[0]!.response.conditional.balancedAccuracy;
    expect(c.p!).toBeLessThanOrEqual(0.02);
    expect(c.verdict!.status).toBe('pass');
    expect(c.verdict!.adjusted!).toBeLessThanOrEqual(0.05);
    expect(r.points[0]!.question.conditional.balancedAccuracy.verdict!.status).toBe('pass');
  });

  it('declares its family, says each verdict in words, and writes the tests to the CSV', async () => {
    const q = await get('q1', () => planted(2.5, 0, 1));
    expect(q.families).toEqual([{
      family: 'conditional',
      claim: 'the state carries a label beyond the other (every point × both labels, each score)',
      size: 2,
      members: ['final.hidden:question', 'final.hidden:response'],
      correction: ['holm'],
      alpha: 0.05,
      scores: ['accuracy', 'balancedAccuracy', 'macroF1'],
    }]);
    expect(q.settings.conditionalPermutations).toMatchObject({ R: 99, family: 2, sizing: 'user' });
    const lines = summaryLines(q).join('\n');
    expect(lines).toMatch(
      /carries the question's aspect beyond the response's: p = 0\.01[^\n]*Holm 0\.02 over 2 tests/,
    );
    expect(lines).toMatch(/no evidence it carries the response's aspect beyond the question's: p = /);
    expect(lines).toMatch(/crossChance \(descriptive/);
    const csv = swapCsv(q).split('\n');
    expect(csv[0]).toBe(SWAP_CSV_HEADER);
    const row = csv.find((l) => l.startsWith('final.hidden,last,,response,conditional:balanced_accuracy,'))!.split(',');
    expect(row).toHaveLength(SWAP_CSV_HEADER.split(',').length);
    expect(Number(row[8])).toBe(q.points[0]!.response.conditional.balancedAccuracy.p);
    expect(row[15]).toBe('fail');
    expect(
      csv.find((l) => l.startsWith('final.hidden,last,,question,conditional:balanced_accuracy,'))!.endsWith(',99,pass'),
    ).toBe(true);
  });

  it('with the question’s aspect a function of the response’s, nothing is exchangeable: not testable, in words', async () => {
    const r = await swapAnalysis(planted(2.5, 1.5, 5, true), { ...OPTS, conditionalPermutations: 9, permutations: 9 });
    for (const label of ['question', 'response'] as const) {
      const c = r.points[0]![label].conditional;
      expect(c.exchangeable).toEqual({ items: 0, strata: 0, of: 5 });
      expect(c.balancedAccuracy.p).toBeNull();
      expect(c.balancedAccuracy.verdict!.status).toBe('not-testable');
      expect(c.untestable).toMatch(/nothing can be shuffled/);
    }
    expect(r.families[0]!.size).toBe(0);
    expect(summaryLines(r).join('\n')).toMatch(
      /the response's aspect beyond the question's: not testable at R = 9: no value of the question's aspect holds two items with different response's aspects, so nothing can be shuffled \(0 of 300 items exchangeable\)/,
    );
  });

  it('sizes its permutations to the family by default, and takes a given count', async () => {
    const { conditionalPlan } = await import('../../src/swap/swap.js');
    // 10 tests need 199 permutations; the default is held at 100 and read on z's normal approximation
    expect(conditionalPlan(10, {})).toMatchObject({ R: 100, needed: 199, sizing: 'capped' });
    expect(conditionalPlan(2, {})).toMatchObject({ R: 39, needed: 39, sizing: 'sized' });
    expect(conditionalPlan(2, { conditionalPermutations: 7 })).toMatchObject({ R: 7, sizing: 'user' });
    // the plain count given alone: the smaller of it and what the family needs
    expect(conditionalPlan(2, { permutations: 5 })).toMatchObject({ R: 5, sizing: 'user' });
    expect(conditionalPlan(2, { permutations: 500 })).toMatchObject({ R: 39, sizing: 'sized' });
  });
});
