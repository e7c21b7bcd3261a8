/**
 * An independent forward pass of the onnxruntime-genai fixture (../shared/models/
 * ort-genai-tiny-llama-fp16: 2 layers, hidden 16, 1 head of 16, intermediate 64), written from
 * the Llama equations over the model's weights in float64. It reads only the initializers (by
 * their exporter names, MatMul layout [d_in, d_out]) and never runs the graph, so it is an
 * oracle for what the capture engine and the graph surgery return.
 *
 * The graph's ops, as the exporter writes them: SimplifiedLayerNormalization (RMSNorm, eps
 * 1e-6), RotaryEmbedding (non-interleaved halves, angles from cos_cache/sin_cache [2048, 8]
 * at each token's position), MultiHeadAttention (causal, scale 1/4), SiLU(gate) · up.
 */
import { loadModel, readInitializerFloat32 } from '../../src/onnx/index.js';

export interface GenaiForward {
  /** Per layer, the input of gate_proj/up_proj at every position [seq, 16]. */
  mlpIn: Float64Array[];
  /** Per layer, the input of down_proj [seq, 64]. */
  downIn: Float64Array[];
  /** Per layer, the residual stream after the layer [seq, 16]. */
  residOut: Float64Array[];
  /** Final RMSNorm output (the lm_head input) [seq, 16]. */
  finalHidden: Float64Array;
  /** Per layer, the last position's attention weights over every position [seq] (one head). */
  attnLast: Float64Array[];
  hidden: number;
  intermediate: number;
}

const H = 16;
const I = 64;
const HALF = 8;
const EPS = 1e-6;

type Weights = (name: string) => Float32Array;

function rms(x: Float64Array, w: Float32Array, S: number): Float64Array {
  const y = new Float64Array(S * H);
  for (let t = 0; t < S; t++) {
    let ss = 0;
    for (let j = 0; j < H; j++) ss += x[t * H + j] ** 2;
    const r = 1 / Math.sqrt(ss / H + EPS);
    for (let j = 0; j < H; j++) y[t * H + j] = x[t * H + j] * r * w[j];
  }
  return y;
}

/** y = x W with W stored [dIn, dOut] (the ONNX MatMul layout). */
function matmul(x: Float64Array, W: Float32Array, S: number, dIn: number, dOut: number): Float64Array {
  const y = new Float64Array(S * dOut);
  for (let t = 0; t < S; t++)
    for (let i = 0; i < dIn; i++) {
      const v = x[t * dIn + i];
      for (let o = 0; o < dOut; o++) y[t * dOut + o] += v * W[i * dOut + o];
    }
  return y;
}

let cached: { dir: string; w: Weights } | null = null;
function weightsOf(dir: string): Weights {
  if (cached?.dir === dir) return cached.w;
  const m = loadModel(dir);
  const memo = new Map<string, Float32Array>();
  const w: Weights = (name) => {
    let v = memo.get(name);
    if (!v) memo.set(name, v = readInitializerFloat32(m, name));
    return v;
  };
  cached = { dir, w };
  return w;
}

/** Forward pass of one unpadded sequence (positions 0..seq−1). */
/**
 * `residEdit(layer, x, S)` may change the residual stream after a layer in place ([S, 16]), as
 * an intervention at layers.{layer}.resid_out does; everything after it reads the edited stream.
 */
export function genaiForward(dir: string, ids: number[],
  residEdit?: (layer: number, x: Float64Array, S: number) => void): GenaiForward
{
  const w = weightsOf(dir);
  const S = ids.length;
  const emb = w('model.embed_tokens.weight');
  const cosC = w('cos_cache');
  const sinC = w('sin_cache');
  const x = new Float64Array(S * H);
  for (let t = 0; t < S; t++) for (let j = 0; j < H; j++) x[t * H + j] = emb[ids[t] * H + j];
  const rope = (m: Float64Array) => {
    for (let t = 0; t < S; t++) {
      for (let i = 0; i < HALF; i++) {
        const c = cosC[t * HALF + i];
        const s = sinC[t * HALF + i];
        const a = m[t * H + i];
        const b = m[t * H + i + HALF];
        m[t * H + i] = a * c - b * s;
        m[t * H + i + HALF] = b * c + a * s;
      }
    }
  };
  const out: GenaiForward = { mlpIn: [], downIn: [], residOut: [], finalHidden: new Float64Array(0), attnLast: [],
    hidden: H, intermediate: I };
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}`;
    const h = rms(x, w(`${p}.input_layernorm.weight`), S);
    const q = matmul(h, w(`${p}.attn.q_proj.MatMul.weight`), S, H, H);
    const k = matmul(h, w(`${p}.attn.k_proj.MatMul.weight`), S, H, H);
    const v = matmul(h, w(`${p}.attn.v_proj.MatMul.weight`), S, H, H);
    rope(q);
    rope(k);
    const ctx = new Float64Array(S * H);
    for (let t = 0; t < S; t++) {
      const sc = new Float64Array(t + 1);
      let max = -Infinity;
      for (let u = 0; u <= t; u++) {
        let s = 0;
        for (let i = 0; i < H; i++) s += q[t * H + i] * k[u * H + i];
        sc[u] = s / Math.sqrt(H);
        max = Math.max(max, sc[u]);
      }
      let z = 0;
      for (let u = 0; u <= t; u++) z += sc[u] = Math.exp(sc[u] - max);
      for (let u = 0; u <= t; u++) for (let i = 0; i < H; i++) ctx[t * H + i] += (sc[u] / z) * v[u * H + i];
      if (t === S - 1) out.attnLast.push(sc.map((e) => e / z));
    }
    const o = matmul(ctx, w(`${p}.attn.o_proj.MatMul.weight`), S, H, H);
    for (let j = 0; j < S * H; j++) x[j] += o[j];
    const h2 = rms(x, w(`${p}.post_attention_layernorm.weight`), S);
    out.mlpIn.push(h2);
    const g = matmul(h2, w(`${p}.mlp.gate_proj.MatMul.weight`), S, H, I);
    const u = matmul(h2, w(`${p}.mlp.up_proj.MatMul.weight`), S, H, I);
    const m = g.map((gv, j) => (gv / (1 + Math.exp(-gv))) * u[j]);
    out.downIn.push(m);
    const d = matmul(m, w(`${p}.mlp.down_proj.MatMul.weight`), S, I, H);
    for (let j = 0; j < S * H; j++) x[j] += d[j];
    residEdit?.(l, x, S);
    out.residOut.push(x.slice());
  }
  out.finalHidden = rms(x, w('model.layers.2.final_norm_layernorm.weight'), S);
  return out;
}

/** The forward pass's value of a hook at the last position. */
export function lastTokenHook(f: GenaiForward, hook: string): Float64Array {
  const pick = (a: Float64Array, d: number) => a.subarray(a.length - d);
  if (hook === 'final.hidden') return pick(f.finalHidden, f.hidden);
  const m = /^layers\.(\d+)\.(mlp\.in|mlp\.down_in|resid_out)$/.exec(hook);
  if (!m) throw new Error(`unexpected hook ${hook}`);
  const l = Number(m[1]);
  if (m[2] === 'mlp.in') return pick(f.mlpIn[l], f.hidden);
  if (m[2] === 'mlp.down_in') return pick(f.downIn[l], f.intermediate);
  return pick(f.residOut[l], f.hidden);
}
