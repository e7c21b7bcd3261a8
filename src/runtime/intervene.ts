/**
 * Interventions: edit an activation inside the graph, the way a forward hook edits a module's
 * output, so that everything downstream (later layers, the captures, the logits) sees the edited
 * value. One edit function serves every engine (capture, log-likelihood, attention, answer
 * scoring): it runs on the model before the engine's own surgery.
 *
 *   add      x + v          (steering: v a vector of the hook's width, or one number for every component)
 *   scale    x · s          (s one number, or a vector of the hook's width, component by component)
 *   replace  v              (every position's value replaced by the vector, or one number)
 *   zero     0
 *
 * `positions: 'last'` edits only each row's last real token (the mask's last `seq` columns, as
 * the scoring heads read them); 'all' (the default) every position, padding included (padding
 * is never read by a real token).
 *
 * The edit goes right after the node producing the hook's value: that node writes the old
 * value under a new name (`lobes.iv.{k}.pre`), the edit writes the value's own name, so every
 * consumer of the value (subgraphs and graph outputs included) and the capture at that hook
 * read the edited value. A residual sum inside a fused Skip(Simplified)LayerNormalization is
 * taken apart: the fused node's sum is edited and the node runs again on the edited sum (with a
 * zero skip), so that its normalized output, which the next layer reads, is of the edited sum.
 * The vector is an initializer, cast to the value's type in the graph (CastLike; a float16
 * model computes the edit in float16).
 */
import type { ModelProto, NodeProto } from '../onnx/index.js';
import { DataType, GraphIndex, makeNode, makeTensor } from '../onnx/index.js';
import { hookName, parseHook, sitePool, type HookSite } from '../hooks.js';
import { LobesError } from '../util/errors.js';
import type { DiscoveredPoint, Discovery } from './discover.js';
import type { Intervention, InterventionOp } from './types.js';
import type { InterventionRecord } from '../store/types.js';
import { THROUGH } from './discover-ops.js';
import { GraphEdit, opsetOf } from './surgery.js';

export type { Intervention, InterventionOp } from './types.js';
export const INTERVENTION_OPS: readonly InterventionOp[] = ['add', 'scale', 'replace', 'zero'];

export type { InterventionRecord } from '../store/types.js';

/** Prefix of every value and node an intervention adds. */
export const IV_PREFIX = 'lobes.iv.';

/** The JSON form of interventions (what a run records to tell an edited run from a plain one). */
export function interventionRecords(ivs: readonly Intervention[] | undefined): InterventionRecord[] {
  return (ivs ?? []).map((iv) => {
    const r: InterventionRecord = { hook: iv.hook, op: iv.op, positions: iv.positions ?? 'all' };
    if (iv.value !== undefined) r.value = typeof iv.value === 'number' ? iv.value : Array.from(iv.value);
    return r;
  });
}

/** Interventions from their JSON form. */
export function fromInterventionRecords(rs: readonly InterventionRecord[] | undefined): Intervention[] {
  return (rs ?? []).map((r) => ({ hook: r.hook, op: r.op, positions: r.positions,
    ...(r.value === undefined ? {} : { value: typeof r.value === 'number' ? r.value : Float32Array.from(r.value) }) })
  );
}

/** `layers.3.resid_out:add[64]@last`: a short description for messages. */
export function describeIntervention(iv: Intervention): string {
  const v = iv.value === undefined ? '' : typeof iv.value === 'number' ? `:${iv.value}` : `[${iv.value.length}]`;
  return `${iv.hook}:${iv.op}${v}${iv.positions === 'last' ? '@last' : ''}`;
}

/** The point an intervention edits, after checking the intervention against the model (one-line LobesError otherwise). */
export function interventionPoint(iv: Intervention, points: readonly DiscoveredPoint[],
  file?: string): DiscoveredPoint
{
  const where = `intervention ${iv.hook}`;
  const fail = (msg: string, hint?: string) => new LobesError(msg, { file, where, hint });
  const h = parseHook(iv.hook);
  if (!h)
    throw fail(`unknown hook "${iv.hook}"`,
      "hooks look like layers.3.resid_out, layers.3.mlp.in, layers.3.mlp.down_in or final.hidden; `lobes inspect` lists a model's");
  if (sitePool(h.site as HookSite) === 'mean')
    throw fail(`${iv.hook} is a mean over the positions, not a value of the model; edit the value it averages`);
  const p = points.find((q) => q.name === hookName(h));
  if (!p)
    throw fail(`the model has no editable value at ${iv.hook}`,
      h.layer !== null ? 'check the layer index with `lobes inspect`' : undefined);
  if (!(INTERVENTION_OPS as readonly string[]).includes(iv.op))
    throw fail(`unknown operation "${iv.op}" (known: ${INTERVENTION_OPS.join(', ')})`);
  if (iv.positions !== undefined && iv.positions !== 'all' && iv.positions !== 'last')
    throw fail(`positions must be 'all' or 'last', not "${String(iv.positions)}"`);
  const v = iv.value;
  if (iv.op === 'zero') {
    if (v !== undefined) throw fail('zero takes no value');
    return p;
  }
  if (v === undefined)
    throw fail(
      `${iv.op} needs a value (${iv.op === 'scale' ? 'a number or' : 'a vector of'} ${p.dim} numbers${
        iv.op === 'scale' ? '' : ', or one number'
      })`,
    );
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw fail(`the value ${v} is not a finite number`);
    return p;
  }
  if (!(v instanceof Float32Array)) throw fail('the value must be a number or a Float32Array');
  if (v.length !== p.dim) throw fail(`the vector has ${v.length} numbers but ${iv.hook} has width ${p.dim}`);
  const bad = v.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw fail(`component ${bad} of the vector is not a finite number (${v[bad]})`);
  return p;
}

/** Check every intervention against the model's points (one-line LobesError on the first bad one). */
export function checkInterventions(ivs: readonly Intervention[] | undefined, points: readonly DiscoveredPoint[],
  file?: string): void
{
  for (const iv of ivs ?? []) interventionPoint(iv, points, file);
}

export interface IntervenedModel {
  model: ModelProto;
  /** The discovered points, each now naming the value the edited graph holds there (captures read these). */
  points: DiscoveredPoint[];
}

const SKIP_NORMS = new Set(['SkipSimplifiedLayerNormalization', 'SkipLayerNormalization']);

/** What every edit shares: the nodes and initializers being edited, the original graph's index, its opset, its mask input. */
interface Ctx {
  e: GraphEdit;
  g: GraphIndex;
  opset: number;
  /** The graph's attention-mask input, or null. */
  mask: string | null;
  file?: string;
}

/**
 * The model with the interventions inserted, in order (two on one hook apply one after the
 * other), and the points to capture from it. No interventions: the model and points as they are.
 */
export function applyInterventions(model: ModelProto, disc: Discovery, ivs: readonly Intervention[] | undefined,
  file?: string): IntervenedModel
{
  let points = disc.points;
  if (!ivs || ivs.length === 0) return { model, points };
  const g = model.graph!;
  const mask = g.input.find((v) => v.name === 'attention_mask')?.name ?? null;
  const ctx: Ctx = { e: new GraphEdit(g), g: new GraphIndex(g), opset: opsetOf(model), mask, file };
  ivs.forEach((iv, k) => {
    const p = interventionPoint(iv, points, file);
    const tag = `${IV_PREFIX}${k}`;
    const target = editTarget(p, disc, ctx.g);
    if (target.kind === 'sum') {
      const edited = editFusedSum(ctx, target.inputs, iv, tag);
      // the point and its mean read the edited sum from now on
      points = points.map((
        q,
      ) => (q.source.kind === 'sum' && q.source.inputs.join() === target.inputs.join()
        ? { ...q, value: edited, source: { kind: 'value', value: edited } }
        : q)
      );
      return;
    }
    editValue(ctx, target.value, iv, tag);
  });
  return { model: { ...model, graph: { ...g, node: ctx.e.nodes, initializer: ctx.e.inits } }, points };
}

/**
 * The graph value to edit for a point. An MLP's input is the value gate_proj and up_proj both
 * read (the point names gate_proj's, which may be a cast only gate_proj reads).
 */
function editTarget(p: DiscoveredPoint, disc: Discovery, g: GraphIndex): { kind: 'value'; value: string } | {
  kind: 'sum';
  inputs: string[];
} {
  if (p.source.kind === 'sum') return { kind: 'sum', inputs: p.source.inputs };
  if (p.site === 'mlp.in' && p.layer !== null)
    return { kind: 'value', value: g.skipBack(disc.mlps[p.layer]!.gate.x, THROUGH) };
  return { kind: 'value', value: p.source.value };
}

/** Adds nodes of one output each to a list, and constants to the edit. */
class Nodes {
  readonly list: NodeProto[] = [];
  /** `typeRef`: a value of the original graph with the edited value's type (for Cast below opset 15). */
  constructor(
    readonly ctx: Ctx,
    readonly tag: string,
    readonly typeRef: string,
  ) {}

  /** A node writing `{tag}.{out}`. */
  node(op: string, ins: string[], out: string, attrs: Record<string, any> = {}): string {
    return this.named(op, ins, `${this.tag}.${out}`, attrs);
  }

  /** A node writing the value `out` itself. */
  named(op: string, ins: string[], out: string, attrs: Record<string, any> = {}): string {
    // node names are the tag's own (the value's name may be written again by a later edit of the same hook)
    this.list.push(makeNode(op, ins, [out], attrs, undefined, `${this.tag}.node${this.list.length}`));
    return out;
  }

  i64(name: string, vals: number[], dims: number[] = [vals.length]): string {
    const n = `${this.tag}.${name}`;
    this.ctx.e.inits.push(makeTensor(n, DataType.INT64, dims, BigInt64Array.from(vals.map(BigInt))));
    return n;
  }

  f32(name: string, vals: Float32Array, dims: number[]): string {
    const n = `${this.tag}.${name}`;
    this.ctx.e.inits.push(makeTensor(n, DataType.FLOAT, dims, vals));
    return n;
  }

  /** float32 `c` in the type of `x`: CastLike from opset 15, else a Cast to the type found for x. */
  castLike(c: string, x: string, out: string): string {
    if (this.ctx.opset >= 15) return this.node('CastLike', [c, x], out);
    const t = valueType(this.ctx.g, this.typeRef);
    if (t === undefined)
      throw new LobesError(
        `cannot tell the element type of ${this.typeRef} to cast the intervention's value to (opset ${this.ctx.opset} has no CastLike)`,
        { file: this.ctx.file },
      );
    return this.node('Cast', [c], out, { to: t });
  }
}

const FLOATS = new Set<number>([DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE]);

/** The element type of a float value: declared, a Cast's target, or a float constant it is computed with (looked back a few nodes). */
function valueType(g: GraphIndex, v: string, depth = 12): number | undefined {
  const declared = g.elemTypeOf(v) ?? g.constTensor(v)?.dataType;
  if (declared !== undefined) return declared;
  const p = g.prod(v);
  if (!p || depth === 0) return undefined;
  if (p.opType === 'Cast' && !p.domain) {
    const to = p.attribute.find((a) => a.name === 'to')?.i;
    return to === undefined ? undefined : Number(to);
  }
  for (const i of p.input) {
    const t = g.constTensor(i)?.dataType;
    if (t !== undefined && FLOATS.has(t)) return t;
  }
  for (const i of p.input) {
    const t = i ? valueType(g, i, depth - 1) : undefined;
    if (t !== undefined && FLOATS.has(t)) return t;
  }
  return undefined;
}

/** Add the nodes computing op(x) into `out` (at every position, or at each row's last real token). */
function opNodes(n: Nodes, x: string, out: string, iv: Intervention): void {
  const last = iv.positions === 'last';
  const v = iv.value;
  const c = v === undefined
    ? n.f32('zero', Float32Array.of(0), [])
    : typeof v === 'number'
    ? n.f32('value', Float32Array.of(v), [])
    : n.f32('value', v, [v.length]);
  const cx = n.castLike(c, x, 'value_cast');
  const put = (op: string, ins: string[]) => (last ? n.node(op, ins, 'edited') : n.named(op, ins, out));
  let edited: string;
  if (iv.op === 'add') edited = put('Add', [x, cx]);
  else if (iv.op === 'scale') edited = put('Mul', [x, cx]);
  else edited = put('Expand', [cx, n.node('Shape', [x], 'shape')]);
  if (last) n.named('Where', [lastMask(n, x), edited, x], out);
}

/**
 * bool, x's shape but its last axis 1: true at each row's last real token. The current tokens
 * are input_ids' [batch, seq]; the mask's last seq columns say which are real (all of them when
 * the model has no mask input). x may be [batch, seq, dim] or [batch·seq, dim].
 */
function lastMask(n: Nodes, x: string): string {
  const { opset, mask } = n.ctx;
  const idShape = n.node('Shape', ['input_ids'], 'ids_shape');
  const S1 = n.node('Slice', [idShape, n.i64('one', [1]), n.i64('two', [2])], 'S1');
  const S = opset >= 13
    ? n.node('Squeeze', [S1, n.i64('axis0', [0])], 'S')
    : n.node('Squeeze', [S1], 'S', { axes: [0] });
  const ar = n.node('Range', [n.i64('zero_s', [0], []), S, n.i64('one_s', [1], [])], 'arange_S');
  let last: string;
  if (mask) {
    const m64 = n.node('Cast', [mask], 'mask_i64', { to: DataType.INT64 });
    const cur = n.node('Slice', [m64, n.node('Neg', [S1], 'negS'), n.i64('end', [Number.MAX_SAFE_INTEGER]),
      n.i64('axis1', [1])], 'mask_cur');
    const w = n.node('Mul', [cur, ar], 'mask_pos');
    last = opset >= 18
      ? n.node('ReduceMax', [w, n.i64('axes1', [1])], 'last', { keepdims: 1 })
      : n.node('ReduceMax', [w], 'last', { keepdims: 1, axes: [1] });
  } else last = n.node('Sub', [S1, n.i64('one_', [1])], 'last');
  const is = n.node('Equal', [ar, last], 'is_last'); // [batch, seq], or [1, seq] without a mask
  const B1 = n.node('Slice', [idShape, n.i64('zero1', [0]), n.i64('one1', [1])], 'B1');
  const full = n.node('Expand', [is, n.node('Concat', [B1, S1], 'BS', { axis: 0 })], 'is_last_bs');
  const xs = n.node('Shape', [x], 'x_shape');
  const lead = n.node('Slice', [xs, n.i64('lead_start', [0]), n.i64('lead_end', [-1])], 'x_lead');
  return n.node('Reshape', [full, n.node('Concat', [lead, n.i64('one_tail', [1])], 'mask_shape', { axis: 0 })],
    'is_last_x');
}

/**
 * Edit value `v`: its producer writes `{tag}.pre` instead, the edit reads that and writes `v`,
 * right after the producer. A value a fused Skip norm outputs as its sum is that node's sum, edited
 * as in editSkipNorm.
 */
function editValue(ctx: Ctx, v: string, iv: Intervention, tag: string): void {
  const { e } = ctx;
  const prod = e.nodes.find((n) => n.output.includes(v));
  if (!prod)
    throw new LobesError(`the value ${v} has no producing node to edit after`, { file: ctx.file,
      where: `intervention ${iv.hook}` });
  const n = new Nodes(ctx, tag, v);
  const pre = `${tag}.pre`;
  let renamed: NodeProto;
  if (SKIP_NORMS.has(prod.opType) && prod.domain === 'com.microsoft' && prod.output.indexOf(v) === 3) {
    // the node keeps computing the sum; a copy normalizes the edited sum for its other outputs
    renamed = { ...prod, output: prod.output.map((o, i) => (i === 3 ? pre : o ? `${tag}.unused${i}` : o)),
      name: `${tag}.sum_node` };
    opNodes(n, pre, v, iv);
    normAgain(n, prod, v);
  } else {
    renamed = { ...prod, output: prod.output.map((o) => (o === v ? pre : o)) };
    opNodes(n, pre, v, iv);
  }
  e.nodes.splice(e.nodes.indexOf(prod), 1, renamed, ...n.list);
}

/** A fused Skip norm with no sum output: its sum is built (Add), edited, and the node runs on the edited sum instead. */
function editFusedSum(ctx: Ctx, inputs: string[], iv: Intervention, tag: string): string {
  const { e } = ctx;
  const prod = e.nodes.find((n) =>
    SKIP_NORMS.has(n.opType) && n.domain === 'com.microsoft' && n.input[0] === inputs[0] && n.input[1] === inputs[1]
  );
  if (!prod)
    throw new LobesError('cannot find the fused norm whose residual sum this hook is', { file: ctx.file,
      where: `intervention ${iv.hook}` });
  const n = new Nodes(ctx, tag, inputs[0]!);
  let s = inputs[0]!;
  for (let i = 1; i < inputs.length; i++) s = n.node('Add', [s, inputs[i]!], `sum${i}`);
  const edited = `${tag}.sum`;
  opNodes(n, s, edited, iv);
  normAgain(n, prod, edited);
  e.nodes.splice(e.nodes.indexOf(prod), 1, ...n.list);
  return edited;
}

/** The fused norm `prod` again on `x` with a zero skip and no bias (the bias is in the sum), writing its outputs 0–2. */
function normAgain(n: Nodes, prod: NodeProto, x: string): void {
  const zero = n.node('Expand', [n.castLike(n.f32('skip_zero_f', Float32Array.of(0), []), x, 'skip_zero_c'),
    n.node('Shape', [x], 'sum_shape')], 'skip_zero');
  // Skip(Simplified)LayerNormalization reads input, skip, gamma, (beta,) (bias)
  const ins = [x, zero, ...prod.input.slice(2, prod.opType === 'SkipLayerNormalization' ? 4 : 3)];
  const outs = prod.output.slice(0, 3).map((o, i) => o || (i === 0 ? `${n.tag}.normed` : ''));
  n.list.push({ ...prod, input: ins, output: outs, name: `${n.tag}.norm_again` });
}
