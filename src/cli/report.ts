import { parseCommand } from './args.js';
import { loadRun, runPayload, writeReport } from '../report/index.js';
import { FIGURE_OPTIONS, writePageWithFigures } from './figures.js';

const SPEC = {
  usage: 'lobes report RUN [--out FILE.html] [--png DIR] [--svg DIR] [--width N] [--height N] [--chromium PATH] [--cluster-dir DIR] [--json]',
  help: `
Write one self-contained HTML report of a run (opens offline): the t-SNE scatter coloured by
group (RUN/cluster), the neuron-region heatmaps of every pair of groups with their metrics and
permutation p-values (RUN/wanda), the metrics tables and the run's provenance.

  --out FILE.html    where to write the report (default RUN/report.html)
  --png DIR          also render every figure to DIR/<figure>.png through headless Chromium
  --svg DIR          also render every figure to DIR/<figure>.svg
  --width N          exported figure width in pixels (default 1200)
  --height N         exported figure height in pixels (default 800)
  --chromium PATH    Chromium executable for --png/--svg (default $LOBES_CHROMIUM or /usr/bin/chromium)
  --cluster-dir DIR  cluster results written elsewhere with lobes cluster --out (default RUN/cluster)
  --json             print {"report": FILE, "figures": [...]} on stdout`,
  options: { ...FIGURE_OPTIONS, 'cluster-dir': { type: 'string' } },
  positionals: [1, 1] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const opts = { clusterDir: args.values['cluster-dir'] };
  return writePageWithFigures(args.values, 'report', () => writeReport(args.positionals[0]!, args.values.out, opts), async () => runPayload(await loadRun(args.positionals[0]!, opts)).summary);
}
