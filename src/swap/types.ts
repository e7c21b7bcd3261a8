/**
 * The types of the question/response swap analysis (src/swap/swap.ts): what it reads (the swapped
 * samples' two labels, the capture points, the word features), its options, and what it gives
 * (SwapResult, as swap.json holds it: each point's probes, conditional tests and paired
 * differences, the word baselines, the conditional family and the random-weights control).
 */
import type { JobIOOptions } from '../util/jobio.js';
import type { Chance, ClassifierMetrics, DifferenceCI, MetricWithCI } from '../cluster/types.js';
import type { probeSettings } from '../cluster/probecv.js';
import type { ClusterPool } from '../cluster/pool.js';
import type { WordFeatures } from '../cluster/baseline.js';
import type { ScoreName } from '../cluster/scores.js';
import type { Exchangeability } from '../cluster/conditional.js';
import type { PermutationPlan } from '../util/resolution.js';
import type { FamilyRecord } from '../util/families.js';

/** One capture point of the analysis: how to read its rows. */
export interface SwapPointSource {
  name: string;
  layer: number | null;
  pool: 'last' | 'mean';
  dim: number;
  /** Its values [n, dim], one row per swapped sample in the order of the labels. */
  read: () => Promise<Float32Array | Float64Array>;
}

/** What the analysis reads: the swapped samples' two labels, the states, the word features. */
export interface SwapInput {
  question: string[];
  response: string[];
  points: SwapPointSource[];
  words: WordFeatures[];
  notes: string[];
  /**
   * Each swapped sample's group (the response's world tree, the axis item_group a `group=` spec
   * writes), or null: with groups the probes' folds keep groups whole, the bootstraps resample
   * groups, then items, and the nulls shuffle within what the groups allow (the conditional null
   * within the cells of the other label × group, src/cluster/conditional.ts).
   */
  groups?: string[] | null;
  /** The label axis the groups come from. */
  groupAxis?: string;
}

/** Its IO (`io`: log lines and progress) and the deprecated `quiet` (src/util/jobio.ts). */
export interface SwapOptions extends JobIOOptions {
  seed?: number;
  /** Bootstrap resamples of every CI (default 1000). */
  bootstrap?: number;
  /** Label permutations of each probe's plain null (default 20). */
  permutations?: number;
  /**
   * Permutations of each conditional null (default: sized to the family of points × labels,
   * at most CONDITIONAL_PERMUTATION_CAP; with `permutations` given and this not, the smaller of
   * the two, as cluster derives its probe's count).
   */
  conditionalPermutations?: number;
  probeRepeats?: number;
  probeC?: number | 'nested';
  /** In-fold PCA components of each block (default 50; 0: every dimension). */
  probePca?: number;
  folds?: number;
  classWeight?: 'balanced' | null;
  /** The word features of the incremental probe (default token-counts). */
  words?: string;
  pool?: ClusterPool | null;
  /** Ignore the input's groups (`--group none`). */
  ungrouped?: boolean;
}

/** Differences of the three scores, each with its paired-bootstrap CI and p. */
export type ScoreDifferences = Record<ScoreName, DifferenceCI>;

/** The family the conditional tests are adjusted in, as swap.json declares it. */
export interface SwapFamily extends Omit<FamilyRecord, 'family'> {
  family: 'conditional';
  /** Members with a p (the size Holm divides by); members without one stay out. */
  size: number;
  /** Every test of the family, `point:label`, in the order of `points`. */
  members: string[];
  /** Level of the verdicts. */
  alpha: number;
  /** Holm runs over the family once for each score. */
  scores: ScoreName[];
}

/**
 * One label's conditional test at one point: the probe's score against the null of its labels
 * shuffled within the strata of the other label.
 */
export interface ConditionalTest {
  /** The label held fixed: the shuffles stay within its values. */
  given: Label;
  /** Which items the shuffles can move. */
  exchangeable: Exchangeability;
  /** The probe's scores (the values of `probe`) against the conditional null, with Holm over the family and the verdict. */
  accuracy: MetricWithCI;
  balancedAccuracy: MetricWithCI;
  macroF1: MetricWithCI;
  /** Why there is no test (no stratum can shuffle, or no permutations were asked for). */
  untestable?: string;
}

/** One label's probe at one point, with its comparisons against the words. */
export interface SwapLabelResult {
  probe: ClassifierMetrics;
  /** The test of this label beyond the other (the conditional permutation null). */
  conditional: ConditionalTest;
  /** state − each word feature set, by name. */
  minusWords: Record<string, ScoreDifferences>;
  /** (words + state) − words, for the incremental word features. */
  incremental: ScoreDifferences | null;
  /** The combined probe's scores (no null). */
  combined: ClassifierMetrics | null;
}

export interface SwapPointResult {
  point: string;
  layer: number | null;
  pool: 'last' | 'mean';
  question: SwapLabelResult;
  response: SwapLabelResult;
  /** score(question's aspect) − score(response's aspect), paired over items and repeats. */
  questionMinusResponse: ScoreDifferences;
}

export interface SwapWordsResult {
  name: string;
  description: string;
  dim: number;
  question: ClassifierMetrics;
  response: ClassifierMetrics;
  questionMinusResponse: ScoreDifferences;
}

export interface SwapResult {
  /** Swapped samples analysed. */
  n: number;
  classes: string[];
  chance: { question: Chance; response: Chance };
  /** The best score of one label predicted from the other alone (src/data/swap.ts crossChance). */
  crossChance: { questionFromResponse: { accuracy: number; balancedAccuracy: number };
    responseFromQuestion: { accuracy: number; balancedAccuracy: number } };
  words: SwapWordsResult[];
  incrementalWords: string | null;
  points: SwapPointResult[];
  /** The multiplicity family of the conditional tests. */
  families: SwapFamily[];
  /** The same probes and conditional tests on a random-weights control run of the same samples (`--control`). */
  control?: SwapControlResult;
  notes: string[];
  settings: { seed: number; bootstrap: number; permutations: number; conditionalPermutations: PermutationPlan;
    probe: ReturnType<typeof probeSettings>; probePca: number; group?: SwapGrouping };
}

/** How a grouped swap analysis used its groups (settings.group). */
export interface SwapGrouping {
  axis: string;
  groups: number;
  /** The conditional nulls shuffle within the cells of the other label × group. */
  conditional: 'within-groups';
}

export type Label = 'question' | 'response';

/** The analysis of a random-weights control run beside the trained run's (no word features: they are the same texts). */
export interface SwapControlResult {
  /** The control run's folder and identity. */
  run: string;
  identity: string | null;
  /** The control's draw (its manifest's model.control). */
  seed: number;
  scheme: string;
  points: SwapPointResult[];
  /** Its own family: the control's tests are adjusted among themselves. */
  families: SwapFamily[];
  conditionalPermutations: PermutationPlan;
}
