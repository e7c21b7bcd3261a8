import { parseCommand, intOption } from './args.js';
import { writeCompare, exportFigures, requireChromium } from '../report/index.js';

const SPEC = {
  usage: 'lobes compare RUN_A RUN_B [--out FILE.html] [--png DIR] [--svg DIR] [--chromium PATH]',
  help: `
Write one self-contained HTML page comparing two runs (e.g. Llama-3.1-8B and 70B on the same
dataset): both t-SNE scatters and both runs' region heatmaps side by side on one colour scale,
and a table of every separation and region metric of both runs with the difference
(RUN_B − RUN_A), a 95% CI of the difference where the runs carry bootstrap CIs, and which run
is ahead.

  --out FILE.html    where to write the page (default ./compare.html)
  --png DIR, --svg DIR, --width N, --height N, --chromium PATH   figure export, as in lobes report
  --json             print {"report": FILE, "figures": [...]} on stdout`,
  options: {
    out: { type: 'string' }, png: { type: 'string' }, svg: { type: 'string' }, width: { type: 'string' }, height: { type: 'string' },
    chromium: { type: 'string' }, json: { type: 'boolean' },
  },
  positionals: [2, 2] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const v = args.values;
  const width = intOption(v.width, '--width', 1200, 50, 10000);
  const height = intOption(v.height, '--height', 800, 50, 10000);
  // A missing browser fails before anything is written.
  if (v.png || v.svg) requireChromium(v.chromium);
  const file = await writeCompare(args.positionals[0]!, args.positionals[1]!, v.out);
  const figures = await exportFigures(file, {
    png: v.png, svg: v.svg, width, height, chromium: v.chromium,
    onFile: v.json ? undefined : (f) => process.stderr.write(`wrote ${f}\n`),
  });
  if (v.json) process.stdout.write(JSON.stringify({ report: file, figures }) + '\n');
  else process.stdout.write(`comparison: ${file}\n`);
  return 0;
}
