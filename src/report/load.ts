/**
 * Load everything a report shows from a run directory into one ReportModel:
 * the manifest and samples (the run contract, src/store/types.ts), RUN/wanda/ (src/wanda/types.ts)
 * and RUN/cluster/ (src/cluster/types.ts). Analyses that were not run are `null`; files that
 * exist but break their contract are errors naming the file and the place. An analysis is
 * shown only if its recorded provenance (run identity, samples table, chunk files) matches
 * the run (checkProvenance, src/store/provenance.ts): results of another run, or of this run
 * before it was re-extracted, are refused with the reason.
 */
import { existsSync, readFileSync, statSync, realpathSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError, UsageError, opt } from '../util/errors.js';
import { PACKAGE_ROOT } from '../version.js';
import type { RunManifest, SampleRow } from '../store/types.js';
import { readManifest, readSamples } from '../store/index.js';
import { ProvenanceError, sameModel } from '../store/provenance.js';
import { evalDirOf, evalFile, isEvalDir, readCompleteEval, readEvalRecords, type EvalData } from '../eval/store.js';
import { readWanda, wandaDir, wandaDirs, type WandaData } from '../wanda/store.js';
import { clusterDir, clusterDirs, readCluster, type ClusterData } from '../cluster/store.js';
import { hasRunManifest, hasSamples } from '../store/layout.js';
import { overlayPath, readLabelOverlays } from '../store/labels.js';
import { previousSettings } from '../store/analyses.js';
import { readJsonFile } from '../store/json.js';
import type { WandaMatrix } from '../wanda/types.js';
import { loadAttend, type AttendData } from './attend.js';
import { attendDirOf, attendSummaryFile, isAttendDir, isOldAttendDir } from '../attend/store.js';
import type { AblateData } from './ablate.js';
import type { ControlInfo } from '../store/types.js';
import { ANALYSES, flagOption } from '../analysis/registry.js';
import type { AnalysisReport } from '../analysis/types.js';

export interface ReportModel {
  /** Absolute run directory. */
  dir: string;
  /** Short display name (the folder name unless given). */
  name: string;
  manifest: RunManifest;
  samples: SampleRow[];
  wanda: WandaData | null;
  cluster: ClusterData | null;
  /** The evaluation of the run's items: RUN/eval/, else the one `lobes eval label` linked; the folder itself for an evaluation folder. */
  eval?: EvalData | null;
  /** True when the run's model is the package's random-weights demo model (models/tiny-llama). */
  randomModel: boolean;
  /** `lobes attend` results (RUN/attend, or --attend-dir), when present. */
  attend?: AttendData | null;
  /** The random-weights control this run was extracted through (manifest model.control), if any. */
  control: ControlInfo | null;
  /** Sections left out because they do not belong to the run as it is now, one line each (why). */
  omitted: string[];
  /** Which analyses of the run the page shows (label axis, capture point, folder) and which others the run holds, one line each. */
  shown?: string[];
  /** `lobes ablate` results given with --ablate-dir (src/report/ablate.ts). */
  ablate?: AblateData | null;
  /** The run's analyses by its other label axes (RUN/cluster.by-AXIS, RUN/wanda.by-AXIS) that belong to it, for their verdict tables. */
  otherAxes?: { by: string; cluster: ClusterData | null; wanda: WandaData | null }[];
  /** The analyses that load through the contract (src/analysis/types.ts `report`), by payload key; absent when none is present. */
  analyses?: Record<string, unknown>;
}

export interface LoadOptions {
  /** Display name (default: the folder name). */
  name?: string;
  /** Cluster results folder (default RUN/cluster, or the folder of `by`). */
  clusterDir?: string;
  /** The label axis whose analyses are shown (RUN/wanda.by-AXIS, RUN/cluster.by-AXIS; default the run's default axis: RUN/wanda, RUN/cluster). */
  by?: string;
  /** `lobes attend` results folder (default RUN/attend when it holds them). */
  attendDir?: string;
  /** `lobes ablate` results folder to show with the run (report/ablate.ts; attached by reportPage). */
  ablateDir?: string;
  /** The folder of any registered analysis named by its report flag (`--lens-dir` → lensDir; src/analysis/registry.ts). */
  [flag: `${string}Dir`]: string | undefined;
}

/** The package's built-in random-weights model folder. */
export const BUILTIN_MODEL_DIR = path.join(PACKAGE_ROOT, 'models', 'tiny-llama');

/**
 * Manifest and samples through the store's readers (src/store). The report reads no activations,
 * so it opens runs whose activations are gone or that were never extracted here (e.g. copied results).
 */
export function readRunBasics(dir: string): { manifest: RunManifest; samples: SampleRow[] } {
  const manifest = readManifest(dir);
  const samples = hasSamples(dir) ? readSamples(dir, manifest.samplesSha256) : [];
  return { manifest, samples };
}

function sha256File(file: string): string | null {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return null;
  }
}

/** Whether a manifest's model is the package's random-weights model (by path, else by graph hash). */
export function isBuiltinRandomModel(manifest: RunManifest, runDir: string): boolean {
  const given = manifest?.model?.dir;
  if (typeof given !== 'string' || !given) return false;
  const canon = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const builtin = canon(BUILTIN_MODEL_DIR);
  if (canon(given) === builtin || canon(path.resolve(runDir, given)) === builtin) return true;
  const graph = path.join(BUILTIN_MODEL_DIR, 'model.onnx');
  if (manifest.model.graphSha256 && existsSync(graph) && statSync(graph).size < 64 * 1024 * 1024) {
    return sha256File(graph) === manifest.model.graphSha256;
  }
  return false;
}

/** A complete evaluation folder's manifest and summary, or null when `dir` holds none (src/eval/store.ts). */
export const loadEval = readCompleteEval;

export type { WandaData, ClusterData, EvalData };

/** Attend results for a run: --attend-dir (must hold them), else RUN/attend when it does. */
function loadAttendOf(runDir: string, given: string | undefined): AttendData | null {
  if (given) return loadAttend(given);
  const d = attendDirOf(runDir);
  if (!isAttendDir(d) && !isOldAttendDir(d)) return null;
  // Found in the run: results that fail their verified read (edited, incomplete) are left out with the reason.
  try {
    return loadAttend(d);
  } catch (e) {
    if (e instanceof LobesError && !(e instanceof ProvenanceError)) throw new ProvenanceError(e.message, {});
    throw e;
  }
}

/**
 * The evaluation linked to a run: RUN/eval/, else the source of the `correct` label overlay. It
 * is shown only when it belongs to the run: the same model (graph, or the same GGUF), items
 * that are the run's samples, records that still hash to eval.json, and, through an overlay,
 * the very records the overlay was made from.
 */
function linkedEval(runDir: string, manifest: RunManifest, samples: SampleRow[]): EvalData | null {
  const inside = loadEval(evalDirOf(runDir));
  if (inside) {
    evalBelongs(inside, manifest, samples, evalDirOf(runDir));
    return inside;
  }
  const overlay = overlayPath(runDir, 'correct');
  if (!existsSync(overlay)) return null;
  const o = readJsonFile(overlay);
  const src = o?.source?.eval;
  if (typeof src !== 'string' || !isEvalDir(src)) return null;
  const ev = loadEval(src);
  if (!ev) return null;
  evalBelongs(ev, manifest, samples, src);
  const recorded = o?.source?.recordsSha256;
  if (typeof recorded === 'string' && recorded !== ev.manifest.files?.records?.sha256) {
    throw new ProvenanceError('the evaluation the `correct` overlay names has other records than the overlay was made from (it was run again since)', { file: overlay, hint: 'run lobes eval label again' });
  }
  return ev;
}

function evalBelongs(ev: EvalData, manifest: RunManifest, samples: SampleRow[], dir: string): void {
  const file = evalFile(dir, 'manifest');
  if (!sameModel(ev.manifest.model, manifest.model)) {
    throw new ProvenanceError(`the evaluation scored another model (${ev.manifest.model?.dir ?? 'unknown'}) than the run captured (${manifest.model.dir})`, { file, hint: 'evaluate the run\'s model, or report the evaluation folder on its own' });
  }
  // Verified read of the records the loaded eval.json lists: records edited after the evaluation
  // are refused, as lobes eval label refuses them.
  let ids: Set<string>;
  try {
    const recorded = ev.manifest.files?.records;
    if (!recorded) throw new LobesError('eval.json lists no records file', { file });
    ids = new Set(readEvalRecords(dir, recorded).map((r) => r.id));
  } catch (e) {
    if (e instanceof LobesError) throw new ProvenanceError(e.message, {});
    throw e;
  }
  if (samples.length && !samples.some((s) => ids.has(s.id))) {
    throw new ProvenanceError(`no item of the evaluation (${ev.manifest.dataset?.spec ?? 'unknown data'}) is a sample of the run (${manifest.dataset.spec})`, { file, hint: 'evaluate the data the run extracted' });
  }
}

/** Attend results belong to a run when they read the same model and some of the run's samples. */
function attendBelongs(a: AttendData, manifest: RunManifest, samples: SampleRow[]): void {
  const file = attendSummaryFile(a.dir);
  if (!sameModel(a.summary.model, manifest.model)) {
    throw new ProvenanceError(`the attention was read from another model (${a.summary.model?.dir ?? 'unknown'}) than the run captured (${manifest.model.dir})`, { file, hint: 'run lobes attend with the run\'s model' });
  }
  const ids = new Set(samples.map((s) => s.id));
  if (samples.length && !a.items.some((it) => ids.has(it.id))) {
    throw new ProvenanceError(`no item of the attention results (${a.summary.input?.spec ?? 'unknown input'}) is a sample of the run (${manifest.dataset.spec})`, { file, hint: 'run lobes attend on the data the run extracted' });
  }
}

function withAttendCheck(a: AttendData | null, manifest: RunManifest, samples: SampleRow[]): AttendData | null {
  if (a) attendBelongs(a, manifest, samples);
  return a;
}

/** A section, or null with the reason added to `omitted` when it does not belong to the run. */
export function section<T>(omitted: string[], what: string, load: () => T | null): T | null {
  try {
    return load();
  } catch (e) {
    if (!(e instanceof ProvenanceError)) throw e;
    omitted.push(`${what} left out: ${e.message}`);
    return null;
  }
}

/** A report model for an evaluation folder alone (lobes report EVAL_DIR, lobes compare EVAL_A EVAL_B). */
function evalOnly(abs: string, ev: EvalData, opts: LoadOptions): ReportModel {
  const m = ev.manifest;
  const manifest = { format: 'lobes-eval', createdAt: m.createdAt, lobesVersion: m.lobesVersion, model: m.model, dataset: { spec: m.dataset?.spec }, complete: true } as unknown as RunManifest;
  return { dir: abs, name: opts.name ?? path.basename(abs), manifest, samples: [], wanda: null, cluster: null, eval: ev, randomModel: isBuiltinRandomModel(manifest, abs), control: m.model?.control ?? null, omitted: [] };
}

/** Load a run directory (or an evaluation folder) for the report. */
export async function loadRun(dir: string, opts: LoadOptions = {}): Promise<ReportModel> {
  const abs = path.resolve(dir);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) {
    throw new LobesError('run directory not found', { file: dir, hint: 'pass the folder written by lobes extract' });
  }
  if (!hasRunManifest(abs)) {
    const ev = loadEval(abs);
    if (ev) return evalOnly(abs, ev, opts);
  }
  const { manifest, samples } = readRunBasics(abs);
  const omitted: string[] = [];
  const by = opts.by;
  if (by !== undefined) checkAxis(abs, manifest, samples, by);
  const wd = by === undefined ? wandaDir(abs) : wandaDir(abs, { manifest, axis: by });
  const cd = opts.clusterDir !== undefined ? path.resolve(opts.clusterDir) : by === undefined ? clusterDir(abs) : clusterDir(abs, { manifest, by });
  const wanda = section(omitted, 'the neuron regions (wanda)', () => readWanda(abs, manifest, wd));
  // Results asked for by name (--cluster-dir, --attend-dir) that do not belong are errors; found in the run, they are left out with a note.
  const cluster = opts.clusterDir !== undefined ? readCluster(cd, abs, manifest, samples, true) : section(omitted, 'the cluster results', () => readCluster(cd, abs, manifest, samples, false));
  const analyses = await contractAnalyses(abs, manifest, samples, opts, omitted);
  return {
    dir: abs,
    name: opts.name ?? path.basename(abs),
    manifest,
    samples,
    wanda,
    cluster,
    shown: shownAnalyses(abs, wanda, cluster, by),
    otherAxes: otherAxes(abs, manifest, samples, cluster?.settings?.by ?? wanda?.settings.by ?? by),
    eval: section(omitted, 'the evaluation', () => linkedEval(abs, manifest, samples)),
    randomModel: isBuiltinRandomModel(manifest, abs),
    attend: opts.attendDir !== undefined ? withAttendCheck(loadAttendOf(abs, opts.attendDir), manifest, samples) : section(omitted, 'the attention results', () => withAttendCheck(loadAttendOf(abs, undefined), manifest, samples)),
    control: manifest.model?.control ?? null,
    omitted,
    ...(analyses ? { analyses } : {}),
  };
}

/**
 * The registered analyses that load through the contract (`report` in their declaration): each
 * from the folder its report flag names (an error when it does not belong to the run), else from
 * its folder in the run (left out with the reason when it does not belong). Null when none is present.
 */
async function contractAnalyses(abs: string, manifest: RunManifest, samples: SampleRow[], opts: LoadOptions, omitted: string[]): Promise<Record<string, unknown> | null> {
  const out: Record<string, unknown> = {};
  for (const a of ANALYSES) {
    const r: AnalysisReport | undefined = 'report' in a ? a.report : undefined;
    if (!r) continue;
    const given = 'reportFlag' in a && a.reportFlag ? opts[flagOption(a.reportFlag.name) as `${string}Dir`] : undefined;
    let data: unknown;
    if (given !== undefined) data = await r.load(abs, manifest, samples, path.resolve(given));
    else {
      try {
        data = await r.load(abs, manifest, samples, undefined);
      } catch (e) {
        if (!(e instanceof ProvenanceError)) throw e;
        omitted.push(`${r.what} left out: ${e.message}`);
        data = null;
      }
    }
    if (data !== null && data !== undefined) out[r.payloadKey] = r.payload(data);
  }
  return Object.keys(out).length ? out : null;
}

export type { WandaMatrix };

/** --by names a label axis of the run (its samples' labels or a label overlay); else a usage error (exit 2) naming the run's axes. */
function checkAxis(abs: string, manifest: RunManifest, samples: SampleRow[], by: string): void {
  const axes = [...new Set([...(manifest.dataset?.axes ?? []), ...samples.flatMap((s) => Object.keys(s.labels ?? {})), ...(samples.length ? readLabelOverlays(abs).keys() : [])])];
  if (axes.includes(by)) return;
  const near = axes.find((a) => a.toLowerCase().startsWith(by.toLowerCase().slice(0, 3)));
  throw new UsageError(`${opt('by', by)}: the run ${abs} has no label axis ${JSON.stringify(by)} (axes: ${axes.join(', ') || 'none'})`, near ? `did you mean ${opt('by', near)}?` : 'name one of the run\'s axes');
}

/**
 * The analyses by the run's label axes other than `shown`: each cluster.by-AXIS and
 * wanda.by-AXIS folder whose settings name another axis, read as the page reads its own (a
 * folder that does not belong to the run is left out, as the page leaves out its own).
 */
function otherAxes(abs: string, manifest: RunManifest, samples: SampleRow[], shown: string | undefined): { by: string; cluster: ClusterData | null; wanda: WandaData | null }[] {
  const axes = new Map<string, { by: string; cluster: ClusterData | null; wanda: WandaData | null }>();
  const of = (d: string) => {
    const b = previousSettings(d)?.by;
    return typeof b === 'string' && b !== shown ? b : null;
  };
  const entry = (b: string) => axes.get(b) ?? axes.set(b, { by: b, cluster: null, wanda: null }).get(b)!;
  const ignored: string[] = [];
  for (const d of clusterDirs(abs)) {
    const b = of(d);
    if (b && !entry(b).cluster) entry(b).cluster = section(ignored, 'cluster', () => readCluster(d, abs, manifest, samples, false));
  }
  for (const d of wandaDirs(abs)) {
    const b = of(d);
    if (b && !entry(b).wanda) entry(b).wanda = section(ignored, 'wanda', () => readWanda(abs, manifest, d));
  }
  return [...axes.values()].filter((a) => a.cluster || a.wanda);
}

/**
 * What the page shows of the run's analyses, and the other wanda and cluster folders the run
 * holds (made by another label axis or at another capture point), each named by what it was
 * made from, with how to show it.
 */
export function shownAnalyses(runDir: string, wanda: WandaData | null, cluster: ClusterData | null, by: string | undefined): string[] {
  const out: string[] = [];
  const rel = (d: string) => path.relative(runDir, d) || '.';
  const parts: string[] = [];
  if (cluster?.settings) parts.push(`the map and separation by ${cluster.settings.by} at ${cluster.settings.point} (${rel(cluster.dir)}/)`);
  if (wanda) parts.push(`the neuron regions by ${wanda.settings.by} (${rel(wanda.dir)}/)`);
  if (parts.length) out.push(`Shown: ${parts.join('; ')}`);
  const showing = new Set([cluster?.dir, wanda?.dir].filter((d): d is string => !!d).map((d) => path.resolve(d)));
  const others = [...clusterDirs(runDir), ...wandaDirs(runDir)].filter((d) => !showing.has(path.resolve(d)));
  if (others.length) {
    // The axis each was made by, from its own settings (informative: which --by shows it).
    const axes = [...new Set(others.map((d) => previousSettings(d)?.by).filter((a): a is string => typeof a === 'string' && a !== (cluster?.settings?.by ?? by)))];
    const how = axes.length ? ` (lobes report ${runDir} --by ${axes[0]}${axes.length > 1 ? ` or --by ${axes.slice(1).join(', --by ')}` : ''}; --cluster-dir for another capture point)` : ' (--cluster-dir DIR shows one of them)';
    out.push(`Also in this run, not shown: ${others.map((d) => `${rel(d)}/`).join(', ')}${how}`);
  }
  return out;
}
