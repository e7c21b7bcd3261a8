/** Bad input: one clear error naming file, place and cause; RUN/wanda is never half-written. */
import { describe, it, expect, vi, afterAll } from 'vitest';
import * as path from 'node:path';
import { existsSync, readFileSync, readdirSync, writeFileSync, openSync, writeSync, closeSync, statSync,
  truncateSync } from 'node:fs';
import { runWanda } from '../../src/wanda/index.js';
import { main } from '../../src/cli/main.js';
import { syntheticModel, syntheticActivations, writeCheckpoint, writeRun, tmpDir, cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

const labels = Array.from({ length: 24 }, (_, r) => ['A', 'B'][r % 2]);
const H = 32;
const I = 48;

function setup(name: string, o: { hidden?: number; corruptActs?: 'nan' | 'inf' } = {}) {
  const dir = tmpDir(`lobes-wanda-bad-${name}-`);
  const model = syntheticModel(1, 1, H, I, { block: 16 });
  const actModel = o.hidden ? syntheticModel(1, 1, o.hidden, I, { block: 16 }) : model;
  const hooks = syntheticActivations(2, actModel, labels, { block: 16 });
  if (o.corruptActs) hooks['layers.0.mlp.down_in'].data[5 * I + 7] = o.corruptActs === 'nan' ? NaN : Infinity;
  const ck = path.join(dir, 'ckpt');
  writeCheckpoint(ck, model, 'F32');
  const run = path.join(dir, 'run');
  writeRun(run, labels.map((l) => ({ aspect: l })), hooks);
  return { dir, ck, run, model };
}

function noPartialOutput(run: string): void {
  expect(existsSync(path.join(run, 'wanda'))).toBe(false);
  expect(readdirSync(run).filter((f) => f.includes('wanda'))).toEqual([]);
}

describe('bad input', () => {
  it('weights whose d_in does not match the captured dimension', async () => {
    const { ck, run } = setup('shape', { hidden: 40 });
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /model\.safetensors: model\.layers\.0\.mlp\.gate_proj\.weight: weight shape \[48, 32\] has d_in=32 but the run captured layers\.0\.mlp\.in with dim 40/,
    );
    noPartialOutput(run);
  });

  it('missing tensors are listed by name', async () => {
    const { ck, run, model } = setup('missing');
    model.weights.delete('model.layers.0.mlp.down_proj.weight');
    writeCheckpoint(ck, model, 'F32');
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /1 weight tensor missing: model\.layers\.0\.mlp\.down_proj\.weight/,
    );
    noPartialOutput(run);
  });

  it('a safetensors header whose offsets exceed the file', async () => {
    const { ck, run } = setup('offsets');
    const file = path.join(ck, 'model.safetensors');
    // Cut the data section short: the header's last data_offsets now point past the end.
    truncateSync(file, statSync(file).size - 100);
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /model\.safetensors: tensor "model\.layers\.0\.mlp\.\w+_proj\.weight": data_offsets \[\d+,\d+\] exceed the \d+ data bytes in the file/,
    );
    noPartialOutput(run);
  });

  it('a safetensors header length beyond the file', async () => {
    const { ck, run } = setup('hlen');
    const file = path.join(ck, 'model.safetensors');
    const fd = openSync(file, 'r+');
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(10n ** 9n);
    writeSync(fd, b, 0, 8, 0);
    closeSync(fd);
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /model\.safetensors: header: safetensors header declares 1000000000 bytes/,
    );
    noPartialOutput(run);
  });

  it('NaN and Inf activations name the capture point and sample; an earlier result is kept intact', async () => {
    for (const kind of ['nan', 'inf'] as const) {
      const { ck, run } = setup(kind, { corruptActs: kind });
      await expect(runWanda(run, { weights: ck, block: 16, permutations: 5, quiet: true })).rejects.toThrow(
        kind === 'nan'
          ? /layers\.0\.mlp\.down_in, row 5 \(sample "s5"\): activation is NaN at feature 7/
          : /layers\.0\.mlp\.down_in, row 5 \(sample "s5"\): activation is Inf/,
      );
      noPartialOutput(run);
    }
    // A failing rerun leaves the previous complete output untouched.
    const { ck, run } = setup('keep');
    await runWanda(run, { weights: ck, block: 16, permutations: 3, quiet: true });
    const before = readFileSync(path.join(run, 'wanda', 'metrics.json'), 'utf8');
    await expect(runWanda(run, { weights: ck, by: 'nope', block: 16, permutations: 3, quiet: true })).rejects.toThrow(
      /label axis "nope" is not in the run \(axes: aspect\)/,
    );
    writeFileSync(path.join(ck, 'model.safetensors'), 'garbage');
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 3, quiet: true })).rejects.toThrow(
      /not a safetensors file|header declares/,
    );
    expect(readFileSync(path.join(run, 'wanda', 'metrics.json'), 'utf8')).toBe(before);
    expect(readdirSync(run).filter((f) => f.startsWith('.wanda'))).toEqual([]);
  });

  it('a sharded checkpoint whose index names a missing shard or the wrong file', async () => {
    const { dir, run, model } = setup('shards');
    const ck = path.join(dir, 'sharded');
    writeCheckpoint(ck, model, 'BF16', 2);
    const index = path.join(ck, 'model.safetensors.index.json');
    const j = JSON.parse(readFileSync(index, 'utf8'));
    const moved = { ...j,
      weight_map: { ...j.weight_map, 'model.layers.0.mlp.down_proj.weight': 'model-00009-of-00009.safetensors' } };
    writeFileSync(index, JSON.stringify(moved));
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /model\.safetensors\.index\.json: model\.layers\.0\.mlp\.down_proj\.weight: shard model-00009-of-00009\.safetensors listed in the index is missing/,
    );
    const wrong = { ...j,
      weight_map: { ...j.weight_map, 'model.layers.0.mlp.down_proj.weight': 'model-00001-of-00002.safetensors' } };
    writeFileSync(index, JSON.stringify(wrong));
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /the index puts model\.layers\.0\.mlp\.down_proj\.weight in model-00001-of-00002\.safetensors, but that file does not hold it/,
    );
    noPartialOutput(run);
  });

  it('NaN weights are rejected naming the tensor', async () => {
    const { ck, run, model } = setup('nanw');
    model.weights.get('model.layers.0.mlp.up_proj.weight')!.w[3] = NaN;
    writeCheckpoint(ck, model, 'F32');
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true })).rejects.toThrow(
      /tensor "model\.layers\.0\.mlp\.up_proj\.weight" \(layers\.0\.mlp\.up_proj\): weights contain NaN or Inf/,
    );
    noPartialOutput(run);
  });
});

describe('lobes wanda command line', () => {
  it('runs, prints JSON, and fails with one line and a non-zero code on bad input', async () => {
    const { ck, run } = setup('cli');
    let out = '';
    let err = '';
    const so = vi.spyOn(process.stdout, 'write').mockImplementation((s: any) => ((out += String(s)), true));
    const se = vi.spyOn(process.stderr, 'write').mockImplementation((s: any) => ((err += String(s)), true));
    try {
      expect(
        await main(['wanda', run, '--model', ck, '--block', '16', '--top-count', '2', '--scope', 'layer',
          '--permutations', '9', '--seed', '4', '--json']),
      ).toBe(0);
      const j = JSON.parse(out);
      expect(j.settings).toMatchObject({ seed: 4, permutations: 9, top: { kind: 'count', value: 2, scope: 'layer' },
        block: [16, 16] });
      expect(j.metrics.groups.map((g: any) => g.regionSize)).toEqual([2, 2]);
      // --json silences progress, not warnings: the 16×16 blocks are too coarse for these matrices
      expect(err).toMatch(/^wanda: warning: .*blocks at 16×16/m);
      out = '';
      err = '';
      expect(await main(['wanda', run, '--model', ck, '--top', '2'])).toBe(2);
      expect(err).toBe('lobes wanda: --top must be a decimal number from 0 to 1, got "2"\n');
      err = '';
      expect(await main(['wanda', run, '--model', path.join(run, 'nowhere')])).toBe(1);
      expect(err.split('\n').filter(Boolean)).toHaveLength(1);
      expect(err).toMatch(/nowhere: weights folder or file not found/);
      expect(await main(['wanda', '--help'])).toBe(0);
      expect(out).toMatch(/usage: lobes wanda RUN/);
    } finally {
      so.mockRestore();
      se.mockRestore();
    }
  });
});

describe('cancelled through its AbortSignal', () => {
  it('aborted before the weight pass, or once the pass is done: E_ABORTED, and RUN/wanda never written', async () => {
    const { ck, run } = setup('abort');
    const before = new AbortController();
    before.abort();
    await expect(runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true, signal: before.signal })).rejects
      .toMatchObject({ code: 'E_ABORTED',
        message: expect.stringMatching(/^lobes wanda was cancelled before the weight pass/) });
    noPartialOutput(run);
    // aborted while the pass runs: the job stops at the stage boundary after it
    const during = new AbortController();
    const p = runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true, signal: during.signal });
    during.abort();
    await expect(p).rejects.toMatchObject({ code: 'E_ABORTED' });
    noPartialOutput(run);
    const done = await runWanda(run, { weights: ck, block: 16, permutations: 0, quiet: true });
    expect(existsSync(path.join(done.dir, 'regions.json'))).toBe(true);
  });
});
