import { parseCommand, intOption, numOption } from './args.js';
import { runCluster } from '../cluster/run.js';

const USAGE =
  'lobes cluster RUN|MATRIX_FILE [--labels FILE] [--point HOOK] [--by LABEL] [--seed N] [--perplexity P] [--out DIR] [--pca 50] [--theta 0.5] [--iterations 1000] [--bootstrap B] [--permutations R] [--sweep] [--json]';

const HELP = `
Seeded Barnes–Hut t-SNE of one capture point and numbers for how well a label separates:
silhouette, leave-one-out kNN accuracy, linear-probe accuracy (stratified 5-fold CV) and
Davies–Bouldin in the original space (cosine and euclidean) and in the embedding, with
bootstrap 95% CIs and label-permutation p-values. Writes RUN/cluster/ (settings.json,
coords.json, coords.csv, metrics.json, metrics.csv, sweep.json with --sweep).

  RUN | MATRIX_FILE   a run directory, or a matrix [N, d] as .npy or .safetensors
  --labels FILE       labels of a matrix, one per line (required for a matrix)
  --point HOOK        capture point (default final.hidden; for .safetensors the tensor name)
  --by LABEL          label axis of a run (default aspect)
  --seed N            seed of PCA, t-SNE, subsampling, bootstrap and permutations (default 0)
  --perplexity P      t-SNE perplexity (default 30; at most (N - 1) / 3)
  --pca K             PCA dimensions before t-SNE (default 50; 0 = none)
  --theta T           Barnes–Hut angle (default 0.5; 0 = exact gradient, O(N²))
  --iterations N      t-SNE iterations including 250 of early exaggeration (default 1000)
  --bootstrap B       bootstrap resamples (default 1000)
  --permutations R    label permutations (default 200; the probe uses min(R, 50))
  --metric-points M   metrics on a seeded stratified subsample of at most M points (default 2000)
  --sweep             probe accuracy for every layers.{i}.resid_out of the run
  --threads N         worker threads (default: all cores; results do not depend on it)
  --out DIR           output directory (default RUN/cluster, or NAME.cluster beside a matrix)
  --json              print the metrics as JSON on stdout
  --quiet             no progress output
`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(argv, {
    usage: USAGE,
    help: HELP,
    positionals: [1, 1],
    options: {
      labels: { type: 'string' },
      point: { type: 'string' },
      by: { type: 'string' },
      seed: { type: 'string' },
      perplexity: { type: 'string' },
      pca: { type: 'string' },
      theta: { type: 'string' },
      iterations: { type: 'string' },
      bootstrap: { type: 'string' },
      permutations: { type: 'string' },
      'metric-points': { type: 'string' },
      sweep: { type: 'boolean' },
      threads: { type: 'string' },
      out: { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean' },
    },
  });
  if (!parsed) return 0;
  const v = parsed.values;
  const res = await runCluster(parsed.positionals[0], {
    labels: v.labels,
    point: v.point,
    by: v.by,
    seed: intOption(v.seed, '--seed', 0, 0, 2 ** 32 - 1),
    perplexity: numOption(v.perplexity, '--perplexity', 30, 1),
    pca: intOption(v.pca, '--pca', 50, 0),
    theta: numOption(v.theta, '--theta', 0.5, 0, 1),
    iterations: intOption(v.iterations, '--iterations', 1000, 0),
    bootstrap: intOption(v.bootstrap, '--bootstrap', 1000, 0),
    permutations: intOption(v.permutations, '--permutations', 200, 0),
    maxMetricPoints: intOption(v['metric-points'], '--metric-points', 2000, 10),
    sweep: !!v.sweep,
    threads: v.threads === undefined ? undefined : intOption(v.threads, '--threads', 1, 1, 256),
    out: v.out,
    quiet: !!v.quiet || !!v.json,
  });
  if (v.json) {
    process.stdout.write(JSON.stringify({ outDir: res.outDir, settings: res.settings, metrics: res.metrics }, null, 2) + '\n');
  } else {
    const f = (x: number) => x.toFixed(3);
    const lines = [`cluster: ${res.metrics.n} points, ${res.metrics.classes.length} classes, KL ${f(res.metrics.klDivergence)}`];
    for (const s of res.metrics.spaces) {
      const ci = (m: { ci95: [number, number] | null }) => (m.ci95 ? ` [${f(m.ci95[0])}, ${f(m.ci95[1])}]` : '');
      const p = (m: { p: number | null }) => (m.p !== null ? ` p=${m.p.toPrecision(2)}` : '');
      lines.push(
        `  ${s.space.padEnd(19)} silhouette ${f(s.silhouette.value)}${ci(s.silhouette)}${p(s.silhouette)}  kNN ${f(s.knnAccuracy.value)}${ci(s.knnAccuracy)}${p(s.knnAccuracy)}` +
          (s.probeAccuracy ? `  probe ${f(s.probeAccuracy.value)}${ci(s.probeAccuracy)}${p(s.probeAccuracy)}` : '') +
          `  DB ${f(s.daviesBouldin.value)}`,
      );
    }
    for (const w of res.metrics.sweep ?? []) lines.push(`  sweep ${w.point}: probe ${f(w.probeAccuracy)}`);
    if (res.outDir) lines.push(`wrote ${res.outDir}`);
    process.stdout.write(lines.join('\n') + '\n');
  }
  return 0;
}
