/**
 * The small metadata files of a run directory: manifest.json (RunManifest) and
 * samples.jsonl (one SampleRow per line, in row order). Both are written atomically.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import type { RunManifest, SampleRow } from './types.js';
import { MANIFEST, SAMPLES, FORMAT_VERSION } from './layout.js';

/** Write RUN/manifest.json (pretty-printed JSON). */
export function writeManifest(runDir: string, m: RunManifest): void {
  writeFileAtomicSync(path.join(runDir, MANIFEST), JSON.stringify(m, null, 2) + '\n');
}

/** Read and check RUN/manifest.json: a lobes run of a format version this lobes understands. */
export function readManifest(runDir: string): RunManifest {
  const file = path.join(runDir, MANIFEST);
  let m: RunManifest;
  try {
    m = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e: any) {
    if (e.code === 'ENOENT') throw new LobesError('not a lobes run: manifest.json is missing', { file, hint: 'give the folder written by lobes extract or lobes merge' });
    throw new LobesError(`manifest is not valid JSON (${e.message})`, { file });
  }
  if (!m || m.format !== 'lobes-run') throw new LobesError('not a lobes run manifest (format is not "lobes-run")', { file });
  if (m.formatVersion > FORMAT_VERSION) {
    throw new LobesError(`run format version ${m.formatVersion} is newer than this lobes understands (${FORMAT_VERSION})`, { file, hint: 'upgrade lobes' });
  }
  return m;
}

/** One line per sample, in row order (deterministic key order). */
function samplesJsonl(rows: SampleRow[]): string {
  let s = '';
  for (const r of rows) {
    const o: Record<string, unknown> = { index: r.index, id: r.id, labels: r.labels, tokens: r.tokens, truncated: r.truncated };
    if (r.text !== undefined) o.text = r.text;
    if (r.provenance !== undefined) o.provenance = r.provenance;
    s += JSON.stringify(o) + '\n';
  }
  return s;
}

/** Write RUN/samples.jsonl. */
export function writeSamples(runDir: string, rows: SampleRow[]): void {
  writeFileAtomicSync(path.join(runDir, SAMPLES), samplesJsonl(rows));
}

/** Read RUN/samples.jsonl; every row must carry its index, a string id and labels. */
export function readSamples(runDir: string): SampleRow[] {
  const file = path.join(runDir, SAMPLES);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new LobesError(`samples table is missing (${e.code ?? e.message})`, { file });
  }
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
      throw new LobesError(`sample row must have index ${rows.length}, a string id and labels`, { file, where: `line ${i + 1}` });
    }
    rows.push(r);
  }
  return rows;
}
