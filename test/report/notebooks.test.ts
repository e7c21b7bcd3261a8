/**
 * The notebooks execute headlessly (notebooks/run.sh with nbclient; Deno, and python3 for 03-python) without a cell
 * error, and the runner fails when a cell throws. Skips, saying why, without deno, nbclient or dist/.
 */
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const root = path.resolve(__dirname, '../..');
const py = process.env.LOBES_PYTHON ?? '/usr/bin/python3';
function missing(): string | null {
  if (spawnSync('deno', ['--version']).status !== 0) return 'deno is not installed (npm install -g deno)';
  if (spawnSync(py, ['-c', 'import nbclient, ipykernel']).status !== 0)
    return `${py} lacks nbclient/ipykernel (apt-get install python3-nbclient python3-ipykernel)`;
  if (!existsSync(path.join(root, 'dist', 'index.js'))) return 'dist/index.js is missing (npm run build)';
  return null;
}
const why = missing();
if (why) console.log(`notebook tests skipped: ${why}`);

describe.skipIf(!!why)('notebooks', () => {
  it('the Deno notebooks run without a cell error, and its figures and tables are in the outputs', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'lobes-nb-out-'));
    // the Deno notebooks (03-python, which needs a run, is the test below)
    const r = spawnSync('bash', ['notebooks/run.sh', 'notebooks/01-run.ipynb', 'notebooks/02-compare.ipynb'], {
      cwd: root,
      env: { ...process.env, LOBES_NOTEBOOK_OUT: out },
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(r.stdout + r.stderr).toContain('notebooks/01-run.ipynb: ok');
    expect(r.stdout).toContain('notebooks/02-compare.ipynb: ok');
    expect(r.status).toBe(0);
    const nb = JSON.parse(readFileSync(path.join(out, '01-run.ipynb'), 'utf8'));
    const mimes = nb.cells.flatMap((c: any) => (c.outputs ?? []).flatMap((o: any) => Object.keys(o.data ?? {})));
    expect(mimes.filter((m: string) => m === 'application/vnd.plotly.v1+json').length).toBe(2);
  });

  it('the runner fails on a cell error', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-nb-bad-'));
    const bad = path.join(dir, 'bad.ipynb');
    const nb = JSON.parse(readFileSync(path.join(root, 'notebooks', '02-compare.ipynb'), 'utf8'));
    nb.cells = [{ id: 'x', cell_type: 'code', metadata: {}, execution_count: null, outputs: [],
      source: ["throw new Error('planted failure');"] }];
    writeFileSync(bad, JSON.stringify(nb));
    const r = spawnSync('bash', ['notebooks/run.sh', bad], { cwd: root,
      env: { ...process.env, LOBES_NOTEBOOK_OUT: dir }, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('bad.ipynb: FAILED');
    expect(r.stdout).toContain('planted failure');
  });
});

/** What the Python notebook needs: Debian's nbclient and ipykernel, numpy and matplotlib. */
function pythonMissing(): string | null {
  if (spawnSync(py, ['-c', 'import nbclient, ipykernel, numpy, matplotlib']).status !== 0)
    return `${py} lacks nbclient, ipykernel, numpy or matplotlib (apt-get install python3-nbclient python3-ipykernel python3-numpy python3-matplotlib)`;
  return null;
}
const pyWhy = pythonMissing();
if (pyWhy) console.log(`Python notebook test skipped: ${pyWhy}`);

describe.skipIf(!!pyWhy)('the Python notebook (numpy and matplotlib, no lobes)', () => {
  it(
    'reads a real run by the documented format, as lobes reads it, draws its figures, and refuses a chunk whose hash is off',
    async () => {
      const { main } = await import('../../src/cli/main.js');
      const { openRun } = await import('../../src/store/index.js');
      const out = path.join(mkdtempSync(path.join(tmpdir(), 'lobes-nb-py-')), 'demo');
      expect(await main(['demo', '--out', out, '--quiet', '--permutations', '20'])).toBe(0);
      const run = path.join(out, 'run');
      const exec = (runDir: string) => {
        const dir = mkdtempSync(path.join(tmpdir(), 'lobes-nb-py-out-'));
        const r = spawnSync('bash', ['notebooks/run.sh', 'notebooks/03-python.ipynb'], { cwd: root,
          env: { ...process.env, LOBES_NOTEBOOK_OUT: dir, LOBES_RUN: runDir }, encoding: 'utf8', timeout: 180_000 });
        return { r, nb: JSON.parse(readFileSync(path.join(dir, '03-python.ipynb'), 'utf8')) };
      };
      const { r, nb } = exec(run);
      expect(r.stdout).toContain('notebooks/03-python.ipynb: ok');
      expect(r.status).toBe(0);
      const outputs = nb.cells.flatMap((c: any) => c.outputs ?? []);
      expect(outputs.filter((o: any) => o.data?.['image/png']).length).toBe(3);
      const text = outputs.map((o: any) => [].concat(o.text ?? []).join('')).join('');
      // the numbers the notebook's own reader gives are lobes' reader's, bit for bit
      const reader = await openRun(run);
      const n = reader.manifest.counts.samples;
      const dim = reader.manifest.capture.points.find((p: any) => p.name === 'final.hidden')!.dim;
      expect(text).toContain(`final.hidden (${n}, ${dim})`);
      const first = /first row, first 4 values: (.+)/.exec(text)![1]!.split(' ').map(Number);
      const x = await reader.read('final.hidden', Int32Array.from([0]));
      expect(first).toEqual(Array.from(x.slice(0, 4)));
      // one byte changed in a chunk: the notebook stops at the hash check
      const index = JSON.parse(readFileSync(path.join(run, 'activations', 'index.json'), 'utf8'));
      const chunk = path.join(run, 'activations', index.chunks[0].files['final.hidden'].path);
      const bytes = readFileSync(chunk);
      bytes[bytes.length - 1] ^= 1;
      writeFileSync(chunk, bytes);
      const bad = exec(run);
      expect(bad.r.status).toBe(1);
      expect(bad.r.stdout).toMatch(/03-python\.ipynb: FAILED: .*sha256 differs from activations\/index\.json/);
    },
    240_000,
  );
});
