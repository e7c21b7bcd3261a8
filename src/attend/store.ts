/**
 * The attend folder's reads and writes (docs/attend.md, "The attend folder"); every other
 * module reads or writes an attend folder through this one. It is a job folder of the store
 * (src/store/job.ts, src/store/records.ts), like an evaluation's:
 *
 *   DIR/attend.json               the manifest: model and input identity, settings, shard and
 *                                 chunk range, timings, complete, and the finished files' sha256
 *   DIR/records/index.json        while running: complete chunks (items [c*K, (c+1)*K)) with size and sha256
 *   DIR/records/chunk-NNNNNN.jsonl          that chunk's items (AttendItem), one per line
 *   DIR/items.jsonl               when complete: the chunks joined in order
 *   DIR/summary.json              when complete: the AttendSummary
 *   DIR/.lobes-output.json        lobes' marker of an attend folder (src/util/output.ts)
 *
 * Reading a finished folder checks items.jsonl and summary.json against the size and sha256
 * attend.json recorded, from the bytes that are parsed: an item edited by hand is refused.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import { OUTPUT_MARKER } from '../util/output.js';
import { CHUNKS_DIR, readVerifiedJsonl, type RecordLayout } from '../store/records.js';
import type { ChunkFile } from '../store/chunks.js';
import type { ShardRange, ShardSpec } from '../store/layout.js';
import type { AttendItem, AttendSummary } from './types.js';
import { readJsonFile, writeJsonAtomic } from '../store/json.js';

export const ATTEND_MANIFEST = 'attend.json';
export const ITEMS = 'items.jsonl';
export const SUMMARY = 'summary.json';
/** Where `lobes report RUN` looks for attend results inside a run (RUN/attend). */
export const RUN_ATTEND_DIR = 'attend';
export const ATTEND_FORMAT_VERSION = 2;

/** RUN/attend, where `lobes attend RUN` writes without --out. */
export function attendDirOf(runDir: string): string {
  return path.join(runDir, RUN_ATTEND_DIR);
}

/** An attend folder's summary.json. */
export function attendSummaryFile(dir: string): string {
  return path.join(dir, SUMMARY);
}
/** The record chunks of an attend job: one stream, the items. */
export const ATTEND_RECORDS: RecordLayout = { format: 'lobes-attend-chunks', streams: ['items'] };

/** DIR/attend.json. */
export interface AttendManifest {
  format: 'lobes-attend-job';
  formatVersion: number;
  lobesVersion: string;
  createdAt: string;
  /** Every setting and input hash that makes two attend folders (or two shards) one job; see attendIdentity. */
  identity: Record<string, string>;
  /** The summary's facts that do not depend on the items (model, tokenizer, input, settings). */
  facts: Pick<AttendSummary, 'model' | 'tokenizer' | 'input' | 'settings'>;
  /** Items of the whole input (every shard). */
  units: number;
  chunkUnits: number;
  shard: ShardSpec | null;
  layout: ShardRange;
  timings: { tokenizeMs: number; modelLoadMs: number; computeMs: number; wallMs: number; attempts: number };
  complete: boolean;
  files?: { items: ChunkFile; summary: ChunkFile };
}

/** A finished attend folder, read and verified. */
export interface AttendResults {
  dir: string;
  manifest: AttendManifest;
  summary: AttendSummary;
  items: AttendItem[];
}

/** Whether `dir` holds an attend job's manifest (an earlier attempt or a finished one). */
export function isAttendDir(dir: string): boolean {
  return existsSync(path.join(dir, ATTEND_MANIFEST));
}

/** Whether `dir` holds the results of a lobes attend made before attend folders had a manifest. */
export function isOldAttendDir(dir: string): boolean {
  return !isAttendDir(dir) && existsSync(path.join(dir, SUMMARY)) && existsSync(path.join(dir, ITEMS));
}

/** Read DIR/attend.json. */
export function readAttendManifest(dir: string): AttendManifest {
  const file = path.join(dir, ATTEND_MANIFEST);
  const notJson = (msg: string) => `attend.json is not valid JSON (${msg.split('\n')[0]})`;
  const m: AttendManifest = readJsonFile(file, {
    unreadable: (e) => {
      if (e.code !== 'ENOENT') return notJson(String(e.message));
      const old = isOldAttendDir(dir);
      return new LobesError(
        old
          ? 'attend results of an older lobes (no attend.json); their files cannot be verified'
          : 'not a lobes attend folder: attend.json is missing',
        { file,
          hint: old ? 'run lobes attend again into a new folder' : `give the ${opt('out')} folder of lobes attend` },
      );
    },
    invalid: notJson,
  });
  if (!m || m.format !== 'lobes-attend-job' || typeof m.identity !== 'object' || !m.layout)
    throw new LobesError('not a lobes attend manifest (format is not "lobes-attend-job")', { file });
  if (m.formatVersion > ATTEND_FORMAT_VERSION)
    throw new LobesError(`attend format ${m.formatVersion} is newer than this lobes understands`, { file,
      hint: 'upgrade lobes' });
  return m;
}

export function writeAttendManifest(dir: string, m: AttendManifest): void {
  writeJsonAtomic(path.join(dir, ATTEND_MANIFEST), m, 1);
}

/** Write DIR/summary.json; returns its size and sha256 for the manifest. */
export function writeAttendSummary(dir: string, s: AttendSummary): ChunkFile {
  const bytes = Buffer.from(JSON.stringify(s, null, 1) + '\n', 'utf8');
  writeFileAtomicSync(path.join(dir, SUMMARY), bytes);
  return { path: SUMMARY, bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Read a file the manifest lists, checked against its size and sha256 from the bytes returned. */
function readVerified(dir: string, f: ChunkFile): Buffer {
  const file = path.join(dir, f.path);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e: any) {
    throw new LobesError(
      e.code === 'ENOENT' ? 'file of a complete attend folder is missing' : `cannot read (${e.code ?? e.message})`,
      { file, hint: 'run lobes attend again into a new folder' },
    );
  }
  if (bytes.byteLength !== f.bytes || createHash('sha256').update(bytes).digest('hex') !== f.sha256) {
    throw new LobesError(`was changed after it was written (size or sha256 differ from ${ATTEND_MANIFEST})`, { file,
      hint: 'restore it, or run lobes attend again into a new folder' });
  }
  return bytes;
}

/** The items of a complete attend folder whose manifest is `m`, verified. */
export function readAttendItems(dir: string, m: AttendManifest): AttendItem[] {
  if (!m.complete || !m.files)
    throw new LobesError('attend is incomplete', { file: path.join(dir, ATTEND_MANIFEST),
      hint: 'rerun the same lobes attend command to finish it' });
  return readVerifiedJsonl<AttendItem>(dir, m.files.items, ATTEND_MANIFEST);
}

/** The summary of a complete attend folder whose manifest is `m`, verified. */
export function readAttendSummary(dir: string, m: AttendManifest): AttendSummary {
  if (!m.complete || !m.files)
    throw new LobesError('attend is incomplete', { file: path.join(dir, ATTEND_MANIFEST),
      hint: 'rerun the same lobes attend command to finish it' });
  const file = path.join(dir, m.files.summary.path);
  try {
    return JSON.parse(readVerified(dir, m.files.summary).toString('utf8')) as AttendSummary;
  } catch (e) {
    if (e instanceof LobesError) throw e;
    throw new LobesError(`invalid JSON (${String((e as Error).message).split('\n')[0]})`, { file });
  }
}

/** Manifest, summary and items of a complete attend folder, every file verified against attend.json. */
export function readAttendResults(dir: string): AttendResults {
  const manifest = readAttendManifest(dir);
  const summary = readAttendSummary(dir, manifest);
  const items = readAttendItems(dir, manifest);
  return { dir: path.resolve(dir), manifest, summary, items };
}

/**
 * Remove an earlier attend job's own entries from `dir` (--force with other settings): the
 * manifest, the record chunks, the joined items, the summary and the marker. Anything else in
 * the folder (a report page, the user's notes) is left where it is.
 */
export function removeAttendFiles(dir: string): void {
  for (const name of [ITEMS, SUMMARY, CHUNKS_DIR, OUTPUT_MARKER, ATTEND_MANIFEST])
    rmSync(path.join(dir, name), { recursive: true, force: true });
}
