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
import { buildLlamaGraphInline } from '../convert/llama-onnx/writer.js';
import { memorySource, type MemoryWeight } from '../convert/llama-onnx/source.js';
import { W as WEIGHT_NAMES } from '../convert/llama-onnx/spec.js';
import { quantizeRows } from '../convert/llama-onnx/weights.js';
import type { GGraph } from '../convert/llama-onnx/graph.js';
import type { LlamaSpec, LlamaWeightSource, NbitsBlocks } from '../convert/llama-onnx/types.js';

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
  const zeroPoints = new Uint8Array(dOut * Math.ceil(nb / 2));
  quantizeRows(w, dOut, dIn, 4, blockSize, { codes, scales, zeroPoints }, true);
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
      throw new LobesError(
        `plant: ${specs.length} groups × ${maxTok} tokens need more word tokens than the vocabulary has (${words.length})`,
      );
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
// Graph: the 'explicit' layout of the Llama writer (src/convert/llama-onnx) over these parameters.

export type { GAttr, GNode, GInit, GValue, GGraph } from '../convert/llama-onnx/graph.js';

/** The Llama spec of a parameter set. */
export function specOf(p: TinyLlamaParams): LlamaSpec {
  const o = p.opts;
  return {
    layers: o.layers,
    hidden: o.hidden,
    intermediate: o.intermediate,
    heads: o.heads,
    kvHeads: o.kvHeads,
    headDim: p.headDim,
    vocab: o.vocab,
    rmsNormEps: o.rmsNormEps,
    ropeTheta: o.ropeTheta,
    ropeScaling: null,
    maxPositions: 2048,
    tiedEmbeddings: false,
    bosTokenId: p.tokenizer.bosId,
    eosTokenId: p.tokenizer.eosId,
    padTokenId: p.tokenizer.padId,
  };
}

/** A weight source over a parameter set (its quantized projections handed out as nbits blocks). */
export function paramsSource(p: TinyLlamaParams): LlamaWeightSource {
  const { hidden: H, intermediate: I, heads, kvHeads, vocab: V } = p.opts;
  const hd = p.headDim;
  const dims: Record<ProjName, [number, number]> = {
    q: [heads * hd, H],
    k: [kvHeads * hd, H],
    v: [kvHeads * hd, H],
    o: [H, heads * hd],
    gate: [I, H],
    up: [I, H],
    down: [H, I],
  };
  const weights = new Map<string, MemoryWeight>();
  weights.set(WEIGHT_NAMES.embed, { shape: [V, H], data: p.embed });
  p.layers.forEach((L, l) => {
    weights.set(WEIGHT_NAMES.inputNorm(l), { shape: [H], data: L.inputNorm });
    weights.set(WEIGHT_NAMES.postNorm(l), { shape: [H], data: L.postNorm });
    for (const n of PROJ_NAMES) {
      const q = p.quantized?.[l]?.[n];
      const name = n === 'gate' || n === 'up' || n === 'down' ? WEIGHT_NAMES.mlp(l, n) : WEIGHT_NAMES.attn(l, n);
      const nbits: NbitsBlocks | null = q
        ? { bits: 4, blockSize: q.blockSize, weights: q.codes, scales: q.scales, zeroPoints: q.zeroPoints }
        : null;
      weights.set(name, { shape: dims[n], data: L[n], nbits });
    }
  });
  weights.set(WEIGHT_NAMES.norm, { shape: [H], data: p.finalNorm });
  weights.set(WEIGHT_NAMES.lmHead, { shape: [V, H], data: p.lmHead });
  return memorySource(weights);
}

/** The ONNX graph of a parameter set (explicit layout, weights inline). */
export function buildGraph(p: TinyLlamaParams, dtype: 'fp32' | 'fp16' = 'fp32'): GGraph {
  return buildLlamaGraphInline(specOf(p), paramsSource(p), {
    layout: 'explicit',
    dtype,
    weights: p.quantized ? 'q4' : dtype,
    withPast: p.opts.withPast,
  });
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
    ...(o.quant
      ? {
        quantization_config: { quant_method: 'matmul_nbits', bits: o.quant.bits, block_size: o.quant.blockSize,
          symmetric: false },
      }
      : {}),
  };
}
