/**
 * The per-token cost ratio of lobes ablate (AblateSpecificity.perToken): the specificity ratio on
 * d / continuation tokens. Planted: A's continuations are twice as long as the others', and every
 * zeroed block costs every item the same amount per continuation token (no region is specific).
 * The raw cost ratio of A's region is then about 2 (and so are its random regions'), the
 * per-token ratio about 1.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { ablationStats } from '../../src/ablate/stats.js';
import { ablationStatsPerToken } from '../../src/ablate/pertoken.js';
import { formatAblate } from '../../src/cli/ablate.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import { CHAR_TOKENIZER, fakeLoglikEngine, tinyMatrices, unitHash, writeAblateRun, zeroedBlocks } from './fixture.js';

const BLOCK: [number, number] = [16, 16];
const MATRICES = tinyMatrices(BLOCK);
const names = MATRICES.map((m) => m.name);
const regionOf = (flats: [number, number]) => Object.fromEntries(names.map((n) => [n, [...flats]]));
const REGIONS = { A: regionOf([5, 40]), B: regionOf([12, 33]) };
const GROUPS = 'AB';
const N = 30;
const u = unitHash;

it('the per-token ratio is the mean of d / tokens over own items over that of the others, under the region and each random region', () => {
  // items 0, 1 are A's (4 and 8 tokens), 2, 3 B's (2 tokens each)
  const before = Float64Array.from([-10, -10, -10, -10]);
  const after = Float64Array.from([-12, -18, -11, -10.5]);
  const random = [Float64Array.from([-11, -12, -10.5, -10.5])];
  const s = ablationStatsPerToken({ labels: ['A', 'B'], labelOf: Int32Array.from([0, 0, 1, 1]), before,
    regions: [{ name: 'A', minus: null, after, random }], bootstrap: 50, seed: 1, tokens: [4, 8, 2, 2] });
  const pt = s.specificity[0]!.perToken!;
  expect(pt.own).toBeCloseTo((-2 / 4 + -8 / 8) / 2, 12);
  expect(pt.others).toBeCloseTo((-1 / 2 + -0.5 / 2) / 2, 12);
  expect(pt.ratio).toBeCloseTo(pt.own / pt.others, 12);
  expect(pt.nullRatio[0]).toBeCloseTo((-1 / 4 + -2 / 8) / 2 / ((-0.5 / 2 + -0.5 / 2) / 2), 12);
  // the raw ratio is untouched: (−5) / (−0.75)
  expect(s.specificity[0]!.ratio).toBeCloseTo(5 / 0.75, 12);
  // without token counts there is no per-token row
  expect(
    ablationStats({ labels: ['A', 'B'], labelOf: Int32Array.from([0, 0, 1, 1]), before,
      regions: [{ name: 'A', minus: null, after, random }], bootstrap: 50, seed: 1 }).specificity[0]!.perToken,
  ).toBeUndefined();
});

/** Every zeroed block costs each item 0.02 nats per continuation token (times a little noise per item and block). */
async function perTokenEngine(dir: string): Promise<LoglikEngine> {
  const zeroed = zeroedBlocks(dir, MATRICES, BLOCK);
  return fakeLoglikEngine((req) => {
    const i = Number(/item (\d+)/.exec(String.fromCharCode(...req.context))![1]);
    const T = req.continuations[0]!.length;
    let cost = 0;
    for (const b of zeroed) cost += 0.02 * T * (0.8 + 0.4 * u(i, b));
    return [-2 * T - u(i, 'base') - cost];
  });
}

describe('continuations of one label twice as long, the same cost per token', () => {
  it('raw cost ratio about 2 (as its random regions’), per-token ratio about 1; summary.json and the CLI carry both',
    async () => {
      const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-length-'));
      const run = writeAblateRun(path.join(tmp, 'run'), ensureGeneratedModel('tiny-llama'), REGIONS, BLOCK);
      const f = path.join(tmp, 'items.jsonl');
      // A's continuation: 8 characters (8 tokens of the character tokenizer), the others' 4; the contexts alike
      writeFileSync(f,
        Array.from({ length: N },
          (_, i) =>
            JSON.stringify({ id: `i${i}`, group: GROUPS[i % 2],
              context: `item ${String(i).padStart(2, '0')} group ${GROUPS[i % 2]}:`,
              continuation: GROUPS[i % 2] === 'A' ? ' yes yes' : ' yes' })).join('\n') + '\n');
      const out = path.join(tmp, 'out');
      const s = await runAblate({ run, region: 'all',
        data: `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`, out, quiet: true,
        bootstrap: 100, random: 10,
        deps: { openLoglik: (m) => perTokenEngine(m), loadTokenizer: async () => CHAR_TOKENIZER } });
      const recs = readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(new Set(recs.filter((r) => r.labels.group === 'A').map((r) => r.continuationTokens))).toEqual(
        new Set([8]),
      );
      expect(new Set(recs.filter((r) => r.labels.group === 'B').map((r) => r.continuationTokens))).toEqual(
        new Set([4]),
      );
      const a = s.specificity.find((x) => x.region === 'A')!;
      expect(a.ratio!).toBeGreaterThan(1.8);
      expect(a.ratio!).toBeLessThan(2.2);
      for (const r of a.nullRatio) expect(Math.abs(r! - 2)).toBeLessThan(0.2);
      const pt = a.perToken!;
      expect(Math.abs(pt.ratio! - 1)).toBeLessThan(0.1);
      for (const r of pt.nullRatio) expect(Math.abs(r! - 1)).toBeLessThan(0.1);
      // nothing specific is planted: neither ratio passes against its random regions
      expect(pt.ratioPHeadHolm!).toBeGreaterThan(0.05);
      expect(a.ratioPHeadHolm!).toBeGreaterThan(0.05);
      // B's own items are the short ones: raw ratio about 1/2, per-token about 1
      const b = s.specificity.find((x) => x.region === 'B')!;
      expect(b.ratio!).toBeCloseTo(0.5, 1);
      expect(Math.abs(b.perToken!.ratio! - 1)).toBeLessThan(0.1);
      const written = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8'));
      expect(written.specificity[0].perToken.ratio).toBeCloseTo(s.specificity[0]!.perToken!.ratio!, 12);
      expect(formatAblate(s)).toMatch(
        new RegExp(`per-token cost ratio own/others ${pt.ratio!.toFixed(3)} \\(d / continuation tokens`),
      );
    }, 60_000);
});
