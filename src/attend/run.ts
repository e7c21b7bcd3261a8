/**
 * The `lobes attend` job (docs/attend.md): read items (a dataset, or the records of `lobes
 * eval`), run the model once per batch with the attention capture graph (src/runtime/
 * attention-engine.ts), average the answering position's attention over the heads and the
 * chosen layers, turn tokens into words with their prompt parts (words.ts), and write
 * DIR/items.jsonl and DIR/summary.json. The folder is written whole or not at all (built in a
 * temporary sibling and renamed into place).
 */
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { writeDirAtomic, writeFileAtomicSync } from '../util/io.js';
import { checkOutputDir } from '../util/output.js';
import { Progress, fmtTime } from '../util/progress.js';
import { LOBES_VERSION } from '../version.js';
import type { Device } from '../runtime/types.js';
import { modelIdentity } from '../runtime/modelfiles.js';
import { planBatches, padBatch } from '../runtime/batching.js';
import { checkBatchMemory, checkContext, modelContext } from '../runtime/plan.js';
import type { AttendItem, AttendPosition, AttendSummary } from './types.js';
import { loadAttendTokenizer, type AttendTokenizer } from './tokenize.js';
import { dataLastItems, evalItems, socialEvalAnswerItems, type ItemSelection, type PreparedInput, type PreparedItem } from './inputs.js';
import { aggregate, alignTokens, segmentUnits, SPECIAL_PART, TEMPLATE_PART, tokenBytes, topWords, UNALIGNED_PART } from './words.js';
import { keywords, meanCI, shareTable } from './stats.js';
import { Rng } from '../util/rng.js';
import type { ModelFile, ModelSourceRecord } from '../store/types.js';

export interface AttendOptions {
  /** ONNX model folder. */
  model: string;
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
  device?: Device;
  deviceId?: number;
  threads?: number;
  batch?: number;
  tokenBudget?: number;
  /** Bootstrap resamples for the intervals (default 2000; 0: none). */
  bootstrap?: number;
  seed?: number;
  /** Keep per-layer (head-averaged) weights in items.jsonl. */
  perLayer?: boolean;
  /** A seeded sample of this many items, stratified by `by` (src/data/subset.ts; seeded by `seed`). */
  limit?: number | null;
  /** Label axes of the --limit strata (default language and aspect where present, else the first axis). */
  by?: string[];
  /** Replace an existing attend folder. */
  overwrite?: boolean;
  /** Memory a batch may need on `device`, in bytes (default: src/runtime/plan.ts defaultMemoryLimit). */
  memoryLimit?: (device: Device) => number;
  /** Run a batch plan that exceeds the memory limit anyway. */
  ignorePlan?: boolean;
  quiet?: boolean;
  log?: (line: string) => void;
}

export const DEFAULT_LAYERS = 'last:20';
export const DEFAULT_TOP = 30;
export const DEFAULT_BOOTSTRAP = 2000;
export const ITEMS_FILE = 'items.jsonl';
export const SUMMARY_FILE = 'summary.json';
export const ATTEND_FORMAT_VERSION = 1;

/** Parts that are not content: their attention counts apart (nonContentMass), not in the shares. */
const NON_CONTENT = new Set([TEMPLATE_PART, SPECIAL_PART, UNALIGNED_PART, 'answer_prefix']);

/** A number rounded to 6 significant digits (items.jsonl stays small; float32 weights carry about 7). */
function r6(x: number): number {
  return x === 0 || !Number.isFinite(x) ? x : Number(x.toPrecision(6));
}

/** Whether `dir` is an earlier output of this command (it may be replaced with --overwrite). */
function isAttendDir(dir: string): boolean {
  return existsSync(path.join(dir, SUMMARY_FILE)) && existsSync(path.join(dir, ITEMS_FILE));
}

/**
 * Refuse an --out lobes may not replace, before any work: a file, a run's own files, another
 * output, a folder without lobes' attend marker, or one the user added files to
 * (checkOutputDir, src/util/output.ts); an earlier attend result only with --force.
 */
function checkOut(out: string, overwrite: boolean): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new LobesError('exists and is not a folder', { file: out, hint: 'give a folder path for --out' });
  if (readdirSync(out).length === 0) return;
  if (!isAttendDir(out)) throw new LobesError('folder exists and is not a lobes attend folder; it is not replaced', { file: out, hint: 'give a new or empty folder' });
  checkOutputDir(out, 'attend');
  if (!overwrite) throw new LobesError('folder holds an earlier lobes attend result', { file: out, hint: 'pass --force to replace it, or give a new folder' });
}

/** Resolve the input: the source, and whether its answering position is a multiple-choice answer. */
async function readInput(opts: AttendOptions, tok: AttendTokenizer, position: AttendPosition, model: ModelIdentity): Promise<PreparedInput> {
  const maxTokens = opts.maxTokens ?? null;
  const limit = opts.limit != null ? { limit: opts.limit, by: opts.by, seed: opts.seed ?? 0 } : null;
  if (opts.eval) {
    if (position !== 'answer') throw new UsageError('--eval reads the answering position of each record; --position last does not apply');
    if (opts.chatTemplate) throw new UsageError('--chat-template does not apply to --eval (the records hold the prompts as the evaluation rendered them)');
    return evalItems(opts.eval, opts.model, model, tok, { items: opts.items ?? 'wrong', maxTokens, limit });
  }
  if (opts.items) throw new UsageError('--items selects evaluated records; it needs --eval DIR');
  if (position === 'answer') {
    if (opts.chatTemplate) throw new UsageError('--position answer renders the evaluation prompt, which uses the chat template when the tokenizer has one; drop --chat-template');
    return socialEvalAnswerItems(opts.data!, tok, { maxTokens, limit });
  }
  return dataLastItems(opts.data!, tok, { chatTemplate: !!opts.chatTemplate, maxTokens, limit });
}

/** The answering row of one item, averaged: per token the mean over heads and layers, and per layer the mean over heads. */
function average(row: Float32Array, L: number, H: number, n: number): { mean: Float64Array; perLayer: Float64Array[] } {
  const mean = new Float64Array(n);
  const perLayer: Float64Array[] = [];
  for (let l = 0; l < L; l++) {
    const pl = new Float64Array(n);
    for (let h = 0; h < H; h++) {
      const base = (l * H + h) * n;
      for (let j = 0; j < n; j++) pl[j]! += row[base + j]!;
    }
    for (let j = 0; j < n; j++) {
      pl[j]! /= H;
      mean[j]! += pl[j]! / L;
    }
    perLayer.push(pl);
  }
  return { mean, perLayer };
}

/** Shares of the content parts in the content mass; role shares when the item has option roles. */
function shares(partMass: Record<string, number>, roles: PreparedItem['roles']): { partShare: Record<string, number>; roleShare?: Record<string, number> } {
  let content = 0;
  for (const [p, m] of Object.entries(partMass)) if (!NON_CONTENT.has(p)) content += m;
  const partShare: Record<string, number> = {};
  for (const [p, m] of Object.entries(partMass)) if (!NON_CONTENT.has(p)) partShare[p] = content > 0 ? m / content : 0;
  if (!roles) return { partShare };
  const roleShare: Record<string, number> = {};
  for (const [p, s] of Object.entries(partShare)) {
    const role = roles[p];
    const key = role ? `option (${role})` : p;
    roleShare[key] = (roleShare[key] ?? 0) + s;
  }
  for (const role of new Set(Object.values(roles))) roleShare[`option (${role})`] ??= 0;
  return { partShare, roleShare };
}

/** Everything about one item once its attention row is known. */
function itemRecord(it: PreparedItem, row: Float32Array, layers: number[], heads: number, tok: AttendTokenizer, opts: { top: number; cjk: 'char' | 'segment'; perLayer: boolean }): AttendItem {
  const n = it.ids.length;
  const { mean, perLayer } = average(row, layers.length, heads, n);
  const table = tok.table;
  const allSpecial = it.allIds.map((id) => table.special(id));
  const { spans: allSpans } = alignTokens(it.prompt, it.allIds.map((id, i) => tokenBytes(table.piece(id), table.scheme, allSpecial[i]!)), allSpecial);
  const spans = it.kept.map((i) => allSpans[i]!);
  const special = it.kept.map((i) => allSpecial[i]!);
  const agg = aggregate(it.prompt, spans, special, mean, it.parts, segmentUnits(it.prompt, { cjk: opts.cjk }), new Set([TEMPLATE_PART, 'answer_prefix']));
  const words = agg.words.map((w) => ({ text: w.text, start: w.start, end: w.end, kind: w.kind, part: w.part, weight: r6(w.weight), content: w.content }));
  const index = new Map(agg.words.map((w, i) => [w, i]));
  const { partShare, roleShare } = shares(agg.partMass, it.roles);
  const rec: AttendItem = {
    id: it.id,
    index: it.index,
    labels: it.labels,
    correct: it.correct,
    prompt: it.prompt,
    parts: it.parts,
    ids: it.ids,
    tokens: it.ids.map((id) => table.piece(id)),
    spans: spans.map((s) => [s.start, s.end]),
    special,
    position: n - 1,
    layers,
    heads,
    weights: Array.from(mean, r6),
    words,
    top: topWords(agg.words, opts.top).map((w) => index.get(w)!),
    partMass: Object.fromEntries(Object.entries(agg.partMass).map(([k, v]) => [k, r6(v)])),
    partShare: Object.fromEntries(Object.entries(partShare).map(([k, v]) => [k, r6(v)])),
    unaligned: agg.unaligned,
  };
  if (it.roles) rec.roles = it.roles;
  if (roleShare) rec.roleShare = Object.fromEntries(Object.entries(roleShare).map(([k, v]) => [k, r6(v)]));
  if (opts.perLayer) rec.layerWeights = perLayer.map((pl) => Array.from(pl, r6));
  if (it.truncated) rec.truncated = true;
  return rec;
}

/** Run `lobes attend`; returns the summary written. */
export async function runAttend(opts: AttendOptions): Promise<AttendSummary> {
  const t0 = Date.now();
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  const say = (l: string) => {
    if (!opts.quiet) log(l);
  };
  if (!!opts.data === !!opts.eval) throw new UsageError('give exactly one of --data SPEC and --eval DIR');
  const top = opts.top ?? DEFAULT_TOP;
  if (!Number.isInteger(top) || top < 1) throw new UsageError(`--top must be a positive integer, got ${top}`);
  const position: AttendPosition = opts.position ?? (opts.eval || /^socialeval:/.test(opts.data ?? '') ? 'answer' : 'last');
  checkOut(opts.out, !!opts.overwrite);
  // The model's identity: every file that shapes the numbers, hashed as lobes eval hashes them.
  const { files, graphSha256: graph, filesSha256 } = modelIdentity(opts.model);
  const tok = await loadAttendTokenizer(opts.model);
  const input = await readInput(opts, tok, position, { graphSha256: graph, filesSha256, ...(opts.modelSource?.identity ? { sourceIdentity: opts.modelSource.identity } : {}) });
  // The same context check as extract and eval (src/runtime/plan.ts), before the model loads.
  checkContext(input.items.map((it) => ({ id: it.id, tokens: it.ids.length })), modelContext(opts.model), (l) => `keep the last ${l.tokens} tokens of each prompt with --max-tokens ${l.tokens} (recorded as truncated), or leave the long items out`);
  const tokenizeMs = Date.now() - t0;
  const { openAttentionEngine, parseLayerSelection, realRows } = await import('../runtime/attention-engine.js');
  const t1 = Date.now();
  const engine = await openAttentionEngine(opts.model, { layers: (n) => parseLayerSelection(opts.layers ?? DEFAULT_LAYERS, n), device: opts.device ?? 'cpu', deviceId: opts.deviceId, threads: opts.threads });
  const modelLoadMs = Date.now() - t1;
  const records: (AttendItem | undefined)[] = new Array(input.items.length);
  let computeMs = 0;
  let heads = 0;
  try {
    const items = input.items;
    say(`attend: ${items.length} items (${input.selection} of ${input.total}), layers ${fmtLayers(engine.layers)} of ${engine.sites.length} (${engine.sites[0]!.source}${engine.sites[0]!.detail ? `: ${engine.sites[0]!.detail}` : ''}), position ${position}`);
    const progress = new Progress({ label: 'attend', total: items.length, unit: 'items', quiet: opts.quiet });
    const lengths = Int32Array.from(items, (it) => it.ids.length);
    const plan = planBatches(lengths, { batch: opts.batch ?? (opts.tokenBudget ? undefined : 8), tokenBudget: opts.tokenBudget });
    // The same memory plan as extract and eval, checked before any batch runs.
    checkBatchMemory(plan, items.map((it) => ({ id: it.id, tokens: it.ids.length })), engine.info.arch, {
      device: opts.device ?? 'cpu',
      limit: opts.memoryLimit?.(opts.device ?? 'cpu'),
      force: opts.ignorePlan,
      say: log,
      hint: '--batch 1 or --token-budget N makes batches smaller; --max-tokens N keeps the last N tokens of each prompt',
    });
    for (const b of plan) {
      const tb = padBatch(b.map((i) => items[i]!.ids), tok.padId, 'right');
      const tc = performance.now();
      const res = await engine.run(tb);
      computeMs += performance.now() - tc;
      heads = res.heads;
      const rows = realRows(tb, res, engine.layers);
      b.forEach((i, k) => {
        records[i] = itemRecord(items[i]!, rows[k]!, engine.layers, res.heads, tok, { top, cjk: opts.cjk ?? 'char', perLayer: !!opts.perLayer });
      });
      let tk = 0;
      for (const i of b) tk += lengths[i]!;
      progress.tick(b.length, { tokens: tk });
    }
    progress.finish();
  } finally {
    await engine.close();
  }
  const done = records as AttendItem[];
  const full = summarize(done, input, opts, { position, top, graph, files, filesSha256, engineLayers: engine.layers, layerCount: engine.sites.length, heads, attention: engine.sites[0]!.source, tokenizer: tok, timings: { tokenizeMs, modelLoadMs, computeMs: Math.round(computeMs), wallMs: Date.now() - t0 } });
  // Figures to 6 significant digits, in the file and in what is returned.
  const summary: AttendSummary = JSON.parse(JSON.stringify(full, (_k, v) => (typeof v === 'number' && !Number.isInteger(v) ? r6(v) : v)));
  await writeDirAtomic(
    opts.out,
    (tmp) => {
      writeFileSync(path.join(tmp, ITEMS_FILE), done.map((r) => JSON.stringify(r)).join('\n') + '\n');
      writeFileAtomicSync(path.join(tmp, SUMMARY_FILE), JSON.stringify(summary, null, 1) + '\n');
    },
    { kind: 'attend', replaces: (d) => !!opts.overwrite && isAttendDir(d) },
  );
  say(`attend: done, ${done.length} items in ${fmtTime((Date.now() - t0) / 1000)} -> ${opts.out}`);
  return summary;
}

function fmtLayers(ls: number[]): string {
  if (ls.length > 2 && ls.every((l, i) => i === 0 || l === ls[i - 1]! + 1)) return `${ls[0]}-${ls[ls.length - 1]}`;
  return ls.join(',');
}

/** What identifies the model: the graph's sha256 and one sha256 over all its files. */
export interface ModelIdentity {
  graphSha256: string;
  filesSha256: string;
  /** model.source.identity when the model was given as a GGUF (the same for every layout). */
  sourceIdentity?: string;
}

interface SummaryFacts {
  position: AttendPosition;
  top: number;
  graph: string;
  files?: ModelFile[];
  filesSha256?: string;
  engineLayers: number[];
  layerCount: number;
  heads: number;
  attention: string;
  tokenizer: AttendTokenizer;
  timings: AttendSummary['timings'];
}

/** The summary of a finished run. */
export function summarize(items: AttendItem[], input: PreparedInput, opts: AttendOptions, f: SummaryFacts): AttendSummary {
  const B = opts.bootstrap ?? DEFAULT_BOOTSTRAP;
  const seed = opts.seed ?? 0;
  const right = items.filter((it) => it.correct === true);
  const wrong = items.filter((it) => it.correct === false);
  const nonContent = items.map((it) => Object.entries(it.partMass).reduce((s, [p, m]) => s + (NON_CONTENT.has(p) ? m : 0), 0));
  const hasRoles = items.some((it) => it.roleShare);
  return {
    format: 'lobes-attend',
    formatVersion: ATTEND_FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date().toISOString(),
    model: { dir: path.resolve(opts.model), graphSha256: f.graph, ...(f.files ? { files: f.files, filesSha256: f.filesSha256 } : {}), layers: f.layerCount, heads: f.heads || null, attention: f.attention, ...(opts.modelSource ? { source: opts.modelSource } : {}) },
    tokenizer: { source: f.tokenizer.source, scheme: f.tokenizer.table.scheme, chatTemplate: input.chatTemplate },
    input: { kind: input.kind, spec: input.spec, sha256: input.sha256, items: input.selection, selected: items.length, total: input.total, ...(input.skipped ? { skipped: input.skipped } : {}) },
    settings: {
      layers: f.engineLayers,
      position: f.position,
      top: f.top,
      cjk: opts.cjk ?? 'char',
      maxTokens: opts.maxTokens ?? null,
      bootstrap: B,
      seed,
      device: opts.device ?? 'cpu',
    },
    counts: {
      items: items.length,
      right: right.length,
      wrong: wrong.length,
      unscored: items.length - right.length - wrong.length,
      tokens: items.reduce((s, it) => s + it.ids.length, 0),
      truncated: items.filter((it) => it.truncated).length,
      unalignedTokens: items.reduce((s, it) => s + it.unaligned, 0),
    },
    nonContentMass: meanCI(nonContent, B, new Rng(seed)),
    parts: shareTable(items, (it) => it.partShare, B, seed + 1),
    roles: hasRoles ? shareTable(items, (it) => it.roleShare, B, seed + 2) : null,
    keywords: { all: keywords(items, f.top), right: keywords(right, f.top), wrong: keywords(wrong, f.top) },
    timings: f.timings,
  };
}
