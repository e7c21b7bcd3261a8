/**
 * kNN with groups is leave-one-group-out: an item's sibling items (the same SocialEval world
 * tree, which share its story) are never its neighbours, as the probe's folds keep groups
 * whole. Planted: each group is a tight cluster of near-copies sharing one label, and the groups'
 * labels are drawn with no relation to where the groups lie. Item-level kNN then reads the
 * siblings and scores far above chance; leave-one-group-out kNN stays near chance.
 */
import { describe, expect, it } from 'vitest';
import { largestGroup, neighboursFromDistances } from '../../src/cluster/metrics.js';
import { spaceResult } from '../../src/cluster/space.js';
import { Rng } from '../../src/util/rng.js';

function planted(groupsN: number, size: number, d: number, seed: number) {
  const rng = new Rng(seed);
  const n = groupsN * size;
  const X = new Float64Array(n * d);
  const labels = new Int32Array(n);
  const groups = new Int32Array(n);
  for (let g = 0; g < groupsN; g++) {
    const centre = Array.from({ length: d }, () => rng.normal());
    const label = Math.floor(rng.next() * 4);
    for (let s = 0; s < size; s++) {
      const i = g * size + s;
      groups[i] = g;
      labels[i] = label;
      for (let j = 0; j < d; j++) X[i * d + j] = centre[j]! + 0.01 * rng.normal();
    }
  }
  return { X, labels, groups, n, d };
}

describe('kNN by groups', () => {
  it("no neighbour shares the item's group; without groups the siblings come first", () => {
    const { X, groups, n, d } = planted(30, 5, 8, 1);
    const D = new Float64Array(n * n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let t = 0; t < d; t++) s += (X[i * d + t]! - X[j * d + t]!) ** 2;
        D[i * n + j] = Math.sqrt(s);
      }
    }
    const k = 4;
    const grouped = neighboursFromDistances(D, n, k, groups);
    const plain = neighboursFromDistances(D, n, k);
    let same = 0;
    let plainSame = 0;
    for (let i = 0; i < n; i++) {
      for (let r = 0; r < k; r++) {
        if (groups[grouped[i * k + r]!] === groups[i]) same++;
        if (groups[plain[i * k + r]!] === groups[i]) plainSame++;
      }
    }
    expect(same).toBe(0);
    expect(plainSame).toBe(n * k); // the 4 near-copies are each item's 4 nearest
    expect(() => neighboursFromDistances(D, n, n - 4, groups)).toThrow(/a group holds 5 of 150/);
    expect(largestGroup(groups)).toBe(5);
  });

  it('a planted within-group leak: item-level kNN far above chance, grouped kNN near it', () => {
    const { X, labels, groups, n, d } = planted(60, 5, 8, 2);
    const classes = ['a', 'b', 'c', 'd'];
    const input = { space: 'original-euclidean', X, d, distance: 'euclidean' as const, probe: null };
    const opts = { k: 4, bootstrap: 20, permutations: 20, seed: 0 };
    const plain = spaceResult(input, n, labels, classes, opts).metrics;
    const grouped = spaceResult(input, n, labels, classes, { ...opts, probe: { groups } }).metrics;
    expect(plain.knn!.balancedAccuracy.value).toBeGreaterThan(0.95);
    expect(grouped.knn!.balancedAccuracy.value).toBeLessThan(0.45);
  });
});
