/**
 * The float32 screen's exact part with the WebAssembly SIMD sums (src/tsne/knn-simd.ts)
 * against the same search with its JavaScript twin (LOBES_NO_SIMD set for those repetitions), one
 * thread for the rows, ONNX Runtime on one thread, repetitions alternating in one run. Both
 * results must be identical to the bit (checked). Prints the CPU seconds of each repetition and
 * the ratio of the medians.
 *
 *   npx tsx bench/knn-screen-simd.ts [--n 2000] [--d 4096] [--k 91] [--reps 3]
 *
 * Data: bench/knn-vs-sklearn.ts's (5 clusters, centres N(0, 0.3²), unit noise, float32 values).
 */
import * as os from 'node:os';
import { parseArgs } from 'node:util';
import { knnScreened } from '../src/tsne/knn-screen.js';
import type { KnnResult } from '../src/tsne/knn.js';
import { Rng } from '../src/util/rng.js';

const { values: o } = parseArgs({
  options: { n: { type: 'string', default: '2000' }, d: { type: 'string', default: '4096' },
    k: { type: 'string', default: '91' }, reps: { type: 'string', default: '3' } },
});
const n = Number(o.n);
const d = Number(o.d);
const k = Number(o.k);
const rng = new Rng(5);
const C = 5;
const centres = new Float64Array(C * d);
for (let i = 0; i < centres.length; i++) centres[i] = rng.normal() * 0.3;
const X = new Float64Array(n * d);
for (let i = 0; i < n; i++) {
  const c = rng.int(C);
  for (let j = 0; j < d; j++) X[i * d + j] = Math.fround(centres[c * d + j]! + rng.normal());
}

async function run(simd: boolean): Promise<{ cpu: number; r: KnnResult }> {
  const before = process.env.LOBES_NO_SIMD;
  if (simd) delete process.env.LOBES_NO_SIMD;
  else process.env.LOBES_NO_SIMD = '1';
  try {
    const c0 = process.cpuUsage();
    const r = await knnScreened(X, n, d, k, { threads: 1 });
    const c = process.cpuUsage(c0);
    if (!r) throw new Error('knn-screen-simd: the screen did not apply to this data');
    return { cpu: (c.user + c.system) / 1e6, r };
  } finally {
    if (before === undefined) delete process.env.LOBES_NO_SIMD;
    else process.env.LOBES_NO_SIMD = before;
  }
}

await run(true); // warm-up: ONNX Runtime session, WebAssembly compile
const cpu = { simd: [] as number[], js: [] as number[] };
let ref: KnnResult | null = null;
for (let rep = 0; rep < Number(o.reps); rep++) {
  for (const simd of rep % 2 === 0 ? [true, false] : [false, true]) {
    const { cpu: s, r } = await run(simd);
    (simd ? cpu.simd : cpu.js).push(s);
    ref ??= r;
    for (let t = 0; t < n * k; t++)
      if (r.indices[t] !== ref.indices[t] || !Object.is(r.dist2[t], ref.dist2[t]))
        throw new Error(`knn-screen-simd: results differ at ${t}`);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `N ${n} × ${d}, k ${k}, ${o.reps} alternating reps, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`,
);
console.log(
  `CPU s, SIMD sums: ${cpu.simd.map((x) => x.toFixed(2)).join(', ')}; JavaScript sums: ${
    cpu.js.map((x) => x.toFixed(2)).join(', ')
  }`,
);
console.log(
  `ratio JavaScript / SIMD (medians): ${(med(cpu.js) / med(cpu.simd)).toFixed(2)}×; results identical to the bit`,
);
