/**
 * The `lobes extract` job: tokenize a dataset, run the capture engine chunk by chunk and
 * store last-token activations in a run directory (docs/run-format.md).
 *
 * Determinism: chunk c always holds dataset rows [c*K, (c+1)*K) and its batches are planned
 * from those rows alone, so the numbers in a chunk do not depend on where a previous
 * attempt crashed or on which shard wrote it. Resume = skip the chunks the index lists.
 */
import { existsSync, readdirSync, statfsSync, mkdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { Progress, fmtTime } from '../util/progress.js';
import { LOBES_VERSION } from '../version.js';
import type { Dataset, Sample } from '../data/types.js';
import type { HookInfo, RunManifest, SampleRow } from '../store/types.js';
import type { BatchPlanOptions, CaptureEngine, CaptureFamily, Device, EngineOptions, LobesTokenizer, TokenBatch, TokenizerOptions } from './types.js';
import { FORMAT_VERSION, shardRange, chunkCount, type ShardSpec, MANIFEST, SAMPLES } from '../store/layout.js';
import { readManifest, writeManifest, writeSamples } from '../store/manifest.js';
import { ChunkWriter, isEmptyOrMissing } from '../store/writer.js';
import { sha256File, indexPath } from '../store/chunks.js';
import { differences } from '../store/identity.js';

/** The pieces runExtract uses; tests may inject deterministic stand-ins. */
export interface ExtractDeps {
  loadDataset(spec: string): Promise<Dataset>;
  loadTokenizer(modelDir: string, opts: TokenizerOptions): Promise<LobesTokenizer>;
  openCaptureEngine(modelDir: string, opts: EngineOptions): Promise<CaptureEngine>;
  planBatches(lengths: ArrayLike<number>, opts: BatchPlanOptions): number[][];
  padBatch(seqs: number[][], padId: number, side: 'left' | 'right'): TokenBatch;
}

export interface ExtractOptions {
  /** Model folder (model.onnx + tokenizer files). */
  model: string;
  /** Dataset spec (builtin:NAME, socialeval:PATH, jsonl:..., csv:...). */
  data: string;
  /** Run folder to create or resume. */
  out: string;
  /** Capture families (default final + mlp). */
  capture?: CaptureFamily[];
  device?: Device;
  deviceId?: number;
  /** Max rows per batch (default 8 unless tokenBudget is given). */
  batch?: number;
  /** Max padded tokens per batch. */
  tokenBudget?: number;
  /** Keep at most this many tokens per text (cut from the start). */
  maxTokens?: number | null;
  /** Stored dtype (default fp16). */
  dtype?: 'fp16' | 'fp32';
  chatTemplate?: boolean;
  shard?: ShardSpec | null;
  /** Rows per chunk file (default 128). Shards and single runs must use the same value. */
  chunkRows?: number;
  quiet?: boolean;
  /** Start even when the disk plan says the run will not fit. */
  force?: boolean;
  /** On resume, re-extract chunks whose files are bad instead of stopping. */
  repair?: boolean;
  /** On resume, hash every finished chunk (default true; false checks sizes only). */
  verify?: boolean;
  deps?: Partial<ExtractDeps>;
  /** Free bytes where the run goes (default: statfs of the folder or its nearest parent). */
  diskFree?: (dir: string) => number | null;
  /** Where messages go (default stderr). */
  log?: (line: string) => void;
}

export const DEFAULT_CHUNK_ROWS = 128;
export const DEFAULT_BATCH = 8;

async function defaultDeps(): Promise<ExtractDeps> {
  // Loaded lazily so that tests injecting every piece never load ONNX Runtime.
  const [e, t, b, d] = await Promise.all([import('./engine.js'), import('./tokenize.js'), import('./batching.js'), import('../data/index.js')]);
  return { openCaptureEngine: e.openCaptureEngine, loadTokenizer: t.loadTokenizer, planBatches: b.planBatches, padBatch: b.padBatch, loadDataset: (s: string) => d.loadDataset(s) };
}

async function resolveDeps(given: Partial<ExtractDeps> | undefined): Promise<ExtractDeps> {
  if (given && given.loadDataset && given.loadTokenizer && given.openCaptureEngine && given.planBatches && given.padBatch) return given as ExtractDeps;
  return { ...(await defaultDeps()), ...given };
}

/** sha256 over the items in order: id, text and labels (sorted keys) of every sample. */
export function hashItems(samples: Sample[]): string {
  const h = createHash('sha256');
  for (const s of samples) {
    const labels = Object.keys(s.labels)
      .sort()
      .map((k) => [k, s.labels[k]]);
    h.update(JSON.stringify([s.id, s.text, labels]) + '\n');
  }
  return h.digest('hex');
}

/** The graph file of a model folder: model.onnx, else the only *.onnx. */
export function graphFile(modelDir: string): string {
  if (modelDir.endsWith('.onnx') && existsSync(modelDir)) return modelDir;
  const main = path.join(modelDir, 'model.onnx');
  if (existsSync(main)) return main;
  let onnx: string[] = [];
  try {
    onnx = readdirSync(modelDir).filter((f) => f.endsWith('.onnx'));
  } catch (e: any) {
    throw new LobesError(`cannot read model folder (${e.code ?? e.message})`, { file: modelDir });
  }
  if (onnx.length === 1) return path.join(modelDir, onnx[0]);
  throw new LobesError(onnx.length ? `model folder has ${onnx.length} .onnx files and no model.onnx` : 'model folder has no model.onnx', { file: modelDir });
}

function fmtBytes(b: number): string {
  if (b < 1024) return `${b} B`;
  const u = ['KiB', 'MiB', 'GiB', 'TiB'];
  let x = b / 1024;
  let i = 0;
  while (x >= 1024 && i < u.length - 1) {
    x /= 1024;
    i++;
  }
  return `${x.toFixed(x >= 100 ? 0 : 1)} ${u[i]}`;
}

/** Bytes `rows` rows in `chunks` chunk files take on disk for these hooks (headers included). */
function planBytes(hooks: HookInfo[], rows: number, chunks: number): number {
  let b = 0;
  for (const h of hooks) b += rows * h.dim * (h.dtype === 'F16' ? 2 : 4) + chunks * (136 + 2 * h.name.length);
  return b;
}

/** Free bytes for unprivileged users on the filesystem holding `dir` (or its nearest existing parent). */
function freeBytes(dir: string): number | null {
  let d = path.resolve(dir);
  while (!existsSync(d)) {
    const p = path.dirname(d);
    if (p === d) return null;
    d = p;
  }
  try {
    const s = statfsSync(d);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

/** Run (or resume) an extraction. Returns the final manifest. */
export async function runExtract(opts: ExtractOptions): Promise<RunManifest> {
  const tStart = Date.now();
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  const say = (l: string) => {
    if (!opts.quiet) log(l);
  };
  const capture = opts.capture ?? ['final', 'mlp'];
  const device = opts.device ?? 'cpu';
  const dtype = opts.dtype ?? 'fp16';
  const chunkRows = opts.chunkRows ?? DEFAULT_CHUNK_ROWS;
  if (!Number.isInteger(chunkRows) || chunkRows < 1) throw new UsageError(`--chunk-rows must be a positive integer, got ${chunkRows}`);
  const batch = opts.batch ?? (opts.tokenBudget ? null : DEFAULT_BATCH);
  const tokenBudget = opts.tokenBudget ?? null;
  const maxTokens = opts.maxTokens ?? null;
  const chatTemplate = opts.chatTemplate ?? false;
  const shard = opts.shard ?? null;
  const out = opts.out;

  // The folder: new, or an earlier attempt of this command.
  let previous: RunManifest | null = null;
  if (existsSync(path.join(out, MANIFEST))) previous = readManifest(out);
  else if (!isEmptyOrMissing(out)) throw new LobesError('output folder exists and is not a lobes run', { file: out, hint: 'give a new or empty folder' });

  const deps = await resolveDeps(opts.deps);
  const t0 = Date.now();
  const dataset = await deps.loadDataset(opts.data);
  const itemsSha256 = hashItems(dataset.samples);
  const N = dataset.samples.length;
  const graphSha256 = sha256File(graphFile(opts.model)).sha256;
  const tokenizer = await deps.loadTokenizer(opts.model, { maxTokens, chatTemplate });
  const range = shardRange(N, chunkRows, shard);
  const rowsHere = range.rowEnd - range.rowStart;
  if (shard && rowsHere === 0) {
    say(`shard ${shard.index}/${shard.count} holds no rows (${chunkCount(N, chunkRows)} chunks of ${chunkRows} rows for ${shard.count} shards; lower --chunk-rows to use every shard)`);
  }

  // Tokenize this shard's rows.
  const ids: number[][] = [];
  const rows: SampleRow[] = [];
  let truncated = 0;
  let tokens = 0;
  for (let g = range.rowStart; g < range.rowEnd; g++) {
    const s = dataset.samples[g];
    let t;
    try {
      t = tokenizer.encode(s.text);
    } catch (e: any) {
      throw new LobesError(`cannot tokenize (${e.message})`, { where: `sample ${s.id}` });
    }
    if (t.ids.length === 0) throw new LobesError('text tokenizes to zero tokens', { where: `sample ${s.id}`, hint: 'remove empty items from the dataset' });
    ids.push(t.ids);
    const row: SampleRow = { index: rows.length, id: s.id, labels: s.labels, tokens: t.ids.length, truncated: t.truncated, text: s.text };
    if (s.provenance) row.provenance = s.provenance;
    rows.push(row);
    if (t.truncated) truncated++;
    tokens += t.ids.length;
  }
  const tokenizeMs = Date.now() - t0;

  const partial = (points: HookInfo[], arch: RunManifest['model']['arch'] | null): RunManifest => ({
    format: 'lobes-run',
    formatVersion: FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    model: { dir: opts.model, graphSha256, arch: arch ?? previous?.model.arch ?? ({} as any) },
    tokenizer: { source: tokenizer.source, chatTemplate, addBos: tokenizer.addBos, maxTokens },
    dataset: { spec: dataset.spec, itemsSha256, count: N, axes: dataset.axes },
    capture: { points, selection: capture },
    dtype,
    provider: { device, deviceId: opts.deviceId ?? 0 },
    shard,
    counts: { samples: rowsHere, truncated, tokens },
    timings: {},
    complete: false,
    settings: { batch, tokenBudget, chunkRows },
    layout: { datasetRows: N, ...range },
  });

  // Refuse a rerun with different settings before loading the model.
  if (previous) {
    const diff = differences(previous, partial(previous.capture.points, null), `${out}`, 'this command', { includeShard: true }).filter((d) => !d.startsWith('capture points'));
    if (diff.length) throw new LobesError(`this run folder was made with different settings: ${diff.join('; ')}`, { file: path.join(out, MANIFEST), hint: 'use a new --out, or delete the folder to start over' });
    if (previous.complete && !opts.repair) {
      // Check the finished run's files (throws naming any bad chunk; --repair re-extracts it).
      await ChunkWriter.resume(out, previous.capture.points, chunkRows, { verify: opts.verify ?? true, repair: false });
      say(`extract: ${out} is already complete (${previous.counts.samples} samples, chunk files verified); nothing to do`);
      return previous;
    }
  }

  const t1 = Date.now();
  const engine = await deps.openCaptureEngine(opts.model, { capture, device, deviceId: opts.deviceId });
  const modelLoadMs = Date.now() - t1;
  try {
    const storeDtype = dtype === 'fp16' ? 'F16' : 'F32';
    const hooks: HookInfo[] = engine.hooks.map((p) => ({ name: p.name, dim: p.dim, dtype: storeDtype }));
    if (hooks.length === 0) throw new LobesError(`the model has no capture points for --capture ${capture.join(',')}`, { file: opts.model });
    const manifest = partial(hooks, engine.info.arch);
    let writer: ChunkWriter | null = null;
    if (previous) {
      const diff = differences(previous, manifest, out, 'this command', { includeShard: true });
      if (diff.length) throw new LobesError(`this run folder was made with different settings: ${diff.join('; ')}`, { file: path.join(out, MANIFEST), hint: 'use a new --out, or delete the folder to start over' });
      // A crash right after the manifest of a new run leaves no samples table or index yet.
      if (existsSync(indexPath(out)) && existsSync(path.join(out, SAMPLES))) {
        const r = await ChunkWriter.resume(out, hooks, chunkRows, { verify: opts.verify ?? true, repair: !!opts.repair });
        for (const p of r.repaired) say(`repair: ${p}; extracting it again`);
        writer = r.writer;
      }
      manifest.timings = { ...previous.timings };
    }
    const base = { ...manifest.timings };

    // Disk plan (before anything is written for a new run).
    const todo: number[] = [];
    let todoRows = 0;
    let doneRows = 0;
    for (let c = range.chunkStart; c < range.chunkEnd; c++) {
      const n = Math.min((c + 1) * chunkRows, N) - c * chunkRows;
      if (writer?.has(c)) doneRows += n;
      else {
        todo.push(c);
        todoRows += n;
      }
    }
    const totalBytes = planBytes(hooks, rowsHere, range.chunkEnd - range.chunkStart);
    const needBytes = planBytes(hooks, todoRows, todo.length);
    const free = (opts.diskFree ?? freeBytes)(out);
    say(
      `extract: ${rowsHere} samples${shard ? ` (shard ${shard.index}/${shard.count}: rows ${range.rowStart}..${range.rowEnd - 1} of ${N})` : ''}, ${hooks.length} capture point${hooks.length > 1 ? 's' : ''}, ${dtype}; ` +
        `expected run size ${fmtBytes(totalBytes)}` +
        (doneRows ? `, resuming: ${doneRows} rows done, ${fmtBytes(needBytes)} to write` : '') +
        (free !== null ? `, ${fmtBytes(free)} free` : ''),
    );
    if (free !== null && needBytes > free) {
      if (!opts.force) throw new LobesError(`not enough disk space: the run needs ${fmtBytes(needBytes)} more but ${fmtBytes(free)} is free`, { file: out, hint: 'free space, choose another --out, store --dtype fp16 or capture fewer points; --force starts anyway' });
      say(`warning: the run needs ${fmtBytes(needBytes)} but only ${fmtBytes(free)} is free (--force given)`);
    }
    let computeMs = 0;
    let storeMs = 0;
    const timings = (): Record<string, number> => ({
      tokenizeMs: (base.tokenizeMs ?? 0) + tokenizeMs,
      modelLoadMs: (base.modelLoadMs ?? 0) + modelLoadMs,
      computeMs: Math.round((base.computeMs ?? 0) + computeMs),
      storeMs: Math.round((base.storeMs ?? 0) + storeMs),
      wallMs: (base.wallMs ?? 0) + Date.now() - tStart,
      attempts: (base.attempts ?? 0) + 1,
    });
    manifest.timings = timings();
    // The manifest is written at the start of every attempt (first, so that a crash leaves a
    // folder this command recognises) and every 30 s, so timings survive a crash.
    mkdirSync(out, { recursive: true });
    writeManifest(out, manifest);
    if (!writer) {
      writeSamples(out, rows);
      writer = ChunkWriter.create(out, hooks, chunkRows);
    }
    let lastSave = Date.now();

    const progress = new Progress({ label: 'extract', total: rowsHere, unit: 'samples', quiet: opts.quiet });
    if (doneRows) progress.set(doneRows);
    const padSide = tokenizer.paddingSide;
    let pending: Promise<void> | null = null;
    for (const c of todo) {
      const start = c * chunkRows;
      const n = Math.min(start + chunkRows, N) - start;
      const local = start - range.rowStart;
      const lengths = new Int32Array(n);
      for (let i = 0; i < n; i++) lengths[i] = ids[local + i].length;
      const plan = deps.planBatches(lengths, { batch: batch ?? undefined, tokenBudget: tokenBudget ?? undefined });
      const buffers = new Map<string, Float32Array>();
      for (const h of hooks) buffers.set(h.name, new Float32Array(n * h.dim));
      let seen = 0;
      for (const b of plan) {
        const tb = deps.padBatch(
          b.map((i) => ids[local + i]),
          tokenizer.padId,
          padSide,
        );
        const tc = performance.now();
        const res = await engine.run(tb);
        computeMs += performance.now() - tc;
        for (const h of hooks) {
          const v = res.get(h.name);
          if (!v || v.length !== b.length * h.dim) throw new LobesError(`the capture engine returned ${v ? v.length : 'no'} values for ${h.name}, expected ${b.length}×${h.dim}`, { where: `chunk ${c}` });
          const buf = buffers.get(h.name)!;
          for (let k = 0; k < b.length; k++) buf.set(v.subarray(k * h.dim, (k + 1) * h.dim), b[k] * h.dim);
        }
        seen += b.length;
        let tk = 0;
        for (const i of b) tk += lengths[i];
        progress.tick(b.length, { tokens: tk });
      }
      if (seen !== n || new Set(plan.flat()).size !== n) throw new LobesError(`batch plan covers ${seen} rows of a ${n}-row chunk`, { where: `chunk ${c}` });
      // Store this chunk while the model computes the next one: wait for the previous
      // chunk's files (storeMs counts only time the loop is held up by storage).
      const ts = performance.now();
      if (pending) await pending;
      pending = writer.writeAsync(c, start, n, buffers).then(() => undefined);
      pending.catch(() => undefined); // awaited below; avoid an unhandled-rejection warning meanwhile
      storeMs += performance.now() - ts;
      if (Date.now() - lastSave > 30_000) {
        manifest.timings = timings();
        writeManifest(out, manifest);
        lastSave = Date.now();
      }
    }
    const ts = performance.now();
    if (pending) await pending;
    storeMs += performance.now() - ts;
    const wallMs = Date.now() - tStart;
    manifest.timings = timings();
    manifest.complete = true;
    writeManifest(out, manifest);
    progress.finish(
      opts.quiet ? undefined : `extract: done, ${rowsHere} samples, ${tokens} tokens${truncated ? ` (${truncated} truncated)` : ''} in ${fmtTime(wallMs / 1000)} -> ${out}`,
    );
    return manifest;
  } finally {
    await engine.close();
  }
}
