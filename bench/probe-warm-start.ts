/**
 * The experiment of bench/RESULTS.md ("Tried, not kept"): the inner CV's fits cold, as the probe
 * runs them, and warm-started along the C grid (each C from the previous C's solution), on the
 * same inner folds: whether the chosen C changes, the largest difference of an inner score, and
 * the CPU and iterations of each way.
 *
 *   node --import tsx bench/probe-warm-start.ts X.npy labels.txt [repeats] [orig]
 *   node --import tsx bench/probe-warm-start.ts OUT/coords.csv labels.txt [repeats] emb
 */
import { probeInput } from './probe-input.js';
import { gramRows } from '../src/cluster/metrics.js';
import { foldCount, foldsOf, splitFold, prepareFold, probeSettings, sampleWeights } from '../src/cluster/probecv.js';
import { fitLogistic, predictLogistic } from '../src/cluster/probe.js';
import { classScores } from '../src/cluster/scores.js';
const [file, labelsFile, reps = '5', mode = 'orig'] = process.argv.slice(2);
const { X, n, d, y, K } = probeInput(file, labelsFile, mode);
const opts = { ...probeSettings(), pca: 50 };
const grid = opts.cGrid!;
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e3;
};
let gram: Float64Array | undefined;
if (mode === 'orig') {
  gram = new Float64Array(n * n);
  gramRows(X, n, d, gram, 0, n);
}
const T = { cold: 0, warm: 0 }, It = { cold: 0, warm: 0 };
let same = 0, diff = 0, maxScoreDiff = 0;
for (let r = 0; r < Number(reps); r++) {
  const folds = foldCount(y, K, 5);
  const fold = foldsOf(y, K, folds, r);
  for (let f = 0; f < folds; f++) {
    const { train, test } = splitFold(fold, f);
    const pf = prepareFold([{ X, d, gram }], train, test, mode === 'orig' ? 50 : 0, r);
    const yt = Int32Array.from(train, (i) => y[i]);
    const inner = foldsOf(yt, K, foldCount(yt, K, 3), r + 7919 * (f + 1));
    const res: Record<string, number[]> = { cold: new Array(grid.length).fill(0),
      warm: new Array(grid.length).fill(0) };
    for (let g = 0; g < 3; g++) {
      const s = splitFold(inner, g);
      const rows = (A: Float64Array, idx: Int32Array) => {
        const o = new Float64Array(idx.length * pf.d);
        idx.forEach((v, i) => o.set(A.subarray(v * pf.d, (v + 1) * pf.d), i * pf.d));
        return o;
      };
      const Xt = rows(pf.Xtr, s.train), Xs = rows(pf.Xtr, s.test);
      const ytt = Int32Array.from(s.train, (i) => yt[i]), yss = Int32Array.from(s.test, (i) => yt[i]);
      for (const w of ['cold', 'warm'] as const) {
        let prev: Float64Array | undefined;
        const c0 = cpu();
        grid.forEach((C, gi) => {
          const fit = fitLogistic(Xt, s.train.length, pf.d, ytt, C, K, 100, 1e-4 * Math.min(1, C),
            w === 'warm' ? prev : undefined, true, sampleWeights(ytt, K, 'balanced'));
          prev = fit.W;
          It[w] += fit.iterations;
          res[w][gi] += classScores(yss, predictLogistic(fit.W, Xs, s.test.length, pf.d, K), K).balancedAccuracy / 3;
        });
        T[w] += cpu() - c0;
      }
    }
    const pick = (sc: number[]) => {
      let b = 0;
      for (let g = 1; g < sc.length; g++) if (sc[g] > sc[b]) b = g;
      return grid[b];
    };
    for (let g = 0; g < grid.length; g++) maxScoreDiff = Math.max(maxScoreDiff, Math.abs(res.cold[g] - res.warm[g]));
    if (pick(res.cold) === pick(res.warm)) same++;
    else {
      diff++;
      console.log('differs', r, f, res.cold, res.warm);
    }
  }
}
console.log(
  `${mode} ${file}: chosen C same ${same}, different ${diff}; max inner score difference ${maxScoreDiff}; inner fits CPU ms cold ${
    T.cold.toFixed(0)
  } warm ${T.warm.toFixed(0)}; iterations cold ${It.cold} warm ${It.warm}`,
);
