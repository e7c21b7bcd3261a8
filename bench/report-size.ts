/**
 * Report size and generation time for a 70B-shaped run: 80 layers, 5 groups (10 pairs),
 * 3 projections of 3,584 blocks each (gate/up 112x32, down 32x112), pooled scores for every
 * group, 2,000 t-SNE points. Targets: generation < 10 s, HTML < 30 MB.
 *
 *   npx tsx bench/report-size.ts [--browser]
 *
 * --browser also loads the page (2,000 points, 10 pairs) in headless Chromium and times it until
 * the scatter and the first pair's six 80 x 3,584 heatmaps are drawn (target for a 2,000-sample
 * report: interactive within 3 s), and a switch to another pair.
 */
import { existsSync, statSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { writeSyntheticRun } from '../src/report/synthetic.js';
import { writeReport, launchChromium, chromiumProblem } from '../src/report/index.js';
import { plotlySource } from '../src/report/html.js';

const dir = path.resolve('bench/out/report-70b');
const out = path.join(dir, 'report.html');
if (existsSync(dir)) rmSync(dir, { recursive: true });
let t = performance.now();
writeSyntheticRun(dir, {
  layers: 80, samplesPerGroup: 400, grid: { gate_proj: [112, 32], up_proj: [112, 32], down_proj: [32, 112] }, top: 0.1, seed: 70,
});
console.log(`synthetic 70B-shaped run written in ${((performance.now() - t) / 1000).toFixed(1)} s (not part of the measurement)`);

t = performance.now();
await writeReport(dir, out);
const gen = (performance.now() - t) / 1000;
const mb = statSync(out).size / 1e6;
console.log(`report generation: ${gen.toFixed(2)} s (target < 10 s, ratio ${(gen / 10).toFixed(2)})`);
console.log(`report size: ${mb.toFixed(1)} MB (target < 30 MB, ratio ${(mb / 30).toFixed(2)}), of which Plotly ${(plotlySource().length / 1e6).toFixed(1)} MB`);

if (process.argv.includes('--browser')) {
  const problem = chromiumProblem();
  if (problem) console.log(`browser timing skipped: ${problem}`);
  else {
    const b = await launchChromium();
    try {
      const page = await b.context.newPage();
      t = performance.now();
      await page.goto(pathToFileURL(out).href);
      await page.waitForFunction(() => (globalThis as any).lobesReport?.ready === true, null, { timeout: 120_000 });
      console.log(`browser: page ready with the first pair's 6 heatmaps in ${((performance.now() - t) / 1000).toFixed(2)} s`);
      t = performance.now();
      await page.evaluate(() => (globalThis as any).lobesReport.showPair(7));
      console.log(`browser: switch to pair 8 in ${((performance.now() - t) / 1000).toFixed(2)} s`);
    } finally {
      await b.close();
    }
  }
}
