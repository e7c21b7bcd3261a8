/**
 * End to end on generated Llama models: extract (ONNX Runtime) -> run directory -> wanda.
 *  - `blocks` plants two groups (alpha, beta) with known 256×256 blocks (docs/models.md);
 *  - its ONNX initializers and a safetensors checkpoint of the same weights give identical maps;
 *  - the unplanted `tiny-llama` with labels drawn independently of the texts reports no significance.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as path from 'node:path';
import { writeFileSync } from 'node:fs';
import { ensureGeneratedModel, generatedModelParams } from '../../src/models/write.js';
import { readPlant, plantedSamples } from '../../src/models/plant.js';
import { runExtract } from '../../src/extract/run.js';
import { runWanda } from '../../src/wanda/index.js';
import { readSafetensorsHeader, readTensorFloat32, writeSafetensors } from '../../src/formats/safetensors.js';
import { Rng } from '../../src/util/rng.js';
import { tmpDir, cleanupTmp } from './helpers.js';
import { openRun } from '../../src/store/index.js';
import { writeLabelOverlay } from '../../src/store/labels.js';

afterAll(cleanupTmp);

const root = tmpDir('lobes-wanda-e2e-');

async function extract(modelDir: string, rows: { text: string; group: string }[], name: string): Promise<string> {
  const data = path.join(root, `${name}.jsonl`);
  writeFileSync(data,
    rows.map((r, i) => JSON.stringify({ id: `${name}-${i}`, text: r.text, group: r.group })).join('\n') + '\n');
  const out = path.join(root, name);
  await runExtract({ model: modelDir, data: `jsonl:${data}?text=text&label=group&id=id`, out, capture: ['mlp'],
    dtype: 'fp32', quiet: true });
  return out;
}

describe('planted tiny Llama (blocks): extract -> wanda', () => {
  let modelDir: string;
  let runDir: string;
  beforeAll(async () => {
    modelDir = ensureGeneratedModel('blocks');
    const plant = readPlant(modelDir)!;
    const samples = plantedSamples(plant, { perGroup: 16, control: true, seed: 1 });
    runDir = await extract(modelDir, samples.map((s) => ({ text: s.text, group: s.labels.group })), 'blocks');
  });

  it("recovers each planted group's blocks in its set difference, p < 0.01", async () => {
    const plant = readPlant(modelDir)!;
    const [alpha, beta] = plant.groups;
    const idx = (g: typeof alpha, proj: string, colBlocks: number) => (proj === 'down_proj'
      ? g.downBlock * colBlocks + g.interBlock
      : g.interBlock * colBlocks + g.hiddenBlock);
    // Each map has only 8 blocks (gate/up 4×2, down 2×4). With the top block per group and
    // matrix, each group's region is exactly its planted block in every matrix.
    const one = await runWanda(runDir, { by: 'group', block: 256, top: { kind: 'count', value: 1 }, permutations: 0,
      quiet: true });
    expect(one.settings.weights.source).toBe('onnx');
    expect(one.settings.groups).toEqual(['alpha', 'beta', 'control']);
    expect(one.regions.matrices.map((m) => m.name)).toEqual(['layers.0.mlp.gate_proj', 'layers.0.mlp.up_proj',
      'layers.0.mlp.down_proj', 'layers.1.mlp.gate_proj', 'layers.1.mlp.up_proj', 'layers.1.mlp.down_proj']);
    const d1 = one.regions.differences.find((x) => x.a === 'alpha' && x.b === 'beta')!;
    for (const m of one.regions.matrices) {
      expect(d1.aMinusB[m.name]).toEqual([idx(alpha, m.proj, m.colBlocks)]);
      expect(d1.bMinusA[m.name]).toEqual([idx(beta, m.proj, m.colBlocks)]);
    }
    // One block per group is a winner-take-all choice: shuffled groups (mixtures of alpha, beta
    // and control texts) also get one of the two planted blocks, often different ones, so the
    // null cannot separate. With two blocks per group every shuffled group keeps both planted
    // blocks (4x weights, mixed inputs) while alpha and beta keep their own block and column:
    // the isolation is far outside the null. In layer 1 the residual stream carries enough of
    // the other group's pattern that the two planted blocks tie for second place, so recovery
    // at two blocks per group is asserted on layer 0.
    const two = await runWanda(runDir, { by: 'group', block: 256, top: { kind: 'count', value: 2 }, permutations: 199,
      seed: 3, quiet: true });
    const d2 = two.regions.differences.find((x) => x.a === 'alpha' && x.b === 'beta')!;
    for (const m of two.regions.matrices.filter((x) => x.layer === 0)) {
      expect(d2.aMinusB[m.name]).toContain(idx(alpha, m.proj, m.colBlocks));
      expect(d2.bMinusA[m.name]).toContain(idx(beta, m.proj, m.colBlocks));
    }
    const pm = two.metrics.pairs.find((p) => p.a === 'alpha' && p.b === 'beta')!;
    expect(pm.isolationAB.value).toBeGreaterThan(0.3);
    expect(pm.isolationAB.p!).toBeLessThan(0.01);
    expect(pm.isolationBA.p!).toBeLessThan(0.01);
    expect(pm.jaccard.pLower!).toBeLessThan(0.01);
  });

  it('ONNX initializers and a safetensors checkpoint of the same weights give identical maps', async () => {
    const p = generatedModelParams('blocks');
    const { hidden: H, intermediate: I } = p.opts;
    const ck = path.join(root, 'blocks-ckpt');
    const tensors = p.layers.flatMap((L, l) => [
      { name: `model.layers.${l}.mlp.gate_proj.weight`, dtype: 'F32' as const, shape: [I, H], data: L.gate },
      { name: `model.layers.${l}.mlp.up_proj.weight`, dtype: 'F32' as const, shape: [I, H], data: L.up },
      { name: `model.layers.${l}.mlp.down_proj.weight`, dtype: 'F32' as const, shape: [H, I], data: L.down },
    ]);
    writeSafetensors(path.join(ck, 'model.safetensors'), tensors);
    const a = await runWanda(runDir, { by: 'group', block: 256, permutations: 0, quiet: true });
    const ha = readSafetensorsHeader(path.join(a.dir, 'pooled.safetensors'));
    const mapsA = new Map([...ha.tensors.keys()].map((k) => [k, readTensorFloat32(ha, k)]));
    const b = await runWanda(runDir, { by: 'group', weights: ck, block: 256, permutations: 0, quiet: true });
    expect(b.settings.weights.source).toBe('safetensors');
    const hb = readSafetensorsHeader(path.join(b.dir, 'pooled.safetensors'));
    expect([...hb.tensors.keys()].sort()).toEqual([...mapsA.keys()].sort());
    for (const [k, v] of mapsA) expect(Array.from(readTensorFloat32(hb, k))).toEqual(Array.from(v));
    expect(b.regions).toEqual(a.regions);
  });

  it('leaves out the items a label overlay does not list (unevaluated), says so, and compares the others', async () => {
    const reader = await openRun(runDir);
    const groups = reader.labels('group');
    // an eval-label-style overlay: alpha items "correct", beta items "wrong", control items unlisted
    const values: Record<string, string> = {};
    reader.samples.forEach((x, i) => {
      if (groups[i] !== 'control') values[x.id] = groups[i] === 'alpha' ? 'correct' : 'wrong';
    });
    writeLabelOverlay(runDir, { format: 'lobes-labels', axis: 'correct', default: 'unevaluated', source: {}, values });
    const unlisted = groups.filter((g) => g === 'control').length;
    expect((await openRun(runDir)).labels('correct').filter((l) => l === 'unevaluated').length).toBe(unlisted);
    const r = await runWanda(runDir, { by: 'correct', block: 256, top: { kind: 'count', value: 1 }, permutations: 0,
      quiet: true });
    expect(r.settings.groups).toEqual(['correct', 'wrong']);
    expect(r.settings.samples).toEqual({ used: groups.length - unlisted, excluded: unlisted,
      leftOut: { unevaluated: unlisted } });
  });
});

describe('unplanted tiny Llama with labels independent of the texts', () => {
  it('reports no significant isolation', async () => {
    const modelDir = ensureGeneratedModel('tiny-llama');
    const plant = readPlant(ensureGeneratedModel('blocks'))!;
    const rng = new Rng(17);
    const rows = plantedSamples(plant, { perGroup: 16, control: true, seed: 2 }).map((s) => ({ text: s.text,
      group: ['x', 'y', 'z'][rng.int(3)] })
    );
    const runDir = await extract(modelDir, rows, 'unplanted');
    // hidden 64, intermediate 256: 16×16 blocks give 16×4 (gate/up) and 4×16 (down) maps.
    const res = await runWanda(runDir, { by: 'group', block: 16, permutations: 199, seed: 3, quiet: true });
    for (const p of res.metrics.pairs) {
      expect(p.isolationAB.p!).toBeGreaterThan(0.01);
      expect(p.isolationBA.p!).toBeGreaterThan(0.01);
      expect(p.jaccard.pLower!).toBeGreaterThan(0.01);
    }
  });
});
