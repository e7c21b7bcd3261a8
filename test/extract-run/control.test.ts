/**
 * The random-weights control (`lobes extract --control random`) against a planted ground truth:
 * a generated Llama whose two groups of words share a planted embedding pattern. Each item ends
 * in a different word, so only a model whose weights carry the pattern can tell the groups apart
 * on words it has not seen in training; its random-weights control cannot.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureModelFromSpec, type GeneratedModelSpec } from '../../src/models/write.js';
import { readPlant } from '../../src/models/plant.js';
import { controlPlan, controlProblem, randomControlModel, tensorStd } from '../../src/runtime/control.js';
import { analyseModel } from '../../src/runtime/engine.js';
import { runExtract } from '../../src/extract/run.js';
import { runCluster } from '../../src/cluster/run.js';
import { verdictLines } from '../../src/report/verdict.js';
import { loadModel, readInitializerBytes, readInitializerFloat32 } from '../../src/onnx/index.js';
import { openRun } from '../../src/store/index.js';
import { Rng } from '../../src/util/rng.js';
import { run as extractCli } from '../../src/cli/extract.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-control-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// 40 planted words per group: each item ends in its own word (vocab 1536 has enough whole-word tokens).
const SPEC: GeneratedModelSpec = {
  model: {
    layers: 2,
    hidden: 512,
    intermediate: 1024,
    heads: 8,
    kvHeads: 2,
    vocab: 1536,
    seed: 31,
    plant: [
      { group: 'alpha', hiddenBlock: 0, interBlock: 1, tokens: 40 },
      { group: 'beta', hiddenBlock: 1, interBlock: 3, tokens: 40 },
    ],
  },
};
const PREFIXES = ['We talked about it and then', 'She wrote down', 'After the meeting they agreed on',
  'In the morning he remembered', 'The note on the table said'];

/** One item per planted word, as a lobes sample file. */
function plantedData(modelDir: string): string {
  const plant = readPlant(modelDir)!;
  const rng = new Rng(5);
  const lines: string[] = [];
  for (const g of plant.groups) {
    g.words.forEach((w, i) =>
      lines.push(
        JSON.stringify({ id: `${g.group}-${i}`, text: PREFIXES[rng.int(PREFIXES.length)] + w,
          labels: { group: g.group } }),
      )
    );
  }
  const file = path.join(tmp, 'planted.jsonl');
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

// 99 probe permutations: the smallest count at which Holm over the 5 classifiers can reach 0.05 (49 makes the probe "not testable")
const CLUSTER = { input: { by: 'group' }, tsne: { perplexity: 10, iterations: 300 },
  metrics: { bootstrap: 200, permutations: 99, probePermutations: 99 }, execution: { quiet: true, threads: 1 } };

describe('random-weights control', () => {
  const model = ensureModelFromSpec('control-planted', SPEC);
  const { arch } = analyseModel(model).info;

  it('redraws every projection and the embedding at each tensor’s scale, sets norms to 1, keeps the rest', async () => {
    const m = loadModel(model);
    const plan = controlPlan(m, arch.hidden, arch.intermediate);
    // 2 layers × 7 projections + lm_head, and the embedding
    expect([...plan.redraw.values()].filter((r) => r === 'projection').length).toBe(2 * 7 + 1);
    expect([...plan.redraw.values()].filter((r) => r === 'embedding').length).toBe(1);
    // 2 norms per layer + the final norm
    expect([...plan.fill.values()]).toEqual([1, 1, 1, 1, 1]);
    const kept = [...m.initializers.keys()].filter((n) => !plan.redraw.has(n) && !plan.fill.has(n));
    expect(kept.some((n) => n.includes('inv_freq'))).toBe(true);
    const c = await randomControlModel(model, arch, { seed: 3, cacheDir: tmp, quiet: true });
    const cm = loadModel(c.dir);
    for (const [name, role] of plan.redraw) {
      const a = readInitializerFloat32(m, name);
      const b = readInitializerFloat32(cm, name);
      expect(b.length).toBe(a.length);
      // same scale (σ within sampling error), unrelated values
      expect(tensorStd(b) / tensorStd(a)).toBeGreaterThan(role === 'embedding' ? 0.97 : 0.95);
      expect(tensorStd(b) / tensorStd(a)).toBeLessThan(role === 'embedding' ? 1.03 : 1.05);
      let dot = 0, na = 0, nb = 0;
      for (let i = 0; i < a.length; i++) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
      }
      expect(Math.abs(dot / Math.sqrt(na * nb))).toBeLessThan(0.05);
    }
    for (const name of plan.fill.keys())
      expect(Array.from(readInitializerFloat32(cm, name)).every((v) => v === 1)).toBe(true);
    for (const name of kept)
      expect(Buffer.from(readInitializerBytes(cm, name)).equals(Buffer.from(readInitializerBytes(m, name)))).toBe(true);
    // the same capture points are found, and the graph records the control
    expect(analyseModel(c.dir).info.points.map((p) => p.name)).toEqual(
      analyseModel(model).info.points.map((p) => p.name),
    );
    expect(cm.model.metadataProps.find((p) => p.key === 'lobes.control')).toBeTruthy();
    // seeded: the same seed reuses the folder; another seed draws other weights
    expect((await randomControlModel(model, arch, { seed: 3, cacheDir: tmp, quiet: true })).dir).toBe(c.dir);
    const c2 = await randomControlModel(model, arch, { seed: 4, cacheDir: tmp, quiet: true });
    const name = [...plan.redraw.keys()][0];
    expect(readInitializerFloat32(loadModel(c2.dir), name)[0]).not.toBe(readInitializerFloat32(cm, name)[0]);
    // A control whose weights were altered after it was written (same size, same mtime to the
    // nanosecond) is not used: it is drawn again, the same bytes as the first time.
    const data = path.join(c.dir, existsSync(path.join(c.dir, 'model.onnx.data')) ? 'model.onnx.data' : 'model.onnx');
    const good = readFileSync(data);
    const ref = path.join(tmp, 'times-ref');
    writeFileSync(ref, '');
    execFileSync('touch', ['-r', data, ref]);
    const bad = Buffer.from(good);
    for (let i = 0; i < 8; i++) bad[(bad.length >> 1) + i] ^= 0xff;
    writeFileSync(data, bad);
    execFileSync('touch', ['-r', ref, data]);
    expect(controlProblem(c.dir)).toMatch(
      /^model\.onnx(\.data)? has sha256 [0-9a-f]{12}…, [0-9a-f]{12}… when written$/,
    );
    expect((await randomControlModel(model, arch, { seed: 3, cacheDir: tmp, quiet: true })).dir).toBe(c.dir);
    expect(readFileSync(data).equals(good)).toBe(true);
    expect(controlProblem(c.dir)).toBeNull();
  }, 120_000);

  it('the planted model separates its groups; its random-weights control does not', async () => {
    const data = `jsonl:${plantedData(model)}`;
    const trained = path.join(tmp, 'run-trained');
    await runExtract({ model, data, out: trained, capture: ['final'], quiet: true, dtype: 'fp32' });
    const control = path.join(tmp, 'run-control');
    process.env.LOBES_MODEL_CACHE = tmp;
    const stderr = process.stderr.write;
    process.stderr.write = (() => true) as typeof process.stderr.write;
    try {
      expect(
        await extractCli(['--model', model, '--data', data, '--out', control, '--capture', 'final', '--dtype', 'fp32',
          '--control', 'random', '--control-seed', '1', '--quiet']),
      ).toBe(0);
    } finally {
      process.stderr.write = stderr;
      delete process.env.LOBES_MODEL_CACHE;
    }
    const man = (await openRun(control)).manifest;
    expect(man.model.control).toMatchObject({ kind: 'random', seed: 1, source: path.resolve(model) });
    expect(man.model.graphSha256).not.toBe((await openRun(trained)).manifest.model.graphSha256);

    const a = await runCluster(trained, CLUSTER);
    const b = await runCluster(control, CLUSTER);
    const probeA = a.metrics.spaces.find((s) => s.space === 'original-euclidean')!.probe!;
    const probeB = b.metrics.spaces.find((s) => s.space === 'original-euclidean')!.probe!;
    expect(probeA.balancedAccuracy.value).toBeGreaterThan(0.9);
    expect(probeA.balancedAccuracy.p).toBeLessThanOrEqual(0.05);
    expect(probeB.balancedAccuracy.value).toBeLessThan(0.7);
    expect(probeB.balancedAccuracy.p).toBeGreaterThan(0.05);
    const va = verdictLines(a.metrics, a.settings);
    const vb = verdictLines(b.metrics, b.settings);
    expect(va.some((l) => l.startsWith('Separated beyond chance'))).toBe(true);
    expect(vb.some((l) => l.startsWith('Not separated'))).toBe(true);
    expect(vb.join('\n')).not.toMatch(/^Separated/m);
  }, 300_000);
});

it('a missing model folder for the control is an error naming it', async () => {
  await expect(randomControlModel(path.join(tmp, 'nope'), { hidden: 8, intermediate: 16 }, { cacheDir: tmp })).rejects
    .toThrow(/nope/);
  expect(existsSync(path.join(tmp, 'nope'))).toBe(false);
});

const GENAI = path.resolve(__dirname, '../../../shared/models/ort-genai-tiny-llama-fp16');
if (!existsSync(GENAI))
  console.log(`test/extract-run/control.test.ts: onnxruntime-genai case skipped, ${GENAI} is absent`);

it.skipIf(!existsSync(GENAI))('on an onnxruntime-genai export the structure gives the roles its tensor names say',
  () => {
    const m = loadModel(GENAI);
    const { arch } = analyseModel(GENAI).info;
    const plan = controlPlan(m, arch.hidden, arch.intermediate);
    for (const name of m.initializers.keys()) {
      const role = plan.redraw.get(name) ?? (plan.fill.has(name) ? 'norm' : 'keep');
      const expected = /_proj\.MatMul\.weight$|^lm_head\./.test(name)
        ? 'projection'
        : name === 'model.embed_tokens.weight'
        ? 'embedding'
        : /layernorm\.weight$/.test(name)
        ? 'norm'
        : 'keep';
      expect(`${name}: ${role}`).toBe(`${name}: ${expected}`);
    }
    expect(plan.redraw.get('lm_head.MatMul.weight')).toBe('projection');
    expect(plan.fill.has('cos_cache')).toBe(false);
  });
