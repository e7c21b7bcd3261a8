/**
 * What `lobes lens` writes (RUN/lens/lens.json, docs/lens.md) and what the report page shows of
 * it. Types only: the page script imports them too.
 */

/** One token of a layer's top-k. */
export interface LensToken {
  id: number;
  /** The token decoded alone. */
  token: string;
  /** Its probability. */
  p: number;
}

/** The correct option's token at one layer of one item (items with answer candidates). */
export interface LensCorrect {
  /** 1-based rank of the correct option's token over the whole vocabulary. */
  rank: number;
  p: number;
  /** Whether the correct option's token is the most probable of the options' tokens. */
  hit: boolean;
}

/** One layer of one item. */
export interface LensItemLayer {
  top: LensToken[];
  /** Entropy of the layer's distribution, nats. */
  entropy: number;
  /** KL(final ‖ this layer), nats (0 at the final layer). */
  kl: number;
  correct?: LensCorrect;
}

export interface LensItem {
  id: string;
  /** Per layer, in `layers` order. */
  layers: LensItemLayer[];
  /** The correct option's letter and the options' letters, when the item has answer candidates. */
  answer?: { letter: string; letters: string[]; tokens: number[] };
}

/** One layer over every item: the line the report draws. */
export interface LensLayerSummary {
  layer: number;
  point: string;
  /** Mean entropy (nats) and mean KL to the final layer (nats) over the items. */
  entropy: number;
  kl: number;
  /** Over the items with answer candidates: the share whose correct option's token wins among the options. */
  accuracy: number | null;
  /** Median 1-based rank of the correct option's token over the vocabulary. */
  medianRank: number | null;
  /** Mean probability of the correct option's token. */
  meanP: number | null;
}

export interface LensResult {
  format: 'lobes-lens';
  version: 1;
  topK: number;
  /** The capture points read, one per layer (layers.{i}.resid_out at the last token). */
  layers: { layer: number; point: string }[];
  summary: LensLayerSummary[];
  /** Answer candidates: how many items had them, and the chance level of the options' accuracy (mean 1/K). */
  candidates: { items: number; chance: number; skipped: number; skippedWhy: string | null } | null;
  items: LensItem[];
}

/** The page payload of a lens result (RunPayload.lens). */
export interface LensPayload {
  topK: number;
  items: number;
  summary: LensLayerSummary[];
  candidates: LensResult['candidates'];
  /** Per layer, the most frequent top-1 token over the items, with its share. */
  topToken: { token: string; share: number }[];
}

/** What the report reads of a lens result (src/lens/store.ts readLens). */
export interface LensData {
  dir: string;
  settings: Record<string, unknown>;
  result: LensResult;
}
