/**
 * JobIO: the one way a job talks to the person running it. Library code (everything in src/
 * outside src/cli/) reports only through it and never writes to stderr itself:
 *
 *   - `log(line)`: progress and information ("eval: 40 units ...", "wrote DIR"); `--quiet`
 *     silences it;
 *   - `warn(line)`: what is always shown, `--quiet` or not (a replaced analysis, items left out,
 *     warnings);
 *   - `onProgress(ev)`: the progress of long work, one event shape for every job (src/util/progress.ts
 *     makes the events; the default IO draws them as a bar on a terminal, plain lines elsewhere);
 *   - `signal`: cancels the job between its chunks or stages (E_ABORTED).
 *
 * `stderrIO` is the CLI's default (and a library call's when it is given no `io`): lines on
 * stderr, progress drawn on stderr, `quiet` dropping log lines and progress but not warnings.
 * This module is the one library module that writes to stderr. `silentIO` reports nothing.
 * `jobIO` fills a partial JobIO, and the deprecated option fields (`quiet`, `log`, `signal`,
 * `progress`) of the run functions, into a whole one: the one place they are mapped.
 */
import { ProgressBar } from './progress-bar.js';

/** One progress event: which bar (`id`), what happened to it (`kind`) and its counts after it. */
export interface ProgressEvent {
  /** Tells apart the bars of one job (unique within the process). */
  id: number;
  /** `start` (a bar begins), `tick` (advanced), `set` (count set), `resume` (counts found done, not a rate), `total` (the total changed), `finish`. */
  kind: 'start' | 'tick' | 'set' | 'resume' | 'total' | 'finish';
  /** What is being done, e.g. "extract". */
  label: string;
  /** Units done so far. */
  done: number;
  /** Total units; 0 when unknown. */
  total: number;
  /** The unit of `done`, e.g. "samples". */
  unit: string;
  /** Secondary counts so far (e.g. tokens), shown as rates. */
  counters: Record<string, number>;
}

export interface JobIO {
  /** Progress and information; silenced by --quiet. */
  log(line: string): void;
  /** Always shown: warnings, a replaced analysis, items left out. */
  warn(line: string): void;
  /** Progress of long work (src/util/progress.ts's events). */
  onProgress(ev: ProgressEvent): void;
  /** Cancels the job between chunks (a LobesError with code E_ABORTED). */
  signal?: AbortSignal;
}

const noop = (): void => {};

/** Reports nothing (a library call that wants silence). */
export function silentIO(signal?: AbortSignal): JobIO {
  return { log: noop, warn: noop, onProgress: noop, ...(signal ? { signal } : {}) };
}

/** Where the default IO draws progress: a stream other than stderr, and the time between plain lines off a terminal (default 10 s). */
export interface ProgressDrawing {
  stream?: NodeJS.WriteStream;
  intervalMs?: number;
}

/**
 * The CLI's IO: lines on stderr, progress drawn on stderr (or `stream`); `quiet` (the CLI's
 * --quiet, and --json where a command's output is its JSON) drops log lines and progress,
 * never warnings.
 */
export function stderrIO(o: { quiet?: boolean; signal?: AbortSignal } & ProgressDrawing = {}): JobIO {
  const write = (line: string): void => void process.stderr.write(line + '\n');
  const signal = o.signal ? { signal: o.signal } : {};
  if (o.quiet) return { log: noop, warn: write, onProgress: noop, ...signal };
  const bars = new Map<number, ProgressBar>();
  const onProgress = (ev: ProgressEvent): void => {
    if (ev.kind === 'start') {
      bars.set(ev.id,
        new ProgressBar({ label: ev.label, total: ev.total, unit: ev.unit, stream: o.stream ?? process.stderr,
          ...(o.intervalMs !== undefined ? { intervalMs: o.intervalMs } : {}) }));
      return;
    }
    const bar = bars.get(ev.id);
    if (!bar) return;
    bar.apply(ev);
    if (ev.kind === 'finish') bars.delete(ev.id);
  };
  return { log: write, warn: write, onProgress, ...signal };
}

/** A run function's IO options: `io`, and the fields it replaces (kept so existing calls work). */
export interface JobIOOptions {
  /** Where the job reports (fields not given: the default, stderrIO, honouring `quiet`). */
  io?: Partial<JobIO>;
  /** @deprecated use `io` (silentIO(), or stderrIO({ quiet: true })): no log lines and no progress; warnings still print. */
  quiet?: boolean;
  /** @deprecated use `io.log` and `io.warn`: where the lines go (log lines still dropped under `quiet`). */
  log?: (line: string) => void;
  /** @deprecated use `io.signal`. */
  signal?: AbortSignal;
  /** @deprecated use `io.onProgress`, or stderrIO({ stream, intervalMs }): where the default IO draws progress. */
  progress?: ProgressDrawing;
}

/**
 * A whole JobIO from a partial one and the deprecated fields: given `io` fields first, then
 * `log`/`signal`, then stderrIO({ quiet, ...progress }). A given `log` gets the warnings and,
 * unless `quiet`, the log lines; `legacy.logUnderQuiet` (eval's and ablate's old meaning) gives
 * it the log lines under `quiet` too.
 */
export function jobIO(o: JobIOOptions = {}, legacy: { logUnderQuiet?: boolean } = {}): JobIO {
  const base = stderrIO({ quiet: o.quiet, ...o.progress });
  const io = o.io ?? {};
  const given = o.log;
  const signal = io.signal ?? o.signal;
  return {
    log: io.log ? (l) => io.log!(l) : given ? (o.quiet && !legacy.logUnderQuiet ? noop : given) : base.log,
    warn: io.warn ? (l) => io.warn!(l) : given ?? base.warn,
    onProgress: io.onProgress ? (ev) => io.onProgress!(ev) : base.onProgress,
    ...(signal ? { signal } : {}),
  };
}
