/**
 * The report modules of the analyses the report shows (src/analysis/types.ts ReportModule), each
 * imported once through its declaration's `report.module()`, so that the loader (load.ts) and
 * the page's payload (payload.ts, synchronous) reach every analysis through the registry.
 * loadRun imports them (loadReportModules); the payload of a run is made after its run was loaded.
 */
import { LobesError } from '../util/errors.js';
import { reportedAnalyses, PAYLOAD_ORDER, type ReportedAnalysis } from '../analysis/registry.js';
import type { ReportModule } from '../analysis/types.js';

/** One analysis the report shows: its declaration and its report module. */
export interface Reported {
  analysis: ReportedAnalysis;
  key: string;
  what: string;
  module: ReportModule<any, object>;
}

let loaded: Reported[] | null = null;

/** Import every analysis's report module (once); resolves to them in the order the report loads them (registry.ts REPORT_LOAD_ORDER). */
export async function loadReportModules(): Promise<readonly Reported[]> {
  loaded ??= await Promise.all(
    reportedAnalyses().map(async (a) => ({ analysis: a, key: a.report.key, what: a.report.what,
      module: (await a.report.module()) as ReportModule<any, object> })
    ),
  );
  return loaded;
}

/**
 * The report modules, once imported, in the report's load order (`load`), in the order of their
 * keys in a run's page payload (`payload`, registry.ts PAYLOAD_ORDER) or in registry order.
 */
export function reportModules(order: 'load' | 'payload' | 'registry' = 'load'): readonly Reported[] {
  if (!loaded)
    throw new LobesError("src/report/modules.ts: the analyses' report modules are not imported yet", {
      hint: 'load the run with loadRun (or await loadReportModules()) before making its payload',
    });
  const all = loaded;
  if (order === 'load') return all;
  return reportedAnalyses(order === 'payload' ? PAYLOAD_ORDER : []).map((a) => all.find((r) => r.analysis === a)!);
}
