/**
 * The run report's and the comparison page's size, height and first screen at 1,200 px, for the
 * demo-sized synthetic runs of the browser tests (5 groups × 30 items, 30 and 24 layers, a
 * layer sweep). Prints, per page: HTML bytes, the page's full height at 1,200 px, how far down
 * the verdict table starts and ends, and how many tables are wider than their container.
 *
 *   npx tsx bench/report-pages.ts [--src DIR]
 *
 * --src runs the same measurement against another checkout's src/ (e.g. one made with
 * `git archive COMMIT src | tar -x -C /tmp/before`) to measure a page before a change.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

const si = process.argv.indexOf('--src');
const src = path.resolve(si > 0 ? process.argv[si + 1]! : 'src');
const syn = await import(pathToFileURL(path.join(src, 'report/synthetic.ts')).href);
const rep = await import(pathToFileURL(path.join(src, 'report/index.ts')).href);
const problem = rep.chromiumProblem();
if (problem) {
  console.log(`skipped: ${problem}`);
  process.exit(0);
}
const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-pages-'));
try {
  const a = syn.writeSyntheticRun(path.join(tmp, 'a', 'run'), { layers: 30, samplesPerGroup: 30, seed: 3,
    sweep: true });
  const b = syn.writeSyntheticRun(path.join(tmp, 'b', 'run'), { layers: 24, samplesPerGroup: 30, seed: 5,
    sweep: true });
  const report = await rep.writeReport(a, path.join(tmp, 'report.html'));
  const compare = await rep.writeCompare(a, b, path.join(tmp, 'compare.html'), ['trained', 'control']);
  const browser = await rep.launchChromium();
  try {
    for (const [name, file] of [['report', report], ['compare', compare]] as const) {
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: 1200, height: 900 });
      await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
      await page.waitForFunction(
        () =>
          (globalThis as any).lobesReport?.ready === true ||
          document.documentElement.getAttribute('data-ready') === 'error',
        null,
        { timeout: 60_000 },
      );
      const m = await page.evaluate(() => {
        const d = (globalThis as any).document;
        const t = d.querySelector('table.verdict');
        const r = t ? t.getBoundingClientRect() : null;
        const wide =
          Array.from(d.querySelectorAll('table')).filter((x: any) =>
            x.getBoundingClientRect().width > x.parentElement.getBoundingClientRect().width + 1 ||
            x.getBoundingClientRect().right > d.documentElement.clientWidth + 1
          ).length;
        return { height: d.documentElement.scrollHeight, verdictTop: r ? Math.round(r.top) : null,
          verdictBottom: r ? Math.round(r.bottom) : null, tables: d.querySelectorAll('table').length, wide };
      });
      console.log(
        `${name}: ${(statSync(file).size / 1e6).toFixed(2)} MB, ${m.height} px tall at 1,200 px, verdict table ${
          m.verdictTop === null ? 'none' : `${m.verdictTop}-${m.verdictBottom} px`
        }, ${m.tables} tables, ${m.wide} wider than their container or the page`,
      );
      await page.close();
    }
  } finally {
    await browser.close();
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
