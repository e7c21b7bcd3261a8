import { parseCommand, intOption } from './args.js';
import { writeReport, exportFigures, requireChromium } from '../report/index.js';

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
  options: {
    out: { type: 'string' }, png: { type: 'string' }, svg: { type: 'string' }, width: { type: 'string' }, height: { type: 'string' },
    chromium: { type: 'string' }, 'cluster-dir': { type: 'string' }, json: { type: 'boolean' },
  },
  positionals: [1, 1] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const v = args.values;
  const width = intOption(v.width, '--width', 1200, 50, 10000);
  const height = intOption(v.height, '--height', 800, 50, 10000);
  // A missing browser fails before anything is written.
  if (v.png || v.svg) requireChromium(v.chromium);
  const file = await writeReport(args.positionals[0]!, v.out, { clusterDir: v['cluster-dir'] });
  const figures = await exportFigures(file, {
    png: v.png, svg: v.svg, width, height, chromium: v.chromium,
    onFile: v.json ? undefined : (f) => process.stderr.write(`wrote ${f}\n`),
  });
  if (v.json) process.stdout.write(JSON.stringify({ report: file, figures }) + '\n');
  else process.stdout.write(`report: ${file}\n`);
  return 0;
}
