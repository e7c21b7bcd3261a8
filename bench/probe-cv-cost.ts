/**
 * CPU seconds of the linear probe for one feature set, on data the shape of the SmolLM2 runs
 * (2,000 items, 5 classes), before and after the in-fold CV, in one process, one thread:
 *   - state: 2,000 × 576 dense (bench/probe-cv-data.ts's matrix, regenerated here);
 *   - token counts: 2,000 × 4,416, about 80 non-zero counts per row (the en-qr run's size);
 *   - the incremental probe: both side by side (after only).
 * Each: the probe and its null of 50 permutations (the baselines' and the original space's
 * setting) and of 20 (a layer of the sweep).
 *
 *   BEFORE=/tmp/lobes-before node --import tsx bench/probe-cv-cost.ts
 *
 * BEFORE is another checkout of lobes (its src/ is imported): PCA-50 on the whole sample, then
 * one 5-fold CV with C = 1 and warm starts, the null on the same features.
 */
import * as path from 'node:path';
import { Rng } from '../src/util/rng.js';
import { probePermutationLabels } from '../src/cluster/metrics.js';
import { repeatedCv, probeNullPrepared } from '../src/cluster/probecv.js';
import { modalC } from '../src/cluster/probecv.js';

const n = 2000;
const K = 5;
const rng = new Rng(0);
const lab = Int32Array.from({ length: n }, (_, i) => i % K);
const means = Float64Array.from({ length: K * 20 }, () => 0.35 * rng.normal());
const state = new Float64Array(n * 576);
for (let i = 0; i < n; i++)
  for (let j = 0; j < 576; j++)
    state[i * 576 + j] = rng.normal() / Math.sqrt(j + 1) + (j < 20 ? means[lab[i] * 20 + j] / Math.sqrt(j + 1) : 0);
const V = 4416;
const counts = new Float64Array(n * V);
for (let i = 0; i < n; i++)
  for (let t = 0; t < 90; t++)
    counts[i * V + Math.floor(V * rng.next() ** 2 * (t % 5 === 0 ? 0.2 + 0.16 * lab[i] : 1))] += 1;

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const time = async <T>(f: () => T | Promise<T>): Promise<[T, number]> => {
  const c0 = cpu();
  const r = await f();
  return [r, cpu() - c0];
};
const acc = (p: Int32Array) => p.reduce((a, v, i) => a + (v === lab[i] ? 1 : 0), 0) / n;
const sets: [string, { X: Float64Array; d: number }[]][] = [
  ['state 576', [{ X: state, d: 576 }]],
  ['token counts 4416', [{ X: counts, d: V }]],
  ['counts + state', [{ X: counts, d: V }, { X: state, d: 576 }]],
];
const before = process.env.BEFORE;
const uptime = async () => (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
console.log(`load ${await uptime()}`);
for (const [name, blocks] of sets) {
  for (const perms of [50, 20]) {
    const pl = probePermutationLabels(lab, perms, 0);
    if (before && blocks.length === 1) {
      const { pca } = await import(path.resolve(before, 'src/cluster/pca.ts'));
      const probe = await import(path.resolve(before, 'src/cluster/probe.ts'));
      const space = await import(path.resolve(before, 'src/cluster/space.ts'));
      const [a, t] = await time(() => {
        const P = pca(blocks[0].X, n, blocks[0].d, 50, { seed: 0 });
        const pred = probe.crossValidatedPredictions(P.scores, n, P.k, lab, K, { seed: 0 });
        space.probeNullScores(P.scores, n, P.k, pl, K, { seed: 0 });
        return acc(pred);
      });
      console.log(
        `${name.padEnd(18)} null ${perms}  before: ${t.toFixed(1)} s cpu  (accuracy ${
          a.toFixed(3)
        }; whole-sample PCA-50, 1 × 5-fold, C = 1, warm starts)`,
      );
    }
    const [r, t] = await time(() => {
      const cv = repeatedCv(blocks, n, lab, K, { pca: 50, repeats: 5, cGrid: [0.01, 0.1, 1, 10], seed: 0 });
      probeNullPrepared(cv.prepared, n, pl, K, { pca: 50, C: modalC(cv.chosenC) }, 0);
      return cv;
    });
    const [r1, t1] = await time(() => {
      const cv = repeatedCv(blocks, n, lab, K, { pca: 50, repeats: 1, C: 1, seed: 0 });
      probeNullPrepared(cv.prepared, n, pl, K, { pca: 50, C: 1 }, 0);
      return cv;
    });
    console.log(
      `${name.padEnd(18)} null ${perms}  after:  ${t.toFixed(1)} s cpu  (accuracy ${
        (r.preds.map(acc).reduce((a, b) => a + b) / 5).toFixed(3)
      }; in-fold PCA-50, 5 × 5-fold, nested C)   1 repeat, C = 1: ${t1.toFixed(1)} s cpu (accuracy ${
        acc(r1.preds[0]).toFixed(3)
      })`,
    );
  }
}
console.log(`load ${await uptime()}`);
