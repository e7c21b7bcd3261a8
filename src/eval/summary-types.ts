/**
 * The shapes of DIR/summary.json (computed in summary.ts). Types only, importing nothing: the
 * report's page script reads them too (src/report/types.ts).
 */
export interface Accuracy {
  n: number;
  correct: number;
  /** In [0, 1]. */
  accuracy: number;
  ci95: [number, number] | null;
  chance: number;
}

export interface AccuracyRow extends Accuracy {
  key: string;
}

export interface AccuracyTable {
  /** 'language', 'aspect', 'ability', 'label:FIELD', 'category', 'group'. */
  by: string;
  rows: AccuracyRow[];
}

export interface PositionBias {
  /** Options per prompt. */
  k: number;
  prompts: number;
  /** Share of prompts whose pick is each slot. */
  pickRate: number[];
  /** Share of prompts whose correct answer sits at each slot (null for GAE). */
  answerRate: number[] | null;
}

export interface ItemSummary {
  task: 'iae' | 'mcq';
  /** Items scored (skipped ones are not counted anywhere else). */
  items: number;
  /** Ids of items not scored because their prompt is longer than --max-tokens. */
  skipped: string[];
  /** Voted accuracy, every item once. */
  overall: Accuracy;
  /** Mean over abilities of their accuracy (IAE). */
  macro: Accuracy | null;
  macroByLanguage: Record<string, Accuracy>;
  /** Accuracy of single shuffles before the vote. */
  unvoted: Accuracy;
  tables: AccuracyTable[];
  positionBias: PositionBias[];
  letterMass: { mean: number; min: number };
}

export interface GaeSummary {
  trees: number;
  /** Episodes that reached an ending (the success rates' denominator). */
  ended: number;
  /** Episodes that stopped at a node without choices (left out, as run_gae.py leaves them). */
  stuck: string[];
  /** Walks stopped at a decision whose prompt is longer than --max-tokens (left out as well). */
  skipped: string[];
  /** Decisions the model made (records). */
  decisions: number;
  overall: Accuracy;
  /** Mean over world categories of their success rates. */
  macro: Accuracy;
  macroByLanguage: Record<string, Accuracy>;
  tables: AccuracyTable[];
  positionBias: PositionBias[];
  letterMass: { mean: number; min: number };
}

export interface EvalSummary {
  format: 'lobes-eval-summary';
  bootstrap: { resamples: number; seed: number };
  iae?: ItemSummary;
  mcq?: ItemSummary;
  gae?: GaeSummary;
  /** With --scoring cloze: acc, acc_norm, acc_bytes (and acc_mutual_info) per task, exact CIs (summary-cloze.ts). */
  cloze?: ClozeSummary;
}

export interface ClozeMetric {
  n: number;
  correct: number;
  accuracy: number;
  /** Exact (Clopper–Pearson) 95% interval. */
  ci95: [number, number] | null;
  chance: number;
}

export interface ClozeTaskSummary {
  items: number;
  acc: ClozeMetric;
  acc_norm: ClozeMetric;
  acc_bytes: ClozeMetric;
  acc_mutual_info: ClozeMetric | null;
  /** Share of items whose correct option is the greedy continuation. */
  exactMatch: number;
  /** Mean tokens per option continuation. */
  meanTokens: number;
}

/** Cloze summaries by task ('iae', 'mcq'); absent when no record was scored by cloze. */
export type ClozeSummary = Partial<Record<'iae' | 'mcq', ClozeTaskSummary>>;
