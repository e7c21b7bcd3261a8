/**
 * Attention capture (`layers.{i}.attn.weights`) on real exporters' graphs and lobes' generated
 * models, against independent oracles:
 *   - Hugging Face transformers, eager attention, output_attentions=True (goldens made by
 *     test/attend/make_attention_goldens.py) for onnxruntime-genai's builder (GroupQueryAttention
 *     with in-op rotary and packed QKV), torch.onnx (dynamo) and optimum exports;
 *   - a float64 forward pass written from the Llama equations (test/attend/reference.ts) for the
 *     generated models, and test/runtime/genai-forward.ts for the MultiHeadAttention +
 *     RotaryEmbedding fixture in ../shared.
 * Every layer and head, with left and right padding and mixed-length batches.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openAttentionEngine, parseLayerSelection, realRows,
  type AttentionEngine } from '../../src/runtime/attention-engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { ensureGeneratedModel, generatedModelParams } from '../../src/models/index.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import { LobesError } from '../../src/util/errors.js';
import { writeLlamaOnnx, seededLlamaSource, type LlamaSpec } from '../../src/convert/llama-onnx/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { lastRowAttention, maxAbsDiff } from './reference.js';
import { GENAI, hasGenai } from '../runtime/helpers.js';
import { genaiForward } from '../runtime/genai-forward.js';

const FIX = resolve(import.meta.dirname, 'fixtures');
const ROOT = resolve(import.meta.dirname, '../..');

/** Golden rows [layers, heads, seq] per id list, from a goldens file pair. */
function goldens(json: string, st: string): { ids: number[][]; rows: Float32Array[] } {
  const meta = JSON.parse(readFileSync(json, 'utf8'));
  const h = readSafetensorsHeader(st);
  return { ids: meta.ids, rows: meta.ids.map((_: unknown, i: number) => readTensorFloat32(h, `ids${i}`)) };
}

/** Each row's [layers, heads, n] weights, for a batch of id lists padded on `side`. */
async function rowsOf(eng: AttentionEngine, seqs: number[][], side: 'left' | 'right',
  pad = 0): Promise<Float32Array[]>
{
  const b = padBatch(seqs, pad, side);
  return realRows(b, await eng.run(b), eng.layers);
}

/** Check an engine against golden rows: singly, and batched with either padding. */
async function againstGoldens(eng: AttentionEngine, g: { ids: number[][]; rows: Float32Array[] },
  tol: number): Promise<number>
{
  let worst = 0;
  for (let i = 0; i < g.ids.length; i++) {
    const [single] = await rowsOf(eng, [g.ids[i]!], 'right');
    expect(single!.length).toBe(g.rows[i]!.length);
    worst = Math.max(worst, maxAbsDiff(single!, g.rows[i]!));
  }
  for (const side of ['left', 'right'] as const) {
    const rows = await rowsOf(eng, g.ids, side);
    rows.forEach((r, i) => (worst = Math.max(worst, maxAbsDiff(r, g.rows[i]!))));
  }
  expect(worst).toBeLessThan(tol);
  return worst;
}

describe('explicit attention (Softmax in the graph) on the generated models', () => {
  const p = generatedModelParams('tiny-llama');
  const seqs = [[5, 17, 200, 33, 9, 70, 1, 2, 3, 4, 300], [3, 4], [100, 101, 102, 103, 104, 105, 106]];
  const refs = seqs.map((s) => {
    const ref = lastRowAttention(p, s);
    const flat = new Float64Array(ref.length * ref[0]!.length);
    ref.forEach((x, l) => flat.set(x, l * x.length));
    return flat;
  });

  for (const [name, tol] of [['tiny-llama', 1e-6], ['tiny-llama-opaque', 1e-6], ['tiny-llama-past', 1e-6], [
    'tiny-llama-fp16',
    2e-3,
  ]] as const) {
    it(`${name}: every layer and head equals the float64 forward pass, with either padding`, async () => {
      const eng = await openAttentionEngine(
        name === 'tiny-llama' ? resolve(ROOT, 'models/tiny-llama') : ensureGeneratedModel(name),
        { device: 'cpu' },
      );
      try {
        expect(eng.sites.map((s) => [s.name, s.source])).toEqual([['layers.0.attn.weights', 'softmax'], [
          'layers.1.attn.weights',
          'softmax',
        ]]);
        for (const side of ['left', 'right'] as const) {
          const rows = await rowsOf(eng, seqs, side);
          rows.forEach((r, i) => expect(maxAbsDiff(r, refs[i]!), `${side} row ${i}`).toBeLessThan(tol));
        }
      } finally {
        await eng.close();
      }
    });
  }

  it('renaming every node and value (tiny-llama-opaque) gives the same rows', async () => {
    const a = await openAttentionEngine(resolve(ROOT, 'models/tiny-llama'), { device: 'cpu' });
    const b = await openAttentionEngine(ensureGeneratedModel('tiny-llama-opaque'), { device: 'cpu' });
    try {
      const ra = await rowsOf(a, seqs, 'right');
      const rb = await rowsOf(b, seqs, 'right');
      ra.forEach((r, i) => expect(maxAbsDiff(r, rb[i]!)).toBeLessThan(1e-7));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('padded batch rows: sum to 1 over the real tokens, exactly 0 on padding, and selected layers only', async () => {
    const eng = await openAttentionEngine(resolve(ROOT, 'models/tiny-llama'), { device: 'cpu', layers: [1] });
    try {
      expect(eng.layers).toEqual([1]);
      const b = padBatch(seqs, 0, 'left');
      const res = await eng.run(b);
      expect([...res.weights.keys()]).toEqual([1]);
      const w = res.weights.get(1)!;
      expect(w.length).toBe(b.batch * res.heads * b.seq);
      for (let r = 0; r < b.batch; r++) {
        for (let h = 0; h < res.heads; h++) {
          let sum = 0;
          for (let t = 0; t < b.seq; t++) {
            const x = w[(r * res.heads + h) * b.seq + t]!;
            if (!b.attentionMask[r * b.seq + t]) expect(x).toBe(0);
            sum += x;
          }
          expect(Math.abs(sum - 1)).toBeLessThan(1e-6);
        }
      }
      // Layer 1 alone equals layer 1 of the full reference.
      const rows = realRows(b, res, eng.layers);
      rows.forEach((r, i) => expect(maxAbsDiff(r, refs[i]!.subarray(refs[i]!.length / 2))).toBeLessThan(1e-6));
    } finally {
      await eng.close();
    }
  });
});

describe('GroupQueryAttention (onnxruntime-genai builder, fp32 CPU: packed QKV, in-op rotary)', () => {
  let eng: AttentionEngine;
  beforeAll(async () => {
    eng = await openAttentionEngine(resolve(FIX, 'gqa-tiny'), { device: 'cpu' });
  });
  afterAll(async () => eng?.close());

  it('finds a fused site per layer', () => {
    expect(eng.sites.map((s) => [s.name, s.source])).toEqual([['layers.0.attn.weights', 'GroupQueryAttention'], [
      'layers.1.attn.weights',
      'GroupQueryAttention',
    ]]);
    expect(eng.sites[0]!.detail).toMatch(/4 heads \/ 2 KV heads.*in-op rotary \(halves\).*packed QKV/);
  });

  it('every layer and head equals Hugging Face eager attention within 1e-4, single, batched, either padding', async () => {
    const g = goldens(resolve(FIX, 'gqa-tiny/goldens.json'), resolve(FIX, 'gqa-tiny/goldens.safetensors'));
    // The goldens are far from uniform, so agreement is not a coincidence of flat rows.
    expect(Math.max(...g.rows[0]!)).toBeGreaterThan(0.5);
    await againstGoldens(eng, g, 1e-4);
  });
});

describe("explicit attention in real exporters' graphs (torch.onnx dynamo, optimum)", () => {
  for (const name of ['hf-tiny-llama31', 'hf-tiny-llama31-optimum']) {
    it(`${name}: every layer and head equals Hugging Face eager attention within 1e-4`, async () => {
      const eng = await openAttentionEngine(resolve(ROOT, 'test/goldens', name), { device: 'cpu' });
      try {
        expect(eng.sites.every((s) => s.source === 'softmax')).toBe(true);
        await againstGoldens(eng, goldens(resolve(FIX, `${name}.json`), resolve(FIX, `${name}.safetensors`)), 1e-4);
      } finally {
        await eng.close();
      }
    });
  }
});

describe.skipIf(!hasGenai)('MultiHeadAttention + RotaryEmbedding (../shared onnxruntime-genai fp16 fixture)', () => {
  it('every layer equals the independent float64 forward pass, with either padding', async () => {
    const tok = await loadTokenizer(GENAI, { maxTokens: null, chatTemplate: false });
    const seqs = ['The quick brown fox jumps over the lazy dog.', 'Hi',
      'Numbers: 3.14159, 2.71828 and 1.41421 appear often.'].map((t) => tok.encode(t).ids);
    const eng = await openAttentionEngine(GENAI, { device: 'cpu' });
    try {
      expect(eng.sites.map((s) => s.source)).toEqual(['MultiHeadAttention', 'MultiHeadAttention']);
      for (const side of ['left', 'right'] as const) {
        const rows = await rowsOf(eng, seqs, side, tok.padId);
        rows.forEach((r, i) => {
          const f = genaiForward(GENAI, seqs[i]!);
          const flat = new Float64Array(2 * seqs[i]!.length);
          f.attnLast.forEach((x, l) => flat.set(x, l * seqs[i]!.length));
          expect(maxAbsDiff(r, flat), `${side} row ${i}`).toBeLessThan(2e-3);
        });
      }
    } finally {
      await eng.close();
    }
  });
});

describe("lobes' Llama writer: the explicit Softmax and the recomputed GroupQueryAttention agree on the same weights", () => {
  it('fp32 within 1e-5 and fp16 within 3e-3, 8 heads on 2 KV heads, left-padded mixed batch', async () => {
    const spec = { layers: 2, hidden: 128, intermediate: 256, heads: 8, kvHeads: 2, headDim: 16, vocab: 300,
      rmsNormEps: 1e-5, ropeTheta: 10000, ropeScaling: null, maxPositions: 128, tiedEmbeddings: false } as LlamaSpec;
    const seqs = [[1, 5, 9, 33, 200, 17, 4], [2, 3], [7, 8, 9, 10, 11, 12, 13, 14, 15, 16]];
    const tmp = mkdtempSync(resolve(tmpdir(), 'lobes-attend-writer-'));
    try {
      const rows: Record<string, Float32Array[]> = {};
      for (const [name, layout, dtype] of [['explicit32', 'explicit', 'fp32'], ['genai32', 'genai', 'fp32'], ['genai16',
        'genai', 'fp16']] as const)
      {
        const dir = resolve(tmp, name);
        await writeLlamaOnnx(dir, spec, seededLlamaSource(spec, 3), { layout, dtype, weights: dtype });
        const eng = await openAttentionEngine(dir, { device: 'cpu' });
        try {
          expect(eng.sites[0]!.source).toBe(layout === 'explicit' ? 'softmax' : 'GroupQueryAttention');
          rows[name] = await rowsOf(eng, seqs, 'left');
        } finally {
          await eng.close();
        }
      }
      rows.genai32!.forEach((r, i) => expect(maxAbsDiff(r, rows.explicit32![i]!)).toBeLessThan(1e-5));
      rows.genai16!.forEach((r, i) => expect(maxAbsDiff(r, rows.explicit32![i]!)).toBeLessThan(3e-3));
      // Not uniform rows: a wrong head mapping or rotary would show.
      expect(Math.max(...rows.explicit32![0]!)).toBeGreaterThan(0.3);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('layer selection', () => {
  it('parses all, last:N and lists with ranges; refuses layers that do not exist', () => {
    expect(parseLayerSelection('all', 4)).toEqual([0, 1, 2, 3]);
    expect(parseLayerSelection('last:20', 30)).toEqual(Array.from({ length: 20 }, (_, i) => 10 + i));
    // last:N past the model: refused when asked for, every layer for a command's default (clamp)
    expect(parseLayerSelection('last:20', 2, { clamp: true })).toEqual([0, 1]);
    expect(() => parseLayerSelection('last:20', 2)).toThrow(LobesError);
    expect(parseLayerSelection('3, 0,5-7', 30)).toEqual([0, 3, 5, 6, 7]);
    for (const bad of ['30', '5-3', 'x', 'last:0', ''])
      expect(() => parseLayerSelection(bad, 30), bad).toThrow(LobesError);
  });
});

it('fixtures exist', () => {
  expect(existsSync(resolve(FIX, 'gqa-tiny/model.onnx'))).toBe(true);
});
