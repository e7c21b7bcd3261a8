import { parseCommand } from './args.js';
import { comparePage, compareRuns, loadRun, nameRun } from '../report/index.js';
import { UsageError } from '../util/errors.js';
import { FIGURE_OPTIONS, writePageWithFigures } from './figures.js';

const SPEC = {
  usage:
    'lobes compare RUN_A RUN_B [--out FILE.html] [--png DIR] [--svg DIR] [--chromium PATH] [--name NAME_A --name NAME_B] [--by LABEL] [--ablate-dir DIR_A --ablate-dir DIR_B]',
  help: `
Write one self-contained HTML page comparing two runs (e.g. Llama-3.1-8B and 70B on the same
dataset): both t-SNE scatters and both runs' region heatmaps side by side on one colour scale,
and a table of every separation and region metric of both runs with the difference
(B − A, runs A and B in the order given), a 95% CI of the
difference (a bootstrap over items, paired when both runs measured the same items), and which
run is ahead. The headline differences are printed first.

  --out FILE.html    where to write the page (default ./compare.html)
  --name NAME        the runs' names, once for A then once for B (default: each run's model,
                     control and items)
  --by LABEL         compare the wanda and cluster results made by this label axis in both runs
                     (RUN/wanda.by-LABEL, RUN/cluster.by-LABEL; default each run's default axis)
  --ablate-dir DIR   lobes ablate results, once for A then once for B: both effect matrices side by
                     side, and B − A on the regions and labels both have
  --png DIR, --svg DIR, --width N, --height N, --chromium PATH   figure export, as in lobes report
  --json             print {"report": FILE, "figures": [...]} on stdout`,
  options: { ...FIGURE_OPTIONS, name: { type: 'string', multiple: true }, by: { type: 'string' },
    'ablate-dir': { type: 'string', multiple: true } },
  positionals: [2, 2] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const [a, b] = [args.positionals[0]!, args.positionals[1]!];
  const names = (args.values.name ?? []) as string[];
  if (names.length > 2)
    throw new UsageError(`--name is given once for each run, at most twice, got ${names.length}`,
      `usage: ${SPEC.usage}`);
  const ablate = (args.values['ablate-dir'] ?? []) as string[];
  if (ablate.length !== 0 && ablate.length !== 2)
    throw new UsageError(`--ablate-dir is given once for each run (A, then B), got ${ablate.length}`,
      `usage: ${SPEC.usage}`);
  return writePageWithFigures(args.values, 'comparison',
    () => comparePage(a, b, args.values.out, [names[0], names[1]], [ablate[0], ablate[1]], { by: args.values.by }),
    async () => {
      const c = compareRuns(nameRun(await loadRun(a, { by: args.values.by }), names[0]),
        nameRun(await loadRun(b, { by: args.values.by }), names[1]));
      const [order, ...rest] = c.summary ?? [];
      return [...(order ? [order] : []), ...(c.headline ?? []), ...rest];
    });
}
