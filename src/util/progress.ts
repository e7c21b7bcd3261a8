/**
 * Progress for long work, reported through a JobIO (src/util/jobio.ts): every change is one
 * `ProgressEvent` to `io.onProgress`, the counts after it included; the bar, its rates and ETA
 * are drawn by the IO that receives them (the default one: src/util/progress-bar.ts). A
 * `finish` message is a log line (`io.log`).
 */
import type { JobIO, ProgressEvent } from './jobio.js';

export { fmtTime } from './progress-bar.js';

export interface ProgressOptions {
  /** What is being done, e.g. "extract". */
  label: string;
  /** Total units (e.g. samples); 0 when unknown. */
  total: number;
  /** Unit name for the main counter, e.g. "samples". */
  unit?: string;
  /** Where the events go (and the finish message). */
  io: Pick<JobIO, 'onProgress' | 'log'>;
}

let bars = 0;

export class Progress {
  private readonly id = ++bars;
  private done = 0;
  private total: number;
  private readonly counters: Record<string, number> = {};
  private finished = false;

  constructor(private readonly opts: ProgressOptions) {
    this.total = opts.total;
    this.emit('start');
  }

  /** Advance by `n` units; `counters` adds secondary rates such as tokens. */
  tick(n = 1, counters: Record<string, number> = {}): void {
    this.done += n;
    for (const [k, v] of Object.entries(counters)) this.counters[k] = (this.counters[k] ?? 0) + v;
    this.emit('tick');
  }

  /** Change the total (one that was an estimate, e.g. a writer's planned bytes, refined as it goes). */
  setTotal(total: number): void {
    this.total = total;
    this.emit('total');
  }

  /** Counts found done when a job resumes: shown, but not a rate (the window starts at the next advance). */
  resume(done: number): void {
    this.done = done;
    this.emit('resume');
  }

  /** Set the absolute count. */
  set(done: number): void {
    this.done = done;
    this.emit('set');
  }

  /** The end of the work; `message`, when given, is then a log line. */
  finish(message?: string): void {
    if (this.finished) return;
    this.finished = true;
    this.emit('finish');
    if (message) this.opts.io.log(message);
  }

  private emit(kind: ProgressEvent['kind']): void {
    this.opts.io.onProgress({ id: this.id, kind, label: this.opts.label, done: this.done, total: this.total,
      unit: this.opts.unit ?? 'items', counters: { ...this.counters } });
  }
}
