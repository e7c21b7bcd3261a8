/**
 * The ablation folder (docs/ablate.md, "Outputs"):
 *
 *   DIR/job.json        the job: run, model, data, settings, passes; `complete` and the files' sha256 when done
 *   DIR/records/        while running: score chunks (one per pass and 64 items), so a killed job resumes
 *   DIR/ablation.json   every zeroed block (Hugging Face tensor, rows, cols, ONNX initializer), per region
 *                       and per random region (with its seed)
 *   DIR/records.jsonl   one item per line: id, labels, context, continuation, before, after per region,
 *                       random (after per random region); with --task iae (src/ablate/iae.ts) whether
 *                       the item was answered right in each pass instead
 *   DIR/summary.json    AblateSummary (the report reads it)
 */
import type { FamilyRecord } from '../util/families.js';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { LobesError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import { CHUNKS_DIR, CHUNK_INDEX, jsonl } from '../store/records.js';
import { readJsonFile } from '../store/json.js';
export { CHUNK_INDEX };
import type { ChunkFile } from '../store/chunks.js';
import type { LineageInput } from '../store/lineage.js';
import type { LimitRecord } from '../data/subset.js';
import type { InterventionRecord } from '../store/types.js';
import type { WandaMatrix } from '../wanda/types.js';
import type { AblateItem } from './items.js';
import type { StoredMatrix } from './patch.js';
import { countBlocks, hfBlocks, type Masks, type RegionSpec, type NullScope } from './regions.js';
import type { AblateCell, AblateSpecificity } from './stats.js';
import type { ShuffledLabelRow } from './shuffled.js';
import type { IaeMetric, IaeScoring, IaeSection } from './iae.js';

export const JOB_MANIFEST = 'job.json';
/** Every file and folder lobes ablate writes in DIR besides its model copy (what --force replaces). */
export const ABLATE_OUTPUTS = ['ablation.json', 'records.jsonl', 'summary.json', JOB_MANIFEST, CHUNKS_DIR];

/** Whether DIR holds an ablation job (its job.json). */
export function isAblateJobDir(dir: string): boolean {
  return existsSync(ablateJobFile(dir));
}

/** DIR/job.json. */
export function ablateJobFile(dir: string): string {
  return path.join(dir, JOB_MANIFEST);
}

/** DIR/records: the record chunks of a running ablation. */
export function ablateChunksDir(dir: string): string {
  return path.join(dir, CHUNKS_DIR);
}

/** One scoring pass: the model as it is, a region zeroed, or a random region zeroed. */
export type AblatePass =
  | { id: 'before'; kind: 'before'; masks: null }
  | { id: string; kind: 'region'; region: RegionSpec; masks: Masks; nullSet: number; top?: number }
  | { id: string; kind: 'random'; nullSet: number; seed: number; masks: Masks }
  /** A region wanda gives the group under shuffled labels (--shuffled): shuffle s, its seed. */
  | { id: string; kind: 'shuffled'; region: RegionSpec; shuffle: number; seed: number; masks: Masks };

export interface AblateJob {
  format: 'lobes-ablate';
  formatVersion: 1;
  lobesVersion: string;
  run: { dir: string; identity: string | null; wanda: { by: string; block: [number, number]; top: unknown } };
  /** Lineage (src/store/lineage.ts): the run, the wanda files the regions came from, the model's files and the items, each by content (absent in jobs of an older lobes). */
  inputs?: LineageInput[];
  model: { dir: string; graphSha256: string };
  /** itemsSha256 (continuation task): sha256 over the scored items (id, labels, context, continuation), so a rerun over other items (an edited file, another --limit sample) is not resumed; unitsSha256 (--task iae): eval's hash of the items as they are prompted. */
  data: { spec: string; items: number; limit: LimitRecord | null; itemsSha256?: string; unitsSha256?: string };
  /** task, scoring, metric and shuffles only with --task iae (absent: the continuation task). */
  settings: { region: string; minus: string | null; random: number; scope: NullScope; seed: number; chunkUnits: number;
    bootstrap: number; device: string; tops?: number[]; magnitude?: boolean; shuffled?: number; fitSplit?: number;
    task?: 'iae'; scoring?: IaeScoring; metric?: IaeMetric;
    shuffles?: number; /** Edits of activations (--intervene); absent when none. */
    interventions?: InterventionRecord[] };
  passes: string[];
  complete: boolean;
  files?: Record<string, ChunkFile>;
  timings?: { wallMs: number };
}

/** summary.json: the contract the report reads. */
export interface AblateSummary {
  kind: 'ablate';
  version: 1;
  /** The label axis (wanda's --by). */
  by: string;
  /** Sorted group labels. */
  labels: string[];
  /** Random regions per region (K). */
  random: number;
  /** nats: change of continuation log-likelihood; accuracy (--task iae): change of the share answered right. */
  unit: 'nats' | 'accuracy';
  regions: { name: string; minus: string | null; blocks: number }[];
  cells: AblateCell[];
  specificity: AblateSpecificity[];
  /** The families the cells' and regions' p-values were adjusted in (src/util/families.ts; absent in files written before). */
  declaredFamilies?: FamilyRecord[];
  /** 1 / (K + 1): the smallest p any cell or contrast can have. */
  pFloor: number;
  scope: NullScope;
  seed: number;
  items: number;
  /** With --task iae: the settings, the test against chance and the per-cell accuracy figures. */
  iae?: IaeSection;
  /** With --magnitude: per region, its |W| baseline of the same size. */
  magnitude?: AblateMagnitude[];
  /** With --top F,…: the regions at each top fraction (ascending), each with its own random regions of its size. */
  doses?: AblateDose[];
  /** With --shuffled S: each region's specificity against the regions of S shuffled labellings. */
  shuffled?: AblateShuffled;
  /** With --fit-split SEED: the regions were fitted on one half of the items, every figure is on the other half. */
  fitSplit?: AblateFitSplit;
}

/** The shuffled-label null (docs/ablate.md). */
export interface AblateShuffled {
  /** Shuffles S; the rank p's floor is 1 / (S + 1). */
  shuffles: number;
  seeds: number[];
  pFloor: number;
  /** What Holm runs over: the regions of the run, for the contrast's rank p and for the ratio's each. */
  family: 'regions';
  /** Each shuffled region's block count, per region key, in shuffle order. */
  blocks: Record<string, number[]>;
  rows: ShuffledLabelRow[];
  /** The family of the rows' Holm (shuffled-label-regions, src/util/families.ts; absent in summaries written before it). */
  declaredFamilies?: FamilyRecord[];
}

/** The disjoint fit and test halves (docs/ablate.md). */
export interface AblateFitSplit {
  seed: number;
  /** The axis the halves are stratified by (wanda's --by). */
  by: string;
  /** The fit half: its items, the run rows the regions were computed from, per label; items of the fit half the run does not hold. */
  fit: { items: number; rows: number; byLabel: Record<string, number>; notInRun: number };
  /** The test half: the items every figure is computed on, per label. */
  test: { items: number; byLabel: Record<string, number> };
  /** Per group: the fitted region's blocks and its Jaccard overlap with the region of regions.json (fitted on every row). */
  regions: { name: string; blocks: number; jaccardWithStored: number }[];
  /** The Holm families are those of the summary, over the test half's items: every cell (cells), the regions (specificity). */
  family: 'as-summary';
}

/**
 * The |W|-magnitude baseline of a region: the blocks with the largest mean |W| (no activation
 * norm), as many per pool as the region; its cells and its specificity for the region's target
 * against the region's random regions; and the region against it item by item.
 */
export interface AblateMagnitude {
  region: string;
  minus: string | null;
  blocks: number;
  cells: AblateCell[];
  specificity: AblateSpecificity;
  /** One-sided signed-rank tests of d_region − d_baseline (lower: the region costs the items more than |W| alone does). */
  versusRegion: { test: 'wilcoxon-signed-rank'; alternative: 'less'; own: { n: number; p: number | null };
    others: { n: number; p: number | null } };
}

/** One dose of a dose–response: every region at a wanda top fraction. `stored`: the regions regions.json holds (the same figures as the summary's own). */
export interface AblateDose {
  top: number;
  stored: boolean;
  regions: { name: string; minus: string | null; blocks: number }[];
  cells: AblateCell[];
  specificity: AblateSpecificity[];
  /** The dose's own families (specificity-rank, cells, specificity, specificity-per-token over its regions; absent in summaries written before them). */
  declaredFamilies?: FamilyRecord[];
}

export interface AblateRecord {
  id: string;
  labels: Record<string, string>;
  context: string;
  continuation: string;
  contextTokens: number;
  continuationTokens: number;
  before: number;
  /** Log-likelihood with each region zeroed (key `A` or `A∖B`). */
  after: Record<string, number>;
  /** Log-likelihood with each random region zeroed (key: the random region's id in ablation.json). */
  random: Record<string, number>;
  /** With --shuffled: log-likelihood with each shuffled-label region zeroed (key: its id in ablation.json). */
  shuffled?: Record<string, number>;
}

/** One item of an ablation with --task iae: whether it was answered right in each pass (null: not scored, its prompt is too long). */
export interface AblateIaeRecord {
  id: string;
  labels: Record<string, string>;
  options: number;
  answer: number;
  before: boolean | null;
  /** Per region (key `A` or `A∖B`). */
  after: Record<string, boolean | null>;
  /** Per random region id. */
  random: Record<string, boolean | null>;
}

/** Per item, its value under each pass: `before`, `after` per region, `random` per random region. */
export function passRecords<T>(passes: AblatePass[], n: number,
  value: (pass: number, item: number) => T
): { before: T; after: Record<string, T>; random: Record<string, T>; shuffled?: Record<string, T> }[] {
  const anyShuffled = passes.some((p) => p.kind === 'shuffled');
  return Array.from({ length: n }, (_, i) => {
    const after: Record<string, T> = {};
    const random: Record<string, T> = {};
    const shuffled: Record<string, T> = {};
    passes.forEach((p, k) => {
      if (p.kind === 'region') after[p.id] = value(k, i);
      else if (p.kind === 'random') random[p.id] = value(k, i);
      else if (p.kind === 'shuffled') shuffled[p.id] = value(k, i);
    });
    return { before: value(0, i), after, random, ...(anyShuffled ? { shuffled } : {}) };
  });
}

function blockList(masks: Masks, matrices: WandaMatrix[], block: [number, number], stored: StoredMatrix[]) {
  return hfBlocks(masks, matrices, block).map((b) => ({ tensor: b.tensor, rows: b.rows, cols: b.cols,
    initializer: stored[b.matrix]!.initializer })
  );
}

const fileOf = (dir: string, name: string, text: string): ChunkFile => {
  writeFileAtomicSync(path.join(dir, name), text);
  const bytes = Buffer.from(text, 'utf8');
  return { path: name, bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
};

/** The records of the continuation task: each item's log-likelihood per pass. */
export function continuationRecords(passes: AblatePass[], items: AblateItem[],
  split: { context: number[]; continuation: number[] }[], ll: Float64Array[]): AblateRecord[]
{
  return passRecords(passes, items.length, (k, i) => ll[k]![i]!).map((v, i) => {
    const it = items[i]!;
    return { id: it.id, labels: it.labels, context: it.context, continuation: it.continuation,
      contextTokens: split[i]!.context.length, continuationTokens: split[i]!.continuation.length, ...v };
  });
}

/** Write ablation.json, records.jsonl and summary.json (each atomically); returns their files. */
export function writeAblateOutputs(
  dir: string,
  x: { passes: AblatePass[]; records: (AblateRecord | AblateIaeRecord)[]; stored: StoredMatrix[];
    matrices: WandaMatrix[]; block: [number, number]; summary: AblateSummary; job: AblateJob;
    extra?: Record<string, unknown> },
): Record<string, ChunkFile> {
  const { passes, matrices, block, stored } = x;
  const ablation = {
    kind: 'ablate-blocks',
    version: 1,
    layout:
      'Hugging Face W [d_out, d_in]: rows [start, end) over output features, cols [start, end) over input features',
    run: x.job.run,
    model: x.job.model,
    scope: x.summary.scope,
    seed: x.summary.seed,
    regions: passes.flatMap((
      p,
    ) => (p.kind === 'region'
      ? [{ name: p.region.name, minus: p.region.minus, key: p.id, ...(p.top === undefined ? {} : { top: p.top }),
        random: passes.filter((q) => q.kind === 'random' && q.nullSet === p.nullSet).map((q) => q.id),
        blocks: blockList(p.masks, matrices, block, stored) }]
      : [])
    ),
    random: passes.flatMap((
      p,
    ) => (p.kind === 'random'
      ? [{ id: p.id, nullSet: p.nullSet, seed: p.seed, blocks: blockList(p.masks, matrices, block, stored) }]
      : [])
    ),
    ...(passes.some((p) => p.kind === 'shuffled')
      ? {
        shuffled: passes.flatMap((p) => (p.kind === 'shuffled'
          ? [{ id: p.id, name: p.region.name, minus: p.region.minus, shuffle: p.shuffle, seed: p.seed,
            size: countBlocks(p.masks), blocks: blockList(p.masks, matrices, block, stored) }]
          : [])
        ),
      }
      : {}),
    ...(x.extra ?? {}),
  };
  return {
    ablation: fileOf(dir, 'ablation.json', JSON.stringify(ablation) + '\n'),
    records: fileOf(dir, 'records.jsonl', jsonl(x.records)),
    summary: fileOf(dir, ABLATE_SUMMARY, JSON.stringify(x.summary, null, 2) + '\n'),
  };
}

/** The summary file of an ablation folder. */
export const ABLATE_SUMMARY = 'summary.json';

/** DIR/summary.json. */
export function ablateSummaryFile(dir: string): string {
  return path.join(dir, ABLATE_SUMMARY);
}

/** DIR/job.json, parsed (one-line error naming the file when it is not JSON). */
export function readAblateJob(dir: string): AblateJob {
  return readJsonFile(ablateJobFile(dir)) as AblateJob;
}

/** The summary of a complete ablation folder (checked against job.json's sha256). */
export function readAblateSummary(dir: string): AblateSummary {
  const jf = ablateJobFile(dir);
  if (!existsSync(jf)) throw new LobesError('not a lobes ablation: job.json is missing', { file: jf });
  const job = readAblateJob(dir);
  if (!job.complete || !job.files?.summary)
    throw new LobesError('the ablation is incomplete', { file: jf,
      hint: 'rerun the same lobes ablate command to finish it' });
  if (job.files.summary.path !== ABLATE_SUMMARY)
    throw new LobesError(`files.summary.path is ${JSON.stringify(job.files.summary.path)}, not ${ABLATE_SUMMARY}`, {
      file: jf,
    });
  const sf = ablateSummaryFile(dir);
  if (!existsSync(sf))
    throw new LobesError('no ablation summary here', { file: sf,
      hint: 'rerun the same lobes ablate command to write it' });
  const bytes = readFileSync(sf);
  if (createHash('sha256').update(bytes).digest('hex') !== job.files.summary.sha256)
    throw new LobesError('was changed after it was written (sha256 differs from job.json)', { file: sf });
  try {
    return JSON.parse(bytes.toString('utf8')) as AblateSummary;
  } catch (e) {
    throw new LobesError(`not valid JSON (${(e as Error).message.split('\n')[0]})`, { file: sf });
  }
}
