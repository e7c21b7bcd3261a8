/**
 * `lobes cluster` in the report (src/analysis/types.ts ReportModule): RUN/cluster (or
 * `--cluster-dir`, or the folder of `--by AXIS`) read through its store, and the payload of the
 * t-SNE map and its separation metrics.
 */
import * as path from 'node:path';
import type { ReportModule, ReportRun } from '../analysis/types.js';
import type { RunPayload, ScatterPayload } from '../report/types.js';
import { axisFits } from '../report/islands.js';
import { readLabelOverlays } from '../store/labels.js';
import { clusterDir, clusterDirs, readCluster, type ClusterData } from './store.js';

const round = (v: number, d: number) => {
  const f = 10 ** d;
  return Math.round(v * f) / f;
};

/** Escape for Plotly's text renderer (which reads a small HTML subset): show the string as typed. */
export function plotlyText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Hover text for one item: escaped, wrapped at ~70 characters, cut at 600. */
export function hoverText(id: string, label: string, text: string | undefined): string {
  const lines = [`<b>${plotlyText(label)}</b>`, plotlyText(id)];
  if (text) {
    let t = text.length > 600 ? text.slice(0, 600) + '…' : text;
    t = t.replace(/\s+/g, ' ').trim();
    let line = '';
    for (const word of t.split(' ')) {
      if (line && line.length + word.length + 1 > 70) {
        lines.push(plotlyText(line));
        line = '';
      }
      line = line ? `${line} ${word}` : word;
    }
    if (line) lines.push(plotlyText(line));
  }
  return lines.join('<br>');
}

/** The map's payload: each point's place, group and hover text, the other label axes it can be coloured by, and how well its islands fit each. */
export function scatterPayload(c: ClusterData, model: ReportRun): ScatterPayload {
  const { coords } = c;
  const groups: string[] = c.metrics?.classes?.slice() ?? [];
  const index = new Map(groups.map((g, i) => [g, i]));
  for (const l of coords.labels) if (!index.has(l)) index.set(l, groups.push(l) - 1);
  const n = coords.ids.length;
  const x = new Array<number>(n);
  const y = new Array<number>(n);
  const g = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    x[i] = round(coords.xy[2 * i]!, 4);
    y[i] = round(coords.xy[2 * i + 1]!, 4);
    g[i] = index.get(coords.labels[i]!)!;
  }
  // Item text: from coords.json, else from the run's samples (SampleRow.text) by id.
  let text: (string | undefined)[] | undefined = coords.text;
  if (!text) {
    const byId = new Map<string, string>();
    for (const s of model.samples as (typeof model.samples[number] & { text?: string })[])
      if (typeof s.text === 'string') byId.set(s.id, s.text);
    if (byId.size) text = coords.ids.map((id) => byId.get(id));
  }
  const hover = coords.ids.map((id, i) => hoverText(id, coords.labels[i]!, text?.[i]));
  const by = c.settings?.by ?? 'label';
  const axes = labelAxes(model, coords.ids, by);
  const fits = axisFits(x, y, [{ axis: by, codes: Int32Array.from(g), classes: groups.length },
    ...axes.map((a) => ({ axis: a.axis, codes: Int32Array.from(a.v), classes: a.values.length }))]);
  return { groups, g, x, y, hover, by, axes, fits };
}

/** Most values a label axis may have and still be offered as the map's colouring. */
const MAX_AXIS_VALUES = 40;

/**
 * Every label axis of the run's samples and label overlays (RUN/labels, e.g. `correct` from lobes
 * eval label) other than `by`, as value indices per map point, when it has 2 to MAX_AXIS_VALUES values.
 */
function labelAxes(model: ReportRun, ids: string[], by: string): { axis: string; values: string[]; v: number[] }[] {
  const byId = new Map(model.samples.map((s) => [s.id, s.labels]));
  const names: string[] = [];
  for (const s of model.samples) for (const k of Object.keys(s.labels)) if (!names.includes(k)) names.push(k);
  const overlays = model.samples.length ? readLabelOverlays(model.dir) : new Map();
  for (const k of overlays.keys()) if (!names.includes(k)) names.push(k);
  const out: { axis: string; values: string[]; v: number[] }[] = [];
  for (const axis of names) {
    if (axis === by) continue;
    const o = overlays.get(axis);
    const values: string[] = [];
    const index = new Map<string, number>();
    const v = ids.map((id) => {
      const val = o ? o.values[id] ?? o.default : byId.get(id)?.[axis] ?? '(none)';
      let k = index.get(val);
      if (k === undefined) index.set(val, k = values.push(val) - 1);
      return k;
    });
    if (values.length >= 2 && values.length <= MAX_AXIS_VALUES) out.push({ axis, values, v });
  }
  return out;
}

export const REPORT: ReportModule<ClusterData, Pick<RunPayload, 'scatter' | 'cluster'>> = {
  // Named by --cluster-dir: results that do not belong are errors; found in the run (RUN/cluster, or by --by), left out with a note.
  load: ({ runDir, manifest, samples, given, by }) => {
    if (given !== undefined) return readCluster(path.resolve(given), runDir, manifest, samples, true);
    return readCluster(by === undefined ? clusterDir(runDir) : clusterDir(runDir, { manifest, by }), runDir, manifest,
      samples, false);
  },
  payload: (c, run) => ({ scatter: scatterPayload(c, run), cluster: { metrics: c.metrics, settings: c.settings } }),
  absent: { scatter: null, cluster: null },
  axes: {
    dirs: clusterDirs,
    read: (dir, { runDir, manifest, samples }) => readCluster(dir, runDir, manifest, samples, false),
    dir: (c) => c.dir,
    axis: (c) => c.settings?.by,
    shown: (c, rel) => (c.settings
      ? `the map and separation by ${c.settings.by} at ${c.settings.point} (${rel(c.dir)}/)`
      : null),
  },
};
