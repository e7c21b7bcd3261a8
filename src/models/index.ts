/** Generated test models (the generator, its tokenizer, the model cache, planting) and the streaming Llama ONNX writer. */
export {
  writeLlamaOnnx,
  buildLlamaGraph,
  memorySource,
  seededLlamaSource,
  ropeInvFreq,
  expectedWeights,
  llamaConfigJson,
  genaiConfigJson,
  type LlamaSpec,
  type LlamaWeightSource,
  type NbitsBlocks,
  type LlamaLayout,
  type WriteLlamaOptions,
  type WriteLlamaResult,
  type MemoryWeight,
} from '../convert/llama-onnx/index.js';
export { readPlant, plantedSamples, type PlantInfo, type PlantedSampleOptions } from './plant.js';
export {
  generateParams,
  buildGraph,
  configJson,
  BLOCK as PLANT_BLOCK,
  type TinyLlamaOptions,
  type TinyLlamaParams,
  type LayerParams,
  type PlantSpec,
  type PlantedGroup,
  type QuantMatrix,
  quantizeMatrix,
} from './tinyllama.js';
export { buildTokenizer, encodeBpe, trainBpe, type BpeTokenizer } from './tokenizer.js';
export {
  writeModelFolder,
  ensureGeneratedModel,
  ensureModelFromSpec,
  generatedModelParams,
  modelCacheDir,
  GENERATED_MODELS,
  GENERATOR_VERSION,
  type GeneratedModelSpec,
  type WriteOptions,
} from './write.js';
