/**
 * The logit lens folder, RUN/lens/ or --out DIR (src/lens/types.ts, docs/lens.md): its file
 * names, how `lobes lens` writes them and how the report reads them back. No other module
 * names these files.
 *
 *   settings.json   the head read (norm weight, eps, lm_head), top-k, the run's provenance
 *   lens.json       LensResult: per layer the summary line, per item and layer the top-k,
 *                   entropy, KL to the final layer and the correct option's rank
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { readOutputMarker } from '../util/output.js';
import { need, isObj, writeJsonAtomic } from '../store/json.js';
import { checkOutputCurrent, readOutputJson, type LineageContext } from '../store/lineage.js';
import type { LensData, LensResult } from './types.js';

export type { LensData } from './types.js';

/** The folder of a run that `lobes lens` writes when no --out is given. */
export const LENS_DIR = 'lens';
const SETTINGS = 'settings.json';
const LENS_JSON = 'lens.json';

/** RUN/lens. */
export function lensDir(runDir: string): string {
  return path.join(runDir, LENS_DIR);
}

/** Write a lens result's files into `dir` (a temporary folder that writeDirAtomic swaps in). */
export function writeLensFiles(dir: string, o: { settings: unknown; result: LensResult }): void {
  writeJsonAtomic(path.join(dir, LENS_JSON), o.result);
  writeJsonAtomic(path.join(dir, SETTINGS), o.settings, 2);
}

/**
 * The lens results in `dir` for the run in `ctx`, read only as lobes lens wrote them (the sha256
 * its marker records) and only when current (every input it recorded, the run, its chunks and
 * the model, the same now; else a ProvenanceError naming the first that differs); null when
 * `dir` holds none.
 */
export function readLens(dir: string, ctx: LineageContext): LensData | null {
  const file = path.join(dir, LENS_JSON);
  if (!existsSync(file)) return null;
  const marker = readOutputMarker(dir);
  const sfile = path.join(dir, SETTINGS);
  const settings = readOutputJson(dir, SETTINGS, marker);
  need(isObj(settings), sfile, '', 'expected an object');
  checkOutputCurrent(dir, ctx, 'the logit lens results', sfile, 'lobes lens', settings.provenance);
  const r = readOutputJson(dir, LENS_JSON, marker);
  need(isObj(r) && r.format === 'lobes-lens', file, 'format', 'expected "lobes-lens"');
  need(r.version === 1, file, 'version', `version ${JSON.stringify(r.version)} is not one this lobes reads (1)`);
  need(Array.isArray(r.layers) && Array.isArray(r.summary) && r.summary.length === r.layers.length, file, 'summary',
    'expected one summary line per layer');
  need(Array.isArray(r.items), file, 'items', 'expected an array');
  return { dir, settings, result: r as LensResult };
}
