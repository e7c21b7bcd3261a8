/**
 * `lobes ablate` end to end on the generated tiny-llama against Hugging Face
 * (test/goldens/make_ablate_goldens.py): the blocks ablation.json lists are the ones the goldens
 * zeroed in transformers' weights (computed there from the same wanda block sets), and the
 * log-likelihoods before and after the ablation equal transformers' for the same items, in the
 * float32, opaque-named and float16 layouts. Also: resume, and bad input (one line, nothing
 * left behind).
 */
import { describe, it, expect, beforeAll, vi } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import type { AblateRecord } from '../../src/ablate/store.js';
import { GOLD, writeAblateRun, writeGoldenItems } from './fixture.js';
import { main } from '../../src/cli/main.js';
import { capture } from '../capture.js';

const readRecords = (dir: string) =>
  readFileSync(path.join(dir, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as AblateRecord);

describe.each([
  ['tiny-llama', 1e-4],
  ['tiny-llama-opaque', 1e-4],
  ['tiny-llama-fp16', 0.15],
] as const)('ablation of %s against Hugging Face', (name, tol) => {
  let tmp: string;
  let run: string;
  let spec: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-'));
    run = writeAblateRun(path.join(tmp, 'run'), ensureGeneratedModel(name), GOLD.regions, GOLD.block);
    spec = writeGoldenItems(tmp);
  });

  for (const minus of [null, 'B'] as const) {
    const key = minus ? 'A∖B' : 'A';
    it(`zeroes the goldens' blocks of ${key} and changes each item's log-likelihood as transformers does`, async () => {
      const out = path.join(tmp, `out-${minus ?? 'none'}`);
      const s = await runAblate({ run, region: 'A', minus, data: spec, out, random: 2, quiet: true });
      const abl = JSON.parse(readFileSync(path.join(out, 'ablation.json'), 'utf8'));
      expect(abl.regions).toHaveLength(1);
      expect(abl.regions[0].key).toBe(key);
      expect(abl.regions[0].blocks.map((b: any) => ({ tensor: b.tensor, rows: b.rows, cols: b.cols }))).toEqual(
        GOLD.blocks[key],
      );
      for (const b of abl.regions[0].blocks) expect(typeof b.initializer).toBe('string');
      expect(s.regions[0]!.blocks).toBe(GOLD.blocks[key]!.length);
      const recs = readRecords(out);
      expect(recs.map((r) => r.id)).toEqual(GOLD.items.map((it) => it.id));
      recs.forEach((r, i) => {
        expect(r.contextTokens).toBe(GOLD.items[i]!.contextIds.length);
        expect(r.continuationTokens).toBe(GOLD.items[i]!.continuationIds.length);
        expect(Math.abs(r.before - GOLD.before[i]!)).toBeLessThan(tol);
        expect(Math.abs(r.after[key]! - GOLD.after[key]![i]!)).toBeLessThan(tol);
        expect(Object.keys(r.random)).toHaveLength(2);
      });
      // The working copy of the model is gone; the folder holds the outputs and the job.
      expect(readdirSync(out).sort()).toEqual(['ablation.json', 'job.json', 'records.jsonl', 'summary.json']);
      // The summary's cell means are the records' means.
      for (const c of s.cells) {
        const mine = recs.filter((r) => r.labels.group === c.label);
        expect(c.n).toBe(mine.length);
        expect(c.delta).toBeCloseTo(mine.reduce((a, r) => a + r.after[key]! - r.before, 0) / mine.length, 10);
      }
    }, 120_000);
  }
});

describe('lobes ablate jobs', () => {
  let tmp: string;
  let run: string;
  let spec: string;
  let model: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-'));
    model = ensureGeneratedModel('tiny-llama');
    run = writeAblateRun(path.join(tmp, 'run'), model, { ...GOLD.regions, C: { 'layers.0.mlp.gate_proj': [11] } },
      GOLD.block);
    spec = writeGoldenItems(tmp);
  });

  it('resumes a killed job from its chunks and gives the same records', async () => {
    const a = path.join(tmp, 'full');
    await runAblate({ run, region: 'all', data: spec, out: a, random: 2, chunkUnits: 2, quiet: true });
    const b = path.join(tmp, 'killed');
    // A job killed after some chunks: fail the engine on the 5th scoring call.
    let calls = 0;
    const { openLoglikEngine } = await import('../../src/runtime/loglik.js');
    const failing = async (m: string, o: any) => {
      const e = await openLoglikEngine(m, o);
      return { ...e, info: e.info, usesCache: e.usesCache, stats: e.stats, close: () => e.close(),
        score: (r: any, d: any) => (++calls === 5 ? Promise.reject(new Error('killed')) : e.score(r, d)) };
    };
    await expect(
      runAblate({ run, region: 'all', data: spec, out: b, random: 2, chunkUnits: 2, quiet: true,
        deps: { openLoglik: failing as any } }),
    ).rejects.toThrow('killed');
    expect(existsSync(path.join(b, 'summary.json'))).toBe(false);
    const logs: string[] = [];
    await runAblate({ run, region: 'all', data: spec, out: b, random: 2, chunkUnits: 2, log: (l) => logs.push(l),
      quiet: true });
    expect(logs.join('\n')).toMatch(/resuming: 4 of \d+ chunks done/);
    expect(readFileSync(path.join(b, 'records.jsonl'), 'utf8')).toBe(
      readFileSync(path.join(a, 'records.jsonl'), 'utf8'),
    );
    expect(readFileSync(path.join(b, 'summary.json'), 'utf8')).toBe(readFileSync(path.join(a, 'summary.json'), 'utf8'));
  }, 180_000);

  it('a killed --limit job rerun over other items of the same file is refused, not resumed with a mix of both samples',
    async () => {
      const out = path.join(tmp, 'other-items');
      const n = GOLD.items.length - 1;
      let calls = 0;
      const { openLoglikEngine } = await import('../../src/runtime/loglik.js');
      const failing = async (m: string, o: any) => {
        const e = await openLoglikEngine(m, o);
        return { ...e, info: e.info, usesCache: e.usesCache, stats: e.stats, close: () => e.close(),
          score: (r: any, d: any) => (++calls === 3 ? Promise.reject(new Error('killed')) : e.score(r, d)) };
      };
      // a copy of the items, so that the rerun reads the same spec (the same file path)
      const file = spec.slice('jsonl:'.length, spec.indexOf('?'));
      const copy = path.join(tmp, 'limit-items.jsonl');
      const rows = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      writeFileSync(copy, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const data = spec.replace(file, copy);
      await expect(
        runAblate({ run, region: 'A', data, out, random: 1, chunkUnits: 1, limit: n, quiet: true,
          deps: { openLoglik: failing as any } }),
      ).rejects.toThrow('killed');
      const job = JSON.parse(readFileSync(path.join(out, 'job.json'), 'utf8'));
      // the same file, spec, number of items and --limit; other items (every id renamed)
      writeFileSync(copy, rows.map((r) => JSON.stringify({ ...r, id: `${r.id}-renamed` })).join('\n') + '\n');
      const err = await runAblate({ run, region: 'A', data, out, random: 1, chunkUnits: 1, limit: n, quiet: true })
        .then(() => null, (e) => e);
      expect(err?.message).toMatch(/made with other settings, data, run or model \(data differs\)/);
      expect(String(err.message)).not.toContain('\n');
      expect(existsSync(path.join(out, 'summary.json'))).toBe(false);
      expect(JSON.parse(readFileSync(path.join(out, 'job.json'), 'utf8'))).toEqual(job);
    }, 180_000);

  it('a complete folder is kept; other settings are refused; --force replaces it', async () => {
    const out = path.join(tmp, 'again');
    await runAblate({ run, region: 'A', data: spec, out, random: 2, quiet: true });
    const before = readFileSync(path.join(out, 'summary.json'), 'utf8');
    const logs: string[] = [];
    await runAblate({ run, region: 'A', data: spec, out, random: 2, log: (l) => logs.push(l) });
    expect(logs.join('\n')).toMatch(/already complete/);
    await expect(runAblate({ run, region: 'A', data: spec, out, random: 3, quiet: true })).rejects.toThrow(
      /made with other settings/,
    );
    expect(readFileSync(path.join(out, 'summary.json'), 'utf8')).toBe(before);
    const s = await runAblate({ run, region: 'B', data: spec, out, random: 3, quiet: true, force: true });
    expect(s.regions.map((r) => r.name)).toEqual(['B']);
    expect(JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')).random).toBe(3);
  }, 120_000);

  const refused = async (o: Partial<Parameters<typeof runAblate>[0]>, re: RegExp) => {
    const out = path.join(tmp, `bad-${Math.random().toString(36).slice(2)}`);
    const err = await runAblate({ run, region: 'A', data: spec, out, random: 2, quiet: true, ...o }).then(() => null,
      (e) => e);
    expect(err).not.toBeNull();
    expect(err.message).toMatch(re);
    expect(String(err.message)).not.toContain('\n');
    expect(existsSync(o.out ?? out)).toBe(false);
  };

  it('refuses a region that does not exist, with the nearest name', async () => {
    await refused({ region: 'a' }, /region "a" is not a group .*groups by group: A, B, C/);
    const err = await runAblate({ run, region: 'Bb', data: spec, out: path.join(tmp, 'x'), quiet: true }).catch((e) =>
      e
    );
    expect(err.hint).toMatch(/did you mean B\?/);
    await refused({ region: 'A', minus: 'D' }, /minus "D" is not a group/);
  });

  it('refuses an empty region (C∖A: every block of C is in A)', async () => {
    await refused({ region: 'C', minus: 'A' }, /region C∖A is empty/);
    await refused({ region: 'A', minus: 'A' }, /the same group/);
  });

  it('refuses a run without wanda results', async () => {
    const bare = path.join(tmp, 'bare');
    cpSync(run, bare, { recursive: true });
    rmSync(path.join(bare, 'wanda'), { recursive: true });
    await refused({ run: bare }, /the run has no wanda results \(regions\.json is missing\)/);
  });

  it("refuses a model that is not the run's model", async () => {
    await refused({ model: ensureGeneratedModel('tiny-llama-fp16') }, /\bmodel is not the run's model/);
  });

  it('refuses continuations longer than the model context', async () => {
    const short = path.join(tmp, 'short-model');
    cpSync(model, short, { recursive: true });
    const cf = path.join(short, 'config.json');
    writeFileSync(cf, JSON.stringify({ ...JSON.parse(readFileSync(cf, 'utf8')), max_position_embeddings: 12 }));
    const r2 = writeAblateRun(path.join(tmp, 'run-short'), short, GOLD.regions, GOLD.block);
    await refused({ run: r2 }, /texts are longer than the model's context of 12 tokens/);
  });

  it('refuses a folder it did not write, and data without context and continuation', async () => {
    const other = path.join(tmp, 'other');
    writeFileSync(path.join(tmp, 'keep.txt'), 'x');
    cpSync(path.join(tmp, 'keep.txt'), path.join(other, 'keep.txt'), { recursive: true });
    const err = await runAblate({ run, region: 'A', data: spec, out: other, quiet: true }).catch((e) => e);
    expect(err.message).toMatch(/not a lobes ablation/);
    expect(readdirSync(other)).toEqual(['keep.txt']);
    await refused({ data: spec.replace('context=context&', '') }, /needs context=FIELD&continuation=FIELD/);
  });

  it('runs from the command line: the table, --json, and a usage error with exit 2', async () => {
    const c = capture();
    try {
      const out = path.join(tmp, 'cli');
      const code = await main(['ablate', run, '--region', 'A', '--minus', 'others', '--data', spec, '--out', out,
        '--random', '2', '--quiet']);
      if (code !== 0) throw new Error(c.err());
      expect(c.out()).toMatch(/A∖others \(\d+ blocks\):\n {2}A +n= +3 /);
      expect(c.out()).toMatch(/specificity A∖others for A: .* p=\d\.\d{3}, Holm/);
      expect(
        await main(['ablate', run, '--region', 'A', '--data', spec, '--out', path.join(tmp, 'cli2'), '--random', '2',
          '--json']),
      ).toBe(0);
      const j = JSON.parse(c.out().slice(c.out().indexOf('{')));
      expect(j.kind).toBe('ablate');
      expect(await main(['ablate', run, '--data', spec, '--out', path.join(tmp, 'cli3')])).toBe(2);
      expect(c.err()).toMatch(/--region is required/);
      expect(existsSync(path.join(tmp, 'cli3'))).toBe(false);
    } finally {
      vi.restoreAllMocks();
    }
  }, 120_000);
});
