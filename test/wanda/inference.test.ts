/**
 * What the region metrics can claim (src/wanda/inference.ts, placement.ts, channels.ts):
 * the random-placement null against the exact enumeration and the hypergeometric expectation
 * (goldens from test/goldens/stats/make_stats_goldens.py), a planted compact set found denser
 * than random and a random set not; the direct test of the group RMS s_g finding the planted
 * channels and nothing under shuffled labels; Jaccard's pLower equal to isolation's p (one
 * test); the family corrections wired to the values they correct; the block-size × top sweep's
 * rows equal to each configuration run on its own.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { analyze, matrixInfo } from '../../src/wanda/analyze.js';
import { memorySource } from '../../src/wanda/stats.js';
import { addInference, setPlacement } from '../../src/wanda/inference.js';
import { randomDensity, randomSlots, randomPlacement, placementNull } from '../../src/wanda/placement.js';
import { channelSpread, channelSpreadSimd, spreadParamBytes } from '../../src/wanda/channels.js';
import { createSimd } from '../../src/wanda/simd.js';
import { holm, benjaminiHochberg } from '../../src/util/stats.js';
import { Rng } from '../../src/util/rng.js';
import type { WandaMatrix } from '../../src/wanda/types.js';
import { syntheticModel, syntheticActivations, cleanupTmp, type Plant } from './helpers.js';
import { cases } from '../goldens/cases.js';

afterAll(cleanupTmp);

const G = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '..', 'goldens', 'stats', 'stats_goldens.json'), 'utf8'),
);
const mat = (R: number, K: number, name = 'm'): WandaMatrix => ({ name, layer: 0, proj: 'gate_proj',
  input: 'layers.0.mlp.in', dOut: R, dIn: K, rowBlocks: R, colBlocks: K });

/** In-set neighbour slots of a mask, counted here. */
function inSetSlots(mask: Uint8Array, R: number, K: number): number {
  let n = 0;
  for (let r = 0; r < R; r++)
    for (let c = 0; c < K; c++) {
      if (!mask[r * K + c]) continue;
      if (r > 0) n += mask[(r - 1) * K + c];
      if (r < R - 1) n += mask[(r + 1) * K + c];
      if (c > 0) n += mask[r * K + c - 1];
      if (c < K - 1) n += mask[r * K + c + 1];
    }
  return n;
}

describe('random-placement null', () => {
  it('the expected in-set slots are hypergeometric, and the random density is (k − 1)/(n − 1) for one matrix', () => {
    for (const g of cases(G, 'placement')) {
      const m = mat(g.rows, g.cols);
      expect(randomSlots([g.k], [m]).inSet).toBeCloseTo(g.hypergeometricInSet, 12);
      expect(randomDensity([g.k], [m])).toBeCloseTo(g.ratioOfExpectations, 12);
    }
  });

  it('random placements have the exact mean density (enumeration of every subset) and the hypergeometric mean in-set slots', () => {
    const R = 20000;
    for (const g of cases(G, 'placement')) {
      const m = mat(g.rows, g.cols);
      const nul = placementNull([g.k], [m], R, 7);
      const mean = nul.density.reduce((a, b) => a + b, 0) / R;
      const sd = Math.sqrt(nul.density.reduce((a, b) => a + (b - mean) ** 2, 0) / (R - 1));
      expect(Math.abs(mean - g.meanDensity), `${g.rows}x${g.cols} k=${g.k}`).toBeLessThan(
        4 * sd / Math.sqrt(R) + 1e-12,
      );
      const rng = new Rng(3);
      let s = 0;
      let s2 = 0;
      for (let r = 0; r < R; r++) {
        const x = inSetSlots(randomPlacement([g.k], [m], rng)[0]!, g.rows, g.cols);
        expect(x % 2).toBe(0);
        s += x;
        s2 += x * x;
      }
      const sdx = Math.sqrt((s2 - (s * s) / R) / (R - 1));
      expect(Math.abs(s / R - g.hypergeometricInSet)).toBeLessThan(4 * sdx / Math.sqrt(R));
    }
  });

  it("keeps each matrix's count", () => {
    const ms = [mat(6, 7, 'a'), mat(3, 4, 'b')];
    const masks = randomPlacement([30, 2], ms, new Rng(1));
    expect(masks.map((m) => m.reduce((a, b) => a + b, 0))).toEqual([30, 2]);
  });

  it('a compact square is denser than random placements of its size; a random set is not', () => {
    const m = mat(16, 16);
    const sq = new Uint8Array(256);
    for (let r = 4; r < 8; r++) for (let c = 4; c < 8; c++) sq[r * 16 + c] = 1;
    const a = setPlacement([sq], [m], 199, 1);
    expect(a.size).toBe(16);
    expect(a.randomDensity).toBeCloseTo(15 / 255, 12);
    // 4×4 square: 48 in-set of 64 slots.
    expect(a.density.value).toBeCloseTo(48 / 64, 12);
    expect(a.densityRatio).toBeCloseTo((48 / 64) / (15 / 255), 10);
    expect(a.density.p).toBeCloseTo(1 / 200, 12);
    expect(a.components.pLower).toBeCloseTo(1 / 200, 12);
    expect(a.density.z!).toBeGreaterThan(5);
    let small = 0;
    for (let seed = 0; seed < 20; seed++) {
      const rnd = randomPlacement([16], [m], new Rng(100 + seed))[0]!;
      if (setPlacement([rnd], [m], 199, seed).density.p! < 0.05) small++;
    }
    expect(small).toBeLessThanOrEqual(4);
  });
});

const BLOCK = 16;
const H = 64;
const I = 128;
const PLANTS: Plant[] = [
  { group: 'A', hiddenBlock: 1, interBlock: 2, weightGain: 2, activationGain: 4 },
  { group: 'B', hiddenBlock: 3, interBlock: 5, weightGain: 2, activationGain: 4 },
];
const labels = Array.from({ length: 90 }, (_, r) => ['A', 'B', 'C'][r % 3]!);

async function plantedAnalysis(labs: string[], R: number) {
  const model = syntheticModel(11, 2, H, I, { block: BLOCK, plants: PLANTS });
  const hooks = syntheticActivations(12, model, labels, { block: BLOCK, plants: PLANTS });
  const infos: WandaMatrix[] = [];
  const colsums = new Map<string, Float32Array>();
  for (let l = 0; l < 2; l++) {
    for (const proj of ['gate_proj', 'up_proj', 'down_proj']) {
      const { w, dOut, dIn } = model.weights.get(`model.layers.${l}.mlp.${proj}.weight`)!;
      const name = `layers.${l}.mlp.${proj}`;
      infos.push(
        matrixInfo(name, l, proj, proj === 'down_proj' ? `layers.${l}.mlp.down_in` : `layers.${l}.mlp.in`, dOut, dIn, [
          BLOCK,
          BLOCK,
        ]),
      );
      const C = new Float32Array(Math.ceil(dOut / BLOCK) * dIn);
      for (let i = 0; i < dOut; i++)
        for (let j = 0; j < dIn; j++) C[Math.floor(i / BLOCK) * dIn + j] += Math.abs(w[i * dIn + j]);
      colsums.set(name, C);
    }
  }
  const res = await analyze({ matrices: infos, colsums, source: memorySource(labs.length, hooks), labels: labs }, {
    block: [BLOCK, BLOCK],
    top: { kind: 'fraction', value: 0.1, scope: 'matrix' },
    permutations: R,
    seed: 1,
  });
  return { res, hooks,
    metrics: addInference(res.metrics, res.regions, res.nulls, { placements: R, seed: 1, channels: res.channels }) };
}

describe('the per-channel RMS test', () => {
  it('channelSpread is Σ_g (n_g/N)(s_g/s − 1)² with s the overall RMS', () => {
    // Two groups (sizes 1 and 3), two channels.
    const s = [2, 0, 1, 0];
    const t = channelSpread(s, [1, 3], 2);
    const all = Math.sqrt((1 * 4 + 3 * 1) / 4);
    expect(t[0]).toBeCloseTo(0.25 * (2 / all - 1) ** 2 + 0.75 * (1 / all - 1) ** 2, 12);
    expect(t[1]).toBe(0);
  });

  it('channelSpread equals the formula channel by channel to the bit (5 groups, zero channels, reused buffers)', () => {
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
    const counts = [3, 1, 4, 1, 5];
    const N = 14;
    const d = 257;
    const out = new Float64Array(d);
    const work = new Float64Array(d);
    for (let rep = 0; rep < 3; rep++) {
      const s = Float64Array.from({ length: counts.length * d },
        (_, i) => (i % d) % 11 === 0 ? 0 : rnd() * 10 ** (rnd() * 6 - 3));
      const got = channelSpread(s, counts, d, out, work);
      for (let j = 0; j < d; j++) {
        let m = 0;
        for (let g = 0; g < counts.length; g++) m += counts[g]! * s[g * d + j]! ** 2;
        const all = Math.sqrt(m / N);
        let want = 0;
        if (all > 0) {
          for (let g = 0; g < counts.length; g++) want += (counts[g]! / N) * (s[g * d + j]! / all - 1) ** 2;
        }
        expect(Object.is(got[j], want), `channel ${j}: ${got[j]} against ${want}`).toBe(true);
      }
      // The WebAssembly kernel (two channels a step, the odd last one in JavaScript) gives the same bits.
      const k = createSimd();
      if (!k) continue;
      for (const dd of [d, d - 1, 1]) {
        const sOff = 64;
        const pOff = sOff + counts.length * dd * 8 + 8;
        const tOff = pOff + spreadParamBytes(counts.length) + 8;
        k.ensure(tOff + dd * 8);
        const sv = new Float64Array(k.memory.buffer, sOff, counts.length * dd);
        for (let g = 0; g < counts.length; g++) sv.set(s.subarray(g * d, g * d + dd), g * dd);
        const simd = channelSpreadSimd(k, sOff, dd, counts, pOff, tOff);
        const js = channelSpread(sv.slice(), counts, dd);
        expect(Buffer.from(simd.buffer, simd.byteOffset, dd * 8).equals(Buffer.from(js.buffer)), `d = ${dd}`).toBe(
          true,
        );
      }
    }
  });

  it('finds the planted channels of the planted groups, and nothing under shuffled labels', async () => {
    const { res, metrics, hooks } = await plantedAnalysis(labels, 199);
    const ch = metrics.channels!;
    expect(ch.map((c) => c.hook)).toEqual(['layers.0.mlp.in', 'layers.0.mlp.down_in', 'layers.1.mlp.in',
      'layers.1.mlp.down_in']);
    // The observed value against its definition, from the activations.
    const x = hooks['layers.0.mlp.in']!;
    const rms = (rows: number[], j: number) =>
      Math.sqrt(rows.reduce((a, r) => a + x.data[r * H + j]! ** 2, 0) / rows.length);
    const rowsOf = (g: string) => labels.flatMap((l, r) => (l === g ? [r] : []));
    let T = 0;
    for (let j = 0; j < H; j++) {
      const all = rms(labels.map((_, r) => r), j);
      T += ['A', 'B', 'C'].reduce((a, g) => a + (30 / 90) * (rms(rowsOf(g), j) / all - 1) ** 2, 0);
    }
    expect(ch[0]!.value).toBeCloseTo(T / H, 6);
    for (const c of ch) {
      expect(c.p).toBeCloseTo(1 / 200, 12);
      expect(c.pHolm).toBeCloseTo(4 / 200, 12);
      const planted = c.hook.endsWith('down_in') ? [2, 5] : [1, 3];
      for (const t of c.top) {
        expect(planted).toContain(Math.floor(t.channel / BLOCK));
        expect(t.high).toBe(Math.floor(t.channel / BLOCK) === planted[0] ? 'A' : 'B');
        expect(t.q!).toBeLessThan(0.05);
      }
      // 32 planted channels per capture point pass BH; few others.
      expect(c.channelsBH05!).toBeGreaterThanOrEqual(32);
      expect(c.channelsBH05!).toBeLessThanOrEqual(36);
    }
    expect(res.channels!.length).toBe(4);
    // each capture point's per-channel BH family is written into declaredFamilies (not into metrics.channels):
    // its members the H (mlp.in) or I (down_in) channels the capture point has, its size the channels with a p
    const fams = new Map(metrics.declaredFamilies!.map((f) => [f.family, f]));
    for (const c of ch) {
      expect(c.family).toBeUndefined();
      const d = c.hook.endsWith('down_in') ? I : H;
      const f = fams.get(`channels ${c.hook}`)!;
      expect(f).toMatchObject({ size: d, correction: ['bh'], alpha: 0.05 });
      expect(f.members).toEqual(Array.from({ length: d }, (_, j) => String(j)));
      expect(c.channels).toBe(d);
    }
    expect(metrics.declaredFamilies!.map((f) => f.family).filter((n) => n.startsWith('channels '))).toEqual(
      ch.map((c) => `channels ${c.hook}`),
    );
    // the declared families are what the plan implies: the 3 pairs of A, B, C, their 6 differences, the 3 groups, the 4 capture points
    const pairs = [['A', 'B'], ['A', 'C'], ['B', 'C']];
    expect(fams.get('region-pairs')!.members).toEqual(pairs.map(([a, b]) => `${a} | ${b}`));
    expect(fams.get('isolation')!.members).toEqual(pairs.flatMap(([a, b]) => [`${a} ∖ ${b}`, `${b} ∖ ${a}`]));
    expect(fams.get('placement-group-density')!.members).toEqual(['A', 'B', 'C']);
    expect(fams.get('capture-points')!.members).toEqual(['layers.0.mlp.in', 'layers.0.mlp.down_in', 'layers.1.mlp.in',
      'layers.1.mlp.down_in']);

    const shuffled = new Rng(5).shuffle(labels.slice());
    const null0 = (await plantedAnalysis(shuffled, 99)).metrics.channels!;
    // The planted groups are split evenly by the shuffle, so the channels no longer differ.
    expect(null0.filter((c) => c.pHolm! < 0.05).length).toBe(0);
  });
});

describe('region pairs: one test for Jaccard and isolation, corrected families', () => {
  it("Jaccard's pLower equals both isolations' p; Holm and BH are applied over the family", async () => {
    const { metrics } = await plantedAnalysis(labels, 99);
    for (const p of metrics.pairs) {
      expect(p.isolationAB.p).toBe(p.jaccard.pLower);
      expect(p.isolationBA.p).toBe(p.jaccard.pLower);
    }
    const jl = metrics.pairs.map((p) => p.jaccard.pLower!);
    expect(metrics.pairs.map((p) => p.jaccard.pLowerHolm)).toEqual(holm(jl));
    expect(metrics.pairs.map((p) => p.jaccard.pLowerBH)).toEqual(benjaminiHochberg(jl));
    const dens = metrics.pairs.flatMap((p) => [p.densityAminusB.p, p.densityBminusA.p]);
    expect(metrics.pairs.flatMap((p) => [p.densityAminusB.pHolm, p.densityBminusA.pHolm])).toEqual(holm(dens));
    const pl = metrics.pairs.flatMap((p) => [p.placementAminusB!.density.p, p.placementBminusA!.density.p]);
    expect(metrics.pairs.flatMap((p) => [p.placementAminusB!.density.pBH, p.placementBminusA!.density.pBH])).toEqual(
      benjaminiHochberg(pl),
    );
    expect(metrics.families).toEqual({ jaccard: 3, differences: 6, groups: 3, capturePoints: 4 });
    // the same families declared in the registry's shape, each with the number of p-values adjusted
    const fams = new Map(metrics.declaredFamilies!.map((f) => [f.family, f]));
    expect(fams.get('region-pairs')).toMatchObject({ size: 3, members: metrics.pairs.map((p) => `${p.a} | ${p.b}`),
      correction: ['holm', 'bh'], alpha: 0.05 });
    expect(fams.get('set-differences')!.size).toBe(6);
    expect(fams.get('set-differences')!.members).toHaveLength(6);
    expect(fams.get('group-density')!.size).toBe(3);
    expect(fams.get('capture-points')!.size).toBe(4);
    expect(fams.get('placement-set-differences')!.size).toBe(6);
    for (const f of metrics.declaredFamilies!) expect(f.size, f.family).toBeLessThanOrEqual(f.members.length);
    expect(metrics.pFloor).toBeCloseTo(0.01, 12);
    expect(metrics.notes!.join(' ')).toContain('one test');
    // The placement figures of a difference match a direct computation on its blocks.
    const sizeAB = metrics.pairs[0]!.sizeAminusB;
    expect(metrics.pairs[0]!.placementAminusB!.size).toBe(sizeAB);
    expect(metrics.pairs[0]!.placementAminusB!.density.value).toBe(metrics.pairs[0]!.densityAminusB.value);
  });
});

describe('the block-size × top-fraction sweep', () => {
  it('one row per configuration, each equal to that configuration run on its own', async () => {
    const { runWanda } = await import('../../src/wanda/index.js');
    const { writeCheckpoint, writeRun, tmpDir } = await import('./helpers.js');
    const { existsSync: ex, readFileSync: rf } = await import('node:fs');
    const dir = tmpDir();
    const model = syntheticModel(41, 2, H, I, { block: BLOCK, plants: PLANTS });
    const hooks = syntheticActivations(42, model, labels, { block: BLOCK, plants: PLANTS });
    const ck = path.join(dir, 'ckpt');
    writeCheckpoint(ck, model, 'F32', 1);
    const runDir = path.join(dir, 'run');
    writeRun(runDir, labels.map((l) => ({ aspect: l })), hooks);
    const res = await runWanda(runDir, { weights: ck, block: 16, permutations: 39, seed: 3, quiet: true,
      sweep: { blocks: [8, 16], tops: [0.1, 0.2] } });
    const rows = res.metrics.sensitivity!;
    expect(rows.map((r) => [r.block, r.top])).toEqual([[8, 0.1], [8, 0.2], [16, 0.1], [16, 0.2]]);
    expect(rf(path.join(runDir, 'wanda', 'sensitivity.csv'), 'utf8').trim().split('\n').length).toBe(5);
    for (const r of rows) {
      const one = await runWanda(runDir, { weights: ck, block: r.block, top: { kind: 'fraction', value: r.top },
        permutations: 39, seed: 3, quiet: true });
      const m = one.metrics;
      expect(r.jaccardBelowNullHolm).toBe(m.pairs.filter((p) => p.jaccard.pLowerHolm! <= 0.05).length);
      expect(r.meanJaccard).toBeCloseTo(m.pairs.reduce((a, p) => a + p.jaccard.value, 0) / m.pairs.length, 12);
      expect(r.denserThanRandomHolm).toBe(
        m.pairs.flatMap((p) => [p.placementAminusB!, p.placementBminusA!]).filter((x) => x.density.pHolm! <= 0.05)
          .length,
      );
      expect(r.selected).toBe(m.groups[0]!.regionSize);
    }
    // The planted groups' regions stay apart at every grid: A vs B overlaps less than shuffled labels.
    expect(rows.every((r) => r.jaccardBelowNull >= 1)).toBe(true);
    expect(ex(path.join(runDir, 'wanda', 'sensitivity.csv'))).toBe(false); // the last single run replaced the folder
  }, 120_000);
});
