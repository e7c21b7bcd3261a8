/**
 * Tests that close gaps found by planting bugs (mutation testing): each assertion fails under
 * the mutant named in its title.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, openSync, readSync, writeSync, closeSync, readdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { vote } from '../../src/eval/score.js';
import { accuracyOf, summarizeItems } from '../../src/eval/summary.js';
import { Rng } from '../../src/util/rng.js';
import type { EvalRecord } from '../../src/eval/types.js';
import { runExtract } from '../../src/extract/run.js';
import { openRun } from '../../src/store/index.js';
import { fakeDeps, fakeModelDir } from '../extract-run/fake.js';

describe('mutants that earlier tests let live', () => {
  it('vote: a 1-1-1 tie goes to the larger summed probability, not to the first shuffle (mutant: tie-break ignored)', () => {
    // Three shuffles of three options, each picking another option once.
    const shuffles = [
      { order: [0, 1, 2], pick: 0, probs: [0.40, 0.25, 0.35] }, // picks option 0
      { order: [1, 2, 0], pick: 0, probs: [0.38, 0.34, 0.28] }, // picks option 1
      { order: [2, 0, 1], pick: 0, probs: [0.36, 0.30, 0.34] }, // picks option 2
    ];
    // Summed probability by option: 0: .40+.28+.30 = .98, 1: .25+.38+.34 = .97, 2: .35+.34+.36 = 1.05.
    expect(vote(shuffles, 3)).toBe(2);
  });

  it('the bootstrap interval is the 2.5th and 97.5th percentile of a resampled mean (mutant: 90% interval)', () => {
    const hits = Array.from({ length: 37 }, (_, i) => (i % 3 === 0 ? 1 : 0));
    const chance = hits.map(() => 0.25);
    const B = 400;
    const seed = 11;
    const acc = accuracyOf(hits, chance, B, seed);
    // The same random stream, written here: each resample draws n units with replacement.
    const rng = new Rng(seed);
    const means: number[] = [];
    for (let b = 0; b < B; b++) {
      const w = new Uint32Array(hits.length);
      for (let t = 0; t < hits.length; t++) w[rng.int(hits.length)]!++;
      let s = 0;
      for (let i = 0; i < hits.length; i++) s += w[i]! * hits[i]!;
      means.push(s / hits.length);
    }
    means.sort((a, b) => a - b);
    const q = (p: number) => {
      const pos = p * (means.length - 1);
      const lo = Math.floor(pos);
      return means[lo]! + (means[Math.min(lo + 1, means.length - 1)]! - means[lo]!) * (pos - lo);
    };
    expect(acc.bootstrap95![0]).toBeCloseTo(q(0.025), 12);
    expect(acc.bootstrap95![1]).toBeCloseTo(q(0.975), 12);
  });

  it('chance is the mean over the scored items only (mutant: skipped items counted)', () => {
    const rec = (id: string, k: number, correct: boolean, skipped?: string): EvalRecord =>
      ({
        id, task: 'mcq', language: null, ability: null, aspect: null, labels: {}, options: Array.from({ length: k }, (_, i) => `o${i}`), answer: 0,
        shuffles: skipped ? [] : [{ order: Array.from({ length: k }, (_, i) => i), pick: correct ? 0 : 1, probs: Array.from({ length: k }, () => 1 / k), letters: [], prompt: '', tokens: 1, logits: [], letterMass: 1, logSumExp: 0, topTokenId: 0 }],
        vote: skipped ? -1 : correct ? 0 : 1, correct: skipped ? null : correct, ...(skipped ? { skipped } : {}),
      }) as unknown as EvalRecord;
    const records = [rec('a', 4, true), rec('b', 4, false), rec('c', 4, false), rec('long', 2, false, 'the prompt has 9000 tokens; --skip-longer-than is 2048')];
    const s = summarizeItems(records, 'mcq', { bootstrap: 0 });
    expect(s.items).toBe(3);
    expect(s.skipped).toEqual(['long']);
    expect(s.overall.chance).toBe(0.25);
  });

  it('a chunk changed in place after it was verified is refused on the next read through the same open run (mutant: verified cache keyed by size alone)', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'lobes-mutant-'));
    const out = path.join(root, 'run');
    await runExtract({ model: fakeModelDir(root), data: 'fake', out, chunkRows: 8, batch: 4, dtype: 'fp32', quiet: true, deps: fakeDeps(16) });
    const run = await openRun(out);
    const hook = run.hooks()[0]!.name;
    const first = await run.read(hook, [0, 1]);
    expect(first.length).toBeGreaterThan(0);
    // Flip one byte of the first chunk's last value, same size.
    const dir = path.join(out, 'activations', hook);
    const file = path.join(dir, readdirSync(dir).sort()[0]!);
    const fd = openSync(file, 'r+');
    const b = Buffer.alloc(1);
    const size = (await import('node:fs')).fstatSync(fd).size;
    readSync(fd, b, 0, 1, size - 1);
    b[0] = b[0]! ^ 0x40;
    writeSync(fd, b, 0, 1, size - 1);
    closeSync(fd);
    await expect(run.read(hook, [0, 1])).rejects.toThrow(/sha256|changed|corrupt/);
  });
});
