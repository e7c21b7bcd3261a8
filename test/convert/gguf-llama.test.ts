/**
 * GGUF → Llama spec, weights and ONNX folder on the tiny Llama-3.1-shaped GGUF written by
 * test/goldens/make_gguf_llama3_tiny.py. Oracles: the Hugging Face model the file was made
 * from (its config, and its forward pass in float32: goldens.json / goldens.bin), llama.cpp's
 * formulas for the Q/K row order and for rope_freqs written out in this file, and the float32
 * dequantization of each tensor (for the MatMulNBits blocks).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { openGgufLlama, ropeScalingFromFreqFactors, ggufRowOf, hfRowOf, shortFloat32,
  type GgufLlama } from '../../src/convert/gguf-llama.js';
import { convertGguf } from '../../src/convert/convert.js';
import { openCaptureEngine } from '../../src/runtime/engine.js';
import { loadModel } from '../../src/onnx/index.js';
import { TINY_GGUF, loadTinyGoldens, relErr, batchOf, type TinyGoldens } from './tiny-llama3.js';

/** llama.cpp's rope_freqs for llama3 scaling, written from its converter's description. */
function llama3Factors(theta: number, d: number, factor: number, low: number, high: number, L: number): Float32Array {
  const out = new Float32Array(d / 2);
  for (let i = 0; i < d / 2; i++) {
    const freq = 1 / theta ** ((2 * i) / d);
    const wave = (2 * Math.PI) / freq;
    if (wave < L / high) out[i] = 1;
    else if (wave > L / low) out[i] = factor;
    else {
      const s = (L / wave - low) / (high - low);
      out[i] = 1 / ((1 - s) / factor + s);
    }
  }
  return out;
}

const place = { file: 'test.gguf', where: 'tensor "rope_freqs.weight"' };

describe('llama3 rope scaling from rope_freqs', () => {
  it('recovers Llama-3.1 (factor 8) and Llama-3.2 (factor 32) parameters for head dims 64 and 128', () => {
    for (const d of [64, 128]) {
      for (const factor of [8, 32]) {
        const got = ropeScalingFromFreqFactors(llama3Factors(500000, d, factor, 1, 4, 8192), 500000, d, null, place);
        expect(got).toEqual({ rope_type: 'llama3', factor, low_freq_factor: 1, high_freq_factor: 4,
          original_max_position_embeddings: 8192 });
      }
    }
  });

  it('fits other low/high factors and uses the original context length from the metadata', () => {
    const f = llama3Factors(500000, 128, 16, 2, 8, 4096);
    const got = ropeScalingFromFreqFactors(f, 500000, 128, 4096, place)!;
    expect(got.original_max_position_embeddings).toBe(4096);
    expect(got.low_freq_factor).toBeCloseTo(2, 6);
    expect(got.high_freq_factor).toBeCloseTo(8, 6);
    expect(llama3Factors(500000, 128, 16, got.low_freq_factor as number, got.high_freq_factor as number, 4096)).toEqual(
      f,
    );
  });

  it('gives null for factors that are all 1 and refuses factors that do not follow llama3', () => {
    expect(ropeScalingFromFreqFactors(new Float32Array(32).fill(1), 10000, 64, null, place)).toBeNull();
    const odd = llama3Factors(500000, 64, 8, 1, 4, 8192);
    odd[3] = 2.5; // a high-frequency factor that should be 1
    expect(() => ropeScalingFromFreqFactors(odd, 500000, 64, null, place)).toThrow(/do not follow llama3 rope scaling/);
    expect(() => ropeScalingFromFreqFactors(new Float32Array(31).fill(1), 10000, 64, null, place)).toThrow(
      /32 rotary frequencies/,
    );
  });

  it('shortFloat32 gives the shortest decimal of a float32', () => {
    expect(shortFloat32(Math.fround(1e-5))).toBe(1e-5);
    expect(shortFloat32(Math.fround(1e-6))).toBe(1e-6);
    expect(shortFloat32(500000)).toBe(500000);
    expect(Math.fround(shortFloat32(Math.fround(0.1 + 0.2)))).toBe(Math.fround(0.1 + 0.2));
  });
});

describe('Q/K row order', () => {
  it("ggufRowOf is llama.cpp's permutation reshape(n_head, 2, D/2).swapaxes(1, 2) and hfRowOf its inverse", () => {
    for (const [heads, d] of [[4, 64], [3, 8], [1, 2]] as const) {
      // GGUF row g holds HF row perm[g]: index arithmetic of the reshape / swapaxes.
      const perm: number[] = [];
      for (let h = 0; h < heads; h++)
        for (let i = 0; i < d / 2; i++) for (let s = 0; s < 2; s++) perm.push(h * d + s * (d / 2) + i);
      for (let g = 0; g < heads * d; g++) {
        expect(hfRowOf(g, d)).toBe(perm[g]);
        expect(ggufRowOf(perm[g]!, d)).toBe(g);
      }
    }
  });
});

describe('tiny Llama-3.1-shaped GGUF', () => {
  let model: GgufLlama;
  let gold: TinyGoldens;
  let tmp: string;
  beforeAll(() => {
    model = openGgufLlama(TINY_GGUF);
    gold = loadTinyGoldens();
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-gguf-llama-'));
  });
  afterAll(() => {
    model.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('reads the spec the Hugging Face config has, rope scaling included', () => {
    const c = gold.config;
    expect(model.spec).toMatchObject({
      layers: c.layers,
      hidden: c.hidden,
      intermediate: c.intermediate,
      heads: c.heads,
      kvHeads: c.kv_heads,
      headDim: c.head_dim,
      vocab: c.vocab,
      ropeTheta: c.rope_theta,
      rmsNormEps: 1e-5,
      tiedEmbeddings: c.tied,
      ropeScaling: c.rope_scaling,
      bosTokenId: 1022,
      eosTokenId: 1023,
    });
  });

  it('gives MatMulNBits blocks that equal the dequantized rows for every weight whose type maps', () => {
    const kinds: string[] = [];
    for (const m of model.mapped) {
      if (m.shape.length !== 2) continue;
      const nb = model.weights.nbits(m.name);
      kinds.push(`${m.tensor.typeName}:${nb ? `${nb.bits}/${nb.blockSize}/${nb.zeroPoints ? 'zp' : 'min'}` : 'none'}`);
      if (!nb) continue;
      const [dOut, dIn] = m.shape as [number, number];
      const rows = model.weights.rows(m.name, 0, dOut);
      const kb = dIn / nb.blockSize;
      const blob = (nb.blockSize * nb.bits) / 8;
      const zpRow = Math.ceil((kb * nb.bits) / 8);
      const mask = (1 << nb.bits) - 1;
      let bad = 0;
      for (let r = 0; r < dOut; r++) {
        for (let j = 0; j < dIn; j++) {
          const b = Math.floor(j / nb.blockSize);
          const t = (j % nb.blockSize) * nb.bits;
          const q = (nb.weights[(r * kb + b) * blob + (t >> 3)]! >> (t & 7)) & mask;
          const s = nb.scales[r * kb + b]!;
          let w: number;
          if (nb.zeroPoints) {
            const zb = b * nb.bits;
            w = Math.fround((q - ((nb.zeroPoints[r * zpRow + (zb >> 3)]! >> (zb & 7)) & mask)) * s);
          } else w = Math.fround(Math.fround(q * s) + nb.mins![r * kb + b]!);
          if (w !== rows[r * dIn + j]) bad++;
        }
      }
      expect(bad, m.name).toBe(0);
    }
    // Every mappable type is seen (Q2_K's 2-bit codes widened to 4 bits); F16 gives none.
    expect(new Set(kinds)).toEqual(
      new Set(['Q4_K:4/32/min', 'Q4_0:4/32/zp', 'Q8_0:8/32/zp', 'Q6_K:8/16/zp', 'Q4_1:4/32/min', 'Q5_K:8/32/min',
        'Q3_K:4/16/zp', 'Q5_0:8/32/zp', 'Q5_1:8/32/min', 'Q2_K:4/16/min', 'F16:none']),
    );
  });

  it('released blocks are reused for the next weight of the same size, and the reused arrays hold that weight exactly', () => {
    // The writer releases each weight's blocks once written; the source then decodes the next
    // weight of the same byte size into the same buffers. Every result must equal what a source
    // that never reuses gives (a fresh open, nothing released).
    const reusing = openGgufLlama(TINY_GGUF).weights;
    const fresh = openGgufLlama(TINY_GGUF).weights;
    const seen = new Set<ArrayBufferLike>();
    let reused = 0;
    for (const m of model.mapped) {
      if (m.shape.length !== 2) continue;
      const a = reusing.nbits(m.name);
      const b = fresh.nbits(m.name);
      expect(a === null, m.name).toBe(b === null);
      if (!a || !b) continue;
      if (seen.has(a.weights.buffer)) reused++;
      seen.add(a.weights.buffer);
      expect(Buffer.from(a.weights).equals(Buffer.from(b.weights)), `${m.name} codes`).toBe(true);
      expect(
        Buffer.from(a.scales.buffer, a.scales.byteOffset, a.scales.byteLength).equals(
          Buffer.from(b.scales.buffer, b.scales.byteOffset, b.scales.byteLength),
        ),
        `${m.name} scales`,
      ).toBe(true);
      expect(a.zeroPoints === null ? null : Buffer.from(a.zeroPoints).toString('hex'), `${m.name} zero points`).toEqual(
        b.zeroPoints === null ? null : Buffer.from(b.zeroPoints).toString('hex'),
      );
      expect(a.mins ? Array.from(a.mins) : null, `${m.name} mins`).toEqual(b.mins ? Array.from(b.mins) : null);
      a.release?.();
      a.release?.(); // twice is harmless: the buffers go back once
    }
    expect(reused).toBeGreaterThan(0);
  });

  it('converts to an ONNX folder whose last-token activations and logits equal the Hugging Face model (explicit, fp32)', async () => {
    const res = await convertGguf(TINY_GGUF, path.join(tmp, 'fp32'), { weights: 'fp32' });
    expect(res.options).toEqual({ dtype: 'fp32', weights: 'fp32', layout: 'explicit' });
    const cfg = JSON.parse(readFileSync(path.join(res.dir, 'config.json'), 'utf8'));
    expect(cfg.rope_scaling).toEqual(gold.config.rope_scaling);
    expect(cfg.tie_word_embeddings).toBe(false);
    const eng = await openCaptureEngine(res.dir, { capture: ['final', 'mlp'], device: 'cpu' });
    try {
      const out = await eng.run(batchOf(gold.sequences));
      gold.sequences.forEach((_, s) => {
        for (const h of gold.hooks) {
          if (h === 'logits') continue;
          const d = gold.vectors[s]!.get(h)!.length;
          expect(relErr(out.get(h)!.subarray(s * d, (s + 1) * d), gold.vectors[s]!.get(h)!), `${h} of sequence ${s}`)
            .toBeLessThan(1e-4);
        }
      });
    } finally {
      await eng.close();
    }
    // Logits through the unmodified graph, one sequence at a time (no padding).
    const session = await ort.InferenceSession.create(path.join(res.dir, 'model.onnx'));
    try {
      for (const [s, ids] of gold.sequences.entries()) {
        const n = ids.length;
        const feeds = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
          attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), [1, n]),
        };
        const logits = (await session.run(feeds)).logits!.data as Float32Array;
        const V = gold.config.vocab;
        expect(relErr(logits.subarray((n - 1) * V, n * V), gold.vectors[s]!.get('logits')!), `logits of sequence ${s}`)
          .toBeLessThan(1e-4);
      }
    } finally {
      await session.release();
    }
  });

  it('q4 keeps the exact blocks as MatMulNBits, expands 8-bit blocks with mins exactly and re-quantizes only the F16 weight', async () => {
    const res = await convertGguf(TINY_GGUF, path.join(tmp, 'q4'), { weights: 'q4' });
    expect(res.requantized).toEqual(['model.layers.1.mlp.down_proj.weight']);
    expect(res.storage.nbits4).toBe(6);
    // 5 projections and lm_head (the file's Q6_K output weight, kept as 8-bit blocks)
    expect(res.storage.nbits8).toBe(6);
    const g = loadModel(res.dir).model.graph!;
    const head = g.node.find((n) => n.output.includes('logits'))!;
    expect(head.opType).toBe('MatMulNBits');
    // Everything before layer 1's down_proj (the F16 weight) uses exact weights: equal to the oracle.
    const eng = await openCaptureEngine(res.dir, { capture: ['final', 'mlp'], device: 'cpu' });
    try {
      const out = await eng.run(batchOf(gold.sequences));
      gold.sequences.forEach((_, s) => {
        for (const h of ['layers.0.mlp.in', 'layers.0.mlp.down_in', 'layers.1.mlp.in', 'layers.1.mlp.down_in']) {
          const g = gold.vectors[s]!.get(h)!;
          expect(relErr(out.get(h)!.subarray(s * g.length, (s + 1) * g.length), g), `${h} of sequence ${s}`)
            .toBeLessThan(1e-4);
        }
        // final.hidden goes through the 4-bit re-quantized F16 weight: close, not equal.
        const g = gold.vectors[s]!.get('final.hidden')!;
        const e = relErr(out.get('final.hidden')!.subarray(s * g.length, (s + 1) * g.length), g);
        expect(e).toBeGreaterThan(1e-4);
        expect(e).toBeLessThan(0.2);
      });
    } finally {
      await eng.close();
    }
    // The 8-bit lm_head computes the GGUF's dequantized output weight (ggml.ts, not the
    // MatMulNBits path): logits = final.hidden · Wᵀ, in float64 here.
    const V = gold.config.vocab;
    const H = gold.config.hidden;
    const W = model.weights.rows('lm_head.weight', 0, V);
    const finalEng = await openCaptureEngine(res.dir, { capture: ['final'], device: 'cpu' });
    const session = await ort.InferenceSession.create(path.join(res.dir, 'model.onnx'));
    try {
      for (const ids of gold.sequences) {
        const n = ids.length;
        const hidden = (await finalEng.run(batchOf([ids]))).get('final.hidden')!;
        const feeds = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
          attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), [1, n]),
        };
        const logits = ((await session.run(feeds)).logits!.data as Float32Array).subarray((n - 1) * V, n * V);
        const want = new Float32Array(V);
        for (let v = 0; v < V; v++) {
          let acc = 0;
          for (let j = 0; j < H; j++) acc += W[v * H + j]! * hidden[j]!;
          want[v] = acc;
        }
        expect(relErr(logits, want)).toBeLessThan(1e-5);
      }
    } finally {
      await session.release();
      await finalEng.close();
    }
  });

  it('the genai layout (GroupQueryAttention, KV cache) gives the same activations', async () => {
    const res = await convertGguf(TINY_GGUF, path.join(tmp, 'genai'), { weights: 'fp32', layout: 'genai' });
    const eng = await openCaptureEngine(res.dir, { capture: ['final', 'mlp'], device: 'cpu' });
    try {
      const out = await eng.run(batchOf(gold.sequences));
      gold.sequences.forEach((_, s) => {
        for (const h of ['final.hidden', 'layers.1.mlp.down_in']) {
          const g = gold.vectors[s]!.get(h)!;
          expect(relErr(out.get(h)!.subarray(s * g.length, (s + 1) * g.length), g), `${h} of sequence ${s}`)
            .toBeLessThan(1e-4);
        }
      });
    } finally {
      await eng.close();
    }
  });

  it('auto picks fp32 for this file (an F16 projection among quantized ones)', () => {
    return convertGguf(TINY_GGUF, path.join(tmp, 'auto'), {}).then((r) => {
      expect(r.options.weights).toBe('fp32');
      expect(r.weightsReason).toMatch(/projections are F16, Q2_K, .*Q8_0; fp32 holds every one exactly/);
      expect(r.requantized).toEqual([]);
    });
  });
});
