/**
 * Decoding ONNX protobuf bytes to the objects of types.ts. Tensor raw data stays a view
 * into the input (no copy); fields not modelled are kept verbatim in `unknown`.
 */
import { LobesError } from '../util/errors.js';
import { Field } from './fields.js';
import { type Int64, ProtoError, Reader, WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_VARINT } from './proto.js';
import type {
  AttributeProto,
  Dimension,
  GraphProto,
  HasUnknown,
  ModelProto,
  NodeProto,
  OperatorSetId,
  StringStringEntry,
  TensorProto,
  TensorShape,
  TensorTypeProto,
  TypeProto,
  ValueInfo,
} from './types.js';

/** Skip a field, keeping its bytes (tag included) in `m.unknown`. */
function keep(r: Reader, start: number, field: number, wire: number, m: HasUnknown): void {
  r.skip(wire);
  (m.unknown ??= []).push({ field, raw: r.buf.subarray(start, r.pos) });
}

function expectWire(r: Reader, wire: number, want: number, what: string, at: number): void {
  if (wire !== want) throw new ProtoError(`${what}: unexpected wire type ${wire}`, at);
}

/** Start and end of a nested message in the reader's buffer. */
type Sub = [number, number];

function decodeEntry(r: Reader, [s, e]: Sub): StringStringEntry {
  const F = Field.StringStringEntry;
  const m: StringStringEntry = {};
  const q = new Reader(r.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.KEY && w === WIRE_LEN) m.key = q.string();
    else if (f === F.VALUE && w === WIRE_LEN) m.value = q.string();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeOpset(r: Reader, [s, e]: Sub): OperatorSetId {
  const F = Field.OperatorSetId;
  const m: OperatorSetId = {};
  const q = new Reader(r.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.DOMAIN && w === WIRE_LEN) m.domain = q.string();
    else if (f === F.VERSION && w === WIRE_VARINT) m.version = q.varint();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeDim(q0: Reader, [s, e]: Sub): Dimension {
  const F = Field.Dimension;
  const m: Dimension = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.DIM_VALUE && w === WIRE_VARINT) m.dimValue = q.varint();
    else if (f === F.DIM_PARAM && w === WIRE_LEN) m.dimParam = q.string();
    else if (f === F.DENOTATION && w === WIRE_LEN) m.denotation = q.string();
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
    if (f === Field.Shape.DIM && w === WIRE_LEN) m.dim.push(decodeDim(q, q.sub()));
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeTensorType(q0: Reader, [s, e]: Sub): TensorTypeProto {
  const F = Field.TensorType;
  const m: TensorTypeProto = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.ELEM_TYPE && w === WIRE_VARINT) m.elemType = q.uint();
    else if (f === F.SHAPE && w === WIRE_LEN) m.shape = decodeShape(q, q.sub());
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeType(q0: Reader, [s, e]: Sub): TypeProto {
  const F = Field.Type;
  const m: TypeProto = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.TENSOR_TYPE && w === WIRE_LEN) m.tensorType = decodeTensorType(q, q.sub());
    else if (f === F.DENOTATION && w === WIRE_LEN) m.denotation = q.string();
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeValueInfo(q0: Reader, [s, e]: Sub): ValueInfo {
  const F = Field.ValueInfo;
  const m: ValueInfo = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.NAME && w === WIRE_LEN) m.name = q.string();
    else if (f === F.TYPE && w === WIRE_LEN) m.type = decodeType(q, q.sub());
    else if (f === F.DOC_STRING && w === WIRE_LEN) m.docString = q.string();
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

/** Repeated float field, packed or not. */
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

/** Repeated double field, packed or not. */
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
  const F = Field.Tensor;
  const m: TensorProto = { dims: [] };
  const q = new Reader(q0.buf, s, e);
  let floats: number[] | undefined;
  let doubles: number[] | undefined;
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    switch (f) {
      case F.DIMS: {
        const d: Int64[] = [];
        readVarints(q, w, d);
        for (const x of d) m.dims.push(Number(x));
        break;
      }
      case F.DATA_TYPE:
        expectWire(q, w, WIRE_VARINT, 'data_type', t0);
        m.dataType = q.uint();
        break;
      case F.FLOAT_DATA:
        readFloats(q, w, floats ??= []);
        break;
      case F.INT32_DATA:
        readVarints(q, w, m.int32Data ??= []);
        break;
      case F.STRING_DATA:
        expectWire(q, w, WIRE_LEN, 'string_data', t0);
        (m.stringData ??= []).push(q.bytes());
        break;
      case F.INT64_DATA:
        readVarints(q, w, m.int64Data ??= []);
        break;
      case F.NAME:
        expectWire(q, w, WIRE_LEN, 'name', t0);
        m.name = q.string();
        break;
      case F.RAW_DATA:
        expectWire(q, w, WIRE_LEN, 'raw_data', t0);
        m.rawData = q.bytes();
        break;
      case F.DOUBLE_DATA:
        readDoubles(q, w, doubles ??= []);
        break;
      case F.UINT64_DATA:
        readVarints(q, w, m.uint64Data ??= []);
        break;
      case F.DOC_STRING:
        expectWire(q, w, WIRE_LEN, 'doc_string', t0);
        m.docString = q.string();
        break;
      case F.EXTERNAL_DATA:
        expectWire(q, w, WIRE_LEN, 'external_data', t0);
        (m.externalData ??= []).push(decodeEntry(q, q.sub()));
        break;
      case F.DATA_LOCATION:
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
  const F = Field.Attribute;
  const m: AttributeProto = {};
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    switch (f) {
      case F.NAME:
        expectWire(q, w, WIRE_LEN, 'attribute name', t0);
        m.name = q.string();
        break;
      case F.F:
        expectWire(q, w, WIRE_I32, 'attribute f', t0);
        m.f = q.float();
        break;
      case F.I:
        expectWire(q, w, WIRE_VARINT, 'attribute i', t0);
        m.i = q.varint();
        break;
      case F.S:
        expectWire(q, w, WIRE_LEN, 'attribute s', t0);
        m.s = q.bytes();
        break;
      case F.T:
        expectWire(q, w, WIRE_LEN, 'attribute t', t0);
        m.t = decodeTensor(q, q.sub());
        break;
      case F.G:
        expectWire(q, w, WIRE_LEN, 'attribute g', t0);
        m.g = decodeGraph(q, q.sub());
        break;
      case F.FLOATS:
        readFloats(q, w, m.floats ??= []);
        break;
      case F.INTS:
        readVarints(q, w, m.ints ??= []);
        break;
      case F.STRINGS:
        expectWire(q, w, WIRE_LEN, 'attribute strings', t0);
        (m.strings ??= []).push(q.bytes());
        break;
      case F.TENSORS:
        expectWire(q, w, WIRE_LEN, 'attribute tensors', t0);
        (m.tensors ??= []).push(decodeTensor(q, q.sub()));
        break;
      case F.GRAPHS:
        expectWire(q, w, WIRE_LEN, 'attribute graphs', t0);
        (m.graphs ??= []).push(decodeGraph(q, q.sub()));
        break;
      case F.DOC_STRING:
        expectWire(q, w, WIRE_LEN, 'attribute doc_string', t0);
        m.docString = q.string();
        break;
      case F.TYPE:
        expectWire(q, w, WIRE_VARINT, 'attribute type', t0);
        m.type = q.uint();
        break;
      case F.REF_ATTR_NAME:
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
  const F = Field.Node;
  const m: NodeProto = { input: [], output: [], opType: '', attribute: [] };
  const q = new Reader(q0.buf, s, e);
  let sawOp = false;
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.INPUT && w === WIRE_LEN) m.input.push(q.string());
    else if (f === F.OUTPUT && w === WIRE_LEN) m.output.push(q.string());
    else if (f === F.NAME && w === WIRE_LEN) m.name = q.string();
    else if (f === F.OP_TYPE && w === WIRE_LEN) {
      m.opType = q.string();
      sawOp = true;
    } else if (f === F.ATTRIBUTE && w === WIRE_LEN) m.attribute.push(decodeAttribute(q, q.sub()));
    else if (f === F.DOC_STRING && w === WIRE_LEN) m.docString = q.string();
    else if (f === F.DOMAIN && w === WIRE_LEN) m.domain = q.string();
    else keep(q, t0, f, w, m);
  }
  if (!sawOp) throw new ProtoError('node without op_type', s);
  return m;
}

function decodeGraph(q0: Reader, [s, e]: Sub): GraphProto {
  const F = Field.Graph;
  const m: GraphProto = { node: [], initializer: [], input: [], output: [], valueInfo: [] };
  const q = new Reader(q0.buf, s, e);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.NODE && w === WIRE_LEN) m.node.push(decodeNode(q, q.sub()));
    else if (f === F.NAME && w === WIRE_LEN) m.name = q.string();
    else if (f === F.INITIALIZER && w === WIRE_LEN) m.initializer.push(decodeTensor(q, q.sub()));
    else if (f === F.DOC_STRING && w === WIRE_LEN) m.docString = q.string();
    else if (f === F.INPUT && w === WIRE_LEN) m.input.push(decodeValueInfo(q, q.sub()));
    else if (f === F.OUTPUT && w === WIRE_LEN) m.output.push(decodeValueInfo(q, q.sub()));
    else if (f === F.VALUE_INFO && w === WIRE_LEN) m.valueInfo.push(decodeValueInfo(q, q.sub()));
    else keep(q, t0, f, w, m);
  }
  return m;
}

function decodeModelProto(buf: Uint8Array): ModelProto {
  const F = Field.Model;
  const m: ModelProto = { opsetImport: [], metadataProps: [] };
  const q = new Reader(buf);
  while (!q.eof()) {
    const t0 = q.pos;
    const [f, w] = q.tag();
    if (f === F.IR_VERSION && w === WIRE_VARINT) m.irVersion = q.varint();
    else if (f === F.PRODUCER_NAME && w === WIRE_LEN) m.producerName = q.string();
    else if (f === F.PRODUCER_VERSION && w === WIRE_LEN) m.producerVersion = q.string();
    else if (f === F.DOMAIN && w === WIRE_LEN) m.domain = q.string();
    else if (f === F.MODEL_VERSION && w === WIRE_VARINT) m.modelVersion = q.varint();
    else if (f === F.DOC_STRING && w === WIRE_LEN) m.docString = q.string();
    else if (f === F.GRAPH && w === WIRE_LEN) m.graph = decodeGraph(q, q.sub());
    else if (f === F.OPSET_IMPORT && w === WIRE_LEN) m.opsetImport.push(decodeOpset(q, q.sub()));
    else if (f === F.METADATA_PROPS && w === WIRE_LEN) m.metadataProps.push(decodeEntry(q, q.sub()));
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
