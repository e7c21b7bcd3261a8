/**
 * The swap analysis on planted data: swapped samples whose question names one aspect and whose
 * response another, words that carry both aspects equally (each item's text has its question's
 * aspect word and its response's aspect word, each half the time), and states built to follow
 * one of the two aspects. The analysis must say which one drives the state, and the opposite
 * when the other is planted. Then the command end to end on a real extraction of a swap
 * composition (generated world trees through the generated tiny model).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { swapAnalysis, type SwapInput, type SwapResult } from '../../src/swap/swap.js';
import { ciSide, runSwap } from '../../src/swap/run.js';
import { runExtract } from '../../src/extract/run.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { Rng } from '../../src/util/rng.js';
import { ABILITIES } from '../../src/data/bessi.js';

const K = 5;
const ASPECTS = ['A', 'B', 'C', 'D', 'E'];

/**
 * n swapped samples (question aspect ≠ response aspect, as the composition pairs them), words
 * carrying each aspect half the time, and three layers: noise, a weak and a strong copy of the
 * planted aspect (one-hot times the strength, plus unit Gaussian noise), at the last token and
 * (another noise draw) as the mean.
 */
function planted(follow: 'question' | 'response', n = 300, seed = 1): SwapInput {
  const rng = new Rng(seed);
  const q: number[] = [];
  const r: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = i % K;
    let b = rng.int(K - 1);
    if (b >= a) b++;
    r.push(a);
    q.push(b);
  }
  // words: 2K columns (a question-aspect word, a response-aspect word) plus 10 filler words
  const V = 2 * K + 10;
  const W = new Float64Array(n * V);
  for (let i = 0; i < n; i++) {
    if (rng.next() < 0.5) W[i * V + q[i]] = 1;
    if (rng.next() < 0.5) W[i * V + K + r[i]] = 1;
    W[i * V + 2 * K + rng.int(10)] += 1;
  }
  const d = 12;
  const state = (strength: number) => {
    const X = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < d; j++) X[i * d + j] = rng.normal();
      X[i * d + (follow === 'question' ? q[i] : r[i])] += strength;
    }
    return X;
  };
  const points: SwapInput['points'] = [];
  for (const pool of ['last', 'mean'] as const) {
    [0, 1.2, 3].forEach((s, layer) => {
      const X = state(s);
      points.push({ name: `layers.${layer}.resid_out${pool === 'mean' ? '.mean' : ''}`, layer, pool, dim: d,
        read: async () => X });
    });
    const X = state(3);
    points.push({ name: pool === 'mean' ? 'final.mean' : 'final.hidden', layer: null, pool, dim: d,
      read: async () => X });
  }
  return {
    question: q.map((c) => ASPECTS[c]),
    response: r.map((c) => ASPECTS[c]),
    points,
    words: [{ name: 'token-counts', description: 'planted words', X: W, dim: V }],
    notes: [],
  };
}

const OPTS = { bootstrap: 400, permutations: 5, probeRepeats: 2, quiet: true } as const;

describe('swap analysis on planted states', () => {
  const results = new Map<string, SwapResult>();
  const get = async (follow: 'question' | 'response') => {
    if (!results.has(follow)) results.set(follow, await swapAnalysis(planted(follow), OPTS));
    return results.get(follow)!;
  };

  for (const follow of ['question', 'response'] as const) {
    const other = follow === 'question' ? 'response' : 'question';
    it(`recovers that the state follows the ${follow}'s aspect`, async () => {
      const r = await get(follow);
      expect(r.n).toBe(300);
      expect(r.classes).toEqual(ASPECTS);
      // the words carry both aspects alike: their question − response difference spans 0
      expect(ciSide(r.words[0].questionMinusResponse.balancedAccuracy)).toBe('spans');
      for (const p of r.points) {
        const d = p.questionMinusResponse.balancedAccuracy;
        if (p.layer === 0) {
          // the noise layer: neither label is read
          expect(ciSide(d), p.point).toBe('spans');
          continue;
        }
        // the planted label is read far above chance
        expect(p[follow].probe.balancedAccuracy.value, p.point).toBeGreaterThan(0.45);
        expect(p[follow].probe.balancedAccuracy.p, p.point).toBeLessThan(0.2);
        // 5 permutations over a family of 16 conditional tests: none can pass Holm, and each says so
        for (const label of ['question', 'response'] as const) {
          const v = p[label].conditional.balancedAccuracy.verdict!;
          expect(v.status, p.point).toBe('not-testable');
          expect(v.R).toBe(5);
          expect(v.reason).toMatch(/over 16 tests \(319 permutations would reach it\)/);
        }
        expect(ciSide(d), p.point).toBe(follow === 'question' ? 'above' : 'below');
        // the state adds the planted aspect to the words, not the other
        expect(ciSide(p[follow].incremental!.balancedAccuracy), p.point).toBe('above');
        expect(ciSide(p[other].incremental!.balancedAccuracy), p.point).not.toBe('above');
        // and the strong layers beat the words alone on the planted aspect
        if (p.layer === 2 || p.layer === null)
          expect(ciSide(p[follow].minusWords['token-counts'].balancedAccuracy), p.point).toBe('above');
      }
    });
  }

  it('reads the two labels of a swapped sample on the same resampled items (the difference is not a difference of marginals)', async () => {
    const r = await get('question');
    const p = r.points.find((x) => x.point === 'final.hidden')!;
    const marg = p.question.probe.balancedAccuracy.value - p.response.probe.balancedAccuracy.value;
    expect(p.questionMinusResponse.balancedAccuracy.value).toBeCloseTo(marg, 10);
    const [lo, hi] = p.questionMinusResponse.balancedAccuracy.ci95!;
    expect(lo).toBeLessThan(marg);
    expect(hi).toBeGreaterThan(marg);
  });

  it('gives the floor one label sets for the other (crossChance) and the chance levels', async () => {
    const r = await get('question');
    // every response aspect excludes one question aspect: the best guess is right about 1/(K − 1) of the time
    expect(r.crossChance.questionFromResponse.balancedAccuracy).toBeGreaterThan(1 / K);
    expect(r.crossChance.questionFromResponse.balancedAccuracy).toBeLessThan(0.4);
    expect(r.chance.question.balancedAccuracy).toBeCloseTo(1 / K, 12);
  });
});

describe('lobes swap on an extracted swap composition', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lobes-swaprun-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('extracts, records the composition in the manifest, and writes swap.json and swap.csv', async () => {
    const trees = path.join(dir, 'trees');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(trees);
    const picks = ['Teamwork Skill', 'Leadership Skill', 'Stress Regulation', 'Creative Skill', 'Task Management'];
    const plot = [];
    for (let k = 0; k < 60; k++) {
      const ability = picks[k % 5];
      plot.push({ cid: k,
        choices: [{ cid: 1, type: 'skill choice', skill: [ability],
          content: { role: 'Ann', content: `Answer ${k} about ${ability.toLowerCase()}.` },
          confusion: [{ type: 'skill question', question: [`How does Ann show ${ability.toLowerCase()}?`] }] }] });
    }
    writeFileSync(path.join(trees, '[1,0]_en_example_0.json'),
      JSON.stringify({ scenario: 's', interactive_plot: plot }));
    expect(ABILITIES.filter((a) => picks.includes(a.name))).toHaveLength(5);
    const model = ensureGeneratedModel('tiny-llama');
    const run = path.join(dir, 'run');
    await runExtract({ model, data: `socialeval:${trees}?swap=3`, out: run, capture: ['final', 'resid', 'mean'],
      quiet: true, dtype: 'fp32' });
    const manifest = JSON.parse(readFileSync(path.join(run, 'manifest.json'), 'utf8'));
    expect(manifest.dataset.composition).toMatchObject({ kind: 'swap', seed: 3, responses: 60 });
    expect(manifest.dataset.spec).toContain('swap=3');
    expect(manifest.dataset.axes).toContain('question_aspect');
    const { result, outDir } = await runSwap(run, { points: ['final.hidden', 'final.mean', 'layers.1.resid_out.mean'],
      bootstrap: 50, permutations: 2, probeRepeats: 1, probeC: 1, threads: 1, quiet: true });
    expect(outDir).toBe(path.join(run, 'swap'));
    expect(result.n).toBe(60);
    // in the order of the residual stream: the layers, then the final state
    expect(result.points.map((p) => [p.point, p.pool])).toEqual([['layers.1.resid_out.mean', 'mean'], ['final.hidden',
      'last'], ['final.mean', 'mean']]);
    expect(result.words.map((w) => w.name)).toEqual(['token-counts', 'token-embedding-mean']);
    const csv = readFileSync(path.join(outDir!, 'swap.csv'), 'utf8');
    expect(csv.split('\n')[0]).toBe(
      'point,pool,layer,label,quantity,value,ci_low,ci_high,p,null_mean,null_low,null_high,p_holm,z,permutations,verdict',
    );
    expect(csv).toMatch(/^final\.mean,mean,,question-response,difference:balanced_accuracy,/m);
    const settings = JSON.parse(readFileSync(path.join(outDir!, 'settings.json'), 'utf8'));
    expect(settings.provenance.run).toBe(manifest.identity);
    // the random-weights control of the same model on the same samples: the same tests, side by side
    const { analyseModel } = await import('../../src/runtime/engine.js');
    const { randomControlModel } = await import('../../src/runtime/control.js');
    const ctlModel = await randomControlModel(model, analyseModel(model).info.arch, { seed: 1,
      cacheDir: path.join(dir, 'cache'), quiet: true });
    const ctl = path.join(dir, 'ctl');
    await runExtract({ model: ctlModel.dir, control: ctlModel.info, data: `socialeval:${trees}?swap=3`, out: ctl,
      capture: ['final', 'resid', 'mean'], quiet: true, dtype: 'fp32' });
    const swapOpts = { points: ['final.hidden', 'layers.1.resid_out.mean'], bootstrap: 20, permutations: 3,
      probeRepeats: 1, probeC: 1, threads: 1, quiet: true };
    const withCtl = await runSwap(run, { ...swapOpts, control: ctl, out: path.join(dir, 'swap-ctl') });
    const ctr = withCtl.result.control!;
    expect(ctr.run).toBe(path.resolve(ctl));
    expect(ctr.seed).toBe(1);
    expect(ctr.points.map((p) => p.point)).toEqual(['layers.1.resid_out.mean', 'final.hidden']);
    expect(ctr.families[0]!.members).toEqual(['layers.1.resid_out.mean:question', 'layers.1.resid_out.mean:response',
      'final.hidden:question', 'final.hidden:response']);
    // other states than the trained run's, the same labels
    expect(ctr.points[1]!.question.probe.balancedAccuracy.value).not.toBe(
      withCtl.result.points[1]!.question.probe.balancedAccuracy.value,
    );
    expect(ctr.points[1]!.response.conditional.exchangeable).toEqual(
      withCtl.result.points[1]!.response.conditional.exchangeable,
    );
    const { summaryLines } = await import('../../src/swap/run.js');
    expect(summaryLines(withCtl.result).filter((l) => l.includes('random-weights control:'))).toHaveLength(4);
    expect(readFileSync(path.join(dir, 'swap-ctl', 'swap.csv'), 'utf8')).toMatch(
      /^control:final\.hidden,last,,response,conditional:balanced_accuracy,/m,
    );
    // the control's manifest, samples table and chunk index are inputs of the output's lineage: a change to one makes it stale
    const { recordedInputs, staleInput } = await import('../../src/store/lineage.js');
    const { openRun } = await import('../../src/store/index.js');
    const inputs = recordedInputs(path.join(dir, 'swap-ctl'))!;
    expect(inputs.filter((i) => i.name.startsWith('file:control/')).map((i) => [i.name, i.from])).toEqual(
      ['manifest.json', 'samples.jsonl', 'index.json'].map((
        f,
      ) => [`file:control/${f}`, path.resolve(ctl, f === 'index.json' ? 'activations/index.json' : f)]),
    );
    const ctx = { runDir: run, manifest: (await openRun(run)).manifest };
    expect(staleInput(inputs, ctx)).toBeNull();
    const ctlManifest = path.join(ctl, 'manifest.json');
    const before = readFileSync(ctlManifest);
    writeFileSync(ctlManifest, before.toString() + '\n');
    expect(staleInput(inputs, ctx)).toMatch(/ctl\/manifest\.json has changed since/);
    writeFileSync(ctlManifest, before);
    // cancelled through its signal: E_ABORTED before its analysis, and nothing written
    const aborted = new AbortController();
    aborted.abort();
    const abortedOut = path.join(dir, 'swap-aborted');
    await expect(runSwap(run, { ...swapOpts, control: ctl, out: abortedOut, signal: aborted.signal })).rejects
      .toMatchObject({ code: 'E_ABORTED',
        message: expect.stringMatching(/^lobes swap was cancelled before its analysis/) });
    expect(existsSync(abortedOut)).toBe(false);
    // a control that is not one, or of other samples, is refused in one line
    await expect(runSwap(run, { ...swapOpts, control: run, noWrite: true })).rejects.toThrow(
      /control: not a random-weights control run/,
    );
    const ctl4 = path.join(dir, 'ctl4');
    await runExtract({ model: ctlModel.dir, control: ctlModel.info, data: `socialeval:${trees}?swap=4`, out: ctl4,
      capture: ['final', 'resid', 'mean'], quiet: true, dtype: 'fp32' });
    await expect(runSwap(run, { ...swapOpts, control: ctl4, noWrite: true })).rejects.toThrow(
      /control: another question\/response pairing/,
    );
    await expect(runSwap(ctl, { ...swapOpts, control: ctl, noWrite: true })).rejects.toThrow(
      /the run is itself a random-weights control/,
    );
    // cluster on a mean-pooled point compares pooled with pooled and sweeps the mean-pooled stream
    const { runCluster } = await import('../../src/cluster/run.js');
    const c = await runCluster(run, { input: { point: 'final.mean', by: 'response_aspect' },
      probe: { sweep: true, repeats: 1, c: 1 }, metrics: { permutations: 2, bootstrap: 20 },
      tsne: { iterations: 50, perplexity: 5 }, execution: { threads: 1, quiet: true }, output: { noWrite: true } });
    expect(c.metrics.sweep!.map((w) => w.point)).toEqual(['layers.0.resid_out.mean', 'layers.1.resid_out.mean']);
    expect(c.metrics.comparisons!.filter((x) => x.kind === 'model-vs-words').map((x) => x.a)).toEqual(['final.mean',
      'final.mean']);
    // a run that is not a swap composition is refused in one line
    const plain = path.join(dir, 'plain');
    await runExtract({ model, data: `socialeval:${trees}`, out: plain, capture: ['final'], quiet: true,
      dtype: 'fp32' });
    await expect(runSwap(plain, { quiet: true, threads: 1 })).rejects.toThrow(/no question_aspect label/);
  });
});
