/**
 * Encoding the objects of types.ts to ONNX protobuf bytes. Known fields and kept unknown
 * fields are written interleaved in field-number order, so a file written by the reference
 * protobuf library re-encodes to the same bytes. Large tensor data is referenced, not
 * copied, until the final concatenation (or never, when writing parts to a file).
 */
import { LobesError } from '../util/errors.js';
import { bytesOf, writeFileAtomicSync } from '../util/io.js';
import { Field } from './fields.js';
import { Writer } from './proto.js';
import type {
  AttributeProto,
  Dimension,
  GraphProto,
  ModelProto,
  NodeProto,
  OperatorSetId,
  StringStringEntry,
  TensorProto,
  TensorShape,
  TensorTypeProto,
  TypeProto,
  UnknownField,
  ValueInfo,
} from './types.js';

/** Protobuf messages are limited to 2 GiB. */
const MAX_MESSAGE_BYTES = 2 ** 31 - 1;

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
  const F = Field.StringStringEntry;
  const u = new Unk(w, m.unknown);
  u.to(F.KEY);
  if (m.key !== undefined) w.stringField(F.KEY, m.key);
  u.to(F.VALUE);
  if (m.value !== undefined) w.stringField(F.VALUE, m.value);
  u.rest();
}

function encOpset(w: Writer, m: OperatorSetId): void {
  const F = Field.OperatorSetId;
  const u = new Unk(w, m.unknown);
  u.to(F.DOMAIN);
  if (m.domain !== undefined) w.stringField(F.DOMAIN, m.domain);
  u.to(F.VERSION);
  if (m.version !== undefined) w.varintField(F.VERSION, m.version);
  u.rest();
}

function encDim(w: Writer, m: Dimension): void {
  const F = Field.Dimension;
  const u = new Unk(w, m.unknown);
  u.to(F.DIM_VALUE);
  if (m.dimValue !== undefined) w.varintField(F.DIM_VALUE, m.dimValue);
  u.to(F.DIM_PARAM);
  if (m.dimParam !== undefined) w.stringField(F.DIM_PARAM, m.dimParam);
  u.to(F.DENOTATION);
  if (m.denotation !== undefined) w.stringField(F.DENOTATION, m.denotation);
  u.rest();
}

function encShape(w: Writer, m: TensorShape): void {
  const F = Field.Shape;
  const u = new Unk(w, m.unknown);
  u.to(F.DIM);
  for (const d of m.dim) w.messageField(F.DIM, (c) => encDim(c, d));
  u.rest();
}

function encTensorType(w: Writer, m: TensorTypeProto): void {
  const F = Field.TensorType;
  const u = new Unk(w, m.unknown);
  u.to(F.ELEM_TYPE);
  if (m.elemType !== undefined) w.varintField(F.ELEM_TYPE, m.elemType);
  u.to(F.SHAPE);
  if (m.shape) w.messageField(F.SHAPE, (c) => encShape(c, m.shape!));
  u.rest();
}

function encType(w: Writer, m: TypeProto): void {
  const F = Field.Type;
  const u = new Unk(w, m.unknown);
  u.to(F.TENSOR_TYPE);
  if (m.tensorType) w.messageField(F.TENSOR_TYPE, (c) => encTensorType(c, m.tensorType!));
  u.to(F.DENOTATION);
  if (m.denotation !== undefined) w.stringField(F.DENOTATION, m.denotation);
  u.rest();
}

function encValueInfo(w: Writer, m: ValueInfo): void {
  const F = Field.ValueInfo;
  const u = new Unk(w, m.unknown);
  u.to(F.NAME);
  if (m.name !== undefined) w.stringField(F.NAME, m.name);
  u.to(F.TYPE);
  if (m.type) w.messageField(F.TYPE, (c) => encType(c, m.type!));
  u.to(F.DOC_STRING);
  if (m.docString !== undefined) w.stringField(F.DOC_STRING, m.docString);
  u.rest();
}

function encTensor(w: Writer, m: TensorProto): void {
  const F = Field.Tensor;
  const u = new Unk(w, m.unknown);
  u.to(F.DIMS);
  for (const d of m.dims) w.varintField(F.DIMS, d);
  u.to(F.DATA_TYPE);
  if (m.dataType !== undefined) w.varintField(F.DATA_TYPE, m.dataType);
  u.to(F.FLOAT_DATA);
  if (m.floatData && m.floatData.length) w.bytesField(F.FLOAT_DATA, bytesOf(m.floatData));
  u.to(F.INT32_DATA);
  if (m.int32Data) w.packedVarints(F.INT32_DATA, m.int32Data);
  u.to(F.STRING_DATA);
  if (m.stringData) { for (const s of m.stringData) w.bytesField(F.STRING_DATA, s); }
  u.to(F.INT64_DATA);
  if (m.int64Data) w.packedVarints(F.INT64_DATA, m.int64Data);
  u.to(F.NAME);
  if (m.name !== undefined) w.stringField(F.NAME, m.name);
  u.to(F.RAW_DATA);
  if (m.rawData !== undefined) w.bytesField(F.RAW_DATA, m.rawData);
  u.to(F.DOUBLE_DATA);
  if (m.doubleData && m.doubleData.length) w.bytesField(F.DOUBLE_DATA, bytesOf(m.doubleData));
  u.to(F.UINT64_DATA);
  if (m.uint64Data) w.packedVarints(F.UINT64_DATA, m.uint64Data);
  u.to(F.DOC_STRING);
  if (m.docString !== undefined) w.stringField(F.DOC_STRING, m.docString);
  u.to(F.EXTERNAL_DATA);
  if (m.externalData) { for (const x of m.externalData) w.messageField(F.EXTERNAL_DATA, (c) => encEntry(c, x)); }
  u.to(F.DATA_LOCATION);
  if (m.dataLocation !== undefined) w.varintField(F.DATA_LOCATION, m.dataLocation);
  u.rest();
}

function encAttribute(w: Writer, m: AttributeProto): void {
  const F = Field.Attribute;
  const u = new Unk(w, m.unknown);
  u.to(F.NAME);
  if (m.name !== undefined) w.stringField(F.NAME, m.name);
  u.to(F.F);
  if (m.f !== undefined) w.floatField(F.F, m.f);
  u.to(F.I);
  if (m.i !== undefined) w.varintField(F.I, m.i);
  u.to(F.S);
  if (m.s !== undefined) w.bytesField(F.S, m.s);
  u.to(F.T);
  if (m.t) w.messageField(F.T, (c) => encTensor(c, m.t!));
  u.to(F.G);
  if (m.g) w.messageField(F.G, (c) => encGraph(c, m.g!));
  u.to(F.FLOATS);
  if (m.floats) { for (const x of m.floats) w.floatField(F.FLOATS, x); }
  u.to(F.INTS);
  if (m.ints) { for (const x of m.ints) w.varintField(F.INTS, x); }
  u.to(F.STRINGS);
  if (m.strings) { for (const x of m.strings) w.bytesField(F.STRINGS, x); }
  u.to(F.TENSORS);
  if (m.tensors) { for (const x of m.tensors) w.messageField(F.TENSORS, (c) => encTensor(c, x)); }
  u.to(F.GRAPHS);
  if (m.graphs) { for (const x of m.graphs) w.messageField(F.GRAPHS, (c) => encGraph(c, x)); }
  u.to(F.DOC_STRING);
  if (m.docString !== undefined) w.stringField(F.DOC_STRING, m.docString);
  u.to(F.TYPE);
  if (m.type !== undefined) w.varintField(F.TYPE, m.type);
  u.to(F.REF_ATTR_NAME);
  if (m.refAttrName !== undefined) w.stringField(F.REF_ATTR_NAME, m.refAttrName);
  u.rest();
}

function encNode(w: Writer, m: NodeProto): void {
  const F = Field.Node;
  const u = new Unk(w, m.unknown);
  u.to(F.INPUT);
  for (const x of m.input) w.stringField(F.INPUT, x);
  u.to(F.OUTPUT);
  for (const x of m.output) w.stringField(F.OUTPUT, x);
  u.to(F.NAME);
  if (m.name !== undefined) w.stringField(F.NAME, m.name);
  u.to(F.OP_TYPE);
  w.stringField(F.OP_TYPE, m.opType);
  u.to(F.ATTRIBUTE);
  for (const a of m.attribute) w.messageField(F.ATTRIBUTE, (c) => encAttribute(c, a));
  u.to(F.DOC_STRING);
  if (m.docString !== undefined) w.stringField(F.DOC_STRING, m.docString);
  u.to(F.DOMAIN);
  if (m.domain !== undefined) w.stringField(F.DOMAIN, m.domain);
  u.rest();
}

function encGraph(w: Writer, m: GraphProto): void {
  const F = Field.Graph;
  const u = new Unk(w, m.unknown);
  u.to(F.NODE);
  for (const n of m.node) w.messageField(F.NODE, (c) => encNode(c, n));
  u.to(F.NAME);
  if (m.name !== undefined) w.stringField(F.NAME, m.name);
  u.to(F.INITIALIZER);
  for (const t of m.initializer) w.messageField(F.INITIALIZER, (c) => encTensor(c, t));
  u.to(F.DOC_STRING);
  if (m.docString !== undefined) w.stringField(F.DOC_STRING, m.docString);
  u.to(F.INPUT);
  for (const x of m.input) w.messageField(F.INPUT, (c) => encValueInfo(c, x));
  u.to(F.OUTPUT);
  for (const x of m.output) w.messageField(F.OUTPUT, (c) => encValueInfo(c, x));
  u.to(F.VALUE_INFO);
  for (const x of m.valueInfo) w.messageField(F.VALUE_INFO, (c) => encValueInfo(c, x));
  u.rest();
}

function encModel(w: Writer, m: ModelProto): void {
  const F = Field.Model;
  const u = new Unk(w, m.unknown);
  u.to(F.IR_VERSION);
  if (m.irVersion !== undefined) w.varintField(F.IR_VERSION, m.irVersion);
  u.to(F.PRODUCER_NAME);
  if (m.producerName !== undefined) w.stringField(F.PRODUCER_NAME, m.producerName);
  u.to(F.PRODUCER_VERSION);
  if (m.producerVersion !== undefined) w.stringField(F.PRODUCER_VERSION, m.producerVersion);
  u.to(F.DOMAIN);
  if (m.domain !== undefined) w.stringField(F.DOMAIN, m.domain);
  u.to(F.MODEL_VERSION);
  if (m.modelVersion !== undefined) w.varintField(F.MODEL_VERSION, m.modelVersion);
  u.to(F.DOC_STRING);
  if (m.docString !== undefined) w.stringField(F.DOC_STRING, m.docString);
  u.to(F.GRAPH);
  if (m.graph) w.messageField(F.GRAPH, (c) => encGraph(c, m.graph!));
  u.to(F.OPSET_IMPORT);
  for (const o of m.opsetImport) w.messageField(F.OPSET_IMPORT, (c) => encOpset(c, o));
  u.to(F.METADATA_PROPS);
  for (const p of m.metadataProps) w.messageField(F.METADATA_PROPS, (c) => encEntry(c, p));
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
  if (total > MAX_MESSAGE_BYTES) {
    throw new LobesError(`model is ${total} bytes; protobuf files are limited to 2 GiB`, {
      hint: 'store the weights as external data',
    });
  }
  return w.toBytes();
}

/** Write a model file atomically (temporary file, fsync, rename). */
export function writeModel(file: string, model: ModelProto): void {
  writeFileAtomicSync(file, encodeModelParts(model));
}
