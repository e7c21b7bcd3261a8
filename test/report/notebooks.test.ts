/**
 * The notebooks execute headlessly on the Deno kernel (notebooks/run.sh with nbclient) without a cell
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
  if (spawnSync(py, ['-c', 'import nbclient, ipykernel']).status !== 0) return `${py} lacks nbclient/ipykernel (apt-get install python3-nbclient python3-ipykernel)`;
  if (!existsSync(path.join(root, 'dist', 'index.js'))) return 'dist/index.js is missing (npm run build)';
  return null;
}
const why = missing();
if (why) console.log(`notebook tests skipped: ${why}`);

describe.skipIf(!!why)('notebooks', () => {
  it('every notebook runs without a cell error, and its figures and tables are in the outputs', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'lobes-nb-out-'));
    const r = spawnSync('bash', ['notebooks/run.sh'], { cwd: root, env: { ...process.env, LOBES_NOTEBOOK_OUT: out }, encoding: 'utf8', timeout: 240_000 });
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
    nb.cells = [{ id: 'x', cell_type: 'code', metadata: {}, execution_count: null, outputs: [], source: ["throw new Error('planted failure');"] }];
    writeFileSync(bad, JSON.stringify(nb));
    const r = spawnSync('bash', ['notebooks/run.sh', bad], { cwd: root, env: { ...process.env, LOBES_NOTEBOOK_OUT: dir }, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('bad.ipynb: FAILED');
    expect(r.stdout).toContain('planted failure');
  });
});
