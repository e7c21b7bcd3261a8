/// <reference lib="dom" />
/**
 * Opening a report page in headless Chromium for a test: a new page at the given size, its
 * script errors collected, loaded, and waited on until the page says it is ready (every figure
 * drawn) or failed. Shared by the page tests (navigation, layout, first screen, ablation), with the
 * demo-sized pages two of them read.
 */
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { writeReport, writeCompare, type Browser } from '../../src/report/index.js';

export async function openReportPage(browser: Browser, file: string, width = 1200, height = 900) {
  const page = await browser.context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e: Error) => problems.push(`pageerror: ${e.message}`));
  await page.setViewportSize({ width, height });
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  await page.waitForFunction(
    () =>
      (globalThis as any).lobesReport?.ready === true ||
      document.documentElement.getAttribute('data-ready') === 'error',
    null,
    { timeout: 60_000 },
  );
  return { page, problems };
}

/**
 * The run report and the comparison page of two demo-sized synthetic runs (5 groups × 24 items,
 * 12 and 8 layers, a layer sweep), written under `dir`; `names` label the runs on the comparison.
 */
export async function demoSizedPages(dir: string,
  names: [string, string]): Promise<{ report: string; compare: string }>
{
  const a = writeSyntheticRun(path.join(dir, 'a', 'run'), { layers: 12, samplesPerGroup: 24, seed: 3, sweep: true });
  const b = writeSyntheticRun(path.join(dir, 'b', 'run'), { layers: 8, samplesPerGroup: 24, seed: 5, sweep: true });
  return { report: await writeReport(a, path.join(dir, 'report.html')),
    compare: await writeCompare(a, b, path.join(dir, 'compare.html'), names) };
}
