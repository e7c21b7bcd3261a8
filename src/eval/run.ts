/**
 * The `lobes eval` job: load the benchmark's units, score them chunk by chunk with the
 * model, and keep an evaluation directory (store.ts) that survives crashes, resumes,
 * shards and merges like a run directory.
 *
 * Determinism: chunk c always holds units [c*K, (c+1)*K) and is evaluated from those units
 * alone (option orders are seeded per item id; the batch plan is made from the chunk's
 * prompts), so a chunk's records are the same bytes after a crash and rerun, and the same
 * whichever shard evaluates it.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { makeDirs, writeFileAtomicSync } from '../util/io.js';
import { Progress, fmtTime } from '../util/progress.js';
import { LOBES_VERSION } from '../version.js';
import { chunkCount, shardRange, type ShardRange, type ShardSpec } from '../store/layout.js';
import { sha256File, type ChunkFile } from '../store/chunks.js';
import { isEmptyOrMissing } from '../store/writer.js';
import { modelIdentity } from '../runtime/modelfiles.js';
import type { Device } from '../runtime/types.js';
import type { ModelArch, ModelFile, ModelSourceRecord } from '../store/types.js';
import { loadEvalData, hashUnits, type EvalData, type TaskChoice } from './units.js';
import { evaluateUnits, newStats, type EvalStats } from './evaluate.js';
import { CHUNKS_DIR, EPISODES, EVAL_FORMAT_VERSION, EVAL_MANIFEST, RECORDS, RecordWriter, SUMMARY, readJsonl } from './store.js';
import { summarize, type EvalSummary } from './summary.js';
import type { EpisodeRecord, EvalRecord } from './types.js';
import type { Scorer, ScorerOptions } from './engine.js';
import { modelContextLength } from './engine.js';
import type { EvalTokenizer, EvalTokenizerOptions } from './tokenizer.js';

export interface EvalOptions {
  /** ONNX model folder (a GGUF file is resolved to its converted folder by the CLI first). */
  model: string;
  /** Where the folder came from when it is a conversion (recorded in eval.json). */
  modelSource?: ModelSourceRecord | null;
  data: string;
  out: string;
  task?: TaskChoice;
  device?: Device;
  deviceId?: number;
  shuffles?: number;
  seed?: number;
  limit?: number | null;
  /** Greedy reasoning tokens before the answer (0: none). */
  cot?: number;
  batch?: number;
  tokenBudget?: number;
  chunkUnits?: number;
  shard?: ShardSpec | null;
  chatTemplate?: EvalTokenizerOptions['chatTemplate'];
  answerPrefix?: string;
  promptFile?: string;
  bootstrap?: number;
  /** Skip items whose prompt is longer than this (default: the model's context length from its config files; 0: no limit). */
  maxTokens?: number | null;
  /** Score an item's shuffles through the KV cache, computing their shared tokens once (auto: on CPU when the model has a KV cache). */
  sharePrefix?: 'auto' | 'on' | 'off';
  skipInvalid?: boolean;
  quiet?: boolean;
  log?: (line: string) => void;
  /** Stand-ins for tests. */
  deps?: Partial<EvalDeps>;
}

export interface EvalDeps {
  openScorer(model: string, opts: ScorerOptions): Promise<Scorer>;
  loadTokenizer(model: string, opts: EvalTokenizerOptions): Promise<EvalTokenizer>;
}

/** The evaluation directory's manifest (DIR/eval.json). */
export interface EvalManifest {
  format: 'lobes-eval';
  formatVersion: number;
  lobesVersion: string;
  createdAt: string;
  model: { dir: string; graphSha256: string; arch: ModelArch | null; source?: ModelSourceRecord; files?: ModelFile[]; filesSha256?: string };
  tokenizer: { source: string; chatTemplate: boolean };
  dataset: { spec: string; kind: EvalData['kind']; unitsSha256: string; units: number; available: number; excluded: number };
  task: TaskChoice | 'mcq';
  settings: { shuffles: number; seed: number; cot: number; limit: number | null; answerPrefix: string | null; prompt: string | null; chatTemplate: EvalTokenizerOptions['chatTemplate']; chunkUnits: number; batch: number | null; tokenBudget: number | null; device: Device; bootstrap: number; sharePrefix: 'auto' | 'on' | 'off'; maxTokens: number | null };
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

export const DEFAULT_CHUNK_UNITS = 32;
export const DEFAULT_EVAL_BATCH = 4;

async function resolveDeps(given: Partial<EvalDeps> | undefined): Promise<EvalDeps> {
  const openScorer = given?.openScorer ?? (await import('./engine.js')).openScorer;
  const loadTokenizer = given?.loadTokenizer ?? (await import('./tokenizer.js')).loadEvalTokenizer;
  return { openScorer, loadTokenizer };
}

/** Read DIR/eval.json. */
export function readEvalManifest(dir: string): EvalManifest {
  const file = path.join(dir, EVAL_MANIFEST);
  let m: EvalManifest;
  try {
    m = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e: any) {
    if (e.code === 'ENOENT') throw new LobesError('not a lobes evaluation: eval.json is missing', { file, hint: 'give the folder written by lobes eval' });
    throw new LobesError(`eval.json is not valid JSON (${e.message})`, { file });
  }
  if (!m || m.format !== 'lobes-eval') throw new LobesError('not a lobes evaluation manifest (format is not "lobes-eval")', { file });
  if (m.formatVersion > EVAL_FORMAT_VERSION) throw new LobesError(`evaluation format ${m.formatVersion} is newer than this lobes understands`, { file, hint: 'upgrade lobes' });
  return m;
}

function writeEvalManifest(dir: string, m: EvalManifest): void {
  writeFileAtomicSync(path.join(dir, EVAL_MANIFEST), JSON.stringify(m, null, 2) + '\n');
}

/** Settings that make two evaluations (or an evaluation and its rerun, or two shards) the same. */
export function evalIdentity(m: EvalManifest, includeShard: boolean): Record<string, string> {
  const s = m.settings;
  const id: Record<string, string> = {
    'model graph sha256': m.model.graphSha256,
    'model files sha256 (graph, weights, tokenizer)': String(m.model.filesSha256),
    'chat template': String(m.tokenizer.chatTemplate),
    'dataset spec': m.dataset.spec,
    'dataset units sha256': m.dataset.unitsSha256,
    task: m.task,
    '--shuffles': String(s.shuffles),
    '--seed': String(s.seed),
    '--cot': String(s.cot),
    '--limit': String(s.limit),
    '--answer-prefix': String(s.answerPrefix),
    '--prompt': String(s.prompt),
    '--chunk-units': String(s.chunkUnits),
    '--batch': String(s.batch),
    '--token-budget': String(s.tokenBudget),
    '--device': s.device,
    '--share-prefix': String(s.sharePrefix),
    '--max-tokens': String(s.maxTokens),
  };
  if (includeShard) id['--shard'] = m.shard ? `${m.shard.index}/${m.shard.count}` : 'none';
  return id;
}

/** Every identity setting that differs between two manifests. */
export function evalDifferences(a: EvalManifest, b: EvalManifest, aName: string, bName: string, includeShard: boolean): string[] {
  const ia = evalIdentity(a, includeShard);
  const ib = evalIdentity(b, includeShard);
  return Object.keys(ia).filter((k) => ia[k] !== ib[k]).map((k) => `${k} is ${JSON.stringify(ia[k]!.slice(0, 80))} in ${aName} but ${JSON.stringify(ib[k]!.slice(0, 80))} in ${bName}`);
}

/** Records and episodes of a complete evaluation directory (checked against eval.json). */
export function readEvalResults(dir: string): { manifest: EvalManifest; records: EvalRecord[]; episodes: EpisodeRecord[]; summary: EvalSummary } {
  const manifest = readEvalManifest(dir);
  if (!manifest.complete || !manifest.files) throw new LobesError('evaluation is incomplete', { file: path.join(dir, EVAL_MANIFEST), hint: 'rerun the same lobes eval command to finish it' });
  checkJoined(dir, manifest);
  const records = readJsonl<EvalRecord>(path.join(dir, RECORDS));
  const episodes = manifest.files.episodes ? readJsonl<EpisodeRecord>(path.join(dir, EPISODES)) : [];
  const summary = JSON.parse(readFileSync(path.join(dir, SUMMARY), 'utf8')) as EvalSummary;
  return { manifest, records, episodes, summary };
}

function checkJoined(dir: string, m: EvalManifest): void {
  for (const f of [m.files!.records, m.files!.episodes]) {
    if (!f) continue;
    const file = path.join(dir, f.path);
    if (!existsSync(file)) throw new LobesError('file of a complete evaluation is missing', { file, hint: 'delete the folder and evaluate again' });
    const got = sha256File(file);
    if (got.sha256 !== f.sha256) throw new LobesError('file of a complete evaluation was changed (sha256 differs from eval.json)', { file, hint: 'delete the folder and evaluate again' });
  }
}

/** What resolveSettings fills in. */
type Settings = EvalManifest['settings'] & { task: TaskChoice };

function resolveSettings(o: EvalOptions): Settings {
  const shuffles = o.shuffles ?? 3;
  if (!Number.isInteger(shuffles) || shuffles < 1) throw new UsageError(`--shuffles must be a positive integer, got ${shuffles}`);
  const chunkUnits = o.chunkUnits ?? DEFAULT_CHUNK_UNITS;
  if (!Number.isInteger(chunkUnits) || chunkUnits < 1) throw new UsageError(`--chunk-units must be a positive integer, got ${chunkUnits}`);
  const cot = o.cot ?? 0;
  if (!Number.isInteger(cot) || cot < 0) throw new UsageError(`--cot must be a non-negative integer, got ${cot}`);
  if (o.limit != null && (!Number.isInteger(o.limit) || o.limit < 1)) throw new UsageError(`--limit must be a positive integer, got ${o.limit}`);
  if (o.maxTokens != null && (!Number.isInteger(o.maxTokens) || o.maxTokens < 0)) throw new UsageError(`--max-tokens must be a non-negative integer, got ${o.maxTokens}`);
  return {
    task: o.task ?? 'both',
    shuffles,
    seed: o.seed ?? 0,
    cot,
    limit: o.limit ?? null,
    answerPrefix: o.answerPrefix ?? null,
    prompt: o.promptFile ?? null,
    chatTemplate: o.chatTemplate ?? 'auto',
    chunkUnits,
    batch: o.batch ?? (o.tokenBudget ? null : DEFAULT_EVAL_BATCH),
    tokenBudget: o.tokenBudget ?? null,
    device: o.device ?? 'cpu',
    bootstrap: o.bootstrap ?? 2000,
    sharePrefix: o.sharePrefix ?? 'auto',
    maxTokens: o.maxTokens === 0 ? null : (o.maxTokens ?? modelContextLength(o.model)),
  };
}

/**
 * Run (or resume) an evaluation; returns its manifest. Nothing is written before the data,
 * the tokenizer and the model have loaded (so bad input leaves no folder behind).
 */
export async function runEval(opts: EvalOptions): Promise<EvalManifest> {
  const tStart = Date.now();
  const say = opts.log ?? ((l: string) => void (opts.quiet ? undefined : process.stderr.write(l + '\n')));
  const s = resolveSettings(opts);
  const out = opts.out;
  const previous = existsSync(path.join(out, EVAL_MANIFEST)) ? readEvalManifest(out) : null;
  if (!previous && !isEmptyOrMissing(out)) throw new LobesError('output folder exists and is not a lobes evaluation', { file: out, hint: 'give a new or empty folder' });
  const deps = await resolveDeps(opts.deps);

  const t0 = Date.now();
  const data = loadEvalData(opts.data, { task: s.task, cot: s.cot > 0, promptFile: opts.promptFile, answerPrefix: opts.answerPrefix, limit: s.limit, seed: s.seed, skipInvalid: opts.skipInvalid });
  const unitsSha256 = hashUnits(data.units);
  // Every file that shapes the numbers: graph, external weights, tokenizer (through the file-hash cache).
  const { files, graphSha256, filesSha256 } = modelIdentity(opts.model);
  const tok = await deps.loadTokenizer(opts.model, { chatTemplate: s.chatTemplate });
  const N = data.units.length;
  const range = shardRange(N, s.chunkUnits, opts.shard ?? null);
  const loadMs = Date.now() - t0;
  const { task: _t, ...settings } = s;
  const manifest: EvalManifest = {
    format: 'lobes-eval',
    formatVersion: EVAL_FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    model: { dir: opts.model, graphSha256, arch: previous?.model.arch ?? null, ...(opts.modelSource ? { source: opts.modelSource } : {}), files, filesSha256 },
    tokenizer: { source: tok.source, chatTemplate: tok.chat !== null },
    dataset: { spec: data.spec, kind: data.kind, unitsSha256, units: N, available: data.available, excluded: data.excluded.length },
    task: data.kind === 'jsonl' ? 'mcq' : s.task,
    settings,
    shard: opts.shard ?? null,
    layout: { ...range, datasetUnits: N },
    throughput: previous?.throughput ?? newStats(),
    timings: { loadMs: (previous?.timings.loadMs ?? 0) + loadMs, modelLoadMs: previous?.timings.modelLoadMs ?? 0, wallMs: previous?.timings.wallMs ?? 0, attempts: (previous?.timings.attempts ?? 0) + 1 },
    complete: false,
  };
  if (previous) {
    const diff = evalDifferences(previous, manifest, out, 'this command', true);
    if (diff.length) throw new LobesError(`this evaluation folder was made with different settings: ${diff.join('; ')}`, { file: path.join(out, EVAL_MANIFEST), hint: 'use a new --out, or delete the folder to start over' });
    if (previous.complete) {
      checkJoined(out, previous);
      say(`eval: ${out} is already complete (${previous.layout.rowEnd - previous.layout.rowStart} units); nothing to do`);
      return previous;
    }
  }
  const t1 = Date.now();
  const scorer = await deps.openScorer(opts.model, { device: s.device, deviceId: opts.deviceId, generation: s.cot > 0 || s.sharePrefix === 'on' || (s.sharePrefix === 'auto' && s.device === 'cpu') });
  manifest.timings.modelLoadMs += Date.now() - t1;
  manifest.model.arch = scorer.info.arch;
  try {
    if (s.cot > 0 && !scorer.hasPast) throw new LobesError('--cot needs a model with KV-cache inputs (past_key_values.*)', { file: opts.model, hint: 'export the model with its KV cache, or drop --cot' });
    if (s.sharePrefix === 'on' && !(scorer.hasPast && scorer.multiTokenExtend)) {
      throw new LobesError(scorer.hasPast ? '--share-prefix on: this export does not take several tokens after its KV cache' : '--share-prefix on needs a model with KV-cache inputs (past_key_values.*)', { file: opts.model, hint: 'use --share-prefix off' });
    }
    const sharePrefix = scorer.hasPast && scorer.multiTokenExtend && (s.sharePrefix === 'on' || (s.sharePrefix === 'auto' && s.device === 'cpu'));
    manifest.sharedPrefix = sharePrefix;
    makeDirs(out);
    writeEvalManifest(out, manifest);
    const { writer, dropped } = await RecordWriter.resume(out, s.chunkUnits);
    for (const d of dropped) say(`eval: ${d}; evaluating it again`);
    const todo: number[] = [];
    let doneUnits = 0;
    for (let c = range.chunkStart; c < range.chunkEnd; c++) {
      if (writer.has(c)) doneUnits += Math.min((c + 1) * s.chunkUnits, N) - c * s.chunkUnits;
      else todo.push(c);
    }
    const here = range.rowEnd - range.rowStart;
    say(`eval: ${here} units (${describeUnits(data, range)})${opts.shard ? ` shard ${opts.shard.index}/${opts.shard.count}` : ''}, ${s.shuffles} shuffle${s.shuffles > 1 ? 's' : ''}${s.cot ? `, reasoning up to ${s.cot} tokens` : ''}${doneUnits ? `, resuming: ${doneUnits} done` : ''}`);
    const progress = new Progress({ label: 'eval', total: here, unit: 'units', quiet: opts.quiet });
    if (doneUnits) progress.set(doneUnits);
    const stats = manifest.throughput;
    const tAttempt = Date.now();
    const wallBase = manifest.timings.wallMs;
    for (const c of todo) {
      const start = c * s.chunkUnits;
      const end = Math.min(start + s.chunkUnits, N);
      const units = data.units.slice(start, end);
      const r = await evaluateUnits(units, { scorer, tok, shuffles: s.shuffles, seed: s.seed, cot: s.cot, batch: s.batch, tokenBudget: s.tokenBudget, sharePrefix, maxTokens: s.maxTokens, stats, onScored: (_p, t) => progress.tick(0, { tokens: t }), onUnit: () => progress.tick(1) });
      writer.write(c, start, end - start, r.records, hasTrees(data) ? r.episodes : null);
      manifest.timings.wallMs = wallBase + Date.now() - tAttempt;
      writeEvalManifest(out, manifest);
    }
    progress.finish();
    finishEval(out, manifest, writer, data, s);
    manifest.timings.wallMs = wallBase + Date.now() - tStart;
    writeEvalManifest(out, manifest);
    say(`eval: done, ${here} units, ${stats.prompts} prompts in ${fmtTime((Date.now() - tStart) / 1000)} -> ${out}`);
    return manifest;
  } finally {
    await scorer.close();
  }
}

/** Whether the evaluation walks world trees (then every chunk has an episodes file, maybe empty). */
function hasTrees(data: EvalData): boolean {
  return data.units.some((u) => u.kind === 'tree');
}

function describeUnits(data: EvalData, r: ShardRange): string {
  const u = data.units.slice(r.rowStart, r.rowEnd);
  const items = u.filter((x) => x.kind === 'item').length;
  const trees = u.length - items;
  return [items ? `${items} items` : '', trees ? `${trees} world trees` : ''].filter(Boolean).join(', ');
}

/** Join the chunks, write the summary, mark the manifest complete and drop the chunk files. */
function finishEval(out: string, manifest: EvalManifest, writer: RecordWriter, data: EvalData, s: Settings): void {
  const r = manifest.layout;
  const joined = writer.join(r.chunkStart, r.chunkEnd, hasTrees(data));
  const records = readJsonl<EvalRecord>(path.join(out, RECORDS));
  const episodes = hasTrees(data) ? readJsonl<EpisodeRecord>(path.join(out, EPISODES)) : [];
  writeFileAtomicSync(path.join(out, SUMMARY), JSON.stringify(summarize(records, episodes, { bootstrap: s.bootstrap, seed: s.seed }), null, 2) + '\n');
  manifest.files = { records: joined.records, episodes: joined.episodes, summary: SUMMARY };
  manifest.complete = true;
  writeEvalManifest(out, manifest);
  rmSync(path.join(out, CHUNKS_DIR), { recursive: true, force: true });
}

/** Chunks of a dataset of `units` units. */
export function evalChunkCount(units: number, chunkUnits: number): number {
  return chunkCount(units, chunkUnits);
}
