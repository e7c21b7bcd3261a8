/**
 * Graph surgery for capture: add nodes that select each row's last real token (from the
 * attention mask, correct for left and right padding) or, for the mean-pooled sites
 * (`final.mean`, `layers.{i}.resid_out.mean`), average each row over its real tokens, cast to
 * float32 in-graph (only [batch, dim] leaves the session either way), make those
 * the only graph outputs, and prune everything the new outputs do not need (lm_head, logits,
 * KV-cache outputs are dropped where possible). Weights stay where they are: the edited graph
 * keeps the same external-data references.
 */
import type { GraphProto, ModelProto, NodeProto, TensorProto, ValueInfo } from '../onnx/index.js';
import { DataType, dataTypeSize, makeNode, makeTensor, makeValueInfo } from '../onnx/index.js';
import { LobesError } from '../util/errors.js';
import type { DiscoveredPoint } from './discover.js';
import { sitePool } from '../hooks.js';

export const OUT_PREFIX = 'lobes.out.';
/** Prefix of every value and node the capture graph adds. */
export const SEL_PREFIX = 'lobes.sel.';
const P = SEL_PREFIX;

export interface SurgeryResult {
  model: ModelProto;
  /** Hook name → graph output name. */
  outputs: Map<string, string>;
  /** Name of the mask input the selection reads. */
  maskInput: string;
  /** True when the graph had no mask input and one was added only for the selection. */
  maskAdded: boolean;
}

/** The opset version a model imports for `domain` (0 when it imports none). */
export function opsetOf(model: ModelProto, domain = ''): number {
  for (const o of model.opsetImport) if ((o.domain ?? '') === domain) return Number(o.version ?? 1);
  return 0;
}

/** Every value read by a node, including outer-scope values its subgraphs read. */
function nodeReads(n: NodeProto, out: string[] = []): string[] {
  for (const i of n.input) if (i) out.push(i);
  for (const a of n.attribute) {
    const gs: GraphProto[] = [];
    if (a.g) gs.push(a.g);
    if (a.graphs) gs.push(...a.graphs);
    for (const sg of gs) for (const sn of sg.node) nodeReads(sn, out);
  }
  return out;
}

/** A KV-cache input the capture graph makes itself (a dtype JavaScript cannot feed, e.g. bfloat16). */
export interface InGraphPast {
  /** Graph input to replace by an in-graph empty tensor [batch, kvHeads, 0, headDim]. */
  name: string;
  elemType: number;
  kv: [number, number];
  /** A window-sized buffer's length (FeedPlan.cacheLen): zeros [batch, kvHeads, len, headDim] instead. */
  len?: number;
}

/** The nodes and initializers of a graph being edited; what is added is named under the lobes.sel. prefix. */
export class GraphEdit {
  readonly nodes: NodeProto[];
  readonly inits: TensorProto[];

  constructor(g: GraphProto) {
    this.nodes = [...g.node];
    this.inits = [...g.initializer];
  }

  /** Add an int64 constant; returns its name. */
  c64(name: string, vals: number[], dims: number[]): string {
    this.inits.push(makeTensor(P + name, DataType.INT64, dims, BigInt64Array.from(vals.map(BigInt))));
    return P + name;
  }

  /** Add a float32 constant; returns its name. */
  f32(name: string, vals: number[], dims: number[]): string {
    this.inits.push(makeTensor(P + name, DataType.FLOAT, dims, Float32Array.from(vals)));
    return P + name;
  }

  /** Add a node with one output; returns the output's name. */
  add(op: string, ins: string[], out: string, attrs: Record<string, any> = {}): string {
    this.nodes.push(makeNode(op, ins, [P + out], attrs, undefined, P + out));
    return P + out;
  }
}

/**
 * Build the capture graph. `maskInput` is the graph input holding the attention mask
 * (int64 or int32 [batch, seq]); when the graph has none, pass null and an input
 * `lobes.attention_mask` is added for the selection. `inGraphPast` inputs are replaced by
 * empty tensors made in the graph.
 */
export function buildCaptureModel(model: ModelProto, hooks: DiscoveredPoint[], maskInput: string | null,
  inGraphPast: InGraphPast[] = []): SurgeryResult
{
  if (hooks.length === 0) throw new LobesError('no capture points selected');
  const g = model.graph!;
  const opset = opsetOf(model);
  if (opset < 11) throw new LobesError(`the model's ONNX opset ${opset} is older than 11, which lobes needs`);
  const e = new GraphEdit(g);
  const { inputs, mask, maskAdded, maskType } = editedInputs(g, inGraphPast, maskInput);
  const sel = lastTokenIndex(e, mask, maskType, opset);
  if (inGraphPast.length) emptyPasts(e, sel.B, inGraphPast);
  const { outputs, outInfos } = hookOutputs(e, hooks, sel, opset);
  const graph = prune(g, e, inputs, outInfos);
  return { model: { ...model, graph }, outputs, maskInput: mask, maskAdded };
}

/** The selection values lastTokenIndex adds (names of graph values). */
export interface LastToken {
  /** Batch size, int64 scalar. */
  B: string;
  /** Padded sequence length, int64 scalar. */
  T: string;
  /** The mask as int64 [batch, seq]. */
  mask: string;
  /** 0..T-1, int64 [seq]. */
  positions: string;
  /** Index of each row's last real token, int64 [batch]. */
  last: string;
  /** b·T + last[b], int64 [batch]: the rows to gather from a value flattened to [batch * seq, ...]. */
  flat: string;
}

/**
 * Index of each row's last real token in the flattened [batch * seq] rows:
 * last[b] = max_t mask[b,t]·t ; flat[b] = b·T + last[b].
 */
/**
 * The graph inputs an edited graph keeps: every input but the in-graph KV caches, plus
 * `lobes.attention_mask` (int64 [batch, sequence]) when the model has no mask input; with the
 * mask's name and element type.
 */
export function editedInputs(g: GraphProto, inGraphPast: InGraphPast[],
  maskInput: string | null | undefined): { inputs: ValueInfo[]; mask: string; maskAdded: boolean; maskType: number }
{
  const pastNames = new Set(inGraphPast.map((p) => p.name));
  const inputs: ValueInfo[] = g.input.filter((v) => !pastNames.has(v.name ?? ''));
  let mask = maskInput;
  let maskAdded = false;
  if (!mask) {
    mask = 'lobes.attention_mask';
    inputs.push(makeValueInfo(mask, DataType.INT64, ['batch', 'sequence']));
    maskAdded = true;
  }
  const maskType = inputs.find((v) => v.name === mask)?.type?.tensorType?.elemType ?? DataType.INT64;
  return { inputs, mask, maskAdded, maskType };
}

export function lastTokenIndex(e: GraphEdit, mask: string, maskType: number, opset: number): LastToken {
  const zero = e.c64('zero', [0], []);
  const one = e.c64('one', [1], []);
  const m64 = maskType === DataType.INT64 ? mask : e.add('Cast', [mask], 'mask_i64', { to: DataType.INT64 });
  const shape = e.add('Shape', [m64], 'mask_shape');
  const T = e.add('Gather', [shape, one], 'T', { axis: 0 });
  const B = e.add('Gather', [shape, zero], 'B', { axis: 0 });
  const ar = e.add('Range', [zero, T, one], 'arange_T');
  const weighted = e.add('Mul', [m64, ar], 'mask_pos');
  let last: string;
  if (opset >= 18) last = e.add('ReduceMax', [weighted, e.c64('axes1', [1], [1])], 'last', { keepdims: 0 });
  else last = e.add('ReduceMax', [weighted], 'last', { keepdims: 0, axes: [1] });
  const rows = e.add('Range', [zero, B, one], 'arange_B');
  const rowStart = e.add('Mul', [rows, T], 'row_start');
  return { B, T, mask: m64, positions: ar, last, flat: e.add('Add', [rowStart, last], 'flat_index') };
}

/** Empty KV-cache tensors [B, kvHeads, 0, headDim] (or zeros [B, kvHeads, len, headDim]) built in-graph (for dtypes JavaScript cannot feed, e.g. bfloat16). */
export function emptyPasts(e: GraphEdit, B: string, inGraphPast: InGraphPast[]): void {
  const B1 = e.add('Reshape', [B, e.c64('shape1', [1], [1])], 'B1');
  for (const [i, p] of inGraphPast.entries()) {
    const shp = e.add('Concat', [B1, e.c64(`past${i}.tail`, [p.kv[0], p.len ?? 0, p.kv[1]], [3])], `past${i}.shape`, {
      axis: 0,
    });
    const zero = makeTensor(`${P}past${i}.zero`, p.elemType, [1],
      new Uint8Array(Math.max(1, Math.ceil(dataTypeSize(p.elemType)))));
    e.nodes.push(makeNode('ConstantOfShape', [shp], [p.name], { value: zero }, undefined, `${P}past${i}`));
  }
}

/**
 * One float32 [batch, dim] graph output per hook: its value (or sum) at each row's last real
 * token, or for a mean-pooled site its mean over the row's real tokens (mask-weighted, in float32):
 * mean[b] = Σ_t mask[b,t]·v[b,t] / Σ_t mask[b,t]. Padded positions are removed with Where (not
 * multiplied by 0), so a non-finite value at a padded position cannot reach the mean.
 */
function hookOutputs(e: GraphEdit, hooks: DiscoveredPoint[], sel: LastToken,
  opset: number): { outputs: Map<string, string>; outInfos: ValueInfo[] }
{
  const outputs = new Map<string, string>();
  const outInfos: ValueInfo[] = [];
  let pool: MeanPool | null = null;
  for (const h of hooks) {
    const key = h.name.replace(/[^A-Za-z0-9_.]/g, '_');
    let v: string;
    if (h.source.kind === 'value') v = h.source.value;
    else {
      v = h.source.inputs[0]!;
      for (let i = 1; i < h.source.inputs.length; i++) v = e.add('Add', [v, h.source.inputs[i]!], `${key}.sum${i}`);
    }
    const outName = OUT_PREFIX + h.name;
    if (sitePool(h.site) === 'mean') {
      pool ??= meanPool(e, sel, opset);
      const shp = e.add('Concat', [pool.B1, pool.T1, e.c64(`${key}.dim`, [h.dim], [1])], `${key}.shape`, { axis: 0 });
      const x = e.add('Cast', [e.add('Reshape', [v, shp], `${key}.bt`)], `${key}.f32`, { to: DataType.FLOAT });
      const kept = e.add('Where', [pool.keep, x, pool.zero], `${key}.masked`);
      const sum = reduceSum(e, kept, 1, false, `${key}.sum`, opset);
      e.nodes.push(makeNode('Div', [sum, pool.count], [outName], {}, undefined, outName));
    } else {
      const shp = e.c64(`${key}.shape`, [-1, h.dim], [2]);
      const flat2 = e.add('Reshape', [v, shp], `${key}.rows`);
      const picked = e.add('Gather', [flat2, sel.flat], `${key}.last`, { axis: 0 });
      e.nodes.push(makeNode('Cast', [picked], [outName], { to: DataType.FLOAT }, undefined, outName));
    }
    outputs.set(h.name, outName);
    outInfos.push(makeValueInfo(outName, DataType.FLOAT, ['batch', h.dim]));
  }
  return { outputs, outInfos };
}

/** The values every mean-pooled hook shares. */
interface MeanPool {
  /** Batch size and padded length as int64 [1]. */
  B1: string;
  T1: string;
  /** The mask as bool [batch, seq, 1]. */
  keep: string;
  /** float32 scalar 0. */
  zero: string;
  /** Real tokens per row, float32 [batch, 1]. */
  count: string;
}

function meanPool(e: GraphEdit, sel: LastToken, opset: number): MeanPool {
  const one1 = e.c64('pool.shape1', [1], [1]);
  const B1 = e.add('Reshape', [sel.B, one1], 'pool.B1');
  const T1 = e.add('Reshape', [sel.T, one1], 'pool.T1');
  const shp3 = e.add('Concat', [B1, T1, e.c64('pool.one', [1], [1])], 'pool.mask_shape', { axis: 0 });
  const keep = e.add('Cast', [e.add('Reshape', [sel.mask, shp3], 'pool.mask3')], 'pool.keep', { to: DataType.BOOL });
  e.inits.push(makeTensor(SEL_PREFIX + 'pool.zero', DataType.FLOAT, [], Float32Array.of(0)));
  const maskF = e.add('Cast', [sel.mask], 'pool.maskf', { to: DataType.FLOAT });
  return { B1, T1, keep, zero: SEL_PREFIX + 'pool.zero', count: reduceSum(e, maskF, 1, true, 'pool.count', opset) };
}

/** ReduceSum over one axis (axes as an input from opset 13, as an attribute before). */
function reduceSum(e: GraphEdit, x: string, axis: number, keepdims: boolean, out: string, opset: number): string {
  if (opset >= 13)
    return e.add('ReduceSum', [x, e.c64(`${out}.axes`, [axis], [1])], out, { keepdims: keepdims ? 1 : 0 });
  return e.add('ReduceSum', [x], out, { keepdims: keepdims ? 1 : 0, axes: [axis] });
}

/**
 * The original graph outputs that GroupQueryAttention nodes still in the graph produce (the
 * present.* KV caches). They stay graph outputs although nobody reads them: as unread
 * intermediates, ONNX Runtime's CPU allocation planner lets a float16 GroupQueryAttention write
 * its present cache into a freed buffer sized for an empty past ("Shape mismatch attempting to
 * re-use buffer"). The engine fetches only the hook outputs, so they are never copied out.
 */
function keptKvOutputs(g: GraphProto, producer: Map<string, NodeProto>, keep: Set<NodeProto>): ValueInfo[] {
  return g.output.filter((v) => {
    const p = v.name !== undefined ? producer.get(v.name) : undefined;
    return p !== undefined && keep.has(p) && p.opType === 'GroupQueryAttention';
  });
}

/** The edited graph with only the nodes, initializers, inputs and value infos the new outputs need. */
export function prune(g: GraphProto, e: GraphEdit, inputs: ValueInfo[], outInfos: ValueInfo[]): GraphProto {
  const need = new Set<string>(outInfos.map((o) => o.name!));
  const producer = new Map<string, NodeProto>();
  for (const n of e.nodes) for (const o of n.output) if (o) producer.set(o, n);
  const keep = new Set<NodeProto>();
  const stack = [...need];
  while (stack.length) {
    const v = stack.pop()!;
    const p = producer.get(v);
    if (!p || keep.has(p)) continue;
    keep.add(p);
    for (const i of nodeReads(p)) {
      if (!need.has(i)) {
        need.add(i);
        stack.push(i);
      }
    }
  }
  return {
    ...g,
    node: e.nodes.filter((n) => keep.has(n)),
    initializer: e.inits.filter((t) => t.name !== undefined && need.has(t.name)),
    input: inputs.filter((v) => v.name !== undefined && need.has(v.name)),
    output: [...outInfos, ...keptKvOutputs(g, producer, keep)],
    valueInfo: g.valueInfo.filter((v) => v.name !== undefined && need.has(v.name)),
  };
}
