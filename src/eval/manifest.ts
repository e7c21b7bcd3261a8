/** The evaluation folder's manifest type (DIR/eval.json), read and written by store.ts. */
import type { ChunkFile } from '../store/chunks.js';
import type { ShardRange, ShardSpec } from '../store/layout.js';
import type { ControlInfo, InterventionRecord, ModelArch, ModelFile, ModelSourceRecord } from '../store/types.js';
import type { Device } from '../runtime/types.js';
import type { EvalData, TaskChoice } from './units.js';
import type { EvalStats } from './evaluate.js';
import type { EvalTokenizerOptions } from '../runtime/eval-tokenizer.js';
import type { OrderMode } from './score.js';

/** The evaluation directory's manifest (DIR/eval.json). */
export interface EvalManifest {
  format: 'lobes-eval';
  formatVersion: number;
  lobesVersion: string;
  createdAt: string;
  model: { dir: string; graphSha256: string; arch: ModelArch | null;
    source?: ModelSourceRecord; /** Set when the model is a random-weights control (lobes eval --control random). */
    control?: ControlInfo; files?: ModelFile[]; filesSha256?: string };
  tokenizer: { source: string; chatTemplate: boolean };
  dataset: { spec: string; kind: EvalData['kind']; unitsSha256: string; units: number; available: number;
    excluded: number };
  task: TaskChoice | 'mcq';
  settings: { shuffles: number; /** How the option orders were drawn (absent in older folders: random). */
    orders?: OrderMode; seed: number; cot: number; limit: number | null; by?: string[] | null;
    answerPrefix: string | null; prompt: string | null; chatTemplate: EvalTokenizerOptions['chatTemplate'];
    chunkUnits: number; batch: number | null; tokenBudget: number | null; device: Device; bootstrap: number;
    sharePrefix: 'auto' | 'on' | 'off'; maxTokens: number | null; scoring?: 'letter' | 'cloze';
    targetDelimiter?: string | null; mutualInfo?: boolean; /** Edits of activations (--intervene); absent when none. */
    interventions?: InterventionRecord[] };
  shard: ShardSpec | null;
  layout: ShardRange & { datasetUnits: number };
  /** Counters summed over attempts. */
  throughput: EvalStats;
  timings: { loadMs: number; modelLoadMs: number; wallMs: number; attempts: number };
  /** Whether an item's shuffles were scored through the KV cache, sharing their common tokens. */
  sharedPrefix?: boolean;
  complete: boolean;
  files?: { records: ChunkFile; episodes: ChunkFile | null; summary: string };
}
