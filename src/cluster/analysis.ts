/** `lobes cluster` declared to the analysis registry (src/analysis/types.ts): RUN/cluster. */
import { defineAnalysis } from '../analysis/types.js';

export const CLUSTER = defineAnalysis({
  id: 'cluster',
  summary: 'seeded t-SNE and separation metrics for the labels',
  folder: 'cluster',
  marker: true,
  files: ['settings.json', 'coords.json', 'coords.csv', 'items.json', 'metrics.json', 'metrics.csv', 'sweep.json'],
  store: 'cluster/store.ts',
  docs: 'docs/cluster.md',
  sections: [{ id: 'scatter', title: 'Representations: t-SNE', module: 'scatter', export: 'scatterSection' }],
  reportFlag: { name: 'cluster-dir',
    help: ['cluster results written elsewhere with lobes cluster --out, or at another',
      'capture point (RUN/cluster.at-POINT)'] },
  lineage: ['run', 'samples.jsonl', 'activations/HOOK', 'labels/AXIS.json', 'file:NAME'],
  cli: () => import('../cli/cluster.js'),
  run: async (run, opts) => (await import('./run.js')).runCluster(run, opts),
  read: async (dir, runDir, manifest) => {
    const { hasSamples } = await import('../store/layout.js');
    const { readSamples } = await import('../store/index.js');
    const samples = hasSamples(runDir) ? readSamples(runDir, manifest.samplesSha256) : [];
    return (await import('./store.js')).readCluster(dir, runDir, manifest, samples, true);
  },
  report: { key: 'cluster', what: 'the cluster results', module: async () => (await import('./report.js')).REPORT },
});
