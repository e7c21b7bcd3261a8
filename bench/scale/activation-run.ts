/**
 * A run directory with N synthetic samples at a model's capture shapes (final.hidden and every
 * layer's mlp.in / mlp.down_in, stored fp16 like `lobes extract`), labelled with the five
 * SocialEval aspects in turn: the workload of `lobes wanda` and `lobes cluster` on a full
 * dataset without running the model N times. Values are seeded noise (no structure).
 *
 *   node --import tsx bench/scale/activation-run.ts DIR N [--small] [--seed N]
 */
import { mkdirSync, existsSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { writeManifest, writeSamples } from '../../src/store/manifest.js';
import { ChunkWriter } from '../../src/store/writer.js';
import type { HookInfo, RunManifest } from '../../src/store/types.js';
import type { ScaleSpec } from './weights.js';
import { specFor } from './specs.js';

const ASPECTS = ['Self-Management', 'Social Engagement', 'Cooperation', 'Emotional Resilience', 'Innovation'];

/** Write the run (replacing `dir`); returns its hooks. */
export function writeActivationRun(dir: string, spec: ScaleSpec, n: number, seed = 1,
  modelDir = 'synthetic'): HookInfo[]
{
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const hooks: HookInfo[] = [{ name: 'final.hidden', dim: spec.hidden, dtype: 'F16' }];
  for (let l = 0; l < spec.layers; l++)
    hooks.push({ name: `layers.${l}.mlp.in`, dim: spec.hidden, dtype: 'F16' }, { name: `layers.${l}.mlp.down_in`,
      dim: spec.intermediate, dtype: 'F16' });
  const manifest = {
    format: 'lobes-run',
    formatVersion: 1,
    lobesVersion: 'bench',
    createdAt: new Date().toISOString(),
    model: { dir: modelDir, graphSha256: '0'.repeat(64),
      arch: { family: 'llama', layers: spec.layers, hidden: spec.hidden, intermediate: spec.intermediate,
        heads: spec.heads, kvHeads: spec.kvHeads, vocab: spec.vocab, dtype: 'bf16', quantization: null } },
    tokenizer: { source: 'bench', chatTemplate: false, addBos: true, maxTokens: null },
    dataset: { spec: `bench:synthetic?n=${n}`, itemsSha256: '0'.repeat(64), count: n, axes: ['aspect'] },
    capture: { points: hooks, selection: ['final', 'mlp'] },
    dtype: 'fp16',
    provider: { device: 'cpu', deviceId: 0 },
    shard: null,
    counts: { samples: n, truncated: 0, tokens: n },
    timings: {},
    complete: false,
  } as unknown as RunManifest;
  writeManifest(dir, manifest);
  writeSamples(dir,
    Array.from({ length: n },
      (_, i) => ({ index: i, id: `s${i}`, labels: { aspect: ASPECTS[i % 5]! }, tokens: 1, truncated: false })));
  const chunkRows = 128;
  const w = ChunkWriter.create(dir, hooks, chunkRows);
  let x = seed >>> 0 || 1;
  for (let c = 0, start = 0; start < n; c++, start += chunkRows) {
    const rows = Math.min(chunkRows, n - start);
    const data = new Map<string, Float32Array>();
    for (const h of hooks) {
      const a = new Float32Array(rows * h.dim);
      for (let i = 0; i < a.length; i++) {
        // xorshift32, then the sum of two bytes: a cheap bell-shaped value around 0
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        a[i] = ((x & 255) + ((x >>> 8) & 255) - 255) / 74;
      }
      data.set(h.name, a);
    }
    w.write(c, start, rows, data);
  }
  writeManifest(dir, { ...manifest, complete: true });
  return hooks;
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('bench', 'scale', 'activation-run.ts'))) {
  const [dir, n] = process.argv.slice(2);
  const si = process.argv.indexOf('--seed');
  if (!dir || !n) throw new Error('usage: activation-run.ts DIR N [--small] [--seed N]');
  if (existsSync(path.join(dir, 'manifest.json'))) rmSync(dir, { recursive: true });
  writeActivationRun(dir, specFor(process.argv.includes('--small')), Number(n),
    si > 0 ? Number(process.argv[si + 1]) : 1);
}
