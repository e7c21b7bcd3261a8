/**
 * The permutation null on worker threads (src/wanda/sumpool.ts): each thread reads its capture
 * points from the run directory itself. The outputs must be the bytes of the single-threaded
 * analysis (the same additions in the same order), the planted groups must still be found
 * (planted ground truth), provenance must name the capture points the threads read, and an
 * error inside a thread must reach the caller as the same one-line message.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { runWanda } from '../../src/wanda/index.js';
import { analyze, matrixInfo, nullThreads } from '../../src/wanda/analyze.js';
import { runSource } from '../../src/wanda/stats.js';
import { weightPass } from '../../src/wanda/pass.js';
import { openSafetensorsCheckpoint, safetensorsMatrices, wantedMatrices } from '../../src/wanda/weights.js';
import { openRun } from '../../src/store/index.js';
import { syntheticModel, syntheticActivations, writeCheckpoint, writeRun, tmpDir, cleanupTmp,
  type Plant } from './helpers.js';

afterAll(cleanupTmp);

const BLOCK = 16;
const PLANTS: Plant[] = [
  { group: 'A', hiddenBlock: 1, interBlock: 2, weightGain: 2, activationGain: 4 },
  { group: 'B', hiddenBlock: 3, interBlock: 5, weightGain: 2, activationGain: 4 },
];
const labels = Array.from({ length: 90 }, (_, r) => ['A', 'B', 'C'][r % 3]);
const OUT_FILES = ['metrics.csv', 'metrics.json', 'pooled.safetensors', 'regions.json'];

function setup(name: string, corrupt = false) {
  const dir = tmpDir(`lobes-wanda-threads-${name}-`);
  const model = syntheticModel(21, 3, 64, 128, { block: BLOCK, plants: PLANTS });
  const hooks = syntheticActivations(22, model, labels, { block: BLOCK, plants: PLANTS });
  if (corrupt) hooks['layers.2.mlp.down_in'].data[40 * 128 + 9] = NaN;
  const ck = path.join(dir, 'ckpt');
  writeCheckpoint(ck, model, 'BF16');
  const run = path.join(dir, 'run');
  writeRun(run, labels.map((l) => ({ aspect: l })), hooks);
  return { ck, run };
}

function outputs(run: string): Record<string, Buffer> {
  return Object.fromEntries(OUT_FILES.map((f) => [f, readFileSync(path.join(run, 'wanda', f))]));
}

describe('permutation null on worker threads', () => {
  it('two and three threads write the same bytes as one, find the planted blocks, and record every capture point read',
    async () => {
      const { ck, run } = setup('same');
      const opts = { weights: ck, block: BLOCK, permutations: 49, seed: 3, quiet: true };
      const one = await runWanda(run, { ...opts, threads: 1 });
      const single = outputs(run);
      const three = await runWanda(run, { ...opts, threads: 3 });
      const threaded = outputs(run);
      for (const f of OUT_FILES) expect(threaded[f].equals(single[f]), f).toBe(true);
      await runWanda(run, { ...opts, threads: 2 });
      const two = outputs(run);
      for (const f of OUT_FILES) expect(two[f].equals(single[f]), `${f}, 2 threads`).toBe(true);
      expect(three.metrics).toEqual(one.metrics);
      // Planted truth: A's region against B's is isolated beyond the null (p ≤ 0.02 with 49 permutations).
      const ab = three.metrics.pairs.find((p) => p.a === 'A' && p.b === 'B')!;
      expect(ab.isolationAB.p!).toBeLessThanOrEqual(0.02);
      // Provenance names the six capture points (3 layers × mlp.in, mlp.down_in), read by the threads.
      const hooks = Array.from({ length: 3 }, (_, l) => [`layers.${l}.mlp.down_in`, `layers.${l}.mlp.in`]).flat()
        .sort();
      expect(Object.keys(three.settings.provenance!.chunks).sort()).toEqual(hooks);
      expect(three.settings.provenance).toEqual(one.settings.provenance);
      expect(readdirSync(run).filter((f) => f.startsWith('.wanda'))).toEqual([]);
    }, 120_000);

  it('one labelling per batch (many batches, threads handed capture points across batch boundaries): the same result',
    async () => {
      const { ck, run } = setup('batches');
      const reader = await openRun(run);
      const refs = safetensorsMatrices(openSafetensorsCheckpoint(ck), wantedMatrices(reader.hooks()));
      const colsums = await weightPass(refs, { rowBlock: BLOCK, threads: 1 });
      const input = {
        matrices: refs.map((m) => matrixInfo(m.name, m.layer, m.proj, m.input, m.dOut, m.dIn, [BLOCK, BLOCK])),
        colsums,
        source: runSource(reader),
        labels,
      };
      const base = { block: [BLOCK, BLOCK] as [number, number],
        top: { kind: 'fraction' as const, value: 0.1, scope: 'matrix' as const }, permutations: 9, seed: 4,
        batchBytes: 1 };
      let steps = 0;
      const a = await analyze(input, { ...base, threads: 1, perHook: false });
      const b = await analyze(input, { ...base, threads: 4, perHook: false, onStep: () => steps++ });
      expect(steps).toBe(10 * 6);
      expect(b.metrics).toEqual(a.metrics);
      expect([...b.pooled.keys()]).toEqual([...a.pooled.keys()]);
      for (const [k, v] of a.pooled) expect(b.pooled.get(k), k).toEqual(v);
      expect(b.nulls).toEqual(a.nulls);
    }, 120_000);

  it('a NaN met by a thread is the same one-line error as on the calling thread, and nothing is written', async () => {
    const { ck, run } = setup('nan', true);
    const msg = /layers\.2\.mlp\.down_in, row 40 \(sample "s40"\): activation is NaN at feature 9/;
    await expect(runWanda(run, { weights: ck, block: BLOCK, permutations: 5, quiet: true, threads: 1 })).rejects
      .toThrow(msg);
    await expect(runWanda(run, { weights: ck, block: BLOCK, permutations: 5, quiet: true, threads: 2 })).rejects
      .toThrow(msg);
    expect(existsSync(path.join(run, 'wanda'))).toBe(false);
  }, 120_000);
});

describe('threads of the null within their memory', () => {
  it('at most one per capture point, and as many as fit in 2 GiB of sums', () => {
    // Llama-3.1-8B shapes, 2,000 samples: B = 89 labellings, 5 groups, widest point 14,336:
    // 89 × 5 × 14,336 × 16 B + 48 MiB = 152.4 MB a thread, so 2 GiB hold 14 of them.
    expect(nullThreads(64, 64, 89, 5, 14336)).toBe(Math.floor(2 ** 31 / (89 * 5 * 14336 * 16 + 48 * 2 ** 20)));
    expect(nullThreads(64, 64, 89, 5, 14336)).toBe(14);
    expect(nullThreads(8, 64, 89, 5, 14336)).toBe(8);
    expect(nullThreads(16, 3, 1, 2, 64)).toBe(3);
    // Never below one thread, however wide the capture points.
    expect(nullThreads(16, 64, 1000, 10, 1 << 20)).toBe(1);
  });
});
