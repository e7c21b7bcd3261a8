import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runExtract, type ExtractOptions } from '../../src/extract/run.js';
import { mergeRuns, openRun } from '../../src/store/index.js';
import { fakeDeps, fakeModelDir, fakeDataset } from './fake.js';
import { diffTrees } from '../store/independent.js';

const N = 37;
const K = 4;

describe('shards and merge', () => {
  let root: string;
  let model: string;
  let single: string;
  const shard = (i: number, n: number, extra: Partial<ExtractOptions> = {}) => {
    const out = path.join(root, `s${i}of${n}${extra.dtype ?? ''}`);
    return runExtract({ model, data: 'fake', out, chunkRows: K, batch: 3, quiet: true, shard: { index: i, count: n },
      deps: fakeDeps(N), ...extra }).then(() => out);
  };
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-merge-'));
    model = fakeModelDir(root);
    single = path.join(root, 'single');
    await runExtract({ model, data: 'fake', out: single, chunkRows: K, batch: 3, quiet: true, deps: fakeDeps(N) });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('three shards merged equal a single run byte for byte', async () => {
    const shards = [await shard(0, 3), await shard(1, 3), await shard(2, 3)];
    const sizes = await Promise.all(shards.map(async (s) => (await openRun(s)).samples.length));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(N);
    expect(Math.min(...sizes)).toBeGreaterThan(0);
    const s1 = await openRun(shards[1]);
    expect(s1.manifest.layout!.rowStart).toBe(sizes[0]);
    // Shard-relative rows map to the right dataset samples.
    expect(s1.samples[0].id).toBe(fakeDataset(N).samples[sizes[0]].id);
    const out = path.join(root, 'merged');
    await mergeRuns([shards[2], shards[0], shards[1]], out, { quiet: true });
    expect(diffTrees(single, out, 'activations')).toEqual([]);
    expect(readFileSync(path.join(out, 'samples.jsonl'))).toEqual(readFileSync(path.join(single, 'samples.jsonl')));
    const a = await openRun(out);
    const b = await openRun(single);
    expect(a.manifest.shard).toBeNull();
    expect(a.manifest.counts).toEqual(b.manifest.counts);
    expect(await a.read('layers.0.mlp.down_in', [0, 36, 12])).toEqual(
      await b.read('layers.0.mlp.down_in', [0, 36, 12]),
    );
  });

  it('rejects missing, overlapping, duplicated, mismatched and incomplete shards with the reason', async () => {
    const s0 = await shard(0, 3);
    const s2 = await shard(2, 3);
    await expect(mergeRuns([s0, s2], path.join(root, 'm1'), { quiet: true })).rejects.toThrow(
      /shards do not cover the dataset: rows 12\.\.23 of 37 are in no shard; missing shard 1\/3/,
    );
    const h0 = await shard(0, 2);
    const h1 = await shard(1, 2);
    await expect(mergeRuns([h0, h1, s2], path.join(root, 'm2'), { quiet: true })).rejects.toThrow(
      /shards overlap: .*s1of2 \(shard 1\/2\) and .*s2of3 \(shard 2\/3\) both hold dataset rows 24\.\.36 \(samples item-0024 … item-0036\)/,
    );
    await expect(mergeRuns([h0, h1, h0], path.join(root, 'm3'), { quiet: true })).rejects.toThrow(
      /s0of2: shard run is given twice/,
    );
    const s1fp32 = await shard(1, 3, { dtype: 'fp32' });
    await expect(mergeRuns([s0, s1fp32, s2], path.join(root, 'm4'), { quiet: true })).rejects.toThrow(
      /s1of3fp32: shards are not the same extraction: stored dtype \(--dtype\) is "fp16" in .*s0of3 but "fp32" in .*s1of3fp32/,
    );
    const other = path.join(root, 'other-data');
    await runExtract({ model, data: 'fake', out: other, chunkRows: K, batch: 3, quiet: true,
      shard: { index: 1, count: 3 }, deps: fakeDeps(N, { variant: 2 }) });
    await expect(mergeRuns([s0, other, s2], path.join(root, 'm5'), { quiet: true })).rejects.toThrow(
      /dataset items sha256 is/,
    );
    // An interrupted shard: mark it incomplete as a crash would leave it.
    const m = JSON.parse(readFileSync(path.join(h1, 'manifest.json'), 'utf8'));
    writeFileSync(path.join(h1, 'manifest.json'), JSON.stringify({ ...m, complete: false }));
    await expect(mergeRuns([h0, h1], path.join(root, 'm6'), { quiet: true })).rejects.toThrow(
      /s1of2\/manifest\.json: shard is incomplete/,
    );
    for (const d of ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']) expect(existsSync(path.join(root, d))).toBe(false);
  });

  it('a corrupted chunk in a shard is named during merge', async () => {
    const a = await shard(0, 2);
    const b = path.join(root, 'b-corrupt');
    await runExtract({ model, data: 'fake', out: b, chunkRows: K, batch: 3, quiet: true, shard: { index: 1, count: 2 },
      deps: fakeDeps(N) });
    const victim = path.join(b, 'activations', 'final.hidden', 'chunk-000007.safetensors');
    const bytes = readFileSync(victim);
    bytes[bytes.length - 2] ^= 8;
    writeFileSync(victim, bytes);
    await expect(mergeRuns([a, b], path.join(root, 'm7'), { quiet: true })).rejects.toThrow(
      /b-corrupt\/activations\/final\.hidden\/chunk-000007\.safetensors: chunk file is corrupted/,
    );
    // Nothing half-written is left behind.
    expect(existsSync(path.join(root, 'm7'))).toBe(false);
  });

  it('a truncated chunk in a shard is refused with its size and the size its index records', async () => {
    const a = await shard(0, 2);
    const b = path.join(root, 'b-truncated');
    await runExtract({ model, data: 'fake', out: b, chunkRows: K, batch: 3, quiet: true, shard: { index: 1, count: 2 },
      deps: fakeDeps(N) });
    const victim = path.join(b, 'activations', 'layers.0.mlp.down_in', 'chunk-000006.safetensors');
    const bytes = readFileSync(victim);
    writeFileSync(victim, bytes.subarray(0, bytes.length - 100));
    const err = await mergeRuns([a, b], path.join(root, 'm9'), { quiet: true }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err).not.toBeNull();
    expect(err!.message).not.toMatch(/\n/);
    expect(err!.message).toContain(
      `b-truncated/activations/layers.0.mlp.down_in/chunk-000006.safetensors: chunk file has ${
        bytes.length - 100
      } bytes but the shard's index records ${bytes.length}`,
    );
    expect(existsSync(path.join(root, 'm9'))).toBe(false);
  });

  it('more shards than chunks leaves some shards empty, and they still merge', async () => {
    const outs: string[] = [];
    const n = 12; // 10 chunks for 37 rows of 4
    for (let i = 0; i < n; i++)
      outs.push(
        await runExtract({ model, data: 'fake', out: path.join(root, `t${i}`), chunkRows: K, batch: 3, quiet: true,
          shard: { index: i, count: n }, deps: fakeDeps(N) }).then(() => path.join(root, `t${i}`)),
      );
    const empty =
      (await Promise.all(outs.map(async (o) => (await openRun(o)).samples.length))).filter((x) => x === 0).length;
    expect(empty).toBe(2);
    await mergeRuns(outs, path.join(root, 'm8'), { quiet: true });
    expect(diffTrees(single, path.join(root, 'm8'), 'activations')).toEqual([]);
  });
});
