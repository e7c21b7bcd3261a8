import { parseCommand, intOption, numOption, parseNumber } from './args.js';
import { runCluster, DEFAULT_PROBE_PCA } from '../cluster/run.js';
import { LENGTH_CONTROL, lengthSentence } from '../cluster/baseline.js';
import { DEFAULT_PROBE_REPEATS } from '../cluster/probecv.js';
import { UsageError } from '../util/errors.js';
import type { ClassifierMetrics, MetricWithCI } from '../cluster/types.js';
import { verdictWords } from '../util/resolution.js';
import { verdictTable, verdictTableLines } from '../report/verdict-table.js';
import type { TsneMethod } from '../tsne/index.js';
import { OUTPUT_OPTIONS, QUIET_TEXT, helpLine } from './options.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

const USAGE =
  'lobes cluster RUN|MATRIX_FILE [--labels FILE] [--point HOOK] [--by LABEL] [--seed N] [--perplexity P] [--out DIR] [--pca K] [--probe-pca 50] [--theta 0.5] [--tsne-method auto|bh|fft] [--learning-rate auto|per-phase|LR] [--neighbours auto|exact|approximate] [--iterations 1000] [--bootstrap B] [--permutations R] [--probe-permutations R] [--probe-repeats 5] [--probe-c C|nested] [--class-weight balanced|none] [--sweep] [--sweep-permutations R] [--no-baselines] [--no-length-control] [--group AXIS|none] [--model DIR] [--json]';

const HELP = `
Seeded Barnes–Hut t-SNE of one capture point and numbers for how well a label separates:
silhouette, the leave-one-out kNN classifier and a linear probe (stratified 5-fold CV), each
scored by accuracy, balanced accuracy and macro-F1 with per-class recall, and Davies–Bouldin,
in the original space (cosine and euclidean) and in the embedding. Every number carries a
bootstrap 95% CI and its label-permutation null (mean, 95% band, p-value); the chance levels
(1/C, the majority-class rate) are recorded. For a run, probes on the tokens alone (token
counts, mean token embedding) give the baseline the representation has to beat. Writes
RUN/cluster/ (settings.json, coords.json, coords.csv, metrics.json, metrics.csv, items.json,
sweep.json with --sweep).

  RUN | MATRIX_FILE   a run directory, or a matrix [N, d] as .npy or .safetensors
  --labels FILE       labels of a matrix, one per line (required for a matrix)
  --point HOOK        capture point (default final.hidden; for .safetensors the tensor name)
  --by LABEL          label axis of a run (default aspect)
  --seed N            seed of PCA, t-SNE, subsampling, bootstrap and permutations (default 0)
  --perplexity P      t-SNE perplexity (default 30; at most (N - 1) / 3)
  --pca K             build the t-SNE neighbourhoods in the top K principal components
                      (default 0: in the original space)
  --probe-pca K       fit the probe on the top K principal components (default 50; 0 = all
                      dimensions, exact but slow for large d)
  --theta T           Barnes–Hut angle (default 0.5; 0 = exact gradient, O(N²))
  --tsne-method M     t-SNE repulsion: bh (Barnes–Hut), fft (FFT interpolation) or auto
                      (default; from 30,000 points the FFT in iterations whose grid is small
                      for N and in the last 50, Barnes–Hut in the others; Barnes–Hut below)
  --learning-rate R   t-SNE step: auto (default; max(N/48, 50) throughout, scikit-learn's rule),
                      per-phase (N/48 while exaggerated, then N/4, steps clipped at 5: openTSNE's
                      rule, sharper local neighbourhoods at large N) or a number
  --neighbours S      t-SNE's neighbour search: exact (auto, the default) or approximate
                      (random-projection forest and neighbour-of-neighbour refinement; faster
                      from about 50,000 points, its recall estimated on 200 rows and recorded)
  --iterations N      t-SNE iterations including 250 of early exaggeration (default 1000)
  --bootstrap B       bootstrap resamples (default 1000)
  --permutations R    label permutations of silhouette and kNN (default 200)
  --probe-repeats N   repeats of the probe's stratified k-fold CV with other fold seeds (default 5)
  --probe-c C|nested  the probe's C, or 'nested': chosen inside each training fold by a 3-fold CV
                      over 0.0001, 0.001, 0.01, 0.1, 1, 10 for the best balanced accuracy
                      (default nested; a choice at the grid's edge is noted)
  --class-weight W    balanced (default: each class weighed by n / (K · n_c) in the probe's
                      loss) or none
  --probe-permutations R  permutations of the probe's null (default: what the family of the
                      verdict's classifiers needs for Holm at 0.05, 59 for 3 and 99 for 5, at
                      most 100 and at most --permutations; each retrains every fold). A smaller
                      count makes the verdict say "not testable at R = ..." 
  --metric-points M   metrics on a seeded stratified subsample of at most M points (default 2000)
  --sweep             the probe at every layers.{i}.resid_out of the run
  --sweep-permutations R  permutations of each layer's null (default min(probe permutations, 20);
                      where the layers' family needs more, the layers are read on the normal
                      approximation of their z, flagged as such)
  --no-baselines      skip the token baselines and the length control
  --no-length-control skip the length control (the probe on the items' token counts)
  --group AXIS|none   a label axis holding each item's group (e.g. its world tree): the probes'
                      folds keep groups whole and their bootstraps resample groups, then items
                      (default: the axis item_group a dataset's group=FIELD wrote, if any)
  --model DIR         the run's model folder, when it has moved since extraction (the token
                      baselines need its tokenizer and embeddings; checked against the run by hash);
                      a GGUF file or Hugging Face checkpoint folder names its cached conversion
  --threads N         worker threads (default: all cores; results do not depend on it)
  --out DIR           output directory (default RUN/cluster, or NAME.cluster beside a matrix)
  --json              print the metrics as JSON on stdout
${helpLine('--quiet', QUIET_TEXT, 22)}
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
      'probe-pca': { type: 'string' },
      'probe-permutations': { type: 'string' },
      'probe-repeats': { type: 'string' },
      'probe-c': { type: 'string' },
      'class-weight': { type: 'string' },
      'sweep-permutations': { type: 'string' },
      'no-baselines': { type: 'boolean', key: 'baselines' },
      'no-length-control': { type: 'boolean' },
      group: { type: 'string' },
      model: { type: 'string' },
      theta: { type: 'string' },
      'tsne-method': { type: 'string' },
      'learning-rate': { type: 'string' },
      neighbours: { type: 'string' },
      iterations: { type: 'string' },
      bootstrap: { type: 'string' },
      permutations: { type: 'string' },
      'metric-points': { type: 'string' },
      sweep: { type: 'boolean' },
      threads: { type: 'string' },
      out: { type: 'string' },
      ...OUTPUT_OPTIONS,
    },
  });
  if (!parsed) return 0;
  const v = parsed.values;
  // A checkpoint folder or GGUF given as the run's model: its cached conversion is the folder the run read.
  let model = v.model;
  if (model !== undefined) {
    const { isHfCheckpoint } = await import('../convert/hf-checkpoint.js');
    const { isGgufFile } = await import('../convert/cache.js');
    if (isHfCheckpoint(model) || isGgufFile(model))
      model = (await (await import('./convert.js')).modelFolder(model, { quiet: !!v.json })).dir;
  }
  const res = await runCluster(parsed.positionals[0], {
    seed: intOption(v.seed, '--seed', 0, 0, 2 ** 32 - 1),
    input: { labels: v.labels, point: v.point, by: v.by, group: v.group === 'none' ? null : v.group },
    tsne: {
      pca: intOption(v.pca, '--pca', 0, 0),
      perplexity: numOption(v.perplexity, '--perplexity', 30, 1),
      theta: numOption(v.theta, '--theta', 0.5, 0, 1),
      method: tsneMethodOption(v['tsne-method']),
      learningRate: learningRateOption(v['learning-rate']),
      neighbours: neighboursOption(v.neighbours),
      iterations: intOption(v.iterations, '--iterations', 1000, 0),
    },
    probe: {
      pca: intOption(v['probe-pca'], '--probe-pca', DEFAULT_PROBE_PCA, 0),
      repeats: intOption(v['probe-repeats'], '--probe-repeats', DEFAULT_PROBE_REPEATS, 1, 100),
      c: v['probe-c'] === undefined || v['probe-c'] === 'nested'
        ? 'nested'
        : numOption(v['probe-c'], '--probe-c', 1, 1e-9),
      classWeight: classWeightOption(v['class-weight']),
      sweep: !!v.sweep,
    },
    metrics: {
      points: intOption(v['metric-points'], '--metric-points', 2000, 10),
      bootstrap: intOption(v.bootstrap, '--bootstrap', 1000, 0),
      // undefined when not given: the probe's count is then sized to its family (src/util/resolution.ts)
      permutations: v.permutations === undefined ? undefined : intOption(v.permutations, '--permutations', 200, 0),
      probePermutations: v['probe-permutations'] === undefined
        ? undefined
        : intOption(v['probe-permutations'], '--probe-permutations', 50, 0),
      sweepPermutations: v['sweep-permutations'] === undefined
        ? undefined
        : intOption(v['sweep-permutations'], '--sweep-permutations', 20, 0),
    },
    baselines: { tokens: !v['no-baselines'], lengthControl: !v['no-length-control'], model },
    output: { dir: v.out },
    execution: {
      threads: v.threads === undefined ? undefined : intOption(v.threads, '--threads', 1, 1, 256),
      io: stderrIO({ quiet: !!v.quiet || !!v.json, signal: interruptSignal('cluster') }),
    },
  });
  if (v.json) {
    process.stdout.write(
      JSON.stringify({ outDir: res.outDir, settings: res.settings, metrics: res.metrics }, null, 2) + '\n',
    );
  } else {
    const f = (x: number) => x.toFixed(3);
    const cm = res.metrics;
    const vt = verdictTable(cm, res.settings, null, null);
    const lines = [...(vt ? verdictTableLines(vt) : []),
      `cluster: ${cm.n} points, ${cm.classes.length} classes, KL ${f(cm.klDivergence)}`];
    const ci = (m: { ci95: [number, number] | null }) => (m.ci95 ? ` [${f(m.ci95[0])}, ${f(m.ci95[1])}]` : '');
    // beside every permutation p: z and its normal approximation (flagged), the floor, and a family member's verdict
    const p = (m: MetricWithCI) => {
      if (m.nullSd === 0) return ` no p (the null has no spread: every shuffle scored ${f(m.nullMean ?? NaN)})`;
      if (m.p === null) return '';
      const floor = m.atFloor ? ` (floor of R=${m.permutations})` : '';
      const z = m.z !== null && m.z !== undefined ? ` z=${m.z.toFixed(1)}` : '';
      const pn = m.pNormal !== null && m.pNormal !== undefined
        ? ` p_normal≈${m.pNormal < 1e-16 ? '<1e-16' : m.pNormal.toPrecision(2)}`
        : '';
      return ` p=${m.p.toPrecision(2)}${floor}${z}${pn}${
        m.verdict
          ? ` [${verdictWords(m.verdict, 'passes', 'does not pass')}${
            m.verdict.adjusted !== null && m.verdict.family > 1
              ? `; Holm ${m.verdict.adjusted.toPrecision(2)} over ${m.verdict.family}`
              : ''
          }]`
          : ''
      }`;
    };
    const nul = (
      m: { nullMean?: number | null },
    ) => (m.nullMean !== null && m.nullMean !== undefined ? ` null ${f(m.nullMean)}` : '');
    const bal = (name: string, c: ClassifierMetrics) =>
      `  ${name} balanced ${f(c.balancedAccuracy.value)}${ci(c.balancedAccuracy)}${nul(c.balancedAccuracy)}${
        p(c.balancedAccuracy)
      }, macro-F1 ${f(c.macroF1.value)}, accuracy ${f(c.accuracy.value)}`;
    if (cm.chance)
      lines.push(
        `  chance: balanced accuracy ${f(cm.chance.balancedAccuracy)}; majority class ${
          JSON.stringify(cm.chance.majorityClass)
        } gets accuracy ${f(cm.chance.majorityRate)}`,
      );
    const lo = res.settings.leftOut;
    if (lo)
      lines.push(
        `  left out: ${lo.count} of ${lo.of} items without a value on the axis (${
          Object.entries(lo.values).map(([k, c]) => `${k}: ${c}`).join(', ')
        })`,
      );
    const sz = res.settings.sizing;
    if (sz) {
      const how = (
        x: NonNullable<typeof sz.permutations>,
      ) => (x.sizing === 'user'
        ? 'as given'
        : x.sizing === 'sized'
        ? `sized: ${x.family} tests need ${x.needed} for Holm at 0.05`
        : `capped for cost below the ${x.needed} that ${x.family} tests need: read on the normal approximation`);
      const parts = [sz.permutations && `${sz.permutations.R} for silhouette and kNN (${how(sz.permutations)})`,
        sz.probePermutations && `${sz.probePermutations.R} for the probes (${how(sz.probePermutations)})`,
        sz.sweepPermutations && `${sz.sweepPermutations.R} per layer (${how(sz.sweepPermutations)})`].filter(Boolean);
      lines.push(`  permutations: ${parts.join('; ')}; p_normal is the normal approximation of z's p`);
    }
    for (const s of cm.spaces) {
      lines.push(
        `  ${s.space.padEnd(19)} silhouette ${f(s.silhouette.value)}${ci(s.silhouette)}${p(s.silhouette)}  DB ${
          f(s.daviesBouldin.value)
        }`,
      );
      if (s.knn) lines.push(bal('    kNN  ', s.knn));
      if (s.probe) lines.push(bal('    probe', s.probe));
    }
    for (const b of cm.baselines ?? []) lines.push(bal(`  tokens alone (${b.name}) probe`, b.probe));
    for (const b of cm.controls ?? []) {
      lines.push(bal(`  control (${b.name}) probe`, b.probe));
      if (b.name === LENGTH_CONTROL && cm.chance) lines.push(`  ${lengthSentence(b, cm.chance.balancedAccuracy)}`);
    }
    for (const c of (cm.comparisons ?? []).filter((x) => x.kind === 'incremental' && x.b === LENGTH_CONTROL)) {
      const d = c.balancedAccuracy;
      lines.push(
        `  ${c.a} − ${c.b}: balanced accuracy ${d.value >= 0 ? '+' : ''}${f(d.value)}${ci(d)}${
          d.p !== null && d.p !== undefined ? ` p=${d.p.toPrecision(2)}` : ''
        }${
          d.pHolm !== null && d.pHolm !== undefined
            ? ` (Holm ${d.pHolm.toPrecision(2)} over representation-vs-words)`
            : ''
        }`,
      );
    }
    for (const w of cm.sweep ?? [])
      lines.push(
        `  sweep ${w.point}: probe ${
          w.balancedAccuracy
            ? `balanced ${f(w.balancedAccuracy.value)}${nul(w.balancedAccuracy)}${p(w.balancedAccuracy)}, `
            : ''
        }accuracy ${f(w.probeAccuracy)}`,
      );
    for (const n of cm.notes ?? []) lines.push(`  note: ${n}`);
    if (res.outDir) lines.push(`wrote ${res.outDir}`);
    process.stdout.write(lines.join('\n') + '\n');
  }
  return 0;
}

/** --class-weight: 'balanced' or absent. */
function classWeightOption(v: string | undefined): 'balanced' | null | undefined {
  if (v === undefined) return undefined;
  if (v === 'none') return null;
  if (v !== 'balanced')
    throw new UsageError(`--class-weight ${v}: the class weighting is 'balanced' (the default) or 'none'`,
      'use --class-weight balanced or --class-weight none');
  return 'balanced';
}

/** --learning-rate: auto, per-phase or a positive number. */
function learningRateOption(v: string | undefined): number | 'auto' | 'per-phase' | undefined {
  if (v === undefined || v === 'auto' || v === 'per-phase') return v;
  const n = /^[\d.]/.test(v) ? parseNumber(v, '--learning-rate', 0) : NaN;
  if (!(n > 0))
    throw new UsageError(`--learning-rate must be auto, per-phase or a positive number, got ${JSON.stringify(v)}`);
  return n;
}

/** --neighbours: auto, exact or approximate. */
function neighboursOption(v: string | undefined): 'auto' | 'exact' | 'approximate' | undefined {
  if (v === undefined || v === 'auto' || v === 'exact' || v === 'approximate') return v;
  throw new UsageError(`--neighbours must be auto, exact or approximate, got ${JSON.stringify(v)}`);
}

/** --tsne-method: auto, bh or fft. */
function tsneMethodOption(v: string | undefined): TsneMethod | undefined {
  if (v === undefined) return undefined;
  if (v === 'auto' || v === 'bh' || v === 'fft') return v;
  throw new UsageError(`--tsne-method must be auto, bh or fft, got ${JSON.stringify(v)}`);
}
