/**
 * The length control of `lobes cluster`: a probe on the item's token count (as extract fed it)
 * and its log, outside the verdict's family, with its incremental comparison (length +
 * representation) − length in the representation-vs-words family. Planted ground truth: labels
 * that differ only in length, and labels independent of length.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureModelFromSpec, type GeneratedModelSpec } from '../../src/models/write.js';
import { runExtract } from '../../src/extract/run.js';
import { runCluster } from '../../src/cluster/run.js';
import { LENGTH_CONTROL, lengthFeatures, lengthSentence } from '../../src/cluster/baseline.js';
import { openRun } from '../../src/store/index.js';
import type { ClusterMetrics } from '../../src/cluster/types.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-length-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SPEC: GeneratedModelSpec = {
  model: { layers: 1, hidden: 64, intermediate: 128, heads: 4, kvHeads: 2, vocab: 512, seed: 91 },
  write: { externalData: true },
};
const WORDS = 'we walked along the river and talked about the weather before the rain came down on the town'.split(' ');
const CLUSTER = { input: { by: 'group' }, tsne: { perplexity: 5, iterations: 250 },
  metrics: { bootstrap: 200, permutations: 39, probePermutations: 39 }, execution: { quiet: true, threads: 1 } };

/** 60 items: each a run of `words(i)` consecutive words of WORDS from a rotating start, labelled `label(i)`. */
function data(name: string, words: (i: number) => number, label: (i: number) => string): string {
  const lines: string[] = [];
  for (let i = 0; i < 60; i++) {
    const o = i % 5;
    lines.push(
      JSON.stringify({ id: `item-${i}`, text: WORDS.slice(o, o + words(i)).join(' '), labels: { group: label(i) } }),
    );
  }
  const file = path.join(tmp, `${name}.jsonl`);
  writeFileSync(file, lines.join('\n') + '\n');
  return `jsonl:${file}`;
}

it('length features are the token count and its log of the sample’s own rows, in sample order; a row without a count is a note', () => {
  const samples = [{ id: 'a', tokens: 3 }, { id: 'b', tokens: 7 }, { id: 'c', tokens: 20 }] as any;
  const f = lengthFeatures({ samples }, Int32Array.from([2, 0]));
  if ('note' in f) throw new Error(f.note);
  expect(f.name).toBe(LENGTH_CONTROL);
  expect(f.dim).toBe(2);
  expect(Array.from(f.X)).toEqual([20, Math.log(20), 3, Math.log(3)]);
  const bad = lengthFeatures({ samples: [{ id: 'a', tokens: 3 }, { id: 'b' }] as any }, Int32Array.from([0, 1]));
  expect('note' in bad && bad.note).toMatch(/^no length control: samples row 2 \(id b\) has no token count/);
});

/** The metrics without what the length control adds: its entries, the representation-vs-words adjustments it joins, and the timings. */
function withoutLength(m: ClusterMetrics): unknown {
  const c = structuredClone(m) as any;
  delete c.controls;
  delete c.timings;
  delete c.cpuTimings;
  // a note on the length probe's choice of C is an entry it adds too
  c.notes = (c.notes ?? []).filter((n: string) => !n.startsWith(`the ${LENGTH_CONTROL} probe`));
  c.incremental = (c.incremental ?? []).filter((x: any) => x.words !== LENGTH_CONTROL);
  c.comparisons = (c.comparisons ?? []).filter((x: any) => x.b !== LENGTH_CONTROL);
  for (const x of c.comparisons)
    for (const s of ['accuracy', 'balancedAccuracy', 'macroF1']) {
      delete x[s].pHolm;
      delete x[s].pBH;
    }
  c.families = (c.families ?? []).filter((f: any) => f.family !== 'representation-vs-words');
  return c;
}

describe('the length control of a run', () => {
  const model = ensureModelFromSpec('baseline-length', SPEC);

  it(
    'labels that differ only in length: length alone separates them, and the representation adds nothing to it; the other numbers do not move',
    async () => {
      // short items 3–5 words, long ones 9–11: the words are the same, their number differs
      const run = path.join(tmp, 'run-length');
      await runExtract({ model,
        data: data('length', (i) => (i % 2 ? 9 : 3) + (i % 3), (i) => (i % 2 ? 'long' : 'short')), out: run,
        capture: ['final'], quiet: true, dtype: 'fp32' });
      const r = await runCluster(run, { ...CLUSTER, output: { dir: path.join(tmp, 'c-length') } });
      const m = r.metrics;
      const len = m.controls!.find((b) => b.name === LENGTH_CONTROL)!;
      expect(len.dim).toBe(2);
      // the features are the samples table's counts: the description names their range
      const reader = await openRun(run);
      const tokens = reader.samples.map((s) => s.tokens);
      expect(len.description).toContain(`(${Math.min(...tokens)}–${Math.max(...tokens)})`);
      expect(len.probe.balancedAccuracy.value).toBeGreaterThan(0.95);
      expect(len.probe.balancedAccuracy.p).toBeLessThanOrEqual(0.05);
      expect(lengthSentence(len, m.chance!.balancedAccuracy)).toMatch(
        /^length alone separates the labels: balanced accuracy 1\.000|^length alone separates the labels: balanced accuracy 0\.9/,
      );
      // (length + state) − length: nothing left to add
      const inc = m.comparisons!.find((c) => c.kind === 'incremental' && c.b === LENGTH_CONTROL)!;
      expect(inc.a).toBe(`${LENGTH_CONTROL} + final.hidden`);
      expect(inc.balancedAccuracy.ci95![0]).toBeLessThanOrEqual(0);
      expect(inc.balancedAccuracy.p === null || inc.balancedAccuracy.p > 0.05).toBe(true);
      // it is a member of the representation-vs-words family, not of the verdict's classifiers
      const fam = (name: string) => m.families!.find((f) => f.family === name)!.members;
      expect(fam('representation-vs-words')).toContain(`${LENGTH_CONTROL} + final.hidden − ${LENGTH_CONTROL}`);
      expect(fam('classifiers').some((x) => x.includes(LENGTH_CONTROL))).toBe(false);
      expect(inc.balancedAccuracy.pHolm).toBeGreaterThanOrEqual(inc.balancedAccuracy.p!);
      expect(r.settings.controls).toEqual([LENGTH_CONTROL]);
      expect(r.items!.controls![0]!.probe).toHaveLength(m.metricSample!);

      // without the control every other number is the same (the families it is absent from included)
      const bare = await runCluster(run, { ...CLUSTER, baselines: { lengthControl: false },
        output: { noWrite: true } });
      expect(bare.metrics.controls).toBeUndefined();
      expect(withoutLength(m)).toEqual(withoutLength(bare.metrics));
      expect(bare.metrics.families!.find((f) => f.family === 'classifiers')).toEqual(
        m.families!.find((f) => f.family === 'classifiers'),
      );
    },
    120_000,
  );

  it('labels independent of length: the length probe sits at chance', async () => {
    // every length 3–8 occurs equally often under each label
    const run = path.join(tmp, 'run-flat');
    await runExtract({ model, data: data('flat', (i) => 3 + (i % 6), (i) => (Math.floor(i / 6) % 2 ? 'b' : 'a')),
      out: run, capture: ['final'], quiet: true, dtype: 'fp32' });
    // through the CLI: the summary prints the control, its sentence and its incremental comparison
    const out = path.join(tmp, 'c-flat');
    const lines: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((t: string) => (lines.push(String(t)), true)) as typeof process.stdout.write;
    let code: number;
    try {
      const { main } = await import('../../src/cli/main.js');
      code = await main(['cluster', run, '--by', 'group', '--perplexity', '5', '--iterations', '250', '--bootstrap',
        '200', '--permutations', '39', '--probe-permutations', '39', '--threads', '1', '--quiet', '--out', out]);
    } finally {
      process.stdout.write = write;
    }
    expect(code).toBe(0);
    const m = JSON.parse(readFileSync(path.join(out, 'metrics.json'), 'utf8')) as ClusterMetrics;
    const len = m.controls!.find((b) => b.name === LENGTH_CONTROL)!;
    expect(len.probe.balancedAccuracy.p).toBeGreaterThan(0.05);
    expect(Math.abs(len.probe.balancedAccuracy.value - m.chance!.balancedAccuracy)).toBeLessThan(0.2);
    const sentence = lengthSentence(len, m.chance!.balancedAccuracy);
    expect(sentence).toMatch(
      /^length alone does not separate the labels: balanced accuracy [0-9.]+ \[[0-9.]+, [0-9.]+\] vs chance 0\.500, p=/,
    );
    const text = lines.join('');
    expect(text).toContain(`  ${sentence}\n`);
    expect(text).toMatch(/control \(length\) probe balanced [0-9.]+/);
    expect(text).toMatch(/length \+ final\.hidden − length: balanced accuracy [+-][0-9.]+ \[/);
    expect(readFileSync(path.join(out, 'metrics.csv'), 'utf8')).toMatch(/^control:length,probe_balanced_accuracy,/m);
  }, 120_000);
});
