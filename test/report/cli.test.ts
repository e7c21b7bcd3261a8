import { describe, it, expect } from 'vitest';
import { mkdtempSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { main } from '../../src/cli/main.js';
import { writeSyntheticRun } from '../../src/report/synthetic.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-cli-'));

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const wo = process.stdout.write.bind(process.stdout);
  const we = process.stderr.write.bind(process.stderr);
  (process.stdout as any).write = (s: string) => ((out += s), true);
  (process.stderr as any).write = (s: string) => ((err += s), true);
  try {
    const code = await main(argv);
    return { code, out, err };
  } finally {
    (process.stdout as any).write = wo;
    (process.stderr as any).write = we;
  }
}

describe('lobes report / compare command line', () => {
  const run = writeSyntheticRun(path.join(tmp, 'run'), { layers: 3, seed: 2 });
  const run2 = writeSyntheticRun(path.join(tmp, 'run2'), { layers: 5, seed: 3 });

  it('writes RUN/report.html by default and --out elsewhere, with --json', async () => {
    const a = await cli(['report', run]);
    expect(a.code).toBe(0);
    // the page's first lines, then where it is
    const lines = a.out.trimEnd().split('\n');
    expect(lines[lines.length - 1]).toBe(`report: ${path.join(run, 'report.html')}`);
    expect(lines[0]).toBe('synthetic · synthetic, 100 items:'); // the run's name: model folder, then the dataset (no language axis) and the item count
    // the verdict table first, then the sentences
    expect(lines[1]).toMatch(/^Verdicts for "aspect" \(value \[95% CI\] \| chance \| null mean/);
    expect(lines[2]).toMatch(/^ {2}Does the representation at \S+ separate the 5 values of "aspect"\? \(linear probe/);
    expect(lines[3]).toMatch(
      /^ {4}(ABOVE CHANCE|AT CHANCE|NOT TESTABLE AT R = \d+): 0\.\d\d \[0\.\d\d, 0\.\d\d\] \| chance 0\.20 \| null /,
    );
    const first = lines.findIndex((l) => l.startsWith('5 classes of'));
    expect(lines[first]).toMatch(/^5 classes of "aspect" on 100 items: chance balanced accuracy is 0\.20/);
    const html = readFileSync(path.join(run, 'report.html'), 'utf8');
    expect(html).toContain(JSON.stringify(lines[first]).slice(1, -1));
    expect(html).toContain(`"title":"lobes report: ${lines[0].slice(0, -1)}"`);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const payload = JSON.parse(
      html.slice(html.indexOf('id="lobes-data">') + 16, html.indexOf('</script>', html.indexOf('id="lobes-data">'))),
    );
    expect(payload.runs[0].wanda.pairs.length).toBe(10);
    expect(payload.runs[0].scatter.hover.length).toBe(100);
    // self-contained: no external resource of any kind
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|@import/);
    const out = path.join(tmp, 'sub', 'r.html');
    const b = await cli(['report', run, '--out', out, '--json']);
    expect(b.code).toBe(0);
    expect(JSON.parse(b.out)).toEqual({ report: out, figures: [] });
    expect(existsSync(out)).toBe(true);
  });

  it('compare writes one page for two runs', async () => {
    const out = path.join(tmp, 'cmp.html');
    const r = await cli(['compare', run, run2, '--out', out]);
    expect(r.code).toBe(0);
    const html = readFileSync(out, 'utf8');
    const payload = JSON.parse(
      html.slice(html.indexOf('id="lobes-data">') + 16, html.indexOf('</script>', html.indexOf('id="lobes-data">'))),
    );
    // named by model and items; the same model and items on both sides, so the folders tell them apart
    const names = payload.runs.map((x: any) => x.name);
    expect(names[0]).toMatch(/^A: synthetic · .*, 100 items \(run\)$/);
    expect(names[1]).toMatch(/^B: synthetic · .*, 100 items \(run2\)$/);
    expect(payload.comparison.rows.length).toBeGreaterThan(100);
    const lines = r.out.split('\n');
    expect(lines[0]).toBe(`A is ${names[0].slice(3)}, B is ${names[1].slice(3)}. Every difference is B − A.`);
    // then the headline: the differences whose CI excludes 0, A before B
    expect(lines[1]).toMatch(
      /^(\d+ of \d+ differences have a 95% CI that excludes 0|No difference's 95% CI excludes 0)/,
    );
    if (!lines[1]!.startsWith('No '))
      expect(lines[2]).toMatch(/: A -?[\d.e-]+, B -?[\d.e-]+; B − A [+-][\d.e-]+ \[-?[\d.e-]+, -?[\d.e-]+\]/);
    expect(lines.find((l) => l.startsWith('Linear probe on the representation:'))).toMatch(
      /^Linear probe on the representation: balanced accuracy A 0\.\d\d, B 0\.\d\d; B − A: /,
    );
    // --name, once per run
    const named = await cli(['compare', run, run2, '--out', out, '--name', 'eight', '--name', 'seventy']);
    expect(named.code).toBe(0);
    expect(named.out.split('\n')[0]).toBe('A is eight, B is seventy. Every difference is B − A.');
    const three = await cli(['compare', run, run2, '--out', out, '--name', 'a', '--name', 'b', '--name', 'c']);
    expect(three.code).toBe(2);
    expect(r.out.trimEnd().split('\n').pop()).toBe(`comparison: ${out}`);
  });

  it('fails with one line naming the cause: not a run, missing browser, bad flag', async () => {
    const a = await cli(['report', path.join(tmp, 'nope')]);
    expect(a.code).toBe(1);
    expect(a.err).toBe(
      `lobes report: ${path.join(tmp, 'nope')}: run directory not found (pass the folder written by lobes extract)\n`,
    );
    const png = path.join(tmp, 'png');
    const target = path.join(tmp, 'never.html');
    const b = await cli(['report', run, '--out', target, '--png', png, '--chromium', '/nonexistent/chromium']);
    expect(b.code).toBe(1);
    expect(b.err).toBe(
      'lobes report: headless Chromium not found at /nonexistent/chromium (install it (Debian: apt-get install chromium) or pass --chromium PATH / set LOBES_CHROMIUM)\n',
    );
    expect(existsSync(png) ? readdirSync(png) : []).toEqual([]);
    expect(existsSync(target)).toBe(false); // nothing written when the browser is missing
    const c = await cli(['compare', run]);
    expect(c.code).toBe(2);
    expect(c.err.split('\n').length).toBe(2);
  });
});
