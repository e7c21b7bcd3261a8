/**
 * ONNX models as plain TypeScript objects: decode, edit, encode, without loading weights.
 * Other folders import from here only.
 *
 *   types   the messages (ModelProto, GraphProto, ...) and DataType / AttributeType / DataLocation
 *   decode  protobuf bytes → objects (lossless: unknown fields are kept verbatim)
 *   encode  objects → protobuf bytes, writeModel
 *   load    loadModel(dirOrFile): the graph file only, every external-data reference validated
 *   tensor  tensor bytes (inline or by byte range from external files) and values
 *   build   makeTensor / makeNode / makeGraph / makeModel, attribute and shape accessors
 *   graph   GraphIndex: producers, consumers, constants, topological order
 *
 * TensorProto.rawData is a view into the decoded bytes (no copy). Tensors whose data lives
 * in external files keep `externalData` (location/offset/length) and are read on demand
 * with readInitializerBytes, by byte range.
 */
export {
  makeTensor,
  makeNode,
  makeAttribute,
  makeValueInfo,
  makeGraph,
  makeModel,
  attrFloat,
  attrFloats,
  getAttr,
  attrInt,
  valueShape,
  type AttrValue,
  type MakeModelOptions,
  type ShapeDim,
} from './build.js';
export { decodeModel } from './decode.js';
export { encodeModel, encodeModelParts, writeModel } from './encode.js';
export { GraphIndex, PASSTHROUGH } from './graph.js';
export { loadModel, resolveModelFile, resolveExternal, MODEL_FILE_CANDIDATES, type ExternalRef,
  type LoadedModel } from './load.js';
export { tensorBytes, tensorToFloat32, tensorToNumbers, readInitializerBytes,
  readInitializerFloat32 } from './tensor.js';
export * from './types.js';
