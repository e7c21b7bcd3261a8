/**
 * The permutation null's block sets as bits (src/wanda/bitsets.ts) against regions.ts's byte
 * masks (the oracle: one byte per block, neighbours looked up one by one, components by flood
 * fill). Shapes cover rows of one word, of exactly 32 and 64 blocks, of 33 and 70 (a partial
 * last word), one row, one column and a single block; sets from empty to full, with runs that
 * cross word boundaries; scores with ties at the threshold.
 */
import { describe, it, expect } from 'vitest';
import { selectTop, minus, size, intersectionSize, densityCounts, components, type Masks,
  type TopSpec } from '../../src/wanda/regions.js';
import { bitLayout, selectTopBits, countAnd, andNot, densityBits, componentsBits, RunScratch, popcount,
  type BitLayout } from '../../src/wanda/bitsets.js';
import { placementNull, randomPlacement } from '../../src/wanda/placement.js';
import { density } from '../../src/wanda/regions.js';
import { Rng } from '../../src/util/rng.js';
import type { WandaMatrix } from '../../src/wanda/types.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SHAPES: [number, number][] = [[7, 16], [5, 32], [4, 33], [3, 64], [6, 70], [1, 40], [9, 1], [1, 1], [2, 95]];
const matrices: WandaMatrix[] = SHAPES.map(([R, K], i) => ({ name: `m${i}`, layer: 0, proj: 'p', input: 'h',
  dOut: R * 8, dIn: K * 8, rowBlocks: R, colBlocks: K })
);

function toBits(masks: Masks, L: BitLayout): Uint32Array {
  const out = new Uint32Array(L.words);
  masks.forEach((m, k) => {
    for (let i = 0; i < m.length; i++) {
      if (!m[i]) continue;
      const r = Math.floor(i / L.K[k]!);
      const c = i - r * L.K[k]!;
      out[L.off[k]! + r * L.W[k]! + (c >>> 5)] |= 1 << (c & 31);
    }
  });
  return out;
}

/** Masks with density p, plus a few whole rows (runs across words) when `rows`. */
function randomMasks(r: () => number, p: number, rows: boolean): Masks {
  return matrices.map((m) => {
    const a = new Uint8Array(m.rowBlocks * m.colBlocks);
    for (let i = 0; i < a.length; i++) a[i] = r() < p ? 1 : 0;
    if (rows) { for (let row = 0; row < m.rowBlocks; row += 2) a.fill(1, row * m.colBlocks, (row + 1) * m.colBlocks); }
    return a;
  });
}

describe('block sets as bits', () => {
  const L = bitLayout(matrices);
  const runs = new RunScratch(L);
  const res = new Float64Array(3);

  it('popcount counts bits of every 32-bit pattern class', () => {
    const r = rng(3);
    for (let t = 0; t < 2000; t++) {
      const x = (r() * 2 ** 32) >>> 0;
      let n = 0;
      for (let b = 0; b < 32; b++) n += (x >>> b) & 1;
      expect(popcount(x | 0)).toBe(n);
    }
    expect(popcount(-1)).toBe(32);
    expect(popcount(0)).toBe(0);
  });

  it('size, density, components, intersections and differences equal regions.ts on every shape', () => {
    const r = rng(11);
    for (const p of [0, 0.05, 0.3, 0.6, 0.95, 1]) {
      for (const rows of [false, true]) {
        const A = randomMasks(r, p, rows);
        const B = randomMasks(r, 1 - p / 2, false);
        const a = toBits(A, L);
        const b = toBits(B, L);
        for (const [masks, bits] of [[A, a], [B, b]] as const) {
          densityBits(bits, L, res);
          const dc = densityCounts(masks, matrices);
          expect([res[0], res[1], res[2]], `p=${p}`).toEqual([size(masks), dc.inSet, dc.slots]);
          expect(componentsBits(bits, L, runs), `p=${p} rows=${rows}`).toBe(components(masks, matrices));
        }
        expect(countAnd(a, b, L.words)).toBe(intersectionSize(A, B));
        const amb = new Uint32Array(L.words);
        andNot(a, b, amb, L.words);
        expect(amb).toEqual(toBits(minus(A, B), L));
      }
    }
  });

  it('components of shapes that join late (a U, a spiral, a checkerboard) equal the flood fill', () => {
    const K = 70;
    const R = 6;
    const ms: WandaMatrix[] = [{ name: 'u', layer: 0, proj: 'p', input: 'h', dOut: R, dIn: K, rowBlocks: R,
      colBlocks: K }];
    const Lu = bitLayout(ms);
    const sc = new RunScratch(Lu);
    const cases: ((r: number, c: number) => boolean)[] = [
      (r, c) => c === 0 || c === K - 1 || r === R - 1, // a U: two arms joined in the last row
      (r, c) => (r + c) % 2 === 0, // checkerboard: every block its own component
      (r, c) => (r % 2 === 0 ? true : r % 4 === 1 ? c === K - 1 : c === 0), // a snake through every row
      (r, c) => c % 3 !== 2 && (r + Math.floor(c / 3)) % 2 === 0, // W-shapes across the word boundary at 32
      (r, c) => c === 31 || c === 32 || (r === 2 && c > 20), // a column pair straddling words
    ];
    for (const f of cases) {
      const m = new Uint8Array(R * K);
      for (let r = 0; r < R; r++) for (let c = 0; c < K; c++) m[r * K + c] = f(r, c) ? 1 : 0;
      expect(componentsBits(toBits([m], Lu), Lu, sc)).toBe(components([m], ms));
      densityBits(toBits([m], Lu), Lu, res);
      const dc = densityCounts([m], ms);
      expect([res[1], res[2]]).toEqual([dc.inSet, dc.slots]);
    }
  });

  it("selectTopBits selects selectTop's blocks, with ties at the threshold broken in flat order", () => {
    const r = rng(5);
    const work = new Float32Array(1000);
    const bits = new Uint32Array(L.words);
    const tops: TopSpec[] = [
      { kind: 'fraction', value: 0.1, scope: 'matrix' },
      { kind: 'fraction', value: 0.5, scope: 'matrix' },
      { kind: 'count', value: 3, scope: 'matrix' },
      { kind: 'count', value: 0, scope: 'matrix' },
    ];
    for (const top of tops) {
      for (const levels of [0, 3, 1]) {
        // levels 0: continuous scores; otherwise only `levels` distinct values, so many ties.
        const scores = matrices.map((m) =>
          Float32Array.from({ length: m.rowBlocks * m.colBlocks }, () => (levels ? Math.floor(r() * levels) : r()))
        );
        selectTopBits(scores, L, top, bits, work);
        expect(bits, `${top.kind} ${top.value} levels ${levels}`).toEqual(toBits(selectTop(scores, matrices, top), L));
      }
    }
  });

  it("placementNull gives, placement by placement, the density and components of randomPlacement's byte masks", () => {
    // Sizes from empty to full, and past half a matrix (the complement is drawn).
    for (const counts of [matrices.map((m) => Math.floor((m.rowBlocks * m.colBlocks) / 10)),
      matrices.map((m, k) => (k % 3 === 0
        ? m.rowBlocks * m.colBlocks - 1
        : k % 3 === 1
        ? 0
        : Math.ceil((m.rowBlocks * m.colBlocks) * 0.7))
      )])
    {
      const R = 40;
      const got = placementNull(counts, matrices, R, 9);
      const rng = new Rng(9);
      for (let r = 0; r < R; r++) {
        const masks = randomPlacement(counts, matrices, rng);
        expect(got.density[r], `placement ${r}`).toBe(density(masks, matrices));
        expect(got.components[r], `placement ${r}`).toBe(components(masks, matrices));
      }
    }
  });
});
