import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, readdirSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAndKill as runKill } from '../kill-child.js';
import { runExtract } from '../../src/extract/run.js';
import { openRun, readChunkIndex } from '../../src/store/index.js';
import { fakeDeps, fakeModelDir } from './fake.js';
import { diffTrees, listFiles } from '../store/independent.js';
import { LobesError } from '../../src/util/errors.js';

const N = 60;
const K = 4;
const CHILD = path.resolve(__dirname, 'child.ts');

/** Run the job in a child process; SIGKILL it once its index lists `after` chunks. */
function runAndKill(opts: Record<string, unknown>, dir: string,
  after: number): Promise<{ killed: boolean; listed: number }>
{
  return runKill(CHILD, opts, path.join(dir, 'activations/index.json'), after);
}

describe('crash safety: kill -9 and resume', () => {
  let root: string;
  let model: string;
  let reference: string;
  const base = { data: 'fake', chunkRows: K, batch: 3, n: N, delayMs: 12 };
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-resume-'));
    model = fakeModelDir(root);
    reference = path.join(root, 'reference');
    await runExtract({ model, data: 'fake', out: reference, chunkRows: K, batch: 3, quiet: true, deps: fakeDeps(N) });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a run killed twice mid-way and resumed equals an uninterrupted run byte for byte', async () => {
    const out = path.join(root, 'killed');
    const opts = { ...base, model, out };
    const first = await runAndKill(opts, out, 3);
    expect(first.killed).toBe(true);
    expect(first.listed).toBeGreaterThanOrEqual(3);
    expect(first.listed).toBeLessThan(N / K);
    const m1 = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m1.complete).toBe(false);
    await expect(openRun(out)).rejects.toThrow(/run is incomplete: \d+ of 60 rows extracted/);
    const second = await runAndKill(opts, out, first.listed + 4);
    expect(second.killed).toBe(true);
    expect(second.listed).toBeGreaterThan(first.listed);
    // Finish in the same way a user would: the same command again.
    const done = await runAndKill(opts, out, Infinity);
    expect(done.killed).toBe(false);
    expect(diffTrees(reference, out, 'activations')).toEqual([]);
    expect(readFileSync(path.join(out, 'samples.jsonl'))).toEqual(readFileSync(path.join(reference, 'samples.jsonl')));
    const r = await openRun(out);
    expect(r.manifest.complete).toBe(true);
    expect(r.manifest.timings.attempts).toBe(3);
    // No temporary files left behind.
    for (const h of r.hooks())
      expect(readdirSync(path.join(out, 'activations', h.name)).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('a call aborted through its signal after the first chunk resumes, without it, to the bytes of an uninterrupted run', async () => {
    const out = path.join(root, 'aborted');
    const ac = new AbortController();
    const deps = fakeDeps(N);
    // The engine aborts the controller on its first batch: chunk 0 finishes, the check before chunk 1 stops the job.
    const aborting = { ...deps, openCaptureEngine: async (...a: Parameters<typeof deps.openCaptureEngine>) => {
      const e = await deps.openCaptureEngine(...a);
      return { ...e, run: (b: Parameters<typeof e.run>[0]) => (ac.abort(), e.run(b)), close: () => e.close() };
    } };
    const err = await runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, deps: aborting,
      signal: ac.signal }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(LobesError);
    expect((err as LobesError).code).toBe('E_ABORTED');
    expect((err as LobesError).message).toMatch(/lobes extract was cancelled.*before chunk 1/);
    // What a kill leaves: the manifest of an unfinished run, chunk 0 listed, no lock, no temporary file.
    expect(readChunkIndex(out).chunks.map((c) => c.chunk)).toEqual([0]);
    expect(JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')).complete).toBe(false);
    expect(existsSync(path.join(out, '.lobes-lock'))).toBe(false);
    // An aborted signal stops a call before it reads or writes anything.
    const before = readFileSync(path.join(out, 'manifest.json'));
    await expect(runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, deps, signal: ac.signal }))
      .rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(readFileSync(path.join(out, 'manifest.json'))).toEqual(before);
    await runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, deps });
    expect(diffTrees(reference, out, 'activations')).toEqual([]);
    expect(readFileSync(path.join(out, 'samples.jsonl'))).toEqual(readFileSync(path.join(reference, 'samples.jsonl')));
    const r = await openRun(out);
    expect(r.manifest.complete).toBe(true);
    expect(r.manifest.timings.attempts).toBe(2);
    for (const h of r.hooks())
      expect(readdirSync(path.join(out, 'activations', h.name)).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('a corrupted chunk is named on resume; --repair extracts it again and the result equals the reference', async () => {
    const out = path.join(root, 'corrupt');
    const opts = { ...base, model, out };
    const k = await runAndKill(opts, out, 4);
    expect(k.killed).toBe(true);
    const idx = readChunkIndex(out);
    const victim = path.join(out, 'activations', idx.chunks[1].files['layers.0.mlp.down_in'].path);
    const b = readFileSync(victim);
    b[b.length - 1] ^= 1;
    writeFileSync(victim, b);
    await expect(runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, deps: fakeDeps(N) }))
      .rejects.toThrow(
        /layers\.0\.mlp\.down_in\/chunk-000001\.safetensors: chunk file is corrupted: sha256 .* does not match .* \(rerun with repair/,
      );
    const lines: string[] = [];
    await runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, repair: true, deps: fakeDeps(N),
      log: (l) => lines.push(l) });
    expect(lines.some((l) => /^repair: .*chunk-000001\.safetensors: chunk file is corrupted/.test(l))).toBe(true);
    expect(diffTrees(reference, out, 'activations')).toEqual([]);
  });

  it('a rerun with a different model, dataset or settings is refused, saying what differs', async () => {
    const go = (o: Record<string, unknown>, variant = 0, m = model) =>
      runExtract({ model: m, data: 'fake', out: reference, chunkRows: K, batch: 3, quiet: true, ...o,
        deps: fakeDeps(N, { variant }) });
    await expect(go({ dtype: 'fp32' })).rejects.toThrow(
      /made with different settings: stored dtype \(--dtype\) is "fp16" in .*reference but "fp32" in this command/,
    );
    await expect(go({}, 1)).rejects.toThrow(
      /dataset items sha256 is "[0-9a-f]+" in .* but "[0-9a-f]+" in this command/,
    );
    await expect(go({ batch: 5 })).rejects.toThrow(/batch size \(--batch\) is "3" in .* but "5" in this command/);
    await expect(go({ chunkRows: 8, maxTokens: 6 })).rejects.toThrow(
      /max tokens \(--max-tokens\) is "null" .* "6" in this command; rows per chunk \(--chunk-rows\) is "4" .* "8" in this command/,
    );
    await expect(go({ shard: { index: 0, count: 2 } })).rejects.toThrow(/shard \(--shard\) is "none" in .* but "0\/2"/);
    const other = fakeModelDir(path.join(root, 'other'), 'another graph');
    await expect(go({}, 0, other)).rejects.toThrow(
      /model graph sha256 is .* \(model folder .*model vs .*other\/model\)/,
    );
    // The same command on a finished run only verifies it.
    const before = readFileSync(path.join(reference, 'manifest.json'), 'utf8');
    await go({});
    expect(readFileSync(path.join(reference, 'manifest.json'), 'utf8')).toBe(before);
  });

  it('the same command on a finished run names a corrupted chunk; --repair restores it', async () => {
    const out = path.join(root, 'finished');
    const go = (repair = false) =>
      runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, repair, deps: fakeDeps(N) });
    await go();
    const victim = path.join(out, 'activations', 'final.hidden', 'chunk-000009.safetensors');
    const b = readFileSync(victim);
    b[200] ^= 0x10;
    writeFileSync(victim, b);
    await expect(go()).rejects.toThrow(/final\.hidden\/chunk-000009\.safetensors: chunk file is corrupted/);
    await go(true);
    expect(diffTrees(reference, out, 'activations')).toEqual([]);
  });

  it('refuses a folder that is not a run, and a disk without room unless --force, writing nothing', async () => {
    const junk = path.join(root, 'junk');
    fakeModelDir(junk);
    await expect(runExtract({ model, data: 'fake', out: junk, quiet: true, deps: fakeDeps(N) })).rejects.toThrow(
      /output folder exists and is not a lobes run/,
    );
    const small = path.join(root, 'small');
    const lines: string[] = [];
    await expect(
      runExtract({ model, data: 'fake', out: small, chunkRows: K, deps: fakeDeps(N), diskFree: () => 5000,
        log: (l) => lines.push(l) }),
    ).rejects.toThrow(
      /small: not enough disk space: the run needs ([\d.]+) KiB more but 4\.9 KiB is free/,
    );
    // The plan printed before starting is the size the finished run's chunk files have (within 2%).
    const planned = Number(/expected run size ([\d.]+) KiB/.exec(lines[0])![1]) * 1024;
    const actual = listFiles(path.join(reference, 'activations')).filter((f) => f.endsWith('.safetensors')).reduce(
      (a, f) => a + statSync(path.join(reference, 'activations', f)).size,
      0,
    );
    expect(Math.abs(planned - actual) / actual).toBeLessThan(0.02);
    expect(existsSync(small)).toBe(false);
    await runExtract({ model, data: 'fake', out: small, chunkRows: K, batch: 3, force: true, quiet: true,
      deps: fakeDeps(N), diskFree: () => 5000 });
    expect(diffTrees(reference, small, 'activations')).toEqual([]);
  });
});
