/**
 * Where a run keeps its analyses: one folder per analysis and per what it was made from, so that
 * `lobes cluster RUN --by correct` adds its result beside the one made `--by aspect` instead of
 * replacing it.
 *
 *   RUN/cluster                              by the run's default axis, at the default point
 *   RUN/cluster.by-correct                   by another label axis
 *   RUN/cluster.at-layers.3.resid_out        at another capture point (cluster)
 *   RUN/cluster.by-correct.at-final.mean     both
 *
 * The default axis is `aspect` when the run's data has one, else its only axis (the axis that
 * cluster and wanda take without --by). Folder names come from axis and hook names, which are
 * already restricted to letters, digits, '_', '.' and '-' (src/store/labels.ts, layout.ts).
 */
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { outputKindOf, type OutputKind } from '../util/output.js';
import type { RunManifest } from './types.js';
import { readJsonFile } from './json.js';

/**
 * The axis whose analyses take the plain folder (RUN/wanda, RUN/cluster): `aspect` if the data
 * has it, else the data's first axis (null: none). Axes added later (eval label's `correct`) and
 * the data's other axes get `.by-AXIS` folders beside it.
 */
export function defaultAxis(manifest: Pick<RunManifest, 'dataset'>): string {
  const axes = manifest.dataset?.axes ?? [];
  // (no axes recorded: the commands' own default, aspect)
  if (axes.includes('aspect') || !axes.length) return 'aspect';
  return axes[0]!;
}

/** A label axis or capture point as one safe part of a folder name: characters other than letters, digits, `_`, `.` and `-` as %XX of their UTF-8 bytes. */
export function folderPart(name: string): string {
  return [...Buffer.from(name, 'utf8')].map((
    b,
  ) => (/[A-Za-z0-9_.-]/.test(String.fromCharCode(b)) && b < 128
    ? String.fromCharCode(b)
    : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
  ).join('');
}

/** What an analysis was made from: its label axis and (for cluster) its capture point. */
export interface AnalysisKey {
  by: string;
  point?: string;
  /** The analysis's own default point (cluster: final.hidden); the point is left out of the name when equal. */
  defaultPoint?: string;
}

/** The folder name of an analysis (`base`: its plain folder, e.g. 'cluster') made from `key`. */
export function analysisFolderName(base: string, manifest: Pick<RunManifest, 'dataset'>, key: AnalysisKey): string {
  let name = base;
  if (key.by !== defaultAxis(manifest)) name += `.by-${folderPart(key.by)}`;
  if (key.point !== undefined && key.point !== key.defaultPoint) name += `.at-${folderPart(key.point)}`;
  return name;
}

/** The folders of a run that hold analyses of `kind` (the plain one and its `.by-`/`.at-` siblings), sorted. */
export function analysisFolders(runDir: string, base: string, kind: OutputKind): string[] {
  let names: string[];
  try {
    names = readdirSync(runDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n === base || n.startsWith(`${base}.by-`) || n.startsWith(`${base}.at-`))
    .map((n) => path.join(runDir, n))
    .filter((d) => {
      try {
        return statSync(d).isDirectory() && outputKindOf(d) === kind;
      } catch {
        return false;
      }
    })
    .sort();
}

/**
 * The settings.json of a result in `dir`, or null when there is none or it cannot be read: only
 * for describing it (what a rerun replaces, which axis a folder the page does not show was made
 * by), never for trusting a result (readers verify it through src/store/lineage.ts).
 */
export function previousSettings(dir: string): Record<string, unknown> | null {
  const s = readJsonFile(path.join(dir, 'settings.json'), { fallback: null });
  return typeof s === 'object' && s !== null && !Array.isArray(s) ? s : null;
}
