/**
 * The evaluation folder's reads and writes (docs/eval.md, "The evaluation directory"). It is a
 * job folder of the store (src/store/job.ts, src/store/records.ts):
 *
 *   DIR/eval.json                 the manifest: settings, model and dataset identity, progress
 *   DIR/records/index.json        complete chunks (units [c*K, (c+1)*K)) with size and sha256
 *   DIR/records/chunk-NNNNNN.jsonl          that chunk's records, one per line
 *   DIR/records/chunk-NNNNNN.episodes.jsonl that chunk's GAE episodes (GAE only)
 *   DIR/records.jsonl, DIR/episodes.jsonl   when complete: the chunks joined in order
 *   DIR/summary.json              when complete: accuracies with CIs, position bias
 *
 * A unit is one IAE / multiple-choice item (one record) or one GAE world tree (one record
 * per decision, one episode). Every other module reads an evaluation through this one.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { readVerifiedJsonl, type RecordLayout } from '../store/records.js';
import { readJsonFile, need, isObj, writeJsonAtomic } from '../store/json.js';
import type { EpisodeRecord, EvalRecord } from './types.js';
import type { EvalManifest } from './manifest.js';
import type { EvalSummary } from './summary-types.js';

/** The folder of a run that holds the evaluation of its own items (RUN/eval). */
export const EVAL_DIR = 'eval';
export const EVAL_MANIFEST = 'eval.json';
export const RECORDS = 'records.jsonl';
export const EPISODES = 'episodes.jsonl';
export const SUMMARY = 'summary.json';
const EVAL_FILES = { manifest: EVAL_MANIFEST, records: RECORDS, episodes: EPISODES, summary: SUMMARY } as const;

/** RUN/eval. */
export function evalDirOf(runDir: string): string {
  return path.join(runDir, EVAL_DIR);
}

/** One file of an evaluation folder: eval.json, the joined records or episodes, summary.json. */
export function evalFile(dir: string, which: keyof typeof EVAL_FILES): string {
  return path.join(dir, EVAL_FILES[which]);
}
export const EVAL_FORMAT_VERSION = 1;
/** The record chunks of an evaluation: records (always) and episodes (world trees). */
export const EVAL_RECORDS: RecordLayout = { format: 'lobes-eval-chunks', streams: ['records', 'episodes'] };

/** Whether `dir` holds an evaluation's manifest (an earlier attempt or a finished evaluation). */
export function isEvalDir(dir: string): boolean {
  return existsSync(path.join(dir, EVAL_MANIFEST));
}

/** Read DIR/eval.json. */
export function readEvalManifest(dir: string): EvalManifest {
  const file = path.join(dir, EVAL_MANIFEST);
  const m: EvalManifest = readJsonFile(file, {
    unreadable: (
      e,
    ) => (e.code === 'ENOENT'
      ? new LobesError('not a lobes evaluation: eval.json is missing', { file,
        hint: 'give the folder written by lobes eval' })
      : `eval.json is not valid JSON (${e.message})`),
    invalid: (msg) => `eval.json is not valid JSON (${msg})`,
  });
  if (!m || m.format !== 'lobes-eval')
    throw new LobesError('not a lobes evaluation manifest (format is not "lobes-eval")', { file });
  if (m.formatVersion > EVAL_FORMAT_VERSION)
    throw new LobesError(`evaluation format ${m.formatVersion} is newer than this lobes understands`, { file,
      hint: 'upgrade lobes' });
  return m;
}

export function writeEvalManifest(dir: string, m: EvalManifest): void {
  writeJsonAtomic(path.join(dir, EVAL_MANIFEST), m, 2);
}

export function writeEvalSummary(dir: string, s: EvalSummary): void {
  writeJsonAtomic(path.join(dir, SUMMARY), s, 2);
}

/**
 * Records, episodes and summary of a complete evaluation folder. The records and episodes are
 * checked against the sha256 eval.json recorded, from the bytes that are parsed: an edited
 * record (a `correct` flipped by hand) is refused.
 */
export function readEvalResults(
  dir: string,
): { manifest: EvalManifest; records: EvalRecord[]; episodes: EpisodeRecord[]; summary: EvalSummary } {
  const manifest = readEvalManifest(dir);
  if (!manifest.complete || !manifest.files)
    throw new LobesError('evaluation is incomplete', { file: path.join(dir, EVAL_MANIFEST),
      hint: 'rerun the same lobes eval command to finish it' });
  const records = readVerifiedJsonl<EvalRecord>(dir, manifest.files.records, EVAL_MANIFEST);
  const episodes = manifest.files.episodes
    ? readVerifiedJsonl<EpisodeRecord>(dir, manifest.files.episodes, EVAL_MANIFEST)
    : [];
  const sfile = path.join(dir, SUMMARY);
  const summary = readJsonFile(sfile, {
    unreadable: (e) => (e.code ? `cannot read (${e.code})` : `invalid JSON (${String(e.message).split('\n')[0]})`),
    invalid: (msg) => `invalid JSON (${msg.split('\n')[0]})`,
    hint: 'rerun the same lobes eval command to write it again',
  }) as EvalSummary;
  return { manifest, records, episodes, summary };
}

/** The joined records of an evaluation, verified against the size and sha256 its eval.json lists for them. */
export function readEvalRecords(dir: string, recorded: NonNullable<EvalManifest['files']>['records']): EvalRecord[] {
  return readVerifiedJsonl<EvalRecord>(dir, recorded, EVAL_MANIFEST);
}

/** Check that the joined files of a complete evaluation still hash to eval.json (throws naming the file). */
export function checkEvalFiles(dir: string, m: EvalManifest): void {
  readVerifiedJsonl(dir, m.files!.records, EVAL_MANIFEST);
  if (m.files!.episodes) readVerifiedJsonl(dir, m.files!.episodes, EVAL_MANIFEST);
}

/** A finished evaluation as the report reads it: its manifest (eval.json) and summary.json. */
export interface EvalData {
  dir: string;
  manifest: Record<string, any>;
  summary: EvalSummary;
}

/** A complete evaluation folder's manifest and summary (contract checked), or null when `dir` holds none. */
export function readCompleteEval(dir: string): EvalData | null {
  const mf = evalFile(dir, 'manifest');
  if (!existsSync(mf)) return null;
  const manifest = readJsonFile(mf);
  need(isObj(manifest) && manifest.format === 'lobes-eval', mf, 'format',
    'not a lobes evaluation manifest (format is not "lobes-eval")');
  need(manifest.complete === true, mf, 'complete',
    'the evaluation is incomplete (rerun its lobes eval command to finish it)');
  const sf = evalFile(dir, 'summary');
  const summary = readJsonFile(sf);
  need(isObj(summary) && summary.format === 'lobes-eval-summary', sf, 'format', 'not a lobes evaluation summary');
  return { dir, manifest, summary: summary as EvalSummary };
}
