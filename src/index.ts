/**
 * The lobes library API: the functions the commands are made of, for notebooks and scripts
 * (`import { openRun, runWanda, runCluster } from 'lobes'`). docs/api.md lists every export
 * with one line on what it is for; test/api.test.ts keeps the two in step.
 *
 * Lower layers stay importable from explicit subpaths, outside this curated surface:
 *   'lobes/onnx'     the ONNX protobuf codec and graph index (src/onnx/index.ts)
 *   'lobes/models'   the seeded test-model generator and its cache (src/models/index.ts)
 */

// Errors and version
export { LobesError, UsageError, LobesErrors, isLobesError, ERROR_CODES, type ErrorCode, type ErrorPlace,
  type UsageProblem } from './util/errors.js';
export { LOBES_VERSION } from './version.js';

// Hook names
export { hookName, parseHook, compareHooks, HOOK_SITES, CAPTURE_FAMILIES, type Hook, type HookSite,
  type CaptureFamily } from './hooks.js';

// Datasets
export { loadDataset, DEFAULT_DATASET, ABILITIES, ASPECTS, aspectOf, canonicalizeAbility, normalizeLabel,
  DEFAULT_TEMPLATE } from './data/index.js';
export type { Dataset, Sample } from './data/types.js';

// Extraction
export { runExtract, type ExtractOptions } from './extract/run.js';
export { planBatches, padBatch } from './runtime/batching.js';
export { inspectModel, openCaptureEngine } from './runtime/engine.js';
export { checkInterventions, interventionRecords, fromInterventionRecords,
  type InterventionRecord } from './runtime/intervene.js';
export { listProviders } from './runtime/providers.js';
export { loadTokenizer } from './runtime/tokenize.js';
export type { CaptureEngine, CapturePoint, Device, EngineOptions, Intervention, InterventionOp, LobesTokenizer,
  ModelInfo, TokenBatch } from './runtime/types.js';

// Attention from the answering position
export { mergeAttend } from './attend/merge.js';
export { runAttend, type AttendOptions } from './attend/run.js';
export { readAttendResults, type AttendManifest, type AttendResults } from './attend/store.js';
export type { AttendItem, AttendSummary } from './attend/types.js';
export { loadAttend } from './report/attend.js';
export { openAttentionEngine, realRows, parseLayerSelection, type AttentionEngine,
  type AttentionBatch } from './runtime/attention-engine.js';

// The run directory
export { openRun, verifyRun, mergeRuns, readManifest, parseShard, runIdentity, analysisProvenance,
  checkProvenance } from './store/index.js';
export type { RunReader, RunManifest, SampleRow, HookInfo, RowChunk, ModelArch,
  AnalysisProvenance } from './store/types.js';
export { writeDirAtomic } from './util/io.js';
export { stderrIO, silentIO, type JobIO, type ProgressEvent, type JobIOOptions } from './util/jobio.js';

// Wanda neuron regions
export { runWanda, DEFAULT_TOP, DEFAULT_PERMUTATIONS, type WandaOptions, type WandaResult } from './wanda/index.js';
export type { WandaSettings, WandaRegions, WandaMetrics } from './wanda/types.js';

// Representation geometry
export { stratifiedPermutations, exchangeability, type Exchangeability } from './cluster/conditional.js';
export { runCluster, readLabelsFile, Tsne, pca, readNpy, encodeNpy, spaceMetrics, type ClusterOptions,
  type ClusterResult, type TsneOptions, type PcaResult } from './cluster/index.js';
export type { ClusterSettings, ClusterCoords, ClusterMetrics, SpaceMetrics } from './cluster/types.js';
export { runSwap, type RunSwapOptions } from './swap/run.js';
export { swapAnalysis, checkSwapControl, type SwapInput, type SwapResult, type SwapPointResult, type ConditionalTest,
  type SwapFamily, type SwapControlResult } from './swap/swap.js';

// The logit lens (docs/lens.md)
export { readLensHead, type LensHead } from './lens/head.js';
export { runLens, type LensOptions } from './lens/run.js';
export type { LensResult, LensItem, LensLayerSummary } from './lens/types.js';

// The analysis registry (docs/architecture.md, "Adding an analysis")
export { ANALYSES, analysisById, type AnalysisId } from './analysis/registry.js';
export type { Analysis } from './analysis/types.js';

// Reports
export { loadRun, runPayload, compareRuns, reportHtml, compareHtml, writeReport, writeCompare, exportFigures,
  type ReportModel } from './report/index.js';
export { writeSyntheticRun, type SyntheticRunOptions } from './report/synthetic.js';
export type { RunPayload, Comparison, ComparisonRow } from './report/types.js';

// Benchmark evaluation (docs/eval.md)
export { loadMcqJsonl } from './data/mcq.js';
export { renderPrompt } from './data/prompt.js';
export { loadSocialEvalBench } from './data/socialeval-eval.js';
export { labelRunFromEval } from './eval/link.js';
export { mergeEvals } from './eval/merge.js';
export { runEval, readEvalResults, type EvalOptions, type EvalManifest } from './eval/run.js';
export { summarizeCloze, type ClozeSummary } from './eval/summary-cloze.js';
export type { EvalSummary } from './eval/summary-types.js';
export { summarize } from './eval/summary.js';
export type { EvalRecord, ShuffleRecord, EpisodeRecord, PromptPart, RenderedPrompt, ClozeRecord,
  ClozeOption } from './eval/types.js';
export { openLoglikEngine, splitContinuation, type LoglikEngine, type LoglikOptions, type LoglikRequest,
  type ContinuationScore } from './runtime/loglik.js';

// Causal tests of neuron regions (docs/ablate.md)
export { runAblate, type AblateOptions } from './ablate/run.js';
export type { AblateSummary } from './ablate/store.js';

// Environment checks (lobes doctor)
export { runDoctor, type DoctorOptions, type DoctorReport } from './doctor/index.js';

// Weight and tensor files
export { openGguf, type GgufFile, type GgufTensorInfo, type GgufValue } from './formats/gguf.js';
export { writeShardedSafetensors, planShards } from './formats/safetensors-shards.js';
export { readSafetensorsHeader, readTensorFloat32, writeSafetensors, type StHeader,
  type StTensorInfo } from './formats/safetensors.js';
export { SafetensorsWriter, encodeSafetensorsHeader, stTensorBytes, type StTensorSpec } from './formats/safetensors.js';

// GGUF models (llama.cpp, Ollama) as ONNX model folders
export { resolveModel, isGgufFile, defaultCacheDir, type ResolveModelOptions, type ResolvedModel,
  type ModelSource } from './convert/cache.js';
export { convertGguf, type ConvertOptions, type ConvertResult } from './convert/convert.js';
export { openGgufLlama, type GgufLlama } from './convert/gguf-llama.js';
