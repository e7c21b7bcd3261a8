/// <reference lib="dom" />
/**
 * Figures that hold their shape, in real headless Chromium: heights survive a window resize,
 * print media and a full-page capture; on the comparison page no two title boxes of a figure
 * intersect or leave the figure, at 1,200 and 1,920 px; the accuracy figure pairs the runs per
 * classifier. Skips, saying why, when no browser is installed.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { writeReport, writeCompare, launchChromium, chromiumProblem, type Browser } from '../../src/report/index.js';
import { openReportPage } from './page.js';
import { writeLabelOverlay } from '../../src/store/labels.js';

const problem = chromiumProblem();
if (problem) console.log(`report layout tests skipped: ${problem} (install Debian's chromium or set LOBES_CHROMIUM)`);

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-layout-'));

const open = openReportPage;

/** Every drawn figure: its id, the div's height and the height Plotly drew the figure at. */
function heights(page: any): Promise<{ id: string; div: number; drawn: number; spec: number }[]> {
  return page.evaluate(() => Array.from(document.querySelectorAll('[data-figure]')).map((e: any) => ({
    id: e.getAttribute('data-figure'),
    div: Math.round(e.getBoundingClientRect().height),
    drawn: Math.round(e._fullLayout.height),
    spec: (globalThis as any).lobesReport.figure(e.getAttribute('data-figure')).layout.height,
  })));
}

interface Box {
  what: string;
  l: number;
  r: number;
  t: number;
  b: number;
}
interface Fig extends Box {
  id: string;
  boxes: Box[];
}

/** Let Plotly's responsive handler (a 100 ms timer after the resize event) finish its redraws. */
const settle = (page: any) => page.waitForTimeout(600);

describe.skipIf(!!problem)('report figures hold their shape in headless Chromium', () => {
  let browser: Browser;
  let report: string;
  let compare: string;
  let correct: Record<string, string>;
  beforeAll(async () => {
    const a = writeSyntheticRun(path.join(tmp, 'a', 'run'), { layers: 30, samplesPerGroup: 30, seed: 3, sweep: true });
    // a label axis added after extraction (as lobes eval label writes it): every third item right, two unlisted
    const ids = readFileSync(path.join(a, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) =>
      JSON.parse(l).id as string
    );
    correct = Object.fromEntries(ids.slice(2).map((id, i) => [id, i % 3 === 0 ? 'correct' : 'wrong']));
    writeLabelOverlay(a, { format: 'lobes-labels', axis: 'correct', default: 'unevaluated', source: {},
      values: correct });
    const b = writeSyntheticRun(path.join(tmp, 'b', 'run'), { layers: 24, samplesPerGroup: 30, seed: 5, sweep: true });
    report = await writeReport(a, path.join(tmp, 'report.html'));
    // long names (as GGUF file names with a control and a composition make them) must wrap, not spill
    compare = await writeCompare(a, b, path.join(tmp, 'compare.html'), [
      'SmolLM2-135M-Instruct-Q8_0, random-weights control · en+zh, 1985 items',
      'Meta-Llama-3.1-8B-Instruct-Q4_K_M · en+zh, 1985 items',
    ]);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('keeps every figure at its height through resizes, print media and a full-page capture', async () => {
    for (const file of [report, compare]) {
      const { page, problems } = await open(browser, file, 1400);
      const before = await heights(page);
      expect(before.length).toBeGreaterThanOrEqual(4);
      for (const f of before) {
        expect(f.spec, f.id).toBeGreaterThan(300);
        expect(f.drawn, f.id).toBe(f.spec);
        expect(f.div, f.id).toBe(f.spec);
      }
      const expected = before.map((f) => [f.id, f.spec]);
      for (const width of [900, 1920, 1250]) {
        await page.setViewportSize({ width, height: 700 });
        await settle(page);
        expect((await heights(page)).map((f) => [f.id, f.drawn]), `after a resize to ${width} px`).toEqual(expected);
        expect((await heights(page)).map((f) => [f.id, f.div]), `after a resize to ${width} px`).toEqual(expected);
        // the width follows the window: every figure spans its column
        const widths = await page.evaluate(() =>
          Array.from(document.querySelectorAll('[data-figure]')).map((e: any) =>
            Math.abs(e._fullLayout.width - e.clientWidth)
          )
        );
        for (const w of widths) expect(w).toBeLessThanOrEqual(2);
      }
      await page.emulateMedia({ media: 'print' });
      await page.setViewportSize({ width: 794, height: 1123 }); // A4 at 96 dpi
      await settle(page);
      expect((await heights(page)).map((f) => [f.id, f.drawn]), 'in print media').toEqual(expected);
      await page.emulateMedia({ media: 'screen' });
      await page.setViewportSize({ width: 1400, height: 900 });
      await page.screenshot({ fullPage: true });
      await settle(page);
      expect((await heights(page)).map((f) => [f.id, f.drawn]), 'after a full-page capture').toEqual(expected);
      // the t-SNE keeps both axes with their titles
      const axes = await page.evaluate(() =>
        Array.from(document.querySelectorAll('[data-figure$="scatter"]')).map((
          e,
        ) => [e.querySelectorAll('.xtitle').length, e.querySelectorAll('.ytitle').length])
      );
      for (const a of axes) expect(a).toEqual([1, 1]);
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  for (const width of [1200, 1920]) {
    it(`compare page at ${width} px: no two title boxes of a figure intersect, and none leaves its figure`, async () => {
      const { page, problems } = await open(browser, compare, width);
      await page.screenshot({ path: path.join(tmp, `compare-${width}.png`), fullPage: true });
      const figs: Fig[] = await page.evaluate(() => Array.from(document.querySelectorAll('[data-figure]')).map((e) => {
        const r = e.getBoundingClientRect();
        // Titles: the figure's, each axis's, each annotation (the heatmaps' subplot titles), the legend and the colour bar.
        const sel = 'text.gtitle, g[class^="g-x"] text, g[class^="g-y"] text, g.annotation, g.legend, g.colorbar';
        const boxes = Array.from(e.querySelectorAll(sel)).map((t) => {
          const b = t.getBoundingClientRect();
          return { what: (t.getAttribute('class') || '') + ' "' + (t.textContent || '').slice(0, 40) + '"', l: b.left,
            r: b.right, t: b.top, b: b.bottom };
        }).filter((b) => b.r - b.l > 0.5 && b.b - b.t > 0.5);
        return { id: e.getAttribute('data-figure')!, what: 'figure', l: r.left, r: r.right, t: r.top, b: r.bottom,
          boxes };
      }));
      expect(figs.map((f) => f.id)).toEqual(
        expect.arrayContaining(['run1-scatter', 'run2-scatter', 'sweep', 'run1-pair-1', 'run2-pair-1', 'separation']),
      );
      const overlaps: string[] = [];
      for (const f of figs) {
        expect(f.boxes.length, f.id).toBeGreaterThan(2);
        f.boxes.forEach((a, i) => {
          if (a.l < f.l - 1 || a.r > f.r + 1 || a.t < f.t - 1 || a.b > f.b + 1)
            overlaps.push(`${f.id}: ${a.what} leaves the figure`);
          f.boxes.slice(i + 1).forEach((b) => {
            if (Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1)
              overlaps.push(`${f.id}: ${a.what} and ${b.what}`);
          });
        });
      }
      expect(overlaps).toEqual([]);
      // the heatmaps have six subplot titles each
      for (const id of ['run1-pair-1', 'run2-pair-1'])
        expect(figs.find((f) => f.id === id)!.boxes.filter((b) => b.what.startsWith('annotation ')).length).toBe(6);
      expect(problems).toEqual([]);
      await page.close();
    });
  }

  it('the accuracy figure: its y axis spans the data, not 0–1; the chance label is clear of every marker and band; tick labels level and inside', async () => {
    for (const file of [report, compare]) {
      const { page } = await open(browser, file, 1200);
      const m = await page.evaluate(() => {
        const gd: any = document.querySelector('[data-figure="separation"]');
        const ys: number[] = [];
        for (const t of gd.data) {
          (t.y || []).forEach((v: number | null, i: number) => {
            if (v === null || v === undefined) return;
            if (t.type === 'bar') ys.push(t.base[i], t.base[i] + v);
            else {
              ys.push(v);
              if (t.error_y) ys.push(v + t.error_y.array[i], v - t.error_y.arrayminus[i]);
            }
          });
        }
        const svg = gd.querySelector('svg.main-svg').getBoundingClientRect();
        const ann = gd.querySelector('.annotation-text').getBoundingClientRect();
        const data = Array.from(gd.querySelectorAll('.point, .bars path')).map((e: any) => e.getBoundingClientRect())
          .filter((b: DOMRect) => b.width > 0);
        const meets = (a: DOMRect, b: DOMRect) =>
          a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const ticks = Array.from(gd.querySelectorAll('.xtick text')).map((e: any) => ({ b: e.getBoundingClientRect(),
          t: e.getAttribute('transform') || '' })
        );
        return {
          range: gd._fullLayout.yaxis.range,
          lo: Math.min(...ys),
          hi: Math.max(...ys),
          chance: gd.layout.shapes[0].y0,
          annText: gd.querySelector('.annotation-text').textContent,
          hits: data.filter((b: DOMRect) => meets(b, ann)).length,
          points: data.length,
          outside: ticks.filter(({ b }) => b.left < svg.left - 0.5 || b.right > svg.right + 0.5).length,
          rotated: ticks.filter(({ t }) => /rotate\((?!0)/.test(t)).length,
        };
      });
      const what = path.basename(file);
      expect(m.points, what).toBeGreaterThan(3);
      // the axis holds every value, CI end, band end and chance, and is not much wider than they are
      expect(m.range[0], what).toBeLessThanOrEqual(Math.min(m.lo, m.chance));
      expect(m.range[1], what).toBeGreaterThanOrEqual(Math.max(m.hi, m.chance));
      expect(m.range[1] - m.range[0], what).toBeLessThan(
        1.25 * (Math.max(m.hi, m.chance) - Math.min(m.lo, m.chance)) + 0.05,
      );
      expect(m.annText, what).toMatch(/^chance/);
      expect(m.hits, what).toBe(0);
      expect(m.outside, what).toBe(0);
      expect(m.rotated, what).toBe(0);
      await page.close();
    }
  });

  it('compare page: the accuracy figure puts both runs side by side within each classifier', async () => {
    const { page } = await open(browser, compare, 1400);
    const sep = await page.evaluate(() => {
      const gd: any = document.querySelector('[data-figure="separation"]');
      return { traces: gd.data.map((t: any) => ({ name: t.name, type: t.type, x: t.x, text: t.text })),
        ticks: gd.layout.xaxis.ticktext.map((t: string) => t.replace(/<br>/g, ' ')) };
    });
    const values = sep.traces.filter((t: any) => t.type === 'scatter' && !/null/.test(t.name));
    expect(values.length).toBe(2);
    const [r1, r2] = values;
    expect(r1.x.length).toBe(sep.ticks.length);
    for (let k = 0; k < sep.ticks.length; k++) {
      // same classifier, same category (nearest tick), run 1 left of run 2, and no other category between them
      expect(Math.abs(r1.x[k] - k)).toBeLessThan(0.5);
      expect(Math.abs(r2.x[k] - k)).toBeLessThan(0.5);
      expect(r1.x[k]).toBeLessThan(r2.x[k]);
      expect(r1.text[k].endsWith(sep.ticks[k])).toBe(true);
      expect(r2.text[k].endsWith(sep.ticks[k])).toBe(true);
    }
    // each run's null band sits under its own markers
    const bands = sep.traces.filter((t: any) => t.type === 'bar');
    expect(bands.map((b: any) => b.x)).toEqual([r1.x, r2.x]);
    await page.close();
  });

  it('recolours the t-SNE by any label axis, keeping every point once and its height', async () => {
    const { page, problems } = await open(browser, report, 1300);
    const traces = () => page.evaluate(() => {
      const gd: any = document.querySelector('[data-figure="scatter"]');
      return { names: gd.data.map((t: any) => t.name), n: gd.data.map((t: any) => t.x.length),
        title: gd.layout.title.text, height: gd.getBoundingClientRect().height };
    });
    const before = await traces();
    expect(before.names.length).toBe(5);
    expect(
      await page.evaluate(() =>
        Array.from((document.getElementById('colour-select') as HTMLSelectElement).options).map((o) => o.value)
      ),
    ).toEqual(['aspect', 'correct']);
    await page.selectOption('#colour-select', 'correct');
    await page.waitForFunction(() =>
      /coloured by correct/.test((document.querySelector('[data-figure="scatter"]') as any).layout.title.text)
    );
    const after = await traces();
    const counts: Record<string, number> = { unevaluated: 2, correct: 0, wrong: 0 };
    for (const v of Object.values(correct)) counts[v]!++;
    expect(Object.fromEntries(after.names.map((nm: string, i: number) => [nm.replace(/ \(\d+\)$/, ''), after.n[i]])))
      .toEqual(counts);
    expect(after.height).toBe(before.height);
    // the export follows the colouring shown
    const spec = await page.evaluate(() => (globalThis as any).lobesReport.figure('scatter'));
    expect(spec.data.length).toBe(3);
    // the fits table lists both labels with chance levels
    const fitRows = await page.evaluate(() =>
      Array.from(document.querySelectorAll('details.fits tbody tr')).map((r) => r.firstElementChild!.textContent)
    );
    expect(fitRows).toEqual(['aspect (clustered by)', 'correct']);
    expect(problems).toEqual([]);
    await page.close();
  });
});
