/**
 * Graph surgery for attention capture: one float32 [batch, heads, seq] output per selected layer,
 * the attention weights of each row's last real token (the answering position) over every
 * position. Only that row leaves the session, never [batch, heads, seq, seq].
 *
 *   explicit (Softmax) sites: from the Softmax output [batch, heads, seq, seq], the query rows at
 *     the last real tokens of the batch (the selection nodes of surgery.ts) are gathered, then
 *     each batch row's own, giving [batch, heads, seq]; the [seq, seq] matrices are never copied.
 *   fused sites (GroupQueryAttention, MultiHeadAttention): the weights are recomputed in float32
 *     from the op's inputs as the op computes them: the query at the last real token and the keys
 *     of all positions (unpacked from packed Q|K|V; MultiHeadAttention's projection bias added),
 *     the rotary embedding the op applies (cos/sin caches gathered at positions 0..n−1, halves or
 *     interleaved pairs, partial rotary dimensions passed through), each query head matched to its
 *     KV head (head h reads KV head ⌊h / (heads/kvHeads)⌋), scores q·kᵀ times the op's scale
 *     (1/√headDim by default), soft-capping c·tanh(x/c), the op's additive attention bias at that
 *     row, the causal, padding and local-window masks, and a softmax with the op's smooth-softmax
 *     or head-sink term in the denominator.
 *
 * Everything added is named under surgery.ts's prefix; the rest of the graph is pruned to what
 * the outputs need (lm_head, logits and KV-cache outputs drop out).
 */
import type { ModelProto, ValueInfo } from '../onnx/index.js';
import { DataType, makeNode, makeTensor, makeValueInfo } from '../onnx/index.js';
import { LobesError } from '../util/errors.js';
import { GraphEdit, OUT_PREFIX, SEL_PREFIX, editedInputs, emptyPasts, lastTokenIndex, opsetOf, prune, type InGraphPast,
  type LastToken } from './surgery.js';
import type { AttentionSite, FusedAttention, SoftmaxAttention } from './attention.js';
import { GraphIndex } from '../onnx/index.js';

export interface AttentionSurgery {
  model: ModelProto;
  /** Hook name (`layers.{i}.attn.weights`) → graph output name, float32 [batch, heads, seq]. */
  outputs: Map<string, string>;
  /** Name of the mask input the selection reads. */
  maskInput: string;
  /** True when the graph had no mask input and one was added only for the selection. */
  maskAdded: boolean;
}

const INT64_MAX = 2n ** 63n - 1n;

/** Node-building helpers over a GraphEdit for one opset. */
class Ops {
  private n = 0;
  constructor(
    readonly e: GraphEdit,
    readonly opset: number,
  ) {}

  /** A fresh value name under `tag`. */
  private name(tag: string): string {
    return `attn.${tag}.${this.n++}`;
  }

  op(op: string, ins: string[], tag: string, attrs: Record<string, any> = {}): string {
    return this.e.add(op, ins, this.name(tag), attrs);
  }

  i64(vals: (number | bigint)[], dims: number[] = [vals.length]): string {
    const name = SEL_PREFIX + this.name('c');
    this.e.inits.push(makeTensor(name, DataType.INT64, dims, BigInt64Array.from(vals.map((v) => BigInt(v)))));
    return name;
  }

  f32(vals: number[], dims: number[] = [vals.length]): string {
    const name = SEL_PREFIX + this.name('f');
    this.e.inits.push(makeTensor(name, DataType.FLOAT, dims, Float32Array.from(vals)));
    return name;
  }

  cast(x: string, to: number, tag = 'cast'): string {
    return this.op('Cast', [x], tag, { to });
  }

  unsqueeze(x: string, axes: number[]): string {
    if (this.opset >= 13) return this.op('Unsqueeze', [x, this.i64(axes)], 'unsq');
    return this.op('Unsqueeze', [x], 'unsq', { axes });
  }

  /** x[start:end] along `axis`. */
  slice(x: string, start: number | bigint, end: number | bigint | string, axis: number): string {
    const ends = typeof end === 'string' ? end : this.i64([end]);
    return this.op('Slice', [x, this.i64([start]), ends, this.i64([axis])], 'slice');
  }

  reshape(x: string, shape: string | number[]): string {
    return this.op('Reshape', [x, typeof shape === 'string' ? shape : this.i64(shape)], 'reshape');
  }

  concat(xs: string[], axis: number): string {
    return this.op('Concat', xs, 'concat', { axis });
  }

  transpose(x: string, perm: number[]): string {
    return this.op('Transpose', [x], 'transpose', { perm });
  }
}

/** What every site's row builder shares. */
interface Ctx {
  o: Ops;
  g: GraphIndex;
  sel: LastToken;
  /** [B] and [T] as 1-D int64 tensors. */
  B1: string;
  T1: string;
  file: string;
}

/**
 * Build the attention capture graph for `sites`. `maskInput` is the graph input holding the
 * attention mask (null: one is added for the selection); `inGraphPast` KV-cache inputs are made
 * as empty tensors in the graph.
 */
export function buildAttentionModel(model: ModelProto, g: GraphIndex, sites: AttentionSite[], maskInput: string | null,
  inGraphPast: InGraphPast[] = [], file = ''): AttentionSurgery
{
  if (sites.length === 0) throw new LobesError('no attention layers selected');
  const graph = model.graph!;
  const opset = opsetOf(model);
  if (opset < 11) throw new LobesError(`the model's ONNX opset ${opset} is older than 11, which lobes needs`, { file });
  const e = new GraphEdit(graph);
  const { inputs, mask, maskAdded, maskType } = editedInputs(graph, inGraphPast, maskInput);
  const sel = lastTokenIndex(e, mask, maskType, opset);
  if (inGraphPast.length) emptyPasts(e, sel.B, inGraphPast);
  const o = new Ops(e, opset);
  const ctx: Ctx = { o, g, sel, B1: o.reshape(sel.B, [1]), T1: o.reshape(sel.T, [1]), file };
  const outputs = new Map<string, string>();
  const outInfos: ValueInfo[] = [];
  let previous: string | null = null;
  for (const s of [...sites].sort((x, y) => x.layer - y.layer)) {
    if (s.kind === 'softmax' && previous) afterRow(ctx, s, previous);
    const row = s.kind === 'softmax' ? softmaxRow(ctx, s) : fusedRow(ctx, s);
    const out = OUT_PREFIX + s.name;
    e.nodes.push(makeNode('Cast', [row], [out], { to: DataType.FLOAT }, undefined, out));
    outputs.set(s.name, out);
    outInfos.push(makeValueInfo(out, DataType.FLOAT, ['batch', s.kind === 'fused' ? s.heads : null, 'sequence']));
    if (s.kind === 'softmax') previous = out;
  }
  const pruned = prune(graph, e, inputs, outInfos);
  // afterRow makes a Softmax read a node appended after it: GraphIndex gives the file order back, sorted.
  return { model: { ...model, graph: { ...pruned, node: new GraphIndex(pruned).nodes } }, outputs, maskInput: mask,
    maskAdded };
}

/**
 * Make site `s`'s Softmax wait for the previous selected site's row: its input X becomes
 * Where(IsNaN(ΣrowPrev), X, X), which is X exactly whatever the condition. Without this data
 * dependency ONNX Runtime may order every row's gather after the whole decoder (its topological
 * sort walks back from the outputs), and then every selected layer's [heads, seq, seq] weights
 * stay alive to the end: 22 GB for 30 layers of SmolLM2 at 4,473 tokens. With it, a layer's
 * weights are freed once its row is out (test/attend/memory.test.ts).
 */
function afterRow(c: Ctx, s: SoftmaxAttention, previousRow: string): void {
  const { o } = c;
  const at = o.e.nodes.findIndex((n) => n.output[0] === s.probs);
  if (at < 0) return;
  const node = o.e.nodes[at]!;
  const x = node.input[0]!;
  const nan = o.op('IsNaN', [o.op('ReduceSum', [previousRow], 'dep', { keepdims: 0 })], 'depnan');
  o.e.nodes[at] = { ...node, input: [o.op('Where', [nan, x, x], 'after'), ...node.input.slice(1)] };
}

/** Gather the last real token's row of a value flattened to [batch·seq, ...]: [batch, ...]. */
function atLast(c: Ctx, rows: string): string {
  return c.o.op('Gather', [rows, c.sel.flat], 'last', { axis: 0 });
}

/**
 * Row last[b] of batch row b of a [B|1, H, S, T] tensor: [B, H, T]. Gathering the B query rows of
 * every batch row first ([B|1, H, B, T]) and then its diagonal never copies the [S, T] matrices.
 */
function rowsAtLast(c: Ctx, x: string, rowIndex: string): string {
  const { o } = c;
  const g = o.op('Gather', [x, rowIndex], 'qrows', { axis: 2 });
  const full = o.op('Expand', [g, o.concat([c.B1, o.i64([1, 1, 1])], 0)], 'bexp');
  const r = o.unsqueeze(o.op('Range', [o.i64([0], []), c.sel.B, o.i64([1], [])], 'brange'), [1]);
  return o.op('GatherND', [o.transpose(full, [0, 2, 1, 3]), o.concat([r, r], 1)], 'diag');
}

/** The Softmax's [B, H, S, T] (or [B·H, S, T]) weights at each row's last real token: [B, H, T]. */
function softmaxRow(c: Ctx, s: SoftmaxAttention): string {
  const { o } = c;
  const p4 = o.reshape(s.probs, o.concat([c.B1, o.i64([-1]), c.T1, c.T1], 0));
  return rowsAtLast(c, p4, c.sel.last);
}

/** Size of the rotary half (cos/sin cache width): a constant of the graph. */
function rotaryHalf(c: Ctx, s: FusedAttention): number {
  const t = c.g.constTensor(c.g.skipBack(s.rotary!.cos));
  const w = t?.dims.length === 2 ? Number(t.dims[1]) : NaN;
  if (!Number.isInteger(w) || w < 1) {
    throw new LobesError(
      'cannot recompute the attention weights of GroupQueryAttention: its cos_cache is not a constant [positions, rotary_dim/2] tensor',
      { file: c.file, where: s.node.name ? `node ${s.node.name}` : undefined },
    );
  }
  return w;
}

/**
 * Rotate the last axis of `x` (rank `rank`) by cos/sin (broadcastable to x[..., half]), as
 * onnxruntime's rotary kernels do: halves (x_i, x_{i+half}) or interleaved pairs (x_2i, x_2i+1);
 * dimensions past 2·half pass through.
 */
function rope(o: Ops, x: string, cos: string, sin: string, half: number, interleaved: boolean, rank: number): string {
  let rotated: string;
  if (interleaved) {
    const keep = new Array<number>(rank - 1).fill(0);
    const pairs = o.reshape(o.slice(x, 0, 2 * half, -1), [...keep, half, 2]);
    const a = o.slice(pairs, 0, 1, -1);
    const b = o.slice(pairs, 1, 2, -1);
    const c = o.unsqueeze(cos, [-1]);
    const s = o.unsqueeze(sin, [-1]);
    const ra = o.op('Sub', [o.op('Mul', [a, c], 'mul'), o.op('Mul', [b, s], 'mul')], 'sub');
    const rb = o.op('Add', [o.op('Mul', [b, c], 'mul'), o.op('Mul', [a, s], 'mul')], 'add');
    rotated = o.reshape(o.concat([ra, rb], -1), [...keep, 2 * half]);
  } else {
    const a = o.slice(x, 0, half, -1);
    const b = o.slice(x, half, 2 * half, -1);
    const ra = o.op('Sub', [o.op('Mul', [a, cos], 'mul'), o.op('Mul', [b, sin], 'mul')], 'sub');
    const rb = o.op('Add', [o.op('Mul', [b, cos], 'mul'), o.op('Mul', [a, sin], 'mul')], 'add');
    rotated = o.concat([ra, rb], -1);
  }
  return o.concat([rotated, o.slice(x, 2 * half, INT64_MAX, -1)], -1);
}

/** The query at each row's last real token [B, H, hd] and the keys of every position [B, kvH, T, hd], float32, before rotary. */
function queryAndKeys(c: Ctx, s: FusedAttention): { q: string; k: string } {
  const { o } = c;
  const F = DataType.FLOAT;
  const H = s.heads;
  const kvH = s.kvHeads;
  const qRow = o.cast(atLast(c, o.op('Flatten', [s.query], 'rows', { axis: 2 })), F);
  if (!s.key) {
    // Packed Q|K|V [B, S, (H + 2·kvH)·hd].
    const q = o.slice(o.reshape(qRow, [0, H + 2 * kvH, -1]), 0, H, 1);
    const all = o.reshape(o.cast(s.query, F), [0, 0, H + 2 * kvH, -1]);
    const k = o.transpose(o.slice(all, H, H + kvH, 2), [0, 2, 1, 3]);
    return { q, k };
  }
  let q = qRow;
  let key = o.cast(s.key, F);
  if (s.qkvBias) {
    const parts = o.reshape(o.cast(s.qkvBias, F), [3, -1]);
    q = o.op('Add', [q, o.op('Gather', [parts, o.i64([0], [])], 'bias', { axis: 0 })], 'add');
    key = o.op('Add', [key, o.op('Gather', [parts, o.i64([1], [])], 'bias', { axis: 0 })], 'add');
  }
  return { q: o.reshape(q, [0, H, -1]), k: o.transpose(o.reshape(key, [0, 0, kvH, -1]), [0, 2, 1, 3]) };
}

/** The attention weights a fused op computes at each row's last real token, recomputed: [B, H, T]. */
function fusedRow(c: Ctx, s: FusedAttention): string {
  const { o } = c;
  const F = DataType.FLOAT;
  const H = s.heads;
  const kvH = s.kvHeads;
  let { q, k } = queryAndKeys(c, s);
  if (s.rotary) {
    const half = rotaryHalf(c, s);
    // A first prompt, right-padded: token t of a row sits at position t.
    const at = (cache: string, idx: string) => o.cast(o.op('Gather', [cache, idx], 'rot', { axis: 0 }), F);
    const qCos = o.unsqueeze(at(s.rotary.cos, c.sel.last), [1]);
    const qSin = o.unsqueeze(at(s.rotary.sin, c.sel.last), [1]);
    const kCos = at(s.rotary.cos, c.sel.positions);
    const kSin = at(s.rotary.sin, c.sel.positions);
    q = rope(o, q, qCos, qSin, half, s.rotary.interleaved, 3);
    k = rope(o, k, kCos, kSin, half, s.rotary.interleaved, 4);
  }
  // Scores [B, H, T]: query head h against KV head ⌊h / (H/kvH)⌋.
  const qg = o.reshape(q, [0, kvH, H / kvH, -1]);
  let sc = o.reshape(o.op('MatMul', [qg, o.transpose(k, [0, 1, 3, 2])], 'qk'), [0, H, -1]);
  if (s.scale !== null) sc = o.op('Mul', [sc, o.f32([s.scale], [])], 'scale');
  else {
    const hd = o.cast(o.slice(o.op('Shape', [q], 'shape'), 2, 3, 0), F);
    sc = o.op('Div', [sc, o.op('Sqrt', [hd], 'sqrt')], 'scale');
  }
  if (s.softcap > 0) {
    const cap = o.f32([s.softcap], []);
    sc = o.op('Mul', [o.op('Tanh', [o.op('Div', [sc, cap], 'cap')], 'tanh'), cap], 'cap');
  }
  if (s.attentionBias) {
    // [B|1, H|1, S|1, T]: the last real token's row [B, H|1, T] (row 0 when the bias broadcasts over S).
    const sDim = o.slice(o.op('Shape', [s.attentionBias], 'shape'), 2, 3, 0);
    const lastRow = o.op('Sub', [o.reshape(sDim, []), o.i64([1], [])], 'sub');
    const row = o.op('Where', [o.op('Less', [c.sel.last, lastRow], 'less'), c.sel.last, lastRow], 'min');
    sc = o.op('Add', [sc, o.cast(rowsAtLast(c, s.attentionBias, row), F)], 'bias');
  }
  // Keys the last real token may see: real (mask ≠ 0), not after it, within the local window.
  const pos = o.unsqueeze(c.sel.positions, [0]);
  const last = o.unsqueeze(c.sel.last, [1]);
  let allowed = o.op('And', [o.cast(c.sel.mask, DataType.BOOL),
    o.op('Less', [pos, o.op('Add', [last, o.i64([1], [])], 'add')], 'causal')], 'and');
  if (s.localWindow > 0) {
    // The window counts the query's own position: keys last−w+1..last (onnxruntime's kernels, Hugging Face's sliding_window).
    const from = o.op('Sub', [last, o.i64([s.localWindow], [])], 'sub');
    allowed = o.op('And', [allowed, o.op('Greater', [pos, from], 'window')], 'and');
  }
  sc = o.op('Where', [o.unsqueeze(allowed, [1]), sc, o.f32([-Infinity], [])], 'mask');
  if (s.smoothSoftmax || s.headSink) {
    // One more logit in the denominator: 0 (smooth softmax) or the head's sink.
    const col = s.headSink ? o.reshape(o.cast(s.headSink, F), [1, H, 1]) : o.f32([0], [1, 1, 1]);
    const colB = o.op('Expand', [col, o.concat([c.B1, o.i64([H, 1])], 0)], 'sink');
    const p = o.op('Softmax', [o.concat([sc, colB], -1)], 'softmax', { axis: -1 });
    return o.slice(p, 0, c.T1, -1);
  }
  return o.op('Softmax', [sc], 'softmax', { axis: -1 });
}
