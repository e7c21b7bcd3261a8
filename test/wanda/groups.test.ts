/**
 * wanda's label null under item groups (SocialEval's world trees, `--group`): the labels are
 * shuffled only within each group (src/wanda/analyze.ts labellingDesign, cluster's within-groups
 * design), checked by counting, and without groups the shuffles are the plain ones, draw for
 * draw. Planted: activations that carry only their tree, where a tree's items are mostly of one
 * label, so the labels' regions differ only through the trees. Item shuffles mix the trees
 * across the labels and find the regions more apart than chance; shuffles within the trees keep
 * each label's trees and do not.
 */
import { describe, expect, it } from 'vitest';
import { analyze, encodeLabels, labelingGenerator, matrixInfo } from '../../src/wanda/analyze.js';
import { memorySource } from '../../src/wanda/stats.js';
import { Rng } from '../../src/util/rng.js';

describe('the labellings of the null under item groups', () => {
  // groups 0: A A B; 1: B B A A; 2: C C (one label: fixed); a sample left out in group 1
  const labels = ['A', 'A', 'B', 'B', 'B', '', 'A', 'A', 'C', 'C'];
  const groups = Int32Array.from([0, 0, 0, 1, 1, 1, 1, 1, 2, 2]);
  const enc = encodeLabels(labels);

  it('without groups: the plain shuffle of the used samples, draw for draw', () => {
    const gen = labelingGenerator(enc.index, labels.length, 4);
    const gen0 = labelingGenerator(enc.index, labels.length, 4, null);
    const rng = new Rng(4);
    const used = [0, 1, 2, 3, 4, 6, 7, 8, 9];
    expect(gen()).toEqual(enc.index);
    gen0();
    for (let r = 0; r < 20; r++) {
      const perm = rng.shuffle(Int32Array.from(used, (i) => enc.index[i]!));
      const want = new Int32Array(labels.length).fill(-1);
      used.forEach((i, u) => (want[i] = perm[u]!));
      const got = gen();
      expect(got).toEqual(want);
      expect(gen0()).toEqual(got);
    }
  });

  it("with groups: every group keeps its labels, a one-label group and the left-out sample never move, a group's arrangements come up alike", () => {
    const gen = labelingGenerator(enc.index, labels.length, 7, groups);
    expect(gen()).toEqual(enc.index);
    const seen = new Map<string, number>();
    for (let r = 0; r < 3000; r++) {
      const l = gen();
      const of = (g: number) => [...l].filter((_, i) => groups[i] === g && enc.index[i]! >= 0).sort();
      expect(of(0)).toEqual([0, 0, 1]);
      expect(of(1)).toEqual([0, 0, 1, 1]);
      expect([l[8], l[9]]).toEqual([2, 2]);
      expect(l[5]).toBe(-1);
      const k = [l[0], l[1], l[2]].join('');
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    // A A B: 3 arrangements, 1000 each (binomial sd ≈ 26)
    expect(seen.size).toBe(3);
    for (const c of seen.values()) expect(Math.abs(c - 1000)).toBeLessThan(110);
  });

  it("refuses groups that each hold one label (a whole-group shuffle would change the labels' sizes)", () => {
    expect(() => labelingGenerator(encodeLabels(['A', 'A', 'B', 'B']).index, 4, 1, Int32Array.from([0, 0, 1, 1])))
      .toThrow(/every item group holds one label/);
  });
});

/** 16 trees of 6 samples; tree t raises column block t (gains falling within each label's 8 trees); 5 of a tree's 6 samples have its label. */
function planted() {
  const rng = new Rng(2);
  const per = 6;
  const n = 16 * per;
  const d = 256;
  const gain = [8, 7, 6, 5, 1, 1, 1, 1];
  const data = new Float32Array(n * d);
  const labels: string[] = [];
  const groups = new Int32Array(n);
  for (let t = 0; t < 16; t++) {
    for (let k = 0; k < per; k++) {
      const i = t * per + k;
      groups[i] = t;
      const home = t < 8 ? 'A' : 'B';
      labels.push(k < 5 ? home : home === 'A' ? 'B' : 'A');
      for (let j = 0; j < d; j++) data[i * d + j] = rng.normal();
      for (let j = 16 * t; j < 16 * t + 16; j++) data[i * d + j] = data[i * d + j]! * gain[t % 8]!;
    }
  }
  return { source: memorySource(n, { 'layers.0.mlp.down_in': { dim: d, data } }), labels, groups };
}

describe('a label readable only through the trees', () => {
  it("item shuffles find the two labels' regions more apart than chance; shuffles within the trees do not", async () => {
    const { source, labels, groups } = planted();
    const block: [number, number] = [16, 16];
    const m = matrixInfo('model.layers.0.mlp.down_proj.weight', 0, 'down_proj', 'layers.0.mlp.down_in', 32, 256, block);
    const colsums = new Map([[m.name, new Float32Array(2 * 256).fill(1)]]);
    const opts = { block, top: { kind: 'fraction' as const, value: 0.25, scope: 'matrix' as const }, permutations: 39,
      seed: 3 };
    const flat = await analyze({ matrices: [m], colsums, source, labels }, opts);
    const grouped = await analyze({ matrices: [m], colsums, source, labels, itemGroups: groups }, opts);
    const j = (r: typeof flat) => r.metrics.pairs[0]!.jaccard;
    // the observed regions are the same (the labels are); only the null differs
    expect(j(grouped).value).toBe(j(flat).value);
    expect(j(flat).value).toBe(0);
    // item shuffles put every tree's samples under both labels: the regions overlap (null mean
    // about 0.3) and the observed 0 sits in the tail; within the trees each label keeps its
    // trees, every shuffle's regions are as apart as the data's, and nothing is claimed
    expect(j(flat).nullMean!).toBeGreaterThan(0.2);
    expect(j(flat).pLower!).toBeLessThanOrEqual(0.05);
    expect(j(grouped).nullMean!).toBeLessThan(0.05);
    expect(j(grouped).pLower).toBe(1);
  });
});
