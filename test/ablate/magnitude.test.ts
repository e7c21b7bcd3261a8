/**
 * The |W|-magnitude baseline (`--magnitude`): per region, as many blocks per matrix as the
 * region, those with the largest mean |W|. The test computes each block's mean |W| itself from
 * the generated tiny-llama's float32 weights and lists the expected blocks; the stand-in scorer
 * reads the zeroed blocks back and charges each its mean |W| (relative to the matrix's), with A's
 * planted blocks costing A's items 1.5×. The baseline must be those blocks, scored against the
 * region's own random regions, and the paired tests of the region against it must be the
 * records' own signed-rank tests.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { storedMatrices } from '../../src/ablate/patch.js';
import { signedRank } from '../../src/util/wilcoxon.js';
import { formatAblate } from '../../src/cli/ablate.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import { CHAR_TOKENIZER, fakeLoglikEngine, tinyMatrices, writeAblateRun } from './fixture.js';

const BLOCK: [number, number] = [16, 16];
const MATRICES = tinyMatrices(BLOCK);
const names = MATRICES.map((m) => m.name);
const regionOf = (flats: [number, number]) => Object.fromEntries(names.map((n) => [n, [...flats]]));
const REGIONS = { A: regionOf([5, 40]), B: regionOf([12, 33]), C: regionOf([20, 61]) };
const PLANTED = new Set(names.flatMap((n) => REGIONS.A[n]!.map((f) => `${n}#${f}`)));
const GROUPS = 'ABC';

/** The float32 weights of each MLP matrix in the folder (MatMul [d_in, d_out]: W[r, c] at c · d_out + r). */
function weights(dir: string): Float32Array[] {
  return storedMatrices(dir, MATRICES).map((sm) => {
    const s = sm.ref.source as { data: { file: string; offset: number; byteLength: number } };
    const buf = readFileSync(s.data.file);
    return new Float32Array(
      buf.buffer.slice(buf.byteOffset + s.data.offset, buf.byteOffset + s.data.offset + s.data.byteLength),
    );
  });
}

/** Each block's mean |W|, computed here weight by weight. */
function meanAbs(dir: string): number[][] {
  return weights(dir).map((f, k) => {
    const m = MATRICES[k]!;
    return Array.from({ length: m.rowBlocks * m.colBlocks }, (_, b) => {
      const r0 = Math.floor(b / m.colBlocks) * BLOCK[0];
      const c0 = (b % m.colBlocks) * BLOCK[1];
      let s = 0;
      for (let r = r0; r < r0 + BLOCK[0]; r++)
        for (let c = c0; c < c0 + BLOCK[1]; c++) s += Math.abs(f[c * m.dOut + r]!);
      return s / (BLOCK[0] * BLOCK[1]);
    });
  });
}

describe('the |W|-magnitude baseline', () => {
  it(
    "zeroes the region's count of largest-mean-|W| blocks per matrix, against the region's random regions, compared item by item",
    async () => {
      const model = ensureGeneratedModel('tiny-llama');
      const mean = meanAbs(model);
      const avg = mean.map((m) => m.reduce((a, b) => a + b, 0) / m.length);
      const engine = async (dir: string): Promise<LoglikEngine> => {
        const zeroed: [number, number][] = [];
        weights(dir).forEach((f, k) => {
          const m = MATRICES[k]!;
          for (let b = 0; b < m.rowBlocks * m.colBlocks; b++)
            if (f[(b % m.colBlocks) * BLOCK[1] * m.dOut + Math.floor(b / m.colBlocks) * BLOCK[0]] === 0)
              zeroed.push([k, b]);
        });
        return fakeLoglikEngine((req) => {
          const i = Number(/item (\d+)/.exec(String.fromCharCode(...req.context))![1]);
          const own = GROUPS[i % 3] === 'A';
          let cost = 0;
          for (const [k, b] of zeroed)
            cost += 0.05 * (mean[k]![b]! / avg[k]!) * (1 + 0.02 * (((i * 31 + b * 7 + k) % 13) - 6)) *
              (own && PLANTED.has(`${names[k]}#${b}`) ? 1.5 : 1);
          return [-20 - (i % 5) - cost];
        });
      };
      const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-magnitude-'));
      const run = writeAblateRun(path.join(tmp, 'run'), model, REGIONS, BLOCK);
      const f = path.join(tmp, 'items.jsonl');
      writeFileSync(f,
        Array.from({ length: 24 },
          (_, i) =>
            JSON.stringify({ id: `i${i}`, group: GROUPS[i % 3], context: `item ${i} group ${GROUPS[i % 3]}:`,
              continuation: ' yes' })).join('\n') + '\n');
      const out = path.join(tmp, 'out');
      const s = await runAblate({ run, region: 'all',
        data: `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`, out, random: 5, magnitude: true,
        bootstrap: 100, quiet: true, deps: { openLoglik: engine, loadTokenizer: async () => CHAR_TOKENIZER } });
      // the expected blocks: the 2 of largest mean |W| in each matrix
      const want = MATRICES.flatMap((m, k) =>
        mean[k]!.map((v, b) => [v, b] as const).sort((x, y) => y[0] - x[0] || x[1] - y[1]).slice(0, 2).map(([, b]) =>
          `model.${m.name}.weight:${Math.floor(b / m.colBlocks) * 16}:${(b % m.colBlocks) * 16}`
        )
      ).sort();
      const abl = JSON.parse(readFileSync(path.join(out, 'ablation.json'), 'utf8'));
      const base = abl.regions.find((r: any) => r.key === '|W|:0');
      expect(base.blocks.map((b: any) => `${b.tensor}:${b.rows[0]}:${b.cols[0]}`).sort()).toEqual(want);
      // the three regions share one null set, so one baseline
      expect(s.magnitude!.map((m) => [m.region, m.blocks, m.specificity.target])).toEqual([['A', 12, 'A'], ['B', 12,
        'B'], ['C', 12, 'C']]);
      expect(s.magnitude![0]!.specificity.nullContrast).toEqual(s.specificity[0]!.nullContrast);
      // |W| alone carries no A-specific cost; A's region does
      expect(s.magnitude![0]!.specificity.ratio! / s.specificity[0]!.ratio!).toBeLessThan(0.8);
      // the paired tests of each region against its baseline are the records' signed-rank tests
      const recs = readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      for (const m of s.magnitude!) {
        const own = recs.filter((r) => r.labels.group === m.region);
        const others = recs.filter((r) => r.labels.group !== m.region);
        expect(m.versusRegion.own.p).toBe(signedRank(own.map((r) => r.after[m.region] - r.after['|W|:0']), 'less')!.p);
        expect(m.versusRegion.others.p).toBe(
          signedRank(others.map((r) => r.after[m.region] - r.after['|W|:0']), 'less')!.p,
        );
      }
      expect(formatAblate(s)).toMatch(
        /\|W\| baseline of A \(12 blocks of largest mean \|W\|, no activation norm\): cost ratio for A /,
      );
    },
    60_000,
  );
});
