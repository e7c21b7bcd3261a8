/**
 * runCluster's options (ClusterOptions), grouped by what they are for, and the flat form its
 * stages read (StageOptions):
 *  - `seed`: the one seed of the PCA, the t-SNE, the metric subsample, the bootstrap and the
 *    permutations (default 0), so it stands beside the groups;
 *  - `input`: what is analysed: the capture point, the label axis (or a matrix's labels file)
 *    and the axis of the items' groups;
 *  - `tsne`: the map: the PCA its neighbourhoods are built in, perplexity, repulsion, neighbour
 *    search, step rule and iterations;
 *  - `probe`: the linear probe: its PCA, folds, CV repeats, C, class weights, and the sweep of it
 *    over the layers;
 *  - `metrics`: the metric subsample, kNN's k, and the bootstrap and permutation counts of the
 *    CIs and nulls;
 *  - `baselines`: the token baselines and the length control of a run, and the model folder
 *    they read;
 *  - `output`: where the result is written, or that nothing is;
 *  - `execution`: threads, progress and cancellation, none of which changes a number.
 *
 * The flat form of earlier versions (`{ by, perplexity, bootstrap, … }`) is refused in one line
 * naming each flat key's new place (as src/tsne/options.ts refuses TsneOptions's).
 */
import { UsageError } from '../util/errors.js';
import type { JobIO } from '../util/jobio.js';
import type { TsneMethod } from '../tsne/index.js';

/** What is analysed. */
export interface ClusterInputOptions {
  /** Labels file (one per line) for a matrix input. */
  labels?: string;
  /** Capture point of a run (default final.hidden); for a .safetensors matrix, the tensor name. */
  point?: string;
  /** Label axis of a run (default aspect). */
  by?: string;
  /**
   * A label axis of the run holding each item's group (e.g. its SocialEval world tree): the
   * probes' folds keep groups whole (stratified group folds, the inner folds too), and their
   * bootstraps and paired comparisons resample groups, then items within them. Default: the axis
   * item_group when the run has one (a dataset spec's group=FIELD), unless it is `by`; null: none.
   */
  group?: string | null;
}

/** The t-SNE map (src/tsne). */
export interface ClusterTsneOptions {
  /** PCA dimensions the t-SNE neighbourhoods are built in (default 0: the original space). */
  pca?: number;
  /** Effective number of neighbours (default 30). */
  perplexity?: number;
  /** Barnes–Hut opening angle (default 0.5; 0: the exact gradient). */
  theta?: number;
  /** Repulsion: 'auto' (default), 'bh' (Barnes–Hut) or 'fft' (FFT interpolation). */
  method?: TsneMethod;
  /** Neighbour search: 'auto' (default; exact at present), 'exact' or 'approximate'. */
  neighbours?: 'exact' | 'approximate' | 'auto';
  /** Step rule: 'auto' (scikit-learn's, default), 'per-phase' (openTSNE's) or a number. */
  learningRate?: number | 'auto' | 'per-phase';
  /** Iterations including early exaggeration (default 1000). */
  iterations?: number;
  /** Factor on P during early exaggeration (default 12). */
  earlyExaggeration?: number;
}

/** The linear probe (src/cluster/probecv.ts). */
export interface ClusterProbeOptions {
  /** PCA components the probe is fitted on (default 50; 0 = every dimension). */
  pca?: number;
  /** Folds of its cross-validation (default 5). */
  folds?: number;
  /** Repeats of its k-fold CV with different fold seeds (default 5). */
  repeats?: number;
  /** Its C: a number, or 'nested' (chosen inside each training fold over PROBE_C_GRID; the default). */
  c?: number | 'nested';
  /** Class weights: 'balanced' (n / (K · n_c), the default) or null (none). */
  classWeight?: 'balanced' | null;
  /** The probe at every layers.{i}.resid_out (run input only; layers.{i}.resid_out.mean when `input.point` is a mean-pooled point). */
  sweep?: boolean;
}

/** The metric sample and the resampling of the CIs and nulls. */
export interface ClusterMetricsOptions {
  /** Metrics on at most this many points (seeded stratified subsample; default 2000). */
  points?: number;
  /** Neighbours of the kNN classifier (default 10). */
  knnK?: number;
  /** Bootstrap resamples for the CIs (default 1000). */
  bootstrap?: number;
  /** Label permutations for the silhouette and kNN p-values (default 200). */
  permutations?: number;
  /**
   * Permutations for the probe p-value (default: what the verdict's family of classifiers needs,
   * permutationsForFamily, at most 100 and at most `permutations` when that is given).
   */
  probePermutations?: number;
  /** Label permutations per layer of the sweep (default what the layers' family needs, at most min(probePermutations, 20): past that the layers are read on z's normal approximation). */
  sweepPermutations?: number;
}

/** What a run's representation is compared with (src/cluster/baseline.ts). */
export interface ClusterBaselineOptions {
  /** Probes on the tokens alone for a run input (default true); false skips the length control too. */
  tokens?: boolean;
  /** The length control beside the token baselines (default true). */
  lengthControl?: boolean;
  /** The model folder for the token baselines when the run's recorded one has moved (checked by hash). */
  model?: string;
}

/** Where the result goes. */
export interface ClusterOutputOptions {
  /** Output directory (default RUN/cluster, or NAME.cluster beside a matrix). */
  dir?: string;
  /** Write nothing (library use). */
  noWrite?: boolean;
}

/** How the work runs; nothing here changes a number. */
export interface ClusterExecutionOptions {
  /** Worker threads (default: all cores). Results do not depend on it. */
  threads?: number;
  /** Print no progress. */
  quiet?: boolean;
  /** Cancels between stages (PCA, t-SNE, baselines, controls, sweep): a LobesError with code E_ABORTED; nothing is written. */
  signal?: AbortSignal;
  /** Where the run reports: log lines, warnings, progress events and the cancelling signal (src/util/jobio.ts; default stderr). `quiet` and `signal` above are its older spellings. */
  io?: Partial<JobIO>;
}

/** runCluster's options: see the groups above. */
export interface ClusterOptions {
  /** Seed of the PCA, t-SNE, subsampling, bootstrap and permutations (default 0). */
  seed?: number;
  input?: ClusterInputOptions;
  tsne?: ClusterTsneOptions;
  probe?: ClusterProbeOptions;
  metrics?: ClusterMetricsOptions;
  baselines?: ClusterBaselineOptions;
  output?: ClusterOutputOptions;
  execution?: ClusterExecutionOptions;
}

/** The options as runCluster's stages read them: ClusterOptions laid flat (the names of earlier versions). */
export interface StageOptions {
  labels?: string;
  point?: string;
  by?: string;
  group?: string | null;
  seed?: number;
  pca?: number;
  perplexity?: number;
  theta?: number;
  tsneMethod?: TsneMethod;
  neighbours?: 'exact' | 'approximate' | 'auto';
  learningRate?: number | 'auto' | 'per-phase';
  iterations?: number;
  earlyExaggeration?: number;
  probePca?: number;
  folds?: number;
  probeRepeats?: number;
  probeC?: number | 'nested';
  classWeight?: 'balanced' | null;
  sweep?: boolean;
  maxMetricPoints?: number;
  knnK?: number;
  bootstrap?: number;
  permutations?: number;
  probePermutations?: number;
  sweepPermutations?: number;
  baselines?: boolean;
  lengthControl?: boolean;
  model?: string;
  out?: string;
  noWrite?: boolean;
  threads?: number;
  quiet?: boolean;
  signal?: AbortSignal;
  io?: Partial<JobIO>;
}

/** Each group's keys and the flat key each one was (the refusal's message and flatOptions). */
const GROUPS = {
  input: { labels: 'labels', point: 'point', by: 'by', group: 'group' },
  tsne: { pca: 'pca', perplexity: 'perplexity', theta: 'theta', method: 'tsneMethod', neighbours: 'neighbours',
    learningRate: 'learningRate', iterations: 'iterations', earlyExaggeration: 'earlyExaggeration' },
  probe: { pca: 'probePca', folds: 'folds', repeats: 'probeRepeats', c: 'probeC', classWeight: 'classWeight',
    sweep: 'sweep' },
  metrics: { points: 'maxMetricPoints', knnK: 'knnK', bootstrap: 'bootstrap', permutations: 'permutations',
    probePermutations: 'probePermutations', sweepPermutations: 'sweepPermutations' },
  baselines: { tokens: 'baselines', lengthControl: 'lengthControl', model: 'model' },
  output: { dir: 'out', noWrite: 'noWrite' },
  execution: { threads: 'threads', quiet: 'quiet', signal: 'signal', io: 'io' },
} as const satisfies { [G in keyof ClusterOptions]?: Record<keyof NonNullable<ClusterOptions[G]>, keyof StageOptions> };

type Group = keyof typeof GROUPS;
const TOP = ['seed', ...Object.keys(GROUPS)];

/** Where each key of the flat form went (`baselines`, a group now, was the boolean `baselines.tokens`). */
export const MOVED: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(GROUPS).flatMap(([g, keys]) => Object.entries(keys).map(([k, flat]) => [flat, `${g}.${k}`])),
);

function movedTo(key: string): string | undefined {
  return Object.hasOwn(MOVED, key) ? MOVED[key] : undefined;
}

/**
 * Check the grouped options and lay them flat for the stages. The flat form, an unknown key (of
 * the options or of a group) and a group that is not an object are refused in one UsageError
 * naming every such key (and, for a flat one, its new place).
 */
export function flatOptions(options: ClusterOptions): StageOptions {
  const wrong: string[] = [];
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const v = o[key];
    if (key === 'seed') continue;
    const keys = Object.hasOwn(GROUPS, key) ? (GROUPS as Record<string, Record<string, string>>)[key] : undefined;
    // `baselines` was a boolean: a group now
    if (keys && (v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v)))) {
      for (const k of Object.keys(v ?? {})) {
        if (Object.hasOwn(keys, k)) continue;
        const place = k === 'seed' ? 'seed' : movedTo(k);
        wrong.push(
          place
            ? `${key}.${k} belongs at ${place}`
            : `${key}.${k} is unknown (${key} has ${Object.keys(keys).join(', ')})`,
        );
      }
    } else if (movedTo(key)) wrong.push(`${key} is now ${movedTo(key)}`);
    else if (keys) wrong.push(`${key} must be an object (${Object.keys(keys).join(', ')})`);
    else wrong.push(`${key} is unknown`);
  }
  if (wrong.length)
    throw new UsageError(`cluster options: ${wrong.join('; ')} (ClusterOptions has ${TOP.join(', ')})`,
      'see ClusterOptions in docs/cluster.md');
  const flat: Record<string, unknown> = { seed: options.seed };
  for (const g of Object.keys(GROUPS) as Group[]) {
    const given = (options[g] ?? {}) as Record<string, unknown>;
    for (const [k, f] of Object.entries(GROUPS[g])) flat[f] = given[k];
  }
  return flat as StageOptions;
}
