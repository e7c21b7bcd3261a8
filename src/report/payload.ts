/**
 * The data a report page carries for one run: a compact, JSON-serializable view of a
 * ReportModel (the types are in types.ts, shared with the page script). Each analysis's part is
 * made by its report module (src/NAME/report.ts), reached through the registry; the lines that
 * read several analyses together are summary.ts's.
 */
import type { ReportModel } from './load.js';
import { PAYLOAD_ORDER, type ReportedAnalysis } from '../analysis/registry.js';
import type { AnalysisReport } from '../analysis/types.js';
import { reportModules } from './modules.js';
import { provenanceOf, summaryLines, verdictTables } from './summary.js';
import type { RunPayload } from './types.js';

export type { ScatterPayload, WandaPayload, RunPayload } from './types.js';

type FragmentOf<A> = A extends { report: AnalysisReport<string, any, infer F> } ? F : never;
type True<T extends true> = T;
/** Each analysis's part of the payload has the types RunPayload declares for its keys (the page script reads RunPayload): a type error here otherwise. */
export type FragmentsFitRunPayload = True<
  FragmentOf<ReportedAnalysis> extends Partial<RunPayload> & Record<string, unknown> ? true : false
>;
export { provenanceOf, verdictTables } from './summary.js';

/**
 * Each analysis's part of the payload, in PAYLOAD_ORDER (src/analysis/registry.ts): `before`, the
 * analyses listed there (their keys null when the run has none), `after`, the others (their keys
 * left out when the run has none), so that the page's JSON keeps its order.
 */
function analysisParts(model: ReportModel): { before: Partial<RunPayload>; after: Record<string, unknown> } {
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  for (const r of reportModules('payload')) {
    const data = (model as unknown as Record<string, unknown>)[r.key];
    const part = data !== null && data !== undefined ? r.module.payload(data, model) : r.module.absent;
    if (part) Object.assign(PAYLOAD_ORDER.includes(r.analysis.id) ? before : after, part);
  }
  return { before: before as Partial<RunPayload>, after };
}

export function runPayload(model: ReportModel): RunPayload {
  const ctl = model.control;
  const { before, after } = analysisParts(model);
  const parts = { ...before, ...after } as Partial<RunPayload>;
  return {
    name: model.name,
    randomModel: model.randomModel,
    control: ctl
      ? `This run is a random-weights control: the architecture and tokenizer of ${ctl.source} with every weight drawn again (seed ${ctl.seed}; ${ctl.scheme}). Its numbers are the floor a trained model's must beat.`
      : null,
    summary: summaryLines(model, parts),
    provenance: provenanceOf(model),
    ...before,
    verdicts: verdictTables(model, parts.ablate ?? null),
    ...after,
  } as RunPayload;
}
