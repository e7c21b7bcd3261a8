/**
 * lobes side of bench/tsne-vs-sklearn.py: embed X.npy with lobes' t-SNE and write the
 * coordinates as .npy. Prints one JSON line: seconds (PCA + kNN + P + optimization, the
 * same span as scikit-learn's fit_transform), stage times and lobes' own KL.
 *
 *   node --import tsx bench/tsne-lobes.ts X.npy OUT.npy [--perplexity 30] [--seed 0] [--threads 2] [--pca 0] [--theta 0.5] [--method auto|bh|fft] [--learning-rate auto|per-phase|LR] [--neighbours auto|exact|approximate] [--progress]
 *
 * --progress writes each stage, and every 50th iteration, to stderr with the elapsed seconds and
 * the process's resident memory.
 *
 * --pca K builds the neighbourhoods in the top K principal components (lobes cluster --pca K);
 * the default 0 builds them in the original space, as lobes cluster does by default.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { readNpy, encodeNpy } from '../src/cluster/npy.js';
import { pca, pcaParallel } from '../src/cluster/pca.js';
import { ClusterPool } from '../src/cluster/pool.js';
import { Tsne } from '../src/cluster/tsne-pca.js';
import type { TsneMethod } from '../src/tsne/index.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    perplexity: { type: 'string', default: '30' },
    seed: { type: 'string', default: '0' },
    threads: { type: 'string', default: '2' },
    pca: { type: 'string', default: '0' },
    theta: { type: 'string', default: '0.5' },
    iterations: { type: 'string', default: '1000' },
    method: { type: 'string', default: 'auto' },
    'learning-rate': { type: 'string', default: 'auto' },
    neighbours: { type: 'string', default: 'auto' },
    optimizer: { type: 'string', default: 'scikit-learn' },
    progress: { type: 'boolean', default: false },
  },
});
const [input, output] = positionals;
const { rows: n, cols: d, data } = readNpy(input);
const seed = Number(values.seed);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const t0 = performance.now();
const c0 = cpu();
const stages: Record<string, number> = {};
let last = t0;
const lap = (name: string) => {
  const t = performance.now();
  stages[name] = Math.round(t - last) / 1000;
  last = t;
};
const threads = Number(values.threads);
const pool = threads > 1 ? await ClusterPool.start(threads - 1) : null;
const k = Number(values.pca);
let feats: Float64Array;
let fd = d;
let explained = 1;
if (k > 0 && k < d) {
  const r = pool && d > 256 ? await pcaParallel(data, n, d, k, { seed }, pool) : pca(data, n, d, k, { seed });
  feats = r.scores;
  fd = r.k;
  explained = r.explainedVariance;
} else feats = Float64Array.from(data);
lap('pca');
const say = (what: string) =>
  values.progress &&
  process.stderr.write(
    `${((performance.now() - t0) / 1000).toFixed(1)} s, RSS ${
      (process.memoryUsage.rss() / 2 ** 30).toFixed(2)
    } GiB: ${what}\n`,
  );
const t = await Tsne.create(feats, n, fd, {
  affinity: { perplexity: Number(values.perplexity),
    neighbours: values.neighbours as 'auto' | 'exact' | 'approximate' },
  optimizer: {
    seed,
    theta: Number(values.theta),
    method: values.method as TsneMethod,
    learningRate: values['learning-rate'] === 'auto' || values['learning-rate'] === 'per-phase'
      ? values['learning-rate']
      : Number(values['learning-rate']),
    iterations: Number(values.iterations),
    rule: values.optimizer as 'scikit-learn' | 'openTSNE',
  },
  execution: { threads, pool: pool ?? undefined },
}, say);
lap('knn+P');
t.init();
await t.run((it) => {
  if (it % 50 === 0) say(`iteration ${it}`);
});
lap('optimize');
const seconds = (performance.now() - t0) / 1000;
const cpuSeconds = cpu() - c0;
await t.close();
await pool?.close();
const kl = t.klDivergence();
writeFileSync(output, encodeNpy(t.embedding, [n, 2]));
process.stdout.write(
  JSON.stringify({ seconds, cpuSeconds, stages, method: t.opts.method, kl, pcaExplained: explained,
    learningRate: t.opts.learningRate, neighbours: t.opts.neighbours,
    neighbourRecall: t.neighbourRecall?.recall ?? null, fftIterations: t.fftIterations }) + '\n',
);
