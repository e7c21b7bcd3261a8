/**
 * The small metadata files of a run directory: manifest.json (RunManifest) and
 * samples.jsonl (one SampleRow per line, in row order). Both are written atomically.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, systemError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import type { RunManifest, SampleRow } from './types.js';
import { MANIFEST, SAMPLES, FORMAT_VERSION } from './layout.js';
import { readJsonFile, writeJsonAtomic } from './json.js';

/** Write RUN/manifest.json (pretty-printed JSON). */
export function writeManifest(runDir: string, m: RunManifest): void {
  writeJsonAtomic(path.join(runDir, MANIFEST), m, 2);
}

/** Read and check RUN/manifest.json: a lobes run of a format version this lobes understands. */
export function readManifest(runDir: string): RunManifest {
  const file = path.join(runDir, MANIFEST);
  const m: RunManifest = readJsonFile(file, {
    unreadable: (e) => {
      // a run given as . or .. is named by its full path (`manifest.json: …` alone names no folder)
      if (e.code === 'ENOENT')
        return new LobesError('not a lobes run: manifest.json is missing', {
          file: /(^|\/)\.\.?\/?$/.test(runDir) ? path.resolve(file) : file,
          hint: 'give the folder written by lobes extract or lobes merge',
        });
      if (e.code === 'ENOTDIR')
        return new LobesError('not a lobes run: not a folder', { file: runDir,
          hint: 'give the folder written by lobes extract or lobes merge' });
      return systemError(e, file) ?? `manifest is not valid JSON (${e.message})`;
    },
    invalid: (msg) => `manifest is not valid JSON (${msg})`,
  });
  if (!m || m.format !== 'lobes-run')
    throw new LobesError('not a lobes run manifest (format is not "lobes-run")', { file });
  if (m.formatVersion > FORMAT_VERSION) {
    throw new LobesError(
      `run format version ${m.formatVersion} is newer than this lobes understands (${FORMAT_VERSION})`,
      { file, hint: 'upgrade lobes' },
    );
  }
  return m;
}

/** samples.jsonl's text: one line per sample, in row order (deterministic key order). */
export function samplesJsonl(rows: SampleRow[]): string {
  let s = '';
  for (const r of rows) {
    const o: Record<string, unknown> = { index: r.index, id: r.id, labels: r.labels, tokens: r.tokens,
      truncated: r.truncated };
    if (r.text !== undefined) o.text = r.text;
    if (r.provenance !== undefined) o.provenance = r.provenance;
    s += JSON.stringify(o) + '\n';
  }
  return s;
}

/** sha256 of text as UTF-8. */
export function sha256Text(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

/** sha256 of the samples.jsonl these rows make (recorded in the manifest as samplesSha256). */
export function samplesSha256(rows: SampleRow[]): string {
  return sha256Text(samplesJsonl(rows));
}

/** Write RUN/samples.jsonl; returns its sha256. */
export function writeSamples(runDir: string, rows: SampleRow[]): string {
  const text = samplesJsonl(rows);
  writeFileAtomicSync(path.join(runDir, SAMPLES), text);
  return sha256Text(text);
}

/**
 * Read RUN/samples.jsonl; every row must carry its index, a string id and labels. With
 * `expectSha256` (the manifest's samplesSha256) the file must hash to it: a table that was
 * edited, truncated or replaced is refused.
 */
export function readSamples(runDir: string, expectSha256?: string): SampleRow[] {
  const file = path.join(runDir, SAMPLES);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e: any) {
    throw new LobesError(`samples table is missing (${e.code ?? e.message})`, { file,
      hint: 'rerun the lobes extract command with --repair to write it again' });
  }
  if (expectSha256 !== undefined) {
    const got = sha256Text(bytes);
    if (got !== expectSha256) {
      throw new LobesError(
        `samples table does not match its run: sha256 ${got.slice(0, 12)}… but the manifest records ${
          expectSha256.slice(0, 12)
        }… (edited, truncated or replaced)`,
        {
          file,
          hint: 'rerun the lobes extract command with --repair to write it again',
        },
      );
    }
  }
  const text = bytes.toString('utf8');
  const rows: SampleRow[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] === '') continue;
    let r: SampleRow;
    try {
      r = JSON.parse(lines[i]);
    } catch (e: any) {
      throw new LobesError(`invalid JSON (${e.message})`, { file, where: `line ${i + 1}` });
    }
    if (r.index !== rows.length || typeof r.id !== 'string' || !r.labels || typeof r.labels !== 'object') {
      throw new LobesError(`sample row must have index ${rows.length}, a string id and labels`, { file,
        where: `line ${i + 1}` });
    }
    rows.push(r);
  }
  return rows;
}
