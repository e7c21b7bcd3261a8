/**
 * The data a report page carries, as JSON in <script type="application/json" id="lobes-data">.
 * Node builds it (payload.ts, compare.ts, html.ts) and the page script reads it
 * (client/, type-checked against these declarations by client/tsconfig.json). So this file
 * holds types only and imports nothing that needs Node: the page script's typecheck fails if it does.
 *
 * Neuron regions are stored as bitsets (base64) over one flat block index space per run:
 * projection p, layer slot l, block k (row-major in W[d_out, d_in] blocks) sits at
 *   offset[p] + l * blocks[p] + k.
 */
import type { WandaPairMetrics, WandaMetrics, WandaSettings } from '../wanda/types.js';
import type { ClusterMetrics, ClusterSettings } from '../cluster/types.js';
import type { Keyword, ShareTable, MeanCI } from '../attend/types.js';
import type { EvalSummary } from '../eval/summary-types.js';
import type { PaperReference } from '../eval/reference.js';

/** The whole page's data. */
export interface PagePayload {
  title: string;
  generatedBy: string;
  runs: RunPayload[];
  comparison: Comparison | null;
  /** Ids of the sections to show (absent: every section); a page of `lobes attend` results shows attention and provenance. */
  sections?: string[];
}

export interface ScatterPayload {
  groups: string[];
  /** Group index per point. */
  g: number[];
  x: number[];
  y: number[];
  /** Hover text per point, already escaped for Plotly's text renderer. */
  hover: string[];
  by: string;
  /** Every other label axis the map can be coloured by: its values and each point's value index. */
  axes?: { axis: string; values: string[]; v: number[] }[];
  /** How well the map's neighbourhoods predict each axis, `by` included (islands.ts). */
  fits?: AxisFit[];
}

/** How well the map's neighbourhoods predict one label axis (src/report/islands.ts). */
export interface AxisFit {
  axis: string;
  classes: number;
  /** Points measured (all, or the sample). */
  n: number;
  /** Balanced accuracy of the vote of each point's k nearest points in the 2-D map. */
  balancedAccuracy: number;
  /** 1/C. */
  chance: number;
  /** (BA − 1/C) / (1 − 1/C): 0 at chance, 1 when neighbours always agree. */
  adjusted: number;
  nullMean: number;
  nullBand: [number, number];
  p: number;
}

export interface WandaPayload {
  by: string;
  groups: string[];
  /** Projection names in display order (gate, up, down, then any others). */
  projs: string[];
  /** Layer numbers in display order (one heatmap row each). */
  layers: number[];
  /** Per projection: block grid and flat offset. */
  grid: { rowBlocks: number; colBlocks: number; blocks: number; offset: number }[];
  /** Total bits in one set. */
  total: number;
  /** Bitset of (projection, layer) slots that have a matrix; slot index p * layers.length + l. */
  present: string;
  /** Per group: importance percentile bytes (base64), or null when pooled scores are absent. */
  pct: Record<string, string> | null;
  /** Per group: the region bitset. */
  regions: Record<string, string>;
  pairs: { a: string; b: string; ab: string; ba: string; nAB: number; nBA: number; metrics: WandaPairMetrics | null }[];
  metrics: WandaMetrics | null;
  settings: WandaSettings;
}

export interface RunPayload {
  name: string;
  /** 'A' or 'B' on a comparison page: the short name in figure legends. */
  tag?: string;
  randomModel: boolean;
  /** The random-weights control this run was extracted through, in words (null: none). */
  control: string | null;
  /** The page's first lines for this run: which numbers beat chance and by how much (src/report/verdict.ts). */
  summary: string[];
  /** The page's first table: the run's own label axis first, then any other axis the run was analysed by (src/report/verdict.ts). */
  verdicts?: VerdictTable[];
  provenance: [string, string][];
  scatter: ScatterPayload | null;
  cluster: { metrics: ClusterMetrics | null; settings: ClusterSettings | null } | null;
  wanda: WandaPayload | null;
  /** `lobes attend` results shown with the run (RUN/attend, or the page of an attend folder). */
  attend?: AttendPayload | null;
  /** The run's benchmark evaluation (lobes eval), when one is linked to it. */
  eval?: EvalPayload | null;
  /** `lobes ablate` results (report --ablate-dir), the effect matrix against its null (src/report/ablate.ts). */
  ablate?: AblatePayload | null;
}

/** One item of the attention section: its prompt, words with weights, parts and top words. */
export interface AttendItemPayload {
  id: string;
  correct: boolean | null;
  prompt: string;
  /** Part names (index into AttendPayload.partNames) and spans [start, end) of the prompt. */
  parts: [number, number, number][];
  /** Words: start, end, weight, part index, content (1/0), one array each. */
  ws: number[];
  we: number[];
  ww: number[];
  wp: number[];
  wc: number[];
  /** Indices into the word arrays of the top words, heaviest first. */
  top: number[];
  /** Shares of the content parts (or option roles when known). */
  share: Record<string, number>;
  /** Option part → role ('correct', 'picked', 'other'). */
  roles?: Record<string, string>;
}

export interface AttendPayload {
  /** Where the results came from, e.g. "RUN/attend". */
  dir: string;
  /** The file holding every item (the page shows the first ones). */
  itemsFile: string;
  model: string;
  attention: string;
  layers: number[];
  heads: number | null;
  position: string;
  top: number;
  counts: { items: number; right: number; wrong: number; unscored: number };
  nonContentMass: MeanCI;
  parts: ShareTable;
  roles: ShareTable | null;
  keywords: { all: Keyword[]; right: Keyword[]; wrong: Keyword[] };
  partNames: string[];
  /** The items shown (the first ones, up to a limit). */
  items: AttendItemPayload[];
  /** Items in the results but not in the page (the limit). */
  omitted: number;
}

/** A benchmark evaluation as the report shows it. */
export interface EvalPayload {
  /** The evaluation folder. */
  dir: string;
  model: string;
  dataset: string;
  /** Shuffles, seed, reasoning, --limit, prompts and tokens, in words. */
  settings: string;
  summary: EvalSummary;
  /** Per task: accuracy with its CI against chance and the scoring (src/eval/headline.ts). */
  headline?: string[];
  /** "letter accuracy means little here: …" when one letter takes over the picks. */
  warnings?: string[];
  /** Published results shown as labelled reference lines (never as this model's numbers). */
  reference: { source: string; rows: PaperReference[] };
}

/** One region × label cell of an ablation: the mean change of log-likelihood and its random-region null. */
export interface AblateCellPayload {
  /** "A", or "A∖B" for A's blocks that are not B's. */
  region: string;
  label: string;
  n: number;
  /** Mean log-likelihood before the ablation. */
  before: number;
  /** Mean change (after − before) with its 95% CI. */
  delta: number;
  ci: [number, number];
  /** Mean change of the K random regions of the same size, and their 2.5–97.5% band. */
  nullMean: number;
  nullBand: [number, number];
  /** delta − nullMean: the change beyond what random regions of the same size do. */
  excess: number;
  p: number;
  /** p is the permutation floor 1/(K+1). */
  atFloor: boolean;
  /** The prediction-interval t test against the random regions, and Holm over the run's cells (null: not in the summary, or K < 3). */
  pT: number | null;
  pTHolm: number | null;
}

/** Whether ablating a region hurts its target label's items more than the others' (contrast), against the null. */
export interface AblateSpecificityPayload {
  region: string;
  target: string;
  contrast: number;
  ci: [number, number];
  nullMean: number;
  nullBand: [number, number];
  p: number;
  pHolm: number;
  atFloor: boolean;
  pT: number | null;
  pTHolm: number | null;
  /** Mean cost of the target's items / the others' (null: not costs, or not in the summary), the random regions' geometric mean, and the prediction t test on the logs. */
  ratio: number | null;
  nullRatio: number | null;
  ratioP: number | null;
  ratioPHolm: number | null;
}

export interface AblatePayload {
  /** The ablate folder. */
  dir: string;
  /** The label axis of the columns. */
  by: string;
  labels: string[];
  /** K, the number of random regions (the null). */
  random: number;
  unit: string;
  /** 1/(K+1): the smallest p K random regions can give. */
  floor: number;
  regions: string[];
  /** Blocks zeroed per region (same order as regions). */
  blocks: number[];
  cells: AblateCellPayload[];
  specificity: AblateSpecificityPayload[];
  /** With lobes ablate --task iae: accuracy per region × label (null otherwise). */
  iae?: AblateIaePayload | null;
  /** The other baselines the ablation ran (--top, --magnitude, --shuffled, --fit-split), each null when not run. */
  baselines?: AblateBaselinesPayload | null;
}

/** A region's specificity beside one baseline: its cost ratio (own items / the others') and the baseline's, with the rank p. */
export interface AblateBaselineRow {
  region: string;
  blocks: number | null;
  /** The region's own cost ratio, and the baseline's (geometric mean over its regions where it has several). */
  ratio: number | null;
  baseline: number | null;
  /** One-sided p of the region against the baseline (its kind named by the table), and its Holm p; null where not defined. */
  p: number | null;
  pHolm: number | null;
}

/** The family a table's Holm p was adjusted in, as the summary declares it (absent for summaries written before their families). */
export interface PayloadFamily {
  name: string;
  size: number;
}

export interface AblateBaselinesPayload {
  /** --top: per dose, each region's ratio against its own random regions of its size. */
  doses: { top: number; stored: boolean; rows: AblateBaselineRow[]; family?: PayloadFamily }[];
  /** --magnitude: each region against the |W| region of its size: signed-rank p on the own items and on the others. */
  magnitude: { region: string; blocks: number; ratio: number | null; baseline: number | null; pOwn: number | null;
    pOthers: number | null }[];
  /** --shuffled S: each region's ratio against the S regions of shuffled labels (rank p, floor 1/(S+1)). */
  shuffled: { shuffles: number; floor: number; rows: AblateBaselineRow[]; family?: PayloadFamily } | null;
  /** --fit-split: the halves, and each fitted region's Jaccard overlap with the stored one. */
  fitSplit: { seed: number; fit: number; test: number; regions: { name: string; blocks: number; jaccard: number }[] }
    | null;
}

/** An IAE ablation's accuracy table (src/ablate/iae.ts). */
export interface AblateIaePayload {
  scoring: string;
  metric: string;
  /** The exact test against chance the model passed before ablating. */
  chance: { n: number; correct: number; accuracy: number; chance: number; p: number; alpha: number };
  /** Items not scored (prompt longer than the model's context). */
  skipped: number;
  rows: {
    region: string;
    label: string;
    n: number;
    before: number;
    after: number;
    change: number;
    ci: [number, number];
    lost: number;
    gained: number;
    pMcNemar: number;
    nullMean: number;
    p: number;
    pHolm: number;
    atFloor: boolean;
  }[];
}

export interface ComparisonRow {
  section: string;
  metric: string;
  a: number | null;
  b: number | null;
  /** The difference named by Comparison.diffLabel (b − a, or trained − control). */
  diff: number | null;
  /** 95% CI of that difference (how it was made is in `note`), or null. */
  ci: [number, number] | null;
  /** Which run is ahead for this metric, in words. */
  ahead: string;
  note?: string;
  /** A detail row (per class, per pair): the report folds these away. */
  detail?: boolean;
}

export interface Comparison {
  runs: [string, string];
  rows: ComparisonRow[];
  notes: string[];
  /** What `diff` is: 'B − A' (run B minus run A, in the order given). */
  diffLabel?: string;
  /** The comparison's first line: which run is A and which is B, and that every difference is B − A. */
  order?: string;
  /** The comparison's first lines: the headline differences in words. */
  summary?: string[];
  /** The page's headline: the differences whose 95% CI excludes 0 and lies farthest from it (src/report/compare.ts). */
  headline?: string[];
}

/** One row of a verdict table: the question an analysis answers, its numbers as printed, and its verdict (src/report/verdict.ts). */
export interface VerdictTableRow {
  /** The question in words, with the analysis in parentheses. */
  question: string;
  /** Id of the page section that shows the analysis. */
  anchor: string;
  /** The value with its 95% CI, as printed. */
  value: string;
  /** The chance level ('' where the null is the only reference). */
  chance: string;
  /** The null's mean and its 2.5–97.5% band ('' without a null). */
  nul: string;
  /** The deciding p, adjusted within its family, with the family named ('' without a p). */
  p: string;
  /** The verdict in a word or three: "above chance", "at chance", "not testable at R = 49", "degenerate null", "untested". */
  verdict: string;
  status: 'pass' | 'fail' | 'not-testable' | 'degenerate' | 'untested';
}

/** The verdicts of one label axis's analyses, one row per question. */
export interface VerdictTable {
  /** The label axis the analyses are of. */
  axis: string;
  rows: VerdictTableRow[];
}
