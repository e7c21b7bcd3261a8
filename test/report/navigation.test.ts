/// <reference lib="dom" />
/**
 * A long page that can be navigated (src/report/client/tables.ts), in real headless Chromium:
 * the contents bar links every section the page shows and stays on screen at the top however far
 * the page is scrolled; a link lands its section below the bar; a table of more than 12 rows is
 * folded, counts its rows, and filters them; a header click sorts a column ascending, then
 * descending (numbers as numbers); a link into a folded table opens the fold. Skips, saying why,
 * when no browser is installed.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { launchChromium, chromiumProblem, type Browser } from '../../src/report/index.js';
import { demoSizedPages, openReportPage } from './page.js';

const problem = chromiumProblem();
if (problem) console.log(`navigation tests skipped: ${problem} (install Debian's chromium or set LOBES_CHROMIUM)`);

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-nav-'));

describe.skipIf(!!problem)('navigating a long report page in headless Chromium', () => {
  let browser: Browser;
  let report: string;
  let compare: string;
  beforeAll(async () => {
    ({ report, compare } = await demoSizedPages(tmp, ['trained', 'control']));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  for (const width of [1200, 1920]) {
    it(`at ${width} px: a contents bar with every section, on screen at the top wherever the page is scrolled`,
      async () => {
        for (const file of [report, compare]) {
          const { page, problems: errors } = await openReportPage(browser, file, width);
          const what = `${path.basename(file)} at ${width} px`;
          const m = await page.evaluate(() => ({
            links: Array.from(document.querySelectorAll('nav#toc a')).map((a) => a.getAttribute('href')),
            sections: Array.from(document.querySelectorAll('main > section[id]')).map((s) => '#' + s.id),
          }));
          expect(m.sections.length, what).toBeGreaterThanOrEqual(3);
          expect(m.links, what).toEqual(['#top', ...m.sections]);
          for (const y of [1500, 4000, 1e6]) {
            const bar = await page.evaluate((y: number) => {
              window.scrollTo(0, y);
              const r = document.getElementById('toc')!.getBoundingClientRect();
              return { top: r.top, bottom: r.bottom, scrolled: window.scrollY };
            }, y);
            expect(bar.scrolled, what).toBeGreaterThan(0);
            expect(bar.top, `${what}, scrolled to ${bar.scrolled}`).toBe(0);
            expect(bar.bottom, what).toBeGreaterThan(10);
          }
          // a link lands its section just below the bar, not under it
          const last = m.sections[m.sections.length - 2]!;
          await page.evaluate(() => window.scrollTo(0, 0));
          await page.click(`nav#toc a[href="${last}"]`);
          await page.waitForTimeout(200);
          const landed = await page.evaluate((id: string) => ({
            top: document.getElementById(id)!.getBoundingClientRect().top,
            bar: document.getElementById('toc')!.getBoundingClientRect().bottom,
            current: document.querySelector('nav#toc a.current')?.getAttribute('href'),
          }), last.slice(1));
          expect(landed.top, what).toBeGreaterThanOrEqual(landed.bar - 1);
          expect(landed.top, what).toBeLessThan(landed.bar + 60);
          expect(landed.current, what).toBe(last);
          expect(errors, what).toEqual([]);
          await page.close();
        }
      }, 90_000);
  }

  it('the provenance table wraps at spaces: no word of up to 24 letters is broken across lines', async () => {
    const { page, problems: errors } = await openReportPage(browser, report, 1200);
    const broken: string[] = await page.evaluate(() => {
      const out: string[] = [];
      document.querySelectorAll('table.prov').forEach((
        t,
      ) => ((t.closest('details') as HTMLDetailsElement | null)?.setAttribute('open', '')));
      document.querySelectorAll('table.prov td').forEach((td) => {
        const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const text = n.textContent ?? '';
          for (const m of text.matchAll(/[A-Za-z]{4,24}/g)) {
            const r = document.createRange();
            r.setStart(n, m.index!);
            r.setEnd(n, m.index! + m[0].length);
            const lines = new Set(Array.from(r.getClientRects()).map((b) => Math.round(b.top)));
            if (lines.size > 1) out.push(m[0]);
          }
        }
      });
      return out;
    });
    expect(broken).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('folds a long table, counts and filters its rows', async () => {
    const { page, problems: errors } = await openReportPage(browser, compare);
    const f = await page.evaluate(() => {
      const folds = Array.from(document.querySelectorAll('details.fold'));
      const long = Array.from(document.querySelectorAll('main table')).filter((t) =>
        (t as HTMLTableElement).tBodies[0]?.rows.length > 12
      );
      // every long table is folded once: by the page's fold, or (with the filter) by its section's own
      const once = long.every((t) =>
        t.parentElement!.querySelector(':scope > .filter') &&
        Array.from(document.querySelectorAll('details')).filter((d) => d.contains(t)).length === 1
      );
      const d = folds[0] as HTMLDetailsElement;
      const t = d.querySelector('table')!;
      return { once, folds: folds.length, long: long.length,
        unfoldedLong: long.filter((t) => !t.closest('details')).length, open: d.open, rows: t.tBodies[0]!.rows.length,
        summary: d.querySelector('summary')!.textContent, visible: (t as HTMLElement).checkVisibility() };
    });
    expect(f.long).toBeGreaterThan(0);
    expect(f.once).toBe(true);
    expect(f.folds).toBeGreaterThan(0);
    expect(f.unfoldedLong).toBe(0);
    expect(f.open).toBe(false);
    expect(f.visible).toBe(false);
    expect(f.summary).toContain(`Table of ${f.rows} rows`);
    await page.click('details.fold >> nth=0 >> summary');
    // the query: a word of some rows but not all (the metric column's first value)
    const q = await page.evaluate(() => {
      const t = document.querySelector('details.fold table') as HTMLTableElement;
      return (t.tBodies[0]!.rows[0]!.cells[1]!.textContent ?? '').trim();
    });
    await page.fill('details.fold >> nth=0 >> input[type=search]', q);
    const after = await page.evaluate((q: string) => {
      const d = document.querySelector('details.fold') as HTMLDetailsElement;
      const rows = Array.from((d.querySelector('table') as HTMLTableElement).tBodies[0]!.rows);
      const want = rows.filter((r) => (r.textContent ?? '').toLowerCase().includes(q.toLowerCase())).length;
      return { open: d.open, shown: rows.filter((r) => r.checkVisibility()).length, want, n: rows.length,
        count: d.querySelector('.filter .hint')!.textContent };
    }, q);
    expect(after.open).toBe(true);
    expect(after.want).toBeGreaterThan(0);
    expect(after.want).toBeLessThan(after.n);
    expect(after.shown).toBe(after.want);
    expect(after.count).toBe(`${after.want} of ${after.n} rows`);
    await page.fill('details.fold >> nth=0 >> input[type=search]', '');
    expect(
      await page.evaluate(() =>
        Array.from((document.querySelector('details.fold table') as HTMLTableElement).tBodies[0]!.rows).filter((r) =>
          !r.hidden
        ).length
      ),
    ).toBe(after.n);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('sorts a column by its numbers, ascending then descending, and opens a fold a link points into', async () => {
    const { page, problems: errors } = await openReportPage(browser, report);
    // the first sortable table with a column whose every cell is a plain number
    const target = await page.evaluate(() => {
      const tables = Array.from(document.querySelectorAll('table.sortable')) as HTMLTableElement[];
      for (let ti = 0; ti < tables.length; ti++) {
        const rows = Array.from(tables[ti]!.tBodies[0]!.rows);
        if (rows.length < 3) continue;
        const ncol = tables[ti]!.tHead!.rows[0]!.cells.length;
        for (let c = 0; c < ncol; c++) {
          const txt = rows.map((r) => (r.cells[c]?.textContent ?? '').trim());
          const v = txt.map(Number);
          if (txt.every((x) => x !== '') && v.every((x) => Number.isFinite(x)) && new Set(v).size > 2) return { ti, c };
        }
      }
      return null;
    });
    expect(target).not.toBeNull();
    const column = () =>
      page.evaluate(
        ({ ti, c }: { ti: number; c: number }) =>
          Array.from((document.querySelectorAll('table.sortable')[ti] as HTMLTableElement).tBodies[0]!.rows).map((r) =>
            Number(r.cells[c]!.textContent)
          ),
        target!,
      );
    const before = await column();
    const header = async () =>
      page.evaluate(({ ti, c }: { ti: number; c: number }) => {
        const th = (document.querySelectorAll('table.sortable')[ti] as HTMLTableElement).tHead!.rows[0]!
          .cells[c] as HTMLElement;
        th.closest('details')?.setAttribute('open', '');
        th.click();
        return th.getAttribute('aria-sort');
      }, target!);
    expect(await header()).toBe('ascending');
    const up = await column();
    expect(up).toEqual([...before].sort((a, b) => a - b));
    expect(await header()).toBe('descending');
    expect(await column()).toEqual([...before].sort((a, b) => b - a));
    // a link to an element inside a closed fold opens it (the folds are <details>, which the
    // browser opens on a fragment navigation into them; a fold of another kind would not)
    const opened = await page.evaluate(async () => {
      let d = document.querySelector('details.fold') as HTMLDetailsElement | null;
      if (!d) {
        // the run report's tables are short: fold one by hand through the same code path
        const t = document.querySelector('main table.sortable') as HTMLTableElement;
        d = document.createElement('details');
        d.className = 'fold';
        t.replaceWith(d);
        d.appendChild(t);
      }
      d.open = false;
      const row = d.querySelector('tbody tr') as HTMLElement;
      row.id = 'lobes-nav-test-row';
      location.hash = '#lobes-nav-test-row';
      await new Promise((r) => setTimeout(r, 100));
      return d.open;
    });
    expect(opened).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
