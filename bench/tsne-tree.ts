/**
 * The Barnes–Hut tree along a t-SNE run: at marked iterations, the largest leaf, the leaves of
 * more than LEAF_SIZE points and the points they hold, one repulsion on this thread (ms), the
 * map's span and the wall ms per iteration since the last mark. Leaves above LEAF_SIZE points are
 * what early exaggeration made of packed clusters before each last-level cell got its own grid
 * (run the same command at 282ac5d to see them).
 *
 *   node --import tsx bench/tsne-tree.ts X.npy [--neighbours exact|approximate] [--learning-rate per-phase|auto] [--method auto|bh|fft]
 */
import { parseArgs } from 'node:util';
import { readNpy } from '../src/cluster/npy.js';
import { ClusterPool } from '../src/cluster/pool.js';
import { Tsne } from '../src/cluster/tsne-pca.js';
import type { TsneMethod } from '../src/tsne/index.js';
import { QuadTree, repulsionAll, LEAF_SIZE } from '../src/tsne/quadtree.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { neighbours: { type: 'string', default: 'exact' },
    'learning-rate': { type: 'string', default: 'per-phase' }, method: { type: 'string', default: 'bh' } },
});
if (!positionals[0])
  throw new Error(
    'usage: bench/tsne-tree.ts X.npy [--neighbours exact|approximate] [--learning-rate per-phase|auto] [--method auto|bh|fft]',
  );
const { rows: n, cols: d, data } = readNpy(positionals[0]);
const pool = await ClusterPool.start(1);
const lr = values['learning-rate'] as 'per-phase' | 'auto';
const t = await Tsne.create(Float64Array.from(data), n, d, {
  affinity: { neighbours: values.neighbours as 'exact' | 'approximate' },
  optimizer: { seed: 0, learningRate: lr, method: values.method as TsneMethod },
  execution: { threads: 2, pool },
});
t.init();
const marks = new Set([1, 10, 25, 50, 100, 150, 250, 300, 400, 600, 1000]);
let last = performance.now();
let lastIt = 0;
await t.run((it, tt) => {
  if (!marks.has(it)) return;
  const now = performance.now();
  const Y = tt.Y;
  const tree = new QuadTree(n);
  tree.build(Y, n);
  const tr = tree.t;
  let maxLeaf = 0;
  let bigLeaves = 0;
  let bigLeafPoints = 0;
  for (let id = 0; id < tr.nodes; id++) {
    if (tr.child[id] !== -1) continue;
    const size = tr.leaf[2 * id + 1] - tr.leaf[2 * id];
    maxLeaf = Math.max(maxLeaf, size);
    if (size > LEAF_SIZE) {
      bigLeaves++;
      bigLeafPoints += size;
    }
  }
  const F = new Float64Array(2 * n);
  const Z = new Float64Array(n);
  const a = performance.now();
  repulsionAll(tree, Y, 0.5, F, Z);
  const repulsionMs = performance.now() - a;
  let x0 = Infinity;
  let x1 = -Infinity;
  for (let i = 0; i < n; i++) {
    x0 = Math.min(x0, Y[2 * i]);
    x1 = Math.max(x1, Y[2 * i]);
  }
  process.stdout.write(
    JSON.stringify({ iteration: it, msPerIteration: Math.round((now - last) / (it - lastIt)),
      span: +(x1 - x0).toFixed(2), maxLeaf, bigLeaves, bigLeafPoints, repulsionMs: Math.round(repulsionMs),
      fftIterations: tt.fftIterations }) + '\n',
  );
  lastIt = it;
  last = performance.now();
});
await t.close();
await pool.close();
