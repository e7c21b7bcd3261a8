/**
 * --orders cyclic (src/eval/score.ts optionOrders): with K = n every option sits in every slot
 * exactly once (a Latin square) for every item; with K < n the answer visits K distinct slots;
 * over many items the answer's slot is uniform either way, but only cyclic balances it within
 * each item; orders are seeded by item id and `random` is unchanged by the new mode.
 */
import { describe, it, expect } from 'vitest';
import { optionOrders } from '../../src/eval/score.js';

const isPerm = (p: number[], n: number) => p.length === n && [...p].sort((a, b) => a - b).every((v, i) => v === i);

describe('option orders', () => {
  it('cyclic with K = n: a Latin square for every item', () => {
    for (const n of [2, 3, 4, 5, 7]) {
      for (let it = 0; it < 50; it++) {
        const o = optionOrders(`item-${it}`, n, n, 9, false, 'cyclic');
        expect(o.every((p) => isPerm(p, n))).toBe(true);
        // Every option in every slot exactly once.
        for (let opt = 0; opt < n; opt++) expect(new Set(o.map((p) => p.indexOf(opt))).size).toBe(n);
      }
    }
  });

  it('cyclic with K < n: the answer (any option) visits K distinct slots, spread around the ring', () => {
    const o = optionOrders('x', 4, 3, 1, false, 'cyclic');
    for (let opt = 0; opt < 4; opt++) expect(new Set(o.map((p) => p.indexOf(opt))).size).toBe(3);
    // Rotations by floor(s·n/K) = 0, 1, 2 slots of the first order.
    const base = o[0]!;
    expect(o[1]).toEqual(base.map((_, i) => base[(i + 1) % 4]));
    expect(o[2]).toEqual(base.map((_, i) => base[(i + 2) % 4]));
    const o8 = optionOrders('y', 8, 3, 1, false, 'cyclic');
    expect(o8[1]).toEqual(o8[0]!.map((_, i) => o8[0]![(i + 2) % 8]));
    expect(o8[2]).toEqual(o8[0]!.map((_, i) => o8[0]![(i + 5) % 8]));
  });

  it('random orders leave slots unbalanced within items (3 shuffles of 4: some slot is always missed, repeats are common)', () => {
    let repeats = 0;
    for (let it = 0; it < 400; it++) {
      const o = optionOrders(`item-${it}`, 4, 3, 0);
      if (new Set(o.map((p) => p.indexOf(0))).size < 3) repeats++;
    }
    // P(the answer repeats a slot among 3 independent uniform slots of 4) = 1 − 24/64 = 0.625.
    expect(Math.abs(repeats / 400 - 0.625)).toBeLessThan(0.08);
  });

  it('seeded by the item id; the first cyclic order is the dataset order with identityFirst', () => {
    expect(optionOrders('a', 4, 4, 3, false, 'cyclic')).toEqual(optionOrders('a', 4, 4, 3, false, 'cyclic'));
    expect(optionOrders('a', 4, 4, 3, false, 'cyclic')).not.toEqual(optionOrders('b', 4, 4, 3, false, 'cyclic'));
    expect(optionOrders('a', 4, 2, 3, true, 'cyclic')).toEqual([[0, 1, 2, 3], [2, 3, 0, 1]]);
    // The default mode is the random one, as before.
    expect(optionOrders('a', 4, 3, 3)).toEqual(optionOrders('a', 4, 3, 3, false, 'random'));
  });
});
