/** Fixtures for the wanda tests: seeded weights, planted activations, run directories. */
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { writeSafetensors, type StWriteTensor } from '../../src/formats/safetensors.js';
import { floatToBf16 } from '../../src/util/half.js';
import { writeManifest, writeSamples } from '../../src/store/manifest.js';
import { ChunkWriter } from '../../src/store/writer.js';
import type { HookInfo, RunManifest, SampleRow } from '../../src/store/types.js';

const created: string[] = [];

/** A fresh temporary folder, removed by cleanupTmp() (call it in afterAll). */
export function tmpDir(prefix = 'lobes-wanda-'): string {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(d);
  return d;
}

export function cleanupTmp(): void {
  for (const d of created.splice(0)) rmSync(d, { recursive: true, force: true });
}

export function randn(rng: Rng, n: number, std = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = std * rng.normal();
  return a;
}

export function toBf16(a: Float32Array): { bits: Uint16Array; values: Float32Array } {
  const bits = new Uint16Array(a.length);
  const values = new Float32Array(a.length);
  const u = new Uint32Array(values.buffer);
  for (let i = 0; i < a.length; i++) {
    bits[i] = floatToBf16(a[i]);
    u[i] = bits[i] << 16;
  }
  return { bits, values };
}

export function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(w.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) t[j * rows + i] = w[i * cols + j];
  return t;
}

/** Naive Wanda: full |W| * s, then mean over each block's true area. */
export function naivePooled(w: Float32Array, dOut: number, dIn: number, s: ArrayLike<number>, rb: number,
  cb: number): Float64Array
{
  const R = Math.ceil(dOut / rb);
  const K = Math.ceil(dIn / cb);
  const full = new Float64Array(dOut * dIn);
  for (let i = 0; i < dOut; i++) for (let j = 0; j < dIn; j++) full[i * dIn + j] = Math.abs(w[i * dIn + j]) * s[j];
  const out = new Float64Array(R * K);
  for (let bi = 0; bi < R; bi++)
    for (let bj = 0; bj < K; bj++) {
      let acc = 0;
      let n = 0;
      for (let i = bi * rb; i < Math.min(dOut, (bi + 1) * rb); i++)
        for (let j = bj * cb; j < Math.min(dIn, (bj + 1) * cb); j++) {
          acc += full[i * dIn + j];
          n++;
        }
      out[bi * K + bj] = acc / n;
    }
  return out;
}

/** A synthetic Llama-like MLP with planted blocks, in HF layout. */
export interface SyntheticModel {
  layers: number;
  hidden: number;
  inter: number;
  /** name (e.g. model.layers.0.mlp.gate_proj.weight) -> [dOut, dIn] float32 */
  weights: Map<string, { w: Float32Array; dOut: number; dIn: number }>;
}

export interface Plant {
  group: string;
  /** Hidden block F and intermediate block G: gate/up block [G, F], down block [F, G] get `weightGain`. */
  hiddenBlock: number;
  interBlock: number;
  weightGain: number;
  /** The group's samples are multiplied by this on F (mlp.in) and G (down_in). */
  activationGain: number;
}

export interface PlantOptions {
  block: number;
  plants?: Plant[];
}

export function syntheticModel(seed: number, layers: number, hidden: number, inter: number,
  o: PlantOptions): SyntheticModel
{
  const rng = new Rng(seed);
  const weights = new Map<string, { w: Float32Array; dOut: number; dIn: number }>();
  for (let l = 0; l < layers; l++) {
    for (const [proj, dOut, dIn] of [['gate_proj', inter, hidden], ['up_proj', inter, hidden], ['down_proj', hidden,
      inter]] as const)
    {
      const w = randn(rng, dOut * dIn, 1 / Math.sqrt(dIn));
      for (const p of o.plants ?? []) {
        const B = o.block;
        const [rBlk, cBlk] = proj === 'down_proj' ? [p.hiddenBlock, p.interBlock] : [p.interBlock, p.hiddenBlock];
        for (let i = rBlk * B; i < (rBlk + 1) * B; i++)
          for (let j = cBlk * B; j < (cBlk + 1) * B; j++) w[i * dIn + j] *= p.weightGain;
      }
      weights.set(`model.layers.${l}.mlp.${proj}.weight`, { w, dOut, dIn });
    }
  }
  return { layers, hidden, inter, weights };
}

/** Activations per hook for labelled samples; each planted group has its features scaled up. */
export function syntheticActivations(seed: number, m: SyntheticModel, labels: string[],
  o: PlantOptions): Record<string, { dim: number; data: Float32Array }>
{
  const rng = new Rng(seed);
  const n = labels.length;
  const hooks: Record<string, { dim: number; data: Float32Array }> = {};
  for (let l = 0; l < m.layers; l++) {
    for (const [hook, dim, down] of [[`layers.${l}.mlp.in`, m.hidden, false], [`layers.${l}.mlp.down_in`, m.inter,
      true]] as const)
    {
      const data = randn(rng, n * dim);
      for (const p of o.plants ?? []) {
        const blk = down ? p.interBlock : p.hiddenBlock;
        for (let r = 0; r < n; r++) {
          if (labels[r] !== p.group) continue;
          for (let j = blk * o.block; j < (blk + 1) * o.block; j++) data[r * dim + j] *= p.activationGain;
        }
      }
      hooks[hook] = { dim, data };
    }
  }
  return hooks;
}

/** Write the synthetic model as a safetensors checkpoint (bf16 or f32), optionally sharded. */
export function writeCheckpoint(dir: string, m: SyntheticModel, dtype: 'BF16' | 'F32', shards = 1): void {
  mkdirSync(dir, { recursive: true });
  const names = [...m.weights.keys()];
  const per = Math.ceil(names.length / shards);
  const weightMap: Record<string, string> = {};
  for (let s = 0; s < shards; s++) {
    const file = shards === 1
      ? 'model.safetensors'
      : `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const tensors: StWriteTensor[] = names.slice(s * per, (s + 1) * per).map((name) => {
      const { w, dOut, dIn } = m.weights.get(name)!;
      weightMap[name] = file;
      return { name, dtype, shape: [dOut, dIn], data: dtype === 'BF16' ? toBf16(w).bits : w };
    });
    writeSafetensors(path.join(dir, file), tensors);
  }
  if (shards > 1) {
    writeFileSync(path.join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }));
  }
}

/** Write a complete run directory with the given labels and activations. */
export function writeRun(dir: string, labels: Record<string, string>[],
  hooks: Record<string, { dim: number; data: Float32Array }>, modelDir = '/nonexistent-model'): void
{
  mkdirSync(dir, { recursive: true });
  const n = labels.length;
  const axes = Object.keys(labels[0] ?? {});
  const infos: HookInfo[] = Object.entries(hooks).map(([name, v]) => ({ name, dim: v.dim, dtype: 'F32' }));
  const manifest: RunManifest = {
    format: 'lobes-run',
    formatVersion: 1,
    lobesVersion: 'test',
    createdAt: new Date(0).toISOString(),
    model: { dir: modelDir, graphSha256: '0'.repeat(64),
      arch: { family: 'llama', layers: 0, hidden: 0, intermediate: 0, heads: null, kvHeads: null, vocab: 0,
        dtype: 'fp32', quantization: null } },
    tokenizer: { source: 'test', chatTemplate: false, addBos: true, maxTokens: null },
    dataset: { spec: 'test', itemsSha256: '0'.repeat(64), count: n, axes },
    capture: { points: infos, selection: ['mlp'] },
    dtype: 'fp32',
    provider: { device: 'cpu', deviceId: 0 },
    shard: null,
    counts: { samples: n, truncated: 0, tokens: n },
    timings: {},
    complete: false,
  };
  writeManifest(dir, manifest);
  const rows: SampleRow[] = labels.map((l, i) => ({ index: i, id: `s${i}`, labels: l, tokens: 1, truncated: false }));
  writeSamples(dir, rows);
  const chunkRows = 64;
  const w = ChunkWriter.create(dir, infos, chunkRows);
  for (let c = 0, start = 0; start < n; c++, start += chunkRows) {
    const rowsN = Math.min(chunkRows, n - start);
    const data = new Map<string, Float32Array>();
    for (const h of infos) data.set(h.name, hooks[h.name].data.slice(start * h.dim, (start + rowsN) * h.dim));
    w.write(c, start, rowsN, data);
  }
  writeManifest(dir, { ...manifest, complete: true });
}
