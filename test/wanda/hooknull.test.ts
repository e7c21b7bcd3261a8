/**
 * The permutation null capture point by capture point (src/wanda/hooknull.ts) against the
 * labelling-by-labelling analysis it replaces where regions are selected per matrix (the
 * oracle: an independent path through the group sums, pooling and region metrics of the whole
 * masks). Every number must be the same bits: pooled maps, null distributions, channel tests
 * and metrics, for odd dimensions (a padded last feature), a narrower last column block,
 * samples left out, several batches of labellings, and one to three threads (capture points
 * finishing in any order). The cache-blocked group sums are checked against groupSquareSums.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { analyze, matrixInfo, labelingGenerator, encodeLabels, type AnalyzeResult } from '../../src/wanda/analyze.js';
import { groupSquareSums, memorySource, runSource } from '../../src/wanda/stats.js';
import { hookNull, mergeHookCounts, countStride } from '../../src/wanda/hooknull.js';
import { weightPass } from '../../src/wanda/pass.js';
import { openSafetensorsCheckpoint, safetensorsMatrices, wantedMatrices } from '../../src/wanda/weights.js';
import { openRun } from '../../src/store/index.js';
import { syntheticModel, syntheticActivations, writeCheckpoint, writeRun, tmpDir, cleanupTmp,
  type Plant } from './helpers.js';

afterAll(cleanupTmp);

const BLOCK = 16;
const PLANTS: Plant[] = [
  { group: 'A', hiddenBlock: 1, interBlock: 2, weightGain: 2, activationGain: 3 },
  { group: 'B', hiddenBlock: 3, interBlock: 5, weightGain: 2, activationGain: 3 },
];
// 97 samples, every seventh left out (''), four groups of unequal sizes.
const labels = Array.from({ length: 97 },
  (_, r) => (r % 7 === 3 ? '' : ['A', 'B', 'C', 'D'][(r * 5) % 4 === 3 && r % 3 === 0 ? 2 : r % 4]!));
const TOP = { kind: 'fraction' as const, value: 0.15, scope: 'matrix' as const };

const bytes = (a: Float32Array | Float64Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** Every number of two analyses, bit for bit. */
function expectSame(got: AnalyzeResult, want: AnalyzeResult): void {
  expect(got.metrics).toEqual(want.metrics);
  expect(got.regions).toEqual(want.regions);
  expect(got.channels).toEqual(want.channels);
  expect([...got.pooled.keys()]).toEqual([...want.pooled.keys()]);
  for (const [k, v] of want.pooled) expect(bytes(got.pooled.get(k)!).equals(bytes(v)), k).toBe(true);
  got.nulls.pairs.forEach((p, i) => {
    for (const [k, v] of Object.entries(p))
      expect(bytes(v).equals(bytes(want.nulls.pairs[i]![k as keyof typeof p])), `pair ${i} ${k}`).toBe(true);
  });
  got.nulls.groups.forEach((g, i) => {
    expect(bytes(g.density).equals(bytes(want.nulls.groups[i]!.density))).toBe(true);
    expect(bytes(g.components).equals(bytes(want.nulls.groups[i]!.components))).toBe(true);
  });
}

async function setup(name: string) {
  // hidden 65 and intermediate 129: odd capture points and a last column block one wide.
  const model = syntheticModel(31, 2, 65, 129, { block: BLOCK, plants: PLANTS });
  const hooks = syntheticActivations(32, model, labels, { block: BLOCK, plants: PLANTS });
  const dir = tmpDir(`lobes-hooknull-${name}-`);
  const ck = path.join(dir, 'ckpt');
  writeCheckpoint(ck, model, 'BF16');
  const run = path.join(dir, 'run');
  writeRun(run, labels.map((l) => ({ aspect: l })), hooks);
  const reader = await openRun(run);
  const refs = safetensorsMatrices(openSafetensorsCheckpoint(ck), wantedMatrices(reader.hooks()));
  const colsums = await weightPass(refs, { rowBlock: BLOCK, threads: 1 });
  const matrices = refs.map((m) => matrixInfo(m.name, m.layer, m.proj, m.input, m.dOut, m.dIn, [BLOCK, BLOCK]));
  return { hooks, reader, colsums, matrices };
}

describe('the null capture point by capture point', () => {
  it('gives the labelling-by-labelling result bit for bit: 1–3 threads, one or many batches, run directory or memory',
    async () => {
      const { hooks, reader, colsums, matrices } = await setup('same');
      const base = { block: [BLOCK, BLOCK] as [number, number], top: TOP, permutations: 23, seed: 5 };
      const input = { matrices, colsums, source: runSource(reader), labels };
      const want = await analyze(input, { ...base, threads: 1, perHook: false });
      expect(want.metrics.permutations).toBe(23);
      for (const threads of [1, 2, 3]) {
        for (const batchBytes of [undefined, 1, 3 * 4 * 130 * 8]) {
          let steps = 0;
          const got = await analyze(input, { ...base, threads, batchBytes, onStep: () => steps++ });
          expect(steps).toBe(4);
          expectSame(got, want);
        }
      }
      // Column sums still arriving (promises), activations in memory (the calling thread).
      const later = new Map(
        [...colsums].map(([k, v]) => [k, new Promise<Float32Array>((r) => setTimeout(() => r(v), 5))]),
      );
      const mem = memorySource(labels.length, hooks);
      expectSame(await analyze({ ...input, colsums: later, source: mem }, { ...base, threads: 2 }), want);
      // No permutations at all.
      expectSame(await analyze(input, { ...base, permutations: 0, threads: 2 }),
        await analyze(input, { ...base, permutations: 0, perHook: false }));
    }, 120_000);

  it(
    "the cache-blocked group sums are groupSquareSums' bits (through the scalers of the channel test and the pooled maps)",
    async () => {
      const { hooks, matrices, colsums } = await setup('sums');
      const src = memorySource(labels.length, hooks);
      const enc = encodeLabels(labels);
      const gen = labelingGenerator(enc.index, labels.length, 9);
      const L = 6;
      const labs = Array.from({ length: L }, () => gen());
      const flat = new Int32Array(L * labels.length);
      labs.forEach((l, i) => flat.set(l, i * labels.length));
      const hook = 'layers.1.mlp.down_in';
      const ms = matrices.filter((m) => m.input === hook);
      const job = { hook, layer: 1, n: labels.length, labelings: flat, counts: enc.counts, groups: enc.groups,
        matrices: ms, C: ms.map((m) => colsums.get(m.name)!), block: [BLOCK, BLOCK] as [number, number], top: TOP };
      const whole = await hookNull(src, { ...job, batchBytes: 1 << 30 });
      const oneByOne = await hookNull(src, { ...job, batchBytes: 1 });
      expect(bytes(oneByOne.counts).equals(bytes(whole.counts))).toBe(true);
      expect(oneByOne.channel).toEqual(whole.channel);
      // The observed group RMS (channel test's top channels carry ratios of it) from groupSquareSums.
      const sums = (await groupSquareSums(src, hook, [labs[0]!], enc.groups.length))[0]!;
      const d = 129;
      for (const t of whole.channel.top) {
        const rms = (g: number) => Math.sqrt(sums[g * d + t.channel]! * (1 / enc.counts[g]!));
        const hi = enc.groups.indexOf(t.high);
        const lo = enc.groups.indexOf(t.low);
        expect(t.ratio).toBe(rms(hi) / rms(lo));
      }
      expect(whole.counts.length).toBe((L - 1) * countStride(enc.groups.length));
    },
    60_000,
  );

  it("merging the capture points' counts in any order gives the same bits", () => {
    const parts = [Float64Array.of(3, 1e16, 7), Float64Array.of(5, 1, 11), Float64Array.of(2, 3, 13)];
    const total = (order: number[]) => {
      const t = new Float64Array(3);
      for (const i of order) mergeHookCounts(t, parts[i]!);
      return t;
    };
    const want = total([0, 1, 2]);
    for (const order of [[2, 1, 0], [1, 0, 2], [1, 2, 0]]) expect(total(order)).toEqual(want);
  });
});
