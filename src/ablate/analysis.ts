/** `lobes ablate` declared to the analysis registry (src/analysis/types.ts): a job folder (job.json). */
import { defineAnalysis } from '../analysis/types.js';

export const ABLATE = defineAnalysis({
  id: 'ablate',
  summary: "zero a neuron region's weights and measure the change of log-likelihood, against random regions",
  folder: 'ablate',
  // a job folder: its lineage is in job.json (`inputs`, `files`), not in a marker
  marker: false,
  files: ['ablation.json', 'records.jsonl', 'summary.json', 'job.json'],
  store: 'ablate/store.ts',
  docs: 'docs/ablate.md',
  sections: [{ id: 'ablation', title: 'Ablation', module: 'ablate', export: 'ablateSection' }],
  reportFlag: { name: 'ablate-dir',
    help: ['lobes ablate results (DIR/summary.json) to show with the run: the region ×',
      'label effect matrix against its random-region null, and the specificity table'] },
  lineage: ['run', 'model', 'data', 'wanda/settings.json', 'wanda/regions.json'],
  cli: () => import('../cli/ablate.js'),
  run: async (run, opts) =>
    (await import('./run.js')).runAblate(
      { ...(opts as object), run: typeof run === 'string' ? run : run.dir } as never,
    ),
  report: { key: 'ablate', what: 'the ablation', module: async () => (await import('./report.js')).REPORT },
});
