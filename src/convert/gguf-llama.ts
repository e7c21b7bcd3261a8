/**
 * A llama-architecture GGUF (llama.cpp, Ollama, LM Studio) as a Llama spec and a weight source
 * for the ONNX writer (src/models/llama-onnx): the hyperparameters from `llama.*` metadata, the
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
 * Anything outside the plain Llama architecture (another `general.architecture`, experts,
 * biases, partial rotary, per-layer sizes, unknown tensors) is refused with a one-line error
 * naming the file and the key or tensor, never silently dropped.
 */
import { openGguf, type GgufFile, type GgufTensorInfo } from '../formats/gguf.js';
import { ggmlType, DEQUANTIZABLE } from '../formats/ggml.js';
import { ggmlToMatMulNBits, NBITS_MAPPING } from '../formats/ggml-nbits.js';
import { LobesError } from '../util/errors.js';
import type { LlamaSpec, LlamaWeightSource, NbitsBlocks } from '../models/llama-onnx/index.js';

/** How one Hugging Face weight is stored in the GGUF. */
export interface MappedWeight {
  /** The Hugging Face name (model.layers.3.self_attn.q_proj.weight, ...). */
  name: string;
  tensor: GgufTensorInfo;
  /** Heads whose rows llama.cpp reordered (q_proj: heads, k_proj: KV heads); 0 for every other weight. */
  permutedHeads: number;
  /** HF shape: [rows, cols] for matrices, [n] for norms. */
  shape: number[];
}

/** A llama GGUF opened for conversion. Call `close()` when done. */
export interface GgufLlama {
  file: string;
  gguf: GgufFile;
  spec: LlamaSpec;
  weights: GgufWeightSource;
  /** Every weight the writer will ask for, in layer order. */
  mapped: MappedWeight[];
  close(): void;
}

/** Metadata keys under `llama.` that lobes reads or knows to be harmless. */
const KNOWN_TENSOR = /^(token_embd|output_norm|output|rope_freqs)\.weight$|^blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight$/;

/** The shortest decimal that rounds to the same float32 (1e-5 instead of 9.999999747e-6). */
export function shortFloat32(x: number): number {
  const f = Math.fround(x);
  for (let p = 1; p <= 9; p++) {
    const y = Number(f.toPrecision(p));
    if (Math.fround(y) === f) return y;
  }
  return f;
}

/** Reads `llama.*` hyperparameters with one-line errors naming the file and the key. */
class Hparams {
  constructor(private readonly g: GgufFile) {}

  private fail(key: string, cause: string, hint?: string): never {
    throw new LobesError(cause, { file: this.g.file, where: `metadata ${JSON.stringify(key)}`, hint });
  }

  has(key: string): boolean {
    return this.g.has(`llama.${key}`);
  }

  /** A positive integer hyperparameter (`fallback` when absent; required when there is none). */
  int(key: string, fallback?: number): number {
    const k = `llama.${key}`;
    const v = this.g.get(k);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      this.fail(k, 'missing: every llama GGUF has it', 'the file is incomplete or not a llama.cpp model file');
    }
    if (v.type === 'array') this.fail(k, 'is an array (a size per layer): lobes converts models whose layers all have the same shape');
    const n = this.g.getInt(k);
    if (n < 1) this.fail(k, `must be positive, got ${n}`);
    return n;
  }

  /** A positive number hyperparameter. */
  num(key: string, fallback?: number): number {
    const k = `llama.${key}`;
    if (!this.g.has(k)) {
      if (fallback !== undefined) return fallback;
      this.fail(k, 'missing: every llama GGUF has it', 'the file is incomplete or not a llama.cpp model file');
    }
    const x = this.g.getNumber(k);
    if (!(x > 0) || !Number.isFinite(x)) this.fail(k, `must be a positive number, got ${x}`);
    return x;
  }

  str(key: string): string | undefined {
    const k = `llama.${key}`;
    return this.g.has(k) ? this.g.getString(k) : undefined;
  }
}

/**
 * Recover Hugging Face's llama3 `rope_scaling` from llama.cpp's `rope_freqs` factors.
 *
 * llama.cpp divides frequency i (θ^(-2i/D)) by factor f_i, where for wavelength w = 2π / freq:
 * f = 1 when w < L / high, f = factor when w > L / low, and in between
 * f = 1 / ((1 − s) / factor + s) with s = (L / w − low) / (high − low). The factors therefore
 * fix `factor` (the plateau) and, through the medium band, the line s = A / w + B with
 * A = L / (high − low), B = −low / (high − low); any L (original_max_position_embeddings) with
 * low = −B L / A, high = low + L / A gives the same factors. L is taken from
 * `llama.rope.scaling.original_context_length` when present, else Llama-3's 8192; the result is
 * recomputed in float64, rounded to float32 and compared with every stored factor.
 * Returns null when every factor is 1 (no scaling); throws when the factors do not follow the
 * llama3 rule.
 */
export function ropeScalingFromFreqFactors(factors: Float32Array, theta: number, headDim: number, originalContext: number | null, place: { file: string; where: string }): Record<string, unknown> | null {
  const half = headDim / 2;
  if (factors.length !== half) throw new LobesError(`holds ${factors.length} factors but the head dim ${headDim} has ${half} rotary frequencies`, place);
  let factor = 1;
  for (const f of factors) {
    if (!(f >= 1) || !Number.isFinite(f)) throw new LobesError(`factor ${f} is not a number >= 1: not llama3 rope scaling`, { ...place, hint: 'lobes converts llama3-style rope_freqs only' });
    factor = Math.max(factor, f);
  }
  if (factor === 1) return null;
  const wave = (i: number) => (2 * Math.PI) / Math.pow(theta, (-2 * i) / headDim);
  const L = originalContext ?? 8192;
  const candidates: Array<{ low: number; high: number }> = [{ low: 1, high: 4 }];
  // Fit the medium band: s_i = A / w_i + B.
  const pts: Array<[number, number]> = [];
  for (let i = 0; i < half; i++) {
    const f = factors[i];
    if (f > 1 && f < factor && Math.abs(f - factor) > 1e-6 * factor && Math.abs(f - 1) > 1e-6) pts.push([1 / wave(i), (1 / f - 1 / factor) / (1 - 1 / factor)]);
  }
  if (pts.length >= 2) {
    const n = pts.length;
    let sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const [x, y] of pts) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const A = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    const B = (sy - A * sx) / n;
    if (A > 0) {
      const low = (-B * L) / A;
      const high = low + L / A;
      // Prefer short decimals (Llama-3's 1 and 4) when they reproduce the factors as well.
      for (const p of [3, 4, 6, 8]) candidates.push({ low: Number(low.toPrecision(p)), high: Number(high.toPrecision(p)) });
      candidates.push({ low, high });
    }
  }
  for (const c of candidates) {
    if (!(c.high > c.low && c.low > 0)) continue;
    if (llama3Matches(factors, theta, headDim, factor, c.low, c.high, L)) {
      return { rope_type: 'llama3', factor: shortFloat32(factor), low_freq_factor: c.low, high_freq_factor: c.high, original_max_position_embeddings: L };
    }
  }
  throw new LobesError(`the ${half} rope frequency factors do not follow llama3 rope scaling (plateau ${factor}, ${pts.length} factors in between)`, {
    ...place,
    hint: 'lobes recovers llama3 scaling only; convert the original Hugging Face checkpoint instead',
  });
}

/** llama3 factors (computed as llama.cpp's converter does, in float64, stored as float32) equal the stored ones within 2 float32 ulps. */
function llama3Matches(factors: Float32Array, theta: number, d: number, factor: number, low: number, high: number, L: number): boolean {
  const lowWave = L / low;
  const highWave = L / high;
  for (let i = 0; i < d / 2; i++) {
    const freq = 1 / Math.pow(theta, (2 * i) / d);
    const w = (2 * Math.PI) / freq;
    let f: number;
    if (w < highWave) f = 1;
    else if (w > lowWave) f = factor;
    else {
      const s = (L / w - low) / (high - low);
      f = 1 / ((1 - s) / factor + s);
    }
    if (Math.abs(Math.fround(f) - factors[i]) > 2.5e-7 * factors[i]) return false;
  }
  return true;
}

/** The Hugging Face name of every Llama weight, with its GGUF tensor name. */
function weightNames(layers: number, tied: boolean): Array<[string, string, 'q' | 'k' | null]> {
  const out: Array<[string, string, 'q' | 'k' | null]> = [['model.embed_tokens.weight', 'token_embd.weight', null]];
  for (let i = 0; i < layers; i++) {
    const b = `blk.${i}`;
    const m = `model.layers.${i}`;
    out.push(
      [`${m}.input_layernorm.weight`, `${b}.attn_norm.weight`, null],
      [`${m}.self_attn.q_proj.weight`, `${b}.attn_q.weight`, 'q'],
      [`${m}.self_attn.k_proj.weight`, `${b}.attn_k.weight`, 'k'],
      [`${m}.self_attn.v_proj.weight`, `${b}.attn_v.weight`, null],
      [`${m}.self_attn.o_proj.weight`, `${b}.attn_output.weight`, null],
      [`${m}.post_attention_layernorm.weight`, `${b}.ffn_norm.weight`, null],
      [`${m}.mlp.gate_proj.weight`, `${b}.ffn_gate.weight`, null],
      [`${m}.mlp.up_proj.weight`, `${b}.ffn_up.weight`, null],
      [`${m}.mlp.down_proj.weight`, `${b}.ffn_down.weight`, null],
    );
  }
  out.push(['model.norm.weight', 'output_norm.weight', null]);
  if (!tied) out.push(['lm_head.weight', 'output.weight', null]);
  return out;
}

/** The GGUF tensor name of a Hugging Face Llama weight name (model.layers.3.mlp.up_proj.weight → blk.3.ffn_up.weight), or null. */
export function ggufNameOf(hfName: string): string | null {
  const fixed: Record<string, string> = {
    'model.embed_tokens.weight': 'token_embd.weight',
    'model.norm.weight': 'output_norm.weight',
    'lm_head.weight': 'output.weight',
  };
  if (fixed[hfName]) return fixed[hfName];
  const m = /^model\.layers\.(\d+)\.(input_layernorm|post_attention_layernorm|self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.weight$/.exec(hfName);
  if (!m) return null;
  const part: Record<string, string> = {
    input_layernorm: 'attn_norm',
    post_attention_layernorm: 'ffn_norm',
    'self_attn.q_proj': 'attn_q',
    'self_attn.k_proj': 'attn_k',
    'self_attn.v_proj': 'attn_v',
    'self_attn.o_proj': 'attn_output',
    'mlp.gate_proj': 'ffn_gate',
    'mlp.up_proj': 'ffn_up',
    'mlp.down_proj': 'ffn_down',
  };
  return `blk.${m[1]}.${part[m[2]]}.weight`;
}

/** GGUF row holding HF row `r` of a weight whose rows llama.cpp reordered per head of `d` rows. */
export function ggufRowOf(r: number, d: number): number {
  const h = Math.floor(r / d);
  const j = r - h * d;
  const halfD = d / 2;
  return j < halfD ? h * d + 2 * j : h * d + 2 * (j - halfD) + 1;
}

/** HF row stored at GGUF row `g` (the inverse of ggufRowOf). */
export function hfRowOf(g: number, d: number): number {
  const h = Math.floor(g / d);
  const p = g - h * d;
  return h * d + (p & 1) * (d / 2) + (p >> 1);
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

function describeLlama(g: GgufFile): { spec: LlamaSpec; weights: GgufWeightSource; mapped: MappedWeight[] } {
  const file = g.file;
  if (!g.has('general.architecture')) throw new LobesError('no general.architecture key: not a llama.cpp model file', { file, where: 'metadata' });
  const arch = g.getString('general.architecture');
  if (arch !== 'llama') {
    throw new LobesError(`architecture "${arch}" is not supported: lobes converts llama-architecture GGUFs (Llama 2/3.x, Mistral 7B, TinyLlama, SmolLM)`, {
      file,
      where: 'general.architecture',
      hint: 'export the original Hugging Face checkpoint to ONNX instead',
    });
  }
  const hp = new Hparams(g);
  if (hp.has('expert_count') && g.getInt('llama.expert_count') > 0) {
    throw new LobesError(`mixture-of-experts model (llama.expert_count = ${g.getInt('llama.expert_count')}) is not supported: lobes converts dense Llama models`, { file, where: 'llama.expert_count' });
  }
  const layers = hp.int('block_count');
  const hidden = hp.int('embedding_length');
  const intermediate = hp.int('feed_forward_length');
  const heads = hp.int('attention.head_count');
  const kvHeads = hp.int('attention.head_count_kv', heads);
  if (heads % kvHeads !== 0) throw new LobesError(`${heads} attention heads are not a multiple of ${kvHeads} KV heads`, { file, where: 'llama.attention.head_count_kv' });
  const headDim = hp.int('attention.key_length', Math.floor(hidden / heads));
  const valueDim = hp.int('attention.value_length', headDim);
  if (valueDim !== headDim) throw new LobesError(`value head size ${valueDim} differs from key head size ${headDim}: not a Llama attention`, { file, where: 'llama.attention.value_length' });
  if (headDim % 2 !== 0) throw new LobesError(`head dim ${headDim} is odd: rotary embeddings need pairs`, { file, where: 'llama.attention.key_length' });
  const ropeDims = hp.int('rope.dimension_count', headDim);
  if (ropeDims !== headDim) {
    throw new LobesError(`partial rotary embeddings (${ropeDims} of ${headDim} head dims) are not Llama's`, { file, where: 'llama.rope.dimension_count', hint: 'lobes converts models that rotate the whole head' });
  }
  const ropeTheta = shortFloat32(hp.num('rope.freq_base', 10000));
  const rmsNormEps = shortFloat32(hp.num('attention.layer_norm_rms_epsilon'));
  const maxPositions = hp.int('context_length');

  // Tensors: every name known, every weight present, shapes as the hyperparameters say.
  for (const t of g.tensors) {
    if (!KNOWN_TENSOR.test(t.name)) {
      throw new LobesError('is not part of the Llama architecture lobes converts (no biases, experts or extra tensors)', { file, where: `tensor ${JSON.stringify(t.name)}`, hint: 'export the original Hugging Face checkpoint to ONNX instead' });
    }
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m && Number(m[1]) >= layers) throw new LobesError(`belongs to layer ${m[1]} but llama.block_count is ${layers}`, { file, where: `tensor ${JSON.stringify(t.name)}` });
  }
  const tied = !g.hasTensor('output.weight');
  const embed = requireTensor(g, 'token_embd.weight');
  if (embed.dims.length !== 2 || embed.dims[0] !== hidden) throw shapeError(g, embed, `[${hidden}, vocab]`);
  const vocab = embed.dims[1];
  if (g.has('llama.vocab_size') && g.getInt('llama.vocab_size') !== vocab) {
    throw new LobesError(`llama.vocab_size is ${g.getInt('llama.vocab_size')} but token_embd.weight has ${vocab} rows`, { file, where: 'llama.vocab_size' });
  }
  if (g.has('tokenizer.ggml.tokens')) {
    const nTok = g.getStringArray('tokenizer.ggml.tokens').length;
    if (nTok !== vocab) throw new LobesError(`${nTok} tokens but token_embd.weight has ${vocab} rows`, { file, where: 'tokenizer.ggml.tokens', hint: 'the file is inconsistent; download it again' });
  }

  const q = heads * headDim;
  const kv = kvHeads * headDim;
  const want: Record<string, number[]> = {
    attn_norm: [hidden], ffn_norm: [hidden], attn_q: [hidden, q], attn_k: [hidden, kv], attn_v: [hidden, kv], attn_output: [q, hidden],
    ffn_gate: [hidden, intermediate], ffn_up: [hidden, intermediate], ffn_down: [intermediate, hidden],
  };
  const mapped: MappedWeight[] = [];
  for (const [name, tname, perm] of weightNames(layers, tied)) {
    const t = requireTensor(g, tname);
    const part = /^blk\.\d+\.(\w+)\.weight$/.exec(tname)?.[1];
    const dims = part ? want[part] : tname === 'output_norm.weight' ? [hidden] : [hidden, vocab];
    if (t.dims.length !== dims.length || t.dims.some((d, i) => d !== dims[i])) throw shapeError(g, t, `[${dims.join(', ')}]`);
    const ty = ggmlType(t.type);
    if (!ty?.dequantizable) {
      throw new LobesError(`GGML type ${t.typeName} cannot be converted: lobes decodes ${DEQUANTIZABLE.join(', ')}`, {
        file,
        where: `tensor ${JSON.stringify(tname)}`,
        hint: 're-quantize the model with llama-quantize (e.g. Q4_K_M, Q8_0 or F16), or pick another quantization of the same model',
      });
    }
    mapped.push({ name, tensor: t, permutedHeads: perm === 'q' ? heads : perm === 'k' ? kvHeads : 0, shape: [...dims].reverse() });
  }

  const ropeScaling = ropeScalingOf(g, hp, ropeTheta, headDim);
  const tok = (key: string): number | null => (g.has(key) ? g.getInt(key) : null);
  const eos = tok('tokenizer.ggml.eos_token_id');
  const eot = tok('tokenizer.ggml.eot_token_id');
  const eom = tok('tokenizer.ggml.eom_token_id');
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
    bosTokenId: tok('tokenizer.ggml.bos_token_id'),
    eosTokenId: stops.length > 1 ? stops : (stops[0] ?? null),
    padTokenId: tok('tokenizer.ggml.padding_token_id'),
    modelType: 'llama',
  };
  return { spec, weights: new GgufWeightSource(g, mapped, headDim), mapped };
}

function requireTensor(g: GgufFile, name: string): GgufTensorInfo {
  if (!g.hasTensor(name)) throw new LobesError(`tensor ${JSON.stringify(name)} is missing (${g.tensors.length} tensors in the file)`, { file: g.file, hint: 'the file is incomplete or not a llama.cpp model file' });
  return g.tensor(name);
}

function shapeError(g: GgufFile, t: GgufTensorInfo, want: string): LobesError {
  return new LobesError(`dims [${t.dims.join(', ')}] do not match the hyperparameters (${want} in GGUF order)`, { file: g.file, where: `tensor ${JSON.stringify(t.name)}` });
}

/** The spec's rope_scaling: llama3 from rope_freqs, linear from metadata, or null. */
function ropeScalingOf(g: GgufFile, hp: Hparams, theta: number, headDim: number): Record<string, unknown> | null {
  const type = hp.str('rope.scaling.type');
  const original = hp.has('rope.scaling.original_context_length') ? hp.int('rope.scaling.original_context_length') : null;
  if (g.hasTensor('rope_freqs.weight')) {
    const t = g.tensor('rope_freqs.weight');
    const place = { file: g.file, where: 'tensor "rope_freqs.weight"' };
    if (t.typeName !== 'F32' || t.dims.length !== 1) throw new LobesError(`expected F32 [${headDim / 2}], got ${t.typeName} [${t.dims.join(', ')}]`, place);
    if (type !== undefined && type !== 'none' && type !== 'llama3') throw new LobesError(`rope_freqs and llama.rope.scaling.type = ${type} together are not supported`, place);
    return ropeScalingFromFreqFactors(g.dequantize(t), theta, headDim, original, place);
  }
  if (type === undefined || type === 'none') {
    // Files from old converters carry linear scaling as rope.scale_linear.
    if (hp.has('rope.scale_linear')) {
      const f = hp.num('rope.scale_linear');
      return f === 1 ? null : { rope_type: 'linear', factor: shortFloat32(f) };
    }
    return null;
  }
  const factor = shortFloat32(hp.num('rope.scaling.factor'));
  if (type === 'linear') return { rope_type: 'linear', factor };
  throw new LobesError(`rope scaling "${type}" is not supported (none, linear, or llama3 through rope_freqs)`, { file: g.file, where: 'llama.rope.scaling.type' });
}

/** Bytes of raw tensor data read at a time. */
const READ_BYTES = 8 << 20;

/**
 * The weights of a llama GGUF under Hugging Face names: rows dequantized to float32 a range at a
 * time (Q/K rows un-permuted), and the MatMulNBits form of quantized projections whose GGML type
 * maps onto it exactly.
 */
export class GgufWeightSource implements LlamaWeightSource {
  private readonly byName: Map<string, MappedWeight>;
  /** The last head-aligned row range dequantized for a permuted weight (the writer reads in increasing ranges). */
  private cache: { name: string; g0: number; g1: number; data: Float32Array } | null = null;

  constructor(
    private readonly g: GgufFile,
    mapped: MappedWeight[],
    private readonly headDim: number,
  ) {
    this.byName = new Map(mapped.map((m) => [m.name, m]));
  }

  private get(name: string): MappedWeight {
    const m = this.byName.get(name);
    if (!m) throw new LobesError(`no weight named ${JSON.stringify(name)} in this Llama GGUF`, { file: this.g.file });
    return m;
  }

  /** The GGUF tensor behind a Hugging Face weight name. */
  tensorOf(name: string): GgufTensorInfo {
    return this.get(name).tensor;
  }

  /** HF shape: [rows, cols] (norms [n]). */
  shape(name: string): number[] {
    return [...this.get(name).shape];
  }

  /** HF rows [r0, r1) as float32, row-major (Q/K rows in Hugging Face order); a 1-D weight [n] is n rows of one value. */
  rows(name: string, r0: number, r1: number): Float32Array {
    const m = this.get(name);
    const t = m.tensor;
    const vector = t.dims.length === 1;
    const n = vector ? t.dims[0] : t.rows;
    if (!(Number.isInteger(r0) && Number.isInteger(r1) && r0 >= 0 && r1 <= n && r0 <= r1)) {
      throw new LobesError(`rows [${r0}, ${r1}) out of range for ${n} rows`, { file: this.g.file, where: `tensor ${JSON.stringify(t.name)}` });
    }
    // A 1-D weight [n] is n rows of one value.
    if (vector) return this.g.dequantize(t).slice(r0, r1);
    const cols = t.dims[0];
    if (m.permutedHeads === 0) return this.g.dequantize(t, r0, r1);
    const d = this.headDim;
    const g0 = Math.floor(r0 / d) * d;
    const g1 = Math.min(t.rows, Math.ceil(r1 / d) * d);
    let src: Float32Array;
    let base: number;
    const c = this.cache;
    if (c && c.name === name && c.g0 <= g0 && c.g1 >= g1) {
      src = c.data;
      base = c.g0;
    } else {
      src = this.g.dequantize(t, g0, g1);
      base = g0;
      this.cache = { name, g0, g1, data: src };
    }
    const out = new Float32Array((r1 - r0) * cols);
    for (let r = r0; r < r1; r++) {
      const gr = ggufRowOf(r, d) - base;
      out.set(src.subarray(gr * cols, (gr + 1) * cols), (r - r0) * cols);
    }
    return out;
  }

  /**
   * The weight as MatMulNBits blocks when its GGML type maps exactly (src/formats/ggml-nbits.ts:
   * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), rows in Hugging Face order; null
   * for float types and 1-D weights. 2-bit codes (Q2_K) are widened to 4 bits. Types with a min
   * come with zero points when every block's min is an integer multiple of its scale, otherwise
   * with `mins` (w = q·scale + min); 8-bit codes with mins (Q5_1, Q5_K in practice) give null,
   * because ONNX Runtime's CPU kernel has no 8-bit float-zero-point path. Memory: the result
   * plus one read of about 8 MiB.
   */
  nbits(name: string): NbitsBlocks | null {
    const m = this.get(name);
    const t = m.tensor;
    const map = NBITS_MAPPING[t.typeName];
    if (!map || t.dims.length !== 2) return null;
    const n = t.rows;
    const k = t.dims[0];
    const bits: 4 | 8 = map.bits === 8 ? 8 : 4;
    const bs = map.blockSize;
    const kBlocks = k / bs;
    const blob = (bs * bits) / 8;
    const zpRow = Math.ceil((kBlocks * bits) / 8);
    const weights = new Uint8Array(n * kBlocks * blob);
    const scales = new Float32Array(n * kBlocks);
    const zeroPoints = new Uint8Array(n * zpRow);
    let mins: Float32Array | null = null;
    const d = this.headDim;
    const place = { file: this.g.file, where: `tensor ${JSON.stringify(t.name)}` };
    const rowsPer = Math.max(1, Math.floor(READ_BYTES / t.rowBytes));
    const raw = new Uint8Array(Math.min(rowsPer, n) * t.rowBytes);
    for (let g0 = 0; g0 < n; g0 += rowsPer) {
      const g1 = Math.min(n, g0 + rowsPer);
      const w = ggmlToMatMulNBits(t.type, this.g.readTensorBytes(t, g0, g1, raw), g1 - g0, k, place);
      // One representation per tensor: once a chunk needs mins, zero points become mins (-z·scale, exact).
      if (w.mins && !mins) {
        mins = zeroPointsToMins(zeroPoints, scales, n, kBlocks, bits, zpRow);
        zeroPoints.fill(0);
      }
      let chunkMins = w.mins;
      let chunkZp = w.zeroPoints;
      if (mins && !chunkMins) {
        chunkMins = zeroPointsToMins(w.zeroPoints, w.scales, g1 - g0, kBlocks, w.bits, Math.ceil((kBlocks * w.bits) / 8));
        chunkZp = new Uint8Array(w.zeroPoints.length);
      }
      const srcBlob = (bs * w.bits) / 8;
      const srcZpRow = Math.ceil((kBlocks * w.bits) / 8);
      for (let r = 0; r < g1 - g0; r++) {
        const hr = m.permutedHeads ? hfRowOf(g0 + r, d) : g0 + r;
        const codes = w.packed.subarray(r * kBlocks * srcBlob, (r + 1) * kBlocks * srcBlob);
        const zps = chunkZp.subarray(r * srcZpRow, (r + 1) * srcZpRow);
        if (w.bits === bits) {
          weights.set(codes, hr * kBlocks * blob);
          zeroPoints.set(zps, hr * zpRow);
        } else {
          widen(codes, w.bits, weights.subarray(hr * kBlocks * blob, (hr + 1) * kBlocks * blob), bits);
          widen(zps, w.bits, zeroPoints.subarray(hr * zpRow, (hr + 1) * zpRow), bits, kBlocks);
        }
        scales.set(w.scales.subarray(r * kBlocks, (r + 1) * kBlocks), hr * kBlocks);
        if (mins) mins.set(chunkMins!.subarray(r * kBlocks, (r + 1) * kBlocks), hr * kBlocks);
      }
    }
    // 8-bit codes with a min term would need float zero points, which ONNX Runtime's CPU
    // MatMulNBits runs for 2 and 4 bits only: the writer stores such a weight from rows() instead.
    if (bits === 8 && mins) return null;
    return { bits, blockSize: bs, weights, scales, zeroPoints: mins ? null : zeroPoints, mins };
  }
}

/** Packed codes of `fromBits` widened to `toBits` (low bits first), `count` codes (default: all of src). */
function widen(src: Uint8Array, fromBits: number, dst: Uint8Array, toBits: number, count = (src.length * 8) / fromBits): void {
  const mask = (1 << fromBits) - 1;
  dst.fill(0);
  for (let i = 0; i < count; i++) {
    const b = i * fromBits;
    const q = (src[b >> 3] >> (b & 7)) & mask;
    const o = i * toBits;
    dst[o >> 3] |= q << (o & 7);
  }
}

/** Per-block min terms −z·scale of packed zero points (exact: z and scale are small integers times a half). */
function zeroPointsToMins(zp: Uint8Array, scales: Float32Array, rows: number, kBlocks: number, bits: number, zpRow: number): Float32Array {
  const mins = new Float32Array(rows * kBlocks);
  const mask = (1 << bits) - 1;
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < kBlocks; b++) {
      const bit = b * bits;
      const z = (zp[r * zpRow + (bit >> 3)] >> (bit & 7)) & mask;
      mins[r * kBlocks + b] = z === 0 ? 0 : -z * scales[r * kBlocks + b];
    }
  }
  return mins;
}
