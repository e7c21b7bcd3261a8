/**
 * The recomputed weights of fused attention ops against onnxruntime's own kernels: a one-op graph
 * (GroupQueryAttention or MultiHeadAttention) runs as is, and its output at each row's last real
 * token must equal Σ_t w[h, t] · V[t, kvHead(h)] with the weights w that lobes' capture graph
 * recomputes from the op's inputs. Every option of the ops that changes the weights is varied:
 * rotary (halves, interleaved, partial), packed QKV, scale, soft-capping, local window, smooth
 * softmax, attention bias, projection bias, padding.
 */
import { describe, it, expect } from 'vitest';
import * as ort from 'onnxruntime-node';
import { DataType, GraphIndex, encodeModel, makeGraph, makeModel, makeNode, makeTensor, makeValueInfo, type NodeProto,
  type TensorProto } from '../../src/onnx/index.js';
import { fusedAttentionSite, type FusedAttention } from '../../src/runtime/attention.js';
import { buildAttentionModel } from '../../src/runtime/attention-surgery.js';
import { Rng } from '../../src/util/rng.js';

interface Case {
  op: 'GroupQueryAttention' | 'MultiHeadAttention';
  heads: number;
  kvHeads: number;
  headDim: number;
  attrs?: Record<string, number>;
  /** Rotary: cache width (half of the rotated dims); GQA only. */
  rotaryHalf?: number;
  packed?: boolean;
  /** MultiHeadAttention: an additive bias input [B, 1, S, S] (causal + padding + noise). */
  bias?: boolean;
  qkvBias?: boolean;
  /** GroupQueryAttention: per-head sink logits (head_sink input). */
  sinks?: boolean;
  /** GroupQueryAttention: explicit position_ids 1, 3, 5, ... (rotary depends on their differences). */
  positionIds?: boolean;
  lengths: number[];
  side?: 'left' | 'right';
  /** Logit scale of the random inputs (larger: peakier attention). */
  amp?: number;
}

const S_MAX_POS = 64;

function randn(rng: Rng, n: number, amp: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = amp * rng.normal();
  return a;
}

/** The one-op model, its inputs, and where its query, key and value live. */
function buildCase(c: Case, seed: number) {
  const rng = new Rng(seed);
  const B = c.lengths.length;
  const S = Math.max(...c.lengths);
  const { heads: H, kvHeads: KV, headDim: hd } = c;
  const amp = c.amp ?? 1;
  const side = c.side ?? 'right';
  const mask = new BigInt64Array(B * S);
  c.lengths.forEach((n, b) => {
    const off = side === 'left' ? S - n : 0;
    for (let j = 0; j < n; j++) mask[b * S + off + j] = 1n;
  });
  const q = randn(rng, B * S * H * hd, amp);
  const k = randn(rng, B * S * KV * hd, amp);
  const v = randn(rng, B * S * KV * hd, 1);
  const inits: TensorProto[] = [];
  const nodes: NodeProto[] = [];
  const feeds: Record<string, ort.Tensor> = { attention_mask: new ort.Tensor('int64', mask, [B, S]) };
  const inputs = [makeValueInfo('attention_mask', DataType.INT64, ['batch', 'seq'])];
  const f32in = (name: string, data: Float32Array, dims: number[]) => {
    feeds[name] = new ort.Tensor('float32', data, dims);
    inputs.push(makeValueInfo(name, DataType.FLOAT, dims.map((d, i) => (i === 0 ? 'batch' : i === 1 ? 'seq' : d))));
  };
  let opInputs: string[];
  const attrs: Record<string, number> = { num_heads: H, ...(c.attrs ?? {}) };
  const outputs = ['out'];
  if (c.op === 'GroupQueryAttention') {
    attrs.kv_num_heads = KV;
    if (c.packed) {
      const qkv = new Float32Array(B * S * (H + 2 * KV) * hd);
      const W = (H + 2 * KV) * hd;
      for (let r = 0; r < B * S; r++) {
        qkv.set(q.subarray(r * H * hd, (r + 1) * H * hd), r * W);
        qkv.set(k.subarray(r * KV * hd, (r + 1) * KV * hd), r * W + H * hd);
        qkv.set(v.subarray(r * KV * hd, (r + 1) * KV * hd), r * W + (H + KV) * hd);
      }
      f32in('query', qkv, [B, S, W]);
    } else {
      f32in('query', q, [B, S, H * hd]);
      f32in('key', k, [B, S, KV * hd]);
      f32in('value', v, [B, S, KV * hd]);
    }
    inits.push(makeTensor('one', DataType.INT64, [], BigInt64Array.of(1n)),
      makeTensor('axes1', DataType.INT64, [1], BigInt64Array.of(1n)));
    nodes.push(
      makeNode('ReduceSum', ['attention_mask', 'axes1'], ['len'], { keepdims: 0 }),
      makeNode('Sub', ['len', 'one'], ['len1']),
      makeNode('Cast', ['len1'], ['seqlens_k'], { to: DataType.INT32 }),
      makeNode('Shape', ['attention_mask'], ['mshape']),
      makeNode('Gather', ['mshape', 'one'], ['total64'], { axis: 0 }),
      makeNode('Cast', ['total64'], ['total'], { to: DataType.INT32 }),
    );
    let cos = '';
    let sin = '';
    if (c.rotaryHalf) {
      attrs.do_rotary = 1;
      const w = c.rotaryHalf;
      const cc = new Float32Array(S_MAX_POS * w);
      const ss = new Float32Array(S_MAX_POS * w);
      for (let p = 0; p < S_MAX_POS; p++) {
        for (let i = 0; i < w; i++) {
          const ang = p * Math.pow(100, -i / w);
          cc[p * w + i] = Math.cos(ang);
          ss[p * w + i] = Math.sin(ang);
        }
      }
      inits.push(makeTensor('cos_cache', DataType.FLOAT, [S_MAX_POS, w], cc),
        makeTensor('sin_cache', DataType.FLOAT, [S_MAX_POS, w], ss));
      cos = 'cos_cache';
      sin = 'sin_cache';
    }
    opInputs = ['query', c.packed ? '' : 'key', c.packed ? '' : 'value', '', '', 'seqlens_k', 'total', cos, sin];
    if (c.positionIds || c.sinks) opInputs.push(c.positionIds ? 'position_ids' : '', '');
    if (c.positionIds) {
      const pos = new BigInt64Array(B * S);
      for (let i = 0; i < B * S; i++) pos[i] = BigInt(1 + 2 * (i % S));
      feeds.position_ids = new ort.Tensor('int64', pos, [B, S]);
      inputs.push(makeValueInfo('position_ids', DataType.INT64, ['batch', 'seq']));
    }
    if (c.sinks) {
      inits.push(makeTensor('sinks', DataType.FLOAT, [H], randn(rng, H, 2)));
      opInputs.push('sinks');
    }
    outputs.push('present_k', 'present_v');
  } else {
    f32in('query', q, [B, S, H * hd]);
    f32in('key', k, [B, S, H * hd]);
    f32in('value', v, [B, S, H * hd]);
    let bias = '';
    if (c.qkvBias) {
      inits.push(makeTensor('qkv_bias', DataType.FLOAT, [3 * H * hd], randn(rng, 3 * H * hd, amp)));
      bias = 'qkv_bias';
    }
    let ab = '';
    if (c.bias) {
      // Causal + padding (−10000 where masked) plus a little noise, as a graph input.
      const data = new Float32Array(B * S * S);
      for (let b = 0; b < B; b++) {
        for (let i = 0; i < S; i++) {
          for (let j = 0; j < S; j++)
            data[(b * S + i) * S + j] = j > i || !mask[b * S + j] ? -10000 : 0.3 * rng.normal();
        }
      }
      feeds.attention_bias = new ort.Tensor('float32', data, [B, 1, S, S]);
      inputs.push(makeValueInfo('attention_bias', DataType.FLOAT, ['batch', 1, 'seq', 'seq']));
      ab = 'attention_bias';
    }
    opInputs = ['query', 'key', 'value', bias, '', ab];
  }
  nodes.push(makeNode(c.op, opInputs, outputs, attrs, 'com.microsoft', 'attn'));
  const graph = makeGraph('attn', nodes, inputs, outputs.map((o) => makeValueInfo(o, DataType.FLOAT, null)), inits);
  const model = makeModel(graph, { opsets: { '': 17, 'com.microsoft': 1 } });
  // With a projection bias, V is the value input plus its third of the bias.
  const vEff = c.qkvBias ?
    (() => {
      const bias = inits.find((t) => t.name === 'qkv_bias')!;
      const bv = new Float32Array(bias.rawData!.slice().buffer).subarray(2 * H * hd);
      const out = v.slice();
      for (let r = 0; r < B * S; r++) for (let i = 0; i < H * hd; i++) out[r * H * hd + i] += bv[i]!;
      return out;
    })() :
    v;
  return { model, feeds, mask, B, S, vEff };
}

async function check(c: Case,
  seed = 1): Promise<{ maxErr: number; rows: Float32Array; S: number; mask: BigInt64Array }>
{
  const { model, feeds, mask, B, S, vEff } = buildCase(c, seed);
  const plain = await ort.InferenceSession.create(encodeModel(model));
  const out = (await plain.run(feeds)).out!.data as Float32Array;
  const g = new GraphIndex(model.graph!);
  const site: FusedAttention = { ...fusedAttentionSite(g, g.nodes.find((n) => n.opType === c.op)!), layer: 0,
    name: 'layers.0.attn.weights' };
  const surg = buildAttentionModel(model, g, [site], 'attention_mask');
  const sess = await ort.InferenceSession.create(encodeModel(surg.model));
  const wanted = new Set(sess.inputNames);
  const rows = (await sess.run(Object.fromEntries(Object.entries(feeds).filter(([k]) => wanted.has(k)))))[
    surg.outputs.get(site.name)!
  ]!.data as Float32Array;
  const { heads: H, kvHeads: KV, headDim: hd } = c;
  const G = H / KV;
  let maxErr = 0;
  for (let b = 0; b < B; b++) {
    let last = 0;
    for (let t = 0; t < S; t++) if (mask[b * S + t]) last = t;
    for (let h = 0; h < H; h++) {
      const w = rows.subarray((b * H + h) * S, (b * H + h + 1) * S);
      let sum = 0;
      for (let t = 0; t < S; t++) {
        sum += w[t]!;
        if (!mask[b * S + t] || t > last) expect(w[t], `masked position ${t} of row ${b}`).toBe(0);
      }
      if (!c.attrs?.smooth_softmax && !c.sinks) expect(Math.abs(sum - 1)).toBeLessThan(1e-5);
      for (let i = 0; i < hd; i++) {
        let acc = 0;
        for (let t = 0; t < S; t++) acc += w[t]! * vEff[(b * S + t) * KV * hd + Math.floor(h / G) * hd + i]!;
        maxErr = Math.max(maxErr, Math.abs(acc - out[(b * S + last) * H * hd + h * hd + i]!));
      }
    }
  }
  await plain.release();
  await sess.release();
  return { maxErr, rows, S, mask };
}

const MIXED = [9, 4, 1, 7];

describe('recomputed GroupQueryAttention weights reproduce the op (onnxruntime CPU kernel)', () => {
  const cases: [string, Case][] = [
    ['no rotary, default scale', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 8, lengths: MIXED,
      amp: 1.5 }],
    ['rotary on halves', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 16, rotaryHalf: 8, lengths: MIXED,
      amp: 1.5 }],
    ['interleaved rotary', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 16, rotaryHalf: 8,
      attrs: { rotary_interleaved: 1 }, lengths: MIXED, amp: 1.5 }],
    ['partial rotary (16 of 32 dims)', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 32, rotaryHalf: 8,
      lengths: MIXED, amp: 1.5 }],
    ['partial interleaved rotary', { op: 'GroupQueryAttention', heads: 4, kvHeads: 1, headDim: 32, rotaryHalf: 8,
      attrs: { rotary_interleaved: 1 }, lengths: MIXED, amp: 1.5 }],
    ['packed QKV with rotary', { op: 'GroupQueryAttention', heads: 6, kvHeads: 2, headDim: 16, rotaryHalf: 8,
      packed: true, lengths: MIXED, amp: 1.5 }],
    ['scale and soft-capping', { op: 'GroupQueryAttention', heads: 2, kvHeads: 2, headDim: 8,
      attrs: { scale: 0.7, softcap: 3.5 }, lengths: MIXED, amp: 2 }],
    ['local window', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 16, rotaryHalf: 8,
      attrs: { local_window_size: 3 }, lengths: MIXED, amp: 1.5 }],
    ['smooth softmax', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 8, attrs: { smooth_softmax: 1 },
      lengths: MIXED, amp: 1.5 }],
    ['head sinks', { op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 8, sinks: true, lengths: MIXED,
      amp: 1.5 }],
  ];
  for (const [name, c] of cases) {
    it(name, async () => {
      const { maxErr } = await check(c);
      expect(maxErr).toBeLessThan(2e-5);
    });
  }

  it('refuses a position_ids input with in-op rotary, naming it', () => {
    const { model } = buildCase({ op: 'GroupQueryAttention', heads: 4, kvHeads: 2, headDim: 16, rotaryHalf: 8,
      positionIds: true, lengths: [3] }, 1);
    const g = new GraphIndex(model.graph!);
    expect(() => fusedAttentionSite(g, g.nodes.find((n) => n.opType === 'GroupQueryAttention')!)).toThrow(
      /position_ids input with in-op rotary/,
    );
  });

  it('the weights are far from uniform (the comparison can fail)', async () => {
    const { rows, S } = await check(cases[1]![1]);
    // Row 0 (9 real tokens), head 0: a uniform row would be 1/9 everywhere.
    expect(Math.max(...rows.subarray(0, S))).toBeGreaterThan(0.3);
  });
});

describe('recomputed MultiHeadAttention weights reproduce the op', () => {
  it('attention bias (causal, padding, noise), left padding', async () => {
    const { maxErr } = await check({ op: 'MultiHeadAttention', heads: 2, kvHeads: 2, headDim: 8, bias: true,
      lengths: MIXED, side: 'left', amp: 1.5 });
    expect(maxErr).toBeLessThan(2e-5);
  });
  it('projection bias and a scale', async () => {
    const { maxErr } = await check({ op: 'MultiHeadAttention', heads: 2, kvHeads: 2, headDim: 8, bias: true,
      qkvBias: true, attrs: { scale: 0.5 }, lengths: MIXED, amp: 1.5 });
    expect(maxErr).toBeLessThan(2e-5);
  });
});
