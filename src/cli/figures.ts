import { intOption } from './args.js';
import { checkOutputFile } from '../util/io.js';
import { exportFigures, requireChromium } from '../report/index.js';

/** Options shared by `lobes report` and `lobes compare` for the page and its figure export. */
export const FIGURE_OPTIONS = {
  out: { type: 'string' },
  png: { type: 'string' },
  svg: { type: 'string' },
  width: { type: 'string' },
  height: { type: 'string' },
  chromium: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * Write a page with `write`, then render its figures to --png/--svg. A missing browser fails
 * before anything is written. Prints `{label}: FILE` (or JSON with --json).
 */
export async function writePageWithFigures(v: Record<string, any>, label: string, write: () => Promise<string>, summary?: () => Promise<string[]>): Promise<number> {
  const width = intOption(v.width, '--width', 1200, 50, 10000);
  const height = intOption(v.height, '--height', 800, 50, 10000);
  if (v.out !== undefined) checkOutputFile(v.out);
  if (v.png || v.svg) requireChromium(v.chromium);
  const file = await write();
  const figures = await exportFigures(file, {
    png: v.png, svg: v.svg, width, height, chromium: v.chromium,
    onFile: v.json ? undefined : (f) => process.stderr.write(`wrote ${f}\n`),
  });
  if (v.json) process.stdout.write(JSON.stringify({ report: file, figures }) + '\n');
  else {
    // the page's first lines (which numbers beat chance), then where it is
    for (const line of summary ? await summary() : []) process.stdout.write(line + '\n');
    process.stdout.write(`${label}: ${file}\n`);
  }
  return 0;
}
