/**
 * `lobes attend` in the report (src/analysis/types.ts ReportModule): the attention results of a
 * run (`--attend-dir`, else RUN/attend when it holds them), shown only when they read the run's
 * model and some of its samples, and the payload of the Attention section (src/report/attend.ts).
 */
import { LobesError } from '../util/errors.js';
import type { ReportModule } from '../analysis/types.js';
import type { RunManifest, SampleRow } from '../store/types.js';
import { ProvenanceError, sameModel } from '../store/provenance.js';
import type { AttendPayload } from '../report/types.js';
import { attendPayload, loadAttend, type AttendData } from '../report/attend.js';
import { attendDirOf, attendSummaryFile, isAttendDir, isOldAttendDir } from './store.js';

/** Attend results for a run: --attend-dir (must hold them), else RUN/attend when it does. */
function loadAttendOf(runDir: string, given: string | undefined): AttendData | null {
  if (given) return loadAttend(given);
  const d = attendDirOf(runDir);
  if (!isAttendDir(d) && !isOldAttendDir(d)) return null;
  // Found in the run: results that fail their verified read (edited, incomplete) are left out with the reason.
  try {
    return loadAttend(d);
  } catch (e) {
    if (e instanceof LobesError && !(e instanceof ProvenanceError)) throw new ProvenanceError(e.message, {});
    throw e;
  }
}

/** Attend results belong to a run when they read the same model and some of the run's samples. */
function attendBelongs(a: AttendData, manifest: RunManifest, samples: SampleRow[]): void {
  const file = attendSummaryFile(a.dir);
  if (!sameModel(a.summary.model, manifest.model)) {
    throw new ProvenanceError(
      `the attention was read from another model (${
        a.summary.model?.dir ?? 'unknown'
      }) than the run captured (${manifest.model.dir})`,
      { file, hint: "run lobes attend with the run's model" },
    );
  }
  const ids = new Set(samples.map((s) => s.id));
  if (samples.length && !a.items.some((it) => ids.has(it.id))) {
    throw new ProvenanceError(
      `no item of the attention results (${
        a.summary.input?.spec ?? 'unknown input'
      }) is a sample of the run (${manifest.dataset.spec})`,
      { file, hint: 'run lobes attend on the data the run extracted' },
    );
  }
}

export const REPORT: ReportModule<AttendData, { attend: AttendPayload | null }> = {
  load: ({ runDir, manifest, samples, given }) => {
    const a = loadAttendOf(runDir, given);
    if (a) attendBelongs(a, manifest, samples);
    return a;
  },
  payload: (a) => ({ attend: attendPayload(a) }),
  absent: { attend: null },
};
