/** `lobes swap` declared to the analysis registry (src/analysis/types.ts): RUN/swap. */
import { defineAnalysis } from '../analysis/types.js';

export const SWAP = defineAnalysis({
  id: 'swap',
  summary: 'does the state follow the question or the response? (question/response swaps)',
  folder: 'swap',
  marker: true,
  files: ['settings.json', 'swap.json', 'swap.csv'],
  store: 'swap/store.ts',
  docs: 'docs/cluster.md',
  sections: [],
  lineage: ['run', 'samples.jsonl', 'activations/HOOK', 'model', 'file:control/NAME'],
  cli: () => import('../cli/swap.js'),
  run: async (run, opts) => (await import('./run.js')).runSwap(run, opts),
});
