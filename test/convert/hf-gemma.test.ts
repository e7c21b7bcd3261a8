/**
 * Gemma 2 and Gemma 3 text (transformers' Gemma2ForCausalLM, Gemma3ForCausalLM) → lobes, against
 * transformers itself (test/goldens/make_hf_checkpoint_goldens.py --family gemma2 / gemma3: tiny
 * random-weight checkpoints with (1 + w) norms, embeddings times sqrt(hidden), GeGLU, norms after
 * attention and after the MLP, query_pre_attn_scalar unlike head_dim, an 8-token window on the
 * sliding layers; gemma2 with attention and final soft-capping, gemma3 with q_norm / k_norm, its
 * sliding layers' own rope base and linear scaling on the full ones):
 *  - every capture point (layers.L.mlp.in = the output of pre_feedforward_layernorm,
 *    mlp.down_in, resid_out after the second residual Add, final.hidden) and the logits (after
 *    soft-capping) equal transformers within 1e-4 relative, English and Chinese texts of 10 to
 *    66 tokens in one padded batch, in both layouts;
 *  - attend's attention weights (every layer and head from the last token; Gemma 2's after the
 *    soft-cap) equal transformers' output_attentions, in both layouts;
 *  - the eval scoring head re-applies Gemma 2's final soft-cap after lm_head, batched and through
 *    the genai graph's KV cache past the window;
 *  - the GGUFs llama.cpp's converter would write (its tensor names, norm weights stored as 1 + w)
 *    equal transformers' GGUF loader reading them, in both layouts (models with head_dim 256,
 *    default soft-caps and layer patterns, where llama.cpp's and the loader's reading agree);
 *  - Gemma 1 (model_type gemma: (1 + w) norms, sqrt(hidden), GeGLU with Llama's two norms per
 *    layer, hidden_act "gelu" read as the tanh approximation, as GemmaConfig does) the same;
 *  - Gemma's SentencePiece vocabulary from a GGUF (tokenizer.ggml.model llama, architecture
 *    gemma2) gives transformers' GGUF tokenizer's merges and token ids;
 *  - Gemma 3's older config.json spelling (rope_theta, rope_local_base_freq, rope_scaling) gives
 *    the same model; a multimodal gemma3 config and settings lobes does not express are refused
 *    in one line.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertGguf, convertHfCheckpoint } from '../../src/convert/convert.js';
import { openGgufLlama } from '../../src/convert/gguf-llama.js';
import { openHfCheckpoint } from '../../src/convert/hf-checkpoint.js';
import { loadModel } from '../../src/onnx/index.js';
import { discover } from '../../src/runtime/discover.js';
import { openScorer } from '../../src/eval/engine.js';
import { tokenizerFilesFromGguf, writeTokenizerFiles } from '../../src/convert/tokenizer.js';
import { openGguf } from '../../src/formats/gguf.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { CKPTS, GoldenSet, expectGoldens, grow } from './hf-families.js';

const SETS = { gemma: new GoldenSet('goldens-gemma'), gemma2: new GoldenSet('goldens-gemma2'),
  gemma3: new GoldenSet('goldens-gemma3') };
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-gemma-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The checkpoint copied with config.json edited. */
function variant(family: 'gemma' | 'gemma2' | 'gemma3', edit: (cfg: Record<string, any>) => void): string {
  const d = mkdtempSync(path.join(tmp, `${family}-`));
  cpSync(path.join(CKPTS, family), d, { recursive: true });
  const f = path.join(d, 'config.json');
  const cfg = JSON.parse(readFileSync(f, 'utf8'));
  edit(cfg);
  writeFileSync(f, JSON.stringify(cfg));
  return d;
}

describe('gemma (Gemma 1) checkpoint', () => {
  it('is read with two norms per layer, the scale head_dim^−½, no windows or soft-caps', () => {
    const ck = openHfCheckpoint(path.join(CKPTS, 'gemma'));
    ck.weights.close();
    expect(ck.family).toBe('gemma');
    expect(ck.spec.gemma).toEqual({ postNorms: false, queryPreAttnScalar: 32, attnSoftcap: null, finalSoftcap: null,
      sliding: [false, false] });
    expect(ck.spec.slidingWindow).toBeUndefined();
    expect(ck.tensors.has('model.layers.0.pre_feedforward_layernorm.weight')).toBe(false);
  });

  for (const layout of ['explicit', 'genai'] as const) {
    it(`converts to the ${layout} layout; every capture point and the logits equal transformers`, async () => {
      const out = path.join(tmp, `gemma-${layout}`);
      await convertHfCheckpoint(path.join(CKPTS, 'gemma'), out, { layout });
      const sides = layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const);
      let worst = 0;
      for (const side of sides) worst = Math.max(worst, await expectGoldens(out, 'gemma', side, 1e-4, SETS.gemma));
      console.log(`gemma ${layout}: max relative error vs transformers ${worst.toExponential(2)}`);
    });
  }
});

describe('gemma2 checkpoint', () => {
  it('is read with its soft-caps, attention scale, alternating windows and tied embeddings', () => {
    const ck = openHfCheckpoint(path.join(CKPTS, 'gemma2'));
    ck.weights.close();
    expect(ck.family).toBe('gemma2');
    expect(ck.spec.headDim).toBe(32);
    expect(ck.spec.tiedEmbeddings).toBe(true);
    expect(ck.spec.slidingWindow).toBe(8);
    expect(ck.spec.gemma).toEqual({ postNorms: true, queryPreAttnScalar: 24, attnSoftcap: 4, finalSoftcap: 6,
      sliding: [true, false, true] });
  });

  for (const layout of ['explicit', 'genai'] as const) {
    it(`converts to the ${layout} layout; every capture point and the soft-capped logits equal transformers`, async () => {
      const out = path.join(tmp, `gemma2-${layout}`);
      await convertHfCheckpoint(path.join(CKPTS, 'gemma2'), out, { layout });
      const sides = layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const);
      let worst = 0;
      for (const side of sides) worst = Math.max(worst, await expectGoldens(out, 'gemma2', side, 1e-4, SETS.gemma2));
      console.log(`gemma2 ${layout}: max relative error vs transformers ${worst.toExponential(2)}`);
    });
  }
});

describe('gemma3 checkpoint', () => {
  it("is read with q/k norms, the sliding layers' own rope base and the full layers' linear scaling", () => {
    const ck = openHfCheckpoint(path.join(CKPTS, 'gemma3'));
    ck.weights.close();
    expect(ck.family).toBe('gemma3_text');
    expect(ck.spec.qkNorm).toBe(true);
    expect(ck.spec.tiedEmbeddings).toBe(false);
    expect(ck.spec.ropeTheta).toBe(1e6);
    expect(ck.spec.ropeScaling).toMatchObject({ rope_type: 'linear', factor: 4 });
    expect(ck.spec.gemma).toEqual({ postNorms: true, queryPreAttnScalar: 20, attnSoftcap: null, finalSoftcap: null,
      sliding: [true, true, false, true], localRope: { theta: 1e4, scaling: null } });
  });

  for (const layout of ['explicit', 'genai'] as const) {
    it(`converts to the ${layout} layout; every capture point and the logits equal transformers`, async () => {
      const out = path.join(tmp, `gemma3-${layout}`);
      await convertHfCheckpoint(path.join(CKPTS, 'gemma3'), out, { layout });
      const sides = layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const);
      let worst = 0;
      for (const side of sides) worst = Math.max(worst, await expectGoldens(out, 'gemma3', side, 1e-4, SETS.gemma3));
      console.log(`gemma3 ${layout}: max relative error vs transformers ${worst.toExponential(2)}`);
    });
  }

  it('an attn_logit_softcapping in a gemma3_text config changes nothing, as in transformers (Gemma3Attention never passes it on; checked in Python: logits equal)', async () => {
    const d = variant('gemma3', (c) => (c.attn_logit_softcapping = 0.5));
    const ck = openHfCheckpoint(d);
    ck.weights.close();
    expect(ck.spec.gemma!.attnSoftcap).toBeNull();
    const out = path.join(tmp, 'gemma3-attn-cap');
    await convertHfCheckpoint(d, out, {});
    await expectGoldens(out, 'gemma3', 'right', 1e-4, SETS.gemma3);
  });

  it('the older spelling (rope_theta, rope_local_base_freq, rope_scaling at the top level) gives the same model', async () => {
    const d = variant('gemma3', (c) => {
      const rp = c.rope_parameters;
      delete c.rope_parameters;
      c.rope_theta = rp.full_attention.rope_theta;
      c.rope_scaling = { rope_type: 'linear', factor: rp.full_attention.factor };
      c.rope_local_base_freq = rp.sliding_attention.rope_theta;
      delete c.layer_types;
      c.sliding_window_pattern = 3;
    });
    const ck = openHfCheckpoint(d);
    ck.weights.close();
    // pattern 3: layers 0, 1 sliding, 2 full, 3 sliding, as layer_types had them
    expect(ck.spec.gemma!.sliding).toEqual([true, true, false, true]);
    const out = path.join(tmp, 'gemma3-legacy');
    await convertHfCheckpoint(d, out, {});
    await expectGoldens(out, 'gemma3', 'right', 1e-4, SETS.gemma3);
  });
});

describe.each(['gemma2', 'gemma3'] as const)('%s GGUF', (family) => {
  const file = () => path.join(CKPTS, SETS[family].meta.families[family]!.gguf as string);

  it("is read as llama.cpp reads it: its norms' stored 1 + w back to w, the attention scale head_dim^−½, the layer pattern", () => {
    const g = openGgufLlama(file());
    try {
      expect(g.spec.modelType).toBe(family);
      expect(g.spec.headDim).toBe(256);
      expect(g.spec.tiedEmbeddings).toBe(true);
      expect(g.spec.slidingWindow).toBe(8);
      expect(g.spec.gemma).toEqual(
        family === 'gemma2'
          ? { postNorms: true, queryPreAttnScalar: 256, attnSoftcap: 50, finalSoftcap: 30, sliding: [true, false] }
          : { postNorms: true, queryPreAttnScalar: 256, attnSoftcap: null, finalSoftcap: null,
            sliding: [true, true, true, true, true, false], localRope: { theta: 10000, scaling: null } },
      );
      expect(g.spec.ropeTheta).toBe(family === 'gemma2' ? 10000 : 1e6);
      // blk.0.attn_norm holds 1 + w: read back, the weight is what transformers' GGUF loader holds (stored − 1)
      const stored = g.gguf.dequantize(g.gguf.tensor('blk.0.attn_norm.weight'));
      const w = g.weights.rows('model.layers.0.input_layernorm.weight', 0, 64);
      for (let i = 0; i < 64; i++) expect(w[i]).toBe(Math.fround(stored[i]! - 1));
      expect(g.weights.shape('model.layers.1.post_feedforward_layernorm.weight')).toEqual([64]);
    } finally {
      g.close();
    }
  });

  for (const layout of ['explicit', 'genai'] as const) {
    it(`converts to the ${layout} layout; every capture point and the logits equal transformers' GGUF loader`, async () => {
      const out = path.join(tmp, `${family}-gguf-${layout}`);
      await convertGguf(file(), out, { layout });
      const sides = layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const);
      let worst = 0;
      for (const side of sides)
        worst = Math.max(worst, await expectGoldens(out, `${family}-gguf`, side, 1e-4, SETS[family]));
      console.log(
        `${family} GGUF ${layout}: max relative error vs transformers' GGUF loader ${worst.toExponential(2)}`,
      );
    });
  }
});

describe("Gemma's SentencePiece vocabulary in a GGUF", () => {
  it("gives the merges and the token ids of transformers' GGUF tokenizer (no space prepended, runs of spaces, turn markers, byte fallback)", async () => {
    const g = openGguf(path.join(CKPTS, 'tiny-gemma-vocab.gguf'));
    const files = tokenizerFilesFromGguf(g.metadata, g.file);
    g.close();
    expect(files.family).toBe('gemma-spm');
    const want = JSON.parse(readFileSync(path.join(CKPTS, 'gemma-vocab.json'), 'utf8')) as { texts: string[];
      ids: number[][]; merges: string[] };
    const merges = (files.tokenizerJson.model as { merges: [string, string][] }).merges.map((m) => m.join(' '));
    expect(merges.length).toBe(want.merges.length);
    const first = merges.findIndex((m, i) => m !== want.merges[i]);
    expect(first, `first different merge: ${merges[first]} vs ${want.merges[first]}`).toBe(-1);
    const dir = mkdtempSync(path.join(tmp, 'gemma-vocab-'));
    writeTokenizerFiles(dir, files);
    const tf = await import('@huggingface/transformers');
    tf.env.allowRemoteModels = false;
    tf.env.allowLocalModels = true;
    const tok = await tf.AutoTokenizer.from_pretrained(dir, { local_files_only: true } as any);
    want.texts.forEach((t, i) => expect(Array.from(tok.encode(t)), JSON.stringify(t)).toEqual(want.ids[i]));
  });
});

describe('capture points found by structure', () => {
  it('mlp.in is the pre-feedforward norm, the residual sum follows the post-feedforward norm, lm_head is before the soft-cap', async () => {
    const out = path.join(tmp, 'gemma2-discover');
    await convertHfCheckpoint(path.join(CKPTS, 'gemma2'), out, {});
    const d = discover(loadModel(out));
    expect(d.mlps).toHaveLength(3);
    expect(d.activation).toBe('gelu_tanh');
    const g = d.index;
    for (const m of d.mlps) {
      // the MLP input is a norm's output (Mul by 1 + w), the residual sum an Add that reads a norm of down_proj's output
      expect(g.prod(m.input)?.opType).toBe('Mul');
      expect(m.resid?.kind).toBe('value');
      const add = g.prod((m.resid as { value: string }).value)!;
      expect(add.opType).toBe('Add');
      expect(add.input).not.toContain(m.down.y);
      expect(g.reaches(m.down.y, add.input[1]!)).toBe(true);
    }
    expect(d.lmHead.dOut).toBe(384);
    expect(g.prod('logits')?.opType).toBe('Mul');
  });

  it('the genai graph\'s FastGelu, and ONNX Gelu with approximate "tanh" (what onnxruntime-genai\'s builder writes for Gemma), are tanh-GELU; exact Gelu is not', async () => {
    const out = path.join(tmp, 'gemma2-discover-genai');
    await convertHfCheckpoint(path.join(CKPTS, 'gemma2'), out, { layout: 'genai' });
    const m = loadModel(out);
    const d = discover(m);
    expect(d.activation).toBe('gelu_tanh');
    expect(d.mlps.map((l) => d.index.prod(l.down.x)?.opType)).toEqual(['Mul', 'Mul', 'Mul']);
    expect(d.logitSoftcap).toBeCloseTo(6, 6);
    const asGelu = (approximate: string | null) => {
      const c = structuredClone(m);
      for (const n of c.model.graph!.node) {
        if (n.opType !== 'FastGelu') continue;
        n.opType = 'Gelu';
        delete n.domain;
        n.attribute = approximate === null
          ? []
          : [{ name: 'approximate', s: new TextEncoder().encode(approximate), type: 3 }];
      }
      return discover(c).activation;
    };
    expect(asGelu('tanh')).toBe('gelu_tanh');
    expect(asGelu(null)).toBe('gelu');
  });

  it('a tanh of a polynomial of degree 2 (x + c·x², not GELU) is not taken for the gate activation', async () => {
    const out = path.join(tmp, 'gemma2-not-gelu');
    await convertHfCheckpoint(path.join(CKPTS, 'gemma2'), out, {});
    const m = loadModel(out);
    let changed = 0;
    for (const n of m.model.graph!.node) {
      // x·x·x → x·x: the cube of GELU's tanh argument becomes a square
      if (n.name?.endsWith('/mlp/act_fn/Mul_cube')) {
        n.input[0] = n.input[1]!;
        changed++;
      }
    }
    expect(changed).toBe(3);
    expect(() => discover(m)).toThrow(/no gated MLP found/);
  });
});

describe.each(['gemma', 'gemma2', 'gemma3'] as const)('%s attention weights', (family) => {
  for (const layout of ['explicit', 'genai'] as const) {
    it(`${layout}: every layer and head from the last token equals transformers`, async () => {
      const out = path.join(tmp, `${family}-attn-${layout}`);
      await convertHfCheckpoint(path.join(CKPTS, family), out, { layout });
      const set = SETS[family];
      const eng = await openAttentionEngine(out, { device: 'cpu' });
      let worst = 0;
      try {
        expect(eng.layers).toEqual({ gemma: [0, 1], gemma2: [0, 1, 2], gemma3: [0, 1, 2, 3] }[family]);
        for (const side of layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const)) {
          const b = padBatch(set.meta.ids, set.meta.pad, side);
          const rows = realRows(b, await eng.run(b), eng.layers);
          rows.forEach((r, i) => {
            const want = set.golden(`${family}.attn.text${i}`);
            expect(r.length, `text ${i}`).toBe(want.length);
            let e = 0;
            for (let j = 0; j < want.length; j++) e = Math.max(e, Math.abs(r[j]! - want[j]!));
            worst = Math.max(worst, e);
            expect(e, `${family} ${layout} text ${i} (${side} padding)`).toBeLessThan(1e-5);
          });
        }
      } finally {
        await eng.close();
      }
      console.log(`${family} ${layout}: attention weights max abs error vs transformers ${worst.toExponential(2)}`);
    });
  }
});

describe('scoring (the eval letter head) re-applies the soft-cap after lm_head', () => {
  for (const layout of ['explicit', 'genai'] as const) {
    it(`candidate logits and log-sum-exp equal transformers' soft-capped logits (${layout})`, async () => {
      const out = path.join(tmp, `gemma2-score-${layout}`);
      await convertHfCheckpoint(path.join(CKPTS, 'gemma2'), out, { layout });
      const set = SETS.gemma2;
      expect(discover(loadModel(out)).logitSoftcap).toBeCloseTo(6, 6);
      const ids = set.meta.ids;
      const g = set.golden('gemma2.logits');
      const V = g.length / ids.length;
      const cands = [5, 66, 7, 300, 383];
      const sc = await openScorer(out, { device: 'cpu' });
      try {
        const h = await sc.score(ids, cands, set.meta.pad);
        ids.forEach((_, r) => {
          const row = grow(g, r, V);
          cands.forEach((c, j) =>
            expect(Math.abs(h.cand[r * h.k + j]! - row[c]!), `text ${r} token ${c}`).toBeLessThan(1e-4 * 6)
          );
          let m = -Infinity;
          for (const v of row) m = Math.max(m, v);
          let sum = 0;
          for (const v of row) sum += Math.exp(v - m);
          expect(Math.abs(h.lse[r]! - (m + Math.log(sum))), `text ${r} log-sum-exp`).toBeLessThan(1e-4 * 6);
        });
      } finally {
        await sc.close();
      }
    });
  }

  it('genai through the KV cache: a 66-token text prefilled for 20 tokens then extended past the 8-token window gives the same logits', async () => {
    const out = path.join(tmp, 'gemma2-score-kv');
    await convertHfCheckpoint(path.join(CKPTS, 'gemma2'), out, { layout: 'genai' });
    const set = SETS.gemma2;
    const ids = set.meta.ids[0]!;
    expect(ids.length).toBe(66);
    const g = grow(set.golden('gemma2.logits'), 0, 384);
    const cands = [5, 66, 7, 300, 383];
    const sc = await openScorer(out, { device: 'cpu', generation: true });
    try {
      expect(sc.hasPast).toBe(true);
      let st = await sc.prefill(ids.slice(0, 20), cands);
      // one token at a time when the graph refuses several after a cache
      const steps = sc.multiTokenExtend ? [ids.slice(20, 50), ids.slice(50)] : ids.slice(20).map((t) => [t]);
      for (const s of steps) st = await sc.extend(st.state, s, cands);
      expect(st.state.length).toBe(66);
      cands.forEach((c, j) => expect(Math.abs(st.out.cand[j]! - g[c]!), `token ${c}`).toBeLessThan(1e-4 * 6));
    } finally {
      await sc.close();
    }
  });
});

describe('refusals, in one line, before anything is written', () => {
  const refused = async (dir: string, re: RegExp, layout: 'explicit' | 'genai' = 'explicit') => {
    const out = path.join(tmp, `out-${Math.random().toString(36).slice(2)}`);
    const e = await convertHfCheckpoint(dir, out, { layout }).catch((x: Error) => x);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).message).toMatch(re);
    expect((e as Error).message).not.toMatch(/\n/);
    expect(existsSync(out)).toBe(false);
  };

  it('a multimodal gemma3 (text_config and a vision tower)', async () => {
    const d = variant('gemma3', (c) => {
      c.model_type = 'gemma3';
      c.architectures = ['Gemma3ForConditionalGeneration'];
      c.text_config = { model_type: 'gemma3_text', hidden_size: 64 };
      c.vision_config = { model_type: 'siglip_vision_model' };
    });
    await refused(d,
      /config\.json: model_type: model_type "gemma3" is not converted: it is Gemma 3 with a vision tower/);
  });

  it('another activation, bidirectional attention, an unknown layer type', async () => {
    await refused(variant('gemma2', (c) => (c.hidden_activation = 'gelu')),
      /hidden_activation: activation "gelu" is not gelu_pytorch_tanh/);
    await refused(variant('gemma3', (c) => (c.use_bidirectional_attention = true)),
      /use_bidirectional_attention: bidirectional attention/);
    await refused(variant('gemma3', (c) => (c.layer_types[1] = 'chunked_attention')),
      /layer_types\[1\]: is "chunked_attention"/);
  });
});
