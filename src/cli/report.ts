import { parseCommand } from './args.js';
import { loadRun, nameRun, reportPage, runPayload } from '../report/index.js';
import { verdictTableLines } from '../report/verdict-table.js';
import { isAttendDir } from '../report/attend.js';
import { hasRunManifest } from '../store/layout.js';
import { FIGURE_OPTIONS, writePageWithFigures } from './figures.js';
import { flagOption, reportFlags } from '../analysis/registry.js';

/** The report's flags naming an analysis's folder, from the registry (`--cluster-dir DIR`, ...). */
const FLAGS = reportFlags();
const flagHelp = FLAGS.flatMap((f) =>
  f.help.map((line, i) => (i ? ' '.repeat(21) : `  ${`--${f.name} DIR`.padEnd(17)}  `) + line)
).join('\n');

const SPEC = {
  usage:
    'lobes report RUN|ATTEND_DIR [--out FILE.html] [--png DIR] [--svg DIR] [--width N] [--height N] [--chromium PATH] [--by LABEL] ' +
    FLAGS.map((f) => `[--${f.name} DIR] `).join('') + '[--name NAME] [--json]',
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
${flagHelp}
  --name NAME        the run's name on the page (default: its model, control and items, e.g.
                     "smollm2-135m-instruct · en+zh, 1985 items")
  --json             print {"report": FILE, "figures": [...]} on stdout`,
  options: { ...FIGURE_OPTIONS, by: { type: 'string' },
    ...Object.fromEntries(FLAGS.map((f) => [f.name, { type: 'string' as const }])), name: { type: 'string' } },
  positionals: [1, 1] as [number, number],
} as const;

export async function run(argv: string[]): Promise<number> {
  const args = parseCommand(argv, SPEC);
  if (!args) return 0;
  const values = args.values as Record<string, string | boolean | undefined>;
  const opts = { by: args.values.by, name: args.values.name,
    ...Object.fromEntries(FLAGS.map((f) => [flagOption(f.name), values[f.name] as string | undefined])) };
  return writePageWithFigures(args.values, 'report', () => reportPage(args.positionals[0]!, args.values.out, opts),
    async () => {
      if (isAttendDir(args.positionals[0]!) && !hasRunManifest(args.positionals[0]!)) return [];
      const model = nameRun(await loadRun(args.positionals[0]!, opts), opts.name);
      const run = runPayload(model);
      return [`${model.name}:`, ...(run.verdicts ?? []).flatMap(verdictTableLines), ...run.summary];
    });
}
