/** --resolution weight: per-weight top-k per matrix against a naive full sort. */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { runWanda } from '../../src/wanda/index.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import { syntheticModel, syntheticActivations, writeCheckpoint, writeRun, tmpDir, cleanupTmp, toBf16,
  type Plant } from './helpers.js';

afterAll(cleanupTmp);

const labels = Array.from({ length: 30 }, (_, r) => ['A', 'B', 'C'][r % 3]);
const PLANTS: Plant[] = [{ group: 'A', hiddenBlock: 1, interBlock: 0, weightGain: 2, activationGain: 4 }];

describe('--resolution weight', () => {
  it('per-weight regions, Jaccard and block shares equal a naive full sort', async () => {
    const dir = tmpDir('lobes-wanda-wres-');
    const H = 24, I = 40, B = 8;
    const model = syntheticModel(3, 1, H, I, { block: B, plants: PLANTS });
    const hooks = syntheticActivations(4, model, labels, { block: B, plants: PLANTS });
    writeCheckpoint(path.join(dir, 'ck'), model, 'BF16');
    writeRun(path.join(dir, 'run'), labels.map((l) => ({ aspect: l })), hooks);
    const res = await runWanda(path.join(dir, 'run'), { weights: path.join(dir, 'ck'), block: [B, B],
      resolution: 'weight', top: { kind: 'fraction', value: 0.1 }, permutations: 19, seed: 2, quiet: true });
    expect(res.settings.resolution).toBe('weight');
    const wl = res.metrics.weightLevel!;
    expect(wl.map((p) => `${p.a}-${p.b}`)).toEqual(['A-B', 'A-C', 'B-C']);

    // Naive: full score matrices per group, sorted, top round(0.1 n) per matrix.
    const groups = ['A', 'B', 'C'];
    const sets: Record<string, Set<string>> = { A: new Set(), B: new Set(), C: new Set() };
    const shares: Record<string, number[]> = {};
    for (const [proj, hook, dOut, dIn] of [['gate_proj', 'layers.0.mlp.in', I, H], ['up_proj', 'layers.0.mlp.in', I, H],
      ['down_proj', 'layers.0.mlp.down_in', H, I]] as const)
    {
      const w = toBf16(model.weights.get(`model.layers.0.mlp.${proj}.weight`)!.w).values;
      const x = hooks[hook].data;
      for (const g of groups) {
        const rows = labels.flatMap((l, r) => (l === g ? [r] : []));
        const s = Array.from({ length: dIn },
          (_, j) => Math.sqrt(rows.reduce((a, r) => a + x[r * dIn + j] ** 2, 0) / rows.length));
        const scored = Array.from({ length: dOut * dIn },
          (_, t) => ({ t, v: Math.fround(Math.abs(w[t]) * s[t % dIn]) }));
        scored.sort((a, b) => b.v - a.v || a.t - b.t);
        const k = Math.round(0.1 * dOut * dIn);
        const R = Math.ceil(dOut / B), K = Math.ceil(dIn / B);
        const share = new Array(R * K).fill(0);
        for (const { t } of scored.slice(0, k)) {
          sets[g].add(`${proj}:${t}`);
          share[Math.floor(Math.floor(t / dIn) / B) * K + Math.floor((t % dIn) / B)]++;
        }
        for (let bi = 0; bi < R; bi++)
          for (let bj = 0; bj < K; bj++)
            share[bi * K + bj] /= (Math.min(dOut, (bi + 1) * B) - bi * B) * (Math.min(dIn, (bj + 1) * B) - bj * B);
        shares[`${g}|layers.0.mlp.${proj}`] = share;
      }
    }
    for (const p of wl) {
      const a = sets[p.a], b = sets[p.b];
      const inter = [...a].filter((t) => b.has(t)).length;
      expect(p.sizeA).toBe(a.size);
      expect(p.sizeB).toBe(b.size);
      expect(p.jaccard.value).toBeCloseTo(inter / (a.size + b.size - inter), 12);
      expect(p.isolationAB.value).toBeCloseTo((a.size - inter) / a.size, 12);
      expect(p.jaccard.p).not.toBeNull();
    }
    const h = readSafetensorsHeader(path.join(res.dir, 'pooled.safetensors'));
    for (const [k, v] of Object.entries(shares)) {
      const got = readTensorFloat32(h, k);
      for (let i = 0; i < v.length; i++) expect(got[i]).toBeCloseTo(v[i], 6);
    }
    // The planted group is isolated at the weight level beyond the null.
    expect(wl[0].isolationAB.p!).toBeLessThanOrEqual(0.05);
    await expect(
      runWanda(path.join(dir, 'run'), { weights: path.join(dir, 'ck'), block: B, resolution: 'weight',
        top: { scope: 'global' }, quiet: true }),
    ).rejects.toThrow(/^resolution weight selects weights per matrix; top.scope global is not available with it$/);
  });
});
