/**
 * The `lobes extract` job: tokenize a dataset, run the capture engine chunk by chunk and
 * store last-token activations in a run directory (docs/run-format.md).
 *
 * Determinism: chunk c always holds dataset rows [c*K, (c+1)*K) and its batches are planned
 * from those rows alone, so the numbers in a chunk do not depend on where a previous
 * attempt crashed or on which shard wrote it. Resume = skip the chunks the index lists.
 *
 * The job's stages, by file: its options and shared records (./settings.ts), the input and the
 * pre-flight checks (./input.ts), the run folder across attempts and the disk plan (./resume.ts),
 * and here the job itself: the folder claimed, the engine opened, the chunk loop.
 */
import { existsSync } from 'node:fs';
import { makeDirs } from '../util/io.js';
import * as path from 'node:path';
import { LobesError, throwIfAborted } from '../util/errors.js';
import { Progress, fmtTime } from '../util/progress.js';
import { jobIO, type JobIO } from '../util/jobio.js';
import type { HookInfo, ModelArch, RunManifest } from '../store/types.js';
import type { CaptureEngine } from '../runtime/types.js';
import { MANIFEST, SAMPLES } from '../store/layout.js';
import { writeManifest, writeSamples } from '../store/manifest.js';
import { ChunkWriter } from '../store/writer.js';
import { withJobFolder } from '../store/job.js';
import type { GraphFacts } from '../runtime/consistency.js';
import { type ExtractDeps, type ExtractOptions, resolveDeps, type Settings, type Input, resolveSettings,
  chunkSpan } from './settings.js';
import { loadInput, checkContext, checkGraph, checkMemory } from './input.js';
import { openRunFolder, runManifest, alreadyComplete, storedHooks, resumeWriter, planChunks } from './resume.js';

export { hashItems } from '../store/provenance.js';
export { DEFAULT_CHUNK_ROWS, DEFAULT_BATCH, type ExtractDeps, type ExtractOptions } from './settings.js';

/** What the chunk loop needs. */
interface ChunkContext {
  s: Settings;
  input: Input;
  deps: ExtractDeps;
  engine: CaptureEngine;
  hooks: HookInfo[];
  progress: Progress;
  clock: AttemptClock;
  signal?: AbortSignal;
}

/**
 * Run (or resume) an extraction. Returns the final manifest.
 *
 * Stages: settings; the output folder (new, or an earlier attempt); the dataset, tokenized;
 * a rerun's settings checked (a finished run is verified and returned); the capture engine;
 * the resumed chunk writer; the disk plan; the attempt's first manifest; the chunks; the
 * final manifest.
 */
export async function runExtract(opts: ExtractOptions): Promise<RunManifest> {
  const tStart = Date.now();
  const io = jobIO(opts);
  const s = resolveSettings(opts);
  throwIfAborted(io.signal, 'lobes extract');
  // Refused before anything is read: a folder that is neither new nor a run.
  openRunFolder(s.out);
  const deps = await resolveDeps(opts.deps);
  const input = await loadInput(opts.data, s, deps, opts, io);
  // From here on this process is the folder's only writer (src/store/job.ts); its state is read under the lock.
  return withJobFolder(s.out, { command: 'lobes extract', isJob: (d) => existsSync(path.join(d, MANIFEST)),
    what: 'a lobes run', log: io.warn }, () => extractUnderLock(opts, s, deps, input, tStart, io));
}

/** The extraction once the folder is claimed. */
async function extractUnderLock(opts: ExtractOptions, s: Settings, deps: ExtractDeps, input: Input, tStart: number,
  io: JobIO): Promise<RunManifest>
{
  const previous = openRunFolder(s.out);
  const manifestFor = (points: HookInfo[], arch: ModelArch | null, graph?: GraphFacts) =>
    runManifest(s, input, previous, points, arch, graph);

  // Refuse a rerun with different settings before loading the model.
  if (previous && (await alreadyComplete(previous, manifestFor(previous.capture.points, null), s, input, opts, io)))
    return previous;
  // Texts longer than the model's context are refused before the model is loaded.
  checkContext(input, input.context);

  const t1 = Date.now();
  const engine = await deps.openCaptureEngine(s.model, { capture: s.capture, ...(s.layers ? { layers: s.layers } : {}),
    device: s.device, deviceId: s.deviceId, ...(s.interventions.length ? { interventions: s.interventions } : {}) });
  const modelLoadMs = Date.now() - t1;
  try {
    const graph = checkGraph(engine, s, opts, io);
    checkContext(input, engine.info.check?.context ?? null);
    checkMemory(s, input, deps, engine.info.arch, opts, io);
    const hooks = storedHooks(engine, s);
    const manifest = manifestFor(hooks, engine.info.arch, graph);
    let writer = previous ? await resumeWriter(previous, manifest, hooks, s, input, opts, io) : null;
    const plan = planChunks(s, input, hooks, writer, opts, io);
    const clock = new AttemptClock(tStart, { ...manifest.timings }, input.tokenizeMs, modelLoadMs);
    manifest.timings = clock.timings();
    // The manifest is written at the start of every attempt (first, so that a crash leaves a
    // folder this command recognises) and every 30 s, so timings survive a crash.
    makeDirs(s.out);
    writeManifest(s.out, manifest);
    if (!writer) {
      if (writeSamples(s.out, input.rows) !== input.samplesSha256)
        throw new LobesError('samples.jsonl was not written as planned', { file: path.join(s.out, SAMPLES) });
      writer = ChunkWriter.create(s.out, hooks, s.chunkRows);
    }
    const progress = new Progress({ label: 'extract', total: input.rowsHere, unit: 'samples', io });
    if (plan.doneRows) progress.resume(plan.doneRows);
    await extractChunks(plan.todo, writer, { s, input, deps, engine, hooks, progress, clock, signal: io.signal },
      () => {
        manifest.timings = clock.timings();
        writeManifest(s.out, manifest);
      });
    const wallMs = Date.now() - tStart;
    manifest.timings = clock.timings();
    manifest.complete = true;
    writeManifest(s.out, manifest);
    progress.finish(
      `extract: done, ${input.rowsHere} samples, ${input.tokens} tokens${
        input.truncated ? ` (${input.truncated} truncated)` : ''
      } in ${fmtTime(wallMs / 1000)} -> ${s.out}`,
    );
    return manifest;
  } finally {
    await engine.close();
  }
}

/** This attempt's time, added to what earlier attempts recorded (`base`). */
class AttemptClock {
  computeMs = 0;
  storeMs = 0;
  constructor(
    private readonly tStart: number,
    private readonly base: Record<string, number>,
    private readonly tokenizeMs: number,
    private readonly modelLoadMs: number,
  ) {}

  timings(): Record<string, number> {
    const base = this.base;
    return {
      tokenizeMs: (base.tokenizeMs ?? 0) + this.tokenizeMs,
      modelLoadMs: (base.modelLoadMs ?? 0) + this.modelLoadMs,
      computeMs: Math.round((base.computeMs ?? 0) + this.computeMs),
      storeMs: Math.round((base.storeMs ?? 0) + this.storeMs),
      wallMs: (base.wallMs ?? 0) + Date.now() - this.tStart,
      attempts: (base.attempts ?? 0) + 1,
    };
  }
}

/**
 * Extract the chunks in order. Each chunk is stored while the model computes the next one;
 * `save` rewrites the manifest (every 30 s).
 */
async function extractChunks(todo: number[], writer: ChunkWriter, ctx: ChunkContext, save: () => void): Promise<void> {
  const { s, input, clock } = ctx;
  let lastSave = Date.now();
  let pending: Promise<void> | null = null;
  try {
    for (const c of todo) {
      // Cancelled between chunks: the chunks stored so far stay listed, as after a kill.
      throwIfAborted(ctx.signal, 'lobes extract', `before chunk ${c}`);
      const { start, n } = chunkSpan(c, s.chunkRows, input.N);
      const buffers = await captureChunk(c, ctx);
      // Wait for the previous chunk's files (storeMs counts only time the loop is held up by storage).
      const ts = performance.now();
      if (pending) await pending;
      pending = writer.writeAsync(c, start, n, buffers).then(() => undefined);
      pending.catch(() => undefined); // awaited below; avoid an unhandled-rejection warning meanwhile
      clock.storeMs += performance.now() - ts;
      if (Date.now() - lastSave > 30_000) {
        save();
        lastSave = Date.now();
      }
    }
  } catch (e) {
    // The model failed: let the previous chunk's files finish (listed, or not at all) before the
    // error leaves, so nothing is still being written once the command has failed and let go of
    // the folder's lock.
    if (pending) await pending.catch(() => undefined);
    throw e;
  }
  const ts = performance.now();
  if (pending) await pending;
  clock.storeMs += performance.now() - ts;
}

/** Run the engine over chunk c's rows, batch by batch; each hook's values [n, dim] in row order. */
async function captureChunk(c: number, ctx: ChunkContext): Promise<Map<string, Float32Array>> {
  const { s, input, deps, engine, hooks, progress, clock } = ctx;
  const { start, n } = chunkSpan(c, s.chunkRows, input.N);
  const local = start - input.range.rowStart;
  const lengths = new Int32Array(n);
  for (let i = 0; i < n; i++) lengths[i] = input.ids[local + i].length;
  const plan = deps.planBatches(lengths, { batch: s.batch ?? undefined, tokenBudget: s.tokenBudget ?? undefined });
  const buffers = new Map<string, Float32Array>();
  for (const h of hooks) buffers.set(h.name, new Float32Array(n * h.dim));
  let seen = 0;
  for (const b of plan) {
    const tb = deps.padBatch(
      b.map((i) => input.ids[local + i]),
      input.tokenizer.padId,
      input.tokenizer.paddingSide,
    );
    const tc = performance.now();
    const res = await engine.run(tb);
    clock.computeMs += performance.now() - tc;
    for (const h of hooks) {
      const v = res.get(h.name);
      if (!v || v.length !== b.length * h.dim)
        throw new LobesError(
          `the capture engine returned ${v ? v.length : 'no'} values for ${h.name}, expected ${b.length}×${h.dim}`,
          { where: `chunk ${c}` },
        );
      const buf = buffers.get(h.name)!;
      for (let k = 0; k < b.length; k++) buf.set(v.subarray(k * h.dim, (k + 1) * h.dim), b[k] * h.dim);
    }
    seen += b.length;
    let tk = 0;
    for (const i of b) tk += lengths[i];
    progress.tick(b.length, { tokens: tk });
  }
  if (seen !== n || new Set(plan.flat()).size !== n)
    throw new LobesError(`batch plan covers ${seen} rows of a ${n}-row chunk`, { where: `chunk ${c}` });
  return buffers;
}
