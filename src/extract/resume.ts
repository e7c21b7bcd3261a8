/**
 * The run folder across attempts: a new folder or an earlier attempt's manifest, the manifest
 * of this attempt, a rerun's settings checked, a finished run verified, a crashed one resumed
 * (its samples table and chunk files checked or repaired), and the disk plan of what is left.
 */
import { interventionRecords } from '../runtime/intervene.js';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import type { JobIO } from '../util/jobio.js';
import { LOBES_VERSION } from '../version.js';
import type { HookInfo, ModelArch, RunManifest } from '../store/types.js';
import type { CaptureEngine } from '../runtime/types.js';
import { FORMAT_VERSION, MANIFEST, SAMPLES } from '../store/layout.js';
import { readManifest, writeSamples, sha256Text } from '../store/manifest.js';
import { ChunkWriter } from '../store/writer.js';
import { isFreshFolder } from '../store/job.js';
import { indexPath } from '../store/chunks.js';
import { differences } from '../store/identity.js';
import { runIdentity } from '../store/provenance.js';
import { fmtBytes } from '../runtime/plan.js';
import type { GraphFacts } from '../runtime/consistency.js';
import { type ExtractOptions, type Settings, type Input, chunkSpan } from './settings.js';

/** The output folder: new (null), or an earlier attempt of this command (its manifest). */
export function openRunFolder(out: string): RunManifest | null {
  if (existsSync(path.join(out, MANIFEST))) return readManifest(out);
  if (!isFreshFolder(out))
    throw new LobesError('output folder exists and is not a lobes run; lobes does not write into it', { file: out,
      hint: 'give a new or empty folder', code: 'E_EXISTS' });
  return null;
}

/** The run's manifest, not yet complete; `arch` null keeps the previous attempt's. */
export function runManifest(s: Settings, input: Input, previous: RunManifest | null, points: HookInfo[],
  arch: ModelArch | null, graph?: GraphFacts): RunManifest
{
  const m: RunManifest = {
    format: 'lobes-run',
    formatVersion: FORMAT_VERSION,
    lobesVersion: LOBES_VERSION,
    createdAt: previous?.createdAt ?? new Date().toISOString(),
    model: {
      dir: path.resolve(s.model),
      graphSha256: input.graphSha256,
      arch: arch ?? previous?.model.arch ?? ({} as any),
      files: input.files,
      ...(graph ?? previous?.model.graph ? { graph: (graph ?? previous?.model.graph) as Record<string, unknown> } : {}),
      ...(s.modelSource ? { source: s.modelSource } : {}),
      ...(s.control ? { control: s.control } : {}),
    },
    tokenizer: { source: input.tokenizer.source, chatTemplate: s.chatTemplate, addBos: input.tokenizer.addBos,
      maxTokens: s.maxTokens },
    dataset: { spec: input.dataset.spec, itemsSha256: input.itemsSha256, count: input.N, axes: input.dataset.axes,
      ...(input.limit ? { limit: input.limit } : {}),
      ...(input.dataset.composition ? { composition: input.dataset.composition } : {}) },
    capture: { points, selection: s.layers ? [...s.capture, `layers=${s.layers}`] : s.capture,
      ...(s.interventions.length ? { interventions: interventionRecords(s.interventions) } : {}) },
    dtype: s.dtype,
    provider: { device: s.device, deviceId: s.deviceId ?? 0 },
    shard: s.shard,
    counts: { samples: input.rowsHere, truncated: input.truncated, tokens: input.tokens },
    timings: {},
    complete: false,
    settings: { batch: s.batch, tokenBudget: s.tokenBudget, chunkRows: s.chunkRows },
    layout: { datasetRows: input.N, ...input.range },
    samplesSha256: input.samplesSha256,
  };
  m.identity = runIdentity(m);
  return m;
}

/** Refuse a rerun whose settings differ (`ignore` filters out differences to leave for later). */
function checkSameSettings(previous: RunManifest, manifest: RunManifest, out: string,
  ignore?: (d: string) => boolean): void
{
  const diff = differences(previous, manifest, out, 'this command', { includeShard: true }).filter((d) => !ignore?.(d));
  if (diff.length)
    throw new LobesError(`this run folder was made with different settings: ${diff.join('; ')}`, {
      file: path.join(out, MANIFEST),
      hint: `use a new ${opt('out')}, or delete the folder to start over`,
    });
}

/**
 * Check a rerun's settings (all but the capture points, which need the model); when the
 * earlier attempt finished (and no repair is asked for), verify its files and say so.
 */
export async function alreadyComplete(previous: RunManifest, manifest: RunManifest, s: Settings, input: Input,
  opts: ExtractOptions, io: JobIO): Promise<boolean>
{
  checkSameSettings(previous, manifest, s.out, (d) => d.startsWith('capture points'));
  if (!previous.complete || opts.repair) return false;
  // Check the finished run's files (throws naming any bad chunk or samples table; --repair rewrites them).
  checkSamplesFile(s.out, previous, input, false, io);
  await ChunkWriter.resume(s.out, previous.capture.points, s.chunkRows, { verify: opts.verify ?? true, repair: false });
  io.log(
    `extract: ${s.out} is already complete (${previous.counts.samples} samples, samples table and chunk files verified); nothing to do`,
  );
  return true;
}

/**
 * samples.jsonl of an earlier attempt must be the table this command derives (same rows,
 * labels, token counts) and match the sha256 its manifest recorded. A missing, truncated or
 * edited table is refused, or with `repair` written again from the dataset and tokenizer.
 */
function checkSamplesFile(out: string, previous: RunManifest, input: Input, repair: boolean, io: JobIO): void {
  const file = path.join(out, SAMPLES);
  let problem: string | null = null;
  if (!existsSync(file)) problem = 'samples table is missing';
  else {
    const got = sha256Text(readFileSync(file));
    if (previous.samplesSha256 !== undefined && got !== previous.samplesSha256)
      problem = `samples table does not match its run: sha256 ${got.slice(0, 12)}… but the manifest records ${
        previous.samplesSha256.slice(0, 12)
      }… (edited, truncated or replaced)`;
    else if (got !== input.samplesSha256)
      problem = 'samples table differs from the rows this command derives from the dataset and tokenizer';
  }
  if (!problem) return;
  if (!repair)
    throw new LobesError(problem, { file,
      hint: `rerun the same command with ${opt('repair')} to write it again from the dataset and tokenizer` });
  writeSamples(out, input.rows);
  io.log(`repair: ${file}: ${problem}; written again from the dataset and tokenizer`);
}

/** The capture points the engine outputs, as stored. */
export function storedHooks(engine: CaptureEngine, s: Settings): HookInfo[] {
  const storeDtype = s.dtype === 'fp16' ? 'F16' : 'F32';
  const hooks: HookInfo[] = engine.hooks.map((p) => ({ name: p.name, dim: p.dim, dtype: storeDtype }));
  if (hooks.length === 0)
    throw new LobesError(`the model has no capture points for ${opt('capture', s.capture.join(','))}`, {
      file: s.model,
    });
  return hooks;
}

/**
 * Continue an earlier attempt: check every setting, reopen its chunk writer (null when it
 * crashed before writing the samples table and index) and carry its timings over.
 */
export async function resumeWriter(previous: RunManifest, manifest: RunManifest, hooks: HookInfo[], s: Settings,
  input: Input, opts: ExtractOptions, io: JobIO): Promise<ChunkWriter | null>
{
  checkSameSettings(previous, manifest, s.out);
  let writer: ChunkWriter | null = null;
  // A crash right after the manifest of a new run leaves no samples table or index yet
  // (the samples table is written before the index).
  if (existsSync(indexPath(s.out))) {
    checkSamplesFile(s.out, previous, input, !!opts.repair, io);
    const r = await ChunkWriter.resume(s.out, hooks, s.chunkRows, { verify: opts.verify ?? true,
      repair: !!opts.repair });
    for (const p of r.repaired) io.log(`repair: ${p}; extracting it again`);
    writer = r.writer;
  }
  manifest.timings = { ...previous.timings };
  return writer;
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

/**
 * The chunks still to extract, and the disk plan: say what the run will take and stop (unless
 * --ignore-plan) when the disk cannot hold what is left to write.
 */
export function planChunks(s: Settings, input: Input, hooks: HookInfo[], writer: ChunkWriter | null,
  opts: ExtractOptions, io: JobIO): { todo: number[]; doneRows: number }
{
  const { range, rowsHere, N } = input;
  const todo: number[] = [];
  let todoRows = 0;
  let doneRows = 0;
  for (let c = range.chunkStart; c < range.chunkEnd; c++) {
    const { n } = chunkSpan(c, s.chunkRows, N);
    if (writer?.has(c)) doneRows += n;
    else {
      todo.push(c);
      todoRows += n;
    }
  }
  const totalBytes = planBytes(hooks, rowsHere, range.chunkEnd - range.chunkStart);
  const needBytes = planBytes(hooks, todoRows, todo.length);
  const free = (opts.diskFree ?? freeBytes)(s.out);
  io.log(
    `extract: ${rowsHere} samples${
      s.shard ? ` (shard ${s.shard.index}/${s.shard.count}: rows ${range.rowStart}..${range.rowEnd - 1} of ${N})` : ''
    }, ${hooks.length} capture point${hooks.length > 1 ? 's' : ''}, ${s.dtype}; ` +
      `expected run size ${fmtBytes(totalBytes)}` +
      (doneRows ? `, resuming: ${doneRows} rows done, ${fmtBytes(needBytes)} to write` : '') +
      (free !== null ? `, ${fmtBytes(free)} free` : ''),
  );
  if (free !== null && needBytes > free) {
    if (!opts.force)
      throw new LobesError(
        `not enough disk space: the run needs ${fmtBytes(needBytes)} more but ${fmtBytes(free)} is free`,
        { file: s.out,
          hint: `free space, choose another ${opt('out')}, store ${opt('dtype', 'fp16')} or capture fewer points; ${
            opt('force')
          } starts anyway` },
      );
    io.warn(`warning: the run needs ${fmtBytes(needBytes)} but only ${fmtBytes(free)} is free (--ignore-plan given)`);
  }
  return { todo, doneRows };
}
