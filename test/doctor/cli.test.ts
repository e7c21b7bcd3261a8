/**
 * `lobes doctor` as a user runs it: exit codes, one-line errors, the JSON report, and a real
 * CPU session created by the probe child process.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'src', 'cli', 'bin.ts');
const WHEELS = path.join(__dirname, 'fixtures', 'wheels');
const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-doctor-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function lobes(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT, encoding: 'utf8' });
}

describe('lobes doctor', () => {
  it('reports every provider as JSON without loading any (--no-probe)', () => {
    const r = lobes('doctor', '--no-probe', '--json');
    expect(r.status, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep.onnxruntime.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(rep.providers.map((p: { name: string }) => p.name)).toContain('cpu');
    const cpu = rep.providers.find((p: { name: string }) => p.name === 'cpu');
    expect(cpu).toMatchObject({ usable: true, probe: null, problems: [] });
    for (const p of rep.providers)
      for (const x of p.problems) expect(x.fix.length, `${p.name}: ${x.what}`).toBeGreaterThan(0);
  });

  it('creates and runs a real CPU session in the probe and exits 0 for --device cpu', () => {
    const r = lobes('doctor', '--device', 'cpu');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^cpu: usable \(session created and run in \d+ ms\)$/m);
  });

  it('refuses bad flags with exit 2 and a one-line message', () => {
    const bad = lobes('doctor', '--device', 'tpu');
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('--device must be cpu, cuda or webgpu, got "tpu"');
    const dl = lobes('doctor', '--download');
    expect(dl.status).toBe(2);
    expect(dl.stderr).toContain('--download goes with --install-cuda-from-wheels DIR');
  });

  it('refuses a wheel of another onnxruntime release with exit 1 and one line', () => {
    const dir = path.join(tmp, 'old');
    mkdirSync(dir);
    for (const f of readdirSync(WHEELS))
      if (f.startsWith('onnxruntime_gpu-1.29.0')) cpSync(path.join(WHEELS, f), path.join(dir, f));
    const r = lobes('doctor', '--install-cuda-from-wheels', dir);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^lobes doctor: .*onnxruntime_gpu-1\.29\.0-.*\.whl is onnxruntime-gpu 1\.29\.0, but lobes runs onnxruntime-node (\d+\.\d+\.\d+), .*\(download onnxruntime-gpu==\1\)$/,
    );
  });
});
