/**
 * Regions recomputed from other labels (src/ablate/refit.ts) on a run with planted activations
 * and lobes wanda's own results (test/ablate/refit-fixture.ts):
 *
 * - the shuffled-label null: where A's rows carry the planted activations, A's real region sits
 *   in the planted columns more than any region wanda gives A under shuffled labels, and its cost
 *   ratio is beyond all 19 shuffled-label regions' (rank p 1/20); where the planted rows are
 *   spread evenly over the groups (the labels carry nothing), A's real region is a typical one
 *   and its rank p is not small. A shuffled region is checked against lobes wanda itself, run on
 *   the run relabelled with that shuffle's labels.
 * - the fit split: the regions are lobes wanda's on a run of the fit half's rows alone, and no
 *   ablated item is a row they were fitted on.
 */
import { describe, it, expect, afterAll, vi } from 'vitest';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { shuffledLabeling, splitHalves } from '../../src/ablate/refit.js';
import { Rng } from '../../src/util/rng.js';
import { formatAblate, run as ablateCli } from '../../src/cli/ablate.js';
import { parseCommand } from '../../src/cli/args.js';
import { capture } from '../capture.js';
import { storedMatrices } from '../../src/ablate/patch.js';
import { CHAR_TOKENIZER } from './fixture.js';
import { cleanupTmp, tmpDir } from '../wanda/helpers.js';
import { BLOCK, GROUPS, MATRICES, N, activations, groupOf, inPlantedColumn, refitEngine, writeRefitItems,
  writeRefitRun } from './refit-fixture.js';

afterAll(cleanupTmp);

const model = () => ensureGeneratedModel('tiny-llama');
const deps = { openLoglik: (m: string) => refitEngine(m), loadTokenizer: async () => CHAR_TOKENIZER };
type Block = { tensor: string; rows: [number, number]; cols: [number, number] };
const readJson = (f: string) => JSON.parse(readFileSync(f, 'utf8'));
/** A block list as "tensor:row:col" keys. */
const keys = (bs: Block[]) => bs.map((b) => `${b.tensor}:${b.rows[0]}:${b.cols[0]}`).sort();
/** The blocks of a group's region in a wanda folder's regions.json, as the same keys. */
function wandaKeys(run: string, group: string): string[] {
  const r = readJson(path.join(run, 'wanda', 'regions.json'));
  return MATRICES.flatMap((m) =>
    (r.regions[group][m.name] as number[]).map((b) =>
      `model.${m.name}.weight:${Math.floor(b / m.colBlocks) * BLOCK[0]}:${(b % m.colBlocks) * BLOCK[1]}`
    )
  ).sort();
}
/** The share of a block list in the planted columns. */
const plantedShare = (bs: Block[]) =>
  bs.filter((b) => {
    const k = MATRICES.findIndex((m) => `model.${m.name}.weight` === b.tensor);
    const m = MATRICES[k]!;
    return inPlantedColumn(k, (b.rows[0] / BLOCK[0]) * m.colBlocks + b.cols[0] / BLOCK[1]);
  }).length / bs.length;

describe('the labellings', () => {
  it("a shuffle keeps every group's size and the left-out rows out; the halves are stratified and seeded", () => {
    const index = Int32Array.from({ length: 40 }, (_, i) => (i % 7 === 0 ? -1 : i % 4));
    const count = (l: Int32Array) => [0, 1, 2, 3].map((g) => l.filter((x) => x === g).length);
    const a = shuffledLabeling(index, 11);
    const b = shuffledLabeling(index, 12);
    expect(count(a)).toEqual(count(index));
    for (let r = 0; r < 40; r++) expect(a[r]! < 0).toBe(index[r]! < 0);
    expect([...a]).not.toEqual([...index]);
    expect([...a]).not.toEqual([...b]);
    expect([...shuffledLabeling(index, 11)]).toEqual([...a]);
    // the plain shuffle is the seeded Fisher–Yates of the used rows, draw for draw
    const used = [...index.keys()].filter((r) => index[r]! >= 0);
    const want = new Rng(11).shuffle(Int32Array.from(used, (r) => index[r]!));
    expect(used.map((r) => a[r])).toEqual([...want]);
    // with item groups (wanda's settings.group): labels move only within a group, each group keeps its labels
    const trees = Int32Array.from({ length: 40 }, (_, i) => Math.floor(i / 8));
    for (const sd of [1, 2, 3, 4, 5]) {
      const t = shuffledLabeling(index, sd, trees);
      for (let g = 0; g < 5; g++) {
        const of = (l: Int32Array) => [...l].filter((_, i) => trees[i] === g).sort();
        expect(of(t)).toEqual(of(index));
      }
      for (let r = 0; r < 40; r++) expect(t[r]! < 0).toBe(index[r]! < 0);
    }
    expect([...shuffledLabeling(index, 1, trees)]).not.toEqual([...index]);
    const labels = Array.from({ length: 23 }, (_, i) => 'PQR'[i % 3]!);
    const fit = splitHalves(labels, 3);
    // ⌊n/2⌋ of each label: P has 8 items, Q and R 8 and 7
    expect(['P', 'Q', 'R'].map((l) => labels.filter((x, i) => x === l && fit[i]).length)).toEqual([4, 4, 3]);
    expect([...splitHalves(labels, 3)]).toEqual([...fit]);
    expect([...splitHalves(labels, 4)]).not.toEqual([...fit]);
  });
});

describe('the shuffled-label null', () => {
  it('A is specific beyond every shuffled-label region when its rows carry the plant', async () => {
    const tmp = tmpDir('lobes-refit-');
    const hooks = activations((i) => groupOf(i) === 'A');
    const run = await writeRefitRun(path.join(tmp, 'run'), model(), hooks);
    const out = path.join(tmp, 'out');
    const s = await runAblate({ run, region: 'all', data: writeRefitItems(tmp), out, random: 3, shuffled: 19,
      quiet: true, bootstrap: 100, deps });
    const sh = s.shuffled!;
    expect(sh.shuffles).toBe(19);
    expect(new Set(sh.seeds).size).toBe(19);
    expect(sh.pFloor).toBeCloseTo(1 / 20, 12);
    expect(sh.family).toBe('regions');
    // the family of its Holm, written: every region of the run (each is its own target), the size its p's
    expect(sh.declaredFamilies!.map((f) => [f.family, f.members, f.size])).toEqual([['shuffled-label-regions', GROUPS,
      sh.rows.filter((r) => r.contrastP !== null).length]]);
    expect(readJson(path.join(out, 'summary.json')).shuffled.declaredFamilies).toEqual(sh.declaredFamilies);
    const a = sh.rows.find((r) => r.region === 'A')!;
    // every shuffled region keeps wanda's top 10% per matrix: 6 blocks in each of the 6 matrices
    expect(sh.blocks.A).toEqual(Array(19).fill(36));
    const abl = readJson(path.join(out, 'ablation.json'));
    const real = abl.regions.find((r: { key: string }) => r.key === 'A');
    const shuffledA = abl.shuffled.filter((r: { name: string }) => r.name === 'A');
    expect(shuffledA.map((r: { seed: number }) => r.seed)).toEqual(sh.seeds);
    // the ground truth: A's region leans into the planted columns more than any shuffled one
    for (const r of shuffledA) expect(plantedShare(r.blocks)).toBeLessThan(plantedShare(real.blocks));
    expect(a.ratio).not.toBeNull();
    for (const r of a.nullRatio) expect(r!).toBeLessThan(a.ratio!);
    expect(a.ratioP).toBeCloseTo(1 / 20, 12);
    expect(a.ratioZ!).toBeGreaterThan(2);
    expect(a.contrastP).toBeCloseTo(1 / 20, 12);
    expect(a.ratioPHolm!).toBeLessThanOrEqual(3 / 20 + 1e-12);
    const text = formatAblate(s);
    expect(text).toMatch(
      /^shuffled-label null: each region against the regions wanda gives its group under 19 shuffles of the labels \(seeds .*; rank p floor 0\.050; Holm over the 3 regions\)$/m,
    );
    expect(text).toMatch(
      new RegExp(
        `^  A for A \\(shuffled regions of 36(, 36){18} blocks\\): cost ratio ${a.ratio!.toFixed(3)} .*rank p=0\\.050 `,
        'm',
      ),
    );
    // records and the lineage: every shuffled pass is in records.jsonl, the run's activations in job.json's inputs
    const rec = readJson.call(null, path.join(out, 'job.json'));
    expect(rec.inputs.map((x: { name: string }) => x.name)).toEqual(
      expect.arrayContaining(['activations/layers.0.mlp.in', 'activations/layers.1.mlp.down_in']),
    );
    const first = JSON.parse(readFileSync(path.join(out, 'records.jsonl'), 'utf8').split('\n')[0]!);
    expect(Object.keys(first.shuffled)).toHaveLength(19 * 3);

    // a shuffle's regions are lobes wanda's on the run relabelled with that shuffle's labels: one
    // where the three groups' regions differ (groups with as many planted rows have the same region)
    const region = (sIdx: number, g: string) =>
      keys(abl.shuffled.find((r: { name: string; shuffle: number }) => r.name === g && r.shuffle === sIdx).blocks).join(
        ' ',
      );
    const sIdx = sh.seeds.findIndex((_, k) => new Set(GROUPS.map((g) => region(k, g))).size === 3);
    expect(sIdx).toBeGreaterThanOrEqual(0);
    const lab = shuffledLabeling(Int32Array.from({ length: N }, (_, i) => i % 3), sh.seeds[sIdx]!);
    const relabelled = await writeRefitRun(path.join(tmp, 'relabelled'), model(), hooks, {
      label: (i) => GROUPS[lab[i]!]!,
    });
    for (const g of GROUPS) expect(region(sIdx, g)).toBe(wandaKeys(relabelled, g).join(' '));
  }, 120_000);

  it('A is not specific beyond the shuffled-label regions when the labels carry nothing', async () => {
    const tmp = tmpDir('lobes-refit-null-');
    // four planted rows in every group: A's real rows are exactly as planted as any group's
    const run = await writeRefitRun(path.join(tmp, 'run'), model(), activations((i) => Math.floor(i / 3) % 3 === 0));
    const s = await runAblate({ run, region: 'A', data: writeRefitItems(tmp), out: path.join(tmp, 'out'), random: 3,
      shuffled: 19, quiet: true, bootstrap: 100, deps });
    const a = s.shuffled!.rows[0]!;
    expect(a.nullRatio.every((r) => r !== null)).toBe(true);
    expect(a.ratioP!).toBeGreaterThan(0.2);
    expect(a.contrastP).toBeGreaterThan(0.2);
    expect(Math.abs(a.ratioZ!)).toBeLessThan(1.5);
  }, 120_000);
});

describe('the fit split', () => {
  it('fits the regions on the fit half (lobes wanda on those rows alone) and ablates the test half only', async () => {
    const tmp = tmpDir('lobes-refit-split-');
    // activations with a scale of their own per row and feature: regions fitted on half the rows are not those of every row
    const hooks = activations((i) => groupOf(i) === 'A', 1.3, 5, true);
    const run = await writeRefitRun(path.join(tmp, 'run'), model(), hooks);
    const out = path.join(tmp, 'out');
    const s = await runAblate({ run, region: 'all', data: writeRefitItems(tmp), out, random: 3, fitSplit: 7,
      quiet: true, bootstrap: 100, deps });
    const fs = s.fitSplit!;
    expect(fs.fit).toEqual({ items: 15, rows: 15, byLabel: { A: 5, B: 5, C: 5 }, notInRun: 0 });
    expect(fs.test).toEqual({ items: 15, byLabel: { A: 5, B: 5, C: 5 } });
    expect(s.items).toBe(15);
    const abl = readJson(path.join(out, 'ablation.json'));
    const ablated = readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n').map((l) =>
      JSON.parse(l).id as string
    );
    expect(ablated).toHaveLength(15);
    expect(ablated).toEqual(abl.fitSplit.testIds);
    // no ablated item is a row the regions were fitted on
    const fitRows = new Set<string>(abl.fitSplit.fitRows);
    expect(fitRows.size).toBe(15);
    for (const id of ablated) expect(fitRows.has(id)).toBe(false);
    // the regions are lobes wanda's on a run of the fit rows alone
    const rows = [...fitRows].map((id) => Number(id.slice(1))).sort((x, y) => x - y);
    const fitRun = await writeRefitRun(path.join(tmp, 'fit'), model(), hooks, { rows });
    for (const g of GROUPS)
      expect(keys(abl.regions.find((r: { key: string }) => r.key === g).blocks)).toEqual(wandaKeys(fitRun, g));
    expect(fs.regions.map((r) => r.blocks)).toEqual([36, 36, 36]);
    // and they are not the regions of every row (which regions.json holds)
    for (const r of fs.regions) expect(r.jaccardWithStored).toBeLessThan(1);
    // the split is part of the job: the same command finds it complete, another seed is refused
    const again = { run, region: 'all', data: writeRefitItems(tmp), out, random: 3, quiet: true, bootstrap: 100, deps };
    expect(await runAblate({ ...again, fitSplit: 7 })).toEqual(s);
    await expect(runAblate({ ...again, fitSplit: 8 })).rejects.toThrow(
      /this ablation folder was made with other settings, data, run or model \(data, settings differ\)/,
    );
    expect(formatAblate(s)).toMatch(
      /^fit split \(seed 7, stratified by group\): regions fitted on 15 run rows of the fit half's 15 items \(A 5, B 5, C 5\); every figure above is on the test half's 15 items \(A 5, B 5, C 5\), Holm families as above$/m,
    );
  }, 120_000);
});

describe('bad input', () => {
  it("refuses when the run's own labels no longer give regions.json (wanda's weights changed since), writing nothing",
    async () => {
      const tmp = tmpDir('lobes-refit-bad-');
      const weights = path.join(tmp, 'weights');
      cpSync(model(), weights, { recursive: true });
      const run = await writeRefitRun(path.join(tmp, 'run'), model(), activations((i) => groupOf(i) === 'A'), {
        weights,
      });
      // wanda's copy of the weights, edited after lobes wanda: layer 0's gate_proj input features 48..63 ×4
      const m = MATRICES[0]!;
      const src = storedMatrices(weights, MATRICES)[0]!.ref.source as unknown as {
        data: { file: string; offset: number };
      };
      const buf = readFileSync(src.data.file);
      for (let c = 48; c < 64; c++)
        for (let r = 0; r < m.dOut; r++) {
          const at = src.data.offset + 4 * (c * m.dOut + r);
          buf.writeFloatLE(buf.readFloatLE(at) * 4, at);
        }
      writeFileSync(src.data.file, buf);
      const out = path.join(tmp, 'out');
      await expect(
        runAblate({ run, region: 'all', data: writeRefitItems(tmp), out, random: 2, shuffled: 2, quiet: true, deps }),
      ).rejects.toThrow(
        /shuffled: wanda's regions recomputed from the run's activations and wanda's weights are not those of regions\.json \(region A: \d+ blocks differ of 36\)/,
      );
      expect(existsSync(out)).toBe(false);
    }, 120_000);

  it('refuses --shuffled with --task iae, weight-resolution regions, and a fit half with no row in the run',
    async () => {
      const tmp = tmpDir('lobes-refit-bad2-');
      const hooks = activations((i) => groupOf(i) === 'A');
      const run = await writeRefitRun(path.join(tmp, 'run'), model(), hooks);
      const data = writeRefitItems(tmp);
      await expect(
        runAblate({ run, region: 'A', data, out: path.join(tmp, 'o1'), shuffled: 2, task: 'iae', quiet: true, deps }),
      ).rejects.toThrow('shuffled applies to the continuation task');
      await expect(runAblate({ run, region: 'A', data, out: path.join(tmp, 'o2'), shuffled: -1, quiet: true, deps }))
        .rejects.toThrow('shuffled must be a non-negative integer, got -1');
      const wrun = await writeRefitRun(path.join(tmp, 'wrun'), model(), hooks, { resolution: 'weight' });
      await expect(
        runAblate({ run: wrun, region: 'A', data, out: path.join(tmp, 'o3'), shuffled: 2, quiet: true, deps }),
      ).rejects.toThrow(/: shuffled: the regions were kept with resolution weight/);
      // items whose ids are not the run's samples
      const f = path.join(tmp, 'other.jsonl');
      writeFileSync(f,
        Array.from({ length: N },
          (_, i) =>
            JSON.stringify({ id: `x${i}`, group: groupOf(i), context: `item ${i} group ${groupOf(i)}:`,
              continuation: ' yes' })).join('\n') + '\n');
      await expect(
        runAblate({ run, region: 'A', data: `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`,
          out: path.join(tmp, 'o4'), fitSplit: 1, quiet: true, deps }),
      ).rejects.toThrow(/: fitSplit: no row of the run is an item of the fit half labelled "A"/);
    }, 120_000);
});

describe('the command line', () => {
  it(
    '--shuffled alone is 5 shuffles, --shuffled S takes a count; both flags reach the summary (the real scorer on tiny-llama)',
    async () => {
      const spec = { usage: 'lobes t RUN [--shuffled [S]]', help: '',
        options: { shuffled: { type: 'string' as const, bare: '5' }, random: { type: 'string' as const } },
        positionals: [0, 1] as [number, number] };
      expect(parseCommand(['--shuffled', '19', 'RUN'], spec)!.values.shuffled).toBe('19');
      const p = parseCommand(['--shuffled', 'RUN', '--random', '2'], spec)!;
      expect(p.values.shuffled).toBe('5');
      expect(p.positionals).toEqual(['RUN']);
      expect(parseCommand(['RUN', '--shuffled'], spec)!.values.shuffled).toBe('5');

      const tmp = tmpDir('lobes-refit-cli-');
      const run = await writeRefitRun(path.join(tmp, 'run'), model(), activations((i) => groupOf(i) === 'A'));
      const io = capture();
      try {
        expect(
          await ablateCli([run, '--region', 'A', '--data', writeRefitItems(tmp), '--out', path.join(tmp, 'out'),
            '--shuffled', '--fit-split', '2', '--random', '2', '--bootstrap', '100', '--json']),
        ).toBe(0);
      } finally {
        vi.restoreAllMocks();
      }
      const s = JSON.parse(io.out());
      expect(s.shuffled.shuffles).toBe(5);
      expect(s.shuffled.rows.map((r: { region: string }) => r.region)).toEqual(['A']);
      expect(s.fitSplit.seed).toBe(2);
      expect(s.items).toBe(15);
    },
    120_000,
  );
});
