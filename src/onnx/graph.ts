/**
 * Read-only index over a GraphProto: who produces and who consumes each value, initializers,
 * constants, a topological order. Analysis is by structure (op types, edges, shapes), never by
 * node or value names.
 */
import { valueShape, type ShapeDim } from './build.js';
import { tensorToNumbers } from './tensor.js';
import { isExternal, type GraphProto, type NodeProto, type TensorProto, type ValueInfo } from './types.js';

export class GraphIndex {
  readonly producer = new Map<string, NodeProto>();
  readonly consumers = new Map<string, NodeProto[]>();
  readonly initializers = new Map<string, TensorProto>();
  readonly inputs = new Map<string, ValueInfo>();
  readonly outputs = new Map<string, ValueInfo>();
  readonly valueInfo = new Map<string, ValueInfo>();
  /** Position of each node in a topological order (Kahn, stable w.r.t. file order). */
  readonly order = new Map<NodeProto, number>();
  readonly nodes: NodeProto[];

  constructor(readonly graph: GraphProto) {
    for (const t of graph.initializer) if (t.name !== undefined) this.initializers.set(t.name, t);
    for (const v of graph.input) if (v.name) this.inputs.set(v.name, v);
    for (const v of graph.output) if (v.name) this.outputs.set(v.name, v);
    for (const v of graph.valueInfo) if (v.name) this.valueInfo.set(v.name, v);
    for (const n of graph.node) {
      for (const o of n.output) if (o) this.producer.set(o, n);
      for (const i of n.input) {
        if (!i) continue;
        let l = this.consumers.get(i);
        if (!l) this.consumers.set(i, l = []);
        if (!l.includes(n)) l.push(n);
      }
    }
    this.nodes = this.topo();
    this.nodes.forEach((n, i) => this.order.set(n, i));
  }

  private topo(): NodeProto[] {
    const nodes = this.graph.node;
    const indeg = new Map<NodeProto, number>();
    for (const n of nodes) {
      let d = 0;
      for (const i of new Set(n.input)) if (i && this.producer.has(i)) d++;
      indeg.set(n, d);
    }
    const ready: NodeProto[] = nodes.filter((n) => indeg.get(n) === 0);
    const out: NodeProto[] = [];
    const pos = new Map<NodeProto, number>();
    nodes.forEach((n, i) => pos.set(n, i));
    // A simple stable queue: nodes become ready in file order.
    while (ready.length) {
      const n = ready.shift()!;
      out.push(n);
      const seen = new Set<NodeProto>();
      for (const o of n.output) {
        for (const c of this.consumers.get(o) ?? []) {
          if (seen.has(c)) continue;
          // Count distinct produced inputs of c that n provides.
          const provided = new Set(c.input.filter((i) => i && n.output.includes(i))).size;
          seen.add(c);
          const d = indeg.get(c)! - provided;
          indeg.set(c, d);
          if (d === 0) ready.push(c);
        }
      }
      if (ready.length > 1) ready.sort((a, b) => pos.get(a)! - pos.get(b)!);
    }
    // Nodes in cycles (invalid graphs) are appended so analysis still sees them.
    if (out.length < nodes.length) { for (const n of nodes) if (!out.includes(n)) out.push(n); }
    return out;
  }

  /** The node producing `v`, if any. */
  prod(v: string | undefined): NodeProto | undefined {
    return v ? this.producer.get(v) : undefined;
  }

  cons(v: string | undefined): NodeProto[] {
    return v ? this.consumers.get(v) ?? [] : [];
  }

  /** A constant tensor behind `v` (initializer or Constant node), if any. */
  constTensor(v: string | undefined): TensorProto | undefined {
    if (!v) return undefined;
    const t = this.initializers.get(v);
    if (t) return t;
    const p = this.producer.get(v);
    if (p && p.opType === 'Constant' && !p.domain) {
      const a = p.attribute.find((x) => x.name === 'value');
      if (a?.t) return a.t;
    }
    return undefined;
  }

  /** Values of a small inline constant (int or float) behind `v`, if any. */
  constNumbers(v: string | undefined): number[] | undefined {
    const t = this.constTensor(v);
    if (!t || isExternal(t)) return undefined;
    const p = v ? this.producer.get(v) : undefined;
    if (p && p.opType === 'Constant') {
      for (const a of p.attribute) {
        if (a.name === 'value_int' && a.i !== undefined) return [Number(a.i)];
        if (a.name === 'value_ints' && a.ints) return a.ints.map(Number);
        if (a.name === 'value_float' && a.f !== undefined) return [a.f];
        if (a.name === 'value_floats' && a.floats) return a.floats;
      }
    }
    if (t.rawData) return tensorToNumbers(t, t.rawData);
    if (t.int64Data) return t.int64Data.map(Number);
    if (t.int32Data) return t.int32Data.map(Number);
    if (t.floatData) return Array.from(t.floatData);
    return undefined;
  }

  /** Follow single-input passthrough ops (Cast, Identity) backwards. */
  skipBack(v: string, ops = PASSTHROUGH): string {
    let cur = v;
    for (let k = 0; k < 8; k++) {
      const p = this.producer.get(cur);
      if (!p || !ops.has(p.opType) || p.domain) return cur;
      cur = p.input[0]!;
    }
    return cur;
  }

  /** Consumers of `v`, looking through Cast/Identity. Returns [consumer, value it reads]. */
  consThrough(v: string, ops = PASSTHROUGH): [NodeProto, string][] {
    const out: [NodeProto, string][] = [];
    const walk = (x: string, depth: number) => {
      for (const c of this.cons(x)) {
        if (ops.has(c.opType) && !c.domain && depth < 8) walk(c.output[0]!, depth + 1);
        else out.push([c, x]);
      }
    };
    walk(v, 0);
    return out;
  }

  /** Whether `a` is an ancestor of (or equal to) value `b`. */
  reaches(a: string, b: string, limit = 100_000): boolean {
    if (a === b) return true;
    const seen = new Set<string>([b]);
    const stack = [b];
    let steps = 0;
    while (stack.length && steps++ < limit) {
      const v = stack.pop()!;
      const p = this.producer.get(v);
      if (!p) continue;
      for (const i of p.input) {
        if (!i || seen.has(i)) continue;
        if (i === a) return true;
        seen.add(i);
        stack.push(i);
      }
    }
    return false;
  }

  /** Declared shape of a value (graph input/output/value_info), if known. */
  shapeOf(v: string): ShapeDim[] | null {
    return valueShape(this.declared(v));
  }

  /** Declared element type (a DataType) of a value, if known. */
  elemTypeOf(v: string): number | undefined {
    return this.declared(v)?.type?.tensorType?.elemType;
  }

  private declared(v: string): ValueInfo | undefined {
    return this.inputs.get(v) ?? this.outputs.get(v) ?? this.valueInfo.get(v);
  }
}

export const PASSTHROUGH = new Set(['Cast', 'Identity']);
