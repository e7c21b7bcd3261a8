/**
 * Phi-3 / Phi-4-mini (transformers' Phi3ForCausalLM) → lobes, against transformers itself
 * (test/goldens/make_hf_checkpoint_goldens.py --family phi3: a tiny random-weight checkpoint
 * with fused qkv_proj and gate_up_proj, partial rotary 0.5, longrope whose threshold (32 tokens)
 * lies between the texts' lengths, a 24-token sliding window, tied embeddings):
 *  - the checkpoint, split at conversion, gives every capture point and the logits of
 *    transformers within 1e-4 relative (English and Chinese texts of 10 to 66 tokens in one
 *    padded batch, each text with the short or long factors its own length selects);
 *  - the genai layout refuses longrope in one line, and converts the same weights without it;
 *  - the GGUF llama.cpp's converter would write (attn_qkv, ffn_up holding gate and up,
 *    rope_factors_long / short, rope.dimension_count) equals the checkpoint, and the plain GGUF
 *    (full rotary, no factors) equals transformers' GGUF loader reading it;
 *  - onnxruntime-genai's builder export (-p fp32 -e cpu) of the checkpoint: every capture point
 *    found by structure in its graph (fused qkv_proj, the If choosing the longrope caches) and
 *    equal to transformers on what it wrote (no window; longrope chosen once for the batch);
 *  - attend's attention weights (every layer and head from the last token) equal transformers'
 *    output_attentions, with longrope (explicit) and without (explicit and genai);
 *  - wanda locates gate_proj and up_proj in the checkpoint's gate_up_proj and the GGUF's ffn_up
 *    as the rows the converted model (equal to transformers) holds under those names.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertGguf, convertHfCheckpoint } from '../../src/convert/convert.js';
import { openGgufLlama } from '../../src/convert/gguf-llama.js';
import { openHfCheckpoint } from '../../src/convert/hf-checkpoint.js';
import { resolveModel } from '../../src/convert/cache.js';
import { loadModel } from '../../src/onnx/index.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { columnBlockSums } from '../../src/wanda/kernel.js';
import { locateWeights } from '../../src/wanda/run.js';
import { wantedMatrices } from '../../src/wanda/weights.js';
import { relErr } from '../models/reference-forward.js';
import { CKPTS, GoldenSet, batchLogits, expectGoldens, grow } from './hf-families.js';

const SET = new GoldenSet('goldens-phi3');
const SRC = path.join(CKPTS, 'phi3');
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-phi3-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The checkpoint copied with config.json edited. */
function variant(edit: (cfg: Record<string, any>) => void): string {
  const d = mkdtempSync(path.join(tmp, 'ckpt-'));
  cpSync(SRC, d, { recursive: true });
  const f = path.join(d, 'config.json');
  const cfg = JSON.parse(readFileSync(f, 'utf8'));
  edit(cfg);
  writeFileSync(f, JSON.stringify(cfg));
  return d;
}

describe('phi3 checkpoint', () => {
  it('is read with its partial rotary, longrope and window, the fused weights split into q/k/v and gate/up', () => {
    const ck = openHfCheckpoint(SRC);
    try {
      expect(ck.family).toBe('phi3');
      expect(ck.spec.rotaryDim).toBe(16);
      expect(ck.spec.headDim).toBe(32);
      expect(ck.spec.slidingWindow).toBe(24);
      expect(ck.spec.ropeScaling).toMatchObject({ rope_type: 'longrope', original_max_position_embeddings: 32 });
      expect(ck.tensors.has('model.layers.0.self_attn.qkv_proj.weight')).toBe(true);
      expect(ck.weights.shape('model.layers.1.self_attn.k_proj.weight')).toEqual([32, 64]);
      expect(ck.weights.shape('model.layers.1.mlp.up_proj.weight')).toEqual([96, 64]);
    } finally {
      ck.weights.close();
    }
  });

  it('converts to the explicit layout; every capture point and the logits equal transformers (left and right padding)', async () => {
    const out = path.join(tmp, 'explicit');
    await convertHfCheckpoint(SRC, out, {});
    const worst = Math.max(await expectGoldens(out, 'phi3', 'left', 1e-4, SET),
      await expectGoldens(out, 'phi3', 'right', 1e-4, SET));
    console.log(`phi3: max relative error vs transformers ${worst.toExponential(2)}`);
  });
});

describe('config.json spellings', () => {
  it("transformers 5's rope_parameters gives the same model; the top-level original_max_position_embeddings takes priority, 4096 when absent, as transformers reads it", async () => {
    const v5 = (top: boolean) =>
      variant((c) => {
        c.rope_parameters = { rope_type: 'longrope', rope_theta: c.rope_theta,
          partial_rotary_factor: c.partial_rotary_factor, original_max_position_embeddings: 32,
          short_factor: c.rope_scaling.short_factor, long_factor: c.rope_scaling.long_factor };
        for (const k of ['rope_scaling', 'rope_theta', 'partial_rotary_factor']) delete c[k];
        if (!top) delete c.original_max_position_embeddings;
      });
    const out = path.join(tmp, 'spelling-rope-parameters');
    const r = await convertHfCheckpoint(v5(true), out, {});
    expect(r.spec.rotaryDim).toBe(16);
    expect(r.spec.ropeScaling).toMatchObject({ rope_type: 'longrope', original_max_position_embeddings: 32 });
    await expectGoldens(out, 'phi3', 'right', 1e-4, SET);
    // Phi3Config's default: transformers 5.24 gives this folder the logits of original 4096 (checked in Python: max abs difference 0).
    const ck = openHfCheckpoint(v5(false));
    ck.weights.close();
    expect(ck.spec.ropeScaling).toMatchObject({ original_max_position_embeddings: 4096 });
  });
});

describe('the longrope threshold', () => {
  it('a text of original_max_position_embeddings tokens takes the short factors, one token more the long ones, as in transformers', async () => {
    const out = path.join(tmp, 'edge');
    await convertHfCheckpoint(SRC, out, {});
    const edge = SET.meta.families.phi3!.edge_ids as number[][];
    expect(edge.map((e) => e.length)).toEqual([32, 33]);
    const g = SET.golden('phi3-edge.logits');
    for (const side of ['left', 'right'] as const) {
      const { logits, V } = await batchLogits(out, edge, SET.meta.pad, side);
      for (let i = 0; i < 2; i++)
        expect(relErr(grow(logits, i, V), grow(g, i, V)), `${edge[i]!.length} tokens (${side} padding)`).toBeLessThan(
          1e-4,
        );
    }
  });
});

describe('phi3 in the genai layout', () => {
  it('refuses longrope in one line before anything is written', async () => {
    const out = path.join(tmp, 'genai-refused');
    await expect(convertHfCheckpoint(SRC, out, { layout: 'genai' })).rejects.toThrow(
      /longrope is not expressed in the genai layout.*the explicit layout expresses it/,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('converts the weights without longrope (partial rotary and window kept): both layouts equal transformers', async () => {
    const d = variant((c) => delete c.rope_scaling);
    const ge = path.join(tmp, 'genai-norope');
    await convertHfCheckpoint(d, ge, { layout: 'genai' });
    const nodes = loadModel(ge).model.graph!.node!;
    const gqa = nodes.find((n) => n.opType === 'GroupQueryAttention')!;
    expect(gqa.attribute!.find((a) => a.name === 'local_window_size')!.i).toBe(24);
    const worstGe = await expectGoldens(ge, 'phi3-norope', 'right', 1e-4, SET);
    const ex = path.join(tmp, 'explicit-norope');
    await convertHfCheckpoint(d, ex, {});
    const worstEx = await expectGoldens(ex, 'phi3-norope', 'left', 1e-4, SET);
    console.log(
      `phi3 without longrope: max relative error vs transformers ${worstEx.toExponential(2)} explicit, ${
        worstGe.toExponential(2)
      } genai`,
    );
  });
});

describe('phi3 GGUF', () => {
  it("llama.cpp's full file (attn_qkv, ffn_up with gate and up, rope factors, rope dimension count, window) equals the checkpoint", async () => {
    const file = path.join(CKPTS, SET.meta.families.phi3!.gguf_full as string);
    const g = openGgufLlama(file);
    try {
      expect(g.spec.modelType).toBe('phi3');
      expect(g.spec.rotaryDim).toBe(16);
      expect(g.spec.slidingWindow).toBe(24);
      expect(g.spec.ropeScaling).toMatchObject({ rope_type: 'longrope', original_max_position_embeddings: 32 });
      expect(g.mapped.map((m) => m.name)).toContain('model.layers.0.mlp.gate_up_proj.weight');
      expect(g.weights.shape('model.layers.0.mlp.gate_proj.weight')).toEqual([96, 64]);
    } finally {
      g.close();
    }
    const out = path.join(tmp, 'gguf-full');
    await convertGguf(file, out, {});
    const worst = Math.max(await expectGoldens(out, 'phi3', 'left', 1e-4, SET),
      await expectGoldens(out, 'phi3', 'right', 1e-4, SET));
    console.log(`phi3 GGUF (full): max relative error vs transformers on the checkpoint ${worst.toExponential(2)}`);
  });

  it("the plain file (full rotary, no factors) equals transformers' GGUF loader reading it, explicit and genai", async () => {
    const file = path.join(CKPTS, SET.meta.families.phi3!.gguf as string);
    const ex = path.join(tmp, 'gguf-plain');
    await convertGguf(file, ex, {});
    const worstEx = Math.max(await expectGoldens(ex, 'phi3-gguf', 'left', 1e-4, SET),
      await expectGoldens(ex, 'phi3-gguf', 'right', 1e-4, SET));
    const ge = path.join(tmp, 'gguf-plain-genai');
    await convertGguf(file, ge, { layout: 'genai' });
    const worstGe = await expectGoldens(ge, 'phi3-gguf', 'right', 1e-4, SET);
    console.log(
      `phi3 GGUF (plain): max relative error vs transformers' GGUF loader ${worstEx.toExponential(2)} explicit, ${
        worstGe.toExponential(2)
      } genai`,
    );
  });
});

describe('a quantized phi3 GGUF (Q8_0 matrices)', () => {
  it("is dequantized (--weights auto: the split parts carry no blocks) and equals transformers' GGUF loader dequantizing it", async () => {
    const file = path.join(CKPTS, SET.meta.families.phi3!.gguf_q8 as string);
    const out = path.join(tmp, 'gguf-q8');
    const r = await convertGguf(file, out, {});
    expect(r.options.weights).toBe('fp32');
    expect(r.weightsReason).toMatch(/phi3's fused qkv and gate\/up weights are split by rows and dequantized/);
    const worst = Math.max(await expectGoldens(out, 'phi3-gguf-q8', 'left', 1e-4, SET),
      await expectGoldens(out, 'phi3-gguf-q8', 'right', 1e-4, SET));
    console.log(`phi3 GGUF (Q8_0): max relative error vs transformers' GGUF loader ${worst.toExponential(2)}`);
  });
});

describe('phi3 weights for wanda', () => {
  it("gate_proj and up_proj are row ranges of the checkpoint's gate_up_proj and the GGUF's ffn_up, equal to the converted model's", async () => {
    const wanted = wantedMatrices([0, 1].flatMap((l) => [{ name: `layers.${l}.mlp.in`, dim: 64 }]));
    expect(wanted.map((w) => w.proj)).toEqual(['gate_proj', 'up_proj', 'gate_proj', 'up_proj']);
    const out = path.join(tmp, 'wanda-onnx');
    await convertHfCheckpoint(SRC, out, {});
    const sums = async (weights: string) => {
      const r = await locateWeights(weights, wanted);
      return r.matrices.map((m) => ({ tensor: m.source.tensor, dOut: m.dOut,
        abs: columnBlockSums(m, { rowBlock: 1 }) })
      );
    };
    const onnx = await sums(out);
    const st = await sums(SRC);
    const gg = await sums(path.join(CKPTS, SET.meta.families.phi3!.gguf_full as string));
    expect(st.map((m) => m.tensor)).toEqual(['model.layers.0.mlp.gate_up_proj.weight[0:96]',
      'model.layers.0.mlp.gate_up_proj.weight[96:192]', 'model.layers.1.mlp.gate_up_proj.weight[0:96]',
      'model.layers.1.mlp.gate_up_proj.weight[96:192]']);
    expect(gg[1]!.tensor).toBe('blk.0.ffn_up.weight[96:192]');
    for (let i = 0; i < wanted.length; i++) {
      expect(st[i]!.dOut).toBe(96);
      // |W| row by row (row blocks of one row): the same matrix, not merely the same sums.
      expect(st[i]!.abs).toEqual(onnx[i]!.abs);
      expect(gg[i]!.abs).toEqual(onnx[i]!.abs);
    }
    expect(st[0]!.abs).not.toEqual(st[1]!.abs);
    // The Q8_0 file: gate and up as row ranges of whole Q8_0 rows, decoded by wanda as the converted model dequantized them.
    const q8 = path.join(CKPTS, SET.meta.families.phi3!.gguf_q8 as string);
    const q8out = path.join(tmp, 'wanda-q8');
    await convertGguf(q8, q8out, {});
    const [gq, oq] = [await sums(q8), await sums(q8out)];
    for (let i = 0; i < wanted.length; i++) expect(gq[i]!.abs).toEqual(oq[i]!.abs);
    expect(gq[0]!.abs).not.toEqual(onnx[0]!.abs);
  });
});

describe('phi3 attention weights', () => {
  const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
    let m = 0;
    for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
    return m;
  };
  const cases = [
    ['phi3', 'explicit', SRC],
    ['phi3-norope', 'explicit', null],
    ['phi3-norope', 'genai', null],
  ] as const;
  it.each(cases)('%s %s: every layer and head from the last token equals transformers', async (prefix, layout, src) => {
    const out = path.join(tmp, `attn-${prefix}-${layout}`);
    await convertHfCheckpoint(src ?? variant((c) => delete c.rope_scaling), out, { layout });
    const eng = await openAttentionEngine(out, { device: 'cpu' });
    let worst = 0;
    try {
      expect(eng.layers).toEqual([0, 1]);
      for (const side of layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const)) {
        const b = padBatch(SET.meta.ids, SET.meta.pad, side);
        const rows = realRows(b, await eng.run(b), eng.layers);
        rows.forEach((r, i) => {
          const want = SET.golden(`${prefix}.attn.text${i}`);
          expect(r.length).toBe(want.length);
          const e = maxAbs(r, want);
          worst = Math.max(worst, e);
          expect(e, `${prefix} ${layout} text ${i} (${side} padding)`).toBeLessThan(1e-5);
        });
      }
    } finally {
      await eng.close();
    }
    console.log(`${prefix} ${layout}: attention weights max abs error vs transformers ${worst.toExponential(2)}`);
  });
});

describe("onnxruntime-genai's builder export of the phi3 checkpoint", () => {
  it('every capture point (found by structure) and the logits equal transformers on what the builder wrote (right padding)', async () => {
    const info = SET.meta.families.phi3!.builder_export;
    // The builder drops the window and picks the longrope cache once per batch: another model than the checkpoint.
    expect(info.builder_vs_checkpoint_logits_rel!).toBeGreaterThan(0.05);
    const worst = await expectGoldens(path.join(CKPTS, 'builder-phi3'), info.oracle, 'right', 1e-4, SET);
    console.log(
      `builder phi3: max relative error vs transformers ${
        worst.toExponential(2)
      } (oracle ${info.oracle}; the export vs the checkpoint ${
        info.builder_vs_checkpoint_logits_rel!.toExponential(2)
      })`,
    );
  });
});

describe('phi3 refusals, in one line, before anything is written', () => {
  const refused = async (dir: string, re: RegExp) => {
    const out = path.join(tmp, `out-${Math.random().toString(36).slice(2)}`);
    const e = await convertHfCheckpoint(dir, out).catch((x: Error) => x);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).message).toMatch(re);
    expect((e as Error).message).not.toMatch(/\n/);
    expect(existsSync(out)).toBe(false);
  };
  it('settings the graph would not reproduce', async () => {
    await refused(variant((c) => (c.partial_rotary_factor = 0.3)),
      /partial_rotary_factor: rotates 9 of 32 head dims: rotary embeddings need an even number/);
    await refused(variant((c) => (c.rope_scaling.long_factor = c.rope_scaling.long_factor.slice(1))),
      /rope_scaling longrope needs long_factor as 8 positive numbers \(one per rotary frequency\), got 7 values/);
    await refused(variant((c) => (c.rope_scaling.short_factor = 'x')),
      /rope_scaling\.short_factor: longrope needs short_factor as a list of numbers/);
    await refused(variant((c) => (c.layer_types = ['sliding_attention', 'full_attention'])),
      /layer_types: mixes sliding-window and full-attention layers/);
    await refused(variant((c) => (c.hidden_act = 'gelu_pytorch_tanh')), /activation "gelu_pytorch_tanh" is not SiLU/);
  });
});

describe('--model DIR through the conversion cache', () => {
  it('a phi3 checkpoint converts once, recorded as the checkpoint', async () => {
    const cache = path.join(tmp, 'cache');
    const a = await resolveModel(SRC, { cache, log: () => {} });
    expect(a.converted).not.toBeNull();
    const b = await resolveModel(SRC, { cache, log: () => {} });
    expect(b.converted).toBeNull();
    expect(b.dir).toBe(a.dir);
    expect(b.source!.format).toBe('hf-checkpoint');
    await expectGoldens(b.dir, 'phi3', 'right', 1e-4, SET);
  });
});
