/**
 * Planted ground truth on synthetic inputs: a Llama-shaped MLP (2 layers, hidden 64,
 * intermediate 128, 16×16 blocks) whose weight blocks [G, F] (gate/up) and [F, G] (down)
 * are amplified, and activations where one group's samples are amplified on the matching
 * features. These activations are constructed directly (not captured from a model); the
 * end-to-end path through extract is in e2e.test.ts.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { analyze, matrixInfo } from '../../src/wanda/analyze.js';
import { memorySource } from '../../src/wanda/stats.js';
import { runWanda } from '../../src/wanda/index.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import type { NullTested, WandaMatrix } from '../../src/wanda/types.js';
import { Rng } from '../../src/util/rng.js';
import { syntheticModel, syntheticActivations, writeCheckpoint, writeRun, tmpDir, cleanupTmp, naivePooled,
  type Plant } from './helpers.js';
import { openSafetensorsCheckpoint } from '../../src/wanda/weights.js';

afterAll(cleanupTmp);

const BLOCK = 16;
const H = 64;
const I = 128;
const LAYERS = 2;
// Two planted groups with their own blocks; C is unplanted. The weight gain (2) is below the
// activation gain (4), so a group's own column outranks the other group's amplified block.
const PLANTS: Plant[] = [
  { group: 'A', hiddenBlock: 1, interBlock: 2, weightGain: 2, activationGain: 4 },
  { group: 'B', hiddenBlock: 3, interBlock: 5, weightGain: 2, activationGain: 4 },
];
const PLANT = PLANTS[0];
const PLANT_OPTS = { block: BLOCK, plants: PLANTS };
const labels = Array.from({ length: 90 }, (_, r) => ['A', 'B', 'C'][r % 3]);

function colsumsOf(model: ReturnType<typeof syntheticModel>, rb: number,
  LAYERS = model.layers): { infos: WandaMatrix[]; colsums: Map<string, Float32Array> }
{
  const infos: WandaMatrix[] = [];
  const colsums = new Map<string, Float32Array>();
  for (let l = 0; l < LAYERS; l++) {
    for (const proj of ['gate_proj', 'up_proj', 'down_proj']) {
      const { w, dOut, dIn } = model.weights.get(`model.layers.${l}.mlp.${proj}.weight`)!;
      const name = `layers.${l}.mlp.${proj}`;
      infos.push(
        matrixInfo(name, l, proj, proj === 'down_proj' ? `layers.${l}.mlp.down_in` : `layers.${l}.mlp.in`, dOut, dIn, [
          rb,
          rb,
        ]),
      );
      const C = new Float32Array(Math.ceil(dOut / rb) * dIn);
      for (let i = 0; i < dOut; i++)
        for (let j = 0; j < dIn; j++) C[Math.floor(i / rb) * dIn + j] += Math.abs(w[i * dIn + j]);
      colsums.set(name, C);
    }
  }
  return { infos, colsums };
}

/** A null summary against its definition: p = (1 + #{null ≥ v}) / (R + 1), pLower with ≤, the null mean, the mid-rank percentile. */
function expectNullSummary(t: NullTested, nulls: Float64Array): void {
  const R = nulls.length;
  const v = t.value;
  const ge = Array.from(nulls).filter((x) => x >= v).length;
  const le = Array.from(nulls).filter((x) => x <= v).length;
  const lt = Array.from(nulls).filter((x) => x < v).length;
  expect(t.p).toBeCloseTo((1 + ge) / (R + 1), 12);
  expect(t.pLower!).toBeCloseTo((1 + le) / (R + 1), 12);
  expect(t.nullMean!).toBeCloseTo(Array.from(nulls).reduce((a, b) => a + b, 0) / R, 10);
  expect(t.percentile!).toBeCloseTo((100 * (lt + 0.5 * (le - lt))) / R, 10);
}

function plantedIndex(m: WandaMatrix, p: Plant = PLANT): number {
  return m.proj === 'down_proj'
    ? p.hiddenBlock * m.colBlocks + p.interBlock
    : p.interBlock * m.colBlocks + p.hiddenBlock;
}

describe('planted neurons (synthetic activations)', () => {
  it("the planted group's set difference recovers the planted blocks with p < 0.01", async () => {
    const model = syntheticModel(11, LAYERS, H, I, PLANT_OPTS);
    const hooks = syntheticActivations(12, model, labels, PLANT_OPTS);
    const { infos, colsums } = colsumsOf(model, BLOCK);
    const res = await analyze(
      { matrices: infos, colsums, source: memorySource(labels.length, hooks), labels },
      { block: [BLOCK, BLOCK], top: { kind: 'fraction', value: 0.1, scope: 'matrix' }, permutations: 199, seed: 1 },
    );
    expect(res.groups).toEqual(['A', 'B', 'C']);
    // Pooled maps agree with the naive computation from the activations.
    const x = hooks['layers.0.mlp.in'];
    const s = new Float64Array(H);
    const rowsA = labels.flatMap((l, r) => (l === 'A' ? [r] : []));
    for (let j = 0; j < H; j++) s[j] = Math.sqrt(rowsA.reduce((a, r) => a + x.data[r * H + j] ** 2, 0) / rowsA.length);
    const gw = model.weights.get('model.layers.0.mlp.gate_proj.weight')!;
    const naive = naivePooled(gw.w, gw.dOut, gw.dIn, s, BLOCK, BLOCK);
    const got = res.pooled.get('A|layers.0.mlp.gate_proj')!;
    for (let k = 0; k < naive.length; k++) expect(got[k]).toBeCloseTo(naive[k], 5);

    // A∖B holds A's planted block and B∖A holds B's, in every matrix.
    const d = res.regions.differences.find((x) => x.a === 'A' && x.b === 'B')!;
    for (const m of infos) {
      expect(d.aMinusB[m.name]).toContain(plantedIndex(m, PLANTS[0]));
      expect(d.bMinusA[m.name]).toContain(plantedIndex(m, PLANTS[1]));
      expect(d.bMinusA[m.name]).not.toContain(plantedIndex(m, PLANTS[0]));
      expect(res.regions.regions.A[m.name]).toContain(plantedIndex(m, PLANTS[0]));
    }
    const pm = res.metrics.pairs.find((p) => p.a === 'A' && p.b === 'B')!;
    expect(pm.isolationAB.value).toBeGreaterThan(0.5);
    expect(pm.isolationAB.p!).toBeLessThan(0.01);
    expect(pm.isolationBA.p!).toBeLessThan(0.01);
    expect(pm.jaccard.pLower!).toBeLessThan(0.01);
    expect(pm.byProjAminusB.gate_proj).toBeGreaterThan(0);
    // Component counts and each group's region structure carry their nulls too; each summary
    // follows its definition over the exposed null values.
    expect(pm.componentsAminusBNull!.value).toBe(pm.componentsAminusB);
    expect(res.nulls.pairs[0].componentsAminusB.length).toBe(199);
    expectNullSummary(pm.componentsAminusBNull!, res.nulls.pairs[0].componentsAminusB);
    expectNullSummary(pm.isolationAB, res.nulls.pairs[0].isolationAB);
    expectNullSummary(pm.jaccard, res.nulls.pairs[0].jaccard);
    const gA = res.metrics.groups[0];
    expect(gA.densityNull!.value).toBe(gA.density);
    expectNullSummary(gA.densityNull!, res.nulls.groups[0].density);
    expectNullSummary(gA.componentsNull!, res.nulls.groups[0].components);
    // A's planted difference from B lies in every matrix (more separate pieces than a chance
    // difference, which is mostly empty); A's region gathers on its planted feature block
    // (denser and in fewer pieces than chance).
    expect(pm.componentsAminusB).toBeGreaterThanOrEqual(infos.length);
    expect(pm.componentsAminusBNull!.p!).toBeLessThan(0.01);
    expect(gA.densityNull!.p!).toBeLessThan(0.01);
    expect(gA.componentsNull!.pLower!).toBeLessThan(0.01);
    expect(pm.byLayerAminusB.length).toBe(LAYERS);
    // Against the unplanted group C, A's region is isolated beyond chance too.
    const ac = res.metrics.pairs.find((p) => p.a === 'A' && p.b === 'C')!;
    expect(ac.isolationAB.p!).toBeLessThan(0.01);
  });

  it('a permuted-label control on the same planted data reports no significance', async () => {
    // The planted signal belongs to the true groups; shuffled labels mix them, so the observed
    // labelling is one more draw from the null and nothing may come out significant.
    const model = syntheticModel(11, LAYERS, H, I, PLANT_OPTS);
    const hooks = syntheticActivations(12, model, labels, PLANT_OPTS);
    const { infos, colsums } = colsumsOf(model, BLOCK);
    for (const seed of [1, 2, 3]) {
      const shuffled = new Rng(seed).shuffle(labels.slice());
      const res = await analyze(
        { matrices: infos, colsums, source: memorySource(labels.length, hooks), labels: shuffled },
        { block: [BLOCK, BLOCK], top: { kind: 'fraction', value: 0.1, scope: 'matrix' }, permutations: 199, seed: 1 },
      );
      res.metrics.pairs.forEach((p, k) => {
        expect(p.isolationAB.p!, `shuffle ${seed} ${p.a}/${p.b}`).toBeGreaterThan(0.05);
        expect(p.isolationBA.p!, `shuffle ${seed} ${p.a}/${p.b}`).toBeGreaterThan(0.05);
        expect(p.jaccard.pLower!, `shuffle ${seed} ${p.a}/${p.b}`).toBeGreaterThan(0.05);
        // chance values tie often: the summaries must count ties as their definitions say
        expectNullSummary(p.isolationAB, res.nulls.pairs[k].isolationAB);
        expectNullSummary(p.jaccard, res.nulls.pairs[k].jaccard);
      });
    }
  });

  it('unplanted random weights and group-independent activations report no significance', async () => {
    const model = syntheticModel(21, LAYERS, H, I, { block: BLOCK });
    const hooks = syntheticActivations(22, model, labels, { block: BLOCK });
    const { infos, colsums } = colsumsOf(model, BLOCK);
    const res = await analyze(
      { matrices: infos, colsums, source: memorySource(labels.length, hooks), labels },
      { block: [BLOCK, BLOCK], top: { kind: 'fraction', value: 0.1, scope: 'matrix' }, permutations: 199, seed: 1 },
    );
    for (const p of res.metrics.pairs) {
      expect(p.isolationAB.p!).toBeGreaterThan(0.01);
      expect(p.isolationBA.p!).toBeGreaterThan(0.01);
      expect(p.jaccard.pLower!).toBeGreaterThan(0.01);
    }
  });

  it('the null is reproducible from the seed and independent of the batch size', async () => {
    const model = syntheticModel(31, 1, H, I, PLANT_OPTS);
    const hooks = syntheticActivations(32, model, labels, PLANT_OPTS);
    const { infos, colsums } = colsumsOf(model, BLOCK);
    const run = (batchBytes?: number) =>
      analyze({ matrices: infos.filter((m) => m.layer === 0), colsums,
        source: memorySource(labels.length, { 'layers.0.mlp.in': hooks['layers.0.mlp.in'],
          'layers.0.mlp.down_in': hooks['layers.0.mlp.down_in'] }), labels }, { block: [BLOCK, BLOCK],
        top: { kind: 'count', value: 4, scope: 'global' }, permutations: 30, seed: 7, batchBytes });
    const a = await run();
    const b = await run(1); // one labelling per batch
    expect(Array.from(b.nulls.pairs[0].jaccard)).toEqual(Array.from(a.nulls.pairs[0].jaccard));
    expect(Array.from(b.nulls.groups[1].components)).toEqual(Array.from(a.nulls.groups[1].components));
    expect(b.metrics).toEqual(a.metrics);
  });
});

describe('samples without a label', () => {
  it('are left out: the result equals the analysis of the labelled samples alone', async () => {
    const model = syntheticModel(51, 1, H, I, PLANT_OPTS);
    const hooks = syntheticActivations(52, model, labels, PLANT_OPTS);
    const { infos, colsums } = colsumsOf(model, BLOCK);
    const drop = (r: number) => r % 7 === 3;
    const keep = labels.flatMap((_, r) => (drop(r) ? [] : [r]));
    const sub = Object.fromEntries(
      Object.entries(hooks).map(([h, v]) => {
        const data = new Float32Array(keep.length * v.dim);
        keep.forEach((r, k) => data.set(v.data.subarray(r * v.dim, (r + 1) * v.dim), k * v.dim));
        return [h, { dim: v.dim, data }];
      }),
    );
    const opts = { block: [BLOCK, BLOCK] as [number, number],
      top: { kind: 'fraction' as const, value: 0.1, scope: 'matrix' as const }, permutations: 0, seed: 1 };
    const withBlanks = await analyze({ matrices: infos, colsums, source: memorySource(labels.length, hooks),
      labels: labels.map((l, r) => (drop(r) ? '' : l)) }, opts);
    const subset = await analyze({ matrices: infos, colsums, source: memorySource(keep.length, sub),
      labels: keep.map((r) => labels[r]) }, opts);
    expect(withBlanks.counts).toEqual(subset.counts);
    expect(withBlanks.counts.reduce((a, b) => a + b, 0)).toBe(keep.length);
    for (const [k, v] of subset.pooled) expect(Array.from(withBlanks.pooled.get(k)!)).toEqual(Array.from(v));
    expect(withBlanks.regions).toEqual(subset.regions);
  });
});

describe('runWanda over a run directory and a safetensors checkpoint', () => {
  it('writes pooled maps, regions, metrics and settings atomically', async () => {
    const dir = tmpDir();
    const model = syntheticModel(41, LAYERS, H, I, PLANT_OPTS);
    const hooks = syntheticActivations(42, model, labels, PLANT_OPTS);
    const ck = path.join(dir, 'ckpt');
    writeCheckpoint(ck, model, 'BF16', 2);
    const runDir = path.join(dir, 'run');
    writeRun(runDir, labels.map((l, i) => ({ aspect: l, parity: i % 2 ? 'odd' : 'even' })), hooks);
    const res = await runWanda(runDir, { weights: ck, block: BLOCK, permutations: 99, seed: 5, quiet: true });
    const out = path.join(runDir, 'wanda');
    expect(res.dir).toBe(out);
    expect(readdirSync(out).sort()).toEqual(['.lobes-output.json', 'channels.csv', 'metrics.csv', 'metrics.json',
      'pooled.safetensors', 'regions.json', 'settings.json']);
    expect(readdirSync(runDir).filter((f) => f.startsWith('.wanda'))).toEqual([]);
    const settings = JSON.parse(readFileSync(path.join(out, 'settings.json'), 'utf8'));
    expect(settings).toMatchObject({ by: 'aspect', groups: ['A', 'B', 'C'], block: [16, 16], seed: 5, permutations: 99,
      statistic: 'rms', resolution: 'block', weights: { source: 'safetensors' } });
    expect(JSON.parse(readFileSync(path.join(out, 'regions.json'), 'utf8'))).toEqual(res.regions);
    expect(JSON.parse(readFileSync(path.join(out, 'metrics.json'), 'utf8'))).toEqual(
      JSON.parse(JSON.stringify(res.metrics)),
    );
    const csv = readFileSync(path.join(out, 'metrics.csv'), 'utf8').trim().split('\n');
    expect(csv[0]).toBe('a,b,metric,value,p,p_lower,percentile,null_mean,z,p_holm,p_bh,p_lower_holm,p_lower_bh');
    // Per pair: Jaccard, 2 densities, 2 sizes, 2 component counts, and for A∖B and B∖A a density ratio and 2 placement tests.
    expect(csv.length).toBe(1 + 3 * 13);
    const jac = csv.filter((l) => l.split(',')[2] === 'jaccard').map((l) => l.split(','));
    expect(jac.map((f) => Number(f[11]))).toEqual(res.metrics.pairs.map((p) => p.jaccard.pLowerHolm));
    expect(readFileSync(path.join(out, 'channels.csv'), 'utf8').trim().split('\n').length).toBe(1 + 2 * LAYERS);
    // pooled.safetensors holds group|matrix maps equal to the naive computation on the bf16 weights.
    const h = readSafetensorsHeader(path.join(out, 'pooled.safetensors'));
    expect(h.tensors.size).toBe(3 * 6);
    expect(h.tensors.get('A|layers.1.mlp.down_proj')!.shape).toEqual([4, 8]);
    const pooled = readTensorFloat32(h, 'C|layers.1.mlp.up_proj');
    const ckh = openSafetensorsCheckpoint(ck).tensors.get('model.layers.1.mlp.up_proj.weight')!;
    const w = readTensorFloat32(ckh, 'model.layers.1.mlp.up_proj.weight');
    const x = hooks['layers.1.mlp.in'];
    const rowsC = labels.flatMap((l, r) => (l === 'C' ? [r] : []));
    const s = Array.from({ length: H },
      (_, j) => Math.sqrt(rowsC.reduce((a, r) => a + x.data[r * H + j] ** 2, 0) / rowsC.length));
    const naive = naivePooled(w, I, H, s, BLOCK, BLOCK);
    for (let k = 0; k < naive.length; k++) expect(pooled[k]).toBeCloseTo(naive[k], 5);
    // Planted blocks recovered through the whole path.
    const d = res.regions.differences.find((x) => x.a === 'A' && x.b === 'B')!;
    expect(d.aMinusB['layers.0.mlp.gate_proj']).toContain(PLANT.interBlock * 4 + PLANT.hiddenBlock);
    expect(res.metrics.pairs[0].isolationAB.p!).toBeLessThan(0.02);

    // Regrouping by another axis writes its own folder beside the first, which stays byte-identical.
    const first = readFileSync(path.join(out, 'regions.json'));
    const res2 = await runWanda(runDir, { weights: ck, by: 'parity', block: BLOCK, permutations: 0, quiet: true });
    expect(res2.settings.groups).toEqual(['even', 'odd']);
    expect(res2.dir).toBe(path.join(runDir, 'wanda.by-parity'));
    expect(JSON.parse(readFileSync(path.join(res2.dir, 'settings.json'), 'utf8')).by).toBe('parity');
    expect(JSON.parse(readFileSync(path.join(out, 'settings.json'), 'utf8')).by).toBe('aspect');
    expect(readFileSync(path.join(out, 'regions.json')).equals(first)).toBe(true);
    expect(res2.metrics.pairs[0].jaccard.p).toBeNull();
    expect(existsSync(path.join(res2.dir, 'pooled.safetensors'))).toBe(true);
  });
});
