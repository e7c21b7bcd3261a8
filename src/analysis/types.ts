/**
 * The analysis contract: what one analysis of a run (wanda, cluster, swap, attend, eval,
 * ablate, lens) declares about itself, once, in its own folder (src/NAME/analysis.ts). The
 * registry (registry.ts) lists the declarations; the command table (cli/main.ts), the kinds of
 * output folders (util/output.ts OutputKind), the report's `--X-dir` flags, the report's loading
 * and payload of every analysis it shows (report/load.ts, report/payload.ts), the order of the
 * page's sections (report/client/sections.gen.ts, generated from the registry) and the structure
 * test's lists of a run folder's files are all derived from it.
 *
 * A declaration is light: it imports nothing at run time but this file, and reaches its command,
 * its job, its readers and its report module (src/NAME/report.ts) through dynamic imports, so that `lobes data inspect` still loads
 * neither ONNX Runtime nor any analysis.
 */
import type { ControlInfo, RunManifest, RunReader, SampleRow } from '../store/types.js';

/** One section of the report page an analysis fills (src/report/client/sections/MODULE.ts exports it as EXPORT). */
export interface AnalysisSection {
  /** The section's element id (a link anchor); the Section object's `id`. */
  id: string;
  /** Its heading; the Section object's `title`. */
  title: string;
  /** Module under src/report/client/sections/ (without .ts). */
  module: string;
  /** The Section it exports. */
  export: string;
}

/** The flag of `lobes report` that names the analysis's folder, and its help lines. */
export interface ReportFlag {
  /** e.g. `cluster-dir` (the option `--cluster-dir DIR`). */
  name: string;
  /** Help lines after `--NAME DIR`, the first on the flag's own line. */
  help: readonly string[];
}

/** What the report hands an analysis's loader: the run, and what the page was asked to show. */
export interface ReportInput {
  /** Absolute run directory (or the folder of a standalone page, e.g. an evaluation folder). */
  runDir: string;
  manifest: RunManifest;
  samples: SampleRow[];
  /** The folder its report flag named (resolved), or undefined: its folder in the run. */
  given: string | undefined;
  /** The label axis the page shows (`--by`), or undefined: the run's default axis. */
  by: string | undefined;
}

/** The run a payload is made for: its folder (label overlays) and its samples (item text, label axes). */
export interface ReportRun {
  dir: string;
  samples: SampleRow[];
}

/**
 * The analyses of a run that are made by a label axis (wanda, cluster: RUN/NAME.by-AXIS,
 * RUN/cluster.at-POINT): what the page says it shows, the run's other folders of the analysis,
 * and those folders read for the verdict tables of the other axes.
 */
export interface AxisFolders<Data> {
  /** Every folder of the analysis in the run (each label axis and capture point). */
  dirs(runDir: string): string[];
  /** The results in `dir`, for the verdict tables of another axis (a ProvenanceError when they do not belong: left out). */
  read(dir: string, input: ReportInput): Data | null;
  /** The folder the results were read from. */
  dir(data: Data): string;
  /** The label axis the results are by (undefined when they do not say). */
  axis(data: Data): string | undefined;
  /** What the page shows of them, in words, for its "Shown:" line (`rel` names a folder relative to the run). */
  shown(data: Data, rel: (dir: string) => string): string | null;
}

/**
 * How the report loads and shows an analysis: the module its declaration's `report.module()`
 * imports (src/NAME/report.ts), so that the declaration stays light.
 */
export interface ReportModule<Data = unknown, Fragment extends object = object> {
  /**
   * The analysis's results for the run (`input.given`: the folder named by its report flag), or
   * null when the run has none. Results that do not belong to the run throw a ProvenanceError:
   * left out with the reason when found in the run; an error when named by the flag, unless
   * `foreignGiven` is 'left out'.
   */
  load(input: ReportInput): Data | null | Promise<Data | null>;
  /** Its part of the run's page payload (RunPayload, src/report/types.ts): one or more keys. */
  payload(data: Data, run: ReportRun): Fragment;
  /** Its part of the payload when the run has none (the keys set to null), or undefined: the keys are left out. */
  absent?: Fragment;
  /** What a folder named by its flag whose results do not belong to the run gives: an error (default), or left out with the reason. */
  foreignGiven?: 'error' | 'left out';
  /**
   * Attached to a page after its run was loaded (attachAnalyses, src/report/load.ts; reportPage
   * and comparePage call it, loadRun does not), on any page, a standalone folder's too: lobes
   * ablate's results, which the terminal summary of lobes report has never included.
   */
  attached?: boolean;
  /**
   * A folder of its results alone, which makes a page of its own (`lobes report EVAL_DIR`): the
   * results, the manifest that stands for a run's, and the random-weights control; null when
   * `dir` holds none.
   */
  standalone?(dir: string): { data: Data; manifest: RunManifest; control: ControlInfo | null } | null;
  /** Its folders by label axis, when it is made by one (wanda, cluster). */
  axes?: AxisFolders<Data>;
}

/** What the report reads and shows of an analysis (src/report/load.ts and payload.ts iterate these). */
export interface AnalysisReport<Key extends string = string, Data = unknown, Fragment extends object = object> {
  /** The field of the ReportModel (src/report/load.ts) that carries its results: `model.wanda`, `model.lens`. */
  key: Key;
  /** In words, for the line saying a section was left out ("the logit lens"). */
  what: string;
  /** Its report module (a dynamic import of src/NAME/report.ts). */
  module(): Promise<ReportModule<Data, Fragment>>;
}

export interface Analysis<Id extends string = string> {
  /** The command (`lobes ID`) and the analysis's name. */
  id: Id;
  /** One line for `lobes --help`. */
  summary: string;
  /** The run sub-folder it writes by default (RUN/FOLDER). */
  folder: string;
  /**
   * Whether its output folder carries lobes' marker (src/util/output.ts) of kind `id`: true for
   * folders written whole or claimed by a job (wanda, cluster, swap, eval, attend, lens); false
   * for a job that keeps its lineage in its own manifest (ablate's job.json).
   */
  marker: boolean;
  /** The files it writes in its folder (the store module names them; no other module does). */
  files: readonly string[];
  /** Its store module, relative to src/: the one module that names and reads its files. */
  store: string;
  /** Its documentation page, relative to the package root (docs/NAME.md). */
  docs: string;
  /** The sections of the report page it fills, in page order. */
  sections: readonly AnalysisSection[];
  /** The report flag naming its folder, when the report shows it. */
  reportFlag?: ReportFlag;
  /** The names of the lineage inputs its marker or job manifest records (src/store/lineage.ts). */
  lineage: readonly string[];
  /** Its command module (src/cli/ID.ts). */
  cli(): Promise<{ run(argv: string[]): Promise<number> }>;
  /** Run it on a run (a RunReader or a run folder) with its options; resolves to its result. */
  run(run: RunReader | string, opts: never): Promise<unknown>;
  /** Its results in `dir` for the run (verified against their lineage), or null when `dir` holds none. */
  read?(dir: string, runDir: string, manifest: RunManifest): Promise<unknown>;
  /** How the report loads and shows it, when the page shows it. */
  report?: AnalysisReport<string, any, any>;
}

/**
 * A declaration, its id and marker kept as literal types (so that OutputKind is a union of the
 * registry's ids), and its report's key and data types (so that the ReportModel's fields are
 * derived from the registry).
 */
export function defineAnalysis<const Id extends string, const Marker extends boolean,
  const R extends AnalysisReport<string, any, any> | undefined = undefined>(
  a: Analysis<Id> & { marker: Marker; report?: R },
): Analysis<Id> & { marker: Marker; report: R } {
  return a as Analysis<Id> & { marker: Marker; report: R };
}
