/**
 * The probe's inner-CV fits by C at an 8B run's shape, in this thread: for `repeats` repeats of the
 * default probe (5 folds, PCA-50 in each through the Gram route, 3 inner folds), the CPU seconds of
 * the in-fold preparation and of the inner fits at each C of PROBE_C_GRID, with their L-BFGS
 * iterations; `emb` reads a coords.csv of `lobes cluster` (the probe on the 2-D map, no PCA).
 *
 *   node --import tsx bench/probe-inner-fits.ts X.npy labels.txt [repeats] [orig]
 *   node --import tsx bench/probe-inner-fits.ts OUT/coords.csv labels.txt [repeats] emb
 */
import { probeInput } from './probe-input.js';
import { gramRows } from '../src/cluster/metrics.js';
import { foldCount, foldsOf, splitFold, prepareFold, probeSettings, sampleWeights, foldCount as fc,
  splitFold as sf } from '../src/cluster/probecv.js';
import { fitLogistic } from '../src/cluster/probe.js';

const [file, labelsFile, reps = '1', mode = 'orig'] = process.argv.slice(2);
const { X, n, d, y, K } = probeInput(file, labelsFile, mode);
const opts = { ...probeSettings(), pca: 50 };
const now = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const t: Record<string, number> = { gram: 0, prepare: 0 };
const iters: Record<string, number> = {};
let gram: Float64Array | undefined;
if (mode === 'orig') {
  const c0 = now();
  gram = new Float64Array(n * n);
  gramRows(X, n, d, gram, 0, n);
  t.gram = now() - c0;
}
for (let r = 0; r < Number(reps); r++) {
  const folds = foldCount(y, K, 5);
  const fold = foldsOf(y, K, folds, r);
  for (let f = 0; f < folds; f++) {
    const { train, test } = splitFold(fold, f);
    let c0 = now();
    const pf = prepareFold([{ X, d, gram }], train, test, mode === 'orig' ? 50 : 0, r);
    t.prepare += now() - c0;
    const yt = Int32Array.from(train, (i) => y[i]);
    const inner = foldsOf(yt, K, fc(yt, K, 3), r + 7919 * (f + 1));
    for (let g = 0; g < 3; g++) {
      const s = sf(inner, g);
      const rows = (A: Float64Array, idx: Int32Array) => {
        const o = new Float64Array(idx.length * pf.d);
        idx.forEach((v, i) => o.set(A.subarray(v * pf.d, (v + 1) * pf.d), i * pf.d));
        return o;
      };
      const Xt = rows(pf.Xtr, s.train);
      const ytt = Int32Array.from(s.train, (i) => yt[i]);
      for (const C of opts.cGrid!) {
        c0 = now();
        const res = fitLogistic(Xt, s.train.length, pf.d, ytt, C, K, 100, 1e-4 * Math.min(1, C), undefined, true,
          sampleWeights(ytt, K, 'balanced'));
        t['C' + C] = (t['C' + C] ?? 0) + now() - c0;
        iters['C' + C] = (iters['C' + C] ?? 0) + res.iterations;
      }
    }
  }
}
console.log(mode, 'n', n, 'd', d,
  JSON.stringify(Object.fromEntries(Object.entries(t).map(([k, v]) => [k, +v.toFixed(3)]))), JSON.stringify(iters));
