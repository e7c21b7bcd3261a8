/**
 * The grouped conditional null of lobes swap: with groups (the response's world tree), the
 * label is shuffled only within the cells of the other label × group. Planted: a state that
 * carries only its group, where each group holds mostly one response aspect, so the response's
 * aspect is readable only through the group. A probe trained across groups reads it well above
 * chance; shuffles of the items within the question's strata break the group's link and reject;
 * shuffles within the cells keep each group's aspects and do not. End to end, `swapAnalysis`
 * with groups records them and shuffles within the cells.
 */
import { describe, expect, it } from 'vitest';
import { cellsOf, exchangeability, stratifiedPermutations } from '../../src/cluster/conditional.js';
import { repeatedCv } from '../../src/cluster/probecv.js';
import { nullOptions, probeNullScores } from '../../src/cluster/space.js';
import { permutationP } from '../../src/cluster/metrics.js';
import { classScores } from '../../src/cluster/scores.js';
import { swapAnalysis, type SwapInput } from '../../src/swap/swap.js';
import { Rng } from '../../src/util/rng.js';

const K = 5;
const ASPECTS = ['A', 'B', 'C', 'D', 'E'];

/** 30 groups of 10 swapped samples: 8 of a group's responses have its home aspect, 2 another; the question's aspect is never the response's; the state is the group's point plus noise. */
function planted(seed: number) {
  const rng = new Rng(seed);
  const nG = 30;
  const per = 10;
  const n = nG * per;
  const d = 40;
  const resp = new Int32Array(n);
  const ques = new Int32Array(n);
  const groups = new Int32Array(n);
  const X = new Float32Array(n * d);
  for (let g = 0; g < nG; g++) {
    const home = g % K;
    const c = Float64Array.from({ length: d }, () => 3 * rng.normal());
    for (let k = 0; k < per; k++) {
      const i = g * per + k;
      groups[i] = g;
      resp[i] = k < 8 ? home : (home + 1 + rng.int(K - 1)) % K;
      ques[i] = (resp[i]! + 1 + rng.int(K - 1)) % K;
      for (let j = 0; j < d; j++) X[i * d + j] = c[j]! + 0.3 * rng.normal();
    }
  }
  return { X, d, n, resp, ques, groups };
}

describe('the conditional null under groups', () => {
  it(
    'a label readable only through the group: item shuffles within the strata reject, shuffles within the cells of strata × group do not',
    () => {
      const { X, d, n, resp, ques, groups } = planted(1);
      const opts = { repeats: 1, seed: 0, C: 1, classWeight: 'balanced' as const };
      const cv = repeatedCv([{ X: Float64Array.from(X), d }], n, resp, K, opts);
      const observed = classScores(resp, cv.preds[0]!, K).balancedAccuracy;
      expect(observed).toBeGreaterThan(0.6);
      const R = 39;
      const pOf = (perms: Int32Array[]) => {
        const nulls = probeNullScores(cv.prepared, n, perms, K, nullOptions(opts, cv), 0);
        return permutationP(observed, Float64Array.from({ length: R }, (_, r) => nulls[3 * r + 1]!))!;
      };
      const items = pOf(stratifiedPermutations(resp, ques, R, 5));
      const cells = cellsOf(ques, groups);
      const grouped = pOf(stratifiedPermutations(resp, cells, R, 5));
      expect(items).toBeCloseTo(1 / (R + 1), 12);
      expect(grouped).toBeGreaterThan(0.2);
      // every shuffle within the cells keeps each group's aspects, and each cell's
      for (const p of stratifiedPermutations(resp, cells, 20, 9)) {
        for (let g = 0; g < 30; g++) {
          const of = (y: Int32Array) => [...y].filter((_, i) => groups[i] === g).sort();
          expect(of(p)).toEqual(of(resp));
        }
      }
      // the cells are the pairs (question's aspect, group): as many as distinct pairs
      expect(new Set(cells).size).toBe(new Set(Array.from(ques, (q, i) => `${q}/${groups[i]}`)).size);
      expect(cellsOf(ques, null)).toBe(ques);
    },
    30_000,
  );

  it(
    'swapAnalysis with groups: grouped folds and cells; the group is recorded; without groups the same input shuffles within the strata',
    async () => {
      const { X, d, resp, ques, groups } = planted(2);
      const input = (withGroups: boolean): SwapInput => ({
        question: Array.from(ques, (c) => ASPECTS[c]!),
        response: Array.from(resp, (c) => ASPECTS[c]!),
        points: [{ name: 'final.hidden', layer: null, pool: 'last', dim: d, read: async () => X }],
        words: [],
        notes: [],
        ...(withGroups ? { groups: Array.from(groups, (g) => `tree-${g}`), groupAxis: 'item_group' } : {}),
      });
      const o = { bootstrap: 50, permutations: 19, conditionalPermutations: 19, probeRepeats: 1, probeC: 1,
        quiet: true } as const;
      const flat = await swapAnalysis(input(false), o);
      const grouped = await swapAnalysis(input(true), o);
      const off = await swapAnalysis(input(true), { ...o, ungrouped: true });
      expect(grouped.settings.group).toEqual({ axis: 'item_group', groups: 30, conditional: 'within-groups' });
      expect(flat.settings.group).toBeUndefined();
      expect(off.settings.group).toBeUndefined();
      expect(off.points[0]!.response.probe.balancedAccuracy.value).toBe(
        flat.points[0]!.response.probe.balancedAccuracy.value,
      );
      const rc = (r: typeof flat) => r.points[0]!.response.conditional;
      expect(rc(flat).exchangeable).toEqual(exchangeability(resp, ques));
      expect(rc(grouped).exchangeable).toEqual(exchangeability(resp, cellsOf(ques, groups)));
      // ungrouped, the probe reads the response's aspect through the group and the item shuffles reject
      expect(flat.points[0]!.response.probe.balancedAccuracy.value).toBeGreaterThan(0.6);
      expect(rc(flat).balancedAccuracy.p).toBeCloseTo(1 / 20, 12);
      // grouped, the folds keep groups whole: nothing read beyond the group, nothing claimed
      expect(grouped.points[0]!.response.probe.balancedAccuracy.value).toBeLessThan(0.4);
      expect(rc(grouped).balancedAccuracy.verdict!.status).not.toBe('pass');
    },
    60_000,
  );
});
