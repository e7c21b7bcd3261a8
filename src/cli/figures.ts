import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { intOption } from './args.js';
import { checkFigureDir, checkFigureFiles, renderFigures, requireChromium, writeFigures, writePage, type Figure,
  type Page } from '../report/index.js';
import { JSON_OPTION } from './options.js';

/** Options shared by `lobes report` and `lobes compare` for the page and its figure export. */
export const FIGURE_OPTIONS = {
  out: { type: 'string' },
  png: { type: 'string' },
  svg: { type: 'string' },
  width: { type: 'string' },
  height: { type: 'string' },
  chromium: { type: 'string' },
  ...JSON_OPTION,
} as const;

/**
 * Make a page with `page` (which checks its destination first), render its figures for --png/--svg, then write them. Every
 * destination (the page, the figure folders, every figure file) is checked before anything
 * is written, and a missing browser fails first: the figures are rendered from a copy of the
 * page in a temporary folder. Prints `{label}: FILE` (or JSON with --json).
 */
export async function writePageWithFigures(v: Record<string, any>, label: string, page: () => Promise<Page>,
  summary?: () => Promise<string[]>): Promise<number>
{
  const width = intOption(v.width, '--width', 1200, 50, 10000);
  const height = intOption(v.height, '--height', 800, 50, 10000);
  if (v.png !== undefined) checkFigureDir(v.png, '--png');
  if (v.svg !== undefined) checkFigureDir(v.svg, '--svg');
  if (v.png || v.svg) requireChromium(v.chromium);
  const p = await page();
  let figures: Figure[] = [];
  if (v.png || v.svg) {
    const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-page-'));
    try {
      const copy = path.join(tmp, 'page.html');
      writeFileSync(copy, p.html);
      figures = await renderFigures(copy, { png: v.png, svg: v.svg, width, height, chromium: v.chromium });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    checkFigureFiles(figures);
  }
  const file = writePage(p);
  const written = writeFigures(figures, v.json ? undefined : (f) => process.stderr.write(`wrote ${f}\n`));
  if (v.json) process.stdout.write(JSON.stringify({ report: file, figures: written }) + '\n');
  else {
    // the page's first lines (which numbers beat chance), then where it is
    for (const line of summary ? await summary() : []) process.stdout.write(line + '\n');
    process.stdout.write(`${label}: ${file}\n`);
  }
  return 0;
}
