/**
 * The approximate neighbour search (src/tsne/knn-approx.ts) on one data file: wall and CPU
 * seconds of the search, its rounds, and the share of the exact k neighbours it found on sampled
 * rows (estimateRecall, the same estimate t-SNE records; the exact rows cost sample × N × d).
 *
 *   node --import tsx bench/knn-approx.ts X.npy [--k 91] [--threads 2] [--sample 1000]
 *       [--trees T] [--leaf L] [--rounds R] [--join J] [--reverse V] [--min-change C] [--exact]
 *
 * Options left out take the search's defaults; --exact times the exact search (ClusterPool.knn,
 * what t-SNE runs) instead. Prints one JSON line.
 */
import { parseArgs } from 'node:util';
import { readNpy } from '../src/cluster/npy.js';
import { ClusterPool } from '../src/cluster/pool.js';
import { knn } from '../src/tsne/knn.js';
import { estimateRecall, knnApprox, type ApproxKnnOptions } from '../src/tsne/knn-approx.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    k: { type: 'string', default: '91' },
    threads: { type: 'string', default: '2' },
    sample: { type: 'string', default: '1000' },
    trees: { type: 'string' },
    leaf: { type: 'string' },
    rounds: { type: 'string' },
    join: { type: 'string' },
    reverse: { type: 'string' },
    'min-change': { type: 'string' },
    exact: { type: 'boolean', default: false },
  },
});
if (!positionals[0])
  throw new Error(
    'usage: bench/knn-approx.ts X.npy [--k 91] [--threads 2] [--sample 1000] [--trees T] [--leaf L] [--rounds R] [--join J] [--reverse V] [--min-change C]',
  );
const { rows: n, cols: d, data } = readNpy(positionals[0]);
const X = Float64Array.from(data);
const k = Number(values.k);
const threads = Number(values.threads);
const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
const stages: [string, number][] = [];
const t0 = performance.now();
const opts: ApproxKnnOptions = {
  trees: num(values.trees),
  leafSize: num(values.leaf),
  rounds: num(values.rounds),
  join: num(values.join),
  reverse: num(values.reverse),
  minChange: num(values['min-change']),
  onProgress: (stage, done, total) => {
    if (done === total && stage !== 'forest rows') stages.push([stage, Math.round(performance.now() - t0) / 1000]);
  },
};
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const pool = threads > 1 ? await ClusterPool.start(threads - 1) : null;
const c0 = cpu();
const t1 = performance.now();
const nn = values.exact
  ? await (pool ? pool.knn(X, n, d, k) : Promise.resolve(knn(X, n, d, k)))
  : pool
  ? await pool.knnApprox(X, n, d, k, opts)
  : await knnApprox(X, n, d, k, opts);
const seconds = (performance.now() - t1) / 1000;
const cpuSeconds = cpu() - c0;
await pool?.close();
const rec = estimateRecall(X, n, d, nn, Number(values.sample), 0);
process.stdout.write(JSON.stringify({
  n,
  d,
  k,
  threads,
  search: values.exact ? 'exact' : 'approximate',
  seconds: +seconds.toFixed(2),
  cpuSeconds: +cpuSeconds.toFixed(2),
  stages,
  recall: +rec.recall.toFixed(4),
  rows: rec.rows,
  ...Object.fromEntries(Object.entries(opts).filter(([key, v]) => v !== undefined && key !== 'onProgress')),
}) + '\n');
