/**
 * The block sets of an ablation (src/ablate/regions.ts): Hugging Face coordinates of wanda
 * blocks (partial at the edges), set differences, and random regions: the same block count per
 * matrix (scope matrix), per layer or in all, drawn uniformly (every block's frequency over many
 * draws against its expectation, by a chi-square statistic computed here), seeded.
 */
import { describe, it, expect } from 'vitest';
import { countBlocks, hfBlocks, nullPools, poolCounts, randomRegion, randomSeed, regionMasks,
  type Masks } from '../../src/ablate/regions.js';
import type { WandaResults } from '../../src/ablate/regions.js';
import { tinyMatrices } from './fixture.js';

const matrices = tinyMatrices([48, 48]);
const region: Masks = matrices.map((m, k) => {
  const a = new Uint8Array(m.rowBlocks * m.colBlocks);
  for (let i = 0; i <= k; i++) a[(i * 5) % a.length] = 1; // 1, 2, … blocks in matrix 0, 1, …
  return a;
});

describe('random regions', () => {
  it('keep the count of every matrix (scope matrix)', () => {
    const pools = nullPools(matrices, 'matrix');
    const counts = poolCounts(region, pools);
    for (let s = 0; s < 20; s++) {
      const r = randomRegion(counts, pools, matrices, randomSeed(3, 0, s));
      r.forEach((m, k) => expect(countBlocks([m])).toBe(countBlocks([region[k]!])));
    }
  });

  it('keep the count of every layer (scope layer) and the total (scope global), not per matrix', () => {
    for (const scope of ['layer', 'global'] as const) {
      const pools = nullPools(matrices, scope);
      expect(pools).toHaveLength(scope === 'layer' ? 2 : 1);
      const counts = poolCounts(region, pools);
      let differs = 0;
      for (let s = 0; s < 20; s++) {
        const r = randomRegion(counts, pools, matrices, randomSeed(1, 0, s));
        pools.forEach((p, i) => expect(p.reduce((a, k) => a + countBlocks([r[k]!]), 0)).toBe(counts[i]));
        if (r.some((m, k) => countBlocks([m]) !== countBlocks([region[k]!]))) differs++;
      }
      expect(differs).toBeGreaterThan(10);
    }
  });

  it("are seeded and uniform over each matrix's blocks", () => {
    const pools = nullPools(matrices, 'matrix');
    const counts = poolCounts(region, pools);
    expect(randomRegion(counts, pools, matrices, 7)).toEqual(randomRegion(counts, pools, matrices, 7));
    expect(randomRegion(counts, pools, matrices, 7)).not.toEqual(randomRegion(counts, pools, matrices, 8));
    // Matrix 2 (3 of 12 blocks): each block is drawn with probability 3/12.
    const R = 4000;
    const freq = new Float64Array(12);
    for (let s = 0; s < R; s++) randomRegion(counts, pools, matrices, s)[2]!.forEach((v, i) => (freq[i] += v));
    const e = (R * 3) / 12;
    let chi2 = 0;
    for (const f of freq) chi2 += (f - e) ** 2 / e;
    // 11 degrees of freedom: the 0.999 quantile is 31.3.
    expect(chi2).toBeLessThan(31.3);
  });
});

describe('Hugging Face coordinates', () => {
  it('give rows and cols of each block, partial at the edges', () => {
    const m = matrices.map((x) => new Uint8Array(x.rowBlocks * x.colBlocks));
    m[0]![11] = 1; // gate_proj [256, 64] in 48×48 blocks: 6 × 2, block (5, 1)
    m[2]![5] = 1; // down_proj [64, 256]: 2 × 6, block (0, 5)
    expect(hfBlocks(m, matrices, [48, 48]).map(({ matrix: _, ...b }) => b)).toEqual([
      { tensor: 'model.layers.0.mlp.gate_proj.weight', rows: [240, 256], cols: [48, 64] },
      { tensor: 'model.layers.0.mlp.down_proj.weight', rows: [0, 48], cols: [240, 256] },
    ]);
  });

  it("A∖others keeps the blocks of A in no other group's region", () => {
    const w = {
      dir: '/x',
      settings: { by: 'g', groups: ['A', 'B', 'C'], block: [48, 48] },
      regions: { matrices,
        regions: { A: { 'layers.0.mlp.gate_proj': [0, 1, 2] }, B: { 'layers.0.mlp.gate_proj': [1] },
          C: { 'layers.0.mlp.gate_proj': [2, 3] } }, differences: [] },
    } as unknown as WandaResults;
    expect(Array.from(regionMasks(w, { name: 'A', minus: 'others' })[0]!.slice(0, 4))).toEqual([1, 0, 0, 0]);
    expect(Array.from(regionMasks(w, { name: 'A', minus: 'B' })[0]!.slice(0, 4))).toEqual([1, 0, 1, 0]);
  });
});
