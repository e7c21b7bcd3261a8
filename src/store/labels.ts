/**
 * Label overlays: label axes added to a finished run after extraction, one file per axis
 * (RUN/labels/AXIS.json), without touching the run's manifest, samples or chunks. `lobes eval
 * label` writes the axis `correct` (correct / wrong / unevaluated per sample id) from an
 * evaluation of the same items; the run reader then offers it like any other axis, so
 * `lobes cluster RUN --by correct` and `lobes wanda RUN --by correct` need nothing else.
 *
 *   { "format": "lobes-labels", "axis": "correct", "default": "unevaluated",
 *     "source": { ... where the values came from ... }, "values": { "<sample id>": "correct", ... } }
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { readJsonFile, writeJsonAtomic } from './json.js';

export const LABELS_DIR = 'labels';

export interface LabelOverlay {
  format: 'lobes-labels';
  /** lobes' marker: the command that wrote the overlay (absent in overlays of an older lobes, and in ones written by hand). */
  writer?: { tool: 'lobes'; command: string; lobesVersion: string };
  /** Lineage (src/store/lineage.ts): what the values were computed from, by content. */
  inputs?: { name: string; sha256: string; from?: string }[];
  axis: string;
  /** Value of samples the overlay does not list. */
  default: string;
  source: Record<string, unknown>;
  values: Record<string, string>;
}

const AXIS_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** RUN/labels/AXIS.json. */
export function overlayPath(runDir: string, axis: string): string {
  if (!AXIS_NAME.test(axis))
    throw new LobesError(`label axis name ${JSON.stringify(axis)} is not allowed (letters, digits, '_', '.', '-')`);
  return path.join(runDir, LABELS_DIR, `${axis}.json`);
}

/**
 * Whether an existing overlay file was written by lobes: its writer marker, or (an older lobes,
 * which wrote none) the record of the evaluation it came from that only lobes eval label writes.
 */
export function isLobesOverlay(file: string): boolean {
  const o = readJsonFile(file, { fallback: null });
  if (!o || typeof o !== 'object' || o.format !== 'lobes-labels') return false;
  if (o.writer?.tool === 'lobes') return true;
  return typeof o.source?.eval === 'string' && typeof o.source?.recordsSha256 === 'string';
}

/**
 * Write (or replace) an overlay atomically. An existing RUN/labels/AXIS.json that lobes did not
 * write (a researcher's own labels) is never replaced: refused in one line before anything is
 * written. Returns the file.
 */
export function writeLabelOverlay(runDir: string, o: LabelOverlay): string {
  const file = checkOverlayWritable(runDir, o.axis);
  writeJsonAtomic(file, o);
  return file;
}

/** RUN/labels/AXIS.json, after refusing it when it exists and lobes did not write it (call before any work). */
export function checkOverlayWritable(runDir: string, axis: string): string {
  const file = overlayPath(runDir, axis);
  if (existsSync(file) && !isLobesOverlay(file)) {
    throw new LobesError(
      `a label overlay ${JSON.stringify(axis)} exists and was not written by lobes; it is not replaced`,
      { file, hint: `give another name with ${opt('axis')}, or move the file away`, code: 'E_EXISTS' },
    );
  }
  return file;
}

/** sha256 of RUN/labels/AXIS.json as it is now, or null when it is absent. */
export function overlaySha256(runDir: string, axis: string): string | null {
  try {
    return createHash('sha256').update(readFileSync(overlayPath(runDir, axis))).digest('hex');
  } catch {
    return null;
  }
}

/** Every overlay of a run, by axis (none when the folder is absent). */
export function readLabelOverlays(runDir: string): Map<string, LabelOverlay> {
  const dir = path.join(runDir, LABELS_DIR);
  const out = new Map<string, LabelOverlay>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    const file = path.join(dir, name);
    const o: LabelOverlay = readJsonFile(file, { unreadable: (e) => `label overlay is not valid JSON (${e.message})`,
      invalid: (msg) => `label overlay is not valid JSON (${msg})`,
      hint: 'delete it and write it again (lobes eval label)' });
    if (!o || o.format !== 'lobes-labels' || typeof o.axis !== 'string' || `${o.axis}.json` !== name ||
      typeof o.default !== 'string' || typeof o.values !== 'object' || o.values === null)
    {
      throw new LobesError('not a lobes label overlay (format, axis matching the file name, default and values needed)',
        { file });
    }
    out.set(o.axis, o);
  }
  return out;
}
