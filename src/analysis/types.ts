/**
 * The analysis contract: what one analysis of a run (wanda, cluster, swap, attend, eval,
 * ablate, lens) declares about itself, once, in its own folder (src/NAME/analysis.ts). The
 * registry (registry.ts) lists the declarations; the command table (cli/main.ts), the kinds of
 * output folders (util/output.ts OutputKind), the report's `--X-dir` flags and the loading of the
 * analyses that read through the contract (report/load.ts, report/payload.ts), the order of the
 * page's sections (report/client/sections.gen.ts, generated from the registry) and the structure
 * test's lists of a run folder's files are all derived from it.
 *
 * A declaration is light: it imports nothing at run time but this file, and reaches its command,
 * its job and its readers through dynamic imports, so that `lobes data inspect` still loads
 * neither ONNX Runtime nor any analysis.
 */
import type { RunManifest, RunReader, SampleRow } from '../store/types.js';

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

/** What the report reads and shows of an analysis that loads through the contract. */
export interface AnalysisReport<Data = unknown, Payload = unknown> {
  /**
   * The analysis's results for the run (`given`: the folder named by its report flag), or null
   * when the run has none. Results that do not belong to the run throw a ProvenanceError (left
   * out with the reason when found in the run; an error when named by the flag).
   */
  load(runDir: string, manifest: RunManifest, samples: SampleRow[], given: string | undefined): Promise<Data | null>;
  /** The page payload of the results (RunPayload[payloadKey]). */
  payload(data: Data): Payload;
  /** The key of RunPayload (and ReportModel.analyses) that carries it. */
  payloadKey: string;
  /** In words, for the line saying a section was left out ("the logit lens"). */
  what: string;
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
  /** How the report loads and shows it, for analyses that load through the contract. */
  report?: AnalysisReport;
}

/** A declaration, its id and marker kept as literal types (so that OutputKind is a union of the registry's ids). */
export function defineAnalysis<const Id extends string, const Marker extends boolean>(a: Analysis<Id> & { marker: Marker }): Analysis<Id> & { marker: Marker } {
  return a;
}
