/** `lobes eval` declared to the analysis registry (src/analysis/types.ts): RUN/eval or --out. */
import { defineAnalysis } from '../analysis/types.js';

export const EVAL = defineAnalysis({
  id: 'eval',
  summary: "SocialEval IAE/GAE or any multiple-choice benchmark, scored by the answer letter's logit",
  folder: 'eval',
  marker: true,
  files: ['eval.json', 'records.jsonl', 'episodes.jsonl', 'summary.json'],
  store: 'eval/store.ts',
  docs: 'docs/eval.md',
  sections: [{ id: 'evaluation', title: 'Evaluation', module: 'eval', export: 'evalSection' }],
  lineage: ['model', 'data'],
  cli: () => import('../cli/eval.js'),
  // eval scores a model on items; RUN/eval is found by the report through the run
  run: async (_run, opts) => (await import('./run.js')).runEval(opts),
  report: { key: 'eval', what: 'the evaluation', module: async () => (await import('./report.js')).REPORT },
});
