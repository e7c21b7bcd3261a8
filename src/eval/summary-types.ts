/**
 * The shapes of DIR/summary.json (computed in summary.ts). Types only, importing types only (the
 * family record's shape, src/util/families.ts): the report's page script reads them too
 * (src/report/types.ts).
 */
import type { FamilyRecord } from '../util/families.js';

export interface Accuracy {
  n: number;
  correct: number;
  /** In [0, 1]. */
  accuracy: number;
  /** The 95% interval: Clopper–Pearson for counts of 0/1 outcomes, a percentile bootstrap over units otherwise (ciMethod). */
  ci95: [number, number] | null;
  /** How ci95 was computed (absent in older summaries: bootstrap). */
  ciMethod?: 'clopper-pearson' | 'bootstrap';
  /** Wilson score 95% interval of correct / n (0/1 outcomes). */
  wilson95?: [number, number] | null;
  /** The percentile bootstrap 95% interval over units (kept beside the exact one; too narrow at small n). */
  bootstrap95?: [number, number] | null;
  chance: number;
  /**
   * Exact one-sided test against chance: P(at least `correct` successes) when every unit
   * succeeds independently with its own chance (a Poisson-binomial; a binomial when the
   * chances are equal). Null for figures that are not counts (means over groups, shuffles).
   */
  pChance?: number | null;
  /** pChance adjusted by Holm within its table (the rows of one breakdown: the table's `family`). */
  pChanceHolm?: number | null;
}

export interface AccuracyRow extends Accuracy {
  key: string;
}

export interface AccuracyTable {
  /** 'language', 'aspect', 'ability', 'label:FIELD', 'category', 'group'. */
  by: string;
  rows: AccuracyRow[];
  /** The family its rows' pChanceHolm was adjusted in (`accuracy by BY`, its members the rows' keys; absent in summaries written before it). */
  family?: FamilyRecord;
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
  /** Mean over abilities of their accuracy (IAE); null when an ability has too few items (macroOmitted). */
  macro: Accuracy | null;
  /** Why the mean over abilities is not given: the abilities with fewer than MIN_MACRO_CELL items. */
  macroOmitted?: string | null;
  macroByLanguage: Record<string, Accuracy>;
  /** Accuracy of single shuffles before the vote. */
  unvoted: Accuracy;
  tables: AccuracyTable[];
  positionBias: PositionBias[];
  letterMass: { mean: number; min: number };
  /** The families of the section's tests (each table's family, in table order; absent in summaries written before them). */
  declaredFamilies?: FamilyRecord[];
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
  /** Mean over world categories of their success rates; null when a category has too few trees (macroOmitted). */
  macro: Accuracy | null;
  macroOmitted?: string | null;
  macroByLanguage: Record<string, Accuracy>;
  tables: AccuracyTable[];
  positionBias: PositionBias[];
  letterMass: { mean: number; min: number };
  /** The families of the section's tests (each table's family, in table order; absent in summaries written before them). */
  declaredFamilies?: FamilyRecord[];
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
