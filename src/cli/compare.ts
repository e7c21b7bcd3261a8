import { parseCommand } from './args.js';
import { comparePage, compareRuns, loadRun } from '../report/index.js';
import { FIGURE_OPTIONS, writePageWithFigures } from './figures.js';

const SPEC = {
  usage: 'lobes compare RUN_A RUN_B [--out FILE.html] [--png DIR] [--svg DIR] [--chromium PATH]',
  help: `
Write one self-contained HTML page comparing two runs (e.g. Llama-3.1-8B and 70B on the same
dataset): both t-SNE scatters and both runs' region heatmaps side by side on one colour scale,
and a table of every separation and region metric of both runs with the difference
(RUN_B − RUN_A; trained − control when one run is a random-weights control), a 95% CI of the
difference (a bootstrap over items, paired when both runs measured the same items), and which
run is ahead. The headline differences are printed first.

  --out FILE.html    where to write the page (default ./compare.html)
  --png DIR, --svg DIR, --width N, --height N, --chromium PATH   figure export, as in lobes report
  --json             print {"report": FILE, "figures": [...]} on stdout`,
  options: FIGURE_OPTIONS,
  positionals: [2, 2] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const [a, b] = [args.positionals[0]!, args.positionals[1]!];
  return writePageWithFigures(args.values, 'comparison', () => comparePage(a, b, args.values.out), async () => compareRuns(await loadRun(a), await loadRun(b)).summary ?? []);
}
