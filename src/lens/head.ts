/**
 * The model's own head for the logit lens, read from the ONNX model folder the run records:
 * the final RMSNorm (its weight and epsilon) and the unembedding (lm_head, or the tied
 * embeddings it reads through a Transpose), located by graph structure (src/runtime/discover.ts
 * finds lm_head; its input is the final norm's output) and read through the same weight
 * location as wanda (src/runtime/weights.ts).
 *
 * The norm is found as one of
 *   - SimplifiedLayerNormalization(x, w) (epsilon attribute);
 *   - SkipSimplifiedLayerNormalization(residual, delta, w) (epsilon attribute; the genai layout);
 *   - Mul(w, x · 1/sqrt(mean(x²) + eps)), decomposed (eps the constant added before the Sqrt).
 * config.json's rms_norm_eps, when the folder has one, must agree with the graph's epsilon.
 * A norm of another form (Gemma's 1 + w, a LayerNorm with a bias) is refused in one line: the
 * lens would apply another function than the model does.
 */
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { halfArrayToFloat } from '../util/half.js';
import { loadModel, type LoadedModel } from '../onnx/index.js';
import type { NodeProto } from '../onnx/types.js';
import { readInitializerFloat32, tensorBytes, tensorToNumbers } from '../onnx/tensor.js';
import { discover } from '../runtime/discover.js';
import { configDir, readConfigHints, readJson } from '../runtime/config.js';
import { onnxWeightSource, type ByteRange } from '../runtime/weights.js';
import type { ProjectionRef } from '../runtime/types.js';
import { RangeFile } from '../util/io.js';

/** The final norm and the unembedding, in float32. */
export interface LensHead {
  hidden: number;
  vocab: number;
  /** The final RMSNorm's weight [hidden]. */
  normWeight: Float32Array;
  eps: number;
  /** lm_head as [vocab, hidden] rows (float32). */
  unembed: Float32Array;
  /** Where each part was found, for settings.json. */
  found: { norm: string; normOp: string; eps: string; lmHead: string; layout: string; dtype: string; tied: boolean };
  /** Soft-capping of the logits (Gemma 2), or null. */
  softcap: number | null;
}

const THROUGH = new Set(['Cast', 'Identity']);

/** The value before Cast/Identity nodes. */
function skipThrough(m: LoadedModel, prod: Map<string, NodeProto>, v: string): string {
  for (let k = 0; k < 8; k++) {
    const p = prod.get(v);
    if (!p || !THROUGH.has(p.opType ?? '')) break;
    v = p.input[0]!;
  }
  void m;
  return v;
}

/** A float attribute of a node, or undefined. */
function floatAttr(n: NodeProto, name: string): number | undefined {
  const a = n.attribute.find((x) => x.name === name);
  return a?.f === undefined ? undefined : Number(a.f);
}

/** The scalar value of a constant (an initializer or a Constant node), or undefined. */
function constantScalar(m: LoadedModel, prod: Map<string, NodeProto>, v: string): number | undefined {
  v = skipThrough(m, prod, v);
  const init = m.initializers.get(v);
  if (init) {
    const xs = tensorToNumbers(init, tensorBytes(init, m.dir, m.file));
    return xs.length === 1 ? xs[0] : undefined;
  }
  const p = prod.get(v);
  if (p?.opType === 'Constant') {
    const t = p.attribute.find((a) => a.name === 'value')?.t;
    if (t) {
      const xs = tensorToNumbers(t, tensorBytes(t, m.dir, m.file));
      return xs.length === 1 ? xs[0] : undefined;
    }
    const f = floatAttr(p, 'value_float');
    if (f !== undefined) return f;
  }
  return undefined;
}

/** The final norm feeding lm_head's input `x`: its weight initializer, epsilon and op. */
function findFinalNorm(m: LoadedModel, prod: Map<string, NodeProto>,
  x: string): { weight: string; eps: number | null; op: string }
{
  const v = skipThrough(m, prod, x);
  const n = prod.get(v);
  const refuse = (why: string) =>
    new LobesError(
      `the final norm before lm_head ${why}; the lens applies the model's own RMSNorm and cannot read this one`,
      { file: m.file, where: n?.name ?? v,
        hint: 'the lens reads Llama-class RMSNorm (fused or decomposed Mul(w, x / sqrt(mean(x²) + eps)))' },
    );
  if (!n) throw refuse('is not found (lm_head reads a graph input)');
  if (n.opType === 'SimplifiedLayerNormalization' || n.opType === 'SkipSimplifiedLayerNormalization') {
    const w = skipThrough(m, prod, n.input[n.opType === 'SimplifiedLayerNormalization' ? 1 : 2]!);
    if (!m.initializers.has(w))
      throw refuse(`reads its weight from ${JSON.stringify(w)}, not an initializer (a (1 + w) scale?)`);
    return { weight: w, eps: floatAttr(n, 'epsilon') ?? 1e-5, op: n.opType };
  }
  if (n.opType === 'Mul') {
    // Mul(w, normed): one side an initializer of [hidden], the other x · 1/sqrt(mean(x²) + eps)
    const [a, b] = n.input.map((i) => skipThrough(m, prod, i!));
    const w = m.initializers.has(a!) ? a! : m.initializers.has(b!) ? b! : null;
    if (!w) throw refuse('is a Mul without a weight initializer (a (1 + w) scale?)');
    const normed = w === a ? b! : a!;
    return { weight: w, eps: decomposedEps(m, prod, normed), op: 'RMSNorm (decomposed)' };
  }
  throw refuse(`is a ${n.opType} node`);
}

/** The eps of a decomposed RMSNorm x · 1/sqrt(mean(x²) + eps) (or x / sqrt(...)): the constant of the Add before the Sqrt; null when not found. */
function decomposedEps(m: LoadedModel, prod: Map<string, NodeProto>, normed: string): number | null {
  const seen = new Set<string>();
  const stack = [normed];
  while (stack.length) {
    const v = stack.pop()!;
    if (seen.has(v) || seen.size > 16) continue;
    seen.add(v);
    const p = prod.get(v);
    if (!p) continue;
    if (p.opType === 'Sqrt') {
      const add = prod.get(skipThrough(m, prod, p.input[0]!));
      if (add?.opType === 'Add') {
        for (const i of add.input) {
          const c = constantScalar(m, prod, i!);
          if (c !== undefined) return c;
        }
      }
      return null;
    }
    if (['Mul', 'Div', 'Reciprocal', 'Cast', 'Identity'].includes(p.opType ?? '')) {
      for (const i of p.input) if (i) stack.push(i);
    }
  }
  return null;
}

function readRange(r: ByteRange): Uint8Array {
  if ('bytes' in r) return r.bytes;
  const f = RangeFile.open(r.file, 'weight file');
  try {
    return f.read(r.offset, r.byteLength);
  } finally {
    f.close();
  }
}

/** lm_head as float32 [vocab, hidden] rows, from its dense weight (float32, float16 or bfloat16, either layout). */
function unembedRows(m: LoadedModel, ref: ProjectionRef): { rows: Float32Array; dtype: string } {
  const src = onnxWeightSource(m, ref);
  if (src.kind !== 'dense')
    throw new LobesError('lm_head is stored as MatMulNBits blocks; the lens reads a float lm_head', { file: m.file,
      where: ref.weight,
      hint: `convert the model with ${
        opt('weights', 'fp32')
      } (or fp16) for the lens, e.g. lobes convert FILE.gguf --weights fp32` });
  const bytes = readRange(src.data);
  const n = ref.dIn * ref.dOut;
  let flat: Float32Array;
  if (src.dtype === 'F32') flat = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + n * 4));
  else {
    const u16 = new Uint16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + n * 2));
    if (src.dtype === 'F16') flat = halfArrayToFloat(u16);
    else {
      flat = new Float32Array(n);
      const u32 = new Uint32Array(flat.buffer);
      for (let i = 0; i < n; i++) u32[i] = u16[i]! << 16;
    }
  }
  if (src.layout === 'out_in') return { rows: flat, dtype: src.dtype };
  // [d_in = hidden, d_out = vocab] → [vocab, hidden]
  const rows = new Float32Array(n);
  const H = ref.dIn;
  const V = ref.dOut;
  for (let h = 0; h < H; h++) {
    const off = h * V;
    for (let v = 0; v < V; v++) rows[v * H + h] = flat[off + v]!;
  }
  return { rows, dtype: src.dtype };
}

/** The final norm and unembedding of the ONNX model folder `modelDir`. */
export function readLensHead(modelDir: string): LensHead {
  const m = loadModel(modelDir);
  const cdir = configDir(modelDir, m.dir);
  const disc = discover(m, readConfigHints(cdir));
  const prod = disc.index.producer;
  const head = disc.lmHead;
  const norm = findFinalNorm(m, prod, head.x);
  const normWeight = readInitializerFloat32(m, norm.weight);
  const hidden = head.dIn;
  if (normWeight.length !== hidden)
    throw new LobesError(`the final norm's weight has ${normWeight.length} values, lm_head reads ${hidden}`, {
      file: m.file,
      where: norm.weight,
    });
  const cfgEps = readJson(path.join(cdir, 'config.json'))?.rms_norm_eps;
  let eps: number;
  let epsFrom: string;
  if (norm.eps !== null) {
    eps = norm.eps;
    epsFrom = `graph (${norm.op})`;
    // the graph stores eps as float32: config.json must say the same number at that precision
    if (typeof cfgEps === 'number' && Math.fround(cfgEps) !== Math.fround(eps)) {
      throw new LobesError(
        `the final norm's epsilon in the graph (${eps}) is not config.json's rms_norm_eps (${cfgEps})`,
        { file: path.join(cdir, 'config.json'), where: 'rms_norm_eps',
          hint: "the folder's config.json does not describe its graph" },
      );
    }
  } else if (typeof cfgEps === 'number') {
    eps = cfgEps;
    epsFrom = 'config.json rms_norm_eps';
  } else {
    throw new LobesError("the final norm's epsilon is neither in the graph nor in config.json (rms_norm_eps)", {
      file: m.file,
      where: norm.weight,
      hint: "add rms_norm_eps to the model folder's config.json",
    });
  }
  const ref: ProjectionRef = { proj: 'lm_head', op: head.op, weight: head.weight, layout: head.layout, dIn: head.dIn,
    dOut: head.dOut, ...(head.scales ? { scales: head.scales } : {}) };
  const { rows, dtype } = unembedRows(m, ref);
  const embedNames = new Set(m.model.graph!.node.filter((n) => n.opType === 'Gather').map((n) => n.input[0]));
  return {
    hidden,
    vocab: head.dOut,
    normWeight,
    eps,
    unembed: rows,
    softcap: disc.logitSoftcap,
    found: { norm: norm.weight, normOp: norm.op, eps: epsFrom, lmHead: head.weight, layout: head.layout, dtype,
      tied: embedNames.has(head.weight) },
  };
}
