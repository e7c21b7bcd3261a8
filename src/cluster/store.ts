/**
 * The cluster results folder, RUN/cluster/ or --out DIR (src/cluster/types.ts,
 * docs/run-format.md): its file names, how `lobes cluster` writes them and how the report reads
 * them back. No other module names these files.
 *
 *   settings.json   ClusterSettings (with the provenance of the run it read)
 *   coords.json     ClusterCoords (coords.csv: id,label,x,y)
 *   metrics.json    ClusterMetrics (metrics.csv: one row per space and metric)
 *   sweep.json      optional: probe accuracy per layer
 *   items.json      ClusterItems: per-item predictions of the metric sample
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import { csvField } from '../util/csv.js';
import { writeFileAtomicSync } from '../util/io.js';
import { need, isObj, isStrArr, writeJsonAtomic } from '../store/json.js';
import { checkOutputCurrent, readOutputJson } from '../store/lineage.js';
import { analysisFolderName, analysisFolders } from '../store/analyses.js';
import { readOutputMarker } from '../util/output.js';
import type { RunManifest, SampleRow } from '../store/types.js';
import type { ClusterCoords, ClusterItems, ClusterMetrics, ClusterSettings } from './types.js';

/** The folder of a run that `lobes cluster` writes when no --out is given. */
export const CLUSTER_DIR = 'cluster';
const SETTINGS = 'settings.json';
const COORDS = 'coords.json';
const COORDS_CSV = 'coords.csv';
const ITEMS = 'items.json';
const METRICS = 'metrics.json';
const METRICS_CSV = 'metrics.csv';
const SWEEP = 'sweep.json';

/** The capture point cluster reads without --point. */
const DEFAULT_POINT = 'final.hidden';

/**
 * The cluster folder of a run: RUN/cluster for the run's default axis at final.hidden, else
 * RUN/cluster.by-AXIS, RUN/cluster.at-POINT or both (src/store/analyses.ts); RUN/cluster when
 * no key is given.
 */
export function clusterDir(runDir: string,
  key?: { manifest: Pick<RunManifest, 'dataset'>; by: string; point?: string }): string
{
  return path.join(runDir,
    key
      ? analysisFolderName(CLUSTER_DIR, key.manifest, { by: key.by, point: key.point, defaultPoint: DEFAULT_POINT })
      : CLUSTER_DIR);
}

/** Every cluster folder of a run (RUN/cluster and its per-axis and per-point siblings). */
export function clusterDirs(runDir: string): string[] {
  return analysisFolders(runDir, CLUSTER_DIR, 'cluster');
}

/** What one cluster result holds; items and the tables are optional (the synthetic runs leave them out). */
export interface ClusterOutputs {
  settings: ClusterSettings;
  coords: ClusterCoords;
  metrics: ClusterMetrics;
  items?: ClusterItems;
  /** metrics.csv as text. */
  metricsCsv?: string;
  /** Write coords.csv. */
  coordsCsv?: boolean;
}

/** Write a cluster result's files into `dir` (a temporary folder that writeDirAtomic swaps in, or a synthetic run's). */
export function writeClusterFiles(dir: string, o: ClusterOutputs): void {
  writeJsonAtomic(path.join(dir, SETTINGS), o.settings, 2);
  writeJsonAtomic(path.join(dir, COORDS), o.coords);
  if (o.coordsCsv) {
    const c = o.coords;
    const csv = ['id,label,x,y'];
    for (let i = 0; i < c.ids.length; i++)
      csv.push([csvField(c.ids[i]), csvField(c.labels[i]), c.xy[2 * i], c.xy[2 * i + 1]].join(','));
    writeFileAtomicSync(path.join(dir, COORDS_CSV), csv.join('\n') + '\n');
  }
  if (o.items) writeJsonAtomic(path.join(dir, ITEMS), o.items);
  if (o.metricsCsv !== undefined) writeFileAtomicSync(path.join(dir, METRICS_CSV), o.metricsCsv);
  if (o.metrics.sweep) writeJsonAtomic(path.join(dir, SWEEP), o.metrics.sweep, 2);
  writeJsonAtomic(path.join(dir, METRICS), o.metrics, 2);
}

/** What the report reads of a cluster result. */
export interface ClusterData {
  dir: string;
  settings: ClusterSettings | null;
  coords: ClusterCoords;
  metrics: ClusterMetrics | null;
  /** Per-item predictions of the metric sample (items.json; null when absent, e.g. older results). */
  items: ClusterItems | null;
}

/**
 * The cluster result in `cd` checked against its contract and against the run `runDir`
 * (checkProvenance: another run's result throws a ProvenanceError); null when `cd` holds none,
 * unless it was given by name (`given`), which is an error.
 */
export function readCluster(cd: string, runDir: string, manifest: RunManifest, samples: SampleRow[], given: boolean):
  | ClusterData
  | null
{
  const cf = path.join(cd, COORDS);
  if (!existsSync(cf)) {
    if (given)
      throw new LobesError(`no cluster results here (${COORDS} is missing)`, { file: cd,
        hint: 'give the folder lobes cluster --out wrote' });
    return null;
  }
  const sf = path.join(cd, SETTINGS);
  if (!existsSync(sf))
    throw new LobesError(`cluster results have no ${SETTINGS}, so nothing says which run they belong to`, { file: cd,
      hint: 'run lobes cluster on this run again' });
  // Every file is read only as lobes cluster wrote it (lineage: the sha256 in the folder's marker).
  const marker = readOutputMarker(cd);
  const settings = readOutputJson(cd, SETTINGS, marker);
  need(isObj(settings), sf, 'settings', 'expected a JSON object');
  checkOutputCurrent(cd, { runDir, manifest }, 'the cluster results', sf, 'lobes cluster', settings.provenance);
  const c = readOutputJson(cd, COORDS, marker);
  need(isObj(c) && isStrArr(c.ids) && isStrArr(c.labels) && Array.isArray(c.xy), cf, 'ids',
    'expected "ids", "labels" (strings) and "xy" (numbers)');
  need(c.labels.length === c.ids.length, cf, 'labels', `${c.labels.length} labels for ${c.ids.length} ids`);
  need(c.xy.length === 2 * c.ids.length, cf, 'xy',
    `${c.xy.length} coordinates for ${c.ids.length} points (expected x, y interleaved)`);
  for (let i = 0; i < c.xy.length; i++) {
    if (typeof c.xy[i] !== 'number' || !Number.isFinite(c.xy[i]))
      throw new LobesError(`coordinate ${JSON.stringify(c.xy[i])} is not a finite number`, { file: cf,
        where: `xy[${i}]` });
  }
  if (c.text !== undefined)
    need(isStrArr(c.text) && c.text.length === c.ids.length, cf, 'text', `"text" must hold one string per point`);
  if (samples.length) {
    // items without a value on the axis were left out (settings.leftOut): the points are the others, in run order
    const left = isObj(settings.leftOut) && typeof settings.leftOut.count === 'number' ? settings.leftOut.count : 0;
    need(c.ids.length === samples.length - left, cf, 'ids',
      `${c.ids.length} points but the run has ${samples.length} samples${
        left ? `, ${left} of them left out` : ''
      } (results of another run?)`);
    const ids = new Set<string>(c.ids);
    const kept = left ? samples.filter((x) => ids.has(x.id)) : samples;
    need(kept.length === c.ids.length, cf, 'ids',
      `${c.ids.length - kept.length} points are not samples of the run (results of another run?)`);
    const at = c.ids.findIndex((id: string, i: number) => id !== kept[i]!.id);
    need(at < 0, cf, `ids[${at}]`,
      `point ${JSON.stringify(c.ids[at])} is not the run's sample ${
        JSON.stringify(kept[at]?.id)
      } (results of another run?)`);
  }
  const mf = path.join(cd, METRICS);
  let metrics: ClusterMetrics | null = null;
  if (existsSync(mf)) {
    const m = readOutputJson(cd, METRICS, marker);
    need(isObj(m) && Array.isArray(m.spaces) && isStrArr(m.classes), mf, 'spaces',
      'expected "classes" and "spaces" arrays');
    metrics = m as ClusterMetrics;
  }
  const itf = path.join(cd, ITEMS);
  let items: ClusterItems | null = null;
  if (existsSync(itf)) {
    const it = readOutputJson(cd, ITEMS, marker);
    need(
      isObj(it) && isStrArr(it.ids) && isStrArr(it.classes) && Array.isArray(it.y) && it.y.length === it.ids.length &&
        Array.isArray(it.spaces),
      itf,
      'ids',
      'expected "ids", "classes", "y" (one per id) and "spaces"',
    );
    items = it as ClusterItems;
  }
  return { dir: cd, settings: settings as ClusterSettings, coords: c as ClusterCoords, metrics, items };
}
