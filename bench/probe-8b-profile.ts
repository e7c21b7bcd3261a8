/**
 * Where the probe's repeated, nested CV spends its time at an 8B run's shape (2,000 × 4,096, the
 * bench/tsne-vs-sklearn.py 2k data or any .npy with a labels file), in this thread: the in-fold
 * PCA and projection, the standardization, the inner CV's fits (every C of the grid on every
 * inner fold) and the outer fits, in CPU seconds over `repeats` repeats; with `gram` the
 * in-fold PCA runs on the Gram matrix (Block.gram, as cluster's original-space probe does; the
 * Gram matrix's own time, which cluster's distances pay, is printed apart).
 *
 *   node --import tsx bench/probe-8b-profile.ts X.npy labels.txt [repeats] [gram]
 */
import { readFileSync } from 'node:fs';
import { readNpy } from '../src/cluster/npy.js';
import { gramRows } from '../src/cluster/metrics.js';
import { foldCount, foldsOf, splitFold, prepareFold, chooseC, fitPredict,
  probeSettings } from '../src/cluster/probecv.js';

const [file, labelsFile, reps = '1', route = 'plain'] = process.argv.slice(2);
const M = readNpy(file);
const n = M.rows;
const d = M.cols;
const names = readFileSync(labelsFile, 'utf8').split('\n').filter((s) => s.length);
const classes = [...new Set(names)].sort();
const y = Int32Array.from(names, (s) => classes.indexOf(s));
const K = classes.length;
const X = Float64Array.from(M.data);
const opts = { ...probeSettings(), pca: 50 };
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const t = { gram: 0, prepare: 0, inner: 0, outer: 0 };
let gram: Float64Array | undefined;
if (route === 'gram') {
  const c0 = cpu();
  gram = new Float64Array(n * n);
  gramRows(X, n, d, gram, 0, n);
  t.gram = cpu() - c0;
}
for (let r = 0; r < Number(reps); r++) {
  const seed = r;
  const folds = foldCount(y, K, 5);
  const fold = foldsOf(y, K, folds, seed);
  for (let f = 0; f < folds; f++) {
    const { train, test } = splitFold(fold, f);
    let c0 = cpu();
    const pf = prepareFold([{ X, d, gram }], train, test, 50, seed);
    t.prepare += cpu() - c0;
    c0 = cpu();
    const yt = Int32Array.from(train, (i) => y[i]);
    const C = chooseC(pf.Xtr, train.length, pf.d, yt, K, opts.cGrid!, opts, seed + 7919 * (f + 1));
    t.inner += cpu() - c0;
    c0 = cpu();
    fitPredict(pf.Xtr, train.length, pf.d, yt, pf.Xte, test.length, K, C, opts);
    t.outer += cpu() - c0;
  }
}
console.log(
  `n ${n} d ${d} K ${K} repeats ${reps}, ${route} route: CPU s Gram matrix ${
    t.gram.toFixed(2)
  }, prepare (PCA + projection + standardization) ${t.prepare.toFixed(2)}, inner CV fits ${
    t.inner.toFixed(2)
  }, outer fits ${t.outer.toFixed(2)}; load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
);
