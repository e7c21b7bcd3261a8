import { parseCommand } from './args.js';
import { loadRun, nameRun, reportPage, runPayload } from '../report/index.js';
import { verdictTableLines } from '../report/verdict.js';
import { isAttendDir } from '../report/attend.js';
import { hasRunManifest } from '../store/layout.js';
import { FIGURE_OPTIONS, writePageWithFigures } from './figures.js';

const SPEC = {
  usage: 'lobes report RUN|ATTEND_DIR [--out FILE.html] [--png DIR] [--svg DIR] [--width N] [--height N] [--chromium PATH] [--by LABEL] [--cluster-dir DIR] [--attend-dir DIR] [--ablate-dir DIR] [--name NAME] [--json]',
  help: `
Write one self-contained HTML report of a run (opens offline): the t-SNE scatter coloured by
group (RUN/cluster), the neuron-region heatmaps of every pair of groups with their metrics and
permutation p-values (RUN/wanda), the metrics tables, the attention of the answering position
(RUN/attend, from lobes attend) and the run's provenance. Given the --out folder of lobes attend
instead of a run, the page shows its attention results alone.

  --out FILE.html    where to write the report (default RUN/report.html)
  --png DIR          also render every figure to DIR/<figure>.png through headless Chromium
  --svg DIR          also render every figure to DIR/<figure>.svg
  --width N          exported figure width in pixels (default 1200)
  --height N         exported figure height in pixels (default 800)
  --chromium PATH    Chromium executable for --png/--svg (default $LOBES_CHROMIUM or /usr/bin/chromium)
  --by LABEL         show the wanda and cluster results made by this label axis
                     (RUN/wanda.by-LABEL, RUN/cluster.by-LABEL; default the run's default axis,
                     RUN/wanda and RUN/cluster); the page says which it shows and what else the
                     run holds
  --cluster-dir DIR  cluster results written elsewhere with lobes cluster --out, or at another
                     capture point (RUN/cluster.at-POINT)
  --attend-dir DIR   lobes attend results to show with the run (default RUN/attend when present)
  --ablate-dir DIR   lobes ablate results (DIR/summary.json) to show with the run: the region ×
                     label effect matrix against its random-region null, and the specificity table
  --name NAME        the run's name on the page (default: its model, control and items, e.g.
                     "smollm2-135m-instruct · en+zh, 1985 items")
  --json             print {"report": FILE, "figures": [...]} on stdout`,
  options: { ...FIGURE_OPTIONS, by: { type: 'string' }, 'cluster-dir': { type: 'string' }, 'attend-dir': { type: 'string' }, 'ablate-dir': { type: 'string' }, name: { type: 'string' } },
  positionals: [1, 1] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const opts = { by: args.values.by, clusterDir: args.values['cluster-dir'], attendDir: args.values['attend-dir'], ablateDir: args.values['ablate-dir'], name: args.values.name };
  return writePageWithFigures(args.values, 'report', () => reportPage(args.positionals[0]!, args.values.out, opts), async () => {
    if (isAttendDir(args.positionals[0]!) && !hasRunManifest(args.positionals[0]!)) return [];
    const model = nameRun(await loadRun(args.positionals[0]!, opts), opts.name);
    const run = runPayload(model);
    return [`${model.name}:`, ...(run.verdicts ?? []).flatMap(verdictTableLines), ...run.summary];
  });
}
