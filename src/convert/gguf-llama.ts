/**
 * A llama, qwen2, qwen3, phi3, gemma2 or gemma3 GGUF (llama.cpp, Ollama, LM Studio) as a Llama spec and a weight source
 * for the ONNX writer (src/convert/llama-onnx): the hyperparameters from `llama.*` metadata, the
 * weights under their Hugging Face names, read a row range at a time.
 *
 * What llama.cpp changes on the way from a Hugging Face checkpoint, and how it is undone here:
 *
 *   - Names: `token_embd`, `blk.N.attn_norm / attn_q / attn_k / attn_v / attn_output /
 *     ffn_norm / ffn_gate / ffn_up / ffn_down`, `output_norm`, `output` (absent when the
 *     embeddings are tied) stand for `model.embed_tokens`, `model.layers.N.input_layernorm`, ...
 *   - Shapes: GGUF dims are the PyTorch shape reversed, so a weight W[d_out, d_in] has dims
 *     [d_in, d_out] and each stored row is one output: the bytes are already in HF row order.
 *   - Q and K rows: llama.cpp's converter reorders the rows of q_proj and k_proj within each head
 *     for its rotary layout (interleaved pairs instead of the two halves Hugging Face rotates):
 *     GGUF row h·D + 2i + s holds HF row h·D + s·D/2 + i (D the head dim, i < D/2, s ∈ {0, 1};
 *     k_proj uses the KV heads). Rows are read back through the inverse map, as Hugging Face's own
 *     GGUF loader does.
 *   - Llama-3 rope scaling: llama.cpp drops the `rope_scaling` dict and stores the per-frequency
 *     divisors it implies as the tensor `rope_freqs.weight`. The llama3 parameters are recovered
 *     from it (see `ropeScalingFromFreqFactors`) and checked to reproduce every stored factor.
 *     Linear scaling comes from `llama.rope.scaling.*` metadata; YaRN is refused.
 *
 * qwen2 adds `blk.N.attn_{q,k,v}.bias` (Qwen2's q/k/v biases), qwen3 `blk.N.attn_{q,k}_norm`
 * (per-head q/k RMSNorm, with `qwen3.attention.key_length` as the head size); llama.cpp writes
 * both families' q/k rows in Hugging Face's order (NEOX rotary), so only llama rows are
 * un-permuted. phi3 (Phi-3 / Phi-4-mini) holds `blk.N.attn_qkv` (q, k, v rows stacked) and
 * `blk.N.ffn_up` (gate rows, then up: Hugging Face's gate_up_proj; there is no ffn_gate), split
 * into their Hugging Face parts (src/convert/fused.ts); `phi3.rope.dimension_count` below the
 * head size is partial rotary; `rope_factors_short` / `rope_factors_long` with
 * `phi3.rope.scaling.original_context_length` (and `attn_factor`) are longrope, chosen per text
 * by its length as transformers does (llama.cpp chooses once, by the context size it runs with);
 * `phi3.attention.sliding_window` a window in every layer. gemma2 / gemma3 (Gemma 2, Gemma 3
 * text) hold `blk.N.post_attention_norm` (of the attention output), `ffn_norm` (Hugging Face's
 * pre_feedforward_layernorm), `post_ffw_norm` and, for gemma3, `attn_q_norm` / `attn_k_norm`,
 * every norm stored as 1 + w (read back as stored − 1, as transformers' GGUF loader does; the
 * graph scales by 1 + w), q/k rows in Hugging Face's order; what the file leaves out is taken
 * as llama.cpp takes it: the attention scale head_dim^−½ ((hidden / heads)^−½ for the 27B
 * models: 46 layers for gemma2, 62 for gemma3), the sliding layers every other one (gemma2) or
 * five of six (gemma3) unless `{arch}.attention.sliding_window_pattern` says otherwise, gemma2's
 * soft-caps 50 / 30 and window 4096 when absent, gemma3's sliding layers rotating with base
 * 10000 unscaled (its rope_freq_base and linear scaling are the full layers'). Anything else (another `general.architecture`, named with what lobes' graphs lack
 * where it is known, experts, other biases, partial rotary, per-layer sizes, unknown tensors) is
 * refused with a one-line error naming the file and the key or tensor, never silently dropped.
 */
import { openGguf, type GgufFile, type GgufTensorInfo } from '../formats/gguf.js';
import { GGUF_KEYS as K, GgufMeta, plainGgufValue, type GgufKey } from '../formats/gguf-meta.js';
import { ggmlType, DEQUANTIZABLE } from '../formats/ggml.js';
import { ModelError } from '../util/errors.js';
import type { LlamaSpec, LlamaWeightSource, NbitsBlocks } from './llama-onnx/index.js';
import { phi3Parts, SplitWeightSource } from './fused.js';
import { GgufWeightSource, type MappedWeight } from './gguf-weights.js';
import { shortFloat32 } from './rope-scaling.js';
import { Hparams, longropeOf, PHI3_KEYS, ropeScalingOf } from './gguf-hparams.js';

export { GgufWeightSource, ggufRowOf, hfRowOf, type MappedWeight } from './gguf-weights.js';
export { ropeScalingFromFreqFactors, shortFloat32 } from './rope-scaling.js';

/** A llama GGUF opened for conversion. Call `close()` when done. */
export interface GgufLlama {
  file: string;
  gguf: GgufFile;
  spec: LlamaSpec;
  /** The weights under Hugging Face names (phi3: the fused tensors' parts; gemma: norm weights as transformers holds them). */
  weights: GgufWeightSource | SplitWeightSource | GemmaNormSource;
  /** Every weight the file holds under its Hugging Face name, in layer order (phi3: qkv_proj, gate_up_proj). */
  mapped: MappedWeight[];
  close(): void;
}

/** The GGUF architectures converted, each with what it adds to the Llama graph. */
export const GGUF_ARCHITECTURES = ['llama', 'qwen2', 'qwen3', 'phi3', 'gemma2', 'gemma3'] as const;
export type GgufArchitecture = (typeof GGUF_ARCHITECTURES)[number];

/** Tensor names of each architecture (anything else in the file is refused). */
const KNOWN_TENSOR: Record<GgufArchitecture, RegExp> = {
  llama:
    /^(token_embd|output_norm|output|rope_freqs)\.weight$|^blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight$/,
  qwen2:
    /^(token_embd|output_norm|output)\.weight$|^blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight$|^blk\.\d+\.attn_[qkv]\.bias$/,
  qwen3:
    /^(token_embd|output_norm|output)\.weight$|^blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|attn_q_norm|attn_k_norm|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight$/,
  phi3:
    /^(token_embd|output_norm|output|rope_factors_long|rope_factors_short)\.weight$|^blk\.\d+\.(attn_norm|attn_qkv|attn_output|ffn_norm|ffn_up|ffn_down)\.weight$/,
  gemma2:
    /^(token_embd|output_norm|output)\.weight$|^blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|post_attention_norm|ffn_norm|ffn_gate|ffn_up|ffn_down|post_ffw_norm)\.weight$/,
  gemma3:
    /^(token_embd|output_norm|output)\.weight$|^blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|attn_q_norm|attn_k_norm|post_attention_norm|ffn_norm|ffn_gate|ffn_up|ffn_down|post_ffw_norm)\.weight$/,
};

/** Gemma keys beyond the shared table (llama.cpp's names). */
const GEMMA_KEYS = {
  attnSoftcap: { key: '{arch}.attn_logit_softcapping', type: 'number' } as GgufKey<'number'>,
  finalSoftcap: { key: '{arch}.final_logit_softcapping', type: 'number' } as GgufKey<'number'>,
  slidingWindow: { key: '{arch}.attention.sliding_window', type: 'int' } as GgufKey<'int'>,
  swaPattern: '{arch}.attention.sliding_window_pattern',
};

/** llama.cpp's layer count of the 27B Gemmas, whose attention scale is (hidden / heads)^−½ rather than head_dim^−½. */
const GEMMA_27B_LAYERS: Record<string, number> = { gemma2: 46, gemma3: 62 };

/**
 * A Gemma GGUF's weights with llama.cpp's norm storage undone: its converter writes every
 * RMSNorm weight (…norm.weight) as 1 + w, so w is read back as stored − 1 (in float32, as
 * transformers' GGUF loader does); the graph applies 1 + w again.
 */
export class GemmaNormSource implements LlamaWeightSource {
  constructor(private readonly src: GgufWeightSource) {}
  private static isNorm = (name: string) => /norm\.weight$/.test(name);
  shape(name: string): number[] {
    return this.src.shape(name);
  }
  rows(name: string, r0: number, r1: number): Float32Array {
    const v = this.src.rows(name, r0, r1);
    if (GemmaNormSource.isNorm(name)) { for (let i = 0; i < v.length; i++) v[i] = v[i]! - 1; }
    return v;
  }
  rowsInto(name: string, r0: number, r1: number, out: Float32Array): Float32Array {
    if (GemmaNormSource.isNorm(name)) return this.rows(name, r0, r1);
    return this.src.rowsInto(name, r0, r1, out);
  }
  nbits(name: string): NbitsBlocks | null {
    return this.src.nbits(name);
  }
}

/** What lobes' graphs lack for other llama.cpp architectures (refused by name). */
const REFUSED_ARCHITECTURES: Record<string, string> = {
  qwen2moe: 'mixture-of-experts MLPs',
  qwen3moe: 'mixture-of-experts MLPs',
  'gpt-oss': 'attention sinks and mixture-of-experts MLPs',
  deepseek2: 'mixture-of-experts MLPs and multi-head latent attention',
};

/**
 * The Hugging Face name of every weight, with its GGUF tensor name and whether its rows are in
 * llama.cpp's rotary order. Only `llama` files are permuted: llama.cpp's converter writes qwen2
 * and qwen3 (NEOX rotary) in Hugging Face's own row order.
 */
function weightNames(layers: number, tied: boolean,
  arch: GgufArchitecture = 'llama'): Array<[string, string, 'q' | 'k' | null]>
{
  const perm = arch === 'llama';
  const out: Array<[string, string, 'q' | 'k' | null]> = [['model.embed_tokens.weight', 'token_embd.weight', null]];
  for (let i = 0; i < layers; i++) {
    const b = `blk.${i}`;
    const m = `model.layers.${i}`;
    if (arch === 'phi3') {
      out.push(
        [`${m}.input_layernorm.weight`, `${b}.attn_norm.weight`, null],
        [`${m}.self_attn.qkv_proj.weight`, `${b}.attn_qkv.weight`, null],
        [`${m}.self_attn.o_proj.weight`, `${b}.attn_output.weight`, null],
        [`${m}.post_attention_layernorm.weight`, `${b}.ffn_norm.weight`, null],
        [`${m}.mlp.gate_up_proj.weight`, `${b}.ffn_up.weight`, null],
        [`${m}.mlp.down_proj.weight`, `${b}.ffn_down.weight`, null],
      );
      continue;
    }
    out.push(
      [`${m}.input_layernorm.weight`, `${b}.attn_norm.weight`, null],
      [`${m}.self_attn.q_proj.weight`, `${b}.attn_q.weight`, perm ? 'q' : null],
      [`${m}.self_attn.k_proj.weight`, `${b}.attn_k.weight`, perm ? 'k' : null],
      [`${m}.self_attn.v_proj.weight`, `${b}.attn_v.weight`, null],
    );
    if (arch === 'qwen2') {
      for (const p of ['q', 'k', 'v']) out.push([`${m}.self_attn.${p}_proj.bias`, `${b}.attn_${p}.bias`, null]);
    }
    if (arch === 'qwen3' || arch === 'gemma3') {
      for (const p of ['q', 'k']) out.push([`${m}.self_attn.${p}_norm.weight`, `${b}.attn_${p}_norm.weight`, null]);
    }
    out.push([`${m}.self_attn.o_proj.weight`, `${b}.attn_output.weight`, null]);
    // Gemma: post_attention_norm normalizes the attention output, ffn_norm is pre_feedforward_layernorm.
    if (arch === 'gemma2' || arch === 'gemma3') {
      out.push(
        [`${m}.post_attention_layernorm.weight`, `${b}.post_attention_norm.weight`, null],
        [`${m}.pre_feedforward_layernorm.weight`, `${b}.ffn_norm.weight`, null],
        [`${m}.post_feedforward_layernorm.weight`, `${b}.post_ffw_norm.weight`, null],
      );
    } else out.push([`${m}.post_attention_layernorm.weight`, `${b}.ffn_norm.weight`, null]);
    out.push(
      [`${m}.mlp.gate_proj.weight`, `${b}.ffn_gate.weight`, null],
      [`${m}.mlp.up_proj.weight`, `${b}.ffn_up.weight`, null],
      [`${m}.mlp.down_proj.weight`, `${b}.ffn_down.weight`, null],
    );
  }
  out.push(['model.norm.weight', 'output_norm.weight', null]);
  if (!tied) out.push(['lm_head.weight', 'output.weight', null]);
  return out;
}

/**
 * Open a GGUF file as a Llama model: checks the architecture, the hyperparameters, every tensor's
 * name, shape and type, and derives the spec. Throws a one-line LobesError for anything it
 * cannot convert exactly; nothing is read beyond the header and `rope_freqs`.
 */
export function openGgufLlama(file: string): GgufLlama {
  const g = openGguf(file);
  try {
    const model = describeLlama(g);
    return { ...model, file, gguf: g, close: () => g.close() };
  } catch (e) {
    g.close();
    throw e;
  }
}

function describeLlama(g: GgufFile): { spec: LlamaSpec; weights: GgufLlama['weights']; mapped: MappedWeight[] } {
  const file = g.file;
  const meta: GgufMeta = new GgufMeta(g.metadata, file);
  if (!meta.has(K.architecture))
    throw new ModelError(`no ${K.architecture.key} key: not a llama.cpp model file`, { file, where: 'metadata' });
  const archName = meta.read(K.architecture)!;
  if (archName === 'gemma') {
    throw new ModelError(
      'architecture "gemma" (Gemma 1) is not converted from GGUF: its conversion has no oracle (transformers\' GGUF loader does not read gemma files), so it is not offered untested',
      { file, where: K.architecture.key,
        hint: 'convert the Hugging Face checkpoint folder instead (model_type gemma converts)' },
    );
  }
  if (!(GGUF_ARCHITECTURES as readonly string[]).includes(archName)) {
    const lacks = REFUSED_ARCHITECTURES[archName];
    throw new ModelError(
      lacks
        ? `architecture "${archName}" is not converted: lobes' graphs do not express its ${lacks}`
        : `architecture "${archName}" is not supported: lobes converts ${
          GGUF_ARCHITECTURES.join(', ')
        } GGUFs (Llama 2/3.x, Mistral 7B, TinyLlama, SmolLM, Qwen2/2.5, Qwen3, Phi-3/Phi-4-mini, Gemma 2, Gemma 3 text)`,
      { file, where: K.architecture.key, hint: 'see docs/models-supported.md' },
    );
  }
  const arch = archName as GgufArchitecture;
  const hp = new Hparams(g);
  const experts = meta.read(K.expertCount) ?? 0;
  if (experts > 0) {
    throw new ModelError(
      `mixture-of-experts model (${
        meta.key(K.expertCount)
      } = ${experts}) is not supported: lobes converts dense Llama models`,
      { file, where: meta.key(K.expertCount) },
    );
  }
  const layers = hp.int(K.blockCount);
  const hidden = hp.int(K.embeddingLength);
  const intermediate = hp.int(K.feedForwardLength);
  const heads = hp.int(K.headCount);
  const kvHeads = hp.int(K.headCountKv, heads);
  if (heads % kvHeads !== 0)
    throw new ModelError(`${heads} attention heads are not a multiple of ${kvHeads} KV heads`, { file,
      where: meta.key(K.headCountKv) });
  const headDim = hp.int(K.keyLength, Math.floor(hidden / heads));
  const valueDim = hp.int(K.valueLength, headDim);
  if (valueDim !== headDim)
    throw new ModelError(`value head size ${valueDim} differs from key head size ${headDim}: not a Llama attention`, {
      file,
      where: meta.key(K.valueLength),
    });
  if (headDim % 2 !== 0)
    throw new ModelError(`head dim ${headDim} is odd: rotary embeddings need pairs`, { file,
      where: meta.key(K.keyLength) });
  const ropeDims = hp.int(K.ropeDimensionCount, headDim);
  if (arch === 'phi3' && (ropeDims > headDim || ropeDims % 2 !== 0))
    throw new ModelError(
      `rotates ${ropeDims} of ${headDim} head dims: rotary embeddings need an even number up to the head size`,
      { file, where: meta.key(K.ropeDimensionCount) },
    );
  if (ropeDims !== headDim && arch !== 'phi3') {
    throw new ModelError(`partial rotary embeddings (${ropeDims} of ${headDim} head dims) are not Llama's`, { file,
      where: meta.key(K.ropeDimensionCount), hint: 'lobes converts models that rotate the whole head' });
  }
  const ropeTheta = shortFloat32(hp.num(K.ropeFreqBase, 10000));
  const rmsNormEps = shortFloat32(hp.num(K.rmsNormEps));
  const maxPositions = hp.int(K.contextLength);

  // Tensors: every name known, every weight present, shapes as the hyperparameters say.
  for (const t of g.tensors) {
    if (!KNOWN_TENSOR[arch].test(t.name)) {
      throw new ModelError(
        `is not part of the ${arch} architecture lobes converts (no ${
          arch === 'qwen2' ? 'o_proj biases' : 'biases'
        }, experts or extra tensors)`,
        { file, where: `tensor ${JSON.stringify(t.name)}`,
          hint: 'export the original Hugging Face checkpoint to ONNX instead' },
      );
    }
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m && Number(m[1]) >= layers)
      throw new ModelError(`belongs to layer ${m[1]} but llama.block_count is ${layers}`, { file,
        where: `tensor ${JSON.stringify(t.name)}` });
  }
  const tied = !g.hasTensor('output.weight');
  const embed = requireTensor(g, 'token_embd.weight');
  if (embed.dims.length !== 2 || embed.dims[0] !== hidden) throw shapeError(g, embed, `[${hidden}, vocab]`);
  const vocab = embed.dims[1];
  const vocabSize = meta.read(K.vocabSize);
  if (vocabSize !== undefined && vocabSize !== vocab) {
    throw new ModelError(`${meta.key(K.vocabSize)} is ${vocabSize} but token_embd.weight has ${vocab} rows`, { file,
      where: meta.key(K.vocabSize) });
  }
  const tokenList = meta.read(K.tokens);
  if (tokenList) {
    const nTok = tokenList.length;
    if (nTok !== vocab)
      throw new ModelError(`${nTok} tokens but token_embd.weight has ${vocab} rows`, { file, where: K.tokens.key,
        hint: 'the file is inconsistent; download it again' });
  }

  const q = heads * headDim;
  const kv = kvHeads * headDim;
  const want: Record<string, number[]> = {
    attn_norm: [hidden],
    ffn_norm: [hidden],
    attn_q: [hidden, q],
    attn_k: [hidden, kv],
    attn_v: [hidden, kv],
    attn_output: [q, hidden],
    ffn_gate: [hidden, intermediate],
    ffn_up: [hidden, arch === 'phi3' ? 2 * intermediate : intermediate],
    ffn_down: [intermediate, hidden],
    attn_qkv: [hidden, q + 2 * kv],
    'attn_q.bias': [q],
    'attn_k.bias': [kv],
    'attn_v.bias': [kv],
    attn_q_norm: [headDim],
    attn_k_norm: [headDim],
    post_attention_norm: [hidden],
    post_ffw_norm: [hidden],
  };
  const mapped: MappedWeight[] = [];
  for (const [name, tname, perm] of weightNames(layers, tied, arch)) {
    const t = requireTensor(g, tname);
    const part = /^blk\.\d+\.(\w+)\.weight$/.exec(tname)?.[1] ?? /^blk\.\d+\.(\w+\.bias)$/.exec(tname)?.[1];
    const dims = part ? want[part] : tname === 'output_norm.weight' ? [hidden] : [hidden, vocab];
    if (t.dims.length !== dims.length || t.dims.some((d, i) => d !== dims[i]))
      throw shapeError(g, t, `[${dims.join(', ')}]`);
    const ty = ggmlType(t.type);
    if (!ty?.dequantizable) {
      throw new ModelError(`GGML type ${t.typeName} cannot be converted: lobes decodes ${DEQUANTIZABLE.join(', ')}`, {
        file,
        where: `tensor ${JSON.stringify(tname)}`,
        hint:
          're-quantize the model with llama-quantize (e.g. Q4_K_M, Q8_0 or F16), or pick another quantization of the same model',
      });
    }
    mapped.push({ name, tensor: t, permutedHeads: perm === 'q' ? heads : perm === 'k' ? kvHeads : 0,
      shape: [...dims].reverse() });
  }

  const ropeScaling = arch === 'phi3' ? longropeOf(g, hp, ropeDims) : ropeScalingOf(g, hp, ropeTheta, headDim);
  let slidingWindow: number | null = null;
  if (arch === 'phi3' && hp.has(PHI3_KEYS.slidingWindow)) slidingWindow = hp.int(PHI3_KEYS.slidingWindow);
  let gemma: LlamaSpec['gemma'];
  if (arch === 'gemma2' || arch === 'gemma3') {
    const g2 = arch === 'gemma2';
    // What llama.cpp reads or assumes for these architectures (llama-model.cpp).
    const sliding = gemmaSlidingLayers(g, meta, layers, g2 ? 2 : 6);
    if (sliding.some((x) => x))
      slidingWindow = g2 ? hp.int(GEMMA_KEYS.slidingWindow, 4096) : hp.int(GEMMA_KEYS.slidingWindow);
    gemma = {
      postNorms: true,
      queryPreAttnScalar: layers === GEMMA_27B_LAYERS[arch] ? hidden / heads : headDim,
      attnSoftcap: g2 ? hp.num(GEMMA_KEYS.attnSoftcap, 50) : null,
      finalSoftcap: g2 ? hp.num(GEMMA_KEYS.finalSoftcap, 30) : null,
      sliding,
      // gemma3's sliding layers rotate with base 10000 and no scaling (llama.cpp's rope_freq_base_train_swa).
      ...(g2 ? {} : { localRope: { theta: 10000, scaling: null } }),
    };
  }
  const tok = (key: GgufKey<'int'>): number | null => meta.read(key) ?? null;
  const eos = tok(K.eosTokenId);
  const eot = tok(K.eotTokenId);
  const eom = tok(K.eomTokenId);
  const stops = [...new Set([eos, eot, eom].filter((x): x is number => x !== null))];
  const spec: LlamaSpec = {
    layers,
    hidden,
    intermediate,
    heads,
    kvHeads,
    headDim,
    vocab,
    rmsNormEps,
    ropeTheta,
    ropeScaling,
    maxPositions,
    tiedEmbeddings: tied,
    bosTokenId: tok(K.bosTokenId),
    eosTokenId: stops.length > 1 ? stops : (stops[0] ?? null),
    padTokenId: tok(K.paddingTokenId),
    modelType: arch,
    ...(arch === 'qwen2' ? { attnBias: true } : {}),
    ...(arch === 'qwen3' || arch === 'gemma3' ? { qkNorm: true } : {}),
    ...(ropeDims !== headDim ? { rotaryDim: ropeDims } : {}),
    ...(slidingWindow ? { slidingWindow } : {}),
    ...(gemma ? { gemma } : {}),
  };
  const src = new GgufWeightSource(g, mapped, headDim);
  const weights = arch === 'phi3'
    ? new SplitWeightSource(src, phi3Parts(spec))
    : gemma
    ? new GemmaNormSource(src)
    : src;
  return { spec, weights, mapped };
}

/**
 * Which layers of a Gemma GGUF are sliding-window layers: `{arch}.attention.sliding_window_pattern`
 * (a period n: layer i slides when i mod n < n − 1; or one bool per layer), else llama.cpp's
 * fixed period (2 for gemma2, 6 for gemma3).
 */
function gemmaSlidingLayers(g: GgufFile, meta: GgufMeta, layers: number, period: number): boolean[] {
  const key = GEMMA_KEYS.swaPattern.replace('{arch}', meta.read(K.architecture)!);
  const v = plainGgufValue(g.get(key));
  const place = { file: g.file, where: `metadata ${JSON.stringify(key)}` };
  if (Array.isArray(v)) {
    if (v.length !== layers || v.some((x) => typeof x !== 'boolean'))
      throw new ModelError(`must be one boolean per layer (${layers}), got ${v.length} values`, place);
    return v as boolean[];
  }
  let n = period;
  if (v !== undefined && v !== null) {
    n = typeof v === 'bigint' ? Number(v) : (v as number);
    if (!Number.isInteger(n) || n < 1)
      throw new ModelError(`must be a positive integer period or one boolean per layer, got ${String(v)}`, place);
  }
  return Array.from({ length: layers }, (_, i) => i % n < n - 1);
}

function requireTensor(g: GgufFile, name: string): GgufTensorInfo {
  if (!g.hasTensor(name))
    throw new ModelError(`tensor ${JSON.stringify(name)} is missing (${g.tensors.length} tensors in the file)`, {
      file: g.file,
      hint: 'the file is incomplete or not a llama.cpp model file',
    });
  return g.tensor(name);
}

function shapeError(g: GgufFile, t: GgufTensorInfo, want: string): ModelError {
  return new ModelError(`dims [${t.dims.join(', ')}] do not match the hyperparameters (${want} in GGUF order)`, {
    file: g.file,
    where: `tensor ${JSON.stringify(t.name)}`,
  });
}
