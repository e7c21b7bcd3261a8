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
import { LobesError } from '../util/errors.js';
import { PACKAGE_ROOT } from '../version.js';
import { readSafetensorsHeader, readTensorFloat32, type StHeader } from '../formats/safetensors.js';
import type { RunManifest, SampleRow } from '../store/types.js';
import { readManifest, readSamples } from '../store/index.js';
import { checkProvenance, ProvenanceError, sameModel } from '../store/provenance.js';
import { EVAL_MANIFEST } from '../eval/store.js';
import { readVerifiedJsonl } from '../store/records.js';
import type { EvalRecord } from '../eval/types.js';
import type { WandaSettings, WandaRegions, WandaMetrics, WandaMatrix } from '../wanda/types.js';
import type { ClusterSettings, ClusterCoords, ClusterMetrics, ClusterItems } from '../cluster/types.js';
import { isAttendDir, loadAttend, type AttendData } from './attend.js';
import { RUN_ATTEND_DIR, isOldAttendDir } from '../attend/store.js';
import type { ControlInfo } from '../store/types.js';
import type { EvalSummary } from '../eval/summary-types.js';
import type { AblateData } from './ablate.js';

export interface WandaData {
  dir: string;
  settings: WandaSettings;
  regions: WandaRegions;
  metrics: WandaMetrics | null;
  /** Pooled block scores of one group for one matrix, [rowBlocks * colBlocks]; null when pooled.safetensors is absent. */
  pooled: ((group: string, matrix: string) => Float32Array | null) | null;
}

export interface ClusterData {
  dir: string;
  settings: ClusterSettings | null;
  coords: ClusterCoords;
  metrics: ClusterMetrics | null;
  /** Per-item predictions of the metric sample (items.json; null when absent, e.g. older results). */
  items: ClusterItems | null;
}

/** A finished benchmark evaluation (lobes eval): its manifest (eval.json) and summary.json. */
export interface EvalData {
  dir: string;
  manifest: Record<string, any>;
  summary: EvalSummary;
}

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
  /** `lobes ablate` results given with --ablate-dir (src/report/ablate.ts). */
  ablate?: AblateData | null;
}

export interface LoadOptions {
  /** Display name (default: the folder name). */
  name?: string;
  /** Cluster results folder (default RUN/cluster). */
  clusterDir?: string;
  /** `lobes attend` results folder (default RUN/attend when it holds them). */
  attendDir?: string;
  /** `lobes ablate` results folder to show with the run (report/ablate.ts; attached by reportPage). */
  ablateDir?: string;
}

/** The package's built-in random-weights model folder. */
export const BUILTIN_MODEL_DIR = path.join(PACKAGE_ROOT, 'models', 'tiny-llama');

function readJson(file: string): any {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e: any) {
    throw new LobesError(`cannot read (${e.code ?? e.message})`, { file });
  }
  try {
    return JSON.parse(text);
  } catch (e: any) {
    throw new LobesError(`invalid JSON: ${String(e.message).split('\n')[0]}`, { file });
  }
}

function need(cond: unknown, file: string, where: string, cause: string): asserts cond {
  if (!cond) throw new LobesError(cause, { file, where });
}

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStrArr = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/**
 * Manifest and samples through the store's readers (src/store). The report reads no activations,
 * so it opens runs whose activations are gone or that were never extracted here (e.g. copied results).
 */
export function readRunBasics(dir: string): { manifest: RunManifest; samples: SampleRow[] } {
  const manifest = readManifest(dir);
  const samples = existsSync(path.join(dir, 'samples.jsonl')) ? readSamples(dir, manifest.samplesSha256) : [];
  return { manifest, samples };
}

function loadWanda(dir: string, manifest: RunManifest): WandaData | null {
  const wd = path.join(dir, 'wanda');
  const rf = path.join(wd, 'regions.json');
  if (!existsSync(rf)) return null;
  const sfile = path.join(wd, 'settings.json');
  const settings = readJson(sfile);
  need(isObj(settings) && isStrArr(settings.groups) && typeof settings.by === 'string', sfile, 'groups', 'settings need "by" (string) and "groups" (string array)');
  checkProvenance(dir, manifest, settings.provenance, 'the wanda results', sfile, 'lobes wanda');
  const regions = readJson(rf);
  need(isObj(regions) && Array.isArray(regions.matrices), rf, 'matrices', 'expected a "matrices" array');
  const names = new Set<string>();
  const sizes = new Map<string, number>();
  regions.matrices.forEach((m: any, i: number) => {
    const ok =
      isObj(m) && typeof m.name === 'string' && typeof m.proj === 'string' && Number.isInteger(m.layer) &&
      Number.isInteger(m.rowBlocks) && Number.isInteger(m.colBlocks) && m.rowBlocks > 0 && m.colBlocks > 0;
    need(ok, rf, `matrices[${i}]`, 'a matrix needs name, layer, proj, rowBlocks and colBlocks');
    need(!names.has(m.name), rf, `matrices[${i}]`, `duplicate matrix ${JSON.stringify(m.name)}`);
    names.add(m.name);
    sizes.set(m.name, m.rowBlocks * m.colBlocks);
  });
  const checkSet = (set: any, where: string) => {
    need(isObj(set), rf, where, 'expected an object of matrix name to block indices');
    for (const [k, v] of Object.entries(set)) {
      const n = sizes.get(k);
      need(n !== undefined, rf, `${where}.${k}`, 'unknown matrix (not in "matrices")');
      need(Array.isArray(v), rf, `${where}.${k}`, 'expected an array of block indices');
      for (let i = 0; i < (v as any[]).length; i++) {
        const x = (v as any[])[i];
        if (!(Number.isInteger(x) && x >= 0 && x < n)) {
          throw new LobesError(`block index ${JSON.stringify(x)} out of range 0..${n - 1}`, { file: rf, where: `${where}.${k}[${i}]` });
        }
      }
    }
  };
  need(isObj(regions.regions), rf, 'regions', 'expected a "regions" object');
  for (const [g, set] of Object.entries(regions.regions)) checkSet(set, `regions.${g}`);
  need(Array.isArray(regions.differences), rf, 'differences', 'expected a "differences" array');
  regions.differences.forEach((d: any, i: number) => {
    need(isObj(d) && typeof d.a === 'string' && typeof d.b === 'string', rf, `differences[${i}]`, 'a difference needs string "a" and "b"');
    checkSet(d.aMinusB, `differences[${i}].aMinusB`);
    checkSet(d.bMinusA, `differences[${i}].bMinusA`);
  });
  const mfile = path.join(wd, 'metrics.json');
  let metrics: WandaMetrics | null = null;
  if (existsSync(mfile)) {
    const m = readJson(mfile);
    need(isObj(m) && Array.isArray(m.pairs) && Array.isArray(m.groups), mfile, 'pairs', 'expected "groups" and "pairs" arrays');
    metrics = m as WandaMetrics;
  }
  const pfile = path.join(wd, 'pooled.safetensors');
  let pooled: WandaData['pooled'] = null;
  if (existsSync(pfile)) {
    const h: StHeader = readSafetensorsHeader(pfile);
    pooled = (group, matrix) => {
      const name = `${group}|${matrix}`;
      const t = h.tensors.get(name);
      if (!t) return null;
      const n = sizes.get(matrix);
      const numel = t.shape.reduce((a, b) => a * b, 1);
      if (n !== undefined && numel !== n) {
        throw new LobesError(`shape ${JSON.stringify(t.shape)} does not match the ${n} blocks of the matrix in regions.json`, { file: pfile, where: name });
      }
      return readTensorFloat32(h, name);
    };
  }
  return { dir: wd, settings: settings as WandaSettings, regions: regions as WandaRegions, metrics, pooled };
}

function loadCluster(cd: string, runDir: string, manifest: RunManifest, samples: SampleRow[], given: boolean): ClusterData | null {
  const cf = path.join(cd, 'coords.json');
  if (!existsSync(cf)) {
    if (given) throw new LobesError('no cluster results here (coords.json is missing)', { file: cd, hint: 'give the folder lobes cluster --out wrote' });
    return null;
  }
  const sf = path.join(cd, 'settings.json');
  if (!existsSync(sf)) throw new LobesError('cluster results have no settings.json, so nothing says which run they belong to', { file: cd, hint: 'run lobes cluster on this run again' });
  const settings = readJson(sf);
  need(isObj(settings), sf, 'settings', 'expected a JSON object');
  checkProvenance(runDir, manifest, settings.provenance, 'the cluster results', sf, 'lobes cluster');
  const c = readJson(cf);
  need(isObj(c) && isStrArr(c.ids) && isStrArr(c.labels) && Array.isArray(c.xy), cf, 'ids', 'expected "ids", "labels" (strings) and "xy" (numbers)');
  need(c.labels.length === c.ids.length, cf, 'labels', `${c.labels.length} labels for ${c.ids.length} ids`);
  need(c.xy.length === 2 * c.ids.length, cf, 'xy', `${c.xy.length} coordinates for ${c.ids.length} points (expected x, y interleaved)`);
  for (let i = 0; i < c.xy.length; i++) {
    if (typeof c.xy[i] !== 'number' || !Number.isFinite(c.xy[i])) throw new LobesError(`coordinate ${JSON.stringify(c.xy[i])} is not a finite number`, { file: cf, where: `xy[${i}]` });
  }
  if (c.text !== undefined) need(isStrArr(c.text) && c.text.length === c.ids.length, cf, 'text', `"text" must hold one string per point`);
  if (samples.length) {
    need(c.ids.length === samples.length, cf, 'ids', `${c.ids.length} points but the run has ${samples.length} samples (results of another run?)`);
    const at = c.ids.findIndex((id: string, i: number) => id !== samples[i]!.id);
    need(at < 0, cf, `ids[${at}]`, `point ${JSON.stringify(c.ids[at])} is not the run's sample ${JSON.stringify(samples[at]?.id)} (results of another run?)`);
  }
  const mf = path.join(cd, 'metrics.json');
  let metrics: ClusterMetrics | null = null;
  if (existsSync(mf)) {
    const m = readJson(mf);
    need(isObj(m) && Array.isArray(m.spaces) && isStrArr(m.classes), mf, 'spaces', 'expected "classes" and "spaces" arrays');
    metrics = m as ClusterMetrics;
  }
  const itf = path.join(cd, 'items.json');
  let items: ClusterItems | null = null;
  if (existsSync(itf)) {
    const it = readJson(itf);
    need(isObj(it) && isStrArr(it.ids) && isStrArr(it.classes) && Array.isArray(it.y) && it.y.length === it.ids.length && Array.isArray(it.spaces), itf, 'ids', 'expected "ids", "classes", "y" (one per id) and "spaces"');
    items = it as ClusterItems;
  }
  return { dir: cd, settings: settings as ClusterSettings, coords: c as ClusterCoords, metrics, items };
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

/** Attend results for a run: --attend-dir (must hold them), else RUN/attend when it does. */
function loadAttendOf(runDir: string, given: string | undefined): AttendData | null {
  if (given) return loadAttend(given);
  const d = path.join(runDir, RUN_ATTEND_DIR);
  if (!isAttendDir(d) && !isOldAttendDir(d)) return null;
  // Found in the run: results that fail their verified read (edited, incomplete) are left out with the reason.
  try {
    return loadAttend(d);
  } catch (e) {
    if (e instanceof LobesError && !(e instanceof ProvenanceError)) throw new ProvenanceError(e.message, {});
    throw e;
  }
}

/** Load a run directory for the report. */
/** A complete evaluation folder's manifest and summary, or null when `dir` holds none. */
export function loadEval(dir: string): EvalData | null {
  const mf = path.join(dir, 'eval.json');
  if (!existsSync(mf)) return null;
  const manifest = readJson(mf);
  need(isObj(manifest) && manifest.format === 'lobes-eval', mf, 'format', 'not a lobes evaluation manifest (format is not "lobes-eval")');
  need(manifest.complete === true, mf, 'complete', 'the evaluation is incomplete (rerun its lobes eval command to finish it)');
  const sf = path.join(dir, 'summary.json');
  const summary = readJson(sf);
  need(isObj(summary) && summary.format === 'lobes-eval-summary', sf, 'format', 'not a lobes evaluation summary');
  return { dir, manifest, summary: summary as EvalSummary };
}

/**
 * The evaluation linked to a run: RUN/eval/, else the source of the `correct` label overlay. It
 * is shown only when it belongs to the run: the same model (graph, or the same GGUF), items
 * that are the run's samples, records that still hash to eval.json, and, through an overlay,
 * the very records the overlay was made from.
 */
function linkedEval(runDir: string, manifest: RunManifest, samples: SampleRow[]): EvalData | null {
  const inside = loadEval(path.join(runDir, 'eval'));
  if (inside) {
    evalBelongs(inside, manifest, samples, path.join(runDir, 'eval'));
    return inside;
  }
  const overlay = path.join(runDir, 'labels', 'correct.json');
  if (!existsSync(overlay)) return null;
  const o = readJson(overlay);
  const src = o?.source?.eval;
  if (typeof src !== 'string' || !existsSync(path.join(src, 'eval.json'))) return null;
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
  const file = path.join(dir, 'eval.json');
  if (!sameModel(ev.manifest.model, manifest.model)) {
    throw new ProvenanceError(`the evaluation scored another model (${ev.manifest.model?.dir ?? 'unknown'}) than the run captured (${manifest.model.dir})`, { file, hint: 'evaluate the run\'s model, or report the evaluation folder on its own' });
  }
  // Verified read of the records the loaded eval.json lists: records edited after the evaluation
  // are refused, as lobes eval label refuses them.
  let ids: Set<string>;
  try {
    const recorded = ev.manifest.files?.records;
    if (!recorded) throw new LobesError('eval.json lists no records file', { file });
    ids = new Set(readVerifiedJsonl<EvalRecord>(dir, recorded, EVAL_MANIFEST).map((r) => r.id));
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
  const file = path.join(a.dir, 'summary.json');
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
function section<T>(omitted: string[], what: string, load: () => T | null): T | null {
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
  return { dir: abs, name: opts.name ?? path.basename(abs), manifest, samples: [], wanda: null, cluster: null, eval: ev, randomModel: isBuiltinRandomModel(manifest, abs), control: null, omitted: [] };
}

/** Load a run directory (or an evaluation folder) for the report. */
export async function loadRun(dir: string, opts: LoadOptions = {}): Promise<ReportModel> {
  const abs = path.resolve(dir);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) {
    throw new LobesError('run directory not found', { file: dir, hint: 'pass the folder written by lobes extract' });
  }
  if (!existsSync(path.join(abs, 'manifest.json'))) {
    const ev = loadEval(abs);
    if (ev) return evalOnly(abs, ev, opts);
  }
  const { manifest, samples } = readRunBasics(abs);
  const omitted: string[] = [];
  return {
    dir: abs,
    name: opts.name ?? path.basename(abs),
    manifest,
    samples,
    wanda: section(omitted, 'the neuron regions (wanda)', () => loadWanda(abs, manifest)),
    // Results asked for by name (--cluster-dir, --attend-dir) that do not belong are errors; found in the run, they are left out with a note.
    cluster: opts.clusterDir !== undefined ? loadCluster(path.resolve(opts.clusterDir), abs, manifest, samples, true) : section(omitted, 'the cluster results', () => loadCluster(path.join(abs, 'cluster'), abs, manifest, samples, false)),
    eval: section(omitted, 'the evaluation', () => linkedEval(abs, manifest, samples)),
    randomModel: isBuiltinRandomModel(manifest, abs),
    attend: opts.attendDir !== undefined ? withAttendCheck(loadAttendOf(abs, opts.attendDir), manifest, samples) : section(omitted, 'the attention results', () => withAttendCheck(loadAttendOf(abs, undefined), manifest, samples)),
    control: manifest.model?.control ?? null,
    omitted,
  };
}

export type { WandaMatrix };
