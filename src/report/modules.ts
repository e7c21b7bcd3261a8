/**
 * The report modules of the analyses the report shows (src/analysis/types.ts ReportModule), each
 * imported once through its declaration's `report.module()`, so that the page's payload
 * (payload.ts, synchronous) and the loader (load.ts) reach every analysis through the registry.
 */
import { reportedAnalyses, PAYLOAD_ORDER, type ReportedAnalysis } from '../analysis/registry.js';
import type { ReportModule } from '../analysis/types.js';

/** One analysis the report shows: its declaration and its report module. */
export interface Reported {
  analysis: ReportedAnalysis;
  key: string;
  what: string;
  module: ReportModule<any, object>;
}

const loaded: Reported[] = await Promise.all(reportedAnalyses().map(async (a) => ({ analysis: a, key: a.report.key, what: a.report.what, module: (await a.report.module()) as ReportModule<any, object> })));

/** The analyses the report shows, in the order it loads them (registry.ts REPORT_LOAD_ORDER). */
export const REPORTED: readonly Reported[] = loaded;

/** The same, in the order of their keys in a run's page payload (registry.ts PAYLOAD_ORDER). */
export const REPORTED_PAYLOAD_ORDER: readonly Reported[] = reportedAnalyses(PAYLOAD_ORDER).map((a) => loaded.find((r) => r.analysis === a)!);

/** The same, in registry order (the page's order). */
export const REPORTED_REGISTRY_ORDER: readonly Reported[] = reportedAnalyses([]).map((a) => loaded.find((r) => r.analysis === a)!);
