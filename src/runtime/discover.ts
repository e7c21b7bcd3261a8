/**
 * Capture-point discovery by graph structure.
 *
 * Per decoder layer: the MLP (gate and up projections reading the same value, an activation
 * on the gate — Sigmoid·x, GELU's tanh approximation written out, or a fused op — their
 * product, the down projection reading it) and the residual sum the down projection flows
 * into (an Add, or the sum output of a Skip(Simplified)LayerNormalization), directly or through
 * a norm of the MLP's output (Gemma 2 / 3's post_feedforward_layernorm: decomposed RMSNorm or
 * SimplifiedLayerNormalization). Finally the lm_head projection feeding a graph output, looked
 * through a soft-capping cap · tanh(y / cap) (Gemma 2); its input is the final normalized
 * hidden state. Layers are numbered along the residual stream. Names of nodes and values are
 * never looked at.
 */
import type { ModelArch } from '../store/types.js';
import { hookName, type Hook } from '../hooks.js';
import type { CapturePoint, ProjectionRef } from './types.js';
import { LobesError } from '../util/errors.js';
import { GraphIndex, PASSTHROUGH } from '../onnx/index.js';
import { attrInt, dataTypeName, getAttr, type LoadedModel, type NodeProto } from '../onnx/index.js';
import { THROUGH, isConst, activationOf, residualAfter, type PointSource, type Projection } from './discover-ops.js';
export type { PointSource, Projection } from './discover-ops.js';

/** A capture point with where its tensor comes from in the graph. */
export type DiscoveredPoint = CapturePoint & { source: PointSource };

/** What a model's config files (config.json, genai_config.json) say about it; all optional. */
export interface ConfigHints {
  /** Model family (config.json model_type, genai_config.json type). */
  family?: string;
  /** Attention heads and KV heads. */
  heads?: number | null;
  kvHeads?: number | null;
  /** Head size (config.json head_dim, genai_config.json head_size), where it is not hidden/heads (Qwen3). */
  headDim?: number | null;
}

export interface MlpMatch {
  gate: Projection;
  up: Projection;
  down: Projection;
  act: string;
  /** Input value of the gate projection (the MLP input). */
  input: string;
  resid: PointSource | null;
  /** A value downstream of the residual sum, used to check layer order. */
  residAnchor: string | null;
}

export interface Discovery {
  arch: ModelArch;
  points: DiscoveredPoint[];
  mlps: MlpMatch[];
  lmHead: Projection;
  /**
   * The cap of a soft-capping cap · tanh(y / cap) between lm_head and the logits (Gemma 2's
   * final_logit_softcapping), or null: what re-applies lm_head elsewhere must apply it too.
   */
  logitSoftcap: number | null;
  /** Activation function found in the MLPs. */
  activation: string;
  index: GraphIndex;
}

/** The projection computed by node `n`, or null. */
export function asProjection(g: GraphIndex, n: NodeProto): Projection | null {
  const dom = n.domain ?? '';
  if ((n.opType === 'MatMul' && dom === '') || (n.opType === 'Gemm' && dom === '')) {
    if (n.opType === 'Gemm' && attrInt(n, 'transA', 0) !== 0) return null;
    let w = n.input[1];
    if (!w) return null;
    let transposed = n.opType === 'Gemm' && attrInt(n, 'transB', 0) === 1;
    // Look through Cast/Identity and a 2-D Transpose to the stored weight.
    for (let k = 0; k < 4; k++) {
      if (g.constTensor(w)) break;
      const p = g.prod(w);
      if (!p || p.domain) return null;
      if (PASSTHROUGH.has(p.opType)) w = p.input[0]!;
      else if (p.opType === 'Transpose') {
        const perm = getAttr(p, 'perm')?.ints?.map(Number);
        if (perm && !(perm.length === 2 && perm[0] === 1 && perm[1] === 0)) return null;
        transposed = !transposed;
        w = p.input[0]!;
      } else return null;
    }
    const t = g.constTensor(w);
    if (!t || t.dims.length !== 2) return null;
    const [r, c] = t.dims as [number, number];
    return {
      node: n,
      op: n.opType,
      weight: w!,
      layout: transposed ? 'out_in' : 'in_out',
      dIn: transposed ? c : r,
      dOut: transposed ? r : c,
      x: n.input[0]!,
      y: n.output[0]!,
      weightType: t.dataType,
    };
  }
  if (n.opType === 'MatMulNBits' && dom === 'com.microsoft') {
    const w = n.input[1];
    const t = g.constTensor(w);
    if (!w || !t) return null;
    const scales = n.input[2] || undefined;
    const zp = n.input[3] || undefined;
    const st = g.constTensor(scales);
    const ref: Projection = {
      node: n,
      op: 'MatMulNBits',
      weight: w,
      layout: 'nbits',
      dIn: attrInt(n, 'K', 0),
      dOut: attrInt(n, 'N', 0),
      bits: attrInt(n, 'bits', 4),
      blockSize: attrInt(n, 'block_size', 32),
      x: n.input[0]!,
      y: n.output[0]!,
      weightType: st?.dataType,
    };
    if (scales) ref.scales = scales;
    if (zp) ref.zeroPoints = zp;
    return ref;
  }
  return null;
}

function shortDtype(t: number | undefined): string {
  const n = dataTypeName(t);
  return n === 'float32' ? 'fp32' : n === 'float16' ? 'fp16' : n === 'bfloat16' ? 'bf16' : n;
}

function unsupportedGraph(file: string, what: string, hint?: string): LobesError {
  return new LobesError(`unsupported graph: ${what}`, {
    file,
    hint: hint ??
      'lobes needs a Llama-class decoder (gate/up/down MLP, residual stream, lm_head); run `lobes inspect` for details',
  });
}

/** Builds the error for a graph that does not match the pattern. */
type Unsupported = (what: string) => LobesError;

/**
 * Find every capture point of a loaded model. `hints` are what the model's config files say
 * (read by the caller); the graph supplies whatever they leave out. Throws a LobesError
 * naming the missing part.
 */
export function discover(m: LoadedModel, hints: ConfigHints = {}): Discovery {
  // Model-local functions (ModelProto field 25) hide their bodies from this analysis.
  const hasFunctions = (m.model.unknown ?? []).some((u) => u.field === 25);
  const unsupported: Unsupported = (what) =>
    unsupportedGraph(m.file, what, hasFunctions
      ? 'the model uses local functions; inline them first (Python: onnx.inliner.inline_local_functions) and retry'
      : undefined);
  const g = new GraphIndex(m.model.graph!);
  const projs = findProjections(g, unsupported);
  const mlps = findMlps(g, projs, unsupported);
  const { hidden, intermediate } = checkLayers(g, mlps, unsupported);
  const { lmHead, cap } = findLmHead(g, projs, mlps, hidden, unsupported);
  const arch = architecture(g, mlps, lmHead, hints);
  const points = capturePoints(g, mlps, lmHead, hidden, intermediate);
  return { arch, points, mlps, lmHead, logitSoftcap: cap, activation: mlps[0]!.act, index: g };
}

/** Every node computing a projection (a matrix product with a constant weight). */
function findProjections(g: GraphIndex, unsupported: Unsupported): Map<NodeProto, Projection> {
  const projs = new Map<NodeProto, Projection>();
  for (const n of g.nodes) {
    const p = asProjection(g, n);
    if (p) projs.set(n, p);
  }
  if (projs.size === 0) throw unsupported('no projections (MatMul, Gemm or MatMulNBits with a constant weight) found');
  return projs;
}

/** MLPs: Mul(act(gate(x)), up(x)) read by a down projection, sorted in graph order. */
function findMlps(g: GraphIndex, projs: Map<NodeProto, Projection>, unsupported: Unsupported): MlpMatch[] {
  const projOf = (v: string): Projection | undefined => {
    const n = g.prod(g.skipBack(v, THROUGH));
    return n ? projs.get(n) : undefined;
  };
  const mlps: MlpMatch[] = [];
  let sawGateUp = false;
  for (const n of g.nodes) {
    if (n.opType !== 'Mul' || n.domain || n.input.length !== 2) continue;
    let match: Omit<MlpMatch, 'down' | 'resid' | 'residAnchor'> | null = null;
    for (let k = 0; k < 2 && !match; k++) {
      const up = projOf(n.input[1 - k]!);
      const act = activationOf(g, n.input[k]!);
      if (!up || !act) continue;
      const gate = projOf(act[0]);
      if (!gate || gate === up) continue;
      if (g.skipBack(gate.x, THROUGH) !== g.skipBack(up.x, THROUGH)) continue;
      match = { gate, up, act: act[1], input: gate.x };
    }
    if (!match) continue;
    sawGateUp = true;
    const downs = g.consThrough(n.output[0]!, THROUGH).map(([c]) => projs.get(c)).filter((p): p is Projection => !!p);
    if (downs.length !== 1) continue;
    const down = downs[0]!;
    const r = residualAfter(g, down);
    mlps.push({ ...match, down, resid: r?.src ?? null, residAnchor: r?.anchor ?? null });
  }
  if (mlps.length === 0) {
    throw unsupported(
      sawGateUp
        ? 'found gate ⊙ up products but no down projection reading one'
        : 'no gated MLP found (no Mul of an activated projection (gate: Sigmoid·x or Silu/QuickGelu/Gelu) with a second projection (up) of the same input)',
    );
  }
  return mlps.sort((a, b) => g.order.get(a.down.node)! - g.order.get(b.down.node)!);
}

/**
 * Check that the MLPs are layers of one residual stream (each layer's MLP input descends
 * from the previous layer's residual sum) with the same shapes; returns those shapes.
 */
function checkLayers(g: GraphIndex, mlps: MlpMatch[],
  unsupported: Unsupported): { hidden: number; intermediate: number }
{
  for (let i = 0; i < mlps.length; i++) {
    const l = mlps[i]!;
    if (!l.resid || !l.residAnchor) {
      throw unsupported(
        `layer ${i}: the down projection output does not flow into a residual Add or SkipSimplifiedLayerNormalization`,
      );
    }
    if (i > 0 && !g.reaches(mlps[i - 1]!.residAnchor!, l.input)) {
      throw unsupported(`layer ${i}: its MLP input does not descend from the residual stream of layer ${i - 1}`);
    }
  }
  const hidden = mlps[0]!.gate.dIn;
  const intermediate = mlps[0]!.gate.dOut;
  for (const [i, l] of mlps.entries()) {
    if (l.gate.dIn !== hidden || l.up.dIn !== hidden || l.down.dOut !== hidden || l.gate.dOut !== intermediate ||
      l.up.dOut !== intermediate || l.down.dIn !== intermediate)
    {
      throw unsupported(
        `layer ${i}: MLP shapes differ from layer 0 (gate ${l.gate.dIn}→${l.gate.dOut}, up ${l.up.dIn}→${l.up.dOut}, down ${l.down.dIn}→${l.down.dOut})`,
      );
    }
  }
  return { hidden, intermediate };
}

/** lm_head: the widest projection after the last layer whose output reaches a graph output. */
function findLmHead(g: GraphIndex, projs: Map<NodeProto, Projection>, mlps: MlpMatch[], hidden: number,
  unsupported: Unsupported): { lmHead: Projection; cap: number | null }
{
  const lastAnchor = mlps[mlps.length - 1]!.residAnchor!;
  const mlpNodes = new Set(mlps.flatMap((l) => [l.gate.node, l.up.node, l.down.node]));
  let lmHead: Projection | null = null;
  let cap: number | null = null;
  const through = new Set(['Cast', 'Identity', 'Reshape', 'Squeeze', 'Unsqueeze', 'Slice']);
  for (const out of g.graph.output) {
    if (!out.name) continue;
    const sc = softcapInput(g, g.skipBack(out.name, through), through);
    const src = g.prod(sc.value);
    const p = src ? projs.get(src) : undefined;
    if (!p || mlpNodes.has(p.node) || p.dIn !== hidden) continue;
    if (!g.reaches(lastAnchor, p.x)) continue;
    if (!lmHead || p.dOut > lmHead.dOut) {
      lmHead = p;
      cap = sc.cap;
    }
  }
  if (!lmHead)
    throw unsupported(`no lm_head: no projection of width ${hidden} after the last layer feeds a graph output`);
  return { lmHead, cap };
}

/**
 * `v` with a soft-capping cap · tanh(y / cap) (Gemma 2's final_logit_softcapping: Mul by a
 * constant of Tanh of Div by (or Mul by) a constant) looked through to y; else `v`.
 */
function softcapInput(g: GraphIndex, v: string, through: Set<string>): { value: string; cap: number | null } {
  const none = { value: v, cap: null };
  const m = g.prod(v);
  if (!m || m.opType !== 'Mul' || m.domain || m.input.length !== 2) return none;
  const c = m.input.findIndex((i) => isConst(g, i));
  if (c < 0) return none;
  const t = g.prod(g.skipBack(m.input[1 - c]!, THROUGH));
  if (!t || t.opType !== 'Tanh' || t.domain) return none;
  const d = g.prod(g.skipBack(t.input[0]!, THROUGH));
  if (!d || d.domain || (d.opType !== 'Div' && d.opType !== 'Mul') || !isConst(g, d.input[1])) return none;
  const outer = g.constNumbers(g.skipBack(m.input[c]!, THROUGH));
  const inner = g.constNumbers(g.skipBack(d.input[1]!, THROUGH));
  if (outer?.length !== 1 || inner?.length !== 1) return none;
  const innerCap = d.opType === 'Div' ? inner[0]! : 1 / inner[0]!;
  // the same cap outside and inside (to float precision), else it is not a soft-cap
  if (!(outer[0]! > 0) || Math.abs(innerCap - outer[0]!) > 1e-6 * outer[0]!) return none;
  return { value: g.skipBack(d.input[0]!, through), cap: outer[0]! };
}

/** Attention heads and KV heads: from the config files, else attention ops, else the KV-cache inputs. */
function attentionHeads(g: GraphIndex, hidden: number,
  hints: ConfigHints): { heads: number | null; kvHeads: number | null }
{
  let heads = hints.heads ?? null;
  let kvHeads = hints.kvHeads ?? null;
  if (heads === null || kvHeads === null) {
    for (const n of g.nodes) {
      if (n.domain !== 'com.microsoft') continue;
      if (n.opType === 'GroupQueryAttention') {
        heads ??= attrInt(n, 'num_heads', 0) || null;
        kvHeads ??= attrInt(n, 'kv_num_heads', 0) || null;
        break;
      }
      if (n.opType === 'MultiHeadAttention' || n.opType === 'Attention') {
        heads ??= attrInt(n, 'num_heads', 0) || null;
        break;
      }
    }
  }
  const past = [...g.inputs.values()].filter((v) =>
    (v.type?.tensorType?.shape?.dim.length ?? 0) === 4 && isPastInput(g, v.name!)
  );
  if (past.length) {
    const s = g.shapeOf(past[0]!.name!)!;
    if (kvHeads === null && typeof s[1] === 'number') kvHeads = s[1];
    if (heads === null && typeof s[3] === 'number' && s[3] > 0) heads = hidden / s[3];
  }
  if (heads !== null && kvHeads === null && past.length === 0) kvHeads = heads;
  return { heads, kvHeads };
}

/** The architecture summary `lobes inspect` prints and run manifests store. */
function architecture(g: GraphIndex, mlps: MlpMatch[], lmHead: Projection, hints: ConfigHints): ModelArch {
  const first = mlps[0]!;
  const { heads, kvHeads } = attentionHeads(g, first.gate.dIn, hints);
  const nbits = first.gate.op === 'MatMulNBits' ? first.gate : null;
  return {
    family: hints.family ?? 'llama',
    layers: mlps.length,
    hidden: first.gate.dIn,
    intermediate: first.gate.dOut,
    heads,
    kvHeads,
    vocab: lmHead.dOut,
    dtype: shortDtype(first.gate.weightType),
    quantization: nbits ? `int${nbits.bits} (MatMulNBits, block ${nbits.blockSize})` : null,
  };
}

/** The public description of a projection, under its Hugging Face name. */
function projectionRef(proj: string, p: Projection): ProjectionRef {
  const r: ProjectionRef = { proj, op: p.op, weight: p.weight, layout: p.layout, dIn: p.dIn, dOut: p.dOut };
  if (p.scales) r.scales = p.scales;
  if (p.zeroPoints) r.zeroPoints = p.zeroPoints;
  if (p.bits !== undefined) r.bits = p.bits;
  if (p.blockSize !== undefined) r.blockSize = p.blockSize;
  return r;
}

/**
 * The final hidden state: lm_head's input, or the value before a Slice on the sequence axis
 * (an export may keep only some positions before lm_head; the capture needs every position).
 */
function finalHiddenValue(g: GraphIndex, lmHead: Projection): string {
  let v = lmHead.x;
  for (let k = 0; k < 4; k++) {
    const p = g.prod(v);
    if (!p || p.domain || !(PASSTHROUGH.has(p.opType) || p.opType === 'Slice')) break;
    v = p.input[0]!;
  }
  return g.prod(v) === undefined && !g.inputs.has(v) ? lmHead.x : v;
}

/** The capture points: final.hidden (and its mean), then per layer its MLP input, down-projection input and residual sum (and its mean). */
function capturePoints(g: GraphIndex, mlps: MlpMatch[], lmHead: Projection, hidden: number,
  intermediate: number): DiscoveredPoint[]
{
  const finalValue = finalHiddenValue(g, lmHead);
  const points: DiscoveredPoint[] = [];
  const at = <H extends Hook>(h: H) => ({ ...h, name: hookName(h) });
  points.push({
    ...at({ layer: null, site: 'final.hidden' }),
    dim: hidden,
    value: finalValue,
    projections: [projectionRef('lm_head', lmHead)],
    source: { kind: 'value', value: finalValue },
  });
  // the mean-pooled sites read the same values; the capture graph averages them over the real tokens
  points.push({ ...at({ layer: null, site: 'final.mean' }), dim: hidden, value: finalValue,
    source: { kind: 'value', value: finalValue } });
  mlps.forEach((l, i) => {
    points.push({
      ...at({ layer: i, site: 'mlp.in' }),
      dim: hidden,
      value: l.input,
      projections: [projectionRef('gate_proj', l.gate), projectionRef('up_proj', l.up)],
      source: { kind: 'value', value: l.input },
    });
    points.push({
      ...at({ layer: i, site: 'mlp.down_in' }),
      dim: intermediate,
      value: l.down.x,
      projections: [projectionRef('down_proj', l.down)],
      source: { kind: 'value', value: l.down.x },
    });
    const rs = l.resid!;
    const resid = at({ layer: i, site: 'resid_out' });
    points.push({
      ...resid,
      dim: hidden,
      value: rs.kind === 'value' ? rs.value : `lobes.${resid.name}`,
      source: rs,
    });
    points.push({ ...at({ layer: i, site: 'resid_out.mean' }), dim: hidden,
      value: rs.kind === 'value' ? rs.value : `lobes.${resid.name}`, source: rs });
  });
  return points;
}

/**
 * Whether a 4-D graph input is a KV-cache input: it feeds an attention op (directly or via
 * Concat) — judged by structure, not by its name.
 */
export function isPastInput(g: GraphIndex, name: string): boolean {
  const shape = g.shapeOf(name);
  if (!shape || shape.length !== 4) return false;
  for (const [c] of g.consThrough(name)) {
    if (c.domain === 'com.microsoft' && /Attention$/.test(c.opType)) return true;
    if (c.opType === 'Concat' && !c.domain) return true;
  }
  return false;
}
