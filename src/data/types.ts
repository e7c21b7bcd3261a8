/**
 * The Sample: one labelled model input. Every dataset adapter produces these; extract
 * stores their ids and labels in the run directory; every analysis groups by label axes.
 */
export interface Sample {
  /** Unique within a dataset; stable across runs of the same spec (used for resume/merge). */
  id: string;
  /** The exact text given to the tokenizer (after the dataset's template). */
  text: string;
  /** Named label axes, e.g. { aspect: 'Cooperation', ability: 'Teamwork Skill', language: 'en' }. */
  labels: Record<string, string>;
  /** Where the item came from: file, node, choice (free-form strings). */
  provenance?: Record<string, string>;
  /** Anything else worth keeping, e.g. distractor utterances. Must be JSON-serializable. */
  extras?: Record<string, unknown>;
}

/** An item a dataset adapter left out, and why (never dropped silently). */
export interface Excluded {
  /** Id the item would have had, or a file:place description. */
  id: string;
  file?: string;
  where?: string;
  reason: string;
}

/** A loaded dataset: its samples in order, and everything excluded. */
export interface Dataset {
  /** The spec string it was loaded from, normalized (e.g. "builtin:social"). */
  spec: string;
  samples: Sample[];
  excluded: Excluded[];
  /** Label axes present on every sample, in a stable order. */
  axes: string[];
  /** How the samples were composed from the items, when not one sample per item (socialeval: swap=SEED). */
  composition?: SwapComposition;
}

/**
 * Module contract (implemented in src/data/index.ts):
 *   export function loadDataset(spec: string, opts?: LoadOptions): Promise<Dataset>
 * Spec strings: builtin:NAME, socialeval:PATH[?lang=en|zh&orientation=...&aspect=...],
 * jsonl:PATH?text=FIELD&label=FIELD[,FIELD...][&id=FIELD], csv:PATH?... (same keys).
 */
export interface LoadOptions {
  /** Continue past invalid items and report them in `excluded` instead of failing. */
  skipInvalid?: boolean;
  /**
   * The flag of the calling command that sets skipInvalid (e.g. '--skip-invalid'), named in
   * the error about invalid input; commands without one are told only to fix the input.
   */
  skipFlag?: string;
}

/** What the swap composition did: recorded in the run manifest (`dataset.composition`). */
export interface SwapComposition {
  kind: 'swap';
  seed: number;
  /** Responses (each gives an own and a swapped sample). */
  responses: number;
  /** How the swapped question was chosen. */
  pairing: string;
  /** sha256 over the lines `RESPONSE_ID\tQUESTION_ID` of the swapped samples, in order. */
  pairsSha256: string;
}
