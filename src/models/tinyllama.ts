/**
 * Deterministic generator of small Llama-class ONNX models, in the style of an optimum /
 * transformers.js export: fp32 inline weights, decomposed RMSNorm, explicit attention
 * (scaled scores, causal + padding mask, Softmax), decomposed RoPE, grouped-query attention,
 * SiLU written as Sigmoid·x, optional KV-cache inputs/outputs.
 *
 * Weights live in memory in the Hugging Face layout (W: [d_out, d_in]); the ONNX file stores
 * MatMul weights transposed ([d_in, d_out]), as exporters do.
 */
import { Rng } from '../util/rng.js';
import { LobesError } from '../util/errors.js';
import { buildTokenizer, preTokenize, type BpeTokenizer } from './tokenizer.js';
import { TOKENIZER_CORPUS } from './corpus.js';

export interface PlantSpec {
  /** Group name (a label the test data uses). */
  group: string;
  /** 256-wide block of the hidden dimension that the group's tokens light up (F). */
  hiddenBlock: number;
  /** 256-wide block of the intermediate dimension driven by F (G). */
  interBlock: number;
  /** 256-wide block of the hidden dimension that down_proj's planted block writes (default hiddenBlock). */
  downBlock?: number;
  /** Number of word tokens assigned to the group (default 4). */
  tokens?: number;
  /** Multiplier applied to the planted weight blocks (default 4). */
  gain?: number;
  /** Layers to plant (default all). */
  layers?: number[];
}

export interface TinyLlamaOptions {
  layers: number;
  hidden: number;
  intermediate: number;
  heads: number;
  kvHeads: number;
  vocab: number;
  seed: number;
  /** Add past_key_values.{i}.key/value inputs and present.{i}.key/value outputs. */
  withPast?: boolean;
  rmsNormEps?: number;
  ropeTheta?: number;
  plant?: PlantSpec[];
  /**
   * Store the layer projections (q, k, v, o, gate, up, down) as 4-bit MatMulNBits
   * (com.microsoft) with per-block scales and zero points, like int4 exports. The in-memory
   * weights become the dequantized values, so the parameters describe what the model computes.
   */
  quant?: { bits: 4; blockSize: number };
}

/** A [dOut, dIn] matrix quantized MatMulNBits-style along dIn in blocks. */
export interface QuantMatrix {
  dOut: number;
  dIn: number;
  bits: number;
  blockSize: number;
  /** uint8 [dOut, dIn/blockSize, blockSize·bits/8]; element k in the low nibble when k is even. */
  codes: Uint8Array;
  /** float [dOut, dIn/blockSize] */
  scales: Float32Array;
  /** uint8 [dOut, ceil((dIn/blockSize)·bits/8)], packed like the codes. */
  zeroPoints: Uint8Array;
}

export type ProjName = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';
export const PROJ_NAMES: readonly ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

/**
 * Asymmetric 4-bit quantization per block of `blockSize` inputs: scale = (max − min)/15,
 * zero point = round(−min/scale), code = clamp(round(w/scale) + zp, 0, 15).
 * Overwrites `w` with the dequantized values (code − zp)·scale.
 */
export function quantizeMatrix(w: Float32Array, dOut: number, dIn: number, blockSize: number): QuantMatrix {
  if (dIn % blockSize !== 0) throw new LobesError(`quant: d_in ${dIn} is not a multiple of block size ${blockSize}`);
  const nb = dIn / blockSize;
  const codes = new Uint8Array(dOut * nb * (blockSize / 2));
  const scales = new Float32Array(dOut * nb);
  const zpBytes = Math.ceil(nb / 2);
  const zeroPoints = new Uint8Array(dOut * zpBytes);
  for (let o = 0; o < dOut; o++) {
    for (let b = 0; b < nb; b++) {
      const base = o * dIn + b * blockSize;
      let lo = 0;
      let hi = 0;
      for (let k = 0; k < blockSize; k++) {
        lo = Math.min(lo, w[base + k]!);
        hi = Math.max(hi, w[base + k]!);
      }
      const scale = Math.fround((hi - lo) / 15 || 1);
      const zp = Math.max(0, Math.min(15, Math.round(-lo / scale)));
      scales[o * nb + b] = scale;
      zeroPoints[o * zpBytes + (b >> 1)]! |= zp << ((b & 1) * 4);
      for (let k = 0; k < blockSize; k++) {
        const q = Math.max(0, Math.min(15, Math.round(w[base + k]! / scale) + zp));
        codes[(o * nb + b) * (blockSize / 2) + (k >> 1)]! |= q << ((k & 1) * 4);
        w[base + k] = Math.fround((q - zp) * scale);
      }
    }
  }
  return { dOut, dIn, bits: 4, blockSize, codes, scales, zeroPoints };
}

export interface LayerParams {
  inputNorm: Float32Array;
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  o: Float32Array;
  postNorm: Float32Array;
  gate: Float32Array;
  up: Float32Array;
  down: Float32Array;
}

export interface PlantedGroup {
  group: string;
  hiddenBlock: number;
  interBlock: number;
  downBlock: number;
  gain: number;
  layers: number[];
  /** Token ids whose embeddings are large on the hidden block. */
  tokenIds: number[];
  /** The same tokens as text (each encodes to exactly that single token, with its leading space). */
  words: string[];
}

export interface TinyLlamaParams {
  opts: Required<Omit<TinyLlamaOptions, 'plant' | 'quant'>> & {
    plant: PlantSpec[];
    quant: { bits: 4; blockSize: number } | null;
  };
  headDim: number;
  /** [vocab, hidden] */
  embed: Float32Array;
  layers: LayerParams[];
  finalNorm: Float32Array;
  /** [vocab, hidden] */
  lmHead: Float32Array;
  /** inv_freq for RoPE, [headDim/2]. */
  invFreq: Float32Array;
  tokenizer: BpeTokenizer;
  planted: PlantedGroup[];
  /** Per layer, the quantized projections (when opts.quant is set). */
  quantized: Record<ProjName, QuantMatrix>[] | null;
}

export const BLOCK = 256;

function normalArray(rng: Rng, n: number, std: number, mean = 0): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = mean + std * rng.normal();
  return a;
}

/** Generate all parameters (deterministic in opts). */
export function generateParams(options: TinyLlamaOptions): TinyLlamaParams {
  const opts = {
    withPast: false,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    plant: [] as PlantSpec[],
    quant: null as { bits: 4; blockSize: number } | null,
    ...options,
  };
  const { layers, hidden: H, intermediate: I, heads, kvHeads, vocab: V } = opts;
  if (H % heads !== 0) throw new LobesError(`hidden ${H} is not a multiple of heads ${heads}`);
  if (heads % kvHeads !== 0) throw new LobesError(`heads ${heads} is not a multiple of kvHeads ${kvHeads}`);
  const hd = H / heads;
  if (hd % 2 !== 0) throw new LobesError(`head dim ${hd} must be even`);
  const tokenizer = buildTokenizer(V);
  const rng = new Rng(opts.seed);
  const embed = normalArray(rng.fork(), V * H, 1);
  const layerParams: LayerParams[] = [];
  for (let l = 0; l < layers; l++) {
    const r = rng.fork();
    layerParams.push({
      inputNorm: normalArray(r, H, 0.1, 1),
      q: normalArray(r, heads * hd * H, 1 / Math.sqrt(H)),
      k: normalArray(r, kvHeads * hd * H, 1 / Math.sqrt(H)),
      v: normalArray(r, kvHeads * hd * H, 1 / Math.sqrt(H)),
      o: normalArray(r, H * heads * hd, 1 / Math.sqrt(heads * hd)),
      postNorm: normalArray(r, H, 0.1, 1),
      gate: normalArray(r, I * H, 1 / Math.sqrt(H)),
      up: normalArray(r, I * H, 1 / Math.sqrt(H)),
      down: normalArray(r, H * I, 1 / Math.sqrt(I)),
    });
  }
  const fr = rng.fork();
  const finalNorm = normalArray(fr, H, 0.1, 1);
  const lmHead = normalArray(fr, V * H, 1 / Math.sqrt(H));
  const invFreq = new Float32Array(hd / 2);
  for (let i = 0; i < hd / 2; i++) invFreq[i] = 1 / Math.pow(opts.ropeTheta, (2 * i) / hd);
  const params: TinyLlamaParams = {
    opts,
    headDim: hd,
    embed,
    layers: layerParams,
    finalNorm,
    lmHead,
    invFreq,
    tokenizer,
    planted: [],
    quantized: null,
  };
  if (opts.plant.length > 0) applyPlant(params, rng.fork());
  if (opts.quant) {
    const q = opts.quant;
    const dims: Record<ProjName, [number, number]> = {
      q: [heads * hd, H],
      k: [kvHeads * hd, H],
      v: [kvHeads * hd, H],
      o: [H, heads * hd],
      gate: [I, H],
      up: [I, H],
      down: [H, I],
    };
    params.quantized = layerParams.map((L) => {
      const out = {} as Record<ProjName, QuantMatrix>;
      for (const n of PROJ_NAMES) out[n] = quantizeMatrix(L[n], dims[n][0], dims[n][1], q.blockSize);
      return out;
    });
  }
  return params;
}

/**
 * Word tokens that can carry a planted group: "Ġ" + at least four ASCII letters, and a whole
 * word of the tokenizer corpus (so " word" at the end of a text encodes to exactly that token).
 */
function wordTokens(tok: BpeTokenizer): number[] {
  const whole = new Set<string>();
  for (const text of TOKENIZER_CORPUS) for (const piece of preTokenize(text)) whole.add(piece);
  const out: number[] = [];
  for (let id = 0; id < tok.bosId; id++) {
    const t = tok.vocab[id]!;
    if (/^Ġ[A-Za-z]{4,}$/.test(t) && whole.has(' ' + t.slice(1))) out.push(id);
  }
  return out;
}

/**
 * Planting. For each group g with hidden block F, intermediate block G, down block D, gain k:
 *  - the embeddings of the group's word tokens get a fixed random ±3 sign pattern on F and are
 *    shrunk (×0.2) elsewhere, so at those tokens the normalized MLP input is concentrated on F;
 *  - in every planted layer, gate_proj and up_proj blocks [G, F] (HF layout [out, in]) and the
 *    down_proj block [D, G] are multiplied by k.
 * A text ending in one of the group's words therefore has large MLP input on F (gate/up),
 * large down_proj input on G, and the Wanda score |W|·‖x‖ of exactly those blocks stands out.
 */
function applyPlant(p: TinyLlamaParams, rng: Rng): void {
  const { hidden: H, intermediate: I, layers } = p.opts;
  const words = wordTokens(p.tokenizer);
  const specs = p.opts.plant;
  let cursor = 0;
  const maxTok = Math.max(...specs.map((s) => s.tokens ?? 4));
  for (const spec of specs) {
    const F = spec.hiddenBlock;
    const G = spec.interBlock;
    const D = spec.downBlock ?? F;
    const gain = spec.gain ?? 4;
    const nTok = spec.tokens ?? 4;
    const planted = spec.layers ?? Array.from({ length: layers }, (_, i) => i);
    if ((F + 1) * BLOCK > H || (D + 1) * BLOCK > H) {
      throw new LobesError(`plant ${spec.group}: hidden block out of range for hidden ${H}`);
    }
    if ((G + 1) * BLOCK > I) throw new LobesError(`plant ${spec.group}: intermediate block ${G} out of range for ${I}`);
    if (specs.length * maxTok > words.length) {
      throw new LobesError(`plant: ${specs.length} groups × ${maxTok} tokens need more word tokens than the vocabulary has (${words.length})`);
    }
    // Spread the groups' tokens over the word list deterministically.
    const chosen: number[] = [];
    const stride = Math.max(1, Math.floor(words.length / (specs.length * maxTok)));
    for (let t = 0; t < nTok; t++) chosen.push(words[cursor + t * specs.length * stride]!);
    cursor++;
    const sign = new Float32Array(BLOCK);
    for (let j = 0; j < BLOCK; j++) sign[j] = rng.next() < 0.5 ? -1 : 1;
    for (const id of chosen) {
      const row = p.embed.subarray(id * H, (id + 1) * H);
      for (let j = 0; j < H; j++) row[j] *= 0.2;
      for (let j = 0; j < BLOCK; j++) row[F * BLOCK + j] = 3 * sign[j]! + 0.3 * rng.normal();
    }
    for (const l of planted) {
      const L = p.layers[l]!;
      for (let o = G * BLOCK; o < (G + 1) * BLOCK; o++) {
        for (let i = F * BLOCK; i < (F + 1) * BLOCK; i++) {
          L.gate[o * H + i]! *= gain;
          L.up[o * H + i]! *= gain;
        }
      }
      for (let o = D * BLOCK; o < (D + 1) * BLOCK; o++) {
        for (let i = G * BLOCK; i < (G + 1) * BLOCK; i++) L.down[o * I + i]! *= gain;
      }
    }
    p.planted.push({
      group: spec.group,
      hiddenBlock: F,
      interBlock: G,
      downBlock: D,
      gain,
      layers: planted,
      tokenIds: chosen,
      words: chosen.map((id) => ' ' + p.tokenizer.vocab[id]!.slice(1)),
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Graph (exporter-neutral description, encoded by src/models/write.ts)

export type GAttr =
  | { type: 'int'; value: number }
  | { type: 'ints'; value: number[] }
  | { type: 'float'; value: number };

export interface GNode {
  op: string;
  name: string;
  inputs: string[];
  outputs: string[];
  attrs?: Record<string, GAttr>;
  domain?: string;
}

export interface GInit {
  name: string;
  dtype: 'float32' | 'float16' | 'int64' | 'uint8';
  dims: number[];
  /** float16 as IEEE half bit patterns. */
  data: Float32Array | Uint16Array | BigInt64Array | Uint8Array;
}

export interface GValue {
  name: string;
  dtype: 'float32' | 'float16' | 'int64';
  shape: (number | string)[];
}

export interface GGraph {
  name: string;
  opset: number;
  /** Extra opset imports, e.g. { 'com.microsoft': 1 }. */
  extraOpsets?: Record<string, number>;
  nodes: GNode[];
  initializers: GInit[];
  inputs: GValue[];
  outputs: GValue[];
}

function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = w[r * cols + c]!;
  return out;
}

/** The ONNX graph of a parameter set. */
export function buildGraph(p: TinyLlamaParams): GGraph {
  const { hidden: H, intermediate: I, heads, kvHeads, vocab: V, layers, rmsNormEps, withPast } = p.opts;
  const hd = p.headDim;
  const rep = heads / kvHeads;
  const nodes: GNode[] = [];
  const inits: GInit[] = [];
  let matmulCounter = 100;
  const f32 = (name: string, dims: number[], data: Float32Array) => {
    inits.push({ name, dtype: 'float32', dims, data });
    return name;
  };
  const i64 = (name: string, vals: number[], dims: number[] = [vals.length]) => {
    inits.push({ name, dtype: 'int64', dims, data: BigInt64Array.from(vals.map((v) => BigInt(v))) });
    return name;
  };
  const node = (op: string, name: string, inputs: string[], attrs?: Record<string, GAttr>, nOut = 1): string => {
    const outputs = Array.from({ length: nOut }, (_, i) => `${name}_output_${i}`);
    nodes.push({ op, name, inputs, outputs, ...(attrs ? { attrs } : {}) });
    return outputs[0]!;
  };
  const matmulWeight = (w: Float32Array, dOut: number, dIn: number) =>
    f32(`onnx::MatMul_${matmulCounter++}`, [dIn, dOut], transpose(w, dOut, dIn));
  /** A layer projection: MatMul with a [dIn, dOut] weight, or MatMulNBits when quantized. */
  const proj = (name: string, input: string, l: number, which: ProjName, dOut: number, dIn: number): string => {
    const q = p.quantized?.[l]?.[which];
    if (!q) return node('MatMul', `${name}/MatMul`, [input, matmulWeight(p.layers[l]![which], dOut, dIn)]);
    const nb = dIn / q.blockSize;
    const id = matmulCounter++;
    inits.push({ name: `onnx::MatMulNBits_${id}_B`, dtype: 'uint8', dims: [dOut, nb, q.blockSize / 2], data: q.codes });
    inits.push({ name: `onnx::MatMulNBits_${id}_scales`, dtype: 'float32', dims: [dOut * nb], data: q.scales });
    inits.push({ name: `onnx::MatMulNBits_${id}_zp`, dtype: 'uint8', dims: [q.zeroPoints.length], data: q.zeroPoints });
    const out = `${name}/MatMulNBits_output_0`;
    nodes.push({
      op: 'MatMulNBits',
      domain: 'com.microsoft',
      name: `${name}/MatMulNBits`,
      inputs: [input, `onnx::MatMulNBits_${id}_B`, `onnx::MatMulNBits_${id}_scales`, `onnx::MatMulNBits_${id}_zp`],
      outputs: [out],
      attrs: { K: int(dIn), N: int(dOut), bits: int(q.bits), block_size: int(q.blockSize) },
    });
    return out;
  };
  const ints = (value: number[]): GAttr => ({ type: 'ints', value });
  const int = (value: number): GAttr => ({ type: 'int', value });

  // Shared constants.
  const cTwo = f32('/model/constants/two', [], Float32Array.of(2));
  const cEps = f32('/model/constants/eps', [], Float32Array.of(rmsNormEps));
  const cOne = f32('/model/constants/one', [], Float32Array.of(1));
  const cNegOne = f32('/model/constants/neg_one', [], Float32Array.of(-1));
  const cScale = f32('/model/constants/attn_scale', [], Float32Array.of(1 / Math.sqrt(hd)));
  const cZero = f32('/model/constants/zero', [], Float32Array.of(0));
  const cMaskMin = f32('/model/constants/mask_min', [], Float32Array.of(-3.4028234663852886e38));
  const cI0 = i64('/model/constants/i0', [0], []);
  const cI1 = i64('/model/constants/i1', [1], []);
  const cAx2 = i64('/model/constants/axes2', [2]);
  const cAx1 = i64('/model/constants/axes1', [1]);
  const cAx12 = i64('/model/constants/axes12', [1, 2]);
  const cAxLast = i64('/model/constants/axes_last', [-1]);
  const cHalf0 = i64('/model/constants/half_start', [0]);
  const cHalf1 = i64('/model/constants/half_mid', [hd / 2]);
  const cHalf2 = i64('/model/constants/half_end', [hd]);
  const cQShape = i64('/model/constants/q_shape', [0, 0, heads, hd]);
  const cKvShape = i64('/model/constants/kv_shape', [0, 0, kvHeads, hd]);
  const cRepShape = i64('/model/constants/rep_shape', [1, 1, rep, 1, 1]);
  const cGqaShape = i64('/model/constants/gqa_shape', [0, heads, -1, hd]);
  const cOutShape = i64('/model/constants/attn_out_shape', [0, 0, heads * hd]);

  // Embedding.
  const embed = f32('model.embed_tokens.weight', [V, H], p.embed);
  let x = node('Gather', '/model/embed_tokens/Gather', [embed, 'input_ids']);

  // Attention mask [B, 1, S, T]: key j visible to query i iff j <= past + i and mask[b, j] = 1.
  const idsShape = node('Shape', '/model/Shape', ['input_ids']);
  const seqLen = node('Gather', '/model/Gather', [idsShape, cI1], { axis: int(0) });
  const maskShape = node('Shape', '/model/Shape_1', ['attention_mask']);
  const totLen = node('Gather', '/model/Gather_1', [maskShape, cI1], { axis: int(0) });
  const pastLen = node('Sub', '/model/Sub', [totLen, seqLen]);
  const kPos = node('Range', '/model/Range', [cI0, totLen, cI1]);
  const qPos0 = node('Range', '/model/Range_1', [pastLen, totLen, cI1]);
  const qPos = node('Unsqueeze', '/model/Unsqueeze', [qPos0, cAxLast]);
  const causal = node('LessOrEqual', '/model/LessOrEqual', [kPos, qPos]); // [S, T]
  const padBool = node('Cast', '/model/Cast', ['attention_mask'], { to: int(9) });
  const pad4 = node('Unsqueeze', '/model/Unsqueeze_1', [padBool, cAx12]); // [B,1,1,T]
  const allowed = node('And', '/model/And', [causal, pad4]); // [B,1,S,T]
  const mask = node('Where', '/model/Where', [allowed, cZero, cMaskMin]);

  // Rotary embedding from position_ids.
  const invFreq = f32('model.rotary_emb.inv_freq', [1, hd / 2], p.invFreq);
  const posF = node('Cast', '/model/rotary_emb/Cast', ['position_ids'], { to: int(1) });
  const posU = node('Unsqueeze', '/model/rotary_emb/Unsqueeze', [posF, cAxLast]); // [B,S,1]
  const freqs = node('MatMul', '/model/rotary_emb/MatMul', [posU, invFreq]); // [B,S,hd/2]
  const emb = node('Concat', '/model/rotary_emb/Concat', [freqs, freqs], { axis: int(-1) });
  const cos0 = node('Cos', '/model/rotary_emb/Cos', [emb]);
  const sin0 = node('Sin', '/model/rotary_emb/Sin', [emb]);
  const cos = node('Unsqueeze', '/model/rotary_emb/Unsqueeze_1', [cos0, cAx1]); // [B,1,S,hd]
  const sin = node('Unsqueeze', '/model/rotary_emb/Unsqueeze_2', [sin0, cAx1]);

  const rmsNorm = (prefix: string, input: string, weight: Float32Array, wName: string): string => {
    const sq = node('Pow', `${prefix}/Pow`, [input, cTwo]);
    const mean = node('ReduceMean', `${prefix}/ReduceMean`, [sq], { axes: ints([-1]), keepdims: int(1) });
    const added = node('Add', `${prefix}/Add`, [mean, cEps]);
    const root = node('Sqrt', `${prefix}/Sqrt`, [added]);
    const inv = node('Div', `${prefix}/Div`, [cOne, root]);
    const normed = node('Mul', `${prefix}/Mul`, [input, inv]);
    return node('Mul', `${prefix}/Mul_1`, [f32(wName, [H], weight), normed]);
  };
  const rope = (prefix: string, t: string): string => {
    const x1 = node('Slice', `${prefix}/Slice`, [t, cHalf0, cHalf1, cAxLast]);
    const x2 = node('Slice', `${prefix}/Slice_1`, [t, cHalf1, cHalf2, cAxLast]);
    const nx2 = node('Mul', `${prefix}/Mul_neg`, [x2, cNegOne]);
    const rot = node('Concat', `${prefix}/Concat`, [nx2, x1], { axis: int(-1) });
    const a = node('Mul', `${prefix}/Mul`, [t, cos]);
    const b = node('Mul', `${prefix}/Mul_1`, [rot, sin]);
    return node('Add', `${prefix}/Add`, [a, b]);
  };

  const outputs: GValue[] = [{ name: 'logits', dtype: 'float32', shape: ['batch_size', 'sequence_length', V] }];
  const inputs: GValue[] = [
    { name: 'input_ids', dtype: 'int64', shape: ['batch_size', 'sequence_length'] },
    { name: 'attention_mask', dtype: 'int64', shape: ['batch_size', 'total_sequence_length'] },
    { name: 'position_ids', dtype: 'int64', shape: ['batch_size', 'sequence_length'] },
  ];

  for (let l = 0; l < layers; l++) {
    const L = p.layers[l]!;
    const pre = `/model/layers.${l}`;
    const h = rmsNorm(`${pre}/input_layernorm`, x, L.inputNorm, `model.layers.${l}.input_layernorm.weight`);
    const q0 = proj(`${pre}/self_attn/q_proj`, h, l, 'q', heads * hd, H);
    const k0 = proj(`${pre}/self_attn/k_proj`, h, l, 'k', kvHeads * hd, H);
    const v0 = proj(`${pre}/self_attn/v_proj`, h, l, 'v', kvHeads * hd, H);
    const q1 = node('Reshape', `${pre}/self_attn/Reshape`, [q0, cQShape]);
    const k1 = node('Reshape', `${pre}/self_attn/Reshape_1`, [k0, cKvShape]);
    const v1 = node('Reshape', `${pre}/self_attn/Reshape_2`, [v0, cKvShape]);
    const q2 = node('Transpose', `${pre}/self_attn/Transpose`, [q1], { perm: ints([0, 2, 1, 3]) });
    const k2 = node('Transpose', `${pre}/self_attn/Transpose_1`, [k1], { perm: ints([0, 2, 1, 3]) });
    let v2 = node('Transpose', `${pre}/self_attn/Transpose_2`, [v1], { perm: ints([0, 2, 1, 3]) });
    const q3 = rope(`${pre}/self_attn/rotary_q`, q2);
    let k3 = rope(`${pre}/self_attn/rotary_k`, k2);
    if (withPast) {
      const pk = `past_key_values.${l}.key`;
      const pv = `past_key_values.${l}.value`;
      inputs.push({ name: pk, dtype: 'float32', shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      inputs.push({ name: pv, dtype: 'float32', shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      k3 = node('Concat', `${pre}/self_attn/Concat_k`, [pk, k3], { axis: int(2) });
      v2 = node('Concat', `${pre}/self_attn/Concat_v`, [pv, v2], { axis: int(2) });
      nodes.push({ op: 'Identity', name: `${pre}/self_attn/present_key`, inputs: [k3], outputs: [`present.${l}.key`] });
      nodes.push({ op: 'Identity', name: `${pre}/self_attn/present_value`, inputs: [v2], outputs: [`present.${l}.value`] });
      outputs.push({ name: `present.${l}.key`, dtype: 'float32', shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
      outputs.push({ name: `present.${l}.value`, dtype: 'float32', shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
    }
    // Grouped-query attention: repeat each kv head `rep` times.
    const repeat = (t: string, tag: string) => {
      const u = node('Unsqueeze', `${pre}/self_attn/Unsqueeze_${tag}`, [t, cAx2]);
      const e = node('Expand', `${pre}/self_attn/Expand_${tag}`, [u, cRepShape]);
      return node('Reshape', `${pre}/self_attn/Reshape_${tag}`, [e, cGqaShape]);
    };
    const kr = repeat(k3, 'k');
    const vr = repeat(v2, 'v');
    const kt = node('Transpose', `${pre}/self_attn/Transpose_3`, [kr], { perm: ints([0, 1, 3, 2]) });
    const scores0 = node('MatMul', `${pre}/self_attn/MatMul`, [q3, kt]);
    const scores1 = node('Mul', `${pre}/self_attn/Mul`, [scores0, cScale]);
    const scores = node('Add', `${pre}/self_attn/Add`, [scores1, mask]);
    const probs = node('Softmax', `${pre}/self_attn/Softmax`, [scores], { axis: int(-1) });
    const ctx0 = node('MatMul', `${pre}/self_attn/MatMul_1`, [probs, vr]);
    const ctx1 = node('Transpose', `${pre}/self_attn/Transpose_4`, [ctx0], { perm: ints([0, 2, 1, 3]) });
    const ctx = node('Reshape', `${pre}/self_attn/Reshape_3`, [ctx1, cOutShape]);
    const attn = proj(`${pre}/self_attn/o_proj`, ctx, l, 'o', H, heads * hd);
    x = node('Add', `${pre}/Add`, [x, attn]);
    const h2 = rmsNorm(`${pre}/post_attention_layernorm`, x, L.postNorm, `model.layers.${l}.post_attention_layernorm.weight`);
    const gate = proj(`${pre}/mlp/gate_proj`, h2, l, 'gate', I, H);
    const up = proj(`${pre}/mlp/up_proj`, h2, l, 'up', I, H);
    const sig = node('Sigmoid', `${pre}/mlp/act_fn/Sigmoid`, [gate]);
    const act = node('Mul', `${pre}/mlp/act_fn/Mul`, [gate, sig]);
    const prod = node('Mul', `${pre}/mlp/Mul`, [act, up]);
    const down = proj(`${pre}/mlp/down_proj`, prod, l, 'down', H, I);
    x = node('Add', `${pre}/Add_1`, [x, down]);
  }
  const hf = rmsNorm('/model/norm', x, p.finalNorm, 'model.norm.weight');
  const lmW = matmulWeight(p.lmHead, V, H);
  nodes.push({ op: 'MatMul', name: '/lm_head/MatMul', inputs: [hf, lmW], outputs: ['logits'] });
  return {
    name: 'main_graph',
    opset: 17,
    ...(p.quantized ? { extraOpsets: { 'com.microsoft': 1 } } : {}),
    nodes,
    initializers: inits,
    inputs,
    outputs,
  };
}

/** config.json (Hugging Face LlamaConfig fields). */
export function configJson(p: TinyLlamaParams): object {
  const o = p.opts;
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: o.hidden,
    intermediate_size: o.intermediate,
    num_hidden_layers: o.layers,
    num_attention_heads: o.heads,
    num_key_value_heads: o.kvHeads,
    head_dim: p.headDim,
    vocab_size: o.vocab,
    rms_norm_eps: o.rmsNormEps,
    rope_theta: o.ropeTheta,
    hidden_act: 'silu',
    max_position_embeddings: 2048,
    tie_word_embeddings: false,
    bos_token_id: p.tokenizer.bosId,
    eos_token_id: p.tokenizer.eosId,
    pad_token_id: p.tokenizer.padId,
    torch_dtype: 'float32',
    use_cache: o.withPast,
    lobes_generator: { seed: o.seed, with_past: o.withPast, plant: o.plant, ...(o.quant ? { quant: o.quant } : {}) },
    ...(o.quant ? { quantization_config: { quant_method: 'matmul_nbits', bits: o.quant.bits, block_size: o.quant.blockSize, symmetric: false } } : {}),
  };
}
