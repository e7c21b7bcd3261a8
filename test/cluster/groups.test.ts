/**
 * Grouped validation: stratified group folds against scikit-learn's StratifiedGroupKFold
 * (test/goldens/groups/make_group_goldens.py), the grouped bootstrap against one written here
 * from its definition, and a planted dataset whose label is readable only through its group:
 * ungrouped CV learns each group's label from its sibling items and scores far above chance,
 * grouped CV tests unseen groups and sits at chance. The permutation nulls shuffle within what
 * the groups allow (whole groups' labels, or labels within each group), checked by counting.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { stratifiedGroupFolds } from '../../src/cluster/probe.js';
import { repeatedCv } from '../../src/cluster/probecv.js';
import { bootstrapRepeated } from '../../src/cluster/paired.js';
import { classScores, percentileSorted } from '../../src/cluster/scores.js';
import { permutationDesign, permutationLabels, probePermutationLabels } from '../../src/cluster/metrics.js';
import { spaceResult } from '../../src/cluster/space.js';
import { runCluster } from '../../src/cluster/run.js';
import { verdictLines } from '../../src/report/verdict.js';
import type { HookInfo, RunReader, SampleRow } from '../../src/store/types.js';
import { cases } from '../goldens/cases.js';

const G = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '..', 'goldens', 'groups', 'group_goldens.json'), 'utf8'),
);

describe('stratified group folds', () => {
  it("are scikit-learn's StratifiedGroupKFold(shuffle=False) folds, sample by sample", () => {
    for (const c of cases(G, 'stratifiedGroupKFold')) {
      const f = stratifiedGroupFolds(Int32Array.from(c.y), Int32Array.from(c.groups), c.K, c.folds, null);
      expect(Array.from(f), c.name).toEqual(c.fold);
    }
  });

  it('with a seed, every group still sits in one fold', () => {
    const c = G.stratifiedGroupKFold[0];
    const f = stratifiedGroupFolds(Int32Array.from(c.y), Int32Array.from(c.groups), c.K, c.folds, 7);
    const where = new Map<number, number>();
    c.groups.forEach((g: number, i: number) => {
      if (where.has(g)) expect(where.get(g)).toBe(f[i]);
      where.set(g, f[i]!);
    });
  });
});

/** 40 groups of 6 near-identical items; the label is the group's, drawn at random: nothing but the group carries it. */
function planted(seed: number) {
  const rng = new Rng(seed);
  const nG = 40;
  const per = 6;
  // more dimensions than groups: a linear probe can fit any labelling of the groups
  const d = 60;
  const n = nG * per;
  const glabel = Int32Array.from({ length: nG }, (_, g) => g % 2);
  rng.shuffle(glabel);
  const gvec = Float64Array.from({ length: nG * d }, () => 2 * rng.normal());
  const X = new Float64Array(n * d);
  const y = new Int32Array(n);
  const groups = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const g = Math.floor(i / per);
    groups[i] = g;
    y[i] = glabel[g]!;
    for (let j = 0; j < d; j++) X[i * d + j] = gvec[g * d + j]! + 0.1 * rng.normal();
  }
  return { X, y, groups, n, d };
}

describe('grouped CV on a label readable only through its group', () => {
  it('ungrouped CV scores far above chance, grouped CV at chance', () => {
    const { X, y, groups, n, d } = planted(1);
    const bal = (preds: Int32Array[]) =>
      preds.reduce((a, p) => a + classScores(y, p, 2).balancedAccuracy, 0) / preds.length;
    const opts = { repeats: 3, seed: 0, C: 10, classWeight: 'balanced' as const };
    const flat = bal(repeatedCv([{ X, d }], n, y, 2, opts).preds);
    const grouped = repeatedCv([{ X, d }], n, y, 2, { ...opts, groups });
    expect(flat).toBeGreaterThan(0.9);
    expect(Math.abs(bal(grouped.preds) - 0.5)).toBeLessThan(0.15);
    // no test fold holds a group of its training rows
    for (const pf of grouped.prepared) {
      const train = new Set(Array.from(pf.train, (i) => groups[i]));
      for (const i of pf.test) expect(train.has(groups[i]!)).toBe(false);
    }
  });
});

describe('the grouped bootstrap', () => {
  it('resamples groups, then items within each drawn group, as written here from its definition', () => {
    const rng = new Rng(4);
    const n = 120;
    const groups = Int32Array.from({ length: n }, (_, i) => Math.floor(i / 4) % 25);
    const y = Int32Array.from({ length: n }, () => rng.int(3));
    const preds = [Int32Array.from(y, (v) => (rng.next() < 0.6 ? v : rng.int(3))),
      Int32Array.from(y, (v) => (rng.next() < 0.5 ? v : rng.int(3)))];
    const B = 300;
    const r = bootstrapRepeated(y, preds, 3, B, new Rng(9), groups);
    const members: number[][] = Array.from({ length: 25 }, () => []);
    groups.forEach((g, i) => members[g]!.push(i));
    const g = new Rng(9);
    const vals: number[] = [];
    for (let b = 0; b < B; b++) {
      const rep = g.int(2);
      const rows: number[] = [];
      for (let t = 0; t < 25; t++) {
        const m = members[g.int(25)]!;
        for (let k = 0; k < m.length; k++) rows.push(m[g.int(m.length)]!);
      }
      vals.push(
        classScores(Int32Array.from(rows, (i) => y[i]!), Int32Array.from(rows, (i) => preds[rep]![i]!), 3)
          .balancedAccuracy,
      );
    }
    vals.sort((a, b) => a - b);
    expect(r.ci.balancedAccuracy![0]).toBeCloseTo(percentileSorted(vals, 2.5), 12);
    expect(r.ci.balancedAccuracy![1]).toBeCloseTo(percentileSorted(vals, 97.5), 12);
  });
});

/**
 * 24 tight groups of 12 items (a group's items sit on one point, groups far apart); the label is
 * drawn per item, half the groups nearly pure (97% one label), half even. An item's neighbours
 * are its siblings, so kNN's hits and the silhouettes go by group: the items are not independent.
 */
function tightGroups(seed: number) {
  const rng = new Rng(seed);
  const nG = 24;
  const per = 12;
  const d = 4;
  const n = nG * per;
  const X = new Float64Array(n * d);
  const y = new Int32Array(n);
  const groups = new Int32Array(n);
  for (let g = 0; g < nG; g++) {
    const c = Float64Array.from({ length: d }, () => 50 * rng.normal());
    const p = g % 2 ? 0.97 : 0.5;
    for (let k = 0; k < per; k++) {
      const i = g * per + k;
      groups[i] = g;
      y[i] = rng.next() < p ? 0 : 1;
      for (let j = 0; j < d; j++) X[i * d + j] = c[j]! + 0.01 * rng.normal();
    }
  }
  return { X, y, groups, n, d };
}

describe("kNN's and the silhouette's grouped bootstrap", () => {
  it('resample groups, then items within them, as written here; on tight groups the CI is far wider than the item CI', () => {
    const { X, y, groups, n, d } = tightGroups(1);
    const B = 400;
    const opts = { k: 5, bootstrap: B, permutations: 0, seed: 6 };
    const flat = spaceResult({ space: 's', X, d, distance: 'euclidean', probe: null }, n, y, ['a', 'b'], opts);
    const grouped = spaceResult({ space: 's', X, d, distance: 'euclidean', probe: null }, n, y, ['a', 'b'], { ...opts,
      probe: { groups } });
    // the silhouette does not depend on the grouping; kNN's neighbours are from other groups
    // (leave-one-group-out, test/cluster/knn-groups.test.ts), so its predictions differ
    expect(grouped.metrics.silhouette.value).toBe(flat.metrics.silhouette.value);
    expect(grouped.knnPred).not.toEqual(flat.knnPred);
    // the grouped bootstrap from its definition: spaceResult's generator (seed; the null's fork,
    // then the bootstrap's), silhouette's B resamples, then kNN's on the same generator
    const members: number[][] = Array.from({ length: 24 }, () => []);
    groups.forEach((g, i) => members[g]!.push(i));
    const r = new Rng(6);
    r.fork();
    const boot = r.fork();
    const draw = () => {
      const rows: number[] = [];
      for (let t = 0; t < 24; t++) {
        const m = members[boot.int(24)]!;
        for (let k = 0; k < m.length; k++) rows.push(m[boot.int(m.length)]!);
      }
      return rows;
    };
    const silMeans: number[] = [];
    for (let b = 0; b < B; b++) {
      const rows = draw();
      silMeans.push(rows.reduce((a, i) => a + grouped.silhouette[i]!, 0) / rows.length);
    }
    const knnBal: number[] = [];
    for (let b = 0; b < B; b++) {
      const rows = draw();
      knnBal.push(
        classScores(Int32Array.from(rows, (i) => y[i]!), Int32Array.from(rows, (i) => grouped.knnPred[i]!), 2)
          .balancedAccuracy,
      );
    }
    silMeans.sort((a, b) => a - b);
    knnBal.sort((a, b) => a - b);
    const sil = grouped.metrics.silhouette.ci95!;
    expect(sil[0]).toBeCloseTo(percentileSorted(silMeans, 2.5), 12);
    expect(sil[1]).toBeCloseTo(percentileSorted(silMeans, 97.5), 12);
    const knn = grouped.metrics.knn!.balancedAccuracy.ci95!;
    expect(knn[0]).toBeCloseTo(percentileSorted(knnBal, 2.5), 12);
    expect(knn[1]).toBeCloseTo(percentileSorted(knnBal, 97.5), 12);
    // tight groups: 24 groups' worth of information, not 288 items'
    const width = (c: [number, number] | null) => c![1] - c![0];
    expect(width(grouped.metrics.silhouette.ci95)).toBeGreaterThan(1.5 * width(flat.metrics.silhouette.ci95));
    expect(width(grouped.metrics.knn!.balancedAccuracy.ci95)).toBeGreaterThan(
      1.5 * width(flat.metrics.knn!.balancedAccuracy.ci95),
    );
    expect(width(grouped.metrics.knn!.accuracy.ci95)).toBeGreaterThan(1.5 * width(flat.metrics.knn!.accuracy.ci95));
  });
});

/** The planted data as a run with two label axes: the label, and the group ("tree") of each item. */
function plantedRun(axis = 'tree'): RunReader {
  const { X, y, groups, d } = planted(2);
  const X32 = Float32Array.from(X);
  const label = Array.from(y, (v) => (v ? 'b' : 'a'));
  const tree = Array.from(groups, (g) => `tree-${g}`);
  const samples: SampleRow[] = label.map((_, i) => ({ index: i, id: `item-${i}`, labels: {}, tokens: 5,
    truncated: false })
  );
  const info = (name: string): HookInfo => ({ name, dim: d, dtype: 'F32' });
  return {
    dir: '/nonexistent',
    manifest: {} as any,
    samples,
    hooks: () => [info('final.hidden')],
    hook: info,
    labelAxes: () => ['label', axis],
    labels: (a: string) => (a === axis ? tree : label).slice(),
    select: () => new Int32Array(0),
    read: async (_name: string, rows?: ArrayLike<number>) => {
      if (!rows) return X32.slice();
      const out = new Float32Array(rows.length * d);
      for (let r = 0; r < rows.length; r++) out.set(X32.subarray(rows[r]! * d, rows[r]! * d + d), r * d);
      return out;
    },
    iterate: async function*() {},
    analysisDir: () => '/nonexistent',
  } as RunReader;
}

describe('permutation nulls under groups', () => {
  it('items: the plain shuffle of before, draw for draw', () => {
    const y = Int32Array.from({ length: 50 }, (_, i) => i % 3);
    const rng = new Rng(5).fork();
    const perm = Int32Array.from(y);
    const want = Array.from({ length: 7 }, () => Int32Array.from(rng.shuffle(perm)));
    expect(permutationLabels(y, 7, 5)).toEqual(want);
    expect(permutationLabels(y, 7, 5, null)).toEqual(want);
  });

  it('within groups: each group keeps its labels, a one-label group never moves, a 3-item group takes its 3 arrangements alike', () => {
    // groups 0: a b c; 1: a a b b; 2: c c (one label: fixed)
    const y = Int32Array.from([0, 1, 2, 0, 0, 1, 1, 2, 2]);
    const g = Int32Array.from([0, 0, 0, 1, 1, 1, 1, 2, 2]);
    const d = permutationDesign(y, g);
    expect(d.kind).toBe('within-groups');
    expect(d.kind === 'within-groups' && d.exchangeable).toBe(7);
    const perms = permutationLabels(y, 3000, 11, g);
    const seen = new Map<string, number>();
    for (const p of perms) {
      expect([...p.slice(0, 3)].sort()).toEqual([0, 1, 2]);
      expect([...p.slice(3, 7)].sort()).toEqual([0, 0, 1, 1]);
      expect([...p.slice(7)]).toEqual([2, 2]);
      const k = p.slice(0, 3).join('');
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    expect(seen.size).toBe(6);
    for (const c of seen.values()) expect(Math.abs(c - 500)).toBeLessThan(100);
  });

  it("whole groups when each group has one label: labels stay equal within a group, the groups' labels are shuffled among them", () => {
    const g = Int32Array.from([0, 0, 1, 1, 1, 2, 3, 3]);
    const y = Int32Array.from([1, 1, 0, 0, 0, 1, 0, 0]);
    expect(permutationDesign(y, g).kind).toBe('groups');
    const perms = probePermutationLabels(y, 400, 3, g);
    let moved = 0;
    for (const p of perms) {
      for (const m of [[0, 1], [2, 3, 4], [6, 7]]) expect(new Set(m.map((i) => p[i])).size).toBe(1);
      // two groups labelled 1 and two labelled 0, whatever their sizes
      expect([p[0], p[2], p[5], p[6]].sort()).toEqual([0, 0, 1, 1]);
      if (p[0] !== y[0]) moved++;
    }
    expect(moved).toBeGreaterThan(100);
  });
});

describe('lobes cluster --group', () => {
  it(
    'groups the probe: the planted label reads far above chance ungrouped and at chance grouped, and the first line says so',
    async () => {
      const o = { input: { by: 'label' }, baselines: { tokens: false }, tsne: { perplexity: 10, iterations: 250 },
        metrics: { bootstrap: 200, permutations: 59 }, probe: { repeats: 2, c: 10, pca: 0 },
        execution: { quiet: true, threads: 1 }, output: { noWrite: true } };
      const unresampled = { bootstrap: 0, permutations: 0 };
      const flat = await runCluster(plantedRun(), o);
      const grouped = await runCluster(plantedRun(), { ...o, input: { ...o.input, group: 'tree' } });
      const probe = (r: typeof flat) =>
        r.metrics.spaces.find((x) => x.space === 'original-euclidean')!.probe!.balancedAccuracy;
      expect(probe(flat).value).toBeGreaterThan(0.9);
      expect(Math.abs(probe(grouped).value - 0.5)).toBeLessThan(0.15);
      expect(probe(grouped).verdict!.status).not.toBe('pass');
      expect(grouped.settings.group).toEqual({ axis: 'tree', groups: 40, null: 'groups', exchangeable: 240 });
      // Item-level kNN reads the label through the group: an item's neighbours are its siblings,
      // which share its label (p at the floor: "above chance" from the group alone). Grouped, the
      // neighbours come from other groups only (leave-one-group-out), as the probe's folds keep
      // groups whole: the label is at chance and no claim is made.
      const knn = (r: typeof flat) =>
        r.metrics.spaces.find((x) => x.space === 'original-cosine')!.knn!.balancedAccuracy;
      expect(knn(flat).value).toBeGreaterThan(0.9);
      expect(knn(flat).p).toBeCloseTo(1 / 60, 12);
      expect(knn(flat).verdict!.status).toBe('pass');
      expect(Math.abs(knn(grouped).value - 0.5)).toBeLessThan(0.15);
      expect(knn(grouped).verdict!.status).not.toBe('pass');
      // the CI resamples the 40 groups: siblings are predicted alike, so it is far wider than an
      // item bootstrap of the same predictions (240 items treated as independent; about √6 ×)
      const it = grouped.items!;
      const preds = it.spaces.find((x) => x.space === 'original-euclidean')!.probeRepeats!.map((p) =>
        Int32Array.from(p)
      );
      const byItem = bootstrapRepeated(Int32Array.from(it.y), preds, 2, 200, new Rng(0)).ci.balancedAccuracy!;
      const ci = probe(grouped).ci95!;
      expect(ci[1] - ci[0]).toBeGreaterThan(1.5 * (byItem[1] - byItem[0]));
      // the axis a dataset's group=FIELD writes is used without --group; --group none turns it off
      const auto = await runCluster(plantedRun('item_group'), { ...o, metrics: unresampled });
      expect(auto.settings.group).toEqual({ axis: 'item_group', groups: 40, null: 'groups', exchangeable: 240 });
      expect(probe(auto).value).toBe(probe(grouped).value);
      expect(
        (await runCluster(plantedRun('item_group'), { ...o, input: { ...o.input, group: null }, metrics: unresampled }))
          .settings.group,
      ).toBeUndefined();
      // fewer groups than folds: grouped folds cannot be made, so the sample is left ungrouped (and it is said)
      const few = plantedRun('item_group');
      const base = few.labels.bind(few);
      few.labels = (a: string) => (a === 'item_group' ? base(a).map((t) => `t${Number(t.slice(5)) % 3}`) : base(a));
      expect((await runCluster(few, { ...o, metrics: unresampled })).settings.group).toBeUndefined();
      expect(verdictLines(grouped.metrics, grouped.settings)[0]).toContain(
        'the probes\' folds keep the 40 groups of "tree" whole and their CIs resample groups, and the nulls shuffle whole groups\' labels',
      );
    },
    60_000,
  );
});
