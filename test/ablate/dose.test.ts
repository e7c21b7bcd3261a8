/**
 * A dose–response (`--top 0.02,0.05,0.1`): every region at each wanda top fraction, from the
 * stored pooled block scores. The scores are planted so that each group's ranking of every
 * matrix's 64 blocks is a known permutation: at top f its region is the round(64 f) blocks ranked
 * first (1, 3, 6 per matrix), which the test lists itself. The stand-in scorer reads the zeroed
 * blocks back from the real weight files; each costs every item about 0.05 nats, and A's 13
 * top-ranked blocks per matrix cost A's items 1.5× that. Each dose has its own random regions of
 * its own size. Also: another --top into the same folder is refused, and so are regions the
 * stored scores do not reproduce, and --resolution weight results.
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { writeSafetensors } from '../../src/formats/safetensors.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import { formatAblate } from '../../src/cli/ablate.js';
import { holmRef } from '../util/holm-ref.js';
import { CHAR_TOKENIZER, fakeLoglikEngine, tinyMatrices, unitHash, writeAblateRun, zeroedBlocks } from './fixture.js';

const BLOCK: [number, number] = [16, 16];
const MATRICES = tinyMatrices(BLOCK);
const GROUPS = ['A', 'B', 'C'];
/** Group g's rank of block b of matrix k (0: its best), a permutation of 0..63 per (group, matrix). */
const rank = (g: number, k: number, b: number) => (b * 37 + g * 11 + k * 5) % 64;
/** The blocks of matrix k in group g's top n. */
const topBlocks = (g: number, k: number, n: number) =>
  Array.from({ length: 64 }, (_, b) => b).filter((b) => rank(g, k, b) < n);
const regionsAt = (n: number) =>
  Object.fromEntries(
    GROUPS.map((g, gi) => [g, Object.fromEntries(MATRICES.map((m, k) => [m.name, topBlocks(gi, k, n)]))]),
  );
const PLANTED = new Set(MATRICES.flatMap((m, k) => topBlocks(0, k, 13).map((b) => `${m.name}#${b}`)));
const u = unitHash;

async function plantedEngine(dir: string): Promise<LoglikEngine> {
  const zeroed = zeroedBlocks(dir, MATRICES, BLOCK);
  return fakeLoglikEngine((req) => {
    const i = Number(/item (\d+)/.exec(String.fromCharCode(...req.context))![1]);
    const own = GROUPS[i % 3] === 'A';
    let cost = 0;
    for (const b of zeroed) cost += 0.05 * (0.8 + 0.4 * u(i, b)) * (own && PLANTED.has(b) ? 1.5 : 1);
    return [-20 - 4 * u(i, 'base') - cost];
  });
}

/** A run whose wanda results keep the top 5% (3 blocks per matrix), with pooled scores that rank blocks as `rank` does. */
function doseRun(dir: string, edit?: (settings: any, regions: any) => void): string {
  const run = writeAblateRun(dir, ensureGeneratedModel('tiny-llama'), regionsAt(3), BLOCK);
  const sf = path.join(run, 'wanda', 'settings.json');
  const settings = JSON.parse(readFileSync(sf, 'utf8'));
  Object.assign(settings, { top: { kind: 'fraction', value: 0.05, scope: 'matrix' }, resolution: 'block' });
  const rf = path.join(run, 'wanda', 'regions.json');
  const regions = JSON.parse(readFileSync(rf, 'utf8'));
  edit?.(settings, regions);
  writeFileSync(sf, JSON.stringify(settings) + '\n');
  writeFileSync(rf, JSON.stringify(regions) + '\n');
  writeSafetensors(path.join(run, 'wanda', 'pooled.safetensors'),
    GROUPS.flatMap((g, gi) =>
      MATRICES.map((m, k) => ({ name: `${g}|${m.name}`, dtype: 'F32' as const, shape: [m.rowBlocks, m.colBlocks],
        data: Float32Array.from({ length: 64 }, (_, b) => 1 - rank(gi, k, b) / 64) })
      )
    ));
  return run;
}

describe('lobes ablate --top: a dose–response', () => {
  let tmp: string;
  let spec: string;
  const deps = { openLoglik: (m: string) => plantedEngine(m), loadTokenizer: async () => CHAR_TOKENIZER };
  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-dose-'));
    const f = path.join(tmp, 'items.jsonl');
    writeFileSync(f,
      Array.from({ length: 24 },
        (_, i) =>
          JSON.stringify({ id: `i${i}`, group: GROUPS[i % 3], context: `item ${i} group ${GROUPS[i % 3]}:`,
            continuation: ' yes' })).join('\n') + '\n');
    spec = `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`;
  });

  it(
    'ablates each region at each top, each against random regions of its own size; the cost grows with the dose and A stays specific',
    async () => {
      const run = doseRun(path.join(tmp, 'run'));
      const out = path.join(tmp, 'out');
      const s = await runAblate({ run, region: 'all', data: spec, out, random: 5, tops: [0.1, 0.02, 0.05],
        bootstrap: 100, quiet: true, deps });
      expect(s.doses!.map((d) => [d.top, d.stored])).toEqual([[0.02, false], [0.05, true], [0.1, false]]);
      // 1, 3 and 6 blocks in each of the 6 matrices
      expect(s.doses!.map((d) => d.regions.map((r) => r.blocks))).toEqual([[6, 6, 6], [18, 18, 18], [36, 36, 36]]);
      const abl = JSON.parse(readFileSync(path.join(out, 'ablation.json'), 'utf8'));
      for (const [top, n] of [[0.02, 1], [0.1, 6]] as const) {
        for (const [gi, g] of GROUPS.entries()) {
          const r = abl.regions.find((x: any) => x.key === `${g}@${top}`);
          expect(r.top).toBe(top);
          const want = MATRICES.flatMap((m, k) =>
            topBlocks(gi, k, n).map((b) =>
              `model.${m.name}.weight:${Math.floor(b / m.colBlocks) * 16}:${(b % m.colBlocks) * 16}`
            )
          ).sort();
          expect(r.blocks.map((b: any) => `${b.tensor}:${b.rows[0]}:${b.cols[0]}`).sort()).toEqual(want);
          // its random regions have its size, matrix by matrix
          for (const id of r.random) {
            const rr = abl.random.find((x: any) => x.id === id);
            for (const m of MATRICES)
              expect(rr.blocks.filter((b: any) => b.tensor === `model.${m.name}.weight`)).toHaveLength(n);
          }
        }
      }
      // the stored dose is the summary's own figures
      expect(s.doses![1]!.specificity).toEqual(s.specificity);
      // each dose writes its own families: every region × label cell and every region, whatever the results;
      // the size its p's, its Holm p's Holm of them (recomputed here)
      const written = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8'));
      expect(written.doses.map((d: any) => d.declaredFamilies.map((f: any) => f.family))).toEqual(
        Array(3).fill(['specificity-rank', 'cells', 'specificity', 'specificity-per-token']),
      );
      expect(written.doses[1].declaredFamilies).toEqual(written.declaredFamilies);
      for (const d of written.doses) {
        const fams = new Map(d.declaredFamilies.map((f: any) => [f.family, f]));
        const cells = fams.get('cells') as any;
        expect(cells.members).toEqual(GROUPS.flatMap((r) => GROUPS.map((l) => `${r} on ${l}`)));
        expect(cells.size).toBe(d.cells.filter((c: any) => c.pT !== null).length);
        const want = holmRef(d.cells.map((c: any) => c.pT));
        d.cells.forEach((c: any, i: number) => expect(c.pTHolm).toBeCloseTo(want[i]!, 12));
        expect((fams.get('specificity-rank') as any).members).toEqual(GROUPS);
        const rank = holmRef(d.specificity.map((x: any) => x.p));
        d.specificity.forEach((x: any, i: number) => expect(x.pHolm).toBeCloseTo(rank[i]!, 12));
      }
      // the cost of A's own items grows with the dose, about 0.05 × 1.5 per block
      const own = s.doses!.map((d) => d.cells.find((c) => c.region === 'A' && c.label === 'A')!.delta);
      expect(own[0]!).toBeGreaterThan(own[1]!);
      expect(own[1]!).toBeGreaterThan(own[2]!);
      own.forEach((v, j) => expect(-v / (0.075 * [6, 18, 36][j]!)).toBeCloseTo(1, 1));
      // A's ratio is above every random region's at every dose
      for (const d of s.doses!) {
        const a = d.specificity.find((x) => x.region === 'A')!;
        expect(a.ratioRankP).toBeCloseTo(1 / 6, 12);
        expect(a.ratio!).toBeGreaterThan(1.35);
      }
      // the CLI prints each dose with its null
      const text = formatAblate(s);
      expect(text).toMatch(
        /dose–response: each region at each wanda top fraction, against its own 5 random regions of its size/,
      );
      expect(text.split('\n').filter((l) => /^ {2}top 0\.(02|05|1)/.test(l))).toHaveLength(9);
      // another --top into the same folder is refused: the settings differ
      const err = await runAblate({ run, region: 'all', data: spec, out, random: 5, tops: [0.02, 0.05], bootstrap: 100,
        quiet: true, deps }).then(() => null, (e) => e);
      expect(err?.message).toMatch(
        /this ablation folder was made with other settings, data, run or model \(settings, passes differ\)/,
      );
    },
    60_000,
  );

  it(
    "is refused, saying why, when the stored regions are not the pooled scores' own top selection, or were kept by weight",
    async () => {
      const moved = doseRun(path.join(tmp, 'run-moved'), (_, regions) => {
        // the 3rd-ranked block of one matrix swapped for the 4th
        const byRank = (r: number) => Array.from({ length: 64 }, (_, b) => b).find((b) => rank(0, 1, b) === r)!;
        regions.regions.A['layers.0.mlp.up_proj'] = [byRank(0), byRank(1), byRank(3)].sort((a, b) => a - b);
      });
      const e1 = await runAblate({ run: moved, region: 'A', data: spec, out: path.join(tmp, 'o1'), random: 2,
        tops: [0.1], quiet: true, deps }).then(() => null, (e) => e);
      expect(e1?.message).toMatch(
        /: tops 0\.1: region A of regions\.json is not the top selection of its pooled block scores at wanda's top\.value 0\.05/,
      );
      expect(String(e1.message)).not.toContain('\n');
      const weight = doseRun(path.join(tmp, 'run-weight'), (settings) => (settings.resolution = 'weight'));
      const e2 = await runAblate({ run: weight, region: 'A', data: spec, out: path.join(tmp, 'o2'), random: 2,
        tops: [0.1], quiet: true, deps }).then(() => null, (e) => e);
      expect(e2?.message).toMatch(/: tops 0\.1: the regions were kept with resolution weight/);
    },
    60_000,
  );
});
