/**
 * Report size and generation time for a 70B-shaped run: 80 layers, 5 groups (10 pairs),
 * 3 projections of 3,584 blocks each (gate/up 112x32, down 32x112), pooled scores for every
 * group, 2,000 t-SNE points. Targets: generation < 10 s, HTML < 30 MB.
 *
 *   npx tsx bench/report-size.ts [--browser] [--loads N]
 *
 * --browser also times page loads in headless Chromium, each in a fresh browser (no compiled-script
 * cache), and prints the median of N loads (default 5) for two 2,000-sample reports: the 70B-shaped
 * one above and a 32-layer one (the browser test's report). A load is timed from navigation start
 * until the scatter and the first pair's six heatmaps are drawn ("ready"), then until a real mouse
 * hover shows a point's label and the pair selector has switched to another pair and drawn it
 * ("interactive"). Target for a 2,000-sample report: interactive within 3 s. It also prints the renderer's CPU
 * time until interactive (its main thread, and all its threads), which other load on the machine barely changes.
 */
import { existsSync, statSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { writeSyntheticRun } from '../src/report/synthetic.js';
import { writeReport, chromiumProblem } from '../src/report/index.js';
import { measureReportLoad, type LoadTiming } from '../src/report/browser.js';
import { plotlySource, PLOTLY_PACKAGE } from '../src/report/html.js';

const dir = path.resolve('bench/out/report-70b');
const out = path.join(dir, 'report.html');
if (existsSync(dir)) rmSync(dir, { recursive: true });
let t = performance.now();
writeSyntheticRun(dir, {
  layers: 80,
  samplesPerGroup: 400,
  grid: { gate_proj: [112, 32], up_proj: [112, 32], down_proj: [32, 112] },
  top: 0.1,
  seed: 70,
});
console.log(
  `synthetic 70B-shaped run written in ${((performance.now() - t) / 1000).toFixed(1)} s (not part of the measurement)`,
);

t = performance.now();
await writeReport(dir, out);
const gen = (performance.now() - t) / 1000;
const mb = statSync(out).size / 1e6;
console.log(`report generation: ${gen.toFixed(2)} s (target < 10 s, ratio ${(gen / 10).toFixed(2)})`);
console.log(
  `report size: ${mb.toFixed(1)} MB (target < 30 MB, ratio ${
    (mb / 30).toFixed(2)
  }), of which Plotly (${PLOTLY_PACKAGE}) ${(plotlySource().length / 1e6).toFixed(1)} MB`,
);

if (process.argv.includes('--browser')) {
  const problem = chromiumProblem();
  if (problem) console.log(`browser timing skipped: ${problem}`);
  else {
    const li = process.argv.indexOf('--loads');
    const loads = li > 0 ? Math.max(1, Number(process.argv[li + 1]) || 5) : 5;
    const small = path.resolve('bench/out/report-2000');
    if (existsSync(small)) rmSync(small, { recursive: true });
    writeSyntheticRun(small, { samplesPerGroup: 400, layers: 32, seed: 8,
      grid: { gate_proj: [56, 16], up_proj: [56, 16], down_proj: [16, 56] } });
    const smallOut = await writeReport(small, path.join(small, 'report.html'));
    const median = (v: number[]) => {
      const s = [...v].sort((a, b) => a - b);
      const m = s.length >> 1;
      return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
    };
    for (const [name, file, pair] of [['2,000 samples, 32 layers x 896 blocks', smallOut, 5], [
      '70B-shaped, 2,000 samples, 80 layers x 3,584 blocks',
      out,
      7,
    ]] as const) {
      const runs: LoadTiming[] = [];
      for (let i = 0; i < loads; i++) runs.push(await measureReportLoad(pathToFileURL(file).href, { pair }));
      const bad = runs.flatMap((r) => r.problems);
      if (bad.length) console.log(`browser: console problems: ${bad.join('; ')}`);
      const m = (k: keyof LoadTiming) => median(runs.map((r) => r[k] as number));
      console.log(`browser, ${name} (${(statSync(file).size / 1e6).toFixed(1)} MB), median of ${loads} cold loads: ` +
        `script start ${m('scriptMs').toFixed(0)} ms, ready ${m('readyMs').toFixed(0)} ms, hover + pair switch ${
          m('interactMs').toFixed(0)
        } ms, ` +
        `interactive ${m('totalMs').toFixed(0)} ms (target 3000 ms, ratio ${(m('totalMs') / 3000).toFixed(2)}); ` +
        `CPU until interactive: main thread ${m('mainThreadCpuMs').toFixed(0)} ms, renderer ${
          m('rendererCpuMs').toFixed(0)
        } ms; ` +
        `all loads: ${runs.map((r) => r.totalMs.toFixed(0)).join(', ')} ms`);
    }
  }
}
