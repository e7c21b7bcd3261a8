/**
 * Barnes–Hut repulsion: lobes' group walk (one tree walk per group of ≤ GROUP_SIZE points,
 * summed from an interaction list) against the per-point walk it replaced (one walk per point,
 * scikit-learn's scheme), on the same tree and the same embedding, in one process.
 *
 *   node --import tsx bench/tsne-repulsion.ts [X.npy] [--iterations 500] [--reps 25] [--theta 0.5]
 *
 * The embedding is lobes' own t-SNE of X after --iterations steps (default: bench/out/20k_X.npy,
 * which bench/tsne-vs-sklearn.py writes). Both walks then alternate --reps times on this thread;
 * medians and their ratio are printed, with both methods' errors against the exact O(N²) sums on
 * a sample of points. LOBES_NO_SIMD=1 times the group walk with the JavaScript twin of the
 * WebAssembly kernel instead.
 */
import { parseArgs } from 'node:util';
import { readNpy } from '../src/cluster/npy.js';
import { Tsne } from '../src/cluster/tsne-pca.js';
import { QuadTree, repulsionAll, MAX_DEPTH, type TreeArrays } from '../src/tsne/quadtree.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    iterations: { type: 'string', default: '500' },
    reps: { type: 'string', default: '25' },
    theta: { type: 'string', default: '0.5' },
  },
});
const file = positionals[0] ?? 'bench/out/20k_X.npy';
const theta = Number(values.theta);
if (!(theta > 0 && theta * theta <= 0.5))
  throw new Error('the per-point reference walk here needs 0 < theta <= 1/sqrt(2)');

/** The per-point walk: for each point, the tree from the root with the point's own distance test. */
function perPoint(t: TreeArrays, Y: Float64Array, n: number, F: Float64Array, Zi: Float64Array): void {
  const { node, child, leaf, order } = t;
  const th2 = theta * theta;
  const stack = new Int32Array(3 * MAX_DEPTH + 8);
  for (let p0 = 0; p0 < n; p0++) {
    const i = order[p0];
    const xi = Y[2 * i];
    const yi = Y[2 * i + 1];
    let z = 0;
    let fx = 0;
    let fy = 0;
    let sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
      const id = stack[--sp];
      const o = id * 4;
      const cnt = node[o + 3];
      if (cnt === 0) continue;
      const dx = xi - node[o];
      const dy = yi - node[o + 1];
      const d2 = dx * dx + dy * dy;
      if (node[o + 2] < th2 * d2) {
        const w = 1 / (1 + d2);
        z += cnt * w;
        fx += cnt * w * w * dx;
        fy += cnt * w * w * dy;
        continue;
      }
      const c = child[id];
      if (c === -1) {
        for (let p = leaf[id * 2]; p < leaf[id * 2 + 1]; p++) {
          const j = order[p];
          if (j === i) continue;
          const ex = xi - Y[2 * j];
          const ey = yi - Y[2 * j + 1];
          const w = 1 / (1 + ex * ex + ey * ey);
          z += w;
          fx += w * w * ex;
          fy += w * w * ey;
        }
      } else {
        stack[sp++] = c + 3;
        stack[sp++] = c + 2;
        stack[sp++] = c + 1;
        stack[sp++] = c;
      }
    }
    Zi[i] = z;
    F[2 * i] = fx;
    F[2 * i + 1] = fy;
  }
}

const { rows: n, cols: d, data } = readNpy(file);
const t = await Tsne.create(data, n, d, { optimizer: { iterations: Number(values.iterations) },
  execution: { threads: 2 } });
t.init();
await t.run();
await t.close();
const Y = t.Y;
const tree = new QuadTree(n);
tree.build(Y, n);
const Fg = new Float64Array(2 * n);
const Zg = new Float64Array(n);
const Fp = new Float64Array(2 * n);
const Zp = new Float64Array(n);
const tg: number[] = [];
const tp: number[] = [];
for (let r = 0; r < Number(values.reps); r++) {
  let a = performance.now();
  perPoint(tree.t, Y, n, Fp, Zp);
  tp.push(performance.now() - a);
  a = performance.now();
  repulsionAll(tree, Y, theta, Fg, Zg);
  tg.push(performance.now() - a);
}
const med = (x: number[]) => x.slice().sort((p, q) => p - q)[x.length >> 1];
const kernel = process.env.LOBES_NO_SIMD ? 'JavaScript twin' : 'WebAssembly SIMD';
let ep = 0;
let eg = 0;
let zp = 0;
let zg = 0;
let m = 0;
for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 400))) {
  let z = 0;
  let fx = 0;
  let fy = 0;
  for (let j = 0; j < n; j++) {
    if (j === i) continue;
    const dx = Y[2 * i] - Y[2 * j];
    const dy = Y[2 * i + 1] - Y[2 * j + 1];
    const w = 1 / (1 + dx * dx + dy * dy);
    z += w;
    fx += w * w * dx;
    fy += w * w * dy;
  }
  const f = Math.hypot(fx, fy);
  ep += Math.hypot(Fp[2 * i] - fx, Fp[2 * i + 1] - fy) / f;
  eg += Math.hypot(Fg[2 * i] - fx, Fg[2 * i + 1] - fy) / f;
  zp += Math.abs(Zp[i] - z) / z;
  zg += Math.abs(Zg[i] - z) / z;
  m++;
}
console.log(
  `N = ${n}, theta ${theta}, embedding after ${values.iterations} iterations; ${tree.t.ngroups} groups, ${tree.t.nodes} tree nodes`,
);
console.log(
  `repulsion, one thread, median of ${values.reps}: per-point walk ${med(tp).toFixed(1)} ms, group walk + ${kernel} ${
    med(tg).toFixed(1)
  } ms: ratio ${(med(tg) / med(tp)).toFixed(2)}`,
);
console.log(
  `mean relative error vs exact sums (${m} points): force per-point ${(ep / m).toExponential(2)}, group ${
    (eg / m).toExponential(2)
  }; Z_i per-point ${(zp / m).toExponential(2)}, group ${(zg / m).toExponential(2)}`,
);
