/// <reference lib="dom" />
/**
 * Opening a report page in headless Chromium for a test: a new page at the given size, its
 * script errors collected, loaded, and waited on until the page says it is ready (every figure
 * drawn) or failed. Shared by the page tests (navigation, layout, first screen, ablation).
 */
import { pathToFileURL } from 'node:url';
import type { Browser } from '../../src/report/index.js';

export async function openReportPage(browser: Browser, file: string, width = 1200, height = 900) {
  const page = await browser.context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e: Error) => problems.push(`pageerror: ${e.message}`));
  await page.setViewportSize({ width, height });
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  await page.waitForFunction(() => (globalThis as any).lobesReport?.ready === true || document.documentElement.getAttribute('data-ready') === 'error', null, { timeout: 60_000 });
  return { page, problems };
}
