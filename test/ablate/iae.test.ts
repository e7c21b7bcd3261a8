/**
 * `lobes ablate --task iae` on a planted model: the weight files are real (tiny-llama, so blocks
 * are really zeroed on disk) and the log-likelihood engine is a stand-in that reads the edited
 * weights back. Two planted blocks decide which multiple-choice items are answered right: P_A
 * (in region A) and P_B (in region B). With neither zeroed, item i is right unless i % 6 = 5;
 * zeroing P_A flips the even items of group A, zeroing P_B flips the items of group B with
 * i % 3 = 1. Random regions may hit a planted block too; ablation.json says which blocks every
 * pass zeroed, and the test derives every expected figure from that alone, computing each
 * statistic itself (exact binomials with BigInt coefficients, Holm, the random-region p).
 *
 * The engine also makes acc and acc_mutual_info disagree: by log-likelihood the option "decoy"
 * always wins (acc 0%, below chance, so --metric acc is refused), while without the question
 * "decoy" is very likely, so acc_mutual_info picks the planted answer.
 */
import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { storedMatrices } from '../../src/ablate/patch.js';
import { main } from '../../src/cli/main.js';
import { ablatePayload, loadAblate, parseAblateSummary } from '../../src/report/ablate.js';
import { fakeEvalDeps, oneHot, slotOf } from '../eval/fakes.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import type { AblateSummary } from '../../src/ablate/store.js';
import { CHAR_TOKENIZER, fakeLoglikEngine, tinyMatrices, writeAblateRun } from './fixture.js';

const BLOCK: [number, number] = [16, 16];
const UP = 'layers.0.mlp.up_proj';
// up_proj is [256, 64] in 16 × 4 blocks: flat b is rows [16·⌊b/4⌋, +16), cols [16·(b mod 4), +16).
const PA = 21;
const PB = 2;
const REGIONS = {
  A: { [UP]: [PA], 'layers.1.mlp.gate_proj': [3], 'layers.1.mlp.down_proj': [40] },
  B: { [UP]: [PB], 'layers.1.mlp.gate_proj': [7], 'layers.1.mlp.down_proj': [41] },
  C: { [UP]: [60], 'layers.1.mlp.gate_proj': [9], 'layers.1.mlp.down_proj': [1] },
};
const N = 36;
const group = (i: number) => 'ABC'[i % 3]!;
const OPTIONS = ['right', 'decoy', 'other', 'none'];
/** The planted rule: is item i answered right with these planted blocks zeroed? */
function plantedRight(i: number, zA: boolean, zB: boolean): boolean {
  let r = i % 5 !== 4;
  if (zA && group(i) === 'A' && (i % 2 === 0 || i % 5 === 4)) r = !r;
  if (zB && group(i) === 'B' && i % 3 === 1) r = !r;
  return r;
}

const tokenizer = CHAR_TOKENIZER;

/** Whether block b of up_proj is all zeros in the folder's weights (MatMul [d_in, d_out] layout). */
function zeroed(dir: string): { zA: boolean; zB: boolean } {
  const sm = storedMatrices(dir, tinyMatrices(BLOCK)).find((s) => s.ref.name === UP)!;
  const s = sm.ref.source as { data: { file: string; offset: number; byteLength: number } };
  const buf = readFileSync(s.data.file);
  const f = new Float32Array(
    buf.buffer.slice(buf.byteOffset + s.data.offset, buf.byteOffset + s.data.offset + s.data.byteLength),
  );
  const dOut = sm.ref.dOut;
  const all0 = (b: number) => {
    const r0 = 16 * Math.floor(b / 4);
    const c0 = 16 * (b % 4);
    for (let c = c0; c < c0 + 16; c++) for (let r = r0; r < r0 + 16; r++) if (f[c * dOut + r] !== 0) return false;
    return true;
  };
  return { zA: all0(PA), zB: all0(PB) };
}

async function plantedEngine(dir: string): Promise<LoglikEngine> {
  const { zA, zB } = zeroed(dir);
  const text = (ids: number[]) => String.fromCharCode(...ids);
  return fakeLoglikEngine((r) => {
    if (r.context.length === 1 && r.context[0] === 1) {
      // Without the question: "decoy" is very likely, the rest equally so.
      return r.continuations.map((c) => (text(c).trim() === 'decoy' ? -1 : -6));
    }
    const i = Number(/item (\d+)/.exec(text(r.context))![1]);
    const right = plantedRight(i, zA, zB);
    return r.continuations.map((c) => {
      const o = text(c).trim();
      return o === 'decoy' ? -0.5 : o === 'right' ? (right ? -1 : -20) : o === 'other' ? -2 : -9;
    });
  });
}

/** C(n, k) exactly. */
function choose(n: number, k: number): bigint {
  let c = 1n;
  for (let j = 1; j <= k; j++) c = (c * BigInt(n - k + j)) / BigInt(j);
  return c;
}
/** P(X ≥ k), X ~ Binomial(n, num/den), exactly as a ratio of big integers. */
function binomUpper(k: number, n: number, num: number, den: number): number {
  let s = 0n;
  for (let j = k; j <= n; j++) s += choose(n, j) * BigInt(num) ** BigInt(j) * BigInt(den - num) ** BigInt(n - j);
  return Number((s * 10n ** 18n) / BigInt(den) ** BigInt(n)) / 1e18;
}
/** Exact two-sided McNemar: 2 · P(X ≤ min) for X ~ Binomial(lost + gained, 1/2), at most 1. */
function mcnemar(lost: number, gained: number): number {
  const n = lost + gained;
  if (n === 0) return 1;
  let s = 0n;
  for (let j = 0; j <= Math.min(lost, gained); j++) s += choose(n, j);
  return Math.min(1, Number((2n * s * 10n ** 18n) / 2n ** BigInt(n)) / 1e18);
}
function holmOf(ps: number[]): number[] {
  const idx = ps.map((_, i) => i).sort((a, b) => ps[a]! - ps[b]! || a - b);
  const out = ps.map(() => 0);
  let run = 0;
  idx.forEach((i, r) => {
    run = Math.max(run, Math.min(1, (ps.length - r) * ps[i]!));
    out[i] = run;
  });
  return out;
}

function writeItems(dir: string): string {
  const f = path.join(dir, 'items.jsonl');
  const rows = Array.from({ length: N }, (_, i) => {
    // The right option sits at slot i mod 4.
    const opts = OPTIONS.slice(1);
    opts.splice(i % 4, 0, 'right');
    return { id: `q${i}`, group: group(i), question: `item ${i} of group ${group(i)}?`, options: opts, answer: i % 4 };
  });
  writeFileSync(f, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return `jsonl:${f}?question=question&options=options&answer=answer&label=group&id=id`;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('lobes ablate --task iae on a planted model', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-iae-'));
  const run = writeAblateRun(path.join(tmp, 'run'), ensureGeneratedModel('tiny-llama'), REGIONS, BLOCK);
  const data = writeItems(tmp);
  const deps = { openLoglik: (m: string) => plantedEngine(m), loadTokenizer: async () => tokenizer };
  const K = 10;

  it('reports, per region × label, the figures the planted flips give', async () => {
    const out = path.join(tmp, 'mi');
    const s: AblateSummary = await runAblate({ run, region: 'all', data, out, random: K, task: 'iae', scoring: 'cloze',
      metric: 'acc_mutual_info', chunkUnits: 8, quiet: true, deps });
    const abl = JSON.parse(readFileSync(path.join(out, 'ablation.json'), 'utf8'));
    const hits = (blocks: { tensor: string; rows: number[]; cols: number[] }[], b: number) =>
      blocks.some((x) =>
        x.tensor === `model.${UP}.weight` && x.rows[0] === 16 * Math.floor(b / 4) && x.cols[0] === 16 * (b % 4)
      );
    // Every pass's correctness, from the blocks it zeroed.
    const right = (blocks: any[] | null): number[] =>
      Array.from({ length: N },
        (_, i) => (plantedRight(i, !!blocks && hits(blocks, PA), !!blocks && hits(blocks, PB)) ? 1 : 0));
    const before = right(null);
    const after: Record<string, number[]> = Object.fromEntries(abl.regions.map((r: any) => [r.key, right(r.blocks)]));
    const random: Record<string, number[]> = Object.fromEntries(abl.random.map((r: any) => [r.id, right(r.blocks)]));
    expect(after.A).not.toEqual(before);
    expect(after.B).not.toEqual(before);
    expect(after.C).toEqual(before);

    // records.jsonl: each item's correctness in every pass, paired by id.
    const recs = readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(recs).toHaveLength(N);
    recs.forEach((r, i) => {
      expect(r.id).toBe(`q${i}`);
      expect(r.before).toBe(before[i] === 1);
      for (const k of ['A', 'B', 'C']) expect(r.after[k], `${r.id} ${k}`).toBe(after[k]![i] === 1);
      for (const [id, v] of Object.entries(random)) expect(r.random[id]).toBe(v[i] === 1);
    });

    // The test against chance before ablating: k = 4 for every item, so a binomial with p = 1/4.
    const c0 = before.reduce((a, b) => a + b, 0);
    expect(s.iae!.chance.correct).toBe(c0);
    expect(s.iae!.chance.n).toBe(N);
    expect(s.iae!.chance.chance).toBeCloseTo(0.25, 12);
    expect(s.iae!.chance.p).toBeCloseTo(binomUpper(c0, N, 1, 4), 12);
    expect(s.unit).toBe('accuracy');
    expect(s.pFloor).toBeCloseTo(1 / (K + 1), 12);

    const labels = ['A', 'B', 'C'];
    const of = (l: string) => before.map((_, i) => i).filter((i) => group(i) === l);
    const nullIds = abl.regions[0].random as string[];
    expect(nullIds).toHaveLength(K);
    const change = (v: number[], idx: number[]) => mean(idx.map((i) => v[i]! - before[i]!));
    for (const l of labels) {
      const idx = of(l);
      const ps: number[] = [];
      for (const r of ['A', 'B', 'C']) {
        const c = s.iae!.cells.find((x) => x.region === r && x.label === l)!;
        const a = after[r]!;
        const lost = idx.filter((i) => before[i] === 1 && a[i] === 0).length;
        const gained = idx.filter((i) => before[i] === 0 && a[i] === 1).length;
        const d = change(a, idx);
        const nulls = nullIds.map((id) => change(random[id]!, idx));
        const p = (1 + nulls.filter((x) => x <= d).length) / (K + 1);
        ps.push(p);
        expect(c.n).toBe(idx.length);
        expect(c.accuracyBefore).toBeCloseTo(mean(idx.map((i) => before[i]!)), 12);
        expect(c.accuracyAfter).toBeCloseTo(mean(idx.map((i) => a[i]!)), 12);
        expect(c.change).toBeCloseTo(d, 12);
        expect([c.lost, c.gained], `${r} × ${l}`).toEqual([lost, gained]);
        expect(c.pMcNemar).toBeCloseTo(mcnemar(lost, gained), 12);
        expect(c.nullChange).toHaveLength(K);
        nulls.forEach((x, k) => expect(c.nullChange[k]).toBeCloseTo(x, 12));
        expect(c.p, `${r} × ${l}`).toBeCloseTo(p, 12);
        // Paired CI: it holds the change; with no item changing it is exactly [0, 0].
        expect(c.ci[0]).toBeLessThanOrEqual(d + 1e-12);
        expect(c.ci[1]).toBeGreaterThanOrEqual(d - 1e-12);
        if (lost + gained === 0) expect(c.ci).toEqual([0, 0]);
        else expect(c.ci[1] - c.ci[0]).toBeGreaterThan(0);
      }
      const adj = holmOf(ps);
      ['A', 'B', 'C'].forEach((r, k) =>
        expect(s.iae!.cells.find((x) => x.region === r && x.label === l)!.pHolm).toBeCloseTo(adj[k]!, 12)
      );
    }
    // The planted cell A × A has losses and gains, in different numbers.
    const cA = s.iae!.cells.find((x) => x.region === 'A' && x.label === 'A')!;
    expect(cA.lost).toBeGreaterThan(0);
    expect(cA.gained).toBeGreaterThan(0);
    expect(cA.lost).not.toBe(cA.gained);
    // Specificity: the own label's change minus the other items' (pooled), against the random regions; Holm over regions.
    const sps: number[] = [];
    for (const r of ['A', 'B', 'C']) {
      const sp = s.specificity.find((x) => x.region === r)!;
      const own = of(r);
      const others = before.map((_, i) => i).filter((i) => group(i) !== r);
      const contrast = (v: number[]) => change(v, own) - change(v, others);
      const x = contrast(after[r]!);
      const nulls = nullIds.map((id) => contrast(random[id]!));
      const p = (1 + nulls.filter((v) => v <= x).length) / (K + 1);
      sps.push(p);
      expect(sp.contrast).toBeCloseTo(x, 12);
      expect(sp.p).toBeCloseTo(p, 12);
    }
    const adj = holmOf(sps);
    ['A', 'B', 'C'].forEach((r, k) =>
      expect(s.specificity.find((x) => x.region === r)!.pHolm).toBeCloseTo(adj[k]!, 12)
    );
    // The top-level cells are the same accuracy changes.
    for (const c of s.iae!.cells)
      expect(s.cells.find((x) => x.region === c.region && x.label === c.label)!.delta).toBeCloseTo(c.change, 12);
  }, 120_000);

  it('the report reads the iae section into its accuracy table, and refuses a broken one naming the field', () => {
    const out = path.join(tmp, 'mi');
    const d = loadAblate(out);
    const a = ablatePayload(d);
    expect(a.unit).toBe('accuracy');
    expect(a.iae!.metric).toBe('acc_mutual_info');
    expect(a.iae!.rows).toHaveLength(9);
    for (const c of d.summary.iae!.cells) {
      const r = a.iae!.rows.find((x) => x.region === c.region && x.label === c.label)!;
      expect([r.before, r.after, r.change, r.lost, r.gained, r.pMcNemar, r.p, r.pHolm]).toEqual([c.accuracyBefore,
        c.accuracyAfter, c.change, c.lost, c.gained, c.pMcNemar, c.p, c.pHolm]);
      expect(r.atFloor).toBe(c.p <= 1 / (K + 1) + 1e-12);
    }
    const j = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8'));
    j.iae.cells[2].lost = -1;
    expect(() => parseAblateSummary(j, 'summary.json')).toThrow(
      /summary\.json.*iae\.cells\[2\]\.lost.*expected an integer ≥ 0, got -1/,
    );
  });

  it("with letter scoring, votes eval's letter picks over 3 option orders per item, on the patched model of each pass",
    async () => {
      let z = { zA: false, zB: false };
      const fake = fakeEvalDeps((p) => {
        const i = Number(/item (\d+)/.exec(p.text)![1]);
        return oneHot(p.k, slotOf(p.text, plantedRight(i, z.zA, z.zB) ? 'right' : 'decoy', '. ', p.k));
      });
      const seen: string[] = [];
      const out = path.join(tmp, 'letter');
      const s = await runAblate({
        run,
        region: 'A',
        data,
        out,
        random: 2,
        task: 'iae',
        quiet: true,
        deps: { ...fake, openScorer: async (dir, o) => ((z = zeroed(dir)), seen.push(dir), fake.openScorer!(dir, o)) },
      });
      expect(s.iae!.scoring).toBe('letter');
      expect(s.iae!.shuffles).toBe(3);
      const abl = JSON.parse(readFileSync(path.join(out, 'ablation.json'), 'utf8'));
      const hitsA = abl.regions[0].blocks.some((x: any) =>
        x.tensor === `model.${UP}.weight` && x.rows[0] === 80 && x.cols[0] === 16
      );
      expect(hitsA).toBe(true);
      const recs = readFileSync(path.join(out, 'records.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      recs.forEach((r, i) => {
        expect(r.before).toBe(plantedRight(i, false, false));
        expect(r.after.A).toBe(plantedRight(i, true, false));
      });
      // The pass before ablating runs on the model folder itself, every other on the patched copy.
      expect(seen[0]).toBe(ensureGeneratedModel('tiny-llama'));
      expect(seen.slice(1).every((d) => d.endsWith('.lobes-ablate-model'))).toBe(true);
    }, 60_000);

  it('refuses, writing nothing, when the model is at or below chance before ablating (acc: "decoy" always wins)',
    async () => {
      const out = path.join(tmp, 'acc');
      await expect(
        runAblate({ run, region: 'all', data, out, random: 2, task: 'iae', scoring: 'cloze', metric: 'acc', quiet: true,
          deps }),
      ).rejects.toThrow(
        /not above chance before ablating \(cloze scoring, acc: 0\/36 = 0\.0% correct, chance 25\.0%, exact one-sided p = 1\.00/,
      );
      expect(existsSync(out)).toBe(false);
    }, 60_000);

  it('keeps task, scoring and metric in the job identity: a resume with others is refused', async () => {
    const out = path.join(tmp, 'mi');
    await expect(
      runAblate({ run, region: 'all', data, out, random: K, task: 'iae', scoring: 'cloze', metric: 'acc_norm',
        chunkUnits: 8, quiet: true, deps }),
    ).rejects.toThrow(/made with other settings/);
    await expect(
      runAblate({ run, region: 'all',
        data: data.replace('question=question&options=options&answer=answer&',
          'context=question&continuation=question&'), out, random: K, chunkUnits: 8, quiet: true, deps }),
    ).rejects.toThrow(/made with other settings|not a lobes ablation/);
    // The same command finds it complete.
    const s = await runAblate({ run, region: 'all', data, out, random: K, task: 'iae', scoring: 'cloze',
      metric: 'acc_mutual_info', chunkUnits: 8, quiet: true, deps });
    expect(s.iae!.metric).toBe('acc_mutual_info');
  }, 60_000);

  it('refuses bad combinations of --task, --scoring and --metric in one line with exit 2', async () => {
    const err: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    (process.stderr as any).write = (x: string) => (err.push(String(x)), true);
    try {
      expect(
        await main(['ablate', run, '--region', 'A', '--data', data, '--out', path.join(tmp, 'bad1'), '--task', 'iae',
          '--metric', 'acc_norm']),
      ).toBe(2);
      expect(
        await main(['ablate', run, '--region', 'A', '--data', data, '--out', path.join(tmp, 'bad2'), '--scoring',
          'cloze']),
      ).toBe(2);
    } finally {
      (process.stderr as any).write = write;
    }
    expect(err.join('')).toMatch(/--metric acc_norm applies to --scoring cloze/);
    expect(err.join('')).toMatch(/--scoring and --metric apply to --task iae/);
  });
});
