/** Worker side of TsnePool: kNN row ranges and Barnes–Hut repulsion ranges. */
import { parentPort } from 'node:worker_threads';
import { knnRows } from './knn.js';
import { repulsion } from './quadtree.js';
import { attraction } from './tsne.js';

parentPort!.on('message', (m: any) => {
  try {
    if (m.cmd === 'knn') {
      knnRows(m.X, m.n, m.d, m.k, m.start, m.end, m.indices, m.dist2);
    } else if (m.cmd === 'grad') {
      repulsion(m.tree, m.Y, m.start, m.end, m.theta, m.F, m.Zi, m.tree.order);
      attraction(m.P, m.Y, m.ex, m.A, m.start, m.end);
    }
    parentPort!.postMessage({ ok: true });
  } catch (e: any) {
    parentPort!.postMessage({ error: String(e?.message ?? e) });
  }
});
