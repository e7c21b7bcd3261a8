/// <reference lib="dom" />
/**
 * The report in real headless Chromium (Debian's chromium via playwright-core).
 * Skips, saying why, when no browser is installed.
 */
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { writeReport, writeCompare, exportFigures, launchChromium, chromiumProblem, loadRun, compareRuns,
  type Browser } from '../../src/report/index.js';
import { measureReportLoad, type LoadTiming } from '../../src/report/browser.js';
import { clientScript } from '../../src/report/client-bundle.js';
import { jsonForScript } from '../../src/report/html.js';
import { isLobesFigure } from '../../src/report/marks.js';
import { main } from '../../src/cli/main.js';
import { decodePng, distinctColours } from './png.js';

const problem = chromiumProblem();
if (problem) console.log(`report browser tests skipped: ${problem} (install Debian's chromium or set LOBES_CHROMIUM)`);

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-browser-'));
const EVIL_TEXT = '<script>window.__pwned=1</script> and "><img src=x onerror="window.__pwned=2">';
const EVIL_GROUP = '"><img src=x onerror="window.__pwned=3">';

async function open(browser: Browser, file: string) {
  const page = await browser.context.newPage();
  const problems: string[] = [];
  page.on('console', (m: any) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e: Error) => problems.push(`pageerror: ${e.message}`));
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

describe.skipIf(!!problem)('report in headless Chromium', () => {
  let browser: Browser;
  let runDir: string;
  let file: string;
  beforeAll(async () => {
    runDir = writeSyntheticRun(path.join(tmp, 'run'), {
      groups: ['Cooperation', EVIL_GROUP, 'Innovation'],
      layers: 6,
      seed: 4,
      sweep: true,
      text: (i, g) => (i === 4 ? EVIL_TEXT : `item ${i} of ${g}`),
    });
    file = await writeReport(runDir, path.join(tmp, 'report.html'));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('loads without console errors and every figure has data', async () => {
    const { page, problems } = await open(browser, file);
    const samples = readFileSync(path.join(runDir, 'samples.jsonl'), 'utf8').trim().split('\n').length;
    const regions = JSON.parse(readFileSync(path.join(runDir, 'wanda', 'regions.json'), 'utf8'));
    const ids: string[] = await page.evaluate(() => (globalThis as any).lobesReport.figureIds());
    expect(ids).toEqual(['scatter', 'sweep', 'pair-1', 'pair-2', 'pair-3', 'separation']);
    // scatter: one trace per group, every sample plotted once
    const sc = await page.evaluate(() => {
      const gd: any = document.querySelector('[data-figure="scatter"]');
      return gd.data.map((t: any) => ({ n: t.x.length, ny: t.y.length, type: t.type }));
    });
    expect(sc.length).toBe(3);
    expect(sc.reduce((s: number, t: any) => s + t.n, 0)).toBe(samples);
    for (const t of sc) expect(t.ny).toBe(t.n);
    // each pair drawn on demand: 6 heatmaps (3 projections x 2 directions) whose coloured cells count the difference blocks
    for (let k = 0; k < 3; k++) {
      await page.evaluate((k: number) => (globalThis as any).lobesReport.showPair(k), k);
      const cells: number[] = await page.evaluate((k: number) => {
        const gd: any = document.querySelector(`[data-figure="pair-${k + 1}"]`);
        return gd.data.map((t: any) =>
          t.z.reduce((s: number, row: any[]) => s + row.filter((v) => v !== null).length, 0)
        );
      }, k);
      expect(cells.length).toBe(6);
      const d = regions.differences[k];
      const count = (set: Record<string, number[]>, proj: string) =>
        Object.entries(set).filter(([name]) => name.endsWith(proj)).reduce((s, [, v]) => s + v.length, 0);
      expect(cells).toEqual(
        ['gate_proj', 'up_proj', 'down_proj'].flatMap((p) => [count(d.aMinusB, p), count(d.bMinusA, p)]),
      );
      expect(cells.every((c) => c > 0)).toBe(true);
    }
    // the sweep: balanced accuracy with its null band (two traces filled between) and the chance lines
    const metrics = JSON.parse(readFileSync(path.join(runDir, 'cluster', 'metrics.json'), 'utf8'));
    const sw = await page.evaluate(() => {
      const gd: any = document.querySelector('[data-figure="sweep"]');
      return { traces: gd.data.map((t: any) => ({ name: t.name, fill: t.fill, n: t.y.length, y: t.y })),
        shapes: gd.layout.shapes.map((s: any) => s.y0) };
    });
    expect(sw.traces.map((t: any) => t.n)).toEqual([6, 6, 6, 6]);
    expect(sw.traces[1]).toMatchObject({ name: 'null 95% band (balanced accuracy)', fill: 'tonexty' });
    expect(sw.traces[0].y).toEqual(metrics.sweep.map((w: any) => w.balancedAccuracy.nullBand[0]));
    expect(sw.traces[2].y).toEqual(metrics.sweep.map((w: any) => w.balancedAccuracy.value));
    expect(sw.shapes).toEqual([metrics.chance.balancedAccuracy, metrics.chance.majorityRate]);
    // the separation figure: every classifier's balanced accuracy, its null band, the chance line
    const sep = await page.evaluate(() => {
      const gd: any = document.querySelector('[data-figure="separation"]');
      return { names: gd.data.map((t: any) => t.name), x: gd.data[2].x, y: gd.data[2].y,
        chance: gd.layout.shapes[0].y0 };
    });
    expect(sep.names).toEqual(['null 95% band', 'null mean', 'balanced accuracy']);
    expect(sep.x.length).toBe(5 + 1); // kNN in 3 spaces, probe in 2, one token baseline
    expect(sep.y[0]).toBe(metrics.spaces[0].knn.balancedAccuracy.value);
    expect(sep.chance).toBe(metrics.chance.balancedAccuracy);
    // the first lines say what beats chance
    const summary = await page.evaluate(() =>
      Array.from(document.querySelectorAll('#notes .summary p')).map((p) => p.textContent)
    );
    expect(summary[0]).toMatch(/^3 classes of "aspect" on 60 items: chance balanced accuracy is 0\.33/);
    expect(summary.some((l: string | null) => l!.startsWith('Separated beyond chance'))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('the bundled page script, evaluated alone, defines window.lobesReport', async () => {
    // A page with the report's skeleton and a run without analyses (so no Plotly is needed), then the bundle.
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e: Error) => problems.push(e.message));
    const payload = { title: 'bare', generatedBy: 'g', comparison: null,
      runs: [{ name: 'r', randomModel: false, provenance: [['run', 'r']], scatter: null, cluster: null,
        wanda: null }] };
    await page.setContent('<header><h1 id="title"></h1><div id="notes"></div></header><main id="app"></main>' +
      `<script type="application/json" id="lobes-data">${jsonForScript(payload)}</script>`);
    expect(await page.evaluate(() => typeof (globalThis as any).lobesReport)).toBe('undefined');
    await page.addScriptTag({ content: clientScript() });
    await page.waitForFunction(() => (globalThis as any).lobesReport?.ready === true, null, { timeout: 10_000 });
    const api = await page.evaluate(() => {
      const r = (globalThis as any).lobesReport;
      return { keys: Object.keys(r).sort(), ids: r.figureIds(), pairs: r.pairs(), title: document.title,
        sections: Array.from(document.querySelectorAll('#app > section')).map((s) => s.id) };
    });
    expect(api.keys).toEqual(['figure', 'figureIds', 'pairs', 'ready', 'readyMs', 'showPair', 'startMs', 'toImage']);
    // A run without analyses shows only what it holds: no empty map, regions or metrics section.
    expect(api).toMatchObject({ ids: [], pairs: [], title: 'bare', sections: ['provenance'] });
    expect(await page.evaluate(() => (globalThis as any).lobesReport.showPair(0))).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows hostile dataset strings as text and runs none of them', async () => {
    const { page, problems } = await open(browser, file);
    // hover the planted item (sample 4 belongs to group index 1)
    const hover = await page.evaluate(async () => {
      const gd: any = document.querySelector('[data-figure="scatter"]');
      const ci = gd.data.findIndex((t: any) => t.text.some((s: string) => s.includes('__pwned=1')));
      const pi = gd.data[ci].text.findIndex((s: string) => s.includes('__pwned=1'));
      (globalThis as any).Plotly.Fx.hover(gd, [{ curveNumber: ci, pointNumber: pi }]);
      await new Promise((r) => setTimeout(r, 100));
      return document.querySelector('.hoverlayer')!.textContent;
    });
    expect(hover).toContain('<script>window.__pwned=1</script>');
    expect(hover).toContain('"><img src=x');
    const legend = await page.evaluate(() => document.querySelector('.legend')!.textContent);
    expect(legend).toContain(EVIL_GROUP);
    const cells = await page.evaluate(() => Array.from(document.querySelectorAll('td')).map((td) => td.textContent));
    expect(cells).toContain(EVIL_GROUP);
    const options = await page.evaluate(() =>
      Array.from(document.querySelectorAll('#pair-select option')).map((o) => o.textContent)
    );
    expect(options[0]).toBe(`1. Cooperation vs ${EVIL_GROUP}`);
    await page.evaluate(() => (globalThis as any).lobesReport.showPair(2));
    expect(await page.evaluate(() => document.querySelectorAll('img').length)).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a 2,000-sample report is interactive within 3 s', async () => {
    const big = writeSyntheticRun(path.join(tmp, 'big'), { samplesPerGroup: 400, layers: 32, seed: 8,
      grid: { gate_proj: [56, 16], up_proj: [56, 16], down_proj: [16, 56] } });
    const f = await writeReport(big, path.join(tmp, 'big.html'));
    // Navigation start -> scatter and first pair drawn -> a real mouse hover shows the point's label -> the pair
    // selector switches to pair 6 and its heatmaps are drawn. Each load runs in a fresh browser (nothing cached).
    // The test machine is shared, and other work only ever adds wall time. So:
    // - the page's main thread may spend at most 2.5 s of CPU (load-independent; the browser's other threads get
    //   the remaining 0.5 s of the 3 s target);
    // - the fastest load must take at most 3 s of wall time, a bound stretched by the CPU over-subscription seen
    //   (1-minute load average / cores, at least 1), so that a busy machine does not fail the test.
    // Up to 3 more loads run (stopping at the first within both bounds) when a burst of other work slowed all 3.
    // A regression (a bigger bundle, slower drawing) slows every load and still fails. bench/report-size.ts
    // --browser gives the median of N loads.
    const load = os.loadavg()[0]!;
    const over = Math.max(1, load / os.cpus().length);
    const wallBound = 3000 * over;
    const ok = (l: LoadTiming) => l.totalMs <= wallBound && l.mainThreadCpuMs <= 2500;
    const loads: LoadTiming[] = [];
    for (let i = 0; i < 6; i++) {
      if (i >= 3 && loads.some(ok)) break;
      if (i === 3) await new Promise((r) => setTimeout(r, 2000));
      loads.push(await measureReportLoad(pathToFileURL(f).href, { pair: 5 }));
    }
    const fmt = (l: LoadTiming) =>
      `${l.totalMs.toFixed(0)} ms (script ${l.scriptMs.toFixed(0)}, ready ${
        l.readyMs.toFixed(0)
      }, + hover and pair switch ${l.interactMs.toFixed(0)}; main-thread CPU ${l.mainThreadCpuMs.toFixed(0)})`;
    const best = (k: 'totalMs' | 'mainThreadCpuMs') => Math.min(...loads.map((l) => l[k]));
    console.log(`2,000-sample report, navigation start to interactive: ${loads.map(fmt).join('; ')}; ` +
      `fastest ${best('totalMs').toFixed(0)} ms (bound ${wallBound.toFixed(0)} ms at load ${
        load.toFixed(1)
      } on ${os.cpus().length} cores), least main-thread CPU ${best('mainThreadCpuMs').toFixed(0)} ms`);
    for (const l of loads) {
      expect(l.hover).toMatch(/item-/);
      expect(l.problems).toEqual([]);
      expect(l.readyMs).toBeGreaterThan(l.scriptMs);
      expect(l.mainThreadCpuMs).toBeGreaterThan(0);
    }
    expect(best('mainThreadCpuMs')).toBeLessThanOrEqual(2500);
    expect(best('totalMs')).toBeLessThanOrEqual(wallBound);
    // the page held all 2,000 points
    const { page } = await open(browser, f);
    expect(
      await page.evaluate(() =>
        (document.querySelector('[data-figure="scatter"]') as any).data.reduce((s: number, t: any) => s + t.x.length, 0)
      ),
    ).toBe(2000);
    await page.close();
  });

  it('exports every figure as a non-blank PNG of the requested size, and as SVG', async () => {
    const png = path.join(tmp, 'png');
    const svg = path.join(tmp, 'svg');
    const files = await exportFigures(file, { png, svg, width: 640, height: 420 });
    expect(readdirSync(png).sort()).toEqual(['pair-1.png', 'pair-2.png', 'pair-3.png', 'scatter.png', 'separation.png',
      'sweep.png']);
    expect(files.length).toBe(12);
    for (const f of readdirSync(png)) {
      const img = decodePng(readFileSync(path.join(png, f)));
      expect([img.width, img.height]).toEqual([640, 420]);
      expect(distinctColours(img)).toBeGreaterThan(8);
    }
    for (const f of readdirSync(svg)) {
      const text = readFileSync(path.join(svg, f), 'utf8');
      expect(text.startsWith('<svg')).toBe(true);
      expect(text).toMatch(/width="640"/);
      expect(text).not.toMatch(/<img/i); // hostile labels are text nodes (escaped), never elements
    }
    // every figure carries lobes' mark, so exporting again replaces them
    for (const f of files) expect(isLobesFigure(f), f).toBe(true);
    expect(await exportFigures(file, { png, svg, width: 640, height: 420 })).toEqual(files);
  });

  it("report --png into a folder holding a user file of a figure's name fails before the page or any figure is written", async () => {
    const png = path.join(tmp, 'figs-user');
    mkdirSync(png);
    const holiday = path.join(png, 'scatter.png');
    writeFileSync(holiday, 'my holiday photo\n');
    const page = path.join(tmp, 'checked-first.html');
    const out: string[] = [];
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((s: any) => (out.push(String(s)), true));
    const std = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    let code: number;
    try {
      code = await main(['report', runDir, '--out', page, '--png', png, '--width', '320', '--height', '240']);
    } finally {
      err.mockRestore();
      std.mockRestore();
    }
    expect(code).toBe(1);
    expect(out.join('')).toMatch(
      /^lobes report: .*figs-user\/scatter\.png: figure file exists and was not written by lobes; it is not overwritten \(give a new file name, or move the file away\)\n$/,
    );
    expect(existsSync(page)).toBe(false);
    expect(readdirSync(png)).toEqual(['scatter.png']);
    expect(readFileSync(holiday, 'utf8')).toBe('my holiday photo\n');
  });

  it('compare page: both runs side by side on one colour scale, and the full metrics table', async () => {
    const a = writeSyntheticRun(path.join(tmp, 'a'), { layers: 4, seed: 31 });
    const b = writeSyntheticRun(path.join(tmp, 'b'), { layers: 8, seed: 32,
      grid: { gate_proj: [12, 4], up_proj: [12, 4], down_proj: [4, 12] } });
    const f = await writeCompare(a, b, path.join(tmp, 'compare.html'));
    const { page, problems } = await open(browser, f);
    const ids: string[] = await page.evaluate(() => (globalThis as any).lobesReport.figureIds());
    expect(ids.filter((i) => i.endsWith('scatter'))).toEqual(['run1-scatter', 'run2-scatter']);
    expect(ids.filter((i) => i.includes('pair-')).length).toBe(20);
    const axes = await page.evaluate(() =>
      ['run1-pair-1', 'run2-pair-1'].map((id) => {
        const gd: any = document.querySelector(`[data-figure="${id}"]`);
        return { cmin: gd.layout.coloraxis.cmin, cmax: gd.layout.coloraxis.cmax, rows: gd.data[0].z.length };
      })
    );
    expect(axes[0]!.cmin).toBe(axes[1]!.cmin);
    expect(axes[0]!.cmax).toBe(axes[1]!.cmax);
    expect(axes.map((x: any) => x.rows)).toEqual([4, 8]);
    const expected = compareRuns(await loadRun(a), await loadRun(b));
    // The full metrics table (the verdict table above it is also a table.compare).
    const rows = await page.evaluate(() => document.querySelectorAll('table.compare:not(.verdict) tbody tr').length);
    expect(rows).toBe(expected.rows.length);
    expect(await page.evaluate(() => document.querySelectorAll('table.verdict.compare').length)).toBeGreaterThan(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
