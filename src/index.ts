/**
 * The lobes library API: what the commands use, for notebooks and scripts
 * (`import { openRun, runWanda, runCluster } from 'lobes'`).
 */
export * from './util/errors.js';
export { Rng } from './util/rng.js';
export * from './formats/safetensors.js';
export type * from './data/types.js';
export type * from './store/types.js';
export type * from './extract/types.js';
export type * from './wanda/types.js';
export type * from './cluster/types.js';
export { LOBES_VERSION } from './version.js';
export { loadDataset, DEFAULT_DATASET, ABILITIES, ASPECTS, aspectOf, canonicalizeAbility, normalizeLabel, DEFAULT_TEMPLATE } from './data/index.js';
export * from './onnx/index.js';
export * from './models/index.js';
export { openRun, verifyRun, mergeRuns, readManifest, parseShard, shardRange } from './store/index.js';
export { runExtract, type ExtractOptions } from './extract/run.js';
export { loadRun, runPayload, compareRuns, reportHtml, compareHtml, writeReport, writeCompare, exportFigures, type ReportModel, type RunPayload, type Comparison, type ComparisonRow } from './report/index.js';
export { writeSyntheticRun, type SyntheticRunOptions } from './report/synthetic.js';
export { openCaptureEngine, inspectModel, openPlainSession, positionIds } from './extract/engine.js';
export { loadTokenizer } from './extract/tokenize.js';
export { planBatches, padBatch } from './extract/batching.js';
export { listProviders } from './extract/providers.js';
export { runWanda, locateWeights, metricsCsv, analyze, weightPass, columnBlockSums, dequantizeNBits, memorySource, runSource, poolBlocks, DEFAULT_TOP, DEFAULT_PERMUTATIONS, type WandaOptions, type WandaResult, type MatrixRef, type ActivationSource } from './wanda/index.js';
export { runCluster, readLabelsFile, Tsne, pca, readNpy, parseNpy, encodeNpy, spaceMetrics, type ClusterOptions, type ClusterResult, type TsneOptions, type PcaResult } from './cluster/index.js';
