/**
 * The streaming Llama ONNX writer: a LlamaSpec plus a LlamaWeightSource (weights by Hugging
 * Face name) → an ONNX model folder in the 'explicit' (optimum-style) or 'genai'
 * (onnxruntime-genai builder-style) layout, fp32/fp16 compute, fp32/fp16/4-bit weights,
 * streamed into model.onnx.data a row chunk at a time.
 *
 *   const r = await writeLlamaOnnx(dir, spec, source, { layout: 'genai', dtype: 'fp32', weights: 'q4' });
 */
export { llamaConfigJson, genaiConfigJson } from './config.js';
export { encodeGGraph, type GGraph, type GNode, type GInit, type GValue, type GAttr } from './graph.js';
export { InlineSink, FileSink, type TensorSink, type Region } from './sink.js';
export { memorySource, seededLlamaSource, type MemoryWeight, type SeededSourceOptions } from './source.js';
export { checkSpec, checkSource, expectedWeights, ropeInvFreq, ropeType, W as WEIGHT_NAMES } from './spec.js';
export type { LlamaSpec, LlamaWeightSource, NbitsBlocks, LlamaLayout, WriteLlamaOptions,
  WriteLlamaResult } from './types.js';
export { quantizeRows } from './weights.js';
export { writeLlamaOnnx, buildLlamaGraph, buildLlamaGraphInline, plannedDataBytes, DATA_FILE,
  WRITER_VERSION } from './writer.js';
