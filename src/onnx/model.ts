/**
 * ONNX models as plain TypeScript objects: decode, edit, encode, without loading weights.
 *
 * - decodeModel(bytes) / encodeModel(model): lossless. Fields this module does not model are
 *   kept verbatim (`unknown`) and written back in field order, so decode → encode of a file
 *   written by the reference protobuf library gives the same bytes.
 * - TensorProto.rawData is a view into the decoded bytes (no copy). Tensors whose data lives
 *   in external files keep `externalData` (location/offset/length) and are read on demand
 *   with readInitializerBytes, by byte range.
 * - loadModel(dirOrFile) reads only the graph file and validates every external-data
 *   location (relative, no '..', inside the model folder, range inside the file).
 *
 * Writing a model (e.g. a generated fixture):
 *
 *   import { DataType, makeTensor, makeNode, makeValueInfo, makeGraph, makeModel, writeModel } from './model.js';
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
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { LobesError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/atomic.js';
import { bf16ArrayToFloat, halfArrayToFloat } from '../util/half.js';
import { type Int64, ProtoError, Reader, Writer, WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_VARINT } from './proto.js';

export type { Int64 } from './proto.js';

/** A field this module does not model, kept byte for byte (tag included). */
export interface UnknownField {
  field: number;
  raw: Uint8Array;
}

interface HasUnknown {
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
  /** 0 DEFAULT, 1 EXTERNAL. */
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
  /** AttributeType: 1 FLOAT, 2 INT, 3 STRING, 4 TENSOR, 5 GRAPH, 6 FLOATS, 7 INTS, 8 STRINGS, 9 TENSORS, 10 GRAPHS. */
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

const DTYPE_NAMES: Record<number, string> = {
  1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64', 8: 'string', 9: 'bool',
  10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64', 14: 'complex64', 15: 'complex128', 16: 'bfloat16',
  17: 'float8e4m3fn', 18: 'float8e4m3fnuz', 19: 'float8e5m2', 20: 'float8e5m2fnuz', 21: 'uint4', 22: 'int4',
};

/** Name of an ONNX data type as used by onnxruntime-node ('float32', 'float16', 'int64', ...). */
export function dataTypeName(t: number | undefined): string {
  return (t !== undefined && DTYPE_NAMES[t]) || `type${t ?? '?'}`;
}

/** Bytes per element (0.5 for 4-bit types, 0 for strings/unknown). */
export function dataTypeSize(t: number | undefined): number {
  switch (t) {
    case 1: case 6: case 12: return 4;
    case 2: case 3: case 9: case 17: case 18: case 19: case 20: return 1;
    case 4: case 5: case 10: case 16: return 2;
    case 7: case 11: case 13: case 14: return 8;
    case 15: return 16;
    case 21: case 22: return 0.5;
    default: return 0;
  }
}

// ---------------------------------------------------------------------------------------
// Decoding

function keep(r: Reader, start: number, field: number, wire: number, m: HasUnknown): void {
  r.skip(wire);
  (m.unknown ??= []).push({ field, raw: r.buf.subarray(start, r.pos) });
}

function expectWire(r: Reader, wire: number, want: number, what: string, at: number): void {
  if (wire !== want) throw new ProtoError(`${what}: unexpected wire type ${wire}`, at);
}

type Sub = [number, number];

function decodeEntry(r: Reader, [s, e]: Sub): StringStringEntry {
  const m: StringStringEntry = {};
  const q = new Reader(r.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.key = q.string();
    else if (f === 2 && w === WIRE_LEN) m.value = q.string();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeOpset(r: Reader, [s, e]: Sub): OperatorSetId {
  const m: OperatorSetId = {};
  const q = new Reader(r.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.domain = q.string();
    else if (f === 2 && w === WIRE_VARINT) m.version = q.varint();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeDim(q0: Reader, [s, e]: Sub): Dimension {
  const m: Dimension = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_VARINT) m.dimValue = q.varint();
    else if (f === 2 && w === WIRE_LEN) m.dimParam = q.string();
    else if (f === 3 && w === WIRE_LEN) m.denotation = q.string();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeShape(q0: Reader, [s, e]: Sub): TensorShape {
  const m: TensorShape = { dim: [] };
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.dim.push(decodeDim(q, q.sub()));
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeTensorType(q0: Reader, [s, e]: Sub): TensorTypeProto {
  const m: TensorTypeProto = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_VARINT) m.elemType = q.uint();
    else if (f === 2 && w === WIRE_LEN) m.shape = decodeShape(q, q.sub());
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeType(q0: Reader, [s, e]: Sub): TypeProto {
  const m: TypeProto = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.tensorType = decodeTensorType(q, q.sub());
    else if (f === 6 && w === WIRE_LEN) m.denotation = q.string();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeValueInfo(q0: Reader, [s, e]: Sub): ValueInfo {
  const m: ValueInfo = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.name = q.string();
    else if (f === 2 && w === WIRE_LEN) m.type = decodeType(q, q.sub());
    else if (f === 3 && w === WIRE_LEN) m.docString = q.string();
    else keep(q, t0, f, w, m);
  }
  return m;
}

/** Repeated varint field, packed or not. */
function readVarints(q: Reader, w: number, out: Int64[]): void {
  if (w === WIRE_LEN) {
    const [s, e] = q.sub();
    const p = new Reader(q.buf, s, e);
    while (!p.eof()) out.push(p.varint());
  } else if (w === WIRE_VARINT) {
    out.push(q.varint());
  } else {
    throw new ProtoError(`unexpected wire type ${w} for an integer list`, q.pos);
  }
}

function readFloats(q: Reader, w: number, out: number[]): void {
  if (w === WIRE_LEN) {
    const [s, e] = q.sub();
    if ((e - s) % 4) throw new ProtoError('packed float list length is not a multiple of 4', s);
    const p = new Reader(q.buf, s, e);
    while (!p.eof()) out.push(p.float());
  } else if (w === WIRE_I32) {
    out.push(q.float());
  } else {
    throw new ProtoError(`unexpected wire type ${w} for a float list`, q.pos);
  }
}

function readDoubles(q: Reader, w: number, out: number[]): void {
  if (w === WIRE_LEN) {
    const [s, e] = q.sub();
    if ((e - s) % 8) throw new ProtoError('packed double list length is not a multiple of 8', s);
    const p = new Reader(q.buf, s, e);
    while (!p.eof()) out.push(p.double());
  } else if (w === WIRE_I64) {
    out.push(q.double());
  } else {
    throw new ProtoError(`unexpected wire type ${w} for a double list`, q.pos);
  }
}

function decodeTensor(q0: Reader, [s, e]: Sub): TensorProto {
  const m: TensorProto = { dims: [] };
  const q = new Reader(q0.buf, s, e);
  let floats: number[] | undefined;
  let doubles: number[] | undefined;
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    switch (f) {
      case 1: {
        const d: Int64[] = [];
        readVarints(q, w, d);
        for (const x of d) m.dims.push(Number(x));
        break;
      }
      case 2:
        expectWire(q, w, WIRE_VARINT, 'data_type', t0);
        m.dataType = q.uint();
        break;
      case 4:
        readFloats(q, w, (floats ??= []));
        break;
      case 5:
        readVarints(q, w, (m.int32Data ??= []));
        break;
      case 6:
        expectWire(q, w, WIRE_LEN, 'string_data', t0);
        (m.stringData ??= []).push(q.bytes());
        break;
      case 7:
        readVarints(q, w, (m.int64Data ??= []));
        break;
      case 8:
        expectWire(q, w, WIRE_LEN, 'name', t0);
        m.name = q.string();
        break;
      case 9:
        expectWire(q, w, WIRE_LEN, 'raw_data', t0);
        m.rawData = q.bytes();
        break;
      case 10:
        readDoubles(q, w, (doubles ??= []));
        break;
      case 11:
        readVarints(q, w, (m.uint64Data ??= []));
        break;
      case 12:
        expectWire(q, w, WIRE_LEN, 'doc_string', t0);
        m.docString = q.string();
        break;
      case 13:
        expectWire(q, w, WIRE_LEN, 'external_data', t0);
        (m.externalData ??= []).push(decodeEntry(q, q.sub()));
        break;
      case 14:
        expectWire(q, w, WIRE_VARINT, 'data_location', t0);
        m.dataLocation = q.uint();
        break;
      default:
        keep(q, t0, f, w, m);
    }
  }
  if (floats) m.floatData = Float32Array.from(floats);
  if (doubles) m.doubleData = Float64Array.from(doubles);
  return m;
}

function decodeAttribute(q0: Reader, [s, e]: Sub): AttributeProto {
  const m: AttributeProto = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    switch (f) {
      case 1:
        expectWire(q, w, WIRE_LEN, 'attribute name', t0);
        m.name = q.string();
        break;
      case 2:
        expectWire(q, w, WIRE_I32, 'attribute f', t0);
        m.f = q.float();
        break;
      case 3:
        expectWire(q, w, WIRE_VARINT, 'attribute i', t0);
        m.i = q.varint();
        break;
      case 4:
        expectWire(q, w, WIRE_LEN, 'attribute s', t0);
        m.s = q.bytes();
        break;
      case 5:
        expectWire(q, w, WIRE_LEN, 'attribute t', t0);
        m.t = decodeTensor(q, q.sub());
        break;
      case 6:
        expectWire(q, w, WIRE_LEN, 'attribute g', t0);
        m.g = decodeGraph(q, q.sub());
        break;
      case 7:
        readFloats(q, w, (m.floats ??= []));
        break;
      case 8:
        readVarints(q, w, (m.ints ??= []));
        break;
      case 9:
        expectWire(q, w, WIRE_LEN, 'attribute strings', t0);
        (m.strings ??= []).push(q.bytes());
        break;
      case 10:
        expectWire(q, w, WIRE_LEN, 'attribute tensors', t0);
        (m.tensors ??= []).push(decodeTensor(q, q.sub()));
        break;
      case 11:
        expectWire(q, w, WIRE_LEN, 'attribute graphs', t0);
        (m.graphs ??= []).push(decodeGraph(q, q.sub()));
        break;
      case 13:
        expectWire(q, w, WIRE_LEN, 'attribute doc_string', t0);
        m.docString = q.string();
        break;
      case 20:
        expectWire(q, w, WIRE_VARINT, 'attribute type', t0);
        m.type = q.uint();
        break;
      case 21:
        expectWire(q, w, WIRE_LEN, 'attribute ref_attr_name', t0);
        m.refAttrName = q.string();
        break;
      default:
        keep(q, t0, f, w, m);
    }
  }
  return m;
}

function decodeNode(q0: Reader, [s, e]: Sub): NodeProto {
  const m: NodeProto = { input: [], output: [], opType: '', attribute: [] };
  const q = new Reader(q0.buf, s, e);
  let sawOp = false;
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.input.push(q.string());
    else if (f === 2 && w === WIRE_LEN) m.output.push(q.string());
    else if (f === 3 && w === WIRE_LEN) m.name = q.string();
    else if (f === 4 && w === WIRE_LEN) {
      m.opType = q.string();
      sawOp = true;
    } else if (f === 5 && w === WIRE_LEN) m.attribute.push(decodeAttribute(q, q.sub()));
    else if (f === 6 && w === WIRE_LEN) m.docString = q.string();
    else if (f === 7 && w === WIRE_LEN) m.domain = q.string();
    else keep(q, t0, f, w, m);
  }
  if (!sawOp) throw new ProtoError('node without op_type', s);
  return m;
}

function decodeGraph(q0: Reader, [s, e]: Sub): GraphProto {
  const m: GraphProto = { node: [], initializer: [], input: [], output: [], valueInfo: [] };
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_LEN) m.node.push(decodeNode(q, q.sub()));
    else if (f === 2 && w === WIRE_LEN) m.name = q.string();
    else if (f === 5 && w === WIRE_LEN) m.initializer.push(decodeTensor(q, q.sub()));
    else if (f === 10 && w === WIRE_LEN) m.docString = q.string();
    else if (f === 11 && w === WIRE_LEN) m.input.push(decodeValueInfo(q, q.sub()));
    else if (f === 12 && w === WIRE_LEN) m.output.push(decodeValueInfo(q, q.sub()));
    else if (f === 13 && w === WIRE_LEN) m.valueInfo.push(decodeValueInfo(q, q.sub()));
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeModelProto(buf: Uint8Array): ModelProto {
  const m: ModelProto = { opsetImport: [], metadataProps: [] };
  const q = new Reader(buf);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === 1 && w === WIRE_VARINT) m.irVersion = q.varint();
    else if (f === 2 && w === WIRE_LEN) m.producerName = q.string();
    else if (f === 3 && w === WIRE_LEN) m.producerVersion = q.string();
    else if (f === 4 && w === WIRE_LEN) m.domain = q.string();
    else if (f === 5 && w === WIRE_VARINT) m.modelVersion = q.varint();
    else if (f === 6 && w === WIRE_LEN) m.docString = q.string();
    else if (f === 7 && w === WIRE_LEN) m.graph = decodeGraph(q, q.sub());
    else if (f === 8 && w === WIRE_LEN) m.opsetImport.push(decodeOpset(q, q.sub()));
    else if (f === 14 && w === WIRE_LEN) m.metadataProps.push(decodeEntry(q, q.sub()));
    else keep(q, t0, f, w, m);
  }
  return m;
}

/**
 * Decode an ONNX ModelProto. Tensor raw data stays a view into `bytes`. Throws a one-line
 * LobesError (naming `file` when given) for malformed, truncated or graph-less input.
 */
export function decodeModel(bytes: Uint8Array, file?: string): ModelProto {
  let m: ModelProto;
  try {
    m = decodeModelProto(bytes);
  } catch (e) {
    if (e instanceof ProtoError) {
      throw new LobesError(`not a valid ONNX model: ${e.message} at byte ${e.offset} of ${bytes.length}`, {
        file,
        hint: 'the file is corrupt or truncated; re-export or re-download it',
      });
    }
    throw e;
  }
  if (!m.graph || m.irVersion === undefined) {
    throw new LobesError(`not an ONNX model: ${!m.graph ? 'no graph' : 'no ir_version'} in ${bytes.length} bytes`, {
      file,
      hint: 'the file is corrupt, truncated or not an .onnx file',
    });
  }
  return m;
}

// ---------------------------------------------------------------------------------------
// Encoding

/** Writes unknown fields interleaved by field number with the known ones. */
class Unk {
  private list: UnknownField[];
  private i = 0;
  constructor(private readonly w: Writer, unknown: UnknownField[] | undefined) {
    this.list = unknown ? [...unknown].sort((a, b) => a.field - b.field) : [];
  }
  /** Write every kept field numbered below `field`. */
  to(field: number): void {
    while (this.i < this.list.length && this.list[this.i]!.field < field) this.w.rawBytes(this.list[this.i++]!.raw);
  }
  rest(): void {
    this.to(Infinity);
  }
}

function encEntry(w: Writer, m: StringStringEntry): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.key !== undefined) w.stringField(1, m.key);
  u.to(2);
  if (m.value !== undefined) w.stringField(2, m.value);
  u.rest();
}

function encOpset(w: Writer, m: OperatorSetId): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.domain !== undefined) w.stringField(1, m.domain);
  u.to(2);
  if (m.version !== undefined) w.varintField(2, m.version);
  u.rest();
}

function encDim(w: Writer, m: Dimension): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.dimValue !== undefined) w.varintField(1, m.dimValue);
  u.to(2);
  if (m.dimParam !== undefined) w.stringField(2, m.dimParam);
  u.to(3);
  if (m.denotation !== undefined) w.stringField(3, m.denotation);
  u.rest();
}

function encShape(w: Writer, m: TensorShape): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  for (const d of m.dim) w.messageField(1, (c) => encDim(c, d));
  u.rest();
}

function encTensorType(w: Writer, m: TensorTypeProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.elemType !== undefined) w.varintField(1, m.elemType);
  u.to(2);
  if (m.shape) w.messageField(2, (c) => encShape(c, m.shape!));
  u.rest();
}

function encType(w: Writer, m: TypeProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.tensorType) w.messageField(1, (c) => encTensorType(c, m.tensorType!));
  u.to(6);
  if (m.denotation !== undefined) w.stringField(6, m.denotation);
  u.rest();
}

function encValueInfo(w: Writer, m: ValueInfo): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.name !== undefined) w.stringField(1, m.name);
  u.to(2);
  if (m.type) w.messageField(2, (c) => encType(c, m.type!));
  u.to(3);
  if (m.docString !== undefined) w.stringField(3, m.docString);
  u.rest();
}

function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function encTensor(w: Writer, m: TensorProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  for (const d of m.dims) w.varintField(1, d);
  u.to(2);
  if (m.dataType !== undefined) w.varintField(2, m.dataType);
  u.to(4);
  if (m.floatData && m.floatData.length) w.bytesField(4, bytesOf(m.floatData));
  u.to(5);
  if (m.int32Data) w.packedVarints(5, m.int32Data);
  u.to(6);
  if (m.stringData) for (const s of m.stringData) w.bytesField(6, s);
  u.to(7);
  if (m.int64Data) w.packedVarints(7, m.int64Data);
  u.to(8);
  if (m.name !== undefined) w.stringField(8, m.name);
  u.to(9);
  if (m.rawData !== undefined) w.bytesField(9, m.rawData);
  u.to(10);
  if (m.doubleData && m.doubleData.length) w.bytesField(10, bytesOf(m.doubleData));
  u.to(11);
  if (m.uint64Data) w.packedVarints(11, m.uint64Data);
  u.to(12);
  if (m.docString !== undefined) w.stringField(12, m.docString);
  u.to(13);
  if (m.externalData) for (const x of m.externalData) w.messageField(13, (c) => encEntry(c, x));
  u.to(14);
  if (m.dataLocation !== undefined) w.varintField(14, m.dataLocation);
  u.rest();
}

function encAttribute(w: Writer, m: AttributeProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.name !== undefined) w.stringField(1, m.name);
  u.to(2);
  if (m.f !== undefined) w.floatField(2, m.f);
  u.to(3);
  if (m.i !== undefined) w.varintField(3, m.i);
  u.to(4);
  if (m.s !== undefined) w.bytesField(4, m.s);
  u.to(5);
  if (m.t) w.messageField(5, (c) => encTensor(c, m.t!));
  u.to(6);
  if (m.g) w.messageField(6, (c) => encGraph(c, m.g!));
  u.to(7);
  if (m.floats) for (const x of m.floats) w.floatField(7, x);
  u.to(8);
  if (m.ints) for (const x of m.ints) w.varintField(8, x);
  u.to(9);
  if (m.strings) for (const x of m.strings) w.bytesField(9, x);
  u.to(10);
  if (m.tensors) for (const x of m.tensors) w.messageField(10, (c) => encTensor(c, x));
  u.to(11);
  if (m.graphs) for (const x of m.graphs) w.messageField(11, (c) => encGraph(c, x));
  u.to(13);
  if (m.docString !== undefined) w.stringField(13, m.docString);
  u.to(20);
  if (m.type !== undefined) w.varintField(20, m.type);
  u.to(21);
  if (m.refAttrName !== undefined) w.stringField(21, m.refAttrName);
  u.rest();
}

function encNode(w: Writer, m: NodeProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  for (const x of m.input) w.stringField(1, x);
  u.to(2);
  for (const x of m.output) w.stringField(2, x);
  u.to(3);
  if (m.name !== undefined) w.stringField(3, m.name);
  u.to(4);
  w.stringField(4, m.opType);
  u.to(5);
  for (const a of m.attribute) w.messageField(5, (c) => encAttribute(c, a));
  u.to(6);
  if (m.docString !== undefined) w.stringField(6, m.docString);
  u.to(7);
  if (m.domain !== undefined) w.stringField(7, m.domain);
  u.rest();
}

function encGraph(w: Writer, m: GraphProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  for (const n of m.node) w.messageField(1, (c) => encNode(c, n));
  u.to(2);
  if (m.name !== undefined) w.stringField(2, m.name);
  u.to(5);
  for (const t of m.initializer) w.messageField(5, (c) => encTensor(c, t));
  u.to(10);
  if (m.docString !== undefined) w.stringField(10, m.docString);
  u.to(11);
  for (const x of m.input) w.messageField(11, (c) => encValueInfo(c, x));
  u.to(12);
  for (const x of m.output) w.messageField(12, (c) => encValueInfo(c, x));
  u.to(13);
  for (const x of m.valueInfo) w.messageField(13, (c) => encValueInfo(c, x));
  u.rest();
}

function encModel(w: Writer, m: ModelProto): void {
  const u = new Unk(w, m.unknown);
  u.to(1);
  if (m.irVersion !== undefined) w.varintField(1, m.irVersion);
  u.to(2);
  if (m.producerName !== undefined) w.stringField(2, m.producerName);
  u.to(3);
  if (m.producerVersion !== undefined) w.stringField(3, m.producerVersion);
  u.to(4);
  if (m.domain !== undefined) w.stringField(4, m.domain);
  u.to(5);
  if (m.modelVersion !== undefined) w.varintField(5, m.modelVersion);
  u.to(6);
  if (m.docString !== undefined) w.stringField(6, m.docString);
  u.to(7);
  if (m.graph) w.messageField(7, (c) => encGraph(c, m.graph!));
  u.to(8);
  for (const o of m.opsetImport) w.messageField(8, (c) => encOpset(c, o));
  u.to(14);
  for (const p of m.metadataProps) w.messageField(14, (c) => encEntry(c, p));
  u.rest();
}

/** The encoded model as a list of byte parts (large tensor data is referenced, not copied). */
export function encodeModelParts(model: ModelProto): Uint8Array[] {
  const w = new Writer();
  encModel(w, model);
  return w.finish();
}

/** Encode a ModelProto to bytes. */
export function encodeModel(model: ModelProto): Uint8Array {
  const w = new Writer();
  encModel(w, model);
  const total = w.length;
  if (total > 2 ** 31 - 1) {
    throw new LobesError(`model is ${total} bytes; protobuf files are limited to 2 GiB`, {
      hint: 'store the weights as external data',
    });
  }
  return w.toBytes();
}

/** Write a model file atomically (tmp + rename). */
export function writeModel(file: string, model: ModelProto): void {
  writeFileAtomicSync(file, encodeModelParts(model));
}

// ---------------------------------------------------------------------------------------
// Loading from disk, external data

export interface ExternalRef {
  /** Absolute path of the data file. */
  path: string;
  /** Location as written in the model. */
  location: string;
  offset: number;
  length: number;
}

export interface LoadedModel {
  /** The graph file. */
  file: string;
  /** Folder holding the graph file; external locations are relative to it. */
  dir: string;
  model: ModelProto;
  /** The bytes of the graph file (tensor raw data views point into them). */
  bytes: Uint8Array;
  /** Initializers by name. */
  initializers: Map<string, TensorProto>;
  /** External data of each externally stored initializer, validated. */
  external: Map<string, ExternalRef>;
}

/** Graph file names tried, in order, when loadModel is given a folder. */
export const MODEL_FILE_CANDIDATES = [
  'model.onnx',
  'decoder_model_merged.onnx',
  'decoder_model.onnx',
  'onnx/model.onnx',
  'onnx/decoder_model_merged.onnx',
  'onnx/decoder_model.onnx',
];

/** Find the graph file of a model folder (or return the file given). */
export function resolveModelFile(dirOrFile: string): string {
  if (!existsSync(dirOrFile)) throw new LobesError('no such file or folder', { file: dirOrFile });
  if (statSync(dirOrFile).isFile()) return dirOrFile;
  // onnxruntime-genai names its decoder file in genai_config.json.
  const genai = join(dirOrFile, 'genai_config.json');
  if (existsSync(genai)) {
    try {
      const fname = JSON.parse(readFileSync(genai, 'utf8'))?.model?.decoder?.filename;
      if (typeof fname === 'string' && !isAbsolute(fname) && !fname.split(/[\\/]/).includes('..') && existsSync(join(dirOrFile, fname))) {
        return join(dirOrFile, fname);
      }
    } catch {
      // fall through to the usual names
    }
  }
  for (const c of MODEL_FILE_CANDIDATES) {
    const p = join(dirOrFile, c);
    if (existsSync(p) && statSync(p).isFile()) return p;
  }
  const onnx = readdirSync(dirOrFile).filter((f) => f.endsWith('.onnx'));
  if (onnx.length === 1) return join(dirOrFile, onnx[0]!);
  throw new LobesError(
    onnx.length === 0 ? 'no .onnx file in the model folder' : `several .onnx files (${onnx.join(', ')}) and none named model.onnx`,
    { file: dirOrFile, hint: 'pass the .onnx file itself' },
  );
}

function externalOf(t: TensorProto): Map<string, string> {
  const m = new Map<string, string>();
  for (const e of t.externalData ?? []) if (e.key !== undefined) m.set(e.key, e.value ?? '');
  return m;
}

/** Byte size of a tensor from its dims and type, or null when not computable. */
export function tensorByteSize(t: TensorProto): number | null {
  const s = dataTypeSize(t.dataType);
  if (!s) return null;
  let n = 1;
  for (const d of t.dims) n *= d;
  return Math.ceil(n * s);
}

/**
 * Validate the external-data reference of a tensor: the location must be relative, free of
 * '..', inside `dir`, and the byte range must lie within the file.
 */
export function resolveExternal(dir: string, t: TensorProto, graphFile: string, sizes = new Map<string, number>()): ExternalRef {
  const kv = externalOf(t);
  const name = t.name ?? '(unnamed)';
  const where = `initializer ${name}`;
  const location = kv.get('location');
  if (!location) throw new LobesError('external data without a location', { file: graphFile, where });
  const parts = location.split(/[\\/]+/);
  const abs = resolve(dir, location);
  const rel = relative(resolve(dir), abs);
  if (isAbsolute(location) || /^[a-zA-Z]:/.test(location) || parts.includes('..') || rel.startsWith('..') || isAbsolute(rel) || rel === '') {
    throw new LobesError(`external data location ${JSON.stringify(location)} points outside the model folder (rejected: path traversal)`, {
      file: graphFile,
      where,
      hint: 'external data must be a relative path inside the model folder',
    });
  }
  const offset = Number(kv.get('offset') ?? '0');
  const lenStr = kv.get('length');
  const expected = tensorByteSize(t);
  const length = lenStr !== undefined ? Number(lenStr) : expected;
  if (!Number.isSafeInteger(offset) || offset < 0 || length === null || !Number.isSafeInteger(length) || length < 0) {
    throw new LobesError(`bad external data offset/length (${kv.get('offset')}/${lenStr})`, { file: graphFile, where });
  }
  let size = sizes.get(abs);
  if (size === undefined) {
    if (!existsSync(abs)) {
      throw new LobesError(`external data file ${location} is missing`, { file: graphFile, where, hint: `expected at ${abs}` });
    }
    size = statSync(abs).size;
    sizes.set(abs, size);
  }
  if (offset + length > size) {
    throw new LobesError(`external data range ${offset}+${length} runs past the end of ${location} (${size} bytes; truncated?)`, {
      file: graphFile,
      where,
    });
  }
  return { path: abs, location, offset, length };
}

/**
 * Load a model's graph file (never its external weights) and validate every external
 * data reference. `dirOrFile` is a model folder or an .onnx file.
 */
export function loadModel(dirOrFile: string): LoadedModel {
  const file = resolveModelFile(dirOrFile);
  const dir = dirname(resolve(file));
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e: any) {
    throw new LobesError(`cannot read: ${e.code ?? e.message}`, { file });
  }
  const model = decodeModel(bytes, file);
  const initializers = new Map<string, TensorProto>();
  const external = new Map<string, ExternalRef>();
  const sizes = new Map<string, number>();
  for (const t of model.graph!.initializer) {
    if (t.name !== undefined) initializers.set(t.name, t);
    if (t.dataLocation === 1) external.set(t.name ?? '', resolveExternal(dir, t, file, sizes));
  }
  // Constant nodes may hold external tensors too.
  for (const n of model.graph!.node) {
    for (const a of n.attribute) {
      if (a.t && a.t.dataLocation === 1) resolveExternal(dir, a.t, file, sizes);
    }
  }
  return { file, dir, model, bytes, initializers, external };
}

function readRange(path: string, offset: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (offset + length > size) throw new LobesError(`range ${offset}+${length} runs past the end (${size} bytes)`, { file: path });
    let got = 0;
    while (got < length) {
      const n = readSync(fd, out, got, length - got, offset + got);
      if (n <= 0) throw new LobesError(`short read at ${offset + got}`, { file: path });
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/**
 * The bytes of an initializer (little-endian, ONNX layout): a view of inline raw data, a
 * range read of external data, or the typed fields converted to bytes.
 */
export function readInitializerBytes(m: LoadedModel, name: string): Uint8Array {
  const t = m.initializers.get(name);
  if (!t) throw new LobesError(`no initializer named ${JSON.stringify(name)}`, { file: m.file });
  return tensorBytes(t, m.dir, m.file);
}

/** Bytes of a tensor (see readInitializerBytes); `dir` resolves external data. */
export function tensorBytes(t: TensorProto, dir: string, graphFile = dir): Uint8Array {
  if (t.dataLocation === 1) {
    const ref = resolveExternal(dir, t, graphFile);
    return readRange(ref.path, ref.offset, ref.length);
  }
  if (t.rawData) return t.rawData;
  if (t.floatData) return bytesOf(t.floatData);
  if (t.doubleData) return bytesOf(t.doubleData);
  const dt = t.dataType;
  if (t.int32Data) {
    const v = t.int32Data;
    switch (dt) {
      case DataType.FLOAT16:
      case DataType.BFLOAT16:
      case DataType.UINT16:
      case DataType.INT16: {
        const o = new Uint16Array(v.length);
        for (let i = 0; i < v.length; i++) o[i] = Number(v[i]) & 0xffff;
        return bytesOf(o);
      }
      case DataType.INT8:
      case DataType.UINT8:
      case DataType.BOOL: {
        const o = new Uint8Array(v.length);
        for (let i = 0; i < v.length; i++) o[i] = Number(v[i]) & 0xff;
        return o;
      }
      default: {
        const o = new Int32Array(v.length);
        for (let i = 0; i < v.length; i++) o[i] = Number(v[i]);
        return bytesOf(o);
      }
    }
  }
  if (t.int64Data) return bytesOf(BigInt64Array.from(t.int64Data, (x) => BigInt(x)));
  if (t.uint64Data) return bytesOf(BigUint64Array.from(t.uint64Data, (x) => BigInt.asUintN(64, BigInt(x))));
  return new Uint8Array(0);
}

/** An aligned copy when needed, so typed-array views can be made. */
function aligned(b: Uint8Array, k: number): Uint8Array {
  return b.byteOffset % k === 0 ? b : new Uint8Array(b);
}

/** A float tensor (fp32, fp16, bf16, fp64) as float32. */
export function tensorToFloat32(t: TensorProto, bytes: Uint8Array, where = t.name ?? 'tensor'): Float32Array {
  switch (t.dataType) {
    case DataType.FLOAT: {
      const b = aligned(bytes, 4);
      return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    }
    case DataType.FLOAT16: {
      const b = aligned(bytes, 2);
      return halfArrayToFloat(new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2));
    }
    case DataType.BFLOAT16: {
      const b = aligned(bytes, 2);
      return bf16ArrayToFloat(new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2));
    }
    case DataType.DOUBLE: {
      const b = aligned(bytes, 8);
      return Float32Array.from(new Float64Array(b.buffer, b.byteOffset, b.byteLength / 8));
    }
    default:
      throw new LobesError(`tensor of type ${dataTypeName(t.dataType)} is not a float tensor`, { where });
  }
}

/** An initializer as float32 (fp32/fp16/bf16/fp64). */
export function readInitializerFloat32(m: LoadedModel, name: string): Float32Array {
  const t = m.initializers.get(name);
  if (!t) throw new LobesError(`no initializer named ${JSON.stringify(name)}`, { file: m.file });
  return tensorToFloat32(t, tensorBytes(t, m.dir, m.file), `${basename(m.file)}: ${name}`);
}

/** An integer tensor (int64/int32/uint8/int8...) as numbers. */
export function tensorToNumbers(t: TensorProto, bytes: Uint8Array): number[] {
  switch (t.dataType) {
    case DataType.INT64: {
      const b = aligned(bytes, 8);
      return Array.from(new BigInt64Array(b.buffer, b.byteOffset, b.byteLength / 8), Number);
    }
    case DataType.INT32: {
      const b = aligned(bytes, 4);
      return Array.from(new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4));
    }
    case DataType.UINT8:
    case DataType.BOOL:
      return Array.from(bytes);
    case DataType.INT8:
      return Array.from(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    default:
      return Array.from(tensorToFloat32(t, bytes));
  }
}

// ---------------------------------------------------------------------------------------
// Builders

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
    throw new LobesError(`makeTensor ${name}: ${data.byteLength} bytes given for dims [${dims}] of ${dataTypeName(dataType)} (${Math.ceil(n * size)} expected)`);
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

export type AttrValue = number | bigint | string | number[] | bigint[] | string[] | TensorProto | GraphProto | { f: number } | { floats: number[] };

const te = new TextEncoder();

/** Build an AttributeProto from a value (see the module comment for the mapping). */
export function makeAttribute(name: string, v: AttrValue): AttributeProto {
  if (typeof v === 'bigint') return { name, i: v, type: 2 };
  if (typeof v === 'number') return Number.isInteger(v) ? { name, i: v, type: 2 } : { name, f: v, type: 1 };
  if (typeof v === 'string') return { name, s: te.encode(v), type: 3 };
  if (Array.isArray(v)) {
    if (v.length && typeof v[0] === 'string') return { name, strings: (v as string[]).map((s) => te.encode(s)), type: 8 };
    const nums = v as (number | bigint)[];
    if (nums.every((x) => typeof x === 'bigint' || Number.isInteger(x))) return { name, ints: nums, type: 7 };
    return { name, floats: nums.map(Number), type: 6 };
  }
  if ('f' in v && typeof v.f === 'number') return { name, f: v.f, type: 1 };
  if ('floats' in v) return { name, floats: [...(v as { floats: number[] }).floats], type: 6 };
  if ('node' in v) return { name, g: v as GraphProto, type: 5 };
  return { name, t: v as TensorProto, type: 4 };
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

/** A tensor value info; shape entries are numbers, symbolic names, or null (unknown). */
export function makeValueInfo(name: string, elemType: number, shape: (number | string | null)[] | null): ValueInfo {
  const tensorType: TensorTypeProto = { elemType };
  if (shape) {
    tensorType.shape = {
      dim: shape.map((d) => (d === null ? {} : typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
    };
  }
  return { name, type: { tensorType } };
}

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

// ---------------------------------------------------------------------------------------
// Small accessors used by graph analysis

/** Attribute by name. */
export function getAttr(n: NodeProto, name: string): AttributeProto | undefined {
  return n.attribute.find((a) => a.name === name);
}

export function attrInt(n: NodeProto, name: string, def: number): number {
  const a = getAttr(n, name);
  return a?.i !== undefined ? Number(a.i) : def;
}

export function attrFloatValue(n: NodeProto, name: string, def: number): number {
  const a = getAttr(n, name);
  return a?.f !== undefined ? a.f : def;
}

export function attrInts(n: NodeProto, name: string): number[] | undefined {
  const a = getAttr(n, name);
  return a?.ints?.map(Number);
}

/** Shape of a value info: numbers for fixed dims, strings for symbolic, null for unknown. */
export function valueShape(v: ValueInfo): (number | string | null)[] | null {
  const s = v.type?.tensorType?.shape;
  if (!s) return null;
  return s.dim.map((d) => (d.dimValue !== undefined ? Number(d.dimValue) : d.dimParam !== undefined ? d.dimParam : null));
}

export function valueElemType(v: ValueInfo): number | undefined {
  return v.type?.tensorType?.elemType;
}
