import { describe, it, expect, beforeAll } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { knn, type KnnResult } from '../../src/tsne/knn.js';
import { ClusterPool } from '../../src/cluster/pool.js';
import { approxRows, approxSearch, estimateRecall, knnApprox, reverseLists } from '../../src/tsne/knn-approx.js';
import { Tsne } from '../../src/cluster/tsne-pca.js';
import { APPROX_MIN_POINTS } from '../../src/tsne/neighbours.js';
import { blobs } from '../cluster/blobs.js';

/** Points near a 3-dimensional manifold in 12 dimensions: the structure neighbour search meets in embeddings. */
function curved(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const X = new Float32Array(n * 12);
  for (let i = 0; i < n; i++) {
    const a = rng.normal() * 3;
    const b = rng.normal() * 3;
    const c = rng.normal();
    const base = [a, b, c, Math.sin(a), Math.cos(b), a * b * 0.1, Math.sin(a + c), b - c, 0.5 * a, Math.cos(a - b),
      c * c * 0.2, a + b];
    for (let j = 0; j < 12; j++) X[i * 12 + j] = base[j] + rng.normal() * 0.05;
  }
  return X;
}

/** The share of exact neighbours found, over all rows. */
function recallOf(exact: Int32Array, got: Int32Array, n: number, k: number): number {
  let f = 0;
  for (let i = 0; i < n; i++) {
    const s = new Set(got.subarray(i * k, (i + 1) * k));
    for (let a = 0; a < k; a++) if (s.has(exact[i * k + a])) f++;
  }
  return f / (n * k);
}

describe('approximate neighbours (random-projection forest + refinement)', () => {
  const n = 3000;
  const d = 12;
  const k = 31;
  const X = curved(n, 5);
  const exact = knn(X, n, d, k);
  let approx: KnnResult;
  beforeAll(async () => {
    approx = await knnApprox(X, n, d, k, { seed: 1 });
  });

  it('finds nearly all of the exact neighbours on data near a low-dimensional manifold', async () => {
    expect(recallOf(exact.indices, approx.indices, n, k)).toBeGreaterThan(0.97);
  });

  it('lists k distinct other points per row, nearest first, with their exact squared distances', async () => {
    const bad: string[] = [];
    for (const res of [approx, await knnApprox(X, n, d, k, { seed: 1, rounds: 0 })])
      for (let i = 0; i < n; i++) {
        const row = res.indices.subarray(i * k, (i + 1) * k);
        if (new Set(row).size !== k || row.includes(i)) bad.push(`row ${i}: ${Array.from(row)}`);
        for (let a = 0; a < k; a++) {
          const j = row[a];
          let s = 0;
          for (let c = 0; c < d; c++) s += (X[i * d + c] - X[j * d + c]) ** 2;
          const got = res.dist2[i * k + a];
          if (got !== s || (a > 0 && got < res.dist2[i * k + a - 1])) bad.push(`row ${i} entry ${a}: ${got} vs ${s}`);
        }
      }
    expect(bad.slice(0, 3)).toEqual([]);
  });

  it('where it agrees with the exact list, it agrees exactly (the first neighbour of almost every row)', async () => {
    let same = 0;
    for (let i = 0; i < n; i++) if (approx.indices[i * k] === exact.indices[i * k]) same++;
    expect(same / n).toBeGreaterThan(0.99);
  });

  it('the refinement rounds raise the recall of the forest alone; more trees raise it too', async () => {
    const r = async (o: { trees: number; rounds?: number }) =>
      recallOf(exact.indices, (await knnApprox(X, n, d, k, { seed: 1, ...o })).indices, n, k);
    const oneTree = await r({ trees: 1, rounds: 0 });
    const twoTrees = await r({ trees: 2, rounds: 0 });
    const refined = await r({ trees: 2 });
    expect(oneTree).toBeLessThan(twoTrees - 0.02);
    expect(twoTrees).toBeLessThan(refined - 0.02);
    expect(refined).toBeGreaterThan(0.95);
  });

  it('is a function of the data, k and the seed', async () => {
    const again = await knnApprox(X, n, d, k, { seed: 1 });
    expect(again.indices).toEqual(approx.indices);
    expect(again.dist2).toEqual(approx.dist2);
    const other = await knnApprox(X, n, d, k, { seed: 2, rounds: 0 });
    expect(other.indices).not.toEqual((await knnApprox(X, n, d, k, { seed: 1, rounds: 0 })).indices);
  });

  it('gives the same lists on two threads as on one (the rows of each pass split across a worker)', async () => {
    const pool = await ClusterPool.start(1);
    try {
      for (const o of [{ seed: 1 }, { seed: 3, trees: 2, rounds: 4 }]) {
        const one = await knnApprox(X, n, d, k, o);
        const two = await pool.knnApprox(X, n, d, k, o);
        expect(
          Buffer.from(two.indices.buffer, two.indices.byteOffset, two.indices.byteLength).equals(
            Buffer.from(one.indices.buffer, one.indices.byteOffset, one.indices.byteLength),
          ),
        ).toBe(true);
        expect(
          Buffer.from(two.dist2.buffer, two.dist2.byteOffset, two.dist2.byteLength).equals(
            Buffer.from(one.dist2.buffer, one.dist2.byteOffset, one.dist2.byteLength),
          ),
        ).toBe(true);
      }
    } finally {
      await pool.close();
    }
  });

  it('estimateRecall is the recall over the sampled rows (all rows when the sample is as large as N)', async () => {
    const all = estimateRecall(X, n, d, approx, n);
    expect(all.rows).toBe(n);
    expect(all.recall).toBeCloseTo(recallOf(exact.indices, approx.indices, n, k), 12);
    const some = estimateRecall(X, n, d, approx, 300, 3);
    expect(some.rows).toBe(300);
    expect(Math.abs(some.recall - all.recall)).toBeLessThan(0.03);
    // an exact list has recall 1
    expect(estimateRecall(X, n, d, exact, 100).recall).toBe(1);
  });
});

describe('approximate neighbours on wide clustered data (the join of forward and reverse lists)', () => {
  // 2 Gaussian clusters in 30 dimensions: neighbours are barely nearer than the rest of their
  // cluster, the hard case of the t-SNE benchmark's data (bench/tsne-scaling.py) at a test's size
  const n = 4000;
  const d = 30;
  const k = 45;
  const X = Float32Array.from(blobs(n, d, 2, 3, 11).X);
  const exact = knn(X, n, d, k);

  it('finds nearly all of the exact neighbours from a two-tree forest, and the reverse lists are part of it', async () => {
    // two trees' leaves hold under a fifth of the neighbours; the joins find the rest
    const full = recallOf(exact.indices, (await knnApprox(X, n, d, k, { seed: 2, trees: 2 })).indices, n, k);
    const forwardOnly = recallOf(exact.indices,
      (await knnApprox(X, n, d, k, { seed: 2, trees: 2, reverse: 0 })).indices, n, k);
    const forest = recallOf(exact.indices, (await knnApprox(X, n, d, k, { seed: 2, trees: 2, rounds: 0 })).indices, n,
      k);
    expect(forest).toBeLessThan(0.3);
    expect(full).toBeGreaterThan(0.98);
    expect(forwardOnly).toBeLessThan(full - 0.02);
  });

  it('gives the same lists whatever order the rows of each pass are processed in', async () => {
    const o = { seed: 4, trees: 3, rounds: 4 };
    const inOrder = await knnApprox(X, n, d, k, o);
    const rng = new Rng(9);
    const shuffled = await approxSearch(X, n, d, k, o, 1, async (job, pass) => {
      // 37 uneven blocks, taken in a shuffled order, each one's rows backwards
      const cuts = [0, ...Array.from({ length: 36 }, () => rng.int(n)).sort((a, b) => a - b), n];
      const blocks = cuts.slice(1).map((e, b) => [cuts[b], e]);
      for (let t = blocks.length - 1; t > 0; t--) {
        const u = rng.int(t + 1);
        [blocks[t], blocks[u]] = [blocks[u], blocks[t]];
      }
      let changed = 0;
      for (const [b0, b1] of blocks) for (let i = b1 - 1; i >= b0; i--) changed += approxRows(job, pass, i, i + 1);
      return changed;
    });
    expect(Buffer.from(shuffled.indices.buffer).equals(Buffer.from(inOrder.indices.buffer))).toBe(true);
    expect(Buffer.from(shuffled.dist2.buffer).equals(Buffer.from(inOrder.dist2.buffer))).toBe(true);
  });
});

describe('reverseLists', () => {
  it("lists for each row the rows that have it among their first `join`, the nearest `cap` of them, with the entries' flags", () => {
    const rng = new Rng(3);
    const n = 60;
    const k = 7;
    const join = 4;
    const cap = 3;
    const curI = new Int32Array(n * k).map((_, t) => ((t / k) | 0) === 0 ? 1 + (t % k) : rng.int(n));
    const curD = new Float64Array(n * k).map(() => rng.int(5));
    const fresh = new Uint8Array(n * k).map(() => rng.int(2));
    const { revStart, revIdx, revFresh } = reverseLists(curI, curD, fresh, n, k, join, cap,
      (len) => new Int32Array(len));
    for (let j = 0; j < n; j++) {
      const want: [number, number, number][] = [];
      for (let i = 0; i < n; i++)
        for (let a = 0; a < join; a++)
          if (curI[i * k + a] === j) want.push([curD[i * k + a], i * k + a, fresh[i * k + a]]);
      // in index order, or the nearest `cap` (ties by index) when there are more
      if (want.length > cap) want.sort((p, q) => p[0] - q[0] || p[1] - q[1]);
      const got = Array.from(revIdx.subarray(revStart[j], revStart[j + 1]), (i, t) => [i, revFresh[revStart[j] + t]]);
      expect(got).toEqual(want.slice(0, cap).map(([, e, f]) => [(e / k) | 0, f]));
    }
  });
});

describe("t-SNE's neighbour search choice", () => {
  it("'auto' is exact below APPROX_MIN_POINTS; 'approximate' records the estimated recall; a wrong value is refused", async () => {
    const n = 600;
    const { X } = blobs(n, 8, 3, 4, 9);
    const auto = await Tsne.create(X, n, 8, { affinity: { perplexity: 10 } });
    expect(APPROX_MIN_POINTS).toBeGreaterThan(n);
    expect(auto.opts.neighbours).toBe('exact');
    expect(auto.neighbourRecall).toBeNull();
    const ap = await Tsne.create(X, n, 8, { affinity: { perplexity: 10, neighbours: 'approximate' } });
    expect(ap.opts.neighbours).toBe('approximate');
    expect(ap.neighbourRecall!.rows).toBe(200);
    expect(ap.neighbourRecall!.recall).toBeGreaterThan(0.5);
    // the same P as the exact search where the lists agree: every row's weights sum to 1 / N (before symmetrising, Σ P = 1)
    let total = 0;
    for (let t = 0; t < ap.P.vals.length; t++) total += ap.P.vals[t];
    expect(total).toBeCloseTo(1, 9);
    await expect(Tsne.create(X, n, 8, { affinity: { perplexity: 10, neighbours: 'fuzzy' as never } })).rejects.toThrow(
      /neighbours must be exact, approximate or auto/,
    );
  });
});
