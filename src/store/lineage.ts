/**
 * Lineage: every output records the content hashes of the files it wrote and of every input it
 * read, and "is this output current?" is computed from those hashes, never judged from
 * settings.
 *
 * - An output folder written whole (RUN/wanda, RUN/cluster, RUN/swap; writeDirAtomic) keeps its
 *   lineage in lobes' marker file (src/util/output.ts): `outputs` (path → bytes, sha256 of every
 *   file it wrote) and `inputs` (what it read, each with a content hash). A job folder keeps the
 *   same two lists in its own manifest (ablate's job.json: `inputs`, `files`).
 * - An input is named by what it is, relative to the run it belongs to:
 *     `run`                 the run identity (src/store/provenance.ts runIdentity)
 *     `samples.jsonl`       sha256 of the run's samples table
 *     `activations/HOOK`    digest of a capture point's chunk files (chunkDigest)
 *     `labels/AXIS.json`    sha256 of a label overlay
 *     `model`               sha256 over every model file (graph, weights, tokenizer) by name
 *     `data`                sha256 of the items scored (ablate)
 *     `file:NAME`           a file outside the run, by its path `from` (a matrix given to cluster)
 *     any other path        sha256 of that file of the run (e.g. `wanda/regions.json`)
 * - `staleInput` names the first recorded input that differs from what is there now;
 *   `checkOutputCurrent` throws that as a ProvenanceError (the report leaves the section out
 *   with the line); `readOutputFile` reads a file of an output folder only when its bytes are
 *   the ones recorded.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { readOutputMarker, type LineageInput, type OutputMarker } from '../util/output.js';
import { readChunkIndex } from './chunks.js';
import { INDEX, MANIFEST, SAMPLES } from './layout.js';
import { overlaySha256 } from './labels.js';
import { ProvenanceError, analysisProvenance, checkProvenance, chunkDigest, runIdentity } from './provenance.js';
import type { ModelFile, RunManifest, RunReader } from './types.js';

export type { LineageInput } from '../util/output.js';

/** The run-level names of inputs (anything else is a path inside the run folder). */
export const RUN_INPUT = 'run';
export const SAMPLES_INPUT = 'samples.jsonl';
export const MODEL_INPUT = 'model';
export const DATA_INPUT = 'data';
/** A file outside any run, read by its path (a matrix and its labels given to lobes cluster): `from` is the path. */
export const FILE_INPUT_PREFIX = 'file:';
const CHUNKS_PREFIX = 'activations/';
const OVERLAY_PREFIX = 'labels/';

const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
const short = (h: string | null | undefined) => (typeof h === 'string' ? `${h.slice(0, 12)}…` : String(h));

/**
 * The inputs an analysis of `run` read: the run identity, its samples table, the chunk files of
 * each capture point read and each label overlay read (analysisProvenance's record, as inputs).
 */
export function runInputs(run: RunReader, hooks?: string[]): LineageInput[] {
  const p = analysisProvenance(run, hooks);
  const out: LineageInput[] = [{ name: RUN_INPUT, sha256: p.run, from: p.runDir }];
  if (p.samplesSha256) out.push({ name: SAMPLES_INPUT, sha256: p.samplesSha256 });
  for (const [hook, digest] of Object.entries(p.chunks))
    if (digest !== 'unknown') out.push({ name: CHUNKS_PREFIX + hook, sha256: digest });
  for (const [axis, sha] of Object.entries(p.overlays ?? {}))
    out.push({ name: `${OVERLAY_PREFIX}${axis}.json`, sha256: sha });
  return out;
}

/**
 * The files of another run an analysis read beside its own run (a random-weights control run
 * given to lobes swap): that run's manifest, samples table and chunk index, each a file input by
 * its path, named `file:LABEL/NAME`, so that the output is stale when any of them changes.
 */
export function otherRunInputs(run: Pick<RunReader, 'dir'>, label: string): LineageInput[] {
  return [MANIFEST, SAMPLES, INDEX]
    .map((f) => path.join(run.dir, f))
    .filter((f) => existsSync(f))
    .map((f) => ({ ...externalFileInput(f), name: `${FILE_INPUT_PREFIX}${label}/${path.basename(f)}` }));
}

/** One sha256 over a model's files by name (graph, external weights, tokenizer), whatever their order. */
export function modelFilesDigest(files: readonly Pick<ModelFile, 'name' | 'sha256'>[]): string {
  const sorted = [...files].map((f) => [f.name, f.sha256]).sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  return sha256(JSON.stringify(sorted));
}

/** The model input: every file of the model by content (`from`: the folder read). */
export function modelInput(files: readonly Pick<ModelFile, 'name' | 'sha256'>[], from: string): LineageInput {
  return { name: MODEL_INPUT, sha256: modelFilesDigest(files), from: path.resolve(from) };
}

/** A file of the run folder read as an input (an upstream output such as wanda/regions.json), by its path relative to the run. */
export function runFileInput(runDir: string, file: string): LineageInput {
  const rel = path.relative(path.resolve(runDir), path.resolve(file)).split(path.sep).join('/');
  return { name: rel, sha256: sha256(readFileSync(file)), from: path.resolve(file) };
}

/** A file outside any run read as an input (a matrix file, its labels file), by its absolute path. */
export function externalFileInput(file: string, sha256?: string): LineageInput {
  return { name: FILE_INPUT_PREFIX + path.basename(file),
    sha256: sha256 ?? createHash('sha256').update(readFileSync(file)).digest('hex'), from: path.resolve(file) };
}

/** What an input is now, for one run: a resolver per kind of input. */
export interface LineageContext {
  runDir: string;
  manifest: RunManifest;
  /** The model input now (sha256 over its files), when the reader can compute it; undefined: not checked here. */
  model?: () => string | undefined;
  /** The data input now (sha256 of the items), when the reader can compute it; undefined: not checked here. */
  data?: () => string | undefined;
}

/**
 * The content hash of `input` now: null when it is gone, undefined when this reader cannot
 * compute it (a model the report does not have, activations deleted from a copied run).
 */
export function currentInput(input: LineageInput, ctx: LineageContext): string | null | undefined {
  const { runDir, manifest } = ctx;
  if (input.name === RUN_INPUT) return manifest.identity ?? runIdentity(manifest);
  if (input.name === MODEL_INPUT) return ctx.model?.();
  if (input.name === DATA_INPUT) return ctx.data?.();
  if (input.name.startsWith(FILE_INPUT_PREFIX)) {
    if (!input.from) return undefined;
    try {
      return sha256(readFileSync(input.from));
    } catch {
      return null;
    }
  }
  if (input.name.startsWith(CHUNKS_PREFIX)) {
    if (!existsSync(path.join(runDir, INDEX))) return undefined;
    return chunkDigest(readChunkIndex(runDir), input.name.slice(CHUNKS_PREFIX.length));
  }
  if (input.name.startsWith(OVERLAY_PREFIX) && input.name.endsWith('.json'))
    return overlaySha256(runDir, input.name.slice(OVERLAY_PREFIX.length, -'.json'.length));
  const file = path.resolve(runDir, input.name);
  // Only files inside the run folder are inputs by path.
  if (path.relative(path.resolve(runDir), file).startsWith('..')) return undefined;
  try {
    return sha256(readFileSync(file));
  } catch {
    return null;
  }
}

/** In words, what an input is (for the one-line messages). */
function describe(input: LineageInput): string {
  if (input.name === RUN_INPUT) return 'the run (its identity: model, data and capture settings)';
  if (input.name === SAMPLES_INPUT) return "the run's samples table (samples.jsonl)";
  if (input.name === MODEL_INPUT) return `the model${input.from ? ` (${input.from})` : ''}`;
  if (input.name === DATA_INPUT) return 'the items scored';
  if (input.name.startsWith(FILE_INPUT_PREFIX))
    return `the file ${input.from ?? input.name.slice(FILE_INPUT_PREFIX.length)}`;
  if (input.name.startsWith(CHUNKS_PREFIX)) return `the chunk files of ${input.name.slice(CHUNKS_PREFIX.length)}`;
  if (input.name.startsWith(OVERLAY_PREFIX)) return `the label overlay ${input.name}`;
  return input.name;
}

/**
 * The first recorded input that differs from what is there now, in words ("wanda/regions.json
 * has changed since (sha256 1a2b… then, 3c4d… now)"); null when every input that can be
 * checked here is the same.
 */
export function staleInput(inputs: readonly LineageInput[], ctx: LineageContext): string | null {
  for (const input of inputs) {
    const now = currentInput(input, ctx);
    if (now === undefined || now === input.sha256) continue;
    if (input.name === RUN_INPUT)
      return `they belong to another run (run identity ${short(input.sha256)}${
        input.from ? ` of ${input.from}` : ''
      }, this run is ${short(now)})`;
    if (now === null) return `${describe(input)} is gone`;
    return `${describe(input)} has changed since (sha256 ${short(input.sha256)} then, ${short(now)} now)`;
  }
  return null;
}

/** The recorded inputs of an output folder (its marker), or null when it recorded none (an older lobes). */
export function recordedInputs(dir: string): LineageInput[] | null {
  const m = readOutputMarker(dir);
  return Array.isArray(m?.inputs) ? m!.inputs! : null;
}

/**
 * Check that the output folder `dir` is current for the run in `ctx`: every input its marker
 * records is the same now; for folders an older lobes wrote (no inputs recorded), the run
 * provenance of their settings.json (`legacyProvenance`) as before. Throws a ProvenanceError
 * naming `file` and the first input that differs, with the command to `rerun`.
 */
export function checkOutputCurrent(dir: string, ctx: LineageContext, what: string, file: string, rerun: string,
  legacyProvenance?: unknown): void
{
  const inputs = recordedInputs(dir);
  if (!inputs) {
    checkProvenance(ctx.runDir, ctx.manifest, legacyProvenance, what, file, rerun);
    return;
  }
  if (!inputs.some((i) => i.name === RUN_INPUT)) {
    throw new ProvenanceError(
      `${what} were not made from a run (made from a matrix file), so they cannot be shown as this run's`,
      { file, hint: `run ${rerun} on this run` },
    );
  }
  const stale = staleInput(inputs, ctx);
  if (stale)
    throw new ProvenanceError(`${what} are not current: ${stale}`, { file, hint: `run ${rerun} on this run again` });
}

/**
 * The bytes of `name` in the output folder `dir`, checked against the sha256 its marker
 * recorded when lobes wrote it: a file edited, replaced or removed since throws a
 * ProvenanceError naming it. A folder written by an older lobes (no outputs recorded) is read
 * as it is.
 */
export function readOutputFile(dir: string, name: string, marker: OutputMarker | null = readOutputMarker(dir)): Buffer {
  const file = path.join(dir, name);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e: any) {
    throw new LobesError(`cannot read (${e.code ?? e.message})`, { file });
  }
  const rec = marker?.outputs;
  if (rec) {
    const want = rec[name];
    if (!want)
      throw new ProvenanceError(`was not written by lobes ${marker!.kind} (its marker does not list it)`, { file,
        hint: `run lobes ${marker!.kind} again` });
    if (want.bytes !== bytes.byteLength || sha256(bytes) !== want.sha256) {
      throw new ProvenanceError(
        `was changed after lobes ${marker!.kind} wrote it (sha256 ${short(sha256(bytes))}, recorded ${
          short(want.sha256)
        })`,
        { file, hint: `run lobes ${marker!.kind} again to write it anew` },
      );
    }
  }
  return bytes;
}

/** readOutputFile parsed as JSON (one-line error naming the file when it is not). */
export function readOutputJson(dir: string, name: string, marker?: OutputMarker | null): any {
  const bytes = readOutputFile(dir, name, marker === undefined ? readOutputMarker(dir) : marker);
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (e: any) {
    throw new LobesError(`invalid JSON: ${String(e.message).split('\n')[0]}`, { file: path.join(dir, name) });
  }
}

/**
 * The first input of `now` that `recorded` holds with another hash, or lacks, in words; null when
 * the two lists agree. For a job that resumes or finds itself complete: `recorded` is what it was
 * made from, `now` what the same command would read today.
 */
export function inputsDiffer(recorded: readonly LineageInput[] | undefined, now: readonly LineageInput[]): string
  | null
{
  if (!recorded) return 'inputs an older lobes did not record';
  for (const n of now) {
    const r = recorded.find((x) => x.name === n.name);
    if (!r) return `${describe(n)} was not among its inputs`;
    if (r.sha256 !== n.sha256) {
      if (n.name === RUN_INPUT)
        return `another run (run identity ${short(r.sha256)}${r.from ? ` of ${r.from}` : ''}, now ${short(n.sha256)})`;
      return `${describe(n)} has changed since (sha256 ${short(r.sha256)} then, ${short(n.sha256)} now)`;
    }
  }
  for (const r of recorded) if (!now.some((n) => n.name === r.name)) return `${describe(r)}, which it no longer reads`;
  return null;
}
