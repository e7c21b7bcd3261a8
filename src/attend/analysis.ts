/** `lobes attend` declared to the analysis registry (src/analysis/types.ts): RUN/attend or --out. */
import { defineAnalysis } from '../analysis/types.js';

export const ATTEND = defineAnalysis({
  id: 'attend',
  summary: 'which words the model attends to when it answers (attention of the answering position)',
  folder: 'attend',
  marker: true,
  files: ['attend.json', 'items.jsonl', 'summary.json'],
  store: 'attend/store.ts',
  docs: 'docs/attend.md',
  sections: [{ id: 'attention', title: 'Attention', module: 'attention', export: 'attentionSection' }],
  reportFlag: { name: 'attend-dir',
    help: ['lobes attend results to show with the run (default RUN/attend when present)'] },
  lineage: ['model', 'data'],
  cli: () => import('../cli/attend.js'),
  // attend reads a model and items (a dataset or an evaluation), not a run's activations
  run: async (_run, opts) => (await import('./run.js')).runAttend(opts),
  report: { key: 'attend', what: 'the attention results', module: async () => (await import('./report.js')).REPORT },
});
