/** `lobes lens` in the report (src/analysis/types.ts ReportModule): `--lens-dir`, else RUN/lens, and the payload of the Logit lens section. */
import * as path from 'node:path';
import type { ReportModule } from '../analysis/types.js';
import type { LensData, LensPayload } from './types.js';
import { lensPayload } from './payload.js';
import { lensDir, readLens } from './store.js';

export const REPORT: ReportModule<LensData, { lens: LensPayload }> = {
  load: ({ runDir, manifest, given }) =>
    readLens(given !== undefined ? path.resolve(given) : lensDir(runDir), { runDir, manifest }),
  payload: (d) => ({ lens: lensPayload(d.result) }),
};
