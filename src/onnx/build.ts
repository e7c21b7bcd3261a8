/**
 * Building ONNX messages (generated models, graph surgery) and small accessors over them.
 *
 *   const w = makeTensor('w', DataType.FLOAT, [4, 8], new Float32Array(32));
 *   const graph = makeGraph('g',
 *     [makeNode('MatMul', ['x', 'w'], ['y']), makeNode('Softmax', ['y'], ['z'], { axis: -1 })],
 *     [makeValueInfo('x', DataType.FLOAT, ['batch', 4])],
 *     [makeValueInfo('z', DataType.FLOAT, ['batch', 8])],
 *     [w]);
 *   writeModel('out/model.onnx', makeModel(graph, { opsets: { '': 17 } }));
 *
 * Attribute values for makeNode: integer number → INT, non-integer number → FLOAT (use
 * attrFloat(1) for an integral float), string → STRING, number[] → INTS (FLOATS if any
 * element is fractional; attrFloats([...]) forces FLOATS), string[] → STRINGS,
 * TensorProto (from makeTensor) → TENSOR, GraphProto → GRAPH.
 */
import { LobesError } from '../util/errors.js';
import {
  AttributeType,
  dataTypeName,
  dataTypeSize,
  type AttributeProto,
  type GraphProto,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type TensorTypeProto,
  type ValueInfo,
} from './types.js';

type Typed =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

/**
 * A tensor with inline raw data. `data` holds the elements in ONNX layout (row-major);
 * fp16/bf16 are given as Uint16Array bit patterns, bool as Uint8Array.
 * The tensor references `data`'s memory (no copy).
 */
export function makeTensor(name: string, dataType: number, dims: number[], data: Typed): TensorProto {
  const size = dataTypeSize(dataType);
  let n = 1;
  for (const d of dims) n *= d;
  if (size && Math.ceil(n * size) !== data.byteLength) {
    throw new LobesError(
      `makeTensor ${name}: ${data.byteLength} bytes given for dims [${dims}] of ${dataTypeName(dataType)} (${
        Math.ceil(n * size)
      } expected)`,
    );
  }
  return { name, dataType, dims: [...dims], rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

/** A float attribute value (for integral floats, e.g. attrFloat(1)). */
export function attrFloat(x: number): { f: number } {
  return { f: x };
}

/** A FLOATS attribute value. */
export function attrFloats(x: number[]): { floats: number[] } {
  return { floats: x };
}

export type AttrValue = number | bigint | string | number[] | bigint[] | string[] | TensorProto | GraphProto | {
  f: number;
} | { floats: number[] };

const te = new TextEncoder();

/** Build an AttributeProto from a value (see the module comment for the mapping). */
export function makeAttribute(name: string, v: AttrValue): AttributeProto {
  const T = AttributeType;
  if (typeof v === 'bigint') return { name, i: v, type: T.INT };
  if (typeof v === 'number') return Number.isInteger(v) ? { name, i: v, type: T.INT } : { name, f: v, type: T.FLOAT };
  if (typeof v === 'string') return { name, s: te.encode(v), type: T.STRING };
  if (Array.isArray(v)) {
    if (v.length && typeof v[0] === 'string')
      return { name, strings: (v as string[]).map((s) => te.encode(s)), type: T.STRINGS };
    const nums = v as (number | bigint)[];
    if (nums.every((x) => typeof x === 'bigint' || Number.isInteger(x))) return { name, ints: nums, type: T.INTS };
    return { name, floats: nums.map(Number), type: T.FLOATS };
  }
  if ('f' in v && typeof v.f === 'number') return { name, f: v.f, type: T.FLOAT };
  if ('floats' in v) return { name, floats: [...(v as { floats: number[] }).floats], type: T.FLOATS };
  if ('node' in v) return { name, g: v as GraphProto, type: T.GRAPH };
  return { name, t: v as TensorProto, type: T.TENSOR };
}

/** A node. `domain` e.g. 'com.microsoft' for contrib ops; `name` optional. */
export function makeNode(
  opType: string,
  inputs: string[],
  outputs: string[],
  attrs: Record<string, AttrValue> = {},
  domain?: string,
  name?: string,
): NodeProto {
  const n: NodeProto = {
    input: [...inputs],
    output: [...outputs],
    opType,
    attribute: Object.entries(attrs).map(([k, v]) => makeAttribute(k, v)),
  };
  if (name !== undefined) n.name = name;
  if (domain !== undefined && domain !== '') n.domain = domain;
  return n;
}

/** A dimension of a declared shape: a number, a symbolic name, or null (unknown). */
export type ShapeDim = number | string | null;

/** A tensor value info; shape entries are numbers, symbolic names, or null (unknown). */
export function makeValueInfo(name: string, elemType: number, shape: ShapeDim[] | null): ValueInfo {
  const tensorType: TensorTypeProto = { elemType };
  if (shape) {
    tensorType.shape = {
      dim: shape.map((d) => (d === null ? {} : typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
    };
  }
  return { name, type: { tensorType } };
}

/** Declared shape of a value info (the inverse of makeValueInfo's), or null when it has none. */
export function valueShape(v: ValueInfo | undefined): ShapeDim[] | null {
  const s = v?.type?.tensorType?.shape;
  if (!s) return null;
  return s.dim.map((
    d,
  ) => (d.dimValue !== undefined ? Number(d.dimValue) : d.dimParam !== undefined ? d.dimParam : null));
}

/** A graph from its nodes, inputs, outputs, initializers and value infos. */
export function makeGraph(
  name: string,
  nodes: NodeProto[],
  inputs: ValueInfo[],
  outputs: ValueInfo[],
  initializers: TensorProto[] = [],
  valueInfo: ValueInfo[] = [],
): GraphProto {
  return { name, node: nodes, input: inputs, output: outputs, initializer: initializers, valueInfo };
}

export interface MakeModelOptions {
  /** Opset per domain, e.g. { '': 17, 'com.microsoft': 1 }. Default { '': 17 }. */
  opsets?: Record<string, number>;
  irVersion?: number;
  producerName?: string;
  producerVersion?: string;
  metadata?: Record<string, string>;
}

/** A model around a graph (IR version 8 and opset 17 unless given). */
export function makeModel(graph: GraphProto, opts: MakeModelOptions = {}): ModelProto {
  const opsets = opts.opsets ?? { '': 17 };
  return {
    irVersion: opts.irVersion ?? 8,
    producerName: opts.producerName ?? 'lobes',
    ...(opts.producerVersion !== undefined ? { producerVersion: opts.producerVersion } : {}),
    graph,
    opsetImport: Object.entries(opsets).map(([domain, version]) => ({ domain, version })),
    metadataProps: Object.entries(opts.metadata ?? {}).map(([key, value]) => ({ key, value })),
  };
}

/** Attribute by name. */
export function getAttr(n: NodeProto, name: string): AttributeProto | undefined {
  return n.attribute.find((a) => a.name === name);
}

/** An INT attribute as a number, or `def` when absent. */
export function attrInt(n: NodeProto, name: string, def: number): number {
  const a = getAttr(n, name);
  return a?.i !== undefined ? Number(a.i) : def;
}
