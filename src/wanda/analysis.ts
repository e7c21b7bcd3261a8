/** `lobes wanda` declared to the analysis registry (src/analysis/types.ts): RUN/wanda. */
import { defineAnalysis } from '../analysis/types.js';

export const WANDA = defineAnalysis({
  id: 'wanda',
  summary: 'Wanda importance, block pooling, neuron regions and set differences',
  folder: 'wanda',
  marker: true,
  files: ['settings.json', 'regions.json', 'metrics.json', 'metrics.csv', 'channels.csv', 'sensitivity.csv',
    'pooled.safetensors'],
  store: 'wanda/store.ts',
  docs: 'docs/wanda.md',
  sections: [
    { id: 'regions', title: 'Neuron regions: set differences per pair', module: 'regions', export: 'regionsSection' },
    { id: 'metrics', title: 'Metrics', module: 'metrics', export: 'metricsSection' },
  ],
  lineage: ['run', 'samples.jsonl', 'activations/HOOK', 'labels/AXIS.json', 'model'],
  cli: () => import('../cli/wanda.js'),
  run: async (run, opts) => (await import('./run.js')).runWanda(run, opts),
  read: async (dir, runDir, manifest) => (await import('./store.js')).readWanda(runDir, manifest, dir),
  report: { key: 'wanda', what: 'the neuron regions (wanda)',
    module: async () => (await import('./report.js')).REPORT },
});
