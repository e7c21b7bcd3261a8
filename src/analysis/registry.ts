/**
 * The registry of analyses: one line per analysis, in the order the report page shows their
 * sections (docs/architecture.md, "Adding an analysis"). Everything that used to be wired by hand
 * for each analysis is derived from this list: the commands of `lobes --help` (cli/main.ts), the
 * kinds of output folders (util/output.ts OutputKind), the report's `--X-dir` flags (cli/report.ts),
 * the report's loading and payload of every analysis it shows (report/load.ts, report/payload.ts), the
 * page's sections (report/client/sections.gen.ts, written by `npx tsx src/analysis/generate.ts`),
 * and the lists of a run folder's files and store modules in test/structure.test.ts.
 */
import type { AnalysisReport, AnalysisSection } from './types.js';
import { CLUSTER } from '../cluster/analysis.js';
import { WANDA } from '../wanda/analysis.js';
import { SWAP } from '../swap/analysis.js';
import { ATTEND } from '../attend/analysis.js';
import { EVAL } from '../eval/analysis.js';
import { ABLATE } from '../ablate/analysis.js';
import { LENS } from '../lens/analysis.js';

export const ANALYSES = [CLUSTER, WANDA, SWAP, ATTEND, EVAL, ABLATE, LENS] as const;

export type RegisteredAnalysis = (typeof ANALYSES)[number];
/** The id of a registered analysis (its command). */
export type AnalysisId = RegisteredAnalysis['id'];
/** The ids of the analyses whose folders carry lobes' output marker: the analysis kinds of OutputKind. */
export type MarkedAnalysisId = Extract<RegisteredAnalysis, { marker: true }>['id'];

/** The page's sections that belong to no analysis: the run's provenance, always last. */
export const CORE_SECTIONS: readonly AnalysisSection[] = [{ id: 'provenance', title: 'Provenance', module: 'provenance',
  export: 'provenanceSection' }];

/** Every section of the report page, in page order: each analysis's, in registry order, then the core ones. */
export function pageSections(): AnalysisSection[] {
  return [...ANALYSES.flatMap((a) => a.sections), ...CORE_SECTIONS];
}

/** The registered analysis of an id, or undefined. */
export function analysisById(id: string): RegisteredAnalysis | undefined {
  return ANALYSES.find((a) => a.id === id);
}

/** The analyses the report names with a flag (`--cluster-dir`, `--attend-dir`, ...). */
export function reportFlags(): { id: AnalysisId; name: string; help: readonly string[] }[] {
  return ANALYSES.flatMap((
    a,
  ) => ('reportFlag' in a && a.reportFlag ? [{ id: a.id, name: a.reportFlag.name, help: a.reportFlag.help }] : []));
}

/** The LoadOptions key of a report flag: `cluster-dir` → `clusterDir`. */
export function flagOption(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** A registered analysis the report shows (its declaration has `report`). */
export type ReportedAnalysis = Extract<RegisteredAnalysis, { report: AnalysisReport<string, any, any> }>;

/**
 * The order the report loads the analyses in (it decides the order of the page's "left out"
 * notes, and which error a page with two bad folders names) and the order of the analyses'
 * keys in a run's page payload (RunPayload, the JSON in the page). Both are the orders pages
 * had before the report loaded through the registry, kept so that pages stay byte for byte the
 * same. An analysis not listed comes after those listed, in registry order; in the payload,
 * the analyses of PAYLOAD_ORDER come before the verdict tables, the others after them.
 */
export const REPORT_LOAD_ORDER: readonly AnalysisId[] = ['wanda', 'cluster', 'lens', 'eval', 'attend', 'ablate'];
export const PAYLOAD_ORDER: readonly AnalysisId[] = ['cluster', 'wanda', 'attend', 'ablate', 'eval'];

/** The analyses the report shows, in `order` (those not in it after, in registry order). */
export function reportedAnalyses(order: readonly AnalysisId[] = REPORT_LOAD_ORDER): ReportedAnalysis[] {
  const shown = ANALYSES.filter((a): a is ReportedAnalysis => 'report' in a && a.report !== undefined);
  const rank = (a: ReportedAnalysis) => (order.includes(a.id) ? order.indexOf(a.id) : order.length + shown.indexOf(a));
  return [...shown].sort((a, b) => rank(a) - rank(b));
}
