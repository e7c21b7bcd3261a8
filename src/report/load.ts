/**
 * Load everything a report shows from a run directory into one ReportModel: the manifest and
 * samples (the run contract, src/store/types.ts), then every analysis the report shows, each
 * through its declaration in the registry (src/analysis/registry.ts; its report module,
 * src/NAME/report.ts, reads its folder through its store). Analyses that were not run are
 * `null`; files that exist but break their contract are errors naming the file and the place.
 * An analysis is shown only if its recorded provenance (run identity, samples table, chunk
 * files) matches the run (checkProvenance, src/store/provenance.ts): results of another run, or
 * of this run before it was re-extracted, are left out with the reason when found in the run,
 * and are an error when named by the analysis's flag (unless its report module says otherwise).
 */
import { existsSync, readFileSync, statSync, realpathSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { LobesError, UsageError, opt } from '../util/errors.js';
import { PACKAGE_ROOT } from '../version.js';
import type { ControlInfo, RunManifest, SampleRow } from '../store/types.js';
import { readManifest, readSamples } from '../store/index.js';
import { ProvenanceError } from '../store/provenance.js';
import { hasRunManifest, hasSamples } from '../store/layout.js';
import { readLabelOverlays } from '../store/labels.js';
import { previousSettings } from '../store/analyses.js';
import type { WandaMatrix } from '../wanda/types.js';
import { flagOption, type ReportedAnalysis } from '../analysis/registry.js';
import type { AnalysisReport, ReportInput } from '../analysis/types.js';
import { loadReportModules, reportModules, type Reported } from './modules.js';

type DataOf<A> = A extends { report: AnalysisReport<string, infer D, any> } ? D : never;

/**
 * The results of every analysis the report shows, under its report key (`model.wanda`,
 * `model.cluster`, `model.eval`, `model.attend`, `model.ablate`, `model.lens`): derived from the
 * registry. Null when the run has none, or they were left out (`omitted` says why).
 */
export type AnalysisFields = { [A in ReportedAnalysis as A['report']['key']]?: DataOf<A> | null };

export interface ReportModel extends AnalysisFields {
  /** Absolute run directory. */
  dir: string;
  /** Short display name (the folder name unless given). */
  name: string;
  manifest: RunManifest;
  samples: SampleRow[];
  /** True when the run's model is the package's random-weights demo model (models/tiny-llama). */
  randomModel: boolean;
  /** The random-weights control this run was extracted through (manifest model.control), if any. */
  control: ControlInfo | null;
  /** Sections left out because they do not belong to the run as it is now, one line each (why). */
  omitted: string[];
  /** Which analyses of the run the page shows (label axis, capture point, folder) and which others the run holds, one line each. */
  shown?: string[];
  /** The run's analyses by its other label axes (RUN/cluster.by-AXIS, RUN/wanda.by-AXIS) that belong to it, for their verdict tables. */
  otherAxes?: OtherAxis[];
}

/** The analyses of one other label axis of the run (those made by a label axis: their report modules' `axes`). */
export type OtherAxis = { by: string } & AnalysisFields;

/** The results of lobes wanda, cluster and eval as the report holds them (src/NAME/store.ts). */
export type WandaData = NonNullable<ReportModel['wanda']>;
export type ClusterData = NonNullable<ReportModel['cluster']>;
export type EvalData = NonNullable<ReportModel['eval']>;

export interface LoadOptions {
  /** Display name (default: the folder name). */
  name?: string;
  /** Cluster results folder (default RUN/cluster, or the folder of `by`). */
  clusterDir?: string;
  /** The label axis whose analyses are shown (RUN/wanda.by-AXIS, RUN/cluster.by-AXIS; default the run's default axis: RUN/wanda, RUN/cluster). */
  by?: string;
  /** `lobes attend` results folder (default RUN/attend when it holds them). */
  attendDir?: string;
  /** `lobes ablate` results folder to show with the run (src/ablate/report.ts; attached by reportPage and comparePage, attachAnalyses). */
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

/** The folder an analysis's report flag names in `opts` (as given), or undefined. */
function givenFolder(r: Reported, opts: LoadOptions): string | undefined {
  const flag = 'reportFlag' in r.analysis ? r.analysis.reportFlag : undefined;
  return flag ? opts[flagOption(flag.name) as `${string}Dir`] : undefined;
}

/**
 * One analysis's results through its report module: named by its flag, results that do not
 * belong are an error (or left out, where its module says so); found in the run, they are left
 * out with the reason.
 */
async function loadAnalysis(r: Reported, input: ReportInput, omitted: string[]): Promise<unknown> {
  if (input.given !== undefined && r.module.foreignGiven !== 'left out') return (await r.module.load(input)) ?? null;
  try {
    return (await r.module.load(input)) ?? null;
  } catch (e) {
    if (!(e instanceof ProvenanceError)) throw e;
    omitted.push(`${r.what} left out: ${e.message}`);
    return null;
  }
}

/** The page of a folder of one analysis's results alone (an evaluation folder: lobes report EVAL_DIR, lobes compare EVAL_A EVAL_B), or null when no analysis makes a page of `abs`. */
function standalonePage(abs: string, opts: LoadOptions): ReportModel | null {
  for (const r of reportModules()) {
    const page = r.module.standalone?.(abs);
    if (page)
      return { dir: abs, name: opts.name ?? path.basename(abs), manifest: page.manifest, samples: [],
        [r.key]: page.data, randomModel: isBuiltinRandomModel(page.manifest, abs), control: page.control, omitted: [] };
  }
  return null;
}

/**
 * The page's model with the analyses that are attached to a page rather than loaded with its run
 * (their report modules' `attached`: lobes ablate's results) that `opts` names by their flags;
 * unchanged when it names none. Results that do not belong are left out with the reason, as
 * their modules say.
 */
export async function attachAnalyses(model: ReportModel, opts: LoadOptions): Promise<ReportModel> {
  let out = model;
  for (const r of await loadReportModules()) {
    const given = givenFolder(r, opts);
    if (!r.module.attached || given === undefined) continue;
    const omitted = [...out.omitted];
    const data = await loadAnalysis(r, { runDir: out.dir, manifest: out.manifest, samples: out.samples, given,
      by: undefined }, omitted);
    out = { ...out, [r.key]: data, omitted };
  }
  return out;
}

/** Load a run directory (or a folder of one analysis's results that makes a page alone) for the report. */
export async function loadRun(dir: string, opts: LoadOptions = {}): Promise<ReportModel> {
  const abs = path.resolve(dir);
  const modules = await loadReportModules();
  if (!existsSync(abs) || !statSync(abs).isDirectory()) {
    throw new LobesError('run directory not found', { file: dir, hint: 'pass the folder written by lobes extract' });
  }
  if (!hasRunManifest(abs)) {
    const page = standalonePage(abs, opts);
    if (page) return page;
  }
  const { manifest, samples } = readRunBasics(abs);
  const omitted: string[] = [];
  const by = opts.by;
  if (by !== undefined) checkAxis(abs, manifest, samples, by);
  const fields: Record<string, unknown> = {};
  for (const r of modules)
    if (!r.module.attached)
      fields[r.key] = await loadAnalysis(r, { runDir: abs, manifest, samples, given: givenFolder(r, opts), by },
        omitted);
  const analyses = fields as AnalysisFields;
  return {
    dir: abs,
    name: opts.name ?? path.basename(abs),
    manifest,
    samples,
    ...analyses,
    shown: shownAnalyses(abs, analyses, by),
    otherAxes: otherAxes({ runDir: abs, manifest, samples, given: undefined, by }, shownAxis(analyses) ?? by),
    randomModel: isBuiltinRandomModel(manifest, abs),
    control: manifest.model?.control ?? null,
    omitted,
  };
}

export type { WandaMatrix };

/** --by names a label axis of the run (its samples' labels or a label overlay); else a usage error (exit 2) naming the run's axes. */
function checkAxis(abs: string, manifest: RunManifest, samples: SampleRow[], by: string): void {
  const axes = [
    ...new Set([...(manifest.dataset?.axes ?? []), ...samples.flatMap((s) => Object.keys(s.labels ?? {})),
      ...(samples.length ? readLabelOverlays(abs).keys() : [])]),
  ];
  if (axes.includes(by)) return;
  const near = axes.find((a) => a.toLowerCase().startsWith(by.toLowerCase().slice(0, 3)));
  throw new UsageError(
    `${opt('by', by)}: the run ${abs} has no label axis ${JSON.stringify(by)} (axes: ${axes.join(', ') || 'none'})`,
    near ? `did you mean ${opt('by', near)}?` : "name one of the run's axes",
  );
}

/** The analyses made by a label axis (their report modules' `axes`), in registry order. */
function axisAnalyses(): Reported[] {
  return reportModules('registry').filter((r) => r.module.axes);
}

/** The label axis of the first analysis made by one (in registry order) whose results say it. */
function shownAxis(model: AnalysisFields): string | undefined {
  for (const r of axisAnalyses()) {
    const d = (model as Record<string, unknown>)[r.key];
    const axis = d ? r.module.axes!.axis(d) : undefined;
    if (axis !== undefined) return axis;
  }
  return undefined;
}

/**
 * The analyses by the run's label axes other than `shown`: each folder of an analysis made by a
 * label axis (cluster.by-AXIS, wanda.by-AXIS) whose settings name another axis, read as the page
 * reads its own (a folder that does not belong to the run is left out, as the page leaves out its own).
 */
function otherAxes(input: ReportInput, shown: string | undefined): OtherAxis[] {
  const made = axisAnalyses();
  const axes = new Map<string, Record<string, unknown> & { by: string }>();
  const of = (d: string) => {
    const b = previousSettings(d)?.by;
    return typeof b === 'string' && b !== shown ? b : null;
  };
  const entry = (b: string) =>
    axes.get(b) ?? axes.set(b, { by: b, ...Object.fromEntries(made.map((r) => [r.key, null])) }).get(b)!;
  const ignored: string[] = [];
  for (const r of made) {
    for (const d of r.module.axes!.dirs(input.runDir)) {
      const b = of(d);
      if (b && !entry(b)[r.key]) entry(b)[r.key] = section(ignored, r.analysis.id, () => r.module.axes!.read(d, input));
    }
  }
  return [...axes.values()].filter((a) => made.some((r) => a[r.key])) as OtherAxis[];
}

/**
 * What the page shows of the run's analyses made by a label axis, and the other folders of them
 * the run holds (made by another label axis or at another capture point), each named by what it
 * was made from, with how to show it.
 */
export function shownAnalyses(runDir: string, model: AnalysisFields, by: string | undefined): string[] {
  const made = axisAnalyses();
  const data = (r: Reported) => (model as Record<string, unknown>)[r.key] ?? null;
  const out: string[] = [];
  const rel = (d: string) => path.relative(runDir, d) || '.';
  const parts = made.flatMap((r) => {
    const d = data(r);
    const line = d ? r.module.axes!.shown(d, rel) : null;
    return line ? [line] : [];
  });
  if (parts.length) out.push(`Shown: ${parts.join('; ')}`);
  const showing = new Set(made.flatMap((r) => {
    const d = data(r);
    return d ? [path.resolve(r.module.axes!.dir(d))] : [];
  }));
  const others = made.flatMap((r) => r.module.axes!.dirs(runDir)).filter((d) => !showing.has(path.resolve(d)));
  if (others.length) {
    // The axis each was made by, from its own settings (informative: which --by shows it); the
    // axis left out is the first analysis's (the map's), as the page has always said.
    const first = made[0] && data(made[0]);
    const own = (first ? made[0]!.module.axes!.axis(first) : undefined) ?? by;
    const axes = [
      ...new Set(
        others.map((d) => previousSettings(d)?.by).filter((a): a is string => typeof a === 'string' && a !== own),
      ),
    ];
    const how = axes.length
      ? ` (lobes report ${runDir} --by ${axes[0]}${
        axes.length > 1 ? ` or --by ${axes.slice(1).join(', --by ')}` : ''
      }; --cluster-dir for another capture point)`
      : ' (--cluster-dir DIR shows one of them)';
    out.push(`Also in this run, not shown: ${others.map((d) => `${rel(d)}/`).join(', ')}${how}`);
  }
  return out;
}
