/**
 * `lobes ablate` in the report (src/analysis/types.ts ReportModule): the results `--ablate-dir`
 * names (never found in the run), shown only while they are of the run's regions as they are
 * now, else left out with the reason, even when named by the flag; and the payload of the
 * Ablation section (src/report/ablate.ts).
 */
import type { ReportModule } from '../analysis/types.js';
import { ProvenanceError } from '../store/provenance.js';
import { hasRunManifest } from '../store/layout.js';
import type { AblatePayload } from '../report/types.js';
import { ablatePayload, checkAblateOfRun, loadAblate, type AblateData } from '../report/ablate.js';

export const REPORT: ReportModule<AblateData, { ablate: AblatePayload | null }> = {
  load: ({ runDir, manifest, given }) => {
    if (given === undefined) return null;
    // a folder that is not an ablation's is an error; one of another run (or of the regions before a rerun) is left out
    const data = loadAblate(given);
    if (!hasRunManifest(runDir))
      throw new ProvenanceError("the page is not of a run, and an ablation is of a run's regions", { file: given });
    checkAblateOfRun(given, runDir, manifest);
    return data;
  },
  payload: (a) => ({ ablate: ablatePayload(a) }),
  absent: { ablate: null },
  foreignGiven: 'left out',
  attached: true,
};
