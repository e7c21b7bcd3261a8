/**
 * The `lobes attend` job (docs/attend.md): read items (a dataset, or the records of `lobes
 * eval`), run the model with the attention capture graph (src/runtime/attention-engine.ts),
 * average the answering position's attention over the heads and the chosen layers, turn tokens
 * into words with their prompt parts (record.ts), and keep an attend folder (store.ts) that
 * survives crashes, resumes, shards and merges like an evaluation's.
 *
 * Determinism: chunk c always holds items [c*K, (c+1)*K) and is computed from those items alone
 * (the batch plan is made from the chunk's items; --cot reasoning depends on the item alone), so
 * a chunk's records are the same bytes after a crash and rerun, and whichever shard computes it.
 */
import * as path from 'node:path';
import { LobesError, UsageError, opt, throwIfAborted } from '../util/errors.js';
import { writeOutputMarker } from '../util/io.js';
import { checkOutputDir, checkOutputPlace } from '../util/output.js';
import { Progress, fmtTime } from '../util/progress.js';
import { jobIO, type JobIO, type JobIOOptions } from '../util/jobio.js';
import { LOBES_VERSION } from '../version.js';
import type { Device } from '../runtime/types.js';
import { modelIdentity } from '../runtime/modelfiles.js';
import { LONG_PROMPT_TOKEN_BUDGET, planBatches, padBatch } from '../runtime/batching.js';
import { checkBatchMemory, checkContext, modelContext, modelLayers } from '../runtime/plan.js';
import { canonicalLayerSpec, parseLayerSelection } from '../runtime/layers.js';
import { shardRange, type ShardSpec } from '../store/layout.js';
import { withJobFolder, isFreshFolder } from '../store/job.js';
import { RecordChunks, readVerifiedJsonl } from '../store/records.js';
import type { ModelSourceRecord } from '../store/types.js';
import type { AttendItem, AttendPosition, AttendSummary } from './types.js';
import { loadAttendTokenizer, type AttendTokenizer } from './tokenize.js';
import { dataLastItems, evalItems, prepared, socialEvalAnswerItems, type ItemSelection, type PreparedInput,
  type PreparedItem } from './inputs.js';
import { itemRecord } from './record.js';
import { summarize } from './summary.js';
import { COT_CUE_ALLOWANCE, reason } from './cot.js';
import { ATTEND_FORMAT_VERSION, ATTEND_MANIFEST, ATTEND_RECORDS, isAttendDir, isOldAttendDir, readAttendManifest,
  readAttendResults, removeAttendFiles, writeAttendManifest, writeAttendSummary,
  type AttendManifest } from './store.js';
import { attendDifferences, attendIdentity } from './identity.js';
import { interventionRecords } from '../runtime/intervene.js';
import { interventionsKey } from '../store/identity.js';
import type { Intervention } from '../runtime/types.js';
import type { EvalTokenizer } from '../runtime/eval-tokenizer.js';
import type { Scorer } from '../runtime/scorer.js';

/** Its IO (`io`: log lines, warnings, progress, the signal that cancels it between chunks, the folder left resumable) and the deprecated `quiet`, `log`, `signal`, `progress` (src/util/jobio.ts). */
export interface AttendOptions extends JobIOOptions {
  /** ONNX model folder. */
  model: string;
  /** Edits of activations in every forward pass (--intervene, src/runtime/intervene.ts): recorded in the settings and the identity. */
  interventions?: Intervention[];
  /** Where the folder came from when the model was given as a GGUF (recorded in the summary). */
  modelSource?: ModelSourceRecord | null;
  /** Dataset spec (exactly one of data / eval). */
  data?: string;
  /** `lobes eval` output folder. */
  eval?: string;
  /** Which evaluated items (default wrong). */
  items?: ItemSelection;
  out: string;
  /** Layer selection: 'all', 'last:N' or a list like '0,3,10-19' (default last:20). */
  layers?: string;
  /** 'answer' (the answering position of a multiple-choice prompt) or 'last' (a text's last token). */
  position?: AttendPosition;
  /** Top words per item (default 30). */
  top?: number;
  /** Chinese and Japanese words: per character (default) or per Intl.Segmenter segment. */
  cjk?: 'char' | 'segment';
  maxTokens?: number | null;
  /** --data with --position last: wrap each text in the chat template. */
  chatTemplate?: boolean;
  /** Greedy reasoning tokens the model generates before the answer cue (socialeval: data; 0: none). */
  cot?: number;
  device?: Device;
  deviceId?: number;
  threads?: number;
  batch?: number;
  tokenBudget?: number;
  /** Items per record chunk (default 32); shards of one job need the same. */
  chunkUnits?: number;
  /** This process computes shard i of n (whole chunks; `lobes attend merge` joins them). */
  shard?: ShardSpec | null;
  /** Bootstrap resamples for the intervals (default 2000; 0: none). */
  bootstrap?: number;
  seed?: number;
  /** Keep per-layer (head-averaged) weights in items.jsonl. */
  perLayer?: boolean;
  /** A seeded sample of this many items, stratified by `by` (src/data/subset.ts; seeded by `seed`). */
  limit?: number | null;
  /** Label axes of the --limit strata (default language and aspect where present, else the first axis). */
  by?: string[];
  /** Replace an earlier attend job with other settings in `out` (its own files only). */
  overwrite?: boolean;
  /** Memory a batch may need on `device`, in bytes (default: src/runtime/plan.ts defaultMemoryLimit). */
  memoryLimit?: (device: Device) => number;
  /** Run a batch plan that exceeds the memory limit anyway. */
  ignorePlan?: boolean;
}

export const DEFAULT_LAYERS = 'last:20';
export const DEFAULT_TOP = 30;
export const DEFAULT_BOOTSTRAP = 2000;
export const DEFAULT_CHUNK_UNITS = 32;
/** On the CPU, without --token-budget, a batch holds at most this many padded tokens (src/runtime/batching.ts says why). */
export const CPU_TOKEN_BUDGET = LONG_PROMPT_TOKEN_BUDGET;
export { ITEMS as ITEMS_FILE, SUMMARY as SUMMARY_FILE } from './store.js';

/** What identifies the model: the graph's sha256 and one sha256 over all its files. */
export interface ModelIdentity {
  graphSha256: string;
  filesSha256: string;
  /** model.source.identity when the model was given as a GGUF (the same for every layout). */
  sourceIdentity?: string;
}

/** Option combinations that are refused before anything is read. */
function checkOptions(opts: AttendOptions, position: AttendPosition): void {
  if (!!opts.data === !!opts.eval)
    throw new UsageError(`give exactly one of ${opt('data', 'SPEC')} and ${opt('eval', 'DIR')}`);
  const top = opts.top ?? DEFAULT_TOP;
  if (!Number.isInteger(top) || top < 1) throw new UsageError(`${opt('top')} must be a positive integer, got ${top}`);
  const cu = opts.chunkUnits ?? DEFAULT_CHUNK_UNITS;
  if (!Number.isInteger(cu) || cu < 1)
    throw new UsageError(`${opt('chunkUnits')} must be a positive integer, got ${cu}`);
  const cot = opts.cot ?? 0;
  if (!Number.isInteger(cot) || cot < 0)
    throw new UsageError(`${opt('cot')} must be a non-negative integer, got ${cot}`);
  if (opts.eval) {
    if (position !== 'answer')
      throw new UsageError(
        `${opt('eval')} reads the answering position of each record; ${opt('position', 'last')} does not apply`,
      );
    if (opts.chatTemplate)
      throw new UsageError(
        `${opt('chatTemplate')} does not apply to ${
          opt('eval')
        } (the records hold the prompts as the evaluation rendered them)`,
      );
    if (cot)
      throw new UsageError(
        `${opt('cot')} generates reasoning for ${
          opt('data', 'socialeval:')
        } items; the records of an evaluation made with lobes eval --cot N already hold the model's reasoning, and ${
          opt('eval')
        } reads them after it`,
        `drop ${opt('cot')}`,
      );
    return;
  }
  if (opts.items) throw new UsageError(`${opt('items')} selects evaluated records; it needs ${opt('eval', 'DIR')}`);
  if (position === 'answer' && opts.chatTemplate)
    throw new UsageError(
      `${
        opt('position', 'answer')
      } renders the evaluation prompt, which uses the chat template when the tokenizer has one; drop ${
        opt('chatTemplate')
      }`,
    );
  if (cot && position !== 'answer')
    throw new UsageError(
      `${opt('cot')} reads the answer after the reasoning: it needs ${
        opt('position', 'answer')
      } (a socialeval: dataset)`,
    );
}

/** Resolve the input: the source, and whether its answering position is a multiple-choice answer. */
async function readInput(opts: AttendOptions, tok: AttendTokenizer, position: AttendPosition, model: ModelIdentity,
  etok: EvalTokenizer | null): Promise<PreparedInput>
{
  const maxTokens = opts.maxTokens ?? null;
  const limit = opts.limit != null ? { limit: opts.limit, by: opts.by, seed: opts.seed ?? 0 } : null;
  if (opts.eval)
    return evalItems(opts.eval, opts.model, model, tok, { items: opts.items ?? 'wrong', maxTokens, limit });
  if (position === 'answer') return socialEvalAnswerItems(opts.data!, tok, { maxTokens, limit, cot: etok });
  return dataLastItems(opts.data!, tok, { chatTemplate: !!opts.chatTemplate, maxTokens, limit });
}

/**
 * Refuse an --out lobes may not write into, before anything is read: a place among a run's own
 * files or inside another output, a folder that is neither new, empty nor an attend folder, and
 * an attend folder of an older lobes unless --force replaces it.
 */
function checkOut(out: string, force: boolean): void {
  checkOutputPlace(out, 'output folder');
  if (isFreshFolder(out) || isAttendDir(out)) return;
  if (isOldAttendDir(out)) {
    checkOutputDir(out, 'attend');
    if (!force)
      throw new LobesError('folder holds the results of an older lobes attend', { file: out,
        hint: `pass ${opt('overwrite')} to replace them, or give a new folder` });
    return;
  }
  throw new LobesError('folder exists and is not a lobes attend folder; lobes does not write into it', { file: out,
    hint: 'give a new or empty folder', code: 'E_EXISTS' });
}

/** Run (or resume) `lobes attend`; returns the summary of the finished folder. */
export async function runAttend(opts: AttendOptions): Promise<AttendSummary> {
  const t0 = Date.now();
  // --quiet drops progress and the start and end lines (io.log); warnings (io.warn) always print.
  const io = jobIO(opts);
  const position: AttendPosition = opts.position ??
    (opts.eval || /^socialeval:/.test(opts.data ?? '') ? 'answer' : 'last');
  checkOptions(opts, position);
  throwIfAborted(io.signal, 'lobes attend');
  const out = opts.out;
  const force = !!opts.overwrite;
  checkOut(out, force);
  const cot = opts.cot ?? 0;
  // --layers in its canonical text (equal selections, equal records), checked against the
  // layer count the model declares before anything is written (the engine checks it again).
  const layers = canonicalLayerSpec(opts.layers ?? DEFAULT_LAYERS);
  const declared = modelLayers(opts.model);
  if (declared !== null) parseLayerSelection(layers, declared, { clamp: opts.layers === undefined });
  // The model's identity: every file that shapes the numbers, hashed as lobes eval hashes them.
  const tok = await loadAttendTokenizer(opts.model);
  const { files, graphSha256, filesSha256 } = modelIdentity(opts.model);
  const etok = cot
    ? await (await import('../runtime/eval-tokenizer.js')).loadEvalTokenizer(opts.model, { chatTemplate: 'auto' })
    : null;
  const input = await readInput(opts, tok, position, { graphSha256, filesSha256,
    ...(opts.modelSource?.identity ? { sourceIdentity: opts.modelSource.identity } : {}) }, etok);
  // The same context check as extract and eval (src/runtime/plan.ts), before the model loads;
  // with --cot the prompt, the reasoning budget and the answer cue must fit.
  const need = (it: PreparedItem) => (cot ? it.allIds.length + cot + COT_CUE_ALLOWANCE : it.ids.length);
  checkContext(input.items.map((it) => ({ id: it.id, tokens: need(it) })), modelContext(opts.model), (
    l,
  ) => (cot
    ? `lower --cot so that each prompt and its reasoning fit in ${l.tokens} tokens, or leave the long items out`
    : `keep the last ${l.tokens} tokens of each prompt with --max-tokens ${l.tokens} (recorded as truncated), or leave the long items out`));
  const chunkUnits = opts.chunkUnits ?? DEFAULT_CHUNK_UNITS;
  const N = input.items.length;
  const range = shardRange(N, chunkUnits, opts.shard ?? null);
  const manifest: AttendManifest = {
    format: 'lobes-attend-job',
    formatVersion: ATTEND_FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date().toISOString(),
    identity: {},
    facts: {
      model: { dir: path.resolve(opts.model), graphSha256, files, filesSha256, layers: 0, heads: null, attention: '',
        ...(opts.modelSource ? { source: opts.modelSource } : {}) },
      tokenizer: { source: tok.source, scheme: tok.table.scheme, chatTemplate: input.chatTemplate },
      input: { kind: input.kind, spec: input.spec, sha256: input.sha256, items: input.selection, selected: N,
        total: input.total, ...(input.skipped ? { skipped: input.skipped } : {}) },
      settings: {
        layers: [],
        position,
        top: opts.top ?? DEFAULT_TOP,
        cjk: opts.cjk ?? 'char',
        maxTokens: opts.maxTokens ?? null,
        bootstrap: opts.bootstrap ?? DEFAULT_BOOTSTRAP,
        seed: opts.seed ?? 0,
        device: opts.device ?? 'cpu',
        cot: cot || (input.cot ?? 0),
        ...(opts.interventions?.length ? { interventions: interventionRecords(opts.interventions) } : {}),
      },
    },
    units: N,
    chunkUnits,
    shard: opts.shard ?? null,
    layout: range,
    timings: { tokenizeMs: Date.now() - t0, modelLoadMs: 0, computeMs: 0, wallMs: 0, attempts: 1 },
    complete: false,
  };
  manifest.identity = attendIdentity(manifest, { cot, layers, perLayer: !!opts.perLayer, batch: opts.batch ?? null,
    tokenBudget: opts.tokenBudget ?? null });
  // only an edited job has the key, so that every earlier folder keeps its identity
  if (opts.interventions?.length)
    manifest.identity['--intervene'] = interventionsKey(manifest.facts.settings.interventions);
  // From here on this process is the folder's only writer; its state is read under the lock.
  return withJobFolder(out, { command: 'lobes attend', isJob: (d) => isAttendDir(d) || (force && isOldAttendDir(d)),
    what: 'a lobes attend folder', log: io.warn }, () => attendUnderLock(opts, manifest, input, tok, etok, { io, t0 }));
}

interface Logs {
  io: JobIO;
  t0: number;
}

/** The job once the folder is claimed: compare with an earlier attempt, compute the missing chunks, finish. */
async function attendUnderLock(opts: AttendOptions, manifest: AttendManifest, input: PreparedInput,
  tok: AttendTokenizer, etok: EvalTokenizer | null, { io, t0 }: Logs): Promise<AttendSummary>
{
  const out = opts.out;
  if (opts.overwrite && isOldAttendDir(out)) removeAttendFiles(out);
  const previous = isAttendDir(out) ? readAttendManifest(out) : null;
  if (previous) {
    const diff = attendDifferences(previous.identity, manifest.identity, out, 'this command');
    if (diff.length && !opts.overwrite) {
      throw new LobesError(
        `this attend folder was made with different settings: ${diff.slice(0, 4).join('; ')}${
          diff.length > 4 ? ` (and ${diff.length - 4} more)` : ''
        }`,
        { file: path.join(out, ATTEND_MANIFEST),
          hint: `pass ${opt('overwrite')} to replace it, or give a new ${opt('out')}` },
      );
    }
    if (diff.length) removeAttendFiles(out);
    else if (previous.complete) {
      const done = readAttendResults(out);
      io.log(`attend: ${out} is already complete (${done.items.length} items); nothing to do`);
      return done.summary;
    } else {
      manifest.createdAt = previous.createdAt;
      const p = previous.timings;
      manifest.timings = { tokenizeMs: p.tokenizeMs + manifest.timings.tokenizeMs, modelLoadMs: p.modelLoadMs,
        computeMs: p.computeMs, wallMs: p.wallMs, attempts: p.attempts + 1 };
    }
  }
  const { openAttentionEngine, realRows } = await import('../runtime/attention-engine.js');
  const t1 = Date.now();
  const device = opts.device ?? 'cpu';
  const engine = await openAttentionEngine(opts.model, {
    layers: (n) =>
      parseLayerSelection(canonicalLayerSpec(opts.layers ?? DEFAULT_LAYERS), n, { clamp: opts.layers === undefined }),
    device,
    deviceId: opts.deviceId,
    threads: opts.threads,
    ...(opts.interventions?.length ? { interventions: opts.interventions } : {}),
  });
  let scorer: Scorer | null = null;
  try {
    if (etok) {
      scorer = await (await import('../eval/engine.js')).openScorer(opts.model, { device, deviceId: opts.deviceId,
        threads: opts.threads, generation: true,
        ...(opts.interventions?.length ? { interventions: opts.interventions } : {}) });
      if (!scorer.hasPast)
        throw new LobesError(
          `${opt('cot')} needs a model with KV-cache inputs (past_key_values.*) to generate its reasoning`,
          { file: opts.model,
            hint: `give a GGUF (converted with its KV cache) or an export with past_key_values, or drop ${
              opt('cot')
            }` },
        );
    }
    manifest.timings.modelLoadMs += Date.now() - t1;
    const site = engine.sites[0]!;
    Object.assign(manifest.facts.model, { layers: engine.sites.length, attention: site.source });
    manifest.facts.settings.layers = engine.layers;
    const { items } = input;
    const { chunkUnits, layout: range } = manifest;
    const chunkItems = (c: number) =>
      Array.from({ length: Math.min((c + 1) * chunkUnits, items.length) - c * chunkUnits },
        (_, k) => c * chunkUnits + k);
    const tokenBudget = opts.tokenBudget ?? (device === 'cpu' ? CPU_TOKEN_BUDGET : undefined);
    const plan = (idx: number[]) =>
      planBatches(Int32Array.from(idx, (i) => items[i]!.ids.length), {
        batch: opts.batch ?? (opts.tokenBudget ? undefined : 8),
        tokenBudget,
      }).map((b) => b.map((k) => idx[k]!));
    // The same memory plan as extract and eval, over every batch this process may run, before any runs.
    if (!etok) {
      const all: number[][] = [];
      for (let c = range.chunkStart; c < range.chunkEnd; c++) all.push(...plan(chunkItems(c)));
      checkBatchMemory(all, items.map((it) => ({ id: it.id, tokens: it.ids.length })), engine.info.arch, { device,
        limit: opts.memoryLimit?.(device), force: opts.ignorePlan, say: io.warn,
        hint: `${opt('batch', 1)} or ${opt('tokenBudget', 'N')} makes batches smaller; ${
          opt('maxTokens', 'N')
        } keeps the last N tokens of each prompt` });
    }
    writeOutputMarker(out, 'attend');
    writeAttendManifest(out, manifest);
    const { writer, dropped } = await RecordChunks.resume(out, ATTEND_RECORDS, chunkUnits);
    for (const d of dropped) io.warn(`attend: ${d}; computing it again`);
    const todo: number[] = [];
    let doneItems = 0;
    for (let c = range.chunkStart; c < range.chunkEnd; c++) {
      if (writer.has(c)) doneItems += chunkItems(c).length;
      else todo.push(c);
    }
    const here = range.rowEnd - range.rowStart;
    io.log(
      `attend: ${here} items (${input.selection} of ${input.total})${
        manifest.shard ? `, shard ${manifest.shard.index}/${manifest.shard.count}` : ''
      }, layers ${fmtLayers(engine.layers)} of ${engine.sites.length} (${site.source}${
        site.detail ? `: ${site.detail}` : ''
      }), position ${manifest.facts.settings.position}${
        etok
          ? `, after up to ${manifest.facts.settings.cot} tokens of reasoning`
          : manifest.facts.settings.cot
          ? `, after the evaluation's reasoning (up to ${manifest.facts.settings.cot} tokens)`
          : ''
      }${doneItems ? `, resuming: ${doneItems} done` : ''}`,
    );
    // One line at once (0 done, or what a resume found), then one tick per item.
    const progress = new Progress({ label: 'attend', total: here, unit: 'items', io });
    progress.resume(doneItems);
    const rec = { top: manifest.facts.settings.top, cjk: manifest.facts.settings.cjk, perLayer: !!opts.perLayer };
    const tAttempt = Date.now();
    const wallBase = manifest.timings.wallMs;
    for (const c of todo) {
      // Cancelled between chunks: the chunks written so far stay listed, as after a kill.
      throwIfAborted(io.signal, 'lobes attend', `before chunk ${c}`);
      const idx = chunkItems(c);
      const records = new Map<number, AttendItem>();
      const tc = performance.now();
      if (etok) {
        // Reasoning first (one item at a time through the KV cache), then the batches of the reasoned prompts.
        for (const i of idx) {
          const it = items[i]!;
          const r = await reason(scorer!, etok, it.cot!, manifest.facts.settings.cot!, `item ${it.id}`);
          items[i] = prepared({ ...it, prompt: r.prompt, parts: r.parts, allIds: r.ids, reasoning: r.reasoning },
            opts.maxTokens ?? null, tok.bosId);
          progress.tick(0, { tokens: r.reasoning.generated });
        }
      }
      const batches = plan(idx);
      if (etok)
        checkBatchMemory(batches, items.map((it) => ({ id: it.id, tokens: it.ids.length })), engine.info.arch, { device,
          limit: opts.memoryLimit?.(device), force: opts.ignorePlan, say: io.warn,
          hint: `${opt('batch', 1)} or ${opt('tokenBudget', 'N')} makes batches smaller` });
      for (const b of batches) {
        const tb = padBatch(b.map((i) => items[i]!.ids), tok.padId, 'right');
        const res = await engine.run(tb);
        const rows = realRows(tb, res, engine.layers);
        b.forEach((i, k) => {
          records.set(i, itemRecord(items[i]!, rows[k]!, engine.layers, res.heads, tok, rec));
          progress.tick(1, { tokens: items[i]!.ids.length });
        });
      }
      manifest.timings.computeMs += Math.round(performance.now() - tc);
      writer.write(c, c * chunkUnits, idx.length, { items: idx.map((i) => records.get(i)!) });
      manifest.timings.wallMs = wallBase + Date.now() - tAttempt;
      writeAttendManifest(out, manifest);
    }
    progress.finish();
    const summary = finishAttend(out, manifest, writer);
    io.log(`attend: done, ${here} items in ${fmtTime((Date.now() - t0) / 1000)} -> ${out}`);
    return summary;
  } finally {
    await engine.close();
    await scorer?.close();
  }
}

/** Join the chunks, write the summary, mark the manifest complete and drop the chunk files. */
function finishAttend(out: string, manifest: AttendManifest, writer: RecordChunks): AttendSummary {
  const r = manifest.layout;
  const joined = writer.join(r.chunkStart, r.chunkEnd, ['items']);
  const items = readVerifiedJsonl<AttendItem>(out, joined.items!, 'the record index');
  const summary = summarize(items, manifest);
  manifest.files = { items: joined.items!, summary: writeAttendSummary(out, summary) };
  manifest.complete = true;
  writeAttendManifest(out, manifest);
  writer.dropChunks();
  return summary;
}

function fmtLayers(ls: number[]): string {
  if (ls.length > 2 && ls.every((l, i) => i === 0 || l === ls[i - 1]! + 1)) return `${ls[0]}-${ls[ls.length - 1]}`;
  return ls.join(',');
}
