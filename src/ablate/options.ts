/**
 * The options and dependencies of a `lobes ablate` job (src/ablate/run.ts runAblate): what the
 * caller gives (the run, the region, the data, the null sets, the task, the device) and the
 * engines it opens (the log-likelihood engine, the tokenizer, eval's letter scorer), which tests
 * replace. run.ts re-exports both.
 */
import type { JobIOOptions } from '../util/jobio.js';
import type { LoglikEngine, LoglikOptions } from '../runtime/loglik.js';
import type { EvalTokenizer, EvalTokenizerOptions } from '../runtime/eval-tokenizer.js';
import type { Intervention, Device } from '../runtime/types.js';
import type { Scorer, ScorerOptions } from '../runtime/scorer.js';
import type { ModelSourceRecord } from '../store/types.js';
import type { NullScope } from './regions.js';
import type { AblateTask, IaeMetric, IaeScoring } from './iae.js';

/** Its IO (`io`: log lines, progress, the signal that cancels it between chunks, the folder left resumable) and the deprecated `quiet`, `log`, `signal` (src/util/jobio.ts). */
export interface AblateOptions extends JobIOOptions {
  run: string;
  /** Edits of activations in every forward pass, before and after ablating (--intervene, src/runtime/intervene.ts): recorded in the settings. */
  interventions?: Intervention[];
  region: string;
  minus?: string | null;
  data: string;
  out: string;
  /** Random regions per null set (default ABLATE_RANDOM, 20). */
  random?: number;
  scope?: NullScope;
  /** The |W|-magnitude baseline: per null set, a region of the same size of the blocks with the largest mean |W|. */
  magnitude?: boolean;
  /** A dose–response: every region also at these wanda top fractions (computed from the stored pooled block scores), each against its own random regions. */
  tops?: number[];
  /** The shuffled-label null: S labellings with the groups shuffled across the run's rows, whose regions (wanda's machinery, src/ablate/refit.ts) are ablated too (continuation task). */
  shuffled?: number;
  /** Fit the regions on one half of the items (stratified by label, this seed) and ablate on the other half only. */
  fitSplit?: number | null;
  /** The label axis whose wanda results give the regions (default: the run's default axis, RUN/wanda; else RUN/wanda.by-AXIS). */
  wandaBy?: string;
  /** A model folder to score (default: the run's model); must be the run's model (sameModel). */
  model?: string | null;
  modelSource?: ModelSourceRecord | null;
  seed?: number;
  /** 'continuation' (default): each item's continuation log-likelihood; 'iae': eval's multiple-choice items answered right (src/ablate/iae.ts). */
  task?: AblateTask;
  /** --task iae: letter (default) or cloze. */
  scoring?: IaeScoring;
  /** --task iae: acc (default), acc_norm or acc_mutual_info (the last two with cloze). */
  metric?: IaeMetric;
  limit?: number | null;
  by?: string[];
  device?: Device;
  deviceId?: number;
  threads?: number;
  batch?: number;
  bootstrap?: number;
  chunkUnits?: number;
  force?: boolean;
  deps?: Partial<AblateDeps>;
}

export interface AblateDeps {
  openLoglik(model: string, opts: LoglikOptions): Promise<LoglikEngine>;
  loadTokenizer(model: string, opts: EvalTokenizerOptions): Promise<EvalTokenizer>;
  /** The letter scorer (--task iae --scoring letter). */
  openScorer(model: string, opts: ScorerOptions): Promise<Scorer>;
}
