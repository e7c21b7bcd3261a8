/**
 * The t-SNE attraction kernel with P's rows in their own order against the breadth-first order
 * of P's graph (src/tsne/attraction.ts bfsOrder), on the same P, embedding and thread, in one
 * process: median milliseconds of each over alternating blocks of calls, their ratio, and whether
 * every row's sum is identical.
 *
 *   node --import tsx bench/tsne-attraction-order.ts X.npy [EMBEDDING.npy] [--reps 5]
 *
 * P comes from X as `lobes cluster` builds it (perplexity 30, exact neighbours); the embedding
 * defaults to Gaussian points (the order's effect is on the reads of y_j, whatever their values).
 */
import { parseArgs } from 'node:util';
import { readNpy } from '../src/cluster/npy.js';
import { Tsne } from '../src/cluster/tsne-pca.js';
import { attraction, bfsOrder } from '../src/tsne/attraction.js';
import { Rng } from '../src/util/rng.js';

const { positionals, values } = parseArgs({ allowPositionals: true,
  options: { reps: { type: 'string', default: '5' } } });
if (!positionals[0]) throw new Error('usage: bench/tsne-attraction-order.ts X.npy [EMBEDDING.npy] [--reps 5]');
const { rows: n, cols: d, data } = readNpy(positionals[0]);
const t = await Tsne.create(Float64Array.from(data), n, d, { affinity: { perplexity: 30 }, execution: { threads: 2 } });
await t.close();
const rng = new Rng(1);
const Y = positionals[1]
  ? Float64Array.from(readNpy(positionals[1]).data)
  : new Float64Array(2 * n).map(() => 30 * rng.normal());
const plain = { n, rowPtr: t.P.rowPtr, cols: t.P.cols, vals: t.P.vals, id: 1 };
const ordered = { ...plain, id: 2, order: bfsOrder(plain) };
const a = new Float64Array(2 * n);
const b = new Float64Array(2 * n);
const ta: number[] = [];
const tb: number[] = [];
// in blocks of five calls per order, the first of each block untimed: the kernel keeps one copy of P
// (one P and row range per thread, as in the optimization), so a block's later calls find it in place
for (let r = 0; r < Number(values.reps); r++) {
  for (const [P, out, times] of [[plain, a, ta], [ordered, b, tb]] as const) {
    for (let c = 0; c < 5; c++) {
      const s = performance.now();
      attraction(P, Y, 1, out);
      if (c > 0) times.push(performance.now() - s);
    }
  }
}
const med = (x: number[]) => x.sort((p, q) => p - q)[x.length >> 1];
let identical = true;
for (let i = 0; i < 2 * n; i++) if (!Object.is(a[i], b[i])) identical = false;
let spread = 0;
const inv = new Int32Array(n);
ordered.order.forEach((i, r) => (inv[i] = r));
for (let i = 0; i < n; i++)
  for (let q = plain.rowPtr[i]; q < plain.rowPtr[i + 1]; q++) spread += Math.abs(inv[plain.cols[q]] - inv[i]);
process.stdout.write(
  JSON.stringify({ n, nnz: plain.rowPtr[n], rowOrderMs: +med(ta).toFixed(1), bfsOrderMs: +med(tb).toFixed(1),
    ratio: +(med(tb) / med(ta)).toFixed(3), meanIndexDistanceBfs: Math.round(spread / plain.rowPtr[n]),
    meanIndexDistanceRowOrder: Math.round(n / 3), identical }) + '\n',
);
