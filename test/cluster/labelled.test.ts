/**
 * Only labelled items are compared: rows without a value on the --by axis (here "unevaluated",
 * as `lobes eval label` leaves the items outside an evaluation) are left out of cluster's
 * analysis, the count is recorded and said, and the run rows the baselines and the sweep read
 * are the kept rows' own (a planted layer readable only through the right rows).
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { runCluster } from '../../src/cluster/run.js';
import { verdictLines } from '../../src/report/verdict.js';
import type { HookInfo, RunReader, SampleRow } from '../../src/store/types.js';

const root = mkdtempSync(path.join(tmpdir(), 'lobes-labelled-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * 90 rows: 30 "correct", 30 "wrong", 30 "unevaluated" (unlisted). final.hidden separates correct
 * from wrong a little; layers.0.resid_out carries each row's own label exactly (a one-hot of it),
 * so a probe reading the wrong rows would sit at chance.
 */
function run(dir: string): RunReader {
  const n = 90;
  const d = 6;
  const rng = new Rng(3);
  const labels = Array.from({ length: n }, (_, i) => ['correct', 'wrong', 'unevaluated'][i % 3]!);
  const hidden = new Float32Array(n * d).map((_, t) =>
    rng.normal() + (labels[Math.floor(t / d)] === 'correct' && t % d === 0 ? 1.5 : 0)
  );
  const layer = new Float32Array(n * d).map((_, t) =>
    (t % d === ['correct', 'wrong', 'unevaluated'].indexOf(labels[Math.floor(t / d)]!) ? 3 : 0) + 0.1 * rng.normal()
  );
  const hooks = new Map<string, Float32Array>([['final.hidden', hidden], ['layers.0.resid_out', layer]]);
  const samples: SampleRow[] = labels.map((l, i) => ({ index: i, id: `item-${i}`, labels: {}, tokens: 5,
    truncated: false, text: `text ${i}` })
  );
  const info = (name: string): HookInfo => ({ name, dim: d, dtype: 'F32' });
  return {
    dir,
    manifest: {} as any,
    samples,
    hooks: () => [...hooks.keys()].map(info),
    hook: info,
    labelAxes: () => ['correct'],
    labels: () => labels.slice(),
    labelled: () => labels.map((l) => l !== 'unevaluated'),
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
  } as RunReader;
}

describe('items without a value on the axis', () => {
  it('are left out of the analysis, counted, and said; the sweep reads the kept rows', async () => {
    const res = await runCluster(run(root), { input: { by: 'correct' }, probe: { sweep: true, repeats: 2 },
      baselines: { tokens: false }, tsne: { perplexity: 5, iterations: 250 },
      metrics: { bootstrap: 100, permutations: 59 }, execution: { quiet: true, threads: 1 },
      output: { noWrite: true } });
    expect(res.metrics.classes).toEqual(['correct', 'wrong']);
    expect(res.metrics.n).toBe(60);
    expect(res.metrics.chance!.counts).toEqual([30, 30]);
    expect(res.settings.leftOut).toEqual({ count: 30, of: 90, values: { unevaluated: 30 } });
    expect(res.coords.ids).not.toContain('item-2');
    expect(res.items!.ids).toEqual(
      Array.from({ length: 90 }, (_, i) => i).filter((i) => i % 3 !== 2).map((i) => `item-${i}`),
    );
    // items.json keeps every CV repeat of each probe (for compare's bootstrap over repeats)
    const eu = res.items!.spaces.find((x) => x.space === 'original-euclidean')!;
    expect(eu.probeRepeats!.length).toBe(2);
    expect(eu.probeRepeats![0]).toEqual(eu.probe);
    expect(res.items!.sweep![0]!.probeRepeats!.length).toBe(2);
    // the layer's one-hot is read through the kept rows' run rows: the probe gets every item right
    expect(res.metrics.sweep![0]!.balancedAccuracy!.value).toBe(1);
    const first = verdictLines(res.metrics, res.settings)[0];
    expect(first).toBe(
      '2 classes of "correct" on 60 items (30 of the run\'s 90 items have no value on "correct" and are left out: 30 unevaluated): chance balanced accuracy is 0.50; always answering "correct" gets accuracy 0.50.',
    );
  }, 60_000);
});
