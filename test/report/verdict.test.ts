/**
 * The report's first lines and the run comparison, on planted data whose truth is known:
 * labels that a majority-class guess gets right 90% of the time with no signal in the features,
 * and labels planted as separable clusters.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { Rng } from '../../src/util/rng.js';
import { runIdentity } from '../../src/store/provenance.js';
import { OUTPUT_MARKER, hashFolderFiles } from '../../src/util/output.js';
import { encodeNpy } from '../../src/cluster/npy.js';
import { runCluster } from '../../src/cluster/run.js';
import { classScores } from '../../src/cluster/scores.js';
import { percentileSorted } from '../../src/cluster/scores.js';
import { verdictLines } from '../../src/report/verdict.js';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { loadRun } from '../../src/report/load.js';
import { runPayload } from '../../src/report/payload.js';
import { reportHtml } from '../../src/report/index.js';
import { bootstrapDiff, compareRuns, itemSeries, seriesValue } from '../../src/report/compare.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-verdict-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const FAST = { tsne: { perplexity: 15, iterations: 250 },
  metrics: { bootstrap: 300, permutations: 99, probePermutations: 39 }, execution: { quiet: true, threads: 1 } };

/** A run folder (manifest and samples) whose cluster/ comes from a matrix with the given labels. */
async function runWith(name: string, X: Float32Array, d: number, labels: string[], control = false): Promise<string> {
  const n = labels.length;
  const dir = path.join(tmp, name);
  writeSyntheticRun(dir, { groups: ['x'], samplesPerGroup: 1, wanda: false, cluster: false });
  if (control) {
    const mf = path.join(dir, 'manifest.json');
    const m = JSON.parse(readFileSync(mf, 'utf8'));
    m.model.control = { kind: 'random', seed: 0, source: 'trained-model', sourceGraphSha256: '0'.repeat(64),
      scheme: 'test' };
    writeFileSync(mf, JSON.stringify(m));
  }
  const npy = path.join(tmp, `${name}.npy`);
  writeFileSync(npy, encodeNpy(X, [n, d]));
  const lab = path.join(tmp, `${name}.txt`);
  writeFileSync(lab, labels.join('\n') + '\n');
  await runCluster(npy, { ...FAST, input: { labels: lab }, output: { dir: path.join(dir, 'cluster') } });
  adoptMatrixRows(dir);
  return dir;
}

/**
 * Make the run's samples the matrix's rows (ids and labels as lobes cluster wrote them) and
 * record the run's provenance in cluster/settings.json, as lobes cluster on a run does, so the
 * report shows these results as the run's.
 */
function adoptMatrixRows(dir: string): void {
  const coords = JSON.parse(readFileSync(path.join(dir, 'cluster', 'coords.json'), 'utf8')) as { ids: string[];
    labels: string[] };
  const mf = path.join(dir, 'manifest.json');
  const m = JSON.parse(readFileSync(mf, 'utf8'));
  const rows = coords.ids.map((id, i) => ({ index: i, id, labels: { aspect: coords.labels[i] }, tokens: 10,
    truncated: false })
  );
  const table = rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  m.samplesSha256 = createHash('sha256').update(table).digest('hex');
  m.counts.samples = rows.length;
  m.dataset.count = rows.length;
  delete m.identity;
  m.identity = runIdentity(m);
  writeFileSync(mf, JSON.stringify(m));
  writeFileSync(path.join(dir, 'samples.jsonl'), table);
  const sf = path.join(dir, 'cluster', 'settings.json');
  const settings = JSON.parse(readFileSync(sf, 'utf8'));
  settings.provenance = { run: m.identity, runDir: path.resolve(dir), samplesSha256: m.samplesSha256, rows: rows.length,
    chunks: {} };
  writeFileSync(sf, JSON.stringify(settings));
  // The lineage lobes cluster RUN records: the run and its samples as inputs, the files as written now.
  const cdir = path.join(dir, 'cluster');
  const marker = JSON.parse(readFileSync(path.join(cdir, OUTPUT_MARKER), 'utf8'));
  marker.inputs = [{ name: 'run', sha256: m.identity, from: path.resolve(dir) }, { name: 'samples.jsonl',
    sha256: m.samplesSha256 }];
  marker.outputs = hashFolderFiles(cdir);
  writeFileSync(path.join(cdir, OUTPUT_MARKER), JSON.stringify(marker));
}

/** 270 "common" and 30 "rare" items; features: noise, plus `signal` times a class offset. */
function data(seed: number, signal: number, d = 8): { X: Float32Array; labels: string[]; n: number; d: number } {
  const rng = new Rng(seed);
  const n = 300;
  const labels = Array.from({ length: n }, (_, i) => (i % 10 === 0 ? 'rare' : 'common'));
  const X = new Float32Array(n * d);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < d; j++) X[i * d + j] = rng.normal() + (labels[i] === 'rare' && j < 2 ? signal : 0);
  return { X, labels, n, d };
}

describe('the first lines of the report', () => {
  it('a majority-class guess with high accuracy and no balanced-accuracy gain is not called separated', async () => {
    const { X, labels, d } = data(1, 0);
    const dir = await runWith('majority', X, d, labels);
    const model = await loadRun(dir);
    const cm = model.cluster!.metrics!;
    expect(cm.chance).toMatchObject({ majorityRate: 0.9, majorityClass: 'common', balancedAccuracy: 0.5 });
    const knn = cm.spaces.find((s) => s.space === 'original-cosine')!.knn!;
    expect(knn.accuracy.value).toBeGreaterThan(0.85); // high accuracy ...
    expect(Math.abs(knn.balancedAccuracy.value - 0.5)).toBeLessThan(0.05); // ... at chance
    const lines = runPayload(model).summary;
    expect(lines[0]).toBe(
      '2 classes of the labels in majority.txt on 300 items: chance balanced accuracy is 0.50; always answering "common" gets accuracy 0.90.',
    );
    expect(lines.some((l) => l.startsWith('Not separated:'))).toBe(true);
    expect(lines.some((l) => /^Separated/.test(l))).toBe(false);
    expect(lines.find((l) => l.startsWith('kNN (k = 10, cosine)'))).toMatch(
      /not above chance; accuracy 0\.\d\d is no better than the majority-class guess \(0\.90\)/,
    );
    // and the page shows them first
    const html = reportHtml(model);
    expect(html).toContain('Not separated:');
  }, 120_000);

  it('planted separable classes are called separated, with the gain over the null', async () => {
    const { X, labels, d } = data(2, 4);
    const dir = await runWith('separable', X, d, labels);
    const lines = verdictLines((await loadRun(dir)).cluster!.metrics, null);
    const probe = lines.find((l) => l.startsWith('Linear probe'))!;
    expect(probe).toMatch(
      /balanced accuracy (0\.9\d|1\.00) \[\d\.\d\d, \d\.\d\d\] vs chance 0\.50 \(null 0\.\d\d \[0\.\d\d, 0\.\d\d\], p = 0\.03 \(the floor 1\/\(R\+1\) of 39 permutations\), z = \d+\.\d, normal approx\. p (< 1e-16|= \de-\d+), Holm 0\.03 over 3 classifiers\): above chance by 0\.\d\d/,
    );
    expect(lines.some((l) => l.startsWith('Separated beyond chance by 3 of 3 classifiers'))).toBe(true);
  }, 120_000);
});

describe('comparing a run with its random-weights control', () => {
  it(
    'gives B − A in the order given, with paired bootstrap CIs over the shared items, and says which sign favours the trained model',
    async () => {
      const t = data(3, 3);
      const c = data(4, 0);
      const trained = await runWith('trained', t.X, t.d, t.labels);
      const control = await runWith('control', c.X, c.d, c.labels, true);
      const cmp = compareRuns(await loadRun(trained), await loadRun(control));
      expect(cmp.diffLabel).toBe('B − A');
      expect(cmp.order).toBe(
        'A is trained, B is control. Every difference is B − A. B is a random-weights control, so a negative difference means the trained model A is ahead.',
      );
      expect(cmp.summary![0]).toBe(cmp.order);
      const pick = (x: typeof cmp) =>
        x.rows.find((r) => r.section === 'separation (original-euclidean)' && r.metric === 'probe balanced accuracy')!;
      const row = pick(cmp);
      expect(row.diff).toBeCloseTo(row.b! - row.a!, 12);
      expect(row.diff!).toBeLessThan(-0.3);
      expect(row.note).toBe('paired bootstrap over 300 items');
      expect(row.ci![1]).toBeLessThan(0);
      expect(row.ci![0]).toBeLessThan(row.diff!);
      expect(row.ci![1]).toBeGreaterThan(row.diff!);
      expect(row.ahead).toBe('A (CI excludes 0)');
      expect(cmp.summary!.find((l) => l.startsWith('Linear probe'))).toMatch(
        /balanced accuracy A 0\.\d\d, B 0\.\d\d; B − A: -0\.\d\d \[-0\.\d\d, -0\.\d\d\] \(paired bootstrap over 300 items; the CI excludes 0\)/,
      );
      // beside the difference, each run's own verdict from its recorded Verdict objects
      expect(cmp.summary!.find((l) => l.startsWith('Linear probe, each run against its own null'))).toMatch(
        /^Linear probe, each run against its own null: A above chance \(p = 0\.03 \(the floor 1\/\(R\+1\) of 39 permutations\), z = [\d.]+, .*Holm 0\.03 over 3 classifiers\); B not above chance \(p = 0\.\d+, z = -?\d\.\d, normal approx\. p = 0\.\d+, Holm [01]\.\d+ over 3 classifiers\)\.$/,
      );
      // the other order: the same difference with the other sign, never flipped back to trained − control
      const rev = compareRuns(await loadRun(control), await loadRun(trained));
      expect(rev.order).toBe(
        'A is control, B is trained. Every difference is B − A. A is a random-weights control, so a positive difference means the trained model B is ahead.',
      );
      const rr = pick(rev);
      expect(rr.diff).toBeCloseTo(-row.diff!, 12);
      expect(rr.ci![0]).toBeCloseTo(-row.ci![1], 12);
      expect(rr.ci![1]).toBeCloseTo(-row.ci![0], 12);
      expect(rr.ahead).toBe('B (CI excludes 0)');
    },
    180_000,
  );

  it('the paired CI is the percentile bootstrap of the difference written from its definition', () => {
    const rng = new Rng(9);
    const n = 150;
    const ids = Array.from({ length: n }, (_, i) => `i${i}`);
    const y = Int32Array.from({ length: n }, () => rng.int(3));
    const p1 = Int32Array.from(y, (v) => (rng.next() < 0.7 ? v : rng.int(3)));
    const p2 = Int32Array.from(y, (v) => (rng.next() < 0.4 ? v : rng.int(3)));
    // run 2 lists the same items in another order
    const perm = Array.from({ length: n }, (_, i) => (i * 7) % n);
    const s1 = { ids, y, C: 3, pred: p1 };
    const s2 = { ids: perm.map((i) => ids[i]), y: Int32Array.from(perm, (i) => y[i]), C: 3,
      pred: Int32Array.from(perm, (i) => p2[i]) };
    const B = 400;
    const r = bootstrapDiff(s1, s2, 'balancedAccuracy', B, 11)!;
    expect(r.kind).toBe('paired');
    const g = new Rng(11);
    const diffs: number[] = [];
    for (let b = 0; b < B; b++) {
      const idx = Array.from({ length: n }, () => g.int(n));
      const yy = Int32Array.from(idx, (i) => y[i]);
      diffs.push(
        classScores(yy, Int32Array.from(idx, (i) => p2[i]), 3).balancedAccuracy -
          classScores(yy, Int32Array.from(idx, (i) => p1[i]), 3).balancedAccuracy,
      );
    }
    diffs.sort((a, b) => a - b);
    expect(r.ci[0]).toBeCloseTo(percentileSorted(diffs, 2.5), 12);
    expect(r.ci[1]).toBeCloseTo(percentileSorted(diffs, 97.5), 12);
    // other items: independent resampling, a wider interval for these correlated predictions
    const s3 = { ...s2, ids: s2.ids.map((id) => id + '-other') };
    const ind = bootstrapDiff(s1, s3, 'balancedAccuracy', B, 11)!;
    expect(ind.kind).toBe('independent');
    expect(ind.ci[1] - ind.ci[0]).toBeGreaterThan(r.ci[1] - r.ci[0]);
  });
});

describe('compare from every CV repeat', () => {
  it('one repeat that differs: the interval resamples repeats with the items and contains its own point estimate', () => {
    const rng = new Rng(21);
    const n = 200;
    const ids = Array.from({ length: n }, (_, i) => `i${i}`);
    const y = Int32Array.from({ length: n }, () => rng.int(3));
    const shared = Int32Array.from(y, (v) => (rng.next() < 0.6 ? v : rng.int(3)));
    // repeats 0-3 of both runs predict the same; repeat 4 of A is nearly perfect
    const sharp = Int32Array.from(y, (v) => (rng.next() < 0.97 ? v : rng.int(3)));
    const A = { ids, y, C: 3, pred: shared, preds: [shared, shared, shared, shared, sharp] };
    const Bs = { ids, y, C: 3, pred: shared, preds: [shared, shared, shared, shared, shared] };
    const stat = (p: Int32Array, rows?: number[]) => {
      const yy = rows ? Int32Array.from(rows, (i) => y[i]!) : y;
      return classScores(yy, rows ? Int32Array.from(rows, (i) => p[i]!) : p, 3).balancedAccuracy;
    };
    const point = seriesValue(Bs, 'balancedAccuracy') - seriesValue(A, 'balancedAccuracy');
    expect(point).toBeCloseTo((stat(shared) - stat(sharp)) / 5, 12);
    const B = 500;
    const r = bootstrapDiff(A, Bs, 'balancedAccuracy', B, 5)!;
    expect(r.ci[0]).toBeLessThan(point);
    expect(r.ci[1]).toBeGreaterThanOrEqual(point);
    // from the definition: each resample draws one repeat for both runs, then the items
    const g = new Rng(5);
    const diffs: number[] = [];
    for (let b = 0; b < B; b++) {
      const q = g.int(5);
      const idx = Array.from({ length: n }, () => g.int(n));
      diffs.push(stat(Bs.preds[q]!, idx) - stat(A.preds[q]!, idx));
    }
    diffs.sort((a, b) => a - b);
    expect(r.ci[0]).toBeCloseTo(percentileSorted(diffs, 2.5), 12);
    expect(r.ci[1]).toBeCloseTo(percentileSorted(diffs, 97.5), 12);
    // the first repeat alone (what items.json used to keep) gives [0, 0], which leaves the point estimate out
    const first = bootstrapDiff({ ids, y, C: 3, pred: shared }, { ids, y, C: 3, pred: shared }, 'balancedAccuracy', B,
      5)!;
    expect(first.ci).toEqual([0, 0]);
    expect(point).toBeLessThan(-0.05);
  });

  it('items.json keeps every repeat, and itemSeries reads them', () => {
    const items = { ids: ['a', 'b'], classes: ['x', 'y'], y: [0, 1],
      spaces: [{ space: 'original-euclidean', knn: [0, 1], probe: [0, 0], probeRepeats: [[0, 0], [0, 1]],
        silhouette: [0, 0] }], baselines: [] };
    const s = itemSeries(items, { space: 'original-euclidean', of: 'probe' }) as { preds: Int32Array[] };
    expect(s.preds.map((p) => Array.from(p))).toEqual([[0, 0], [0, 1]]);
  });
});

describe('the token-baseline line', () => {
  const clf = (bal: number, p: number) => ({
    accuracy: { value: 0.4, ci95: [0.38, 0.42], p, nullMean: 0.35, nullBand: [0.33, 0.37] },
    balancedAccuracy: { value: bal, ci95: [bal - 0.02, bal + 0.02], p, nullMean: 0.2, nullBand: [0.19, 0.21] },
    macroF1: { value: bal, ci95: [bal - 0.02, bal + 0.02], p, nullMean: 0.16, nullBand: [0.14, 0.18] },
    recall: [],
    confusion: [],
  });
  const metrics = (probe: number, probeP: number, tokens: number, tokensP = 0.02) =>
    ({
      classes: ['a', 'b', 'c', 'd', 'e'],
      n: 500,
      dim: 16,
      chance: { balancedAccuracy: 0.2, majorityRate: 0.38, majorityClass: 'a', counts: [190, 80, 80, 80, 70] },
      spaces: [{ space: 'original-euclidean', silhouette: null, daviesBouldin: null, knn: null,
        probe: clf(probe, probeP), probeDims: 16, perClass: [] }],
      baselines: [{ name: 'token-counts', description: '', dim: 100, probeDims: 16, probe: clf(tokens, tokensP) }],
    }) as unknown as Parameters<typeof verdictLines>[0];

  it('a representation at its null while the tokens separate: says the tokens do and the representation does not', () => {
    const lines = verdictLines(metrics(0.2, 0.7, 0.34), null);
    expect(lines.some((l) => /^Not separated/.test(l))).toBe(true);
    expect(
      lines.find((l) =>
        /token-counts 0\.34 balanced accuracy\) where the representation's probe does not \(0\.20\)/.test(l)
      ),
    ).toBeDefined();
    expect(lines.some((l) => /need not come from what the model computes/.test(l))).toBe(false);
  });

  it('a separated representation below the tokens: the separation need not come from the model', () => {
    const lines = verdictLines(metrics(0.3, 0.02, 0.34), null);
    expect(lines.some((l) => /^Separated beyond chance by 1 of 1/.test(l))).toBe(true);
    expect(
      lines.some((l) =>
        /token-counts 0\.34 vs the representation's probe 0\.30 balanced accuracy, so the separation need not come from what the model computes/
          .test(l)
      ),
    ).toBe(true);
  });

  it('the classifiers are one family: raw p = 0.04 twice is not separated after Holm (0.08)', () => {
    const lines = verdictLines(metrics(0.3, 0.04, 0.25, 0.04), null);
    expect(lines.find((l) => l.startsWith('Linear probe'))).toMatch(
      /p = 0\.04, Holm 0\.08 over 2 classifiers\): not above chance/,
    );
    expect(lines.some((l) => /^Not separated: .*Holm-adjusted p ≤ 0\.05/.test(l))).toBe(true);
    // One classifier alone at 0.04 passes.
    const one = metrics(0.3, 0.04, 0.25, 0.04) as any;
    one.baselines = [];
    expect(verdictLines(one, null).some((l) => /^Separated beyond chance by 1 of 1/.test(l))).toBe(true);
  });

  it('a p at the permutation floor says so', () => {
    const lines = verdictLines(metrics(0.3, 1 / 200, 0.25, 0.5), { permutations: 199 } as any);
    expect(lines.find((l) => l.startsWith('Linear probe'))).toContain(
      'p = 0.005 (the floor 1/(R+1) of 199 permutations)',
    );
  });

  it('a family whose permutations are too few says "not testable at R = …", never "not above chance" or "Not separated"', () => {
    // the SmolLM2 demo as it was: the probe and the token baseline at the floor of 50 permutations, with kNN at 200
    const m = metrics(0.43, 1 / 51, 0.3, 1 / 51) as any;
    m.spaces.push({ space: 'original-cosine', silhouette: null, daviesBouldin: null, knn: clf(0.25, 0.3),
      perClass: [] });
    m.spaces.push({ space: 'embedding', silhouette: null, daviesBouldin: null, knn: clf(0.24, 0.4), perClass: [] });
    m.baselines.push({ ...m.baselines[0], name: 'token-embedding-mean', probe: clf(0.28, 1 / 51) });
    const lines = verdictLines(m,
      { permutations: 200, probePermutations: 50,
        sizing: { probePermutations: { R: 50, family: 5, needed: 99, sizing: 'user' } } } as any);
    const probe = lines.find((l) => l.startsWith('Linear probe'))!;
    expect(probe).toContain('p = 0.02 (the floor 1/(R+1) of 50 permutations)');
    expect(probe).toContain(
      ': not testable at R = 50: its smallest attainable Holm-adjusted p is 0.059 > 0.05 over 5 tests (99 permutations would reach it)',
    );
    expect(
      lines.some((l) =>
        /^Not testable at R = 50: Linear probe on the representation cannot reach a Holm-adjusted p ≤ 0\.05 over 5 classifiers with so few permutations \(99 would\)/
          .test(l)
      ),
    ).toBe(true);
    expect(lines.some((l) => /^Not separated/.test(l))).toBe(false);
    expect(lines.filter((l) => /not above chance/.test(l) && /R = 50|1\/\(R\+1\) of 50/.test(l))).toEqual([]);
  });

  it('the token line and the token row read one verdict: raw p = 0.04 that fails Holm is not "the tokens alone separate"', () => {
    const lines = verdictLines(metrics(0.2, 0.7, 0.34, 0.04), null);
    const row = lines.find((l) => l.startsWith('Tokens alone, token-counts probe'))!;
    expect(row).toMatch(/Holm 0\.08 over 2 classifiers\): not above chance/);
    expect(lines.some((l) => /The tokens alone separate/.test(l))).toBe(false);
    expect(lines).toContain(
      "The tokens alone score at least as high (token-counts 0.34 vs the representation's probe 0.20 balanced accuracy), and are themselves not above chance.",
    );
  });

  it('a representation above the tokens: the margin over the best baseline', () => {
    const lines = verdictLines(metrics(0.45, 0.02, 0.34), null);
    expect(lines.some((l) => /beats the best token baseline \(token-counts\) by 0\.11 balanced accuracy/.test(l))).toBe(
      true,
    );
  });
});

describe('families in the first lines', () => {
  const layer = (p: number) => ({ point: 'p', probeAccuracy: 0.5, ci95: null,
    balancedAccuracy: { value: 0.55, ci95: null, p, nullMean: 0.5, nullBand: null } });
  const base = { classes: ['a', 'b'], n: 100, dim: 4, spaces: [],
    chance: { balancedAccuracy: 0.5, majorityRate: 0.5, majorityClass: 'a', counts: [50, 50] } };

  it('a 30-layer sweep with 20 permutations: 2 layers at the floor are what chance gives, none passes Holm', async () => {
    const { sweepLines } = await import('../../src/report/verdict.js');
    const sweep = Array.from({ length: 30 }, (_, i) => layer(i < 2 ? 1 / 21 : 0.5));
    const [line] = sweepLines({ ...base, sweep } as any, { sweepPermutations: 20 } as any);
    expect(line).toContain('beats its permutation null in 0 of 30 layers after Holm across the layers (2 before)');
    expect(line).toContain(
      'the smallest p is 0.048, so no layer can pass Holm across 30 layers; the 2 layers at p ≤ 0.05 are about what chance gives (1.50 expected)',
    );
  });

  it('a 30-layer sweep with 20 permutations where every layer sits at the floor: far more than chance, no layer named', async () => {
    const { sweepLines } = await import('../../src/report/verdict.js');
    const sweep = Array.from({ length: 30 }, () => layer(1 / 21));
    const [line] = sweepLines({ ...base, sweep } as any, { sweepPermutations: 20 } as any);
    expect(line).toContain('(30 before)');
    expect(line).toContain(
      'the 30 layers at p ≤ 0.05 are far more than chance gives (1.50 expected), so the layers together beat chance though no single layer can be named',
    );
    // 4 of 30 at p ≤ 0.05: P(X ≥ 4) = 0.061 for Binomial(30, 0.05) (scipy.stats.binom.sf(3, 30, 0.05)), still about chance
    const four = Array.from({ length: 30 }, (_, i) => layer(i < 4 ? 1 / 21 : 0.5));
    expect(sweepLines({ ...base, sweep: four } as any, { sweepPermutations: 20 } as any)[0]).toContain(
      'the 4 layers at p ≤ 0.05 are about what chance gives',
    );
    const five = Array.from({ length: 30 }, (_, i) => layer(i < 5 ? 1 / 21 : 0.5));
    expect(sweepLines({ ...base, sweep: five } as any, { sweepPermutations: 20 } as any)[0]).toContain(
      'the 5 layers at p ≤ 0.05 are far more than chance gives',
    );
  });

  it('with enough permutations strong layers pass', async () => {
    const { sweepLines } = await import('../../src/report/verdict.js');
    const sweep = [layer(0.001), layer(0.001), layer(0.6)];
    const [line] = sweepLines({ ...base, sweep } as any, { sweepPermutations: 999 } as any);
    expect(line).toBe(
      "Layer sweep: the probe's balanced accuracy beats its permutation null in 2 of 3 layers after Holm across the layers (2 before).",
    );
  });

  it('the regions line counts after Holm within each family', async () => {
    const { wandaLines } = await import('../../src/report/verdict.js');
    const nt = (pLower: number) => ({ value: 0.1, p: 1, percentile: 0, nullMean: 0.3, pLower, z: -1 });
    const pl = (p: number, ratio: number) => ({ size: 5, randomDensity: 0.1, densityRatio: ratio,
      density: { value: 0.3, p, percentile: 100, nullMean: 0.1, z: 2 },
      components: { value: 1, p: 1, percentile: 0, nullMean: 3 } });
    const m = {
      groups: [],
      permutations: 199,
      pairs: [
        { jaccard: nt(0.005), placementAminusB: pl(0.005, 3), placementBminusA: pl(0.2, 1) },
        { jaccard: nt(0.03), placementAminusB: pl(0.005, 5), placementBminusA: pl(0.005, 2) },
        { jaccard: nt(0.5), placementAminusB: pl(0.5, 1), placementBminusA: pl(0.5, 0.5) },
      ],
      channels: [{ p: 0.005, z: 3, nullMean: 0 }, { p: 0.3, z: 0.5, nullMean: 0 }],
    } as any;
    // Holm: Jaccard 3 · 0.005 = 0.015, then 2 · 0.03 = 0.06; densities 6 · 0.005 … 4 · 0.005 = 0.02; channels 2 · 0.005
    expect(wandaLines(m, 'aspect')).toEqual([
      'Neuron regions by "aspect": 1 of 3 pairs overlap less than under shuffled labels after Holm (2 before; Jaccard, 199 permutations, floor p = 0.005); 3 of 6 set differences are denser than random blocks of their size after Holm (3 before; median density 2.00× a random set\'s); the groups\' activation RMS differs beyond shuffled labels in 1 of 2 capture points after Holm (1 before).',
    ]);
  });
});
