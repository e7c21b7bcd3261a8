/**
 * End to end through the command line with the real pieces: the built-in model
 * (models/tiny-llama), the built-in dataset, ONNX Runtime on CPU.
 */
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { openRun } from '../../src/store/index.js';
import { diffTrees, parseSafetensors } from '../store/independent.js';

const ROOT = path.resolve(__dirname, '../..');
const MODEL = path.join(ROOT, 'models/tiny-llama');
const BIN = path.join(ROOT, 'src/cli/bin.ts');
const HAVE = existsSync(path.join(MODEL, 'model.onnx'));
if (!HAVE)
  console.log(
    `skipping CLI extract tests: ${MODEL}/model.onnx is missing (regenerate with npx tsx models/generate.ts)`,
  );

const COMMON = ['--model', MODEL, '--data', 'builtin:social', '--capture', 'final,mlp', '--batch', '4', '--chunk-rows',
  '6', '--quiet'];

function lobes(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env },
    encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function lobesAsync(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT,
      env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

function listed(run: string): number {
  try {
    return JSON.parse(readFileSync(path.join(run, 'activations/index.json'), 'utf8')).chunks.length;
  } catch {
    return 0;
  }
}

describe.skipIf(!HAVE)('lobes extract / merge on the built-in model', () => {
  let root: string;
  let single: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-cli-'));
    single = path.join(root, 'single');
    const r = lobes(['extract', ...COMMON, '--out', single, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const m = JSON.parse(r.stdout);
    expect(m.complete).toBe(true);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('writes a run the reader and an independent safetensors parser agree on', async () => {
    const run = await openRun(single);
    expect(run.samples.length).toBe(run.manifest.dataset.count);
    expect(run.hooks().map((h) => h.name)).toContain('final.hidden');
    const h = run.hook('layers.1.mlp.in');
    const all = await run.read(h.name);
    const t = parseSafetensors(path.join(single, 'activations', h.name, 'chunk-000003.safetensors')).tensors[h.name];
    expect(t.shape).toEqual([6, h.dim]);
    expect(Array.from(all.subarray(18 * h.dim, 24 * h.dim))).toEqual(Array.from(t.values));
    expect(all.every(Number.isFinite)).toBe(true);
  });

  it('kill -9 of the CLI mid-way, then the same command: byte-identical to the uninterrupted run', async () => {
    const out = path.join(root, 'killed');
    const args = ['extract', ...COMMON, '--out', out];
    const killedAt = await new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT, stdio: 'ignore' });
      let sent = false;
      const t = setInterval(() => {
        const n = listed(out);
        if (!sent && n >= 4) {
          sent = true;
          child.kill('SIGKILL');
        }
      }, 3);
      child.on('exit', (code, signal) => {
        clearInterval(t);
        if (signal === 'SIGKILL') resolve(listed(out));
        else reject(new Error(`extract finished (code ${code}) before it could be killed`));
      });
    });
    const total = Math.ceil((await openRun(single)).samples.length / 6);
    expect(killedAt).toBeGreaterThanOrEqual(4);
    expect(killedAt).toBeLessThan(total);
    const r = lobes(args);
    expect(r.code, r.stderr).toBe(0);
    expect(diffTrees(single, out, 'activations')).toEqual([]);
    expect(readFileSync(path.join(out, 'samples.jsonl'))).toEqual(readFileSync(path.join(single, 'samples.jsonl')));
  });

  it('Ctrl-C (SIGINT) mid-way: one line, exit 130, the lock released, and the same command resumes to the bytes of the uninterrupted run', async () => {
    const out = path.join(root, 'interrupted');
    const args = ['extract', ...COMMON, '--out', out, '--json'];
    const res = await new Promise<
      { code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string; at: number }
    >((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      child.stderr.on('data', (d) => (stderr += d));
      child.stdout.on('data', (d) => (stdout += d));
      let at = -1;
      const t = setInterval(() => {
        if (at < 0 && listed(out) >= 2) {
          at = listed(out);
          child.kill('SIGINT');
        }
      }, 3);
      child.on('exit', (code, signal) => {
        clearInterval(t);
        resolve({ code, signal, stderr, stdout, at });
      });
    });
    const total = Math.ceil((await openRun(single)).samples.length / 6);
    expect(res.at, 'the run finished before it could be interrupted').toBeGreaterThanOrEqual(2);
    // not killed by the signal: the job heard it, stopped before a chunk and exited as interrupted
    expect(res.signal).toBeNull();
    expect(res.code, res.stderr).toBe(130);
    const lines = res.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^lobes extract: interrupted \(SIGINT\); stopping before the next chunk/);
    expect(lines.at(-1)).toMatch(
      /^lobes extract was cancelled before chunk \d+ \(interrupted by SIGINT\) \(the same call again resumes where it stopped\)$/,
    );
    const err = JSON.parse(res.stdout.trim().split('\n').at(-1)!).error;
    expect(err.code).toBe('E_ABORTED');
    expect(err.exitCode).toBe(130);
    const stopped = listed(out);
    expect(stopped).toBeLessThan(total);
    expect(existsSync(path.join(out, '.lobes-lock'))).toBe(false);
    const r = lobes(args.slice(0, -1));
    expect(r.code, r.stderr).toBe(0);
    expect(diffTrees(single, out, 'activations')).toEqual([]);
    expect(readFileSync(path.join(out, 'samples.jsonl'))).toEqual(readFileSync(path.join(single, 'samples.jsonl')));
  });

  it('a command run in-process leaves no signal handler behind (a test runner or a host keeps its own Ctrl-C)', async () => {
    const { main } = await import('../../src/cli/main.js');
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    // the finished run again: the job starts (its handlers go on), finds it complete and ends
    const code = await main(['extract', ...COMMON, '--out', single]);
    err.mockRestore();
    expect(code).toBe(0);
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
  });

  it('three Slurm array tasks (--shard auto, ids 1..3, run concurrently) merged equal the single run', async () => {
    const pattern = path.join(root, 'shard-{i}-of-{n}');
    const tasks = await Promise.all(
      [1, 2, 3].map((id) =>
        lobesAsync(['extract', ...COMMON, '--shard', 'auto', '--out', pattern], { SLURM_ARRAY_TASK_ID: String(id),
          SLURM_ARRAY_TASK_MIN: '1', SLURM_ARRAY_TASK_COUNT: '3' })
      ),
    );
    for (const r of tasks) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
    }
    const shards = [0, 1, 2].map((i) => path.join(root, `shard-${i}-of-3`));
    const merged = path.join(root, 'merged');
    const bad = lobes(['merge', shards[0], shards[2], '--out', merged, '--quiet']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^lobes merge: shards do not cover the dataset: rows \d+\.\.\d+ of 150 are in no shard; missing shard 1\/3/,
    );
    const r = lobes(['merge', ...shards, '--out', merged, '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(diffTrees(single, merged, 'activations')).toEqual([]);
  });

  it('a rerun with other settings fails with a one-line message saying what differs', () => {
    const r = lobes(['extract', ...COMMON, '--dtype', 'fp32', '--max-tokens', '12', '--out', single]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^lobes extract: .*single\/manifest\.json: this run folder was made with different settings: max tokens \(--max-tokens\) is "null" in .* but "12" in this command; stored dtype \(--dtype\) is "fp16" .* but "fp32" in this command/,
    );
  });
});
