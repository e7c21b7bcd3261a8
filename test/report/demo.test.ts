/**
 * `lobes demo` end to end: built-in dataset and random-weights tiny model through extract, wanda,
 * cluster and report. Checks the report against the run's own files.
 */
import { describe, it, expect } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { main } from '../../src/cli/main.js';
import { BUILTIN_MODEL_DIR } from '../../src/report/index.js';
import { cli } from '../runtime/helpers.js';

const haveModel = existsSync(path.join(BUILTIN_MODEL_DIR, 'model.onnx'));
if (!haveModel) console.log(`demo test skipped: the built-in model is missing at ${BUILTIN_MODEL_DIR}`);

describe.skipIf(!haveModel)('lobes demo', () => {
  it('refuses --out over a report.html lobes did not write before the pipeline runs', async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'lobes-demo-')), 'mine');
    mkdirSync(out);
    const page = path.join(out, 'report.html');
    writeFileSync(page, '<html><body>my own page</body></html>\n');
    const t0 = Date.now();
    const r = await cli(['demo', '--out', out, '--quiet', '--permutations', '20']);
    expect(r.code).toBe(1);
    expect(r.err.split('\n').filter(Boolean)).toEqual([
      `lobes demo: ${page}: report file exists and was not written by lobes; it is not overwritten (give a new file name, or move the file away)`,
    ]);
    expect(readFileSync(page, 'utf8')).toBe('<html><body>my own page</body></html>\n');
    // nothing of the pipeline ran: no run folder, and no time spent on it
    expect(existsSync(path.join(out, 'run'))).toBe(false);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('runs the whole pipeline and writes a report that says the model is random', async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'lobes-demo-')), 'demo');
    let stdout = '';
    const wo = process.stdout.write.bind(process.stdout);
    (process.stdout as any).write = (s: string) => ((stdout += s), true);
    let code: number;
    try {
      code = await main(['demo', '--out', out, '--quiet', '--permutations', '20']);
    } finally {
      (process.stdout as any).write = wo;
    }
    expect(code).toBe(0);
    const report = path.join(out, 'report.html');
    expect(stdout.split('\n')[0]).toBe(`report: ${report}`);
    const html = readFileSync(report, 'utf8');
    const start = html.indexOf('id="lobes-data">') + 16;
    const payload = JSON.parse(html.slice(start, html.indexOf('</script>', start)));
    const run = payload.runs[0];
    expect(run.randomModel).toBe(true);
    const samples = readFileSync(path.join(out, 'run', 'samples.jsonl'), 'utf8').trim().split('\n').map((l) =>
      JSON.parse(l)
    );
    expect(run.scatter.hover.length).toBe(samples.length);
    const aspects = [...new Set(samples.map((s) => s.labels.aspect))];
    expect(run.wanda.pairs.length).toBe((aspects.length * (aspects.length - 1)) / 2);
    const regions = JSON.parse(readFileSync(path.join(out, 'run', 'wanda', 'regions.json'), 'utf8'));
    for (const [i, d] of regions.differences.entries()) {
      const n = (set: Record<string, number[]>) => Object.values(set).reduce((s, v) => s + v.length, 0);
      expect([run.wanda.pairs[i].nAB, run.wanda.pairs[i].nBA]).toEqual([n(d.aMinusB), n(d.bMinusA)]);
    }
    // The default block size: the paper's 256 would leave the tiny model's maps too coarse, so
    // wanda chose the largest power of two that every projection can be read at (hidden 64 / 16).
    expect(run.wanda.settings.block).toEqual([4, 4]);
    expect(run.wanda.settings.blockCheck).toMatchObject({ auto: true, coarse: [] });
  });
});
