/**
 * ONNX messages as plain TypeScript objects (the subset of onnx.proto lobes reads and
 * writes), and the enumerations they use: DataType, AttributeType, DataLocation.
 *
 * Fields this package does not model are kept verbatim in `unknown` and written back in
 * field order, so decode → encode is lossless.
 */
import type { Int64 } from './proto.js';

export type { Int64 } from './proto.js';

/** A field this package does not model, kept byte for byte (tag included). */
export interface UnknownField {
  field: number;
  raw: Uint8Array;
}

export interface HasUnknown {
  unknown?: UnknownField[];
}

export interface StringStringEntry extends HasUnknown {
  key?: string;
  value?: string;
}

export interface OperatorSetId extends HasUnknown {
  domain?: string;
  version?: Int64;
}

export interface Dimension extends HasUnknown {
  dimValue?: Int64;
  dimParam?: string;
  denotation?: string;
}

export interface TensorShape extends HasUnknown {
  dim: Dimension[];
}

export interface TensorTypeProto extends HasUnknown {
  elemType?: number;
  shape?: TensorShape;
}

export interface TypeProto extends HasUnknown {
  tensorType?: TensorTypeProto;
  denotation?: string;
}

export interface ValueInfo extends HasUnknown {
  name?: string;
  type?: TypeProto;
  docString?: string;
}

export interface TensorProto extends HasUnknown {
  dims: number[];
  dataType?: number;
  floatData?: Float32Array;
  int32Data?: Int64[];
  stringData?: Uint8Array[];
  int64Data?: Int64[];
  name?: string;
  /** View into the decoded bytes (no copy) or the array given to makeTensor. */
  rawData?: Uint8Array;
  doubleData?: Float64Array;
  uint64Data?: Int64[];
  docString?: string;
  externalData?: StringStringEntry[];
  /** A DataLocation: DEFAULT (inline) or EXTERNAL. */
  dataLocation?: number;
}

export interface AttributeProto extends HasUnknown {
  name?: string;
  f?: number;
  i?: Int64;
  s?: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  floats?: number[];
  ints?: Int64[];
  strings?: Uint8Array[];
  tensors?: TensorProto[];
  graphs?: GraphProto[];
  docString?: string;
  /** An AttributeType. */
  type?: number;
  refAttrName?: string;
}

export interface NodeProto extends HasUnknown {
  input: string[];
  output: string[];
  name?: string;
  opType: string;
  attribute: AttributeProto[];
  docString?: string;
  domain?: string;
}

export interface GraphProto extends HasUnknown {
  node: NodeProto[];
  name?: string;
  initializer: TensorProto[];
  docString?: string;
  input: ValueInfo[];
  output: ValueInfo[];
  valueInfo: ValueInfo[];
}

export interface ModelProto extends HasUnknown {
  irVersion?: Int64;
  producerName?: string;
  producerVersion?: string;
  domain?: string;
  modelVersion?: Int64;
  docString?: string;
  graph?: GraphProto;
  opsetImport: OperatorSetId[];
  metadataProps: StringStringEntry[];
}

/** TensorProto.DataType. */
export const DataType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
  FLOAT8E4M3FN: 17,
  FLOAT8E4M3FNUZ: 18,
  FLOAT8E5M2: 19,
  FLOAT8E5M2FNUZ: 20,
  UINT4: 21,
  INT4: 22,
} as const;

/** AttributeProto.AttributeType. */
export const AttributeType = {
  UNDEFINED: 0,
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
  TENSORS: 9,
  GRAPHS: 10,
} as const;

/** TensorProto.DataLocation: where a tensor's data is stored. */
export const DataLocation = {
  DEFAULT: 0,
  EXTERNAL: 1,
} as const;

/** Names as used by onnxruntime-node, and bytes per element (0.5 for 4-bit types). */
const DTYPES: Record<number, { name: string; size: number }> = {
  [DataType.FLOAT]: { name: 'float32', size: 4 },
  [DataType.UINT8]: { name: 'uint8', size: 1 },
  [DataType.INT8]: { name: 'int8', size: 1 },
  [DataType.UINT16]: { name: 'uint16', size: 2 },
  [DataType.INT16]: { name: 'int16', size: 2 },
  [DataType.INT32]: { name: 'int32', size: 4 },
  [DataType.INT64]: { name: 'int64', size: 8 },
  [DataType.STRING]: { name: 'string', size: 0 },
  [DataType.BOOL]: { name: 'bool', size: 1 },
  [DataType.FLOAT16]: { name: 'float16', size: 2 },
  [DataType.DOUBLE]: { name: 'float64', size: 8 },
  [DataType.UINT32]: { name: 'uint32', size: 4 },
  [DataType.UINT64]: { name: 'uint64', size: 8 },
  [DataType.COMPLEX64]: { name: 'complex64', size: 8 },
  [DataType.COMPLEX128]: { name: 'complex128', size: 16 },
  [DataType.BFLOAT16]: { name: 'bfloat16', size: 2 },
  [DataType.FLOAT8E4M3FN]: { name: 'float8e4m3fn', size: 1 },
  [DataType.FLOAT8E4M3FNUZ]: { name: 'float8e4m3fnuz', size: 1 },
  [DataType.FLOAT8E5M2]: { name: 'float8e5m2', size: 1 },
  [DataType.FLOAT8E5M2FNUZ]: { name: 'float8e5m2fnuz', size: 1 },
  [DataType.UINT4]: { name: 'uint4', size: 0.5 },
  [DataType.INT4]: { name: 'int4', size: 0.5 },
};

/** Name of an ONNX data type as used by onnxruntime-node ('float32', 'float16', 'int64', ...). */
export function dataTypeName(t: number | undefined): string {
  return (t !== undefined && DTYPES[t]?.name) || `type${t ?? '?'}`;
}

/** Bytes per element (0.5 for 4-bit types, 0 for strings/unknown). */
export function dataTypeSize(t: number | undefined): number {
  return (t !== undefined && DTYPES[t]?.size) || 0;
}

/** Byte size of a tensor from its dims and type, or null when not computable. */
export function tensorByteSize(t: TensorProto): number | null {
  const s = dataTypeSize(t.dataType);
  if (!s) return null;
  let n = 1;
  for (const d of t.dims) n *= d;
  return Math.ceil(n * s);
}

/** Whether a tensor's data is stored in an external file. */
export function isExternal(t: TensorProto): boolean {
  return t.dataLocation === DataLocation.EXTERNAL;
}
