/**
 * Which label the map's islands follow: planted maps whose islands are one axis exactly (kNN in
 * the map must score 1 for it, chance for an unrelated axis, and the first line must name it),
 * and the neighbour lists against a sort of all distances written here.
 */
import { describe, it, expect } from 'vitest';
import { axisFits, islandLine, mapNeighbours, neighbourVoteBA, ISLAND_K } from '../../src/report/islands.js';
import { Rng } from '../../src/util/rng.js';

/** Two far islands (language 0 / 1), five aspects drawn at random over both. */
function plantedMap(n: number, seed: number) {
  const rng = new Rng(seed);
  const x = new Float64Array(n);
  const y = new Float64Array(n);
  const lang = new Int32Array(n);
  const aspect = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    lang[i] = i % 2;
    aspect[i] = rng.int(5);
    x[i] = (lang[i] ? 50 : -50) + rng.normal() * 3;
    y[i] = rng.normal() * 3;
  }
  return { x, y, lang, aspect };
}

describe('islands of the map', () => {
  it("finds each point's nearest points as a full sort of the distances does", () => {
    const { x, y } = plantedMap(60, 1);
    const k = 7;
    const nb = mapNeighbours(x, y, k);
    for (let i = 0; i < 60; i++) {
      const order = Array.from({ length: 60 }, (_, j) => j).filter((j) => j !== i)
        .sort((a, b) =>
          ((x[a]! - x[i]!) ** 2 + (y[a]! - y[i]!) ** 2) - ((x[b]! - x[i]!) ** 2 + (y[b]! - y[i]!) ** 2) || a - b
        );
      expect(Array.from(nb.subarray(i * k, i * k + k))).toEqual(order.slice(0, k));
    }
  });

  it('balanced accuracy of the vote: the mean recall over classes, written out for a small case', () => {
    // 4 points, k = 1: point 0's nearest is 1, 1's is 0, 2's is 3, 3's is 2
    const nb = Int32Array.from([1, 0, 3, 2]);
    // labels a a b a: recalls a: points 0,1 right, 3 wrong (nearest is b) → 2/3; b: point 2 wrong → 0
    expect(neighbourVoteBA(nb, 1, Int32Array.from([0, 0, 1, 0]), 2)).toBeCloseTo((2 / 3 + 0) / 2, 12);
    // a class without points (C = 3, class 2 unused) is left out of the mean, as chance 1/C counts present classes
    expect(neighbourVoteBA(nb, 1, Int32Array.from([0, 0, 1, 0]), 3)).toBeCloseTo((2 / 3 + 0) / 2, 12);
  });

  it('scores the island axis 1 and the unrelated axis at chance, and the first line names the island axis', () => {
    const { x, y, lang, aspect } = plantedMap(400, 2);
    const fits = axisFits(x, y, [{ axis: 'aspect', codes: aspect, classes: 5 }, { axis: 'language', codes: lang,
      classes: 2 }]);
    const f = Object.fromEntries(fits.map((a) => [a.axis, a]));
    expect(f.language!.balancedAccuracy).toBe(1);
    expect(f.language!.adjusted).toBe(1);
    expect(f.language!.chance).toBe(0.5);
    expect(f.language!.p).toBeCloseTo(1 / 201, 12);
    expect(f.language!.nullBand[1]).toBeLessThan(0.6);
    expect(Math.abs(f.aspect!.balancedAccuracy - 0.2)).toBeLessThan(0.08);
    expect(f.aspect!.chance).toBe(0.2);
    expect(f.aspect!.p).toBeGreaterThan(0.05);
    expect(Math.abs(f.aspect!.nullMean - 0.2)).toBeLessThan(0.02);
    const line = islandLine(fits, 'aspect')!;
    expect(line).toMatch(
      new RegExp(
        `^The map's islands follow "language" better than "aspect", the label it is coloured by: the ${ISLAND_K} nearest points in the 2-D map predict a point's language with balanced accuracy 1\\.00 for language \\(chance 0\\.50, null 0\\.\\d\\d \\[0\\.\\d\\d, 0\\.\\d\\d\\], p = 0\\.005; adjusted 1\\.00\\), against 0\\.\\d\\d for aspect \\(chance 0\\.20`,
      ),
    );
    // coloured by the island axis itself: nothing to say
    expect(islandLine(fits, 'language')).toBeNull();
  });

  it('says nothing when the other axis is no better, or does not beat its null', () => {
    const { x, y, lang } = plantedMap(200, 3);
    const rng = new Rng(5);
    const noise = Int32Array.from({ length: 200 }, () => rng.int(3));
    const fits = axisFits(x, y, [{ axis: 'language', codes: lang, classes: 2 }, { axis: 'noise', codes: noise,
      classes: 3 }]);
    expect(islandLine(fits, 'language')).toBeNull();
    expect(fits.find((a) => a.axis === 'noise')!.p).toBeGreaterThan(0.05);
  });

  it('measures a seeded sample of a large map, the same on every call', () => {
    const { x, y, lang } = plantedMap(5000, 4);
    const a = axisFits(x, y, [{ axis: 'language', codes: lang, classes: 2 }], 3);
    const b = axisFits(x, y, [{ axis: 'language', codes: lang, classes: 2 }], 3);
    expect(a[0]!.n).toBe(4000);
    expect(a).toEqual(b);
    expect(a[0]!.balancedAccuracy).toBe(1);
  });
});
