/**
 * What `lobes wanda` writes to RUN/wanda/ (the report reads these; keep in sync with docs/run-format.md).
 *
 *   wanda/settings.json    WandaSettings
 *   wanda/pooled.safetensors   one F32 tensor per (group, matrix), named `${group}|${matrix}`,
 *                              shape [rowBlocks, colBlocks] in the W[d_out, d_in] convention
 *   wanda/regions.json     WandaRegions
 *   wanda/metrics.json     WandaMetrics        (and metrics.csv: one row per pair x metric)
 */

import type { FamilyRecord } from '../util/families.js';
import type { AnalysisProvenance } from '../store/types.js';
import type { PermutationPlan, Verdict } from '../util/resolution.js';

export interface WandaSettings {
  by: string;
  groups: string[];
  /** [rows, cols] block size in W[d_out, d_in]. */
  block: [number, number];
  /**
   * Whether the block size leaves every matrix enough blocks for regions to mean something
   * (src/wanda/blocksize.ts): the rule's thresholds, whether `--block auto` chose the size, the
   * size auto would choose when this one is too coarse, and the coarse matrices per projection.
   */
  blockCheck?: {
    minShortSide: number;
    minSelected: number;
    auto: boolean;
    suggested: number | null;
    coarse: { proj: string; rowBlocks: number; colBlocks: number; selected: number; matrices: number }[];
  };
  top: { kind: 'fraction' | 'count'; value: number; scope: 'matrix' | 'layer' | 'global' };
  statistic: 'rms';
  permutations: number;
  /** How `permutations` was set for the largest family the report reads (the pairs' set differences; src/util/resolution.ts). */
  sizing?: PermutationPlan;
  seed: number;
  /** The weights scored: where, and each file read with its sha256. */
  weights: { source: 'onnx' | 'safetensors' | 'gguf'; path: string;
    files?: { name: string; bytes: number; sha256: string }[] };
  resolution: 'block' | 'weight';
  /** The run (identity), samples table and chunk files the analysis read (src/store/provenance.ts). */
  provenance?: AnalysisProvenance;
  /** Samples used (a value on `by`) and samples left out (an empty label, or a row a label overlay does not list: `leftOut` counts them by the value they read as, e.g. unevaluated). */
  samples?: { used: number; excluded: number; leftOut?: Record<string, number> };
  /**
   * The item groups the label null shuffled within (`--group`; by default the axis item_group,
   * SocialEval's world trees): the axis, the number of groups among the used samples, and how many
   * used samples could move (those in groups holding two labels or more).
   */
  group?: { axis: string; groups: number; null: 'within-groups'; exchangeable: number };
  lobesVersion?: string;
  createdAt?: string;
}

/** One scored matrix, e.g. name `layers.3.mlp.down_proj`. */
export interface WandaMatrix {
  name: string;
  layer: number;
  proj: string;
  /** The capture point providing its input, e.g. `layers.3.mlp.down_in`. */
  input: string;
  dOut: number;
  dIn: number;
  rowBlocks: number;
  colBlocks: number;
}

/** Block sets as sorted flat indices (row * colBlocks + col) per matrix name. */
export type BlockSet = Record<string, number[]>;

export interface WandaRegions {
  matrices: WandaMatrix[];
  /** Top blocks per group. */
  regions: Record<string, BlockSet>;
  /** Every unordered pair (a < b in `groups` order): A∖B and B∖A. */
  differences: { a: string; b: string; aMinusB: BlockSet; bMinusA: BlockSet }[];
}

/** A metric with its permutation null. */
export interface NullTested {
  value: number;
  /** Share of permutations with a value >= observed (one-sided, with +1 correction); null when R = 0. */
  p: number | null;
  /** Percentile of the observed value in the null distribution (0..100); null when R = 0. */
  percentile: number | null;
  nullMean: number | null;
  /** Share of permutations with a value <= observed (one-sided, +1 correction): the test for
   *  "smaller than chance", e.g. a Jaccard overlap lower than random groups give. Null when R = 0. */
  pLower?: number | null;
  /** (value − null mean) / null sd: how far beyond the null, readable even when p sits at its floor 1/(R + 1). */
  z?: number | null;
  /** p and pLower adjusted within their family (src/wanda/inference.ts): Holm (family-wise) and Benjamini–Hochberg (false discovery rate). */
  pHolm?: number | null;
  pBH?: number | null;
  pLowerHolm?: number | null;
  pLowerBH?: number | null;
  /** The verdict of p within its family, and of pLower (src/util/resolution.ts). */
  verdict?: Verdict;
  verdictLower?: Verdict;
}

/**
 * A block set against the random-placement null: the same number of blocks in each matrix,
 * placed uniformly at random (src/wanda/placement.ts).
 */
export interface SetPlacement {
  /** Blocks in the set. */
  size: number;
  /** The density a random set of these per-matrix sizes has (exact ratio of expectations). */
  randomDensity: number;
  /** density / randomDensity: the density normalised for the set's size (1 = as random; null when randomDensity is 0). */
  densityRatio: number | null;
  /** Density against random placements (p: denser than random). */
  density: NullTested;
  /** Component count against random placements (pLower: fewer components than random). */
  components: NullTested;
}

/** The per-channel activation RMS s_g tested directly, for one capture point (src/wanda/channels.ts). */
export interface WandaChannelTest {
  hook: string;
  layer: number;
  channels: number;
  /** Mean over channels of T_j = Σ_g (n_g/N)(s_g[j]/s[j] − 1)². */
  value: number;
  /** Against the label permutations; Holm and BH across the capture points. */
  p: number | null;
  z: number | null;
  nullMean: number | null;
  pHolm: number | null;
  pBH: number | null;
  /** The verdict of p within the capture points' family (src/util/resolution.ts). */
  verdict?: Verdict;
  /** Channels whose own permutation p passes Benjamini–Hochberg at 0.05 within this capture point. */
  channelsBH05: number | null;
  /** The channels with the largest T_j: their p, BH q, and the groups with the highest and lowest RMS (ratio high/low). */
  top: { channel: number; value: number; p: number | null; q: number | null; high: string; low: string;
    ratio: number | null }[];
  /** The capture point's per-channel BH family (`channels HOOK`), as the test hands it on: addInference moves it into metrics.declaredFamilies, so metrics.channels does not carry it. */
  family?: FamilyRecord;
}

export interface WandaPairMetrics {
  a: string;
  b: string;
  jaccard: NullTested;
  /** |A∖B| / |A| and |B∖A| / |B|. */
  isolationAB: NullTested;
  isolationBA: NullTested;
  sizeAminusB: number;
  sizeBminusA: number;
  /** Share of blocks in the difference whose 4-neighbours are also in it. */
  densityAminusB: NullTested;
  densityBminusA: NullTested;
  componentsAminusB: number;
  componentsBminusA: number;
  /** The component counts against the null (p: more components than chance; pLower: fewer). */
  componentsAminusBNull?: NullTested;
  componentsBminusANull?: NullTested;
  /** Difference sizes per layer and per projection. */
  byLayerAminusB: number[];
  byLayerBminusA: number[];
  byProjAminusB: Record<string, number>;
  byProjBminusA: Record<string, number>;
  /** A∖B and B∖A against the random-placement null (absent when R = 0). */
  placementAminusB?: SetPlacement;
  placementBminusA?: SetPlacement;
}

export interface WandaMetrics {
  groups: {
    group: string;
    n: number;
    regionSize: number;
    density: number;
    components: number;
    /** The group's region density and component count against the null. */
    densityNull?: NullTested;
    componentsNull?: NullTested;
    /** The region against the random-placement null. */
    placement?: SetPlacement;
  }[];
  pairs: WandaPairMetrics[];
  /** Number of label permutations behind every NullTested value (0: no null). */
  permutations?: number;
  /** 1 / (R + 1): the smallest p any permutation test here can give. */
  pFloor?: number | null;
  /**
   * The families the adjusted p-values are corrected within: a metric's values over the pairs
   * (both directions of A∖B and B∖A together), the groups' values, and the capture points.
   */
  families?: Record<string, number>;
  /** Every family the p-values above were adjusted in, as declared (src/util/families.ts: name, claim, size, members, corrections, α); each capture point's per-channel BH family `channels HOOK` (its members the channel indices) after the capture points' family. */
  declaredFamilies?: FamilyRecord[];
  /** The per-channel RMS test, per capture point (block resolution). */
  channels?: WandaChannelTest[];
  /** With --sweep: the findings at every block size × top fraction (src/wanda/sensitivity.ts). */
  sensitivity?: WandaSensitivityRow[];
  /** Plain-language notes on what the numbers are (e.g. why isolation is not a separate test). */
  notes?: string[];
  /** At --resolution weight: the same pair statistics counted over individual weights. */
  weightLevel?: WandaWeightPairMetrics[];
}

/** One configuration of the block-size × top-fraction sweep, summarised (counts after Holm at 0.05). */
export interface WandaSensitivityRow {
  block: number;
  top: number;
  /** Blocks in the first group's region. */
  selected: number;
  /** Whether the block-size rule finds the grid too coarse. */
  coarse: boolean;
  pairs: number;
  meanJaccard: number | null;
  /** Pairs whose Jaccard is below the label-permutation null (raw p ≤ 0.05, and after Holm). */
  jaccardBelowNull: number;
  jaccardBelowNullHolm: number;
  differences: number;
  /** Median over the differences of density / a random set's density. */
  medianDensityRatio: number | null;
  /** Differences denser than random placements of their size, after Holm. */
  denserThanRandomHolm: number;
  /** Differences denser than under shuffled labels, after Holm. */
  denserThanLabelNullHolm: number;
}

/** Pair statistics over individual weights (--resolution weight; top-k per matrix). */
export interface WandaWeightPairMetrics {
  a: string;
  b: string;
  /** Selected weights per group, summed over matrices. */
  sizeA: number;
  sizeB: number;
  jaccard: NullTested;
  isolationAB: NullTested;
  isolationBA: NullTested;
}
