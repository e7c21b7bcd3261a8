/**
 * `lobes eval label RUN EVAL_DIR`: the link from benchmark answers to neurons. The IAE items of
 * an evaluation are the skill choices a `socialeval:` run extracted, under the same ids
 * (`FILE/NODE/CHOICE`), so each run sample gets the label correct / wrong (the evaluation's
 * vote) or unevaluated (not in the evaluation, e.g. outside a --limit subset), written as a
 * label overlay (src/store/labels.ts). `lobes cluster RUN --by correct` and
 * `lobes wanda RUN --by correct` then split the run by whether the model answered right.
 */
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { openRun } from '../store/index.js';
import { checkOverlayWritable, writeLabelOverlay } from '../store/labels.js';
import { RUN_INPUT } from '../store/lineage.js';
import { LOBES_VERSION } from '../version.js';
import { evalFile } from './store.js';
import { runIdentity, sameModel } from '../store/provenance.js';
import { readEvalResults } from './run.js';

export interface LabelResult {
  file: string;
  axis: string;
  samples: number;
  counts: { correct: number; wrong: number; unevaluated: number };
  /** True when the evaluation scored another model than the run captured. */
  otherModel: boolean;
}

/** Write the `correct` axis (or `opts.axis`) of a run from an evaluation's item records. */
export async function labelRunFromEval(runDir: string, evalDir: string,
  opts: { axis?: string } = {}): Promise<LabelResult>
{
  const axis = opts.axis ?? 'correct';
  const run = await openRun(runDir);
  // A researcher's own labels/AXIS.json is refused before the evaluation is read.
  checkOverlayWritable(runDir, axis);
  if (run.manifest.dataset.axes?.includes(axis))
    throw new LobesError(`the run already has a label axis ${JSON.stringify(axis)} from its dataset`, { file: runDir,
      hint: `choose another name with ${opt('axis')}` });
  const ev = readEvalResults(evalDir);
  const answered = new Map<string, boolean>();
  for (const r of ev.records) if (r.correct !== null && r.task !== 'gae') answered.set(r.id, r.correct);
  const values: Record<string, string> = {};
  const counts = { correct: 0, wrong: 0, unevaluated: 0 };
  for (const s of run.samples) {
    const c = answered.get(s.id);
    if (c === undefined) counts.unevaluated++;
    else {
      values[s.id] = c ? 'correct' : 'wrong';
      counts[c ? 'correct' : 'wrong']++;
    }
  }
  if (counts.correct + counts.wrong === 0) {
    throw new LobesError(
      `no sample of the run is an item of the evaluation (run ids look like ${
        JSON.stringify(run.samples[0]?.id)
      }, evaluation ids like ${JSON.stringify(ev.records[0]?.id)})`,
      {
        file: evalFile(evalDir, 'records'),
        hint: 'evaluate the same socialeval: data the run extracted (lobes eval MODEL --data SPEC --task iae)',
      },
    );
  }
  const file = writeLabelOverlay(runDir, {
    format: 'lobes-labels',
    writer: { tool: 'lobes', command: 'eval label', lobesVersion: LOBES_VERSION },
    // Lineage: the run the ids are of, and the evaluation's records the values come from.
    inputs: [
      { name: RUN_INPUT, sha256: run.manifest.identity ?? runIdentity(run.manifest), from: path.resolve(runDir) },
      { name: 'eval records', sha256: ev.manifest.files!.records.sha256, from: path.resolve(evalDir) },
    ],
    axis,
    default: 'unevaluated',
    source: { eval: path.resolve(evalDir), model: ev.manifest.model.dir,
      modelGraphSha256: ev.manifest.model.graphSha256, dataset: ev.manifest.dataset.spec,
      recordsSha256: ev.manifest.files!.records.sha256, shuffles: ev.manifest.settings.shuffles },
    values,
  });
  return { file, axis, samples: run.samples.length, counts,
    otherModel: !sameModel(ev.manifest.model, run.manifest.model) };
}
