/**
 * What `lobes attend` writes (docs/attend.md): DIR/items.jsonl, one AttendItem per line in
 * input order, and DIR/summary.json, an AttendSummary (the folder's manifest, attend.json, is
 * in store.ts).
 */
import type { PromptPart, UnitKind } from './words.js';
import type { InterventionRecord, ModelFile, ModelSourceRecord } from '../store/types.js';
import type { CotRecord } from '../eval/types.js';

export type { PromptPart } from './words.js';

/** Where an item's attention is read from. */
export type AttendPosition = 'answer' | 'last';

/** A word of an item with its attention. */
export interface AttendWord {
  text: string;
  /** Characters [start, end) of the item's prompt. */
  start: number;
  end: number;
  kind: UnitKind;
  part: string;
  weight: number;
  /** False for template text and special tokens (kept for display, left out of keywords). */
  content: boolean;
}

/** One item of DIR/items.jsonl. */
export interface AttendItem {
  id: string;
  /** Position in the input (dataset order, or record order of an evaluation). */
  index: number;
  labels: Record<string, string>;
  /** Right or wrong under `lobes eval` (null when unknown or not scored). */
  correct: boolean | null;
  /** The text the model read, exactly as tokenized (the answering position is its last token). */
  prompt: string;
  /** Named spans of `prompt` ('template' outside them). */
  parts: PromptPart[];
  /** Role of each option part in this prompt, from an evaluation: option part → 'correct' | 'picked' | 'other' ('picked' is the model's wrong pick). */
  roles?: Record<string, 'correct' | 'picked' | 'other'>;
  /** Token ids the model read, and their pieces (vocabulary strings). */
  ids: number[];
  tokens: string[];
  /** Characters [start, end) of each token in `prompt` (start = end: none, e.g. an added BOS). */
  spans: [number, number][];
  /** Whether each token is special. */
  special: boolean[];
  /** Token index of the answering position (the last). */
  position: number;
  /** Decoder layers averaged (0-based) and the number of heads per layer. */
  layers: number[];
  heads: number;
  /** Attention of the answering position over every token, averaged over the heads and the layers. */
  weights: number[];
  /** With --per-layer: per layer (in `layers` order) the head-averaged weights. */
  layerWeights?: number[][];
  /** Every word of the prompt with its weight, in text order. */
  words: AttendWord[];
  /** The heaviest content words (word index into `words`), heaviest first. */
  top: number[];
  /** Attention mass per part (sums to 1 with 'special' and 'unaligned'). */
  partMass: Record<string, number>;
  /** Share of each content part in the content mass (sums to 1 over content parts). */
  partShare: Record<string, number>;
  /** Shares by option role (with an evaluation): 'option (correct)', 'option (picked)', 'option (other)' and the other content parts. */
  roleShare?: Record<string, number>;
  /** Tokens that could not be placed in the prompt. */
  unaligned: number;
  /** Set when the prompt was cut to --max-tokens (tokens dropped from the start). */
  truncated?: boolean;
  /**
   * With --cot N (or --eval of an evaluation made with --cot): the model's own greedy reasoning,
   * part `reasoning` of the prompt, and the answer cue after it (part `answer_prefix`); the
   * weights are read at the cue's last token, where the model writes the answer letter.
   */
  reasoning?: CotRecord;
}

/** A mean with its 95% bootstrap interval. */
export interface MeanCI {
  n: number;
  mean: number | null;
  ci95: [number, number] | null;
}

/** A difference of two group means with its 95% bootstrap interval. */
export interface DiffCI {
  diff: number | null;
  ci95: [number, number] | null;
}

/** Per part: mean share over items of each group, and wrong − right. */
export interface ShareTable {
  parts: string[];
  all: Record<string, MeanCI>;
  right: Record<string, MeanCI>;
  wrong: Record<string, MeanCI>;
  wrongMinusRight: Record<string, DiffCI>;
}

/** A keyword across items. */
export interface Keyword {
  /** The word (lower-cased for cased scripts). */
  word: string;
  /** Mean weight per item of the group (0 for items without it). */
  weight: number;
  /** Items in which it is among that item's top words. */
  inTop: number;
  /** Items that contain it. */
  items: number;
  /** The part it sits in most often. */
  part: string;
}

/** DIR/summary.json. */
export interface AttendSummary {
  format: 'lobes-attend';
  formatVersion: number;
  lobesVersion: string;
  createdAt: string;
  model: {
    dir: string;
    graphSha256: string;
    /** Every file that shapes the numbers (graph, external data, tokenizer files) with its sha256. */
    files?: ModelFile[];
    /** sha256 over the files' names and hashes (what lobes eval records as model.filesSha256). */
    filesSha256?: string;
    layers: number;
    heads: number | null;
    /** 'softmax' (read from the graph) or the fused op whose weights were recomputed. */
    attention: string;
    /** The GGUF the folder was converted from, when the model was given as one. */
    source?: ModelSourceRecord;
  };
  tokenizer: { source: string; scheme: string; chatTemplate: boolean };
  input: {
    kind: 'data' | 'eval';
    spec: string;
    sha256: string;
    items: string;
    selected: number;
    total: number;
    /** --eval: records the evaluation skipped (prompt longer than its --max-tokens), never read. */
    skipped?: number;
  };
  settings: {
    layers: number[];
    position: AttendPosition;
    top: number;
    cjk: 'char' | 'segment';
    maxTokens: number | null;
    bootstrap: number;
    seed: number;
    device: string;
    /**
     * The model's reasoning budget before the answer whose attention was read: --cot N, or with
     * --eval the evaluation's own --cot (0: none; absent in older folders, which recorded 0 for
     * --eval whatever the evaluation used).
     */
    cot?: number;
    /** The edits of activations the weights were read under (--intervene, src/runtime/intervene.ts); absent when none. */
    interventions?: InterventionRecord[];
  };
  counts: { items: number; right: number; wrong: number; unscored: number; tokens: number; truncated: number;
    unalignedTokens: number };
  /** Mean attention mass outside the content parts (template, answer prefix, special tokens). */
  nonContentMass: MeanCI;
  /** Shares of the content parts (option letters as they appear). */
  parts: ShareTable;
  /** Shares by option role (with an evaluation), or null. */
  roles: ShareTable | null;
  /** The heaviest words across items, per group. */
  keywords: { all: Keyword[]; right: Keyword[]; wrong: Keyword[] };
  timings: { tokenizeMs: number; modelLoadMs: number; computeMs: number; wallMs: number };
  /** The shard this folder holds (absent for a whole input, or a merge of shards). */
  shard?: { index: number; count: number } | null;
}
