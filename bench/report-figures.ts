/**
 * Page load to interactive of a 1,985-item report (the size of the SocialEval demo run), with the
 * page script of a base commit against the page script of this checkout, loaded alternately in
 * one run on the same page data. The page data (payload) and Plotly are the same in both pages;
 * only the page script differs, so the ratio measures the figure changes (explicit heights,
 * paired accuracy bars, the colour-by selector and the per-label fit tables).
 *
 *   npx tsx bench/report-figures.ts [--base COMMIT] [--loads N]
 *
 * The base page script is bundled with esbuild from `git show COMMIT:src/report/client/...`.
 * A load is timed as in bench/report-size.ts (src/report/browser.ts measureReportLoad): from
 * navigation start until a real hover shows a point's label and a pair switch has drawn
 * ("interactive"), each in a fresh browser. Target: after / before ≤ 1 (no slower than before).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { writeSyntheticRun } from '../src/report/synthetic.js';
import { loadRun, nameRun, runPayload, renderPage, chromiumProblem } from '../src/report/index.js';
import { clientScript } from '../src/report/client-bundle.js';
import { measureReportLoad, type LoadTiming } from '../src/report/browser.js';
import { writeLabelOverlay } from '../src/store/labels.js';
import { axisFits, ISLAND_PERMUTATIONS } from '../src/report/islands.js';
import { performance } from 'node:perf_hooks';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : def;
};
const base = arg('--base', '9171046');
const loads = Math.max(1, Number(arg('--loads', '5')) || 5);
const problem = chromiumProblem();
if (problem) {
  console.log(`skipped: ${problem}`);
  process.exit(0);
}

const out = path.resolve('bench/out/report-figures');
if (existsSync(out)) rmSync(out, { recursive: true });
mkdirSync(out, { recursive: true });

// 1,985 items: five aspects of 397, 32 layers, and a second label axis (language) as an overlay.
const run = writeSyntheticRun(path.join(out, 'run'), { samplesPerGroup: 397, layers: 32, seed: 8,
  grid: { gate_proj: [56, 16], up_proj: [56, 16], down_proj: [16, 56] } });
const model = nameRun(await loadRun(run));
writeLabelOverlay(run, { format: 'lobes-labels', axis: 'language', default: 'en', source: {},
  values: Object.fromEntries(model.samples.filter((_, i) => i % 2).map((s) => [s.id, 'zh'])) });
const payload = { title: 'bench', generatedBy: 'bench/report-figures.ts',
  runs: [runPayload(nameRun(await loadRun(run)))], comparison: null };
const afterHtml = renderPage(payload);
{
  // Node side: the per-label fits of the map (src/report/islands.ts) that the page data now carries.
  const sc = payload.runs[0]!.scatter!;
  const t0 = performance.now();
  axisFits(sc.x, sc.y, [{ axis: 'aspect', codes: Int32Array.from(sc.g), classes: sc.groups.length },
    ...sc.axes!.map((a) => ({ axis: a.axis, codes: Int32Array.from(a.v), classes: a.values.length }))]);
  console.log(
    `label fits of the map (${sc.x.length} points, ${
      1 + sc.axes!.length
    } labels, ${ISLAND_PERMUTATIONS} permutations): ${(performance.now() - t0).toFixed(0)} ms`,
  );
}

// The base commit's page script, bundled from its sources.
const src = mkdtempSync(path.join(tmpdir(), 'lobes-base-client-'));
const files = execFileSync('git', ['ls-tree', '-r', '--name-only', base, 'src/report/client'], { encoding: 'utf8' })
  .trim().split('\n');
for (const f of [...files, 'src/report/types.ts']) {
  const to = path.join(src, f);
  mkdirSync(path.dirname(to), { recursive: true });
  writeFileSync(to, execFileSync('git', ['show', `${base}:${f}`]));
}
const bundled = await build({ entryPoints: [path.join(src, 'src/report/client/main.ts')], bundle: true, format: 'iife',
  platform: 'browser', target: 'es2020', charset: 'ascii', legalComments: 'none', write: false, logLevel: 'silent' });
const baseScript = bundled.outputFiles[0]!.text;
rmSync(src, { recursive: true });
const esc = (s: string) => s.replace(/<\/(script)/gi, '<\\/$1');
const cur = esc(clientScript());
if (!afterHtml.includes(cur)) throw new Error('page script not found in the page');
const beforeHtml = afterHtml.replace(cur, () => esc(baseScript));
const files2 = { before: path.join(out, 'before.html'), after: path.join(out, 'after.html') };
writeFileSync(files2.before, beforeHtml);
writeFileSync(files2.after, afterHtml);

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const t: Record<'before' | 'after', LoadTiming[]> = { before: [], after: [] };
for (let i = 0; i < loads; i++) {
  for (const k of (i % 2 ? ['after', 'before'] : ['before', 'after']) as ('before' | 'after')[])
    t[k].push(await measureReportLoad(pathToFileURL(files2[k]).href, { pair: 5 }));
}
const bad = [...t.before, ...t.after].flatMap((r) => r.problems);
if (bad.length) console.log(`console problems: ${bad.join('; ')}`);
const m = (k: 'before' | 'after', f: keyof LoadTiming) => median(t[k].map((r) => r[f] as number));
for (const k of ['before', 'after'] as const) {
  console.log(
    `${k} (${
      k === 'before' ? `page script of ${base}` : 'this checkout'
    }), 1,985 items, median of ${loads} cold loads: ready ${m(k, 'readyMs').toFixed(0)} ms, ` +
      `interactive ${m(k, 'totalMs').toFixed(0)} ms, main-thread CPU ${m(k, 'mainThreadCpuMs').toFixed(0)} ms`,
  );
}
console.log(
  `after / before: interactive ${(m('after', 'totalMs') / m('before', 'totalMs')).toFixed(2)}, main-thread CPU ${
    (m('after', 'mainThreadCpuMs') / m('before', 'mainThreadCpuMs')).toFixed(2)
  } (target ≤ 1)`,
);
