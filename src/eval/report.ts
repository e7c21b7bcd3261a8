/**
 * `lobes eval` in the report (src/analysis/types.ts ReportModule): the evaluation linked to a run
 * (RUN/eval, else the one `lobes eval label` made the run's `correct` overlay from), an
 * evaluation folder's page of its own, and the payload of the Evaluation section.
 */
import { existsSync } from 'node:fs';
import { LobesError } from '../util/errors.js';
import type { ReportModule } from '../analysis/types.js';
import type { RunManifest, SampleRow } from '../store/types.js';
import { ProvenanceError, sameModel } from '../store/provenance.js';
import { overlayPath } from '../store/labels.js';
import { readJsonFile } from '../store/json.js';
import type { EvalPayload } from '../report/types.js';
import { modelName } from '../store/model-name.js';
import { PAPER_REFERENCE, PAPER_SOURCE } from './reference.js';
import { evalHeadline } from './headline.js';
import { evalDirOf, evalFile, isEvalDir, readCompleteEval, readEvalRecords, type EvalData } from './store.js';

/**
 * The evaluation linked to a run: RUN/eval/, else the source of the `correct` label overlay. It
 * is shown only when it belongs to the run: the same model (graph, or the same GGUF), items
 * that are the run's samples, records that still hash to eval.json, and, through an overlay,
 * the very records the overlay was made from.
 */
function linkedEval(runDir: string, manifest: RunManifest, samples: SampleRow[]): EvalData | null {
  const inside = readCompleteEval(evalDirOf(runDir));
  if (inside) {
    evalBelongs(inside, manifest, samples, evalDirOf(runDir));
    return inside;
  }
  const overlay = overlayPath(runDir, 'correct');
  if (!existsSync(overlay)) return null;
  const o = readJsonFile(overlay);
  const src = o?.source?.eval;
  if (typeof src !== 'string' || !isEvalDir(src)) return null;
  const ev = readCompleteEval(src);
  if (!ev) return null;
  evalBelongs(ev, manifest, samples, src);
  const recorded = o?.source?.recordsSha256;
  if (typeof recorded === 'string' && recorded !== ev.manifest.files?.records?.sha256) {
    throw new ProvenanceError(
      'the evaluation the `correct` overlay names has other records than the overlay was made from (it was run again since)',
      { file: overlay, hint: 'run lobes eval label again' },
    );
  }
  return ev;
}

function evalBelongs(ev: EvalData, manifest: RunManifest, samples: SampleRow[], dir: string): void {
  const file = evalFile(dir, 'manifest');
  if (!sameModel(ev.manifest.model, manifest.model)) {
    throw new ProvenanceError(
      `the evaluation scored another model (${
        ev.manifest.model?.dir ?? 'unknown'
      }) than the run captured (${manifest.model.dir})`,
      { file, hint: "evaluate the run's model, or report the evaluation folder on its own" },
    );
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
    throw new ProvenanceError(
      `no item of the evaluation (${
        ev.manifest.dataset?.spec ?? 'unknown data'
      }) is a sample of the run (${manifest.dataset.spec})`,
      { file, hint: 'evaluate the data the run extracted' },
    );
  }
}

/** The evaluation as the page shows it: the summary, the settings in words, the paper's rows as references. */
export function evalPayload(ev: EvalData): EvalPayload {
  const m = ev.manifest;
  const s = m.settings ?? {};
  const t = m.throughput ?? {};
  const cloze = s.scoring === 'cloze';
  const words = [
    cloze
      ? "cloze scoring: every option's text scored as a continuation of the prompt (no letters, no shuffles)"
      : `${s.shuffles} shuffles of the options, majority vote (seed ${s.seed})`,
    ...(cloze
      ? []
      : [
        s.cot
          ? `greedy reasoning up to ${s.cot} tokens before the answer`
          : 'answer letter scored directly (no reasoning)',
      ]),
    s.limit ? `--limit ${s.limit} (seeded, stratified subset of ${m.dataset?.available} units)` : 'every item',
    `${t.prompts} prompts, ${t.prompts ? Math.round(t.promptTokens / t.prompts) : 0} tokens per prompt on average`,
    `${s.device}, ${Math.round((m.timings?.wallMs ?? 0) / 1000)} s`,
  ];
  return {
    dir: ev.dir,
    model: modelName(m.model),
    dataset: String(m.dataset?.spec ?? ''),
    settings: words.join('; '),
    summary: ev.summary,
    ...evalHeadline(ev.summary),
    reference: { source: PAPER_SOURCE, rows: [...PAPER_REFERENCE] },
  };
}

/** The pseudo-manifest of an evaluation folder's own page (lobes report EVAL_DIR, lobes compare EVAL_A EVAL_B). */
function evalManifest(ev: EvalData): RunManifest {
  const m = ev.manifest;
  return { format: 'lobes-eval', createdAt: m.createdAt, lobesVersion: m.lobesVersion, model: m.model,
    dataset: { spec: m.dataset?.spec }, complete: true } as unknown as RunManifest;
}

export const REPORT: ReportModule<EvalData, { eval: EvalPayload | null }> = {
  load: ({ runDir, manifest, samples }) => linkedEval(runDir, manifest, samples),
  payload: (ev) => ({ eval: evalPayload(ev) }),
  absent: { eval: null },
  standalone: (dir) => {
    const ev = readCompleteEval(dir);
    return ev ? { data: ev, manifest: evalManifest(ev), control: ev.manifest.model?.control ?? null } : null;
  },
};
