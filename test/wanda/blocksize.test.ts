import { describe, it, expect, afterAll, vi } from 'vitest';
import * as path from 'node:path';
import { readFileSync } from 'node:fs';
import { autoBlockSize, blockCheck, coarseMatrices, coarseWarnings } from '../../src/wanda/blocksize.js';
import { runWanda } from '../../src/wanda/index.js';
import { verdictLines } from '../../src/report/verdict.js';
import type { TopSpec } from '../../src/wanda/regions.js';
import { syntheticModel, syntheticActivations, writeCheckpoint, writeRun, tmpDir, cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

const TOP: TopSpec = { kind: 'fraction', value: 0.1, scope: 'matrix' };
/** The MLP matrices of a Llama: gate/up [I, H], down [H, I], per layer. */
function mlp(H: number, I: number, layers = 2) {
  const out = [];
  for (let l = 0; l < layers; l++) {
    out.push({ name: `layers.${l}.mlp.gate_proj`, proj: 'gate_proj', layer: l, dOut: I, dIn: H });
    out.push({ name: `layers.${l}.mlp.up_proj`, proj: 'up_proj', layer: l, dOut: I, dIn: H });
    out.push({ name: `layers.${l}.mlp.down_proj`, proj: 'down_proj', layer: l, dOut: H, dIn: I });
  }
  return out;
}

describe('--block auto', () => {
  it('keeps the paper’s 256 for Llama-3.1-8B and 70B', () => {
    // 4096 / 256 = 16 blocks on the short side; 16 × 56 = 896 blocks, the top 10% keeps 90
    expect(autoBlockSize(mlp(4096, 14336), TOP)).toBe(256);
    expect(autoBlockSize(mlp(8192, 28672), TOP)).toBe(256);
  });
  it('gives SmolLM2-135M (hidden 576, intermediate 1536) 32×32 blocks', () => {
    // 64: ceil(576/64) = 9 < 16; 32: 18 and 48 blocks, 864 in all, 86 kept
    expect(autoBlockSize(mlp(576, 1536), TOP)).toBe(32);
  });
  it('falls to smaller blocks for tiny models and to 1 when nothing fits', () => {
    expect(autoBlockSize(mlp(64, 256), TOP)).toBe(4); // 64/4 = 16
    expect(autoBlockSize(mlp(8, 32), TOP)).toBe(1);
  });
  it('a smaller top fraction needs smaller blocks to keep 10 of them', () => {
    // at 256 the 8B gate has 896 blocks: 1% keeps 9 (< 10); at 128: 3584 blocks, 36 kept
    expect(autoBlockSize(mlp(4096, 14336), { kind: 'fraction', value: 0.01, scope: 'matrix' })).toBe(128);
  });
  it('names the coarse matrices at 256 for SmolLM2 and says what auto would give', () => {
    const ms = mlp(576, 1536, 30);
    const c = coarseMatrices(ms, [256, 256], TOP);
    // gate/up: ceil(1536/256) = 6 rows × ceil(576/256) = 3 columns, round(0.1 · 18) = 2 kept
    expect(c).toEqual([
      { proj: 'gate_proj', rowBlocks: 6, colBlocks: 3, selected: 2, matrices: 30 },
      { proj: 'up_proj', rowBlocks: 6, colBlocks: 3, selected: 2, matrices: 30 },
      { proj: 'down_proj', rowBlocks: 3, colBlocks: 6, selected: 2, matrices: 30 },
    ]);
    const check = blockCheck(ms, [256, 256], TOP, false);
    expect(check.suggested).toBe(32);
    const w = coarseWarnings(check, [256, 256]);
    expect(w[0]).toMatch(
      /^gate_proj \(30 matrices\): 6×3 blocks at 256×256, the top selection keeps 2; .*--block auto: 32/,
    );
    expect(blockCheck(ms, [32, 32], TOP, true).coarse).toEqual([]);
  });
});

describe('runWanda --block auto and the warning', () => {
  it('chooses the block size, records the check, warns on stderr, and the report says regions are too coarse', async () => {
    const dir = tmpDir();
    const H = 64;
    const I = 128;
    const plants = [{ group: 'A', hiddenBlock: 1, interBlock: 2, weightGain: 2, activationGain: 4 }];
    const model = syntheticModel(3, 2, H, I, { block: 16, plants });
    const labels = Array.from({ length: 40 }, (_, r) => ['A', 'B'][r % 2]);
    const ck = path.join(dir, 'ckpt');
    writeCheckpoint(ck, model, 'F32');
    const runDir = path.join(dir, 'run');
    writeRun(runDir, labels.map((l) => ({ aspect: l })), syntheticActivations(4, model, labels, { block: 16, plants }));
    const err: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s: any) => (err.push(String(s)), true));
    try {
      const auto = await runWanda(runDir, { weights: ck, block: 'auto', permutations: 9, seed: 1 });
      // H = 64: 64/4 = 16 blocks on the short side
      expect(auto.settings.block).toEqual([4, 4]);
      expect(auto.settings.blockCheck).toMatchObject({ auto: true, coarse: [], suggested: null });
      expect(err.join('')).toMatch(
        /blocks 4×4 \(auto: the largest power of two ≤ 256 .*the paper's 256×256 would be too coarse here\)/,
      );
      err.length = 0;
      const coarse = await runWanda(runDir, { weights: ck, block: 32, permutations: 9, seed: 1 });
      expect(coarse.settings.blockCheck!.coarse.map((c) => c.proj)).toEqual(['gate_proj', 'up_proj', 'down_proj']);
      expect(err.join('')).toMatch(
        /wanda: warning: gate_proj \(2 matrices\): 4×2 blocks at 32×32, the top selection keeps 1;/,
      );
      const written = JSON.parse(readFileSync(path.join(runDir, 'wanda', 'settings.json'), 'utf8'));
      expect(written.blockCheck.suggested).toBe(4);
      expect(verdictLines(null, null, written).join('\n')).toMatch(
        /Neuron regions are too coarse to read: at 32×32 blocks gate_proj has 4×2 blocks .*--block auto gives 4/,
      );
    } finally {
      vi.restoreAllMocks();
    }
  });
});
