/**
 * Silhouette, Davies–Bouldin and the t-SNE map against scikit-learn
 * (test/goldens/geometry/make_geometry_goldens.py wrote geometry_goldens.json):
 * - silhouette_samples (euclidean and cosine) and davies_bouldin_score on imbalanced classes,
 *   a singleton class and overlapping, interleaved labels;
 * - the t-SNE map of 300 points in 10 dimensions: lobes' map is at least as good as scikit-learn's
 *   on the same data and perplexity, by KL under the exact dense P and by neighbourhood
 *   recall@10. Both maps are scored by the same functions here, and those functions are first
 *   checked on scikit-learn's map against the numbers numpy computed for it.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { silhouetteSamples, daviesBouldin, distanceMatrix } from '../../src/cluster/metrics.js';
import { Tsne } from '../../src/cluster/tsne-pca.js';
import { exactKl } from '../../src/tsne/tsne.js';
import { knn } from '../../src/tsne/knn.js';
import { conditionalP, jointP, denseP } from '../../src/tsne/affinity.js';

const G = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '..', 'goldens', 'geometry', 'geometry_goldens.json'), 'utf8'),
);

describe('silhouette and Davies–Bouldin (scikit-learn)', () => {
  it('the goldens are there', () => {
    expect(G.metrics.map((c: any) => c.name)).toEqual(['imbalanced', 'singleton', 'overlapping']);
  });
  for (const c of G.metrics as any[]) {
    it(`${c.name}: ${c.n} points, ${c.C} classes`, () => {
      const X = Float64Array.from(c.X);
      const y = Int32Array.from(c.y);
      for (const [metric, want] of [['euclidean', c.silhouetteEuclidean], ['cosine', c.silhouetteCosine]] as const) {
        const s = silhouetteSamples(distanceMatrix(X, c.n, c.d, metric), c.n, y, c.C);
        expect(s.length).toBe(want.length);
        want.forEach((v: number, i: number) =>
          expect(Math.abs(s[i]! - v), `${metric} silhouette of point ${i}`).toBeLessThan(1e-9)
        );
      }
      expect(Math.abs(daviesBouldin(X, c.n, c.d, y, c.C) - c.daviesBouldin)).toBeLessThan(1e-9);
    });
  }
});

/** Share of each point's k nearest neighbours in X that are among its k nearest in Y (ties by index). */
function recallAt(X: ArrayLike<number>, d: number, Y: ArrayLike<number>, n: number, k: number): number {
  const nearest = (Z: ArrayLike<number>, dz: number, i: number) => {
    const dist: [number, number][] = [];
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      let s = 0;
      for (let t = 0; t < dz; t++) s += (Z[i * dz + t]! - Z[j * dz + t]!) ** 2;
      dist.push([s, j]);
    }
    dist.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    return dist.slice(0, k).map((e) => e[1]);
  };
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const a = new Set(nearest(X, d, i));
    sum += nearest(Y, 2, i).filter((j) => a.has(j)).length / k;
  }
  return sum / n;
}

describe('the t-SNE map against scikit-learn (300 points, perplexity 30)', () => {
  const T = G.tsne;
  const X = Float64Array.from(T.X);
  // The exact dense P of perplexity 30: every other point a neighbour.
  const nn = knn(X, T.n, T.d, T.n - 1);
  const Pd = denseP(jointP(nn, conditionalP(nn, T.n, T.perplexity).P, T.n));

  it("the scoring reproduces numpy's KL and recall for scikit-learn's map", () => {
    const Ysk = Float64Array.from(T.Y);
    expect(Math.abs(exactKl(Pd, Ysk, T.n) - T.klDense) / T.klDense).toBeLessThan(1e-6);
    expect(recallAt(X, T.d, Ysk, T.n, 10)).toBeCloseTo(T.recall10, 12);
  });

  it("lobes' map is as good as scikit-learn's: KL within 2% (or lower), recall@10 within 0.01 (or higher)", async () => {
    const t = await Tsne.create(X, T.n, T.d, { affinity: { perplexity: T.perplexity }, optimizer: { seed: 0 } });
    const Y = await t.run();
    const kl = exactKl(Pd, Y, T.n);
    const recall = recallAt(X, T.d, Y, T.n, 10);
    expect(kl, `lobes KL ${kl} vs scikit-learn ${T.klDense}`).toBeLessThan(T.klDense * 1.02);
    expect(recall, `lobes recall@10 ${recall} vs scikit-learn ${T.recall10}`).toBeGreaterThan(T.recall10 - 0.01);
  });
});
