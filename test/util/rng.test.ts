/**
 * The seeded generator against an independent one written with BigInt arithmetic (no 32-bit
 * integer tricks): the seeding (a golden-ratio counter through a 32-bit finaliser) and
 * xoshiro128** itself, for seeds at the edges of the 32-bit range.
 */
import { describe, it, expect } from 'vitest';
import { Rng } from '../../src/util/rng.js';

const M = (1n << 32n) - 1n;
const rotl = (x: bigint, k: bigint) => ((x << k) | (x >> (32n - k))) & M;

function reference(seed: number): () => number {
  let x = BigInt(seed >>> 0);
  const next = () => {
    x = (x + 0x9e3779b9n) & M;
    let z = x;
    z = ((z ^ (z >> 16n)) * 0x85ebca6bn) & M;
    z = ((z ^ (z >> 13n)) * 0xc2b2ae35n) & M;
    return z ^ (z >> 16n);
  };
  const s = [next(), next(), next(), next()];
  if ((s[0]! | s[1]! | s[2]! | s[3]!) === 0n) s[0] = 1n;
  return () => {
    const result = (rotl((s[1]! * 5n) & M, 7n) * 9n) & M;
    const t = (s[1]! << 9n) & M;
    s[2] = s[2]! ^ s[0]!;
    s[3] = s[3]! ^ s[1]!;
    s[1] = s[1]! ^ s[2]!;
    s[0] = s[0]! ^ s[3]!;
    s[2] = s[2]! ^ t;
    s[3] = rotl(s[3]!, 11n);
    return Number(result);
  };
}

describe('Rng', () => {
  it('draws xoshiro128** words equal to a BigInt implementation, and next() from them', () => {
    for (const seed of [0, 1, 42, 0x7fffffff, 0x80000000, 0xffffffff]) {
      const ref = reference(seed);
      const rng = new Rng(seed);
      for (let i = 0; i < 3000; i++) expect(rng.nextU32(), `seed ${seed}, draw ${i}`).toBe(ref());
      const hi = ref() >>> 5;
      const lo = ref() >>> 6;
      expect(rng.next()).toBe((hi * 67108864 + lo) / 9007199254740992);
    }
  });
});
