/** `lobes lens` declared to the analysis registry (src/analysis/types.ts): RUN/lens. */
import { defineAnalysis } from '../analysis/types.js';

export const LENS = defineAnalysis({
  id: 'lens',
  summary: "the logit lens: every layer's residual stream read through the final norm and lm_head",
  folder: 'lens',
  marker: true,
  files: ['settings.json', 'lens.json'],
  store: 'lens/store.ts',
  docs: 'docs/lens.md',
  sections: [{ id: 'lens', title: 'Logit lens', module: 'lens', export: 'lensSection' }],
  reportFlag: { name: 'lens-dir', help: ['lobes lens results to show with the run (default RUN/lens when present)'] },
  lineage: ['run', 'samples.jsonl', 'activations/HOOK', 'model'],
  cli: () => import('./cli.js'),
  run: async (run, opts) => (await import('./run.js')).runLens(run, opts),
  read: async (dir, runDir, manifest) => (await import('./store.js')).readLens(dir, { runDir, manifest }),
  report: { key: 'lens', what: 'the logit lens', module: async () => (await import('./report.js')).REPORT },
});
