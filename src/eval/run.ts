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
import { LobesError, UsageError, opt, throwIfAborted } from '../util/errors.js';
import { Progress, fmtTime } from '../util/progress.js';
import { jobIO, type JobIO, type JobIOOptions } from '../util/jobio.js';
import { LOBES_VERSION } from '../version.js';
import { chunkCount, shardRange, type ShardRange, type ShardSpec } from '../store/layout.js';
import { withJobFolder, isFreshFolder } from '../store/job.js';
import { RecordChunks, readVerifiedJsonl } from '../store/records.js';
import { modelIdentity } from '../runtime/modelfiles.js';
import type { Device } from '../runtime/types.js';
import type { ControlInfo, ModelFile, ModelSourceRecord } from '../store/types.js';
import { controlKey } from '../store/provenance.js';
import { loadEvalData, hashUnits, type EvalData, type TaskChoice } from './units.js';
import { evaluateUnits, newStats } from './evaluate.js';
import { EVAL_FORMAT_VERSION, EVAL_RECORDS, evalFile, SUMMARY, checkEvalFiles, isEvalDir, readEvalManifest,
  writeEvalManifest, writeEvalSummary } from './store.js';
import { summarize } from './summary.js';
import type { EpisodeRecord, EvalRecord } from './types.js';
import type { OrderMode } from './score.js';
import type { Scorer, ScorerOptions } from '../runtime/scorer.js';
import { modelContext } from '../runtime/plan.js';
import { LONG_PROMPT_TOKEN_BUDGET } from '../runtime/batching.js';
import type { EvalTokenizer, EvalTokenizerOptions } from '../runtime/eval-tokenizer.js';
import type { LoglikEngine, LoglikOptions } from '../runtime/loglik.js';

/** Its IO (`io`: log lines, progress, the signal that cancels it between chunks, the folder left resumable) and the deprecated `quiet`, `log`, `signal`, `progress` (src/util/jobio.ts). */
export interface EvalOptions extends JobIOOptions {
  /** ONNX model folder (a GGUF file is resolved to its converted folder by the CLI first). */
  model: string;
  /** Where the folder came from when it is a conversion (recorded in eval.json). */
  modelSource?: ModelSourceRecord | null;
  /** The folder is a random-weights control of the model (src/cli/control.ts): recorded as eval.json model.control, part of the evaluation's identity. */
  control?: ControlInfo | null;
  data: string;
  out: string;
  task?: TaskChoice;
  device?: Device;
  deviceId?: number;
  shuffles?: number;
  /** Option orders: independent shuffles (random, the default) or rotations of one shuffle that balance slots (cyclic). */
  orders?: OrderMode;
  seed?: number;
  limit?: number | null;
  /** Label axes the --limit sample is stratified by (default language,aspect; src/data/subset.ts). */
  by?: string[] | null;
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
  /** Memory a batch may need on `device`, in bytes (default: src/runtime/plan.ts defaultMemoryLimit). */
  memoryLimit?: (device: Device) => number;
  /** Run batches the memory plan says will not fit, with a warning (--ignore-plan). */
  ignorePlan?: boolean;
  /** 'letter' (default): the answer letter's logit; 'cloze': every option's text as a continuation (cloze.ts). */
  scoring?: 'letter' | 'cloze';
  /** Cloze: text between the context and each option (default: ' ', or '' after a prompt cut at its options). */
  targetDelimiter?: string | null;
  /** Cloze: also score each option without a context (acc_mutual_info). */
  mutualInfo?: boolean;
  /** Edits of activations in every forward pass (`--intervene`, src/runtime/intervene.ts): recorded in the settings, part of the identity. */
  interventions?: Intervention[];
  /** Stand-ins for tests. */
  deps?: Partial<EvalDeps>;
}

export interface EvalDeps {
  openScorer(model: string, opts: ScorerOptions): Promise<Scorer>;
  loadTokenizer(model: string, opts: EvalTokenizerOptions): Promise<EvalTokenizer>;
  openLoglik(model: string, opts: LoglikOptions): Promise<LoglikEngine>;
}

import type { EvalManifest } from './manifest.js';
import { fromInterventionRecords, interventionRecords } from '../runtime/intervene.js';
import { interventionsKey } from '../store/identity.js';
import type { Intervention } from '../runtime/types.js';
export type { EvalManifest } from './manifest.js';

export const DEFAULT_CHUNK_UNITS = 32;
export const DEFAULT_EVAL_BATCH = 4;

async function resolveDeps(given: Partial<EvalDeps> | undefined): Promise<EvalDeps> {
  const openScorer = given?.openScorer ?? (await import('./engine.js')).openScorer;
  const loadTokenizer = given?.loadTokenizer ?? (await import('../runtime/eval-tokenizer.js')).loadEvalTokenizer;
  const openLoglik = given?.openLoglik ?? (await import('../runtime/loglik.js')).openLoglikEngine;
  return { openScorer, loadTokenizer, openLoglik };
}

export { readEvalManifest, readEvalResults } from './store.js';

/** Settings that make two evaluations (or an evaluation and its rerun, or two shards) the same. */
export function evalIdentity(m: EvalManifest, includeShard: boolean): Record<string, string> {
  const s = m.settings;
  const id: Record<string, string> = {
    'model graph sha256': m.model.graphSha256,
    'model files sha256 (graph, weights, tokenizer)': String(m.model.filesSha256),
    'model control (--control, --control-seed)': controlKey(m.model.control),
    'chat template': String(m.tokenizer.chatTemplate),
    'dataset spec': m.dataset.spec,
    'dataset units sha256': m.dataset.unitsSha256,
    task: m.task,
    '--shuffles': String(s.shuffles),
    '--orders': s.orders ?? 'random',
    '--seed': String(s.seed),
    '--cot': String(s.cot),
    '--limit': String(s.limit),
    '--by': s.limit === null ? 'none' : (s.by ?? []).join(','),
    '--answer-prefix': String(s.answerPrefix),
    '--prompt': String(s.prompt),
    '--chunk-units': String(s.chunkUnits),
    '--batch': String(s.batch),
    '--token-budget': String(s.tokenBudget),
    '--device': s.device,
    '--share-prefix': String(s.sharePrefix),
    '--skip-longer-than': String(s.maxTokens),
    '--scoring': s.scoring ?? 'letter',
    '--target-delimiter': String(s.targetDelimiter ?? null),
    '--mutual-info': String(s.mutualInfo ?? false),
    '--intervene': interventionsKey(s.interventions),
  };
  if (includeShard) id['--shard'] = m.shard ? `${m.shard.index}/${m.shard.count}` : 'none';
  return id;
}

/** Every identity setting that differs between two manifests. */
export function evalDifferences(a: EvalManifest, b: EvalManifest, aName: string, bName: string,
  includeShard: boolean): string[]
{
  const ia = evalIdentity(a, includeShard);
  const ib = evalIdentity(b, includeShard);
  return Object.keys(ia).filter((k) => ia[k] !== ib[k]).map((k) =>
    `${k} is ${JSON.stringify(ia[k]!.slice(0, 80))} in ${aName} but ${JSON.stringify(ib[k]!.slice(0, 80))} in ${bName}`
  );
}

/** What resolveSettings fills in. */
type Settings = EvalManifest['settings'] & { task: TaskChoice };

function resolveSettings(o: EvalOptions): Settings {
  const shuffles = o.shuffles ?? (o.scoring === 'cloze' ? 1 : 3);
  if (!Number.isInteger(shuffles) || shuffles < 1)
    throw new UsageError(`${opt('shuffles')} must be a positive integer, got ${shuffles}`);
  const orders = o.orders ?? 'random';
  if (orders !== 'random' && orders !== 'cyclic')
    throw new UsageError(`${opt('orders')} must be random or cyclic, got ${JSON.stringify(orders)}`);
  const chunkUnits = o.chunkUnits ?? DEFAULT_CHUNK_UNITS;
  if (!Number.isInteger(chunkUnits) || chunkUnits < 1)
    throw new UsageError(`${opt('chunkUnits')} must be a positive integer, got ${chunkUnits}`);
  const cot = o.cot ?? 0;
  if (!Number.isInteger(cot) || cot < 0)
    throw new UsageError(`${opt('cot')} must be a non-negative integer, got ${cot}`);
  if (o.limit != null && (!Number.isInteger(o.limit) || o.limit < 1))
    throw new UsageError(`${opt('limit')} must be a positive integer, got ${o.limit}`);
  if (o.maxTokens != null && (!Number.isInteger(o.maxTokens) || o.maxTokens < 0))
    throw new UsageError(`${opt('maxTokens')} must be a non-negative integer, got ${o.maxTokens}`);
  const scoring = o.scoring ?? 'letter';
  if (scoring !== 'letter' && scoring !== 'cloze')
    throw new UsageError(`${opt('scoring')} must be letter or cloze, got ${JSON.stringify(scoring)}`);
  if (scoring === 'cloze') {
    if (cot > 0) throw new UsageError(`${opt('cot')} applies to letter scoring; cloze scoring generates nothing`);
    if (o.shuffles !== undefined && o.shuffles !== 1)
      throw new UsageError(
        `${opt('shuffles')} applies to letter scoring; cloze scores each option once, whatever the order`,
      );
  } else if (o.targetDelimiter != null || o.mutualInfo)
    throw new UsageError(`${opt('targetDelimiter')} and ${opt('mutualInfo')} apply to ${opt('scoring', 'cloze')}`);
  if (o.sharePrefix === 'on' && o.interventions?.some((iv) => iv.positions === 'last'))
    throw new UsageError(
      `${opt('sharePrefix', 'on')} cannot go with an ${
        opt('interventions')
      } at :last (a shared prefix would have its own last token edited)`,
      `drop :last, or use ${opt('sharePrefix', 'auto')} or off`,
    );
  return {
    task: o.task ?? 'both',
    shuffles,
    orders,
    seed: o.seed ?? 0,
    cot,
    limit: o.limit ?? null,
    by: o.limit != null ? (o.by ?? null) : null,
    answerPrefix: o.answerPrefix ?? null,
    prompt: o.promptFile ?? null,
    chatTemplate: o.chatTemplate ?? 'auto',
    chunkUnits,
    batch: o.batch ?? (o.tokenBudget ? null : DEFAULT_EVAL_BATCH),
    tokenBudget: o.tokenBudget ?? null,
    device: o.device ?? 'cpu',
    bootstrap: o.bootstrap ?? 2000,
    sharePrefix: o.sharePrefix ?? 'auto',
    maxTokens: promptLimit(o),
    ...(scoring === 'cloze' ? { scoring, targetDelimiter: o.targetDelimiter ?? null, mutualInfo: !!o.mutualInfo } : {}),
    ...(o.interventions?.length ? { interventions: interventionRecords(o.interventions) } : {}),
  };
}

/**
 * Padded tokens per batch of the right-padded rows eval scores without a KV cache (cloze:
 * (context + option)[:-1], one per option; letters: one prompt per option order, with
 * --share-prefix off, on the GPU, or for a model without a cache): --token-budget when given;
 * otherwise, on the CPU, LONG_PROMPT_TOKEN_BUDGET (a padded batch's attention memory grows with
 * its rows times the square of their length, and a SocialEval IAE prompt is about 1,500 tokens;
 * src/runtime/batching.ts says why), and no budget elsewhere. The engines batch with it and the
 * memory plan checks the same batches. Not an identity setting: every row's numbers are the same
 * in any batch.
 */
export function evalTokenBudget(s: Pick<Settings, 'tokenBudget' | 'device'>): number | null {
  return s.tokenBudget ?? (s.device === 'cpu' ? LONG_PROMPT_TOKEN_BUDGET : null);
}

/**
 * The longest prompt scored, in tokens (longer items are skipped and recorded as such): the
 * model's context length unless --skip-longer-than asks for fewer; never more than the context,
 * since positions past it are outside what the model was trained on (0, or a larger number,
 * means the context). null only when the model declares no context length.
 */
function promptLimit(o: EvalOptions): number | null {
  const ctx = modelContext(o.model)?.tokens ?? null;
  const asked = o.maxTokens == null || o.maxTokens === 0 ? null : o.maxTokens;
  if (asked === null) return ctx;
  return ctx === null ? asked : Math.min(asked, ctx);
}

/**
 * Run (or resume) an evaluation; returns its manifest. Nothing is written before the data,
 * the tokenizer and the model have loaded (so bad input leaves no folder behind).
 */
export async function runEval(opts: EvalOptions): Promise<EvalManifest> {
  const tStart = Date.now();
  // everything eval says is a log line (its memory-plan warning too), silenced by --quiet
  const io = jobIO(opts, { logUnderQuiet: true });
  const s = resolveSettings(opts);
  const out = opts.out;
  throwIfAborted(io.signal, 'lobes eval');
  // Refused before anything is loaded: a folder that is neither new nor an evaluation.
  if (!isFreshOrEval(out))
    throw new LobesError('output folder exists and is not a lobes evaluation; lobes does not write into it', {
      file: out,
      hint: 'give a new or empty folder',
      code: 'E_EXISTS',
    });
  const deps = await resolveDeps(opts.deps);

  const t0 = Date.now();
  const data = loadEvalData(opts.data, { task: s.task, cot: s.cot > 0, promptFile: opts.promptFile,
    answerPrefix: opts.answerPrefix, limit: s.limit, by: s.by ?? undefined, seed: s.seed, skipInvalid: opts.skipInvalid,
    scoring: s.scoring });
  const unitsSha256 = hashUnits(data.units);
  // The tokenizer first: a folder without one is refused before its weights are hashed.
  const tok = await deps.loadTokenizer(opts.model, { chatTemplate: s.chatTemplate });
  // Every file that shapes the numbers: graph, external weights, tokenizer (through the file-hash cache).
  const { files, graphSha256, filesSha256 } = modelIdentity(opts.model);
  const N = data.units.length;
  const range = shardRange(N, s.chunkUnits, opts.shard ?? null);
  const loadMs = Date.now() - t0;
  // From here on this process is the folder's only writer; its state is read under the lock.
  return withJobFolder(out, { command: 'lobes eval', isJob: isEvalDir, what: 'a lobes evaluation', log: io.log },
    () =>
      evalUnderLock(opts, s, deps, data, { unitsSha256, files, graphSha256, filesSha256, tok, N, range, loadMs,
        tStart }, io));
}

interface Loaded {
  unitsSha256: string;
  files: ModelFile[];
  graphSha256: string;
  filesSha256: string;
  tok: EvalTokenizer;
  N: number;
  range: ShardRange;
  loadMs: number;
  tStart: number;
}

/** The evaluation once the folder is claimed: compare with an earlier attempt, score the missing chunks, finish. */
async function evalUnderLock(opts: EvalOptions, s: Settings, deps: EvalDeps, data: EvalData, l: Loaded,
  io: JobIO): Promise<EvalManifest>
{
  const { unitsSha256, files, graphSha256, filesSha256, tok, N, range, loadMs, tStart } = l;
  const out = opts.out;
  const previous = isEvalDir(out) ? readEvalManifest(out) : null;
  const { task: _t, ...settings } = s;
  const manifest: EvalManifest = {
    format: 'lobes-eval',
    formatVersion: EVAL_FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    model: { dir: opts.model, graphSha256, arch: previous?.model.arch ?? null,
      ...(opts.modelSource ? { source: opts.modelSource } : {}), ...(opts.control ? { control: opts.control } : {}),
      files, filesSha256 },
    tokenizer: { source: tok.source, chatTemplate: tok.chat !== null },
    dataset: { spec: data.spec, kind: data.kind, unitsSha256, units: N, available: data.available,
      excluded: data.excluded.length },
    task: data.kind === 'jsonl' ? 'mcq' : s.task,
    settings,
    shard: opts.shard ?? null,
    layout: { ...range, datasetUnits: N },
    throughput: previous?.throughput ?? newStats(),
    timings: { loadMs: (previous?.timings.loadMs ?? 0) + loadMs, modelLoadMs: previous?.timings.modelLoadMs ?? 0,
      wallMs: previous?.timings.wallMs ?? 0, attempts: (previous?.timings.attempts ?? 0) + 1 },
    complete: false,
  };
  if (previous) {
    const diff = evalDifferences(previous, manifest, out, 'this command', true);
    if (diff.length)
      throw new LobesError(`this evaluation folder was made with different settings: ${diff.join('; ')}`, {
        file: evalFile(out, 'manifest'),
        hint: `use a new ${opt('out')}, or delete the folder to start over`,
      });
    if (previous.complete) {
      checkEvalFiles(out, previous);
      io.log(
        `eval: ${out} is already complete (${previous.layout.rowEnd - previous.layout.rowStart} units); nothing to do`,
      );
      return previous;
    }
  }
  const t1 = Date.now();
  const cloze = s.scoring === 'cloze';
  const interventions = fromInterventionRecords(s.interventions);
  const scorer = cloze
    ? null
    : await deps.openScorer(opts.model, { device: s.device, deviceId: opts.deviceId,
      ...(interventions.length ? { interventions } : {}),
      generation: s.cot > 0 || s.sharePrefix === 'on' || (s.sharePrefix === 'auto' && s.device === 'cpu') });
  // Batched rows are whole prompts: the engines and the memory plan share one budget.
  const tokenBudget = evalTokenBudget(s);
  const loglik = cloze
    ? await deps.openLoglik(opts.model, { device: s.device, deviceId: opts.deviceId,
      ...(interventions.length ? { interventions } : {}), cache: s.sharePrefix === 'off' ? 'off' : 'auto',
      batch: s.batch ?? undefined, tokenBudget: tokenBudget ?? undefined })
    : null;
  manifest.timings.modelLoadMs += Date.now() - t1;
  manifest.model.arch = (scorer ?? loglik)!.info.arch;
  try {
    let sharePrefix = false;
    if (scorer) {
      if (s.cot > 0 && !scorer.hasPast)
        throw new LobesError(`${opt('cot')} needs a model with KV-cache inputs (past_key_values.*)`, { file: opts.model,
          hint: `export the model with its KV cache, or drop ${opt('cot')}` });
      if (s.sharePrefix === 'on' && !(scorer.hasPast && scorer.multiTokenExtend)) {
        throw new LobesError(
          scorer.hasPast
            ? `${opt('sharePrefix', 'on')}: this export does not take several tokens after its KV cache`
            : `${opt('sharePrefix', 'on')} needs a model with KV-cache inputs (past_key_values.*)`,
          { file: opts.model, hint: `use ${opt('sharePrefix', 'off')}` },
        );
      }
      sharePrefix = scorer.hasPast && scorer.multiTokenExtend &&
        (s.sharePrefix === 'on' || (s.sharePrefix === 'auto' && s.device === 'cpu'));
    } else {
      if (s.sharePrefix === 'on' && !loglik!.usesCache)
        throw new LobesError(
          `${opt('sharePrefix', 'on')}: this model has no KV cache that takes several tokens after a context`,
          { file: opts.model, hint: `use ${opt('sharePrefix', 'off')}` },
        );
      sharePrefix = loglik!.usesCache;
    }
    manifest.sharedPrefix = sharePrefix;
    writeEvalManifest(out, manifest);
    const { writer, dropped } = await RecordChunks.resume(out, EVAL_RECORDS, s.chunkUnits);
    for (const d of dropped) io.log(`eval: ${d}; evaluating it again`);
    const todo: number[] = [];
    let doneUnits = 0;
    for (let c = range.chunkStart; c < range.chunkEnd; c++) {
      if (writer.has(c)) doneUnits += Math.min((c + 1) * s.chunkUnits, N) - c * s.chunkUnits;
      else todo.push(c);
    }
    const here = range.rowEnd - range.rowStart;
    io.log(
      `eval: ${here} units (${describeUnits(data, range)})${
        opts.shard ? ` shard ${opts.shard.index}/${opts.shard.count}` : ''
      }, ${
        s.scoring === 'cloze'
          ? `cloze scoring${sharePrefix ? ' (contexts through the KV cache)' : ''}`
          : `${s.shuffles} shuffle${s.shuffles > 1 ? 's' : ''}`
      }${s.cot ? `, reasoning up to ${s.cot} tokens` : ''}${doneUnits ? `, resuming: ${doneUnits} done` : ''}`,
    );
    const progress = new Progress({ label: 'eval', total: here, unit: 'units', io });
    if (doneUnits) progress.resume(doneUnits);
    const stats = manifest.throughput;
    const tAttempt = Date.now();
    const wallBase = manifest.timings.wallMs;
    for (const c of todo) {
      // Cancelled between chunks: the chunks written so far stay listed, as after a kill.
      throwIfAborted(io.signal, 'lobes eval', `before chunk ${c}`);
      const start = c * s.chunkUnits;
      const end = Math.min(start + s.chunkUnits, N);
      const units = data.units.slice(start, end);
      const clozeSettings = loglik
        ? { engine: loglik, delimiter: s.targetDelimiter ?? null, mutualInfo: !!s.mutualInfo }
        : null;
      const r = await evaluateUnits(units, {
        scorer,
        cloze: clozeSettings,
        tok,
        shuffles: s.shuffles,
        orders: s.orders,
        seed: s.seed,
        cot: s.cot,
        batch: s.batch,
        tokenBudget,
        sharePrefix,
        maxTokens: s.maxTokens,
        stats,
        memory: { device: s.device, limit: opts.memoryLimit?.(s.device), force: opts.ignorePlan, say: io.log },
        onScored: (_p, t) => progress.tick(0, { tokens: t }),
        onUnit: () => progress.tick(1),
      });
      writer.write(c, start, end - start, { records: r.records, episodes: hasTrees(data) ? r.episodes : null });
      manifest.timings.wallMs = wallBase + Date.now() - tAttempt;
      writeEvalManifest(out, manifest);
    }
    progress.finish();
    finishEval(out, manifest, writer, data, s);
    manifest.timings.wallMs = wallBase + Date.now() - tStart;
    writeEvalManifest(out, manifest);
    io.log(`eval: done, ${here} units, ${stats.prompts} prompts in ${fmtTime((Date.now() - tStart) / 1000)} -> ${out}`);
    return manifest;
  } finally {
    await scorer?.close();
    await loglik?.close();
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
function finishEval(out: string, manifest: EvalManifest, writer: RecordChunks, data: EvalData, s: Settings): void {
  const r = manifest.layout;
  const trees = hasTrees(data);
  const joined = writer.join(r.chunkStart, r.chunkEnd, trees ? ['records', 'episodes'] : ['records']);
  const records = readVerifiedJsonl<EvalRecord>(out, joined.records!, 'the record index');
  const episodes = trees ? readVerifiedJsonl<EpisodeRecord>(out, joined.episodes!, 'the record index') : [];
  writeEvalSummary(out, summarize(records, episodes, { bootstrap: s.bootstrap, seed: s.seed }));
  manifest.files = { records: joined.records!, episodes: joined.episodes ?? null, summary: SUMMARY };
  manifest.complete = true;
  writeEvalManifest(out, manifest);
  writer.dropChunks();
}

/** Whether `dir` may be an evaluation's folder: missing, empty, or one already. */
function isFreshOrEval(dir: string): boolean {
  return isFreshFolder(dir) || isEvalDir(dir);
}

/** Chunks of a dataset of `units` units. */
export function evalChunkCount(units: number, chunkUnits: number): number {
  return chunkCount(units, chunkUnits);
}
