/**
 * Shared by the Hugging Face checkpoint tests: the committed checkpoints and goldens of
 * test/goldens/make_hf_checkpoint_goldens.py, and the comparison of a converted model's captures
 * and logits with them.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import { analyseModel, openCaptureEngine, planInputs } from '../../src/runtime/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { relErr } from '../models/reference-forward.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CKPTS = path.join(ROOT, 'test', 'goldens', 'hf-checkpoints');

export interface FamilyGolden {
  seed: number;
  dtype: string;
  files: string[];
  rope: string;
  tensors: Record<string, number[]>;
  gguf?: string;
  gguf_full?: string;
  gguf_q8?: string;
  edge_ids?: number[][];
  gguf_vs_checkpoint_logits_rel?: number;
  builder_export: {
    builder: string;
    note: string | null;
    oracle: string;
    drops?: string;
    builder_vs_checkpoint_logits_rel?: number;
    /** Gemma 1: the F16 checkpoint's own export (not committed), measured by the generator. */
    f16_export_logits_rel?: number;
    f16_export_norm_weight_max_abs_diff?: number;
    /** Where the builder exports nothing (gemma3, oracle null): its error for each config.json spelling. */
    errors?: Record<string, string>;
  };
}
export interface GoldenMeta {
  texts: string[];
  ids: number[][];
  pad: number;
  families: Record<string, FamilyGolden>;
}

/** A goldens file pair of the generator: NAME.json (texts, ids, families) and NAME.safetensors. */
export class GoldenSet {
  readonly meta: GoldenMeta;
  private readonly header;
  constructor(name: string) {
    this.meta = JSON.parse(readFileSync(path.join(CKPTS, `${name}.json`), 'utf8'));
    this.header = readSafetensorsHeader(path.join(CKPTS, `${name}.safetensors`));
  }
  golden(name: string): Float32Array {
    return readTensorFloat32(this.header, name);
  }
  /** The golden point names recorded under `prefix.` (layers.L.mlp.in, ..., final.hidden, logits). */
  points(prefix: string): string[] {
    return [...this.header.tensors.keys()].filter((k) => k.startsWith(`${prefix}.`)).map((k) =>
      k.slice(prefix.length + 1)
    ).filter((k) => !k.startsWith('attn.'));
  }
}

const DEFAULT_SET = new GoldenSet('goldens');
export const META: GoldenMeta = DEFAULT_SET.meta;
export const golden = (name: string) => DEFAULT_SET.golden(name);
export const grow = (a: Float32Array, i: number, d: number) => a.subarray(i * d, (i + 1) * d);

/**
 * Last-token logits [rows, V] of a converted model (either layout), one padded batch. A graph
 * whose GroupQueryAttention keeps a window-sized cache (sliding_window_cache: the builder's
 * Gemma 2 / 3) gets zero buffers of the length lobes' feed plan names (cacheLen) with no past
 * tokens in them, and its rows one at a time, unpadded (onnxruntime refuses a row shorter than
 * the batch there).
 */
export async function batchLogits(dir: string, ids: number[][], pad: number,
  side: 'left' | 'right'): Promise<{ logits: Float32Array; V: number }>
{
  const { plans, windowCache } = planInputs(analyseModel(dir));
  if (windowCache && ids.length > 1) {
    const rows = [];
    for (const r of ids) rows.push(await batchLogits(dir, [r], pad, side));
    const V = rows[0]!.V;
    const logits = new Float32Array(ids.length * V);
    rows.forEach((r, i) => logits.set(r.logits, i * V));
    return { logits, V };
  }
  const cacheLen = new Map(plans.map((p) => [p.name, p.cacheLen ?? 0]));
  const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'));
  try {
    const b = padBatch(ids, pad, side);
    const pos = new BigInt64Array(b.batch * b.seq);
    for (let r = 0; r < b.batch; r++) {
      let c = -1;
      for (let t = 0; t < b.seq; t++) {
        if (b.attentionMask[r * b.seq + t]) c++;
        pos[r * b.seq + t] = BigInt(Math.max(c, 0));
      }
    }
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', b.inputIds, [b.batch, b.seq]),
      attention_mask: new ort.Tensor('int64', b.attentionMask, [b.batch, b.seq]),
    };
    if (s.inputNames.includes('position_ids')) feeds.position_ids = new ort.Tensor('int64', pos, [b.batch, b.seq]);
    // KV heads and head size from config.json, or genai_config.json (a builder export has only that).
    const kv = existsSync(path.join(dir, 'config.json'))
      ? ((c) => [c.num_key_value_heads, c.head_dim])(JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')))
      : ((c) => [c.model.decoder.num_key_value_heads, c.model.decoder.head_size])(
        JSON.parse(readFileSync(path.join(dir, 'genai_config.json'), 'utf8')),
      );
    for (const n of s.inputNames) {
      if (!n.startsWith('past_key_values.')) continue;
      const len = cacheLen.get(n) ?? 0;
      feeds[n] = new ort.Tensor('float32', new Float32Array(b.batch * kv[0] * len * kv[1]), [b.batch, kv[0], len,
        kv[1]]);
    }
    const out = await s.run(feeds);
    const all = out.logits!.data as Float32Array;
    const V = out.logits!.dims[2]!;
    const res = new Float32Array(b.batch * V);
    for (let r = 0; r < b.batch; r++)
      res.set(all.subarray((r * b.seq + b.lastIndex[r]!) * V, (r * b.seq + b.lastIndex[r]! + 1) * V), r * V);
    return { logits: res, V };
  } finally {
    await s.release();
  }
}

/**
 * Every capture point (mlp.in, mlp.down_in, resid_out per layer, final.hidden) and the logits of
 * the converted model `dir` equal the goldens `prefix.*` within `tol` (relative), text by text,
 * the texts run as one batch padded on `side`. Returns the largest error seen.
 */
export async function expectGoldens(dir: string, prefix: string, side: 'left' | 'right', tol = 1e-4,
  set: GoldenSet = DEFAULT_SET): Promise<number>
{
  const ids = set.meta.ids;
  const pad = set.meta.pad;
  const golden = (name: string) => set.golden(name);
  const names = set.points(prefix);
  let worst = 0;
  const engine = await openCaptureEngine(dir, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
  try {
    const got = engine.hooks.map((h) => h.name).sort();
    const want = names.filter((n) => n !== 'logits').sort();
    expect(got).toEqual(want);
    const out = await engine.run(padBatch(ids, pad, side));
    for (const name of want) {
      const g = golden(`${prefix}.${name}`);
      const d = g.length / ids.length;
      const v = out.get(name)!;
      expect(v.length).toBe(ids.length * d);
      for (let i = 0; i < ids.length; i++) {
        const e = relErr(grow(v, i, d), grow(g, i, d));
        worst = Math.max(worst, e);
        expect(e, `${prefix} ${name} text ${i} (${side} padding)`).toBeLessThan(tol);
      }
    }
  } finally {
    await engine.close();
  }
  const { logits, V } = await batchLogits(dir, ids, pad, side);
  const g = golden(`${prefix}.logits`);
  for (let i = 0; i < ids.length; i++) {
    const e = relErr(grow(logits, i, V), grow(g, i, V));
    worst = Math.max(worst, e);
    expect(e, `${prefix} logits text ${i} (${side} padding)`).toBeLessThan(tol);
  }
  return worst;
}

/** The golden point names recorded under `prefix.` (layers.L.mlp.in, ..., final.hidden, logits). */
export function goldenPoints(prefix: string): string[] {
  return DEFAULT_SET.points(prefix);
}
