/**
 * What both graph layouts share: constants in the compute dtype, tensors streamed from the
 * weight source into a sink, and projections (MatMul over a float weight, or MatMulNBits).
 */
import { LobesError } from '../../util/errors.js';
import { floatArrayToHalf } from '../../util/half.js';
import { int, NodeList, type GAttr, type GGraph, type GValue } from './graph.js';
import type { TensorSink } from './sink.js';
import type { LlamaSpec, LlamaWeightSource, WriteLlamaOptions } from './types.js';
import { planNbits, runnableNbits, shape2, sourceBlocks, streamFloat, streamNbits, zpRowBytes, type NbitsPlan,
  type StreamCtx } from './weights.js';
import type { NbitsBlocks } from './types.js';

export type FloatType = 'float32' | 'float16' | 'bfloat16';

export interface BuildOptions {
  dtype: 'fp32' | 'fp16';
  weights: 'q4' | 'fp16' | 'fp32' | 'bf16';
  withPast: boolean;
  accuracyLevel: number;
  chunkBytes: number;
}

/** Normalized build options from the writer's options. */
export function buildOptions(o: WriteLlamaOptions): BuildOptions {
  if (o.dtype !== 'fp32' && o.dtype !== 'fp16')
    throw new LobesError(`dtype '${String(o.dtype)}' is not one of fp32, fp16`);
  if (o.weights !== 'q4' && o.weights !== 'fp16' && o.weights !== 'fp32' && o.weights !== 'bf16')
    throw new LobesError(`weights '${String(o.weights)}' is not one of q4, fp16, fp32, bf16`);
  if (o.dtype === 'fp16' && (o.weights === 'fp32' || o.weights === 'bf16')) {
    throw new LobesError(`${o.weights} weights with an fp16 graph would be cast down at every run`, {
      hint: 'use weights fp16 (or q4) with dtype fp16',
    });
  }
  const acc = o.accuracyLevel ?? 0;
  if (![0, 1, 2, 3, 4].includes(acc)) throw new LobesError(`accuracyLevel ${acc} is not one of 0..4`);
  return {
    dtype: o.dtype,
    weights: o.weights,
    withPast: o.layout === 'genai' ? true : (o.withPast ?? false),
    accuracyLevel: acc,
    chunkBytes: Math.max(4096, o.chunkBytes ?? 32 << 20),
  };
}

/** Names and conventions of one projection in a layout. */
export interface ProjNaming {
  /** Node name prefix, e.g. /model/layers.0/mlp/gate_proj. */
  prefix: string;
  /** Name of the float weight initializer. */
  floatInit: () => string;
  /** Names of the MatMulNBits initializers. */
  nbitsInit: (bits: number) => { B: string; scales: string; zp: string };
  /** Node name and output name of the projection node. */
  node: (op: 'MatMul' | 'MatMulNBits', bits: number) => { name: string; output: string };
  /** Scales and float zero points as [N, nBlocks] (else flat [N·nBlocks]). */
  scales2d: boolean;
}

export class GraphBuilder {
  readonly nodes = new NodeList();
  readonly inputs: GValue[] = [];
  readonly outputs: GValue[] = [];
  /** How each source weight was stored. */
  readonly storage: Record<string, string> = {};
  /** Compute dtype. */
  readonly ft: 'float32' | 'float16';
  /** Whether a com.microsoft op was used. */
  usesContrib = false;
  private readonly ctx: StreamCtx;

  constructor(
    readonly spec: LlamaSpec,
    readonly src: LlamaWeightSource,
    readonly sink: TensorSink,
    readonly opts: BuildOptions,
  ) {
    this.ft = opts.dtype === 'fp16' ? 'float16' : 'float32';
    this.ctx = { src, sink, chunkBytes: opts.chunkBytes };
  }

  /** Storage dtype of float projection weights. */
  get projFloat(): FloatType {
    const w = this.opts.weights;
    return w === 'fp32' ? 'float32' : w === 'fp16' ? 'float16' : w === 'bf16' ? 'bfloat16' : this.ft;
  }

  /** Storage dtype of the embeddings and a float lm_head: the projections' float storage, or the compute dtype under q4. */
  get denseFloat(): FloatType {
    return this.opts.weights === 'q4' ? this.ft : this.projFloat;
  }

  node(op: string, name: string, inputs: string[], attrs?: Record<string, GAttr>,
    opts?: { outputs?: string[]; nOut?: number; domain?: string }): string
  {
    if (opts?.domain === 'com.microsoft') this.usesContrib = true;
    return this.nodes.add(op, name, inputs, attrs, opts);
  }

  /** A float constant in the compute dtype (values clamped to ±65504 in float16). */
  fconst(name: string, values: number[], dims: number[] = []): string {
    if (this.ft === 'float32')
      return this.sink.constant({ name, dtype: 'float32', dims, data: Float32Array.from(values) });
    const clamped = values.map((v) => Math.max(-65504, Math.min(65504, v)));
    return this.sink.constant({ name, dtype: 'float16', dims, data: floatArrayToHalf(clamped) });
  }

  /** A float32 constant whatever the compute dtype. */
  f32const(name: string, data: Float32Array, dims: number[]): string {
    return this.sink.constant({ name, dtype: 'float32', dims, data });
  }

  i64(name: string, vals: number[], dims: number[] = [vals.length]): string {
    return this.sink.constant({ name, dtype: 'int64', dims, data: BigInt64Array.from(vals.map((v) => BigInt(v))) });
  }

  /** A float tensor streamed from source weights (stacked along d_out; optionally transposed). */
  floatTensor(initName: string, parts: string[], transpose: boolean, dtype: FloatType): string {
    const shapes = parts.map((p) => shape2(this.src, p));
    const rows = shapes.reduce((a, s) => a + s[0], 0);
    const cols = shapes[0]![1];
    const is1d = this.src.shape(parts[0]!).length === 1;
    const dims = is1d ? [rows] : transpose ? [cols, rows] : [rows, cols];
    const region = this.sink.reserve(initName, dtype, dims);
    streamFloat(this.ctx, region, parts, { transpose, dtype });
    for (const p of parts) this.storage[p] = dtype === 'float16' ? 'fp16' : dtype === 'bfloat16' ? 'bf16' : 'fp32';
    return initName;
  }

  /** A float tensor computed a row chunk at a time by `fill(r0, r1)` ([rows, cols] float32 values). */
  generatedTensor(name: string, rows: number, cols: number, dtype: 'float32' | 'float16',
    fill: (r0: number, r1: number) => Float32Array): string
  {
    const region = this.sink.reserve(name, dtype, [rows, cols]);
    const es = dtype === 'float16' ? 2 : 4;
    const step = Math.max(1, Math.floor(this.opts.chunkBytes / (cols * 4)));
    for (let r0 = 0; r0 < rows; r0 += step) {
      const r1 = Math.min(rows, r0 + step);
      const v = fill(r0, r1);
      const out = dtype === 'float16' ? floatArrayToHalf(v) : v;
      region.write(r0 * cols * es, new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
    }
    return name;
  }

  /** `name` cast to the compute dtype when `from` differs. */
  castTo(value: string, from: FloatType, nodeName: string): string {
    if (from === this.ft) return value;
    return this.node('Cast', nodeName, [value], { to: int(this.ft === 'float16' ? 10 : 1) });
  }

  /** Source blocks fetched by nbitsPlan and not yet streamed (so no weight is decomposed twice). */
  private readonly blockCache = new Map<string, NbitsBlocks | null>();

  private blocksOf(name: string): NbitsBlocks | null {
    if (!this.blockCache.has(name)) this.blockCache.set(name, sourceBlocks(this.src, name));
    return this.blockCache.get(name)!;
  }

  /** Whether the weights are 'q4' and the source gives `name` as blocks ONNX Runtime's MatMulNBits runs. */
  hasRunnableBlocks(name: string): boolean {
    if (this.opts.weights !== 'q4') return false;
    const blocks = this.blocksOf(name);
    return blocks !== null && runnableNbits(blocks);
  }

  /**
   * The MatMulNBits plan of weights stacked along d_out, or null when they cannot share one
   * MatMulNBits node (different forms from the source, or a form that must be expanded).
   */
  nbitsPlan(parts: string[]): NbitsPlan | null {
    return planNbits(this.src, parts, parts.map((p) => this.blocksOf(p)));
  }

  /**
   * A projection of `input` by the source weights `parts` stacked along d_out: MatMul over a
   * [d_in, d_out] float weight, or MatMulNBits (weights 'q4', with `plan` or a fresh one). A
   * single weight whose source blocks ONNX Runtime cannot run is expanded to float.
   */
  projection(input: string, parts: string[], n: ProjNaming, plan?: NbitsPlan | null, forceFloat = false): string {
    let p: NbitsPlan | null = null;
    let float = this.opts.weights !== 'q4' || forceFloat;
    if (!float) {
      p = plan ?? this.nbitsPlan(parts);
      if (!p) {
        const blocks = parts.map((q) => this.blocksOf(q));
        if (parts.length === 1 && blocks[0] && !runnableNbits(blocks[0])) float = true;
        else
          throw new LobesError(
            `weights ${parts.join(', ')} come in different MatMulNBits forms and cannot share one projection`,
          );
      }
    }
    for (const q of parts) this.blockCache.delete(q);
    if (float) {
      const dtype = forceFloat || this.opts.weights === 'q4' ? this.ft : this.projFloat;
      let w = this.floatTensor(n.floatInit(), parts, true, dtype);
      w = this.castTo(w, dtype, `${n.prefix}/weight_cast`);
      const { name, output } = n.node('MatMul', 0);
      return this.node('MatMul', name, [input, w], undefined, { outputs: [output] });
    }
    p = p!;
    const shapes = parts.map((q) => shape2(this.src, q));
    const N = shapes.reduce((a, s) => a + s[0], 0);
    const K = shapes[0]![1];
    const nb = K / p.blockSize;
    const blob = (p.blockSize * p.bits) / 8;
    const names = n.nbitsInit(p.bits);
    const sdims = n.scales2d ? [N, nb] : [N * nb];
    const B = this.sink.reserve(names.B, 'uint8', [N, nb, blob]);
    const scales = this.sink.reserve(names.scales, this.ft, sdims);
    const zp = p.zp === 'u8'
      ? this.sink.reserve(names.zp, 'uint8', n.scales2d ? [N, zpRowBytes(nb, p.bits)] : [N * zpRowBytes(nb, p.bits)])
      : this.sink.reserve(names.zp, this.ft, sdims);
    streamNbits(this.ctx, { B, scales, zp }, parts, p, this.ft);
    // written (synchronously): the source may reuse the arrays for its next weight
    for (const b of p.blocks) b?.release?.();
    parts.forEach((q, i) => (this.storage[q] = p.blocks[i] ? `nbits${p.bits}` : `q${p.bits}:rows`));
    const attrs: Record<string, GAttr> = { K: int(K), N: int(N) };
    if (this.opts.accuracyLevel) attrs.accuracy_level = int(this.opts.accuracyLevel);
    attrs.bits = int(p.bits);
    attrs.block_size = int(p.blockSize);
    const { name, output } = n.node('MatMulNBits', p.bits);
    return this.node('MatMulNBits', name, [input, names.B, names.scales, names.zp], attrs, { outputs: [output],
      domain: 'com.microsoft' });
  }

  graph(opset: number): GGraph {
    return {
      name: 'main_graph',
      opset,
      ...(this.usesContrib ? { extraOpsets: { 'com.microsoft': 1 } } : {}),
      nodes: this.nodes.nodes,
      initializers: this.sink.initializers,
      inputs: this.inputs,
      outputs: this.outputs,
    };
  }
}
