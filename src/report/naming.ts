/**
 * Display names of runs, evaluations and attention results: what a reader recognises (the model
 * and what it read), not the folder a command happened to write (every demo run is called `run`,
 * a converted GGUF lives in a cache folder named by a hash).
 *
 *   name = MODEL[, random-weights control] · COMPOSITION
 *
 * MODEL is the GGUF file's name without `.gguf` when the model was given as a GGUF, else the model
 * folder's name; for a random-weights control, the model it was drawn from. COMPOSITION is the
 * languages of the items (by the `language` label axis, most frequent first, joined with `+`) or
 * else the dataset's name, and the number of items. `--name` replaces the whole name.
 */
import * as path from 'node:path';
import type { ReportModel } from './load.js';
import { modelName, type ModelRecord } from '../store/model-name.js';

export { modelName, type ModelRecord } from '../store/model-name.js';

/** The dataset's short name from its spec: `builtin:social?…` → `social`, `socialeval:/a/b/worldtree_data` → `worldtree_data`. */
export function datasetName(spec: string | undefined): string {
  if (!spec) return 'items';
  const body = spec.replace(/^[a-z]+:/i, '').split('?')[0]!.replace(/[/\\]+$/, '');
  return path.basename(body) || spec;
}

/** "en+zh, 1985 items": the items' languages by frequency (or the dataset's name) and their count. */
export function composition(labels: { language?: string }[], spec: string | undefined): string {
  const counts = new Map<string, number>();
  for (const l of labels) if (typeof l.language === 'string') counts.set(l.language, (counts.get(l.language) ?? 0) + 1);
  const langs = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([l]) => l);
  const what = langs.length ? langs.join('+') : datasetName(spec);
  return labels.length ? `${what}, ${labels.length} item${labels.length === 1 ? '' : 's'}` : what;
}

/** The name of a loaded run (or evaluation folder) built from what it holds. */
export function runName(model: Pick<ReportModel, 'manifest' | 'samples' | 'control' | 'eval'>): string {
  const m = model.manifest as unknown as { model?: ModelRecord; dataset?: { spec?: string } };
  const ctl = model.control || m.model?.control ? ', random-weights control' : '';
  let comp: string;
  if (model.samples.length) comp = composition(model.samples.map((s) => s.labels), m.dataset?.spec);
  else {
    // An evaluation folder: its languages from the summary's per-language rows, and its item count.
    const s = model.eval?.summary as { iae?: { items?: number; macroByLanguage?: Record<string, unknown> };
      mcq?: { items?: number; macroByLanguage?: Record<string, unknown> } } | undefined;
    const t = s?.iae ?? s?.mcq;
    const langs = Object.keys(t?.macroByLanguage ?? {});
    comp = (langs.length ? langs.join('+') : datasetName(m.dataset?.spec)) + (t?.items ? `, ${t.items} items` : '');
  }
  return `${modelName(m.model)}${ctl} · ${comp}`;
}

/** Give a loaded run its display name: `given` (--name) when there is one, else runName. Returns the model. */
export function nameRun<T extends ReportModel>(model: T, given?: string): T {
  model.name = given && given.trim() ? given.trim() : runName(model);
  return model;
}

/**
 * Two names a reader can tell apart: equal names get the shortest trailing part of their folders'
 * paths that differs (`… (a/run)`, `… (b/run)`), and `(2)` when even the folders are the same.
 */
export function distinctNames(names: [string, string], dirs: [string, string]): [string, string] {
  if (names[0] !== names[1]) return names;
  const pa = path.resolve(dirs[0]).split(path.sep).filter(Boolean);
  const pb = path.resolve(dirs[1]).split(path.sep).filter(Boolean);
  if (pa.join('/') === pb.join('/')) return [names[0], `${names[1]} (2)`];
  for (let k = 1; k <= Math.max(pa.length, pb.length); k++) {
    const ta = pa.slice(-k).join('/');
    const tb = pb.slice(-k).join('/');
    if (ta !== tb) return [`${names[0]} (${ta})`, `${names[1]} (${tb})`];
  }
  return [names[0], `${names[1]} (2)`];
}
