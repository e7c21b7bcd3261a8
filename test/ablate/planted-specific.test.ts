/**
 * A planted specific region at a dose that does not saturate. The model's weight files are real
 * (the generated tiny-llama: every block is really zeroed on disk), the scorer is a stand-in that
 * reads the edited weights back: each zeroed block costs every item about the same small amount
 * (times the item's difficulty, with a little noise per item and block), and region A's 12
 * blocks (2 in each MLP matrix, 3% of the 384) cost A's own items 1.5× that. Regions B and C
 * hold as many blocks elsewhere. Against the default K = 20 random regions, A must come out
 * specific — its cost ratio near 1.5 where random regions give about 1, beyond all 20 (rank p
 * 1/21), headline p passing Holm over the 3 regions, and costlier for its own items than every
 * random region item by item — while B and C do not.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import { CHAR_TOKENIZER, fakeLoglikEngine, tinyMatrices, unitHash, writeAblateRun, zeroedBlocks } from './fixture.js';

const BLOCK: [number, number] = [16, 16];
const MATRICES = tinyMatrices(BLOCK);
const names = MATRICES.map((m) => m.name);
const regionOf = (flats: [number, number]) => Object.fromEntries(names.map((n) => [n, [...flats]]));
const REGIONS = { A: regionOf([5, 40]), B: regionOf([12, 33]), C: regionOf([20, 61]) };
const PLANTED = new Set(names.flatMap((n) => REGIONS.A[n]!.map((f) => `${n}#${f}`)));
const GROUPS = 'ABC';
const N = 30;

const u = unitHash;

/** The stand-in scorer: which blocks are zeroed in the folder it is opened on, and what that costs each item. */
async function plantedEngine(dir: string): Promise<LoglikEngine> {
  const zeroed = zeroedBlocks(dir, MATRICES, BLOCK);
  return fakeLoglikEngine((req) => {
    const i = Number(/item (\d+)/.exec(String.fromCharCode(...req.context))![1]);
    const own = GROUPS[i % 3] === 'A';
    const hard = 0.5 + u(i, 'hard');
    let cost = 0;
    for (const b of zeroed) cost += 0.05 * hard * (0.8 + 0.4 * u(i, b)) * (own && PLANTED.has(b) ? 1.5 : 1);
    return [-12 - 4 * u(i, 'base') - cost];
  });
}

describe('a planted specific region at a non-saturating dose', () => {
  it('comes out specific against 20 random regions (ratio, rank p, headline, paired), B and C do not', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-planted-specific-'));
    const run = writeAblateRun(path.join(tmp, 'run'), ensureGeneratedModel('tiny-llama'), REGIONS, BLOCK);
    const f = path.join(tmp, 'items.jsonl');
    writeFileSync(f,
      Array.from({ length: N },
        (_, i) =>
          JSON.stringify({ id: `i${i}`, group: GROUPS[i % 3], context: `item ${i} group ${GROUPS[i % 3]}:`,
            continuation: ' yes' })).join('\n') + '\n');
    const out = path.join(tmp, 'out');
    const s = await runAblate({ run, region: 'all',
      data: `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`, out, quiet: true, bootstrap: 200,
      deps: { openLoglik: (m) => plantedEngine(m), loadTokenizer: async () => CHAR_TOKENIZER } });
    expect(s.random).toBe(20);
    const recs = readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // the dose does not saturate: the region costs under 10% of any item's log-likelihood
    for (const r of recs) expect((r.before - r.after.A) / -r.before).toBeLessThan(0.1);
    const spec = Object.fromEntries(s.specificity.map((x) => [x.region, x]));
    const a = spec.A!;
    // A's items are a little easier than the others here, so every ratio carries the same factor: A's is 1.5× the random regions'
    const gm = Math.exp(a.nullRatio.reduce<number>((t, r) => t + Math.log(r!), 0) / 20);
    expect(a.ratio! / gm).toBeGreaterThan(1.4);
    expect(a.ratio! / gm).toBeLessThan(1.6);
    for (const r of a.nullRatio) expect(Math.abs(r! / gm - 1)).toBeLessThan(0.1);
    expect(a.ratioRankP).toBeCloseTo(1 / 21, 12);
    expect(a.ratioPHeadHolm!).toBeLessThan(0.05);
    expect(a.ratioMde!).toBeLessThan(a.ratio!);
    expect(a.pHeadHolm!).toBeLessThan(0.05);
    expect(a.paired!.own.n).toBe(10);
    expect(a.paired!.own.beaten).toBe(20);
    expect(a.paired!.others.beaten).toBeLessThan(20);
    for (const g of ['B', 'C']) {
      const x = spec[g]!;
      expect(Math.abs(x.ratio! / Math.exp(x.nullRatio.reduce<number>((t, r) => t + Math.log(r!), 0) / 20) - 1))
        .toBeLessThan(0.1);
      expect(x.ratioPHeadHolm!).toBeGreaterThan(0.05);
    }
  }, 60_000);
});
