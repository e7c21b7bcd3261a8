/**
 * The exact kNN of narrow data with block bounds (src/tsne/knn-prune.ts) against the full
 * float64 pass it replaces, on the same data, threads and k, alternating in one process. Prints
 * one JSON line per pair and a summary: wall seconds of each, their ratio, the share of the
 * pairs the bounds left, and whether the lists are identical.
 *
 *   node --import tsx bench/knn-prune.ts X.npy [--k 91] [--threads 2] [--pairs 1]
 */
import { parseArgs } from 'node:util';
import { readNpy } from '../src/cluster/npy.js';
import { ClusterPool } from '../src/cluster/pool.js';
import { pruneJob, prunedBlocks, pairsFraction } from '../src/tsne/knn-prune.js';

const { positionals, values } = parseArgs({ allowPositionals: true,
  options: { k: { type: 'string', default: '91' }, threads: { type: 'string', default: '2' },
    pairs: { type: 'string', default: '1' } } });
if (!positionals[0]) throw new Error('usage: bench/knn-prune.ts X.npy [--k 91] [--threads 2] [--pairs 1]');
const { rows: n, cols: d, data } = readNpy(positionals[0]);
const X = Float64Array.from(data);
const k = Number(values.k);
const threads = Number(values.threads);
const pool = threads > 1 ? await ClusterPool.start(threads - 1) : null;
if (!pool) throw new Error('--threads must be at least 2 (the pool runs both searches)');
// the share of pairs, on one thread (the lists do not depend on the split)
const job = pruneJob(X, n, d, k);
prunedBlocks(job, 0, job.nb);
const share = pairsFraction(job);
const ratios: number[] = [];
let identical = true;
for (let p = 0; p < Number(values.pairs); p++) {
  let t = performance.now();
  const pruned = await pool.knn(X, n, d, k);
  const tp = (performance.now() - t) / 1000;
  t = performance.now();
  const full = await pool.knn(X, n, d, k, undefined, false);
  const tf = (performance.now() - t) / 1000;
  for (let i = 0; i < n * k && identical; i++)
    if (pruned.indices[i] !== full.indices[i] || !Object.is(pruned.dist2[i], full.dist2[i])) identical = false;
  ratios.push(tp / tf);
  process.stdout.write(
    JSON.stringify({ pair: p, prunedSeconds: +tp.toFixed(2), fullSeconds: +tf.toFixed(2),
      ratio: +(tp / tf).toFixed(3) }) + '\n',
  );
}
await pool.close();
process.stdout.write(
  JSON.stringify({ n, d, k, threads, blocks: job.nb, pairsShare: +share.toFixed(4),
    medianRatio: +ratios.sort((a, b) => a - b)[ratios.length >> 1].toFixed(3), identical }) + '\n',
);
