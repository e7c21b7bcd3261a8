import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync, existsSync, readFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { blobs } from './blobs.js';
import { encodeNpy } from '../../src/cluster/npy.js';
import { writeSafetensors } from '../../src/formats/safetensors.js';
import { runCluster, type ClusterOptions } from '../../src/cluster/index.js';
import { main } from '../../src/cli/main.js';
import type { RunReader, HookInfo, SampleRow } from '../../src/store/types.js';
import type { ClusterMetrics, ClusterCoords, ClusterSettings } from '../../src/cluster/types.js';

const FAST = { metrics: { bootstrap: 100, permutations: 19, probePermutations: 5 },
  execution: { quiet: true, threads: 1 } };

/** blobs() as float32 with string labels. */
function blobs32(n: number, d: number, C: number, sep: number, seed: number) {
  const { X, lab } = blobs(n, d, C, sep, seed);
  return { X: Float32Array.from(X), labels: Array.from(lab, (c) => `class-${c}`) };
}

function tmp(): string {
  return mkdtempSync(path.join(tmpdir(), 'lobes-cluster-'));
}

function writeMatrix(dir: string, X: Float32Array, n: number, d: number,
  labels: string[]): { npy: string; lab: string }
{
  const npy = path.join(dir, 'emb.npy');
  writeFileSync(npy, encodeNpy(X, [n, d]));
  const lab = path.join(dir, 'labels.txt');
  writeFileSync(lab, labels.join('\n') + '\n');
  return { npy, lab };
}

/** An in-memory RunReader with final.hidden and layers.{i}.resid_out (signal grows with depth). */
function fakeRun(dir: string, n: number, d: number, layers: number): RunReader {
  const hooks = new Map<string, Float32Array>();
  const labels: string[] = [];
  const rng = new Rng(9);
  const cen = new Float64Array(3 * d).map(() => rng.normal());
  for (let i = 0; i < n; i++) labels.push(['x', 'y', 'z'][i % 3]);
  const make = (sep: number) => {
    const X = new Float32Array(n * d);
    for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) X[i * d + j] = cen[(i % 3) * d + j] * sep + rng.normal();
    return X;
  };
  for (let l = 0; l < layers; l++) hooks.set(`layers.${l}.resid_out`, make(l * 0.8));
  hooks.set('final.hidden', make(3));
  const samples: SampleRow[] = labels.map((a, i) => ({ index: i, id: `item-${i}`, labels: { aspect: a }, tokens: 5,
    truncated: false, text: `text ${i}` })
  );
  const info = (name: string): HookInfo => {
    if (!hooks.has(name)) throw new Error(`unknown hook ${name}`);
    return { name, dim: d, dtype: 'F32' };
  };
  return {
    dir,
    manifest: {} as any,
    samples,
    hooks: () => [...hooks.keys()].map(info),
    hook: info,
    labelAxes: () => ['aspect'],
    labels: (axis: string) => {
      if (axis !== 'aspect') throw new Error(`unknown axis ${axis}`);
      return labels.slice();
    },
    select: () => new Int32Array(0),
    read: async (name: string, rows?: ArrayLike<number>) => {
      const X = hooks.get(name)!;
      if (!rows) return X.slice();
      const out = new Float32Array(rows.length * d);
      for (let r = 0; r < rows.length; r++) out.set(X.subarray(rows[r] * d, rows[r] * d + d), r * d);
      return out;
    },
    iterate: async function*() {},
    analysisDir: (name: string) => {
      const p = path.join(dir, name);
      mkdirSync(p, { recursive: true });
      return p;
    },
  };
}

describe('runCluster on a matrix file', () => {
  it('writes settings, coords and metrics; the same seed reproduces exactly', async () => {
    const dir = tmp();
    const n = 240;
    const d = 64;
    const { X, labels } = blobs32(n, d, 4, 1.5, 1);
    const { npy, lab } = writeMatrix(dir, X, n, d, labels);
    const a = await runCluster(npy, { ...FAST, seed: 7, input: { labels: lab },
      tsne: { iterations: 300, pca: 20, perplexity: 20 } });
    expect(a.outDir).toBe(path.join(dir, 'emb.cluster'));
    for (const f of ['settings.json', 'coords.json', 'coords.csv', 'metrics.json', 'metrics.csv'])
      expect(existsSync(path.join(a.outDir!, f))).toBe(true);
    const settings: ClusterSettings = JSON.parse(readFileSync(path.join(a.outDir!, 'settings.json'), 'utf8'));
    expect(settings.seed).toBe(7);
    expect(settings.pcaDims).toBe(20);
    expect(settings.perplexity).toBe(20);
    const coords: ClusterCoords = JSON.parse(readFileSync(path.join(a.outDir!, 'coords.json'), 'utf8'));
    expect(coords.ids.length).toBe(n);
    expect(coords.xy.length).toBe(2 * n);
    expect(coords.labels[5]).toBe('class-1');
    const metrics: ClusterMetrics = JSON.parse(readFileSync(path.join(a.outDir!, 'metrics.json'), 'utf8'));
    expect(metrics.classes).toEqual(['class-0', 'class-1', 'class-2', 'class-3']);
    expect(metrics.spaces.map((s) => s.space)).toEqual(['original-cosine', 'original-euclidean', 'embedding']);
    expect(metrics.pcaExplainedVariance).toBeGreaterThan(0.1);
    expect(metrics.pcaExplainedVariance).toBeLessThan(1);
    const emb = metrics.spaces[2];
    expect(emb.knnAccuracy.value).toBeGreaterThan(0.9);
    expect(emb.silhouette.p).toBeCloseTo(1 / 20, 12);
    expect(emb.confusion.flat().reduce((x, y) => x + y, 0)).toBe(n);
    const csv = readFileSync(path.join(a.outDir!, 'metrics.csv'), 'utf8').split('\n');
    expect(csv[0]).toBe(
      'space,metric,value,ci_low,ci_high,p,null_mean,null_low,null_high,p_holm,p_bh,z,p_normal,permutations,verdict',
    );
    expect(csv.some((l) => l.startsWith('embedding,knn_accuracy,'))).toBe(true);
    const b = await runCluster(npy, { ...FAST, seed: 7, input: { labels: lab },
      tsne: { iterations: 300, pca: 20, perplexity: 20 }, output: { noWrite: true } });
    expect(b.coords.xy).toEqual(a.coords.xy);
    expect(b.metrics.spaces).toEqual(a.metrics.spaces);
    // d = 64 <= 256: PCA is exact and t-SNE starts from it, so the coordinates do not depend on
    // the seed; the bootstrap and permutations do
    const c = await runCluster(npy, { ...FAST, seed: 8, input: { labels: lab },
      tsne: { iterations: 300, pca: 20, perplexity: 20 }, output: { noWrite: true } });
    expect(c.coords.xy).toEqual(a.coords.xy);
    expect(c.metrics.spaces[0].silhouette.value).toBe(a.metrics.spaces[0].silhouette.value);
    expect(c.metrics.spaces[0].silhouette.ci95).not.toEqual(a.metrics.spaces[0].silhouette.ci95);
  });

  it('reads a safetensors matrix', async () => {
    const dir = tmp();
    const n = 90;
    const { X, labels } = blobs32(n, 8, 3, 3, 2);
    const st = path.join(dir, 'm.safetensors');
    writeSafetensors(st, [{ name: 'emb', dtype: 'F32', shape: [n, 8], data: X }]);
    const lab = path.join(dir, 'l.txt');
    writeFileSync(lab, labels.join('\n'));
    const r = await runCluster(st, { ...FAST, input: { labels: lab }, tsne: { iterations: 300, perplexity: 10 },
      output: { noWrite: true } });
    expect(r.metrics.dim).toBe(8);
    expect(r.settings.pcaDims).toBe(0); // d = 8 < 50: no PCA
    expect(r.metrics.spaces[1].knnAccuracy.value).toBeGreaterThan(0.95);
  });
});

describe('runCluster on a run directory', () => {
  it('uses final.hidden and the aspect axis, keeps ids and text, and sweeps resid_out layers', async () => {
    const dir = tmp();
    const run = fakeRun(dir, 150, 24, 4);
    const r = await runCluster(run, { ...FAST, tsne: { iterations: 300, perplexity: 15 }, probe: { sweep: true } });
    expect(r.outDir).toBe(path.join(dir, 'cluster'));
    expect(r.coords.ids[3]).toBe('item-3');
    expect(r.coords.text?.[3]).toBe('text 3');
    expect(r.settings.point).toBe('final.hidden');
    expect(r.settings.by).toBe('aspect');
    const sweep = r.metrics.sweep!;
    expect(sweep.map((s) => s.point)).toEqual(['layers.0.resid_out', 'layers.1.resid_out', 'layers.2.resid_out',
      'layers.3.resid_out']);
    expect(sweep[0].probeAccuracy).toBeLessThan(0.5); // layer 0 carries no signal (chance 1/3)
    expect(sweep[3].probeAccuracy).toBeGreaterThan(0.9);
    expect(existsSync(path.join(dir, 'cluster', 'sweep.json'))).toBe(true);
    // each layer against the one before it, paired: the value is the difference of the two layers' means
    const steps = r.metrics.comparisons!.filter((c) => c.kind === 'layers');
    expect(steps.map((c) => `${c.a} − ${c.b}`)).toEqual(['layers.1.resid_out − layers.0.resid_out',
      'layers.2.resid_out − layers.1.resid_out', 'layers.3.resid_out − layers.2.resid_out']);
    steps.forEach((c, i) =>
      expect(c.accuracy.value).toBeCloseTo(sweep[i + 1].probeAccuracy - sweep[i].probeAccuracy, 12)
    );
    // from no signal to full signal: the CI of the difference from layer 0 excludes 0
    const rise = sweep.map((s) => s.probeAccuracy);
    expect(rise[3] - rise[0]).toBeGreaterThan(0.4);
    expect(steps.some((c) => c.accuracy.ci95![0] > 0)).toBe(true);
  });
  it('records the probe settings it ran with: repeats, a fixed C, class weights', async () => {
    const dir = tmp();
    const run = fakeRun(dir, 90, 12, 1);
    const r = await runCluster(run, { ...FAST, tsne: { iterations: 300, perplexity: 10 },
      probe: { repeats: 2, c: 0.5, classWeight: 'balanced' }, output: { noWrite: true } });
    const cv = r.metrics.spaces.find((s) => s.space === 'original-euclidean')!.probe!.cv!;
    expect(cv).toMatchObject({ repeats: 2, folds: 5, cMethod: 'fixed', nullC: 0.5, classWeight: 'balanced' });
    expect(cv.chosenC).toEqual([[0.5, 0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5, 0.5]]);
  });
});

describe('bad input', () => {
  const n = 60;
  const { X, labels } = blobs32(n, 5, 3, 2, 3);
  const cases: [string, (dir: string) => { file: string; opts: ClusterOptions }, RegExp][] = [
    ['mismatched label count', (dir) => {
      const { npy, lab } = writeMatrix(dir, X, n, 5, labels.slice(0, 59));
      return { file: npy, opts: { input: { labels: lab } } };
    }, /labels\.txt: label count mismatch: 59 labels for 60 rows/],
    ['fewer than 2 classes', (dir) => {
      const { npy, lab } = writeMatrix(dir, X, n, 5, labels.map(() => 'same'));
      return { file: npy, opts: { input: { labels: lab } } };
    }, /labels\.txt: fewer than 2 classes/],
    ['NaN in the matrix', (dir) => {
      const Y = X.slice();
      Y[17 * 5 + 2] = NaN;
      const { npy, lab } = writeMatrix(dir, Y, n, 5, labels);
      return { file: npy, opts: { input: { labels: lab } } };
    }, /emb\.npy: NaN in the matrix at row 17 \(id 17\), column 2/],
    ['perplexity too large for N', (dir) => {
      const { npy, lab } = writeMatrix(dir, X, n, 5, labels);
      return { file: npy, opts: { input: { labels: lab }, tsne: { iterations: 300, perplexity: 30 } } };
    }, /perplexity 30 is too large for 60 points/],
    ['missing labels', (dir) => {
      const { npy } = writeMatrix(dir, X, n, 5, labels);
      return { file: npy, opts: {} };
    }, /needs labels FILE/],
  ];
  for (const [name, setup, re] of cases) {
    it(`${name}: a clear error and nothing written`, async () => {
      const dir = tmp();
      const { file, opts } = setup(dir);
      await expect(runCluster(file, { ...FAST, tsne: { iterations: 300 }, ...opts })).rejects.toThrow(re);
      expect(existsSync(path.join(dir, 'emb.cluster'))).toBe(false);
    });
  }
  it('the CLI prints one line naming the cause and exits non-zero', async () => {
    const dir = tmp();
    const { npy, lab } = writeMatrix(dir, X, n, 5, labels.slice(1));
    const errs: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    (process.stderr as any).write = (s: string) => (errs.push(String(s)), true);
    let code: number;
    try {
      code = await main(['cluster', npy, '--labels', lab, '--quiet']);
    } finally {
      (process.stderr as any).write = orig;
    }
    expect(code).toBe(1);
    expect(errs.join('')).toMatch(/^lobes cluster: .*labels\.txt: label count mismatch: 59 labels for 60 rows/);
    expect(errs.join('').trim().split('\n').length).toBe(1);
    expect(await main(['cluster', npy, '--perplexity', 'abc'])).toBe(2);
    expect(await main(['cluster', npy, '--tsne-method', 'quad'])).toBe(2);
    expect(await main(['cluster', npy, '--learning-rate', 'fast'])).toBe(2);
    expect(await main(['cluster', npy, '--learning-rate', '0'])).toBe(2);
  });
  it('--learning-rate per-phase reaches the t-SNE and is recorded with the rate after exaggeration and the step limit', async () => {
    const dir = tmp();
    const { npy, lab } = writeMatrix(dir, X, n, 5, labels);
    const code = await main(['cluster', npy, '--labels', lab, '--perplexity', '10', '--iterations', '30', '--bootstrap',
      '0', '--permutations', '0', '--no-baselines', '--learning-rate', 'per-phase', '--quiet']);
    expect(code).toBe(0);
    const m = JSON.parse(readFileSync(path.join(dir, 'emb.cluster', 'settings.json'), 'utf8'));
    // 60 points: max(60 / 48, 50) and max(60 / 4, 50) are both 50, so no second rate is written
    expect(m).toMatchObject({ learningRate: 50, maxStepNorm: 5 });
    expect(m.learningRateAfter).toBeUndefined();
    const dir2 = tmp();
    const w2 = writeMatrix(dir2, X, n, 5, labels);
    expect(
      await main(['cluster', w2.npy, '--labels', w2.lab, '--perplexity', '10', '--iterations', '30', '--bootstrap', '0',
        '--permutations', '0', '--no-baselines', '--learning-rate', '7.5', '--quiet']),
    ).toBe(0);
    const m2 = JSON.parse(readFileSync(path.join(dir2, 'emb.cluster', 'settings.json'), 'utf8'));
    expect(m2.learningRate).toBe(7.5);
    expect(m2.maxStepNorm).toBeUndefined();
  });
});
