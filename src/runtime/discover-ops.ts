/**
 * The op patterns capture-point discovery (discover.ts) recognizes, by structure: the MLP's
 * activations (fused ops, Sigmoid·x, GELU's tanh approximation written out), the norms (fused,
 * or RMSNorm decomposed into ReduceMean, Sqrt and Div), and the residual sum a projection flows
 * into (an Add, a Skip(Simplified)LayerNormalization's sum, directly or through a norm of the
 * MLP's output as Gemma 2 / 3 have). Names of nodes and values are never looked at.
 */
import { getAttr, type GraphIndex, type NodeProto } from '../onnx/index.js';
import type { ProjectionRef } from './types.js';

/** A projection: a matrix product with a constant weight. */
export interface Projection extends Omit<ProjectionRef, 'proj'> {
  node: NodeProto;
  /** Activation input value. */
  x: string;
  /** Output value. */
  y: string;
  /** ONNX data type of the weight (scales for MatMulNBits). */
  weightType: number | undefined;
}

/** Where a capture point's tensor comes from. */
export type PointSource = { kind: 'value'; value: string } | { kind: 'sum'; inputs: string[] };

const FUSED_ACT: Record<string, string> = {
  Silu: 'silu',
  Swish: 'silu',
  QuickGelu: 'quick_gelu',
  Gelu: 'gelu',
  FastGelu: 'gelu_tanh',
  BiasGelu: 'gelu',
  Relu: 'relu',
  Mish: 'mish',
};

const SKIP_NORMS = new Set(['SkipSimplifiedLayerNormalization', 'SkipLayerNormalization']);

/** Ops looked through when matching the MLP pattern (dtype casts and 2-D/3-D reshapes around Gemm). */
export const THROUGH = new Set(['Cast', 'Identity', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze']);

/** Whether value `v` is a constant (an initializer or Constant node, looked through Cast). */
export const isConst = (g: GraphIndex, v: string | undefined) =>
  !!v && g.constTensor(g.skipBack(v, THROUGH)) !== undefined;

/**
 * The degree of `t` as a polynomial of `x` (constants 0, `x` 1) when `t` is computed from `x`
 * alone and constants within `depth` nodes of Mul, Add, Sub, Pow (constant exponent) and Div (by
 * a constant); else −1. GELU's tanh argument √(2/π)·(x + 0.044715·x³) has degree 3.
 */
function polyDegree(g: GraphIndex, t: string, x: string, depth = 8): number {
  const v = g.skipBack(t, THROUGH);
  if (v === x) return 1;
  if (isConst(g, v)) return 0;
  if (depth === 0) return -1;
  const p = g.prod(v);
  if (!p || p.domain || p.input.length !== 2) return -1;
  const [a, b] = [polyDegree(g, p.input[0]!, x, depth - 1), polyDegree(g, p.input[1]!, x, depth - 1)];
  if (a < 0 || b < 0) return -1;
  switch (p.opType) {
    case 'Mul':
      return a + b;
    case 'Add':
    case 'Sub':
      return Math.max(a, b);
    case 'Div':
      return b === 0 ? a : -1;
    case 'Pow': {
      const e = g.constNumbers(g.skipBack(p.input[1]!, THROUGH));
      return b === 0 && e?.length === 1 && Number.isInteger(e[0]) && e[0]! > 0 ? a * e[0]! : -1;
    }
    default:
      return -1;
  }
}

/**
 * If `p` is GELU's tanh approximation written out, x · c · (1 + tanh(poly(x))) with poly of
 * degree 3 (c = 0.5; the factors in any order of Mul / Add with constants, one of them the
 * Add of 1), return x.
 */
function geluTanhOf(g: GraphIndex, p: NodeProto): string | null {
  if (p.opType !== 'Mul' || p.domain) return null;
  for (let k = 0; k < 2; k++) {
    const x = g.skipBack(p.input[k]!, THROUGH);
    if (isConst(g, x)) continue;
    // Walk the other factor back through Mul / Add with a constant operand to a Tanh.
    let v = p.input[1 - k]!;
    let plusOne = false;
    for (let hop = 0; hop < 4; hop++) {
      const q = g.prod(g.skipBack(v, THROUGH));
      if (!q || q.domain) break;
      if (q.opType === 'Tanh') {
        if (plusOne && polyDegree(g, q.input[0]!, x) === 3) return p.input[k]!;
        break;
      }
      if ((q.opType !== 'Mul' && q.opType !== 'Add') || q.input.length !== 2) break;
      const c = q.input.findIndex((i) => isConst(g, i));
      if (c < 0) break;
      if (q.opType === 'Add') {
        const one = g.constNumbers(g.skipBack(q.input[c]!, THROUGH));
        plusOne ||= one?.length === 1 && Math.abs(one[0]! - 1) < 1e-3;
      }
      v = q.input[1 - c]!;
    }
  }
  return null;
}

/** If `a` is act(g) (fused op, g·Sigmoid(g), possibly g·Sigmoid(α·g), or tanh-GELU written out), return [g, act name]. */
export function activationOf(g: GraphIndex, a: string): [string, string] | null {
  const p = g.prod(g.skipBack(a, THROUGH));
  if (!p) return null;
  const fused = FUSED_ACT[p.opType];
  if (fused) {
    // QuickGelu is x·sigmoid(αx); with α = 1 (ORT's fusion of SiLU) it is SiLU.
    if (p.opType === 'QuickGelu' && Math.abs((getAttr(p, 'alpha')?.f ?? 1.702) - 1) < 1e-6)
      return [p.input[0]!, 'silu'];
    // ONNX Gelu (opset 20) with approximate "tanh": what onnxruntime-genai's builder writes for Gemma.
    if (p.opType === 'Gelu' && !p.domain &&
      new TextDecoder().decode(getAttr(p, 'approximate')?.s ?? new Uint8Array()) === 'tanh')
      return [p.input[0]!, 'gelu_tanh'];
    return [p.input[0]!, fused];
  }
  if (p.opType === 'Mul' && !p.domain) {
    const gx = geluTanhOf(g, p);
    if (gx) return [gx, 'gelu_tanh'];
    for (let k = 0; k < 2; k++) {
      const s = g.prod(g.skipBack(p.input[k]!, THROUGH));
      const x = g.skipBack(p.input[1 - k]!, THROUGH);
      if (!s || s.opType !== 'Sigmoid' || s.domain) continue;
      const sin = g.skipBack(s.input[0]!, THROUGH);
      if (sin === x) return [p.input[1 - k]!, 'silu'];
      // Sigmoid(α·x): QuickGelu-style.
      const m = g.prod(sin);
      if (m && m.opType === 'Mul' && !m.domain) {
        for (let j = 0; j < 2; j++) {
          if (g.skipBack(m.input[j]!, THROUGH) === x && g.constNumbers(m.input[1 - j]!)?.length === 1)
            return [p.input[1 - k]!, 'quick_gelu'];
        }
      }
    }
  }
  return null;
}

/** Norms whose first input is normalized (a post-norm of the MLP output, Gemma's post_feedforward_layernorm). */
const NORMS = new Set(['SimplifiedLayerNormalization', 'RMSNormalization', 'LayerNormalization']);

/**
 * The output of an RMSNorm of `v` (Gemma's post_feedforward_layernorm), or null: a norm op
 * reading `v` first, or the decomposed form v · r (r computed from v, 1 / sqrt(mean(v²) + ε))
 * times an optional weight (w, or 1 + w).
 */
function normOf(g: GraphIndex, v: string): string | null {
  for (const [c, read] of g.consThrough(v, THROUGH)) {
    if (NORMS.has(c.opType) && c.input[0] === read && (c.domain ?? '') !== 'ai.onnx.ml') return c.output[0]!;
    if (c.opType !== 'Mul' || c.domain || c.input.length !== 2) continue;
    const at = c.input.indexOf(read);
    const r = c.input[1 - at];
    if (at < 0 || !r || r === read || !g.prod(r) || !g.reaches(read, r, 64)) continue;
    // r must pass through a ReduceMean of v (the mean square), not be another path from v.
    if (!reducesMean(g, r, read)) continue;
    let out = c.output[0]!;
    const next = g.consThrough(out, THROUGH);
    if (next.length === 1 && next[0]![0].opType === 'Mul' && !next[0]![0].domain) {
      const m = next[0]![0];
      const other = m.input[1 - m.input.indexOf(next[0]![1])];
      if (other && !g.reaches(read, other, 64)) out = m.output[0]!;
    }
    return out;
  }
  return null;
}

/** Whether `r` descends from a ReduceMean of a value computed from `v`, within a few nodes. */
function reducesMean(g: GraphIndex, r: string, v: string): boolean {
  const stack: [string, number][] = [[r, 0]];
  while (stack.length) {
    const [u, d] = stack.pop()!;
    const p = g.prod(u);
    if (!p || d > 6) continue;
    if (p.opType === 'ReduceMean' && g.reaches(v, p.input[0]!, 16)) return true;
    for (const i of p.input) if (i) stack.push([i, d + 1]);
  }
  return false;
}

export function residualAfter(g: GraphIndex, down: Projection): { src: PointSource; anchor: string } | null {
  const direct = residualAt(g, down.y);
  if (direct) return direct;
  // Gemma 2 / 3: down_proj's output is normalized (post_feedforward_layernorm) before it is added.
  const normed = normOf(g, down.y);
  return normed ? residualAt(g, normed) : null;
}

function residualAt(g: GraphIndex, y: string): { src: PointSource; anchor: string } | null {
  for (const [c, v] of g.consThrough(y, THROUGH)) {
    if (c.opType === 'Add' && !c.domain) {
      return { src: { kind: 'value', value: c.output[0]! }, anchor: c.output[0]! };
    }
    if (SKIP_NORMS.has(c.opType) && c.domain === 'com.microsoft') {
      const at = c.input.indexOf(v);
      if (at !== 0 && at !== 1) continue;
      if (c.output[3]) return { src: { kind: 'value', value: c.output[3] }, anchor: c.output[3] };
      // The sum is not an output of this node (the last layer): rebuild it as input + skip (+ bias).
      const bias = c.opType === 'SkipSimplifiedLayerNormalization' ? c.input[3] : c.input[4];
      const inputs = [c.input[0]!, c.input[1]!];
      if (bias) inputs.push(bias);
      return { src: { kind: 'sum', inputs }, anchor: c.output[0]! };
    }
  }
  return null;
}
