/// <reference lib="dom" />
/**
 * The page a researcher reads first, in real headless Chromium at 1,200 and 1,920 px, on the
 * run report and the comparison page of demo-sized synthetic runs: the first screen (900 px)
 * holds the verdict table whole, above every section; no axis label or title of a figure lies
 * outside its svg; no table is wider than its container or the page (a wide table scrolls
 * inside its own box). Skips, saying why, when no browser is installed.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { launchChromium, chromiumProblem, type Browser } from '../../src/report/index.js';
import { demoSizedPages, openReportPage } from './page.js';

const problem = chromiumProblem();
if (problem) console.log(`first-screen tests skipped: ${problem} (install Debian's chromium or set LOBES_CHROMIUM)`);

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-first-screen-'));
const SCREEN = 900;

interface Layout {
  verdict: { top: number; bottom: number; rows: number; links: string[] } | null;
  firstSection: number;
  clipped: string[];
  wide: string[];
  pageWidth: number;
  scrollWidth: number;
}

/** What the checks read from the page: the verdict table's place, clipped figure labels, overflowing tables. */
function layout(): Layout {
  const t = document.querySelector('table.verdict');
  const r = t?.getBoundingClientRect();
  const sec = document.querySelector('main section');
  const clipped: string[] = [];
  document.querySelectorAll('[data-figure]').forEach((fig) => {
    const svg = fig.querySelector('svg.main-svg');
    if (!svg) return;
    const box = svg.getBoundingClientRect();
    fig.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .gtitle, .annotation-text').forEach(
      (e) => {
        const b = e.getBoundingClientRect();
        if (!b.width || !(e.textContent ?? '').trim()) return;
        if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 ||
          b.bottom > box.bottom + 0.5) clipped.push(`${fig.getAttribute('data-figure')}: "${e.textContent}"`);
      },
    );
  });
  const pw = document.documentElement.clientWidth;
  const wide: string[] = [];
  document.querySelectorAll('table').forEach((tab, i) => {
    const tb = tab.getBoundingClientRect();
    const parent = tab.parentElement!.getBoundingClientRect();
    const head = Array.from(tab.querySelectorAll('th')).slice(0, 3).map((h) => h.textContent).join('|');
    // wider than its box or the page, or cut with no way to scroll to the rest
    const cut = tab.scrollWidth > tab.clientWidth + 1 && !/(auto|scroll)/.test(getComputedStyle(tab).overflowX);
    if (tb.width > parent.width + 1 || tb.right > pw + 1 || cut)
      wide.push(`table ${i} (${head}): ${Math.round(tb.width)} px in ${Math.round(parent.width)} px`);
  });
  return {
    verdict: r
      ? { top: r.top + scrollY, bottom: r.bottom + scrollY, rows: t!.querySelectorAll('tbody tr').length,
        links: Array.from(t!.querySelectorAll('tbody a')).map((a) => a.getAttribute('href')!) }
      : null,
    firstSection: sec ? sec.getBoundingClientRect().top + scrollY : Infinity,
    clipped,
    wide,
    pageWidth: pw,
    scrollWidth: document.documentElement.scrollWidth,
  };
}

describe.skipIf(!!problem)('the first screen of a report, in headless Chromium', () => {
  let browser: Browser;
  let report: string;
  let compare: string;
  beforeAll(async () => {
    ({ report, compare } = await demoSizedPages(tmp, ['SmolLM2-135M-Instruct-Q8_0 · en+zh, 120 items',
      'SmolLM2-135M-Instruct-Q8_0, random-weights control · en+zh, 120 items']));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  for (const width of [1200, 1920]) {
    it(`at ${width} px: the verdict table on the first screen, no clipped label, no overflowing table`, async () => {
      for (const file of [report, compare]) {
        const { page, problems: errors } = await openReportPage(browser, file, width, SCREEN);
        const l: Layout = await page.evaluate(layout);
        const what = `${path.basename(file)} at ${width} px`;
        expect(errors, what).toEqual([]);
        expect(l.verdict, what).not.toBeNull();
        expect(l.verdict!.rows, what).toBeGreaterThanOrEqual(7);
        expect(l.verdict!.bottom, what).toBeLessThanOrEqual(SCREEN);
        expect(l.verdict!.top, what).toBeLessThan(l.firstSection);
        // every row links to a section the page has
        const ids: string[] = await page.evaluate(() =>
          Array.from(document.querySelectorAll('main section')).map((s) => s.id)
        );
        for (const h of l.verdict!.links) expect(ids, `${what}: ${h}`).toContain(h.slice(1));
        expect(l.clipped, what).toEqual([]);
        expect(l.wide, what).toEqual([]);
        expect(l.scrollWidth, what).toBeLessThanOrEqual(l.pageWidth);
        await page.close();
      }
    }, 90_000);
  }
});
