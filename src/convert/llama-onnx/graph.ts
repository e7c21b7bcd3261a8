/**
 * An exporter-neutral description of an ONNX graph (nodes, initializers, inputs, outputs), a
 * small builder over it, and its encoding to ONNX protobuf bytes. Initializers carry either
 * inline data or a reference into an external data file that the writer filled.
 */
import {
  DataLocation,
  DataType,
  encodeModelParts,
  makeGraph,
  makeModel,
  makeNode,
  makeTensor,
  makeValueInfo,
  type AttrValue as OnnxAttr,
  type TensorProto,
} from '../../onnx/index.js';

export type GAttr = { type: 'int'; value: number } | { type: 'ints'; value: number[] } | { type: 'float';
  value: number };

export interface GNode {
  op: string;
  name: string;
  inputs: string[];
  outputs: string[];
  attrs?: Record<string, GAttr>;
  domain?: string;
}

export type GDtype = 'float32' | 'float16' | 'bfloat16' | 'int64' | 'int32' | 'uint8';

export interface GInit {
  name: string;
  dtype: GDtype;
  dims: number[];
  /** Inline values (float16 as IEEE half bit patterns, bfloat16 as its 16 bits); absent when `external` is set. */
  data?: Float32Array | Uint16Array | BigInt64Array | Int32Array | Uint8Array;
  /** Where the bytes are in the external data file. */
  external?: { location: string; offset: number; length: number };
}

export interface GValue {
  name: string;
  dtype: 'float32' | 'float16' | 'int64' | 'int32';
  shape: (number | string)[];
}

export interface GGraph {
  name: string;
  opset: number;
  /** Extra opset imports, e.g. { 'com.microsoft': 1 }. */
  extraOpsets?: Record<string, number>;
  nodes: GNode[];
  initializers: GInit[];
  inputs: GValue[];
  outputs: GValue[];
}

/** ONNX DataType of a GDtype. */
export function onnxDtype(d: GDtype): number {
  switch (d) {
    case 'float32':
      return DataType.FLOAT;
    case 'float16':
      return DataType.FLOAT16;
    case 'bfloat16':
      return DataType.BFLOAT16;
    case 'int64':
      return DataType.INT64;
    case 'int32':
      return DataType.INT32;
    case 'uint8':
      return DataType.UINT8;
  }
}

/** Bytes per element of a GDtype. */
export function dtypeBytes(d: GDtype): number {
  return d === 'float32' || d === 'int32' ? 4 : d === 'float16' || d === 'bfloat16' ? 2 : d === 'int64' ? 8 : 1;
}

export const int = (value: number): GAttr => ({ type: 'int', value });
export const ints = (value: number[]): GAttr => ({ type: 'ints', value });
export const float = (value: number): GAttr => ({ type: 'float', value });

/** Nodes appended in order; `add` names outputs `${name}_output_${i}` (or as given). */
export class NodeList {
  readonly nodes: GNode[] = [];

  /** Append a node and return its first output. */
  add(op: string, name: string, inputs: string[], attrs?: Record<string, GAttr>,
    opts: { outputs?: string[]; nOut?: number; domain?: string } = {}): string
  {
    const outputs = opts.outputs ?? Array.from({ length: opts.nOut ?? 1 }, (_, i) => `${name}_output_${i}`);
    const n: GNode = { op, name, inputs, outputs };
    if (attrs) n.attrs = attrs;
    if (opts.domain) n.domain = opts.domain;
    this.nodes.push(n);
    return outputs[0]!;
  }
}

export interface EncodeOptions {
  producerName?: string;
  producerVersion?: string;
  irVersion?: number;
}

/** Encode a graph as ONNX model bytes (parts, in order). */
export function encodeGGraph(g: GGraph, opts: EncodeOptions = {}): Uint8Array[] {
  const inits: TensorProto[] = g.initializers.map((t) => {
    if (t.external) {
      return {
        name: t.name,
        dataType: onnxDtype(t.dtype),
        dims: [...t.dims],
        dataLocation: DataLocation.EXTERNAL,
        externalData: [
          { key: 'location', value: t.external.location },
          { key: 'offset', value: String(t.external.offset) },
          { key: 'length', value: String(t.external.length) },
        ],
      };
    }
    return makeTensor(t.name, onnxDtype(t.dtype), t.dims, t.data!);
  });
  const nodes = g.nodes.map((n) => {
    const attrs: Record<string, OnnxAttr> = {};
    for (const [k, v] of Object.entries(n.attrs ?? {})) attrs[k] = v.type === 'float' ? { f: v.value } : v.value;
    return makeNode(n.op, n.inputs, n.outputs, attrs, n.domain, n.name);
  });
  const graph = makeGraph(
    g.name,
    nodes,
    g.inputs.map((v) => makeValueInfo(v.name, onnxDtype(v.dtype), v.shape)),
    g.outputs.map((v) => makeValueInfo(v.name, onnxDtype(v.dtype), v.shape)),
    inits,
  );
  const model = makeModel(graph, {
    opsets: { '': g.opset, ...(g.extraOpsets ?? {}) },
    irVersion: opts.irVersion ?? 8,
    producerName: opts.producerName ?? 'lobes',
    ...(opts.producerVersion !== undefined ? { producerVersion: opts.producerVersion } : {}),
  });
  return encodeModelParts(model);
}
