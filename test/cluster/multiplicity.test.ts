/**
 * Holm and Benjamini–Hochberg within cluster's own metrics (src/cluster/multiplicity.ts):
 * against statsmodels on families shaped like a metrics file (goldens from
 * test/goldens/cluster/make_holm_goldens.py), and on a planted run whose signal sits in some
 * layers only.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { runCluster } from '../../src/cluster/index.js';
import { adjustFamilies } from '../../src/cluster/multiplicity.js';
import { verdictLines } from '../../src/report/verdict.js';
import type { RunReader, HookInfo, SampleRow } from '../../src/store/types.js';
import type { ClassifierMetrics, ClusterMetrics, MetricWithCI, ProbeComparison, SpaceMetrics,
  SweepPoint } from '../../src/cluster/types.js';

type Family = { p: (number | null)[]; holm: (number | null)[]; bh: (number | null)[] };
const G = JSON.parse(readFileSync(new URL('../goldens/cluster/holm_goldens.json', import.meta.url), 'utf8')) as {
  classifiers: Record<'accuracy' | 'balancedAccuracy' | 'macroF1', Family>;
  layers20: Family;
  layers199: Family;
  layerSteps: Family;
};

const metric = (p: number | null): MetricWithCI => ({ value: 0.5, ci95: [0.4, 0.6], p });
const classifier = (i: number): ClassifierMetrics => ({
  accuracy: metric(G.classifiers.accuracy.p[i]),
  balancedAccuracy: metric(G.classifiers.balancedAccuracy.p[i]),
  macroF1: metric(G.classifiers.macroF1.p[i]),
  recall: [],
  confusion: [],
});
const space = (name: string, knn: ClassifierMetrics, probe: ClassifierMetrics | null): SpaceMetrics => ({
  space: name,
  silhouette: metric(0.01),
  knnAccuracy: knn.accuracy,
  probeAccuracy: probe?.accuracy ?? null,
  knn,
  probe,
  daviesBouldin: metric(null),
  perClass: [],
  confusion: [],
});

/** A metrics file with the verdict's five classifiers (golden order), an unadjusted sixth, a sweep and its steps. */
function synthetic(layers: Family): ClusterMetrics {
  const outsider: ClassifierMetrics = { ...classifier(0), balancedAccuracy: metric(0.001), accuracy: metric(0.001),
    macroF1: metric(0.001) };
  const sweep: SweepPoint[] = layers.p.map((p, i) => ({ point: `layers.${i}.resid_out`, probeAccuracy: 0.5, ci95: null,
    accuracy: metric(p), balancedAccuracy: metric(p), macroF1: metric(p) })
  );
  const diff = (p: number | null) => ({ value: 0.01, ci95: [-0.01, 0.03] as [number, number], p });
  const steps: ProbeComparison[] = G.layerSteps.p.map((p, i) => ({ kind: 'layers', a: `layers.${i + 1}.resid_out`,
    b: `layers.${i}.resid_out`, accuracy: diff(p), balancedAccuracy: diff(p), macroF1: diff(p), n: 100 })
  );
  return {
    classes: ['a', 'b'],
    n: 100,
    dim: 4,
    pcaExplainedVariance: 1,
    klDivergence: 0,
    // the verdict's order is probe (euclidean), kNN (cosine), kNN (map), baselines: listed out of that order here
    spaces: [space('original-cosine', classifier(1), null), space('original-euclidean', outsider, classifier(0)),
      space('embedding', classifier(2), null)],
    baselines: [
      { name: 'token-counts', description: '', dim: 10, probeDims: 10, probe: classifier(3) },
      { name: 'token-embedding-mean', description: '', dim: 10, probeDims: 10, probe: classifier(4) },
    ],
    sweep,
    comparisons: [...steps, { kind: 'model-vs-words', a: 'x', b: 'y', accuracy: diff(0.2), balancedAccuracy: diff(0.2),
      macroF1: diff(0.2), n: 100 }],
  };
}

function expectFamily(got: { pHolm?: number | null; pBH?: number | null }[], want: Family): void {
  expect(got.length).toBe(want.p.length);
  got.forEach((t, i) => {
    if (want.holm[i] === null) {
      expect(t.pHolm ?? null).toBeNull();
      expect(t.pBH ?? null).toBeNull();
    } else {
      expect(t.pHolm).toBeCloseTo(want.holm[i]!, 12);
      expect(t.pBH).toBeCloseTo(want.bh[i]!, 12);
    }
  });
}

describe('Holm and BH in cluster metrics, against statsmodels', () => {
  for (const [name, layers] of [['20', G.layers20], ['199', G.layers199]] as const) {
    it(`adjusts the verdict's classifiers per score, the sweep's layers and each kind of comparison (${name} permutations per layer)`, () => {
      const m = adjustFamilies(synthetic(layers));
      const eu = m.spaces[1];
      const verdict = [eu.probe!, m.spaces[0].knn!, m.spaces[2].knn!, m.baselines![0].probe, m.baselines![1].probe];
      for (const s of ['accuracy', 'balancedAccuracy', 'macroF1'] as const)
        expectFamily(verdict.map((c) => c[s]), G.classifiers[s]);
      // a classifier outside the verdict's family stays unadjusted
      expect(eu.knn!.balancedAccuracy.pHolm).toBeUndefined();
      // the kept copies of the accuracy carry the same adjusted p
      expect(eu.probeAccuracy!.pHolm).toBeCloseTo(G.classifiers.accuracy.holm[0]!, 12);
      expect(m.spaces[0].knnAccuracy.pHolm).toBeCloseTo(G.classifiers.accuracy.holm[1]!, 12);
      for (const s of ['accuracy', 'balancedAccuracy', 'macroF1'] as const)
        expectFamily(m.sweep!.map((w) => w[s]!), layers);
      const steps = m.comparisons!.filter((c) => c.kind === 'layers');
      expectFamily(steps.map((c) => c.balancedAccuracy), G.layerSteps);
      // a family of one: its p unchanged
      const mw = m.comparisons!.find((c) => c.kind === 'model-vs-words')!;
      expect(mw.balancedAccuracy.pHolm).toBe(0.2);
      expect(m.families!.map((f) => f.family)).toEqual(['classifiers', 'layers', 'representation-vs-words',
        'layers-steps']);
      expect(m.families![0].members).toEqual(['original-euclidean:probe', 'original-cosine:knn', 'embedding:knn',
        'baseline:token-counts', 'baseline:token-embedding-mean']);
    });
  }
});

/** An in-memory run: 3 classes, layers.{i}.resid_out with the class signal only in the layers of `signal`. */
function plantedRun(dir: string, n: number, d: number, signal: boolean[]): RunReader {
  const hooks = new Map<string, Float32Array>();
  const rng = new Rng(31);
  const labels = Array.from({ length: n }, (_, i) => ['x', 'y', 'z'][i % 3]!);
  const cen = Float64Array.from({ length: 3 * d }, () => rng.normal());
  const make = (sep: number) =>
    Float32Array.from({ length: n * d }, (_, k) => cen[(Math.floor(k / d) % 3) * d + (k % d)]! * sep + rng.normal());
  signal.forEach((s, l) => hooks.set(`layers.${l}.resid_out`, make(s ? 2 : 0)));
  hooks.set('final.hidden', make(2));
  const samples: SampleRow[] = labels.map((a, i) => ({ index: i, id: `item-${i}`, labels: { aspect: a }, tokens: 5,
    truncated: false, text: `t${i}` })
  );
  const info = (name: string): HookInfo => ({ name, dim: d, dtype: 'F32' });
  return {
    dir,
    manifest: {} as never,
    samples,
    hooks: () => [...hooks.keys()].map(info),
    hook: info,
    labelAxes: () => ['aspect'],
    labels: () => labels.slice(),
    select: () => new Int32Array(0),
    read: async (name: string, rows?: ArrayLike<number>) => {
      const X = hooks.get(name)!;
      if (!rows) return X.slice();
      const out = new Float32Array(rows.length * d);
      for (let r = 0; r < rows.length; r++) out.set(X.subarray(rows[r]! * d, rows[r]! * d + d), r * d);
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

describe('a planted sweep: signal in layers 2 and 3 of 4', () => {
  it('the signal layers pass Holm across the layers and the others do not; metrics.csv and the verdict carry the same adjusted p', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-holm-'));
    const run = plantedRun(dir, 120, 12, [false, false, true, true]);
    const r = await runCluster(run, { tsne: { iterations: 250, perplexity: 10 },
      metrics: { bootstrap: 50, permutations: 19, probePermutations: 19, sweepPermutations: 99 },
      probe: { repeats: 1, c: 1, sweep: true }, execution: { quiet: true, threads: 1 } });
    const sw = r.metrics.sweep!;
    const p = sw.map((w) => w.balancedAccuracy!.p!);
    const h = sw.map((w) => w.balancedAccuracy!.pHolm!);
    // the signal layers sit at the floor 1/100; Holm multiplies the smallest by 4 and the next by 3
    expect(p[2]).toBeCloseTo(0.01, 12);
    expect(p[3]).toBeCloseTo(0.01, 12);
    expect(h[2]).toBeCloseTo(0.04, 12);
    expect(h[3]).toBeCloseTo(0.04, 12);
    expect(h[0]).toBeGreaterThan(0.05);
    expect(h[1]).toBeGreaterThan(0.05);
    // Holm by hand over these four p-values
    const order = [0, 1, 2, 3].sort((a, b) => p[a]! - p[b]! || a - b);
    let run0 = 0;
    const hand: number[] = [];
    order.forEach((i, k) => {
      run0 = Math.max(run0, Math.min(1, (4 - k) * p[i]!));
      hand[i] = run0;
    });
    h.forEach((v, i) => expect(v).toBeCloseTo(hand[i]!, 12));
    // z is the distance from the null in null sds: large where the signal is
    expect(sw[3].balancedAccuracy!.z!).toBeGreaterThan(5);
    // metrics.csv: p_holm beside p
    const csv = readFileSync(path.join(r.outDir!, 'metrics.csv'), 'utf8').trim().split('\n');
    const head = csv[0]!.split(',');
    const row = csv.find((l) => l.startsWith('sweep,probe_balanced_accuracy:layers.2.resid_out,'))!.split(',');
    expect(Number(row[head.indexOf('p_holm')])).toBeCloseTo(h[2]!, 12);
    // the report's verdict adjusts the same family the same way
    const probe = r.metrics.spaces.find((s) => s.space === 'original-euclidean')!.probe!.balancedAccuracy;
    const line = verdictLines(r.metrics, r.settings).find((l) => l.startsWith('Linear probe'))!;
    const m = /Holm ([0-9.e-]+) over (\d+) classifiers/.exec(line)!;
    expect(Number(m[2])).toBe(r.metrics.families![0].members.length);
    expect(Number(m[1])).toBeCloseTo(probe.pHolm!, 2);
  });
});

describe('the paired comparisons of the representation against the words are one family', () => {
  it('model-vs-words and incremental adjusted together: Holm over 4, by hand', () => {
    const diff = (p: number) => ({ value: 0.01, ci95: [-0.01, 0.03] as [number, number], p });
    const m = synthetic(G.layers20);
    m.sweep = [];
    m.comparisons = [
      { kind: 'model-vs-words', a: 'final.hidden', b: 'token-counts', accuracy: diff(0.03),
        balancedAccuracy: diff(0.03), macroF1: diff(0.03), n: 100 },
      { kind: 'model-vs-words', a: 'final.hidden', b: 'token-embedding-mean', accuracy: diff(0.01),
        balancedAccuracy: diff(0.01), macroF1: diff(0.01), n: 100 },
      { kind: 'incremental', a: 'token-counts + final.hidden', b: 'token-counts', accuracy: diff(0.04),
        balancedAccuracy: diff(0.04), macroF1: diff(0.04), n: 100 },
      { kind: 'incremental', a: 'token-embedding-mean + final.hidden', b: 'token-embedding-mean', accuracy: diff(0.02),
        balancedAccuracy: diff(0.02), macroF1: diff(0.02), n: 100 },
    ] as any;
    adjustFamilies(m);
    // sorted 0.01, 0.02, 0.03, 0.04: 4·0.01 = 0.04, 3·0.02 = 0.06, 2·0.03 = 0.06, 1·0.04 = 0.04 → 0.06 (monotone)
    expect(m.comparisons!.map((c) => c.balancedAccuracy.pHolm)).toEqual(
      [0.06, 0.04, 0.06, 0.06].map((x) => expect.closeTo(x, 12)),
    );
    const fam = m.families!.find((f) => f.family === 'representation-vs-words')!;
    expect(fam.members).toHaveLength(4);
    expect(m.families!.map((f) => f.family)).not.toContain('incremental');
  });
});
