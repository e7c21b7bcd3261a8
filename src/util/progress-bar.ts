/**
 * How the default JobIO (src/util/jobio.ts) draws a job's progress events. On a TTY: a single
 * redrawn bar with rate(s) and ETA. Off a TTY: a plain line at most every `intervalMs`. `quiet`
 * prints nothing. Its stream is stderr, so stdout stays clean for --json.
 *
 * Rates and the ETA are measured from the first advance (the first `tick` or `set`), not from
 * the start: the time before the first unit is loading and warm-up, and counts a resumed job
 * found done were not done now. Until a second advance has come at least half a second later
 * there is no rate to show, so the line shows "-" and no ETA. Advances within 50 ms of the first
 * (the other items of the first batch) join the window's zero. The last line (`finish`) falls
 * back to the whole time since the start when no such rate exists.
 */
export interface ProgressBarOptions {
  /** What is being done, e.g. "extract". */
  label: string;
  /** Total units (e.g. samples); 0 when unknown. */
  total: number;
  /** Unit name for the main counter, e.g. "samples". */
  unit?: string;
  quiet?: boolean;
  /** Minimum time between plain lines off a TTY (default 10 s). */
  intervalMs?: number;
  stream: NodeJS.WriteStream;
}

/** Advances this close together (the items of one batch) count as one. */
const BURST_MS = 50;

export class ProgressBar {
  private done = 0;
  private extra = new Map<string, number>();
  private readonly start = Date.now();
  private lastDraw = 0;
  private readonly tty: boolean;
  private readonly stream: NodeJS.WriteStream;
  private finished = false;
  /** The last line written off a TTY (the same line is not written twice in a row). */
  private lastLine = '';
  /** The first advance: its time and the counts right after it (the rates' zero). */
  private first: { t: number; done: number; extra: Map<string, number> } | null = null;
  private firstAt: number | null = null;

  constructor(private opts: ProgressBarOptions) {
    this.stream = opts.stream;
    this.tty = !!this.stream.isTTY && !process.env.CI;
  }

  /** Advance by `n` units; `counters` adds secondary rates such as tokens. */
  tick(n = 1, counters: Record<string, number> = {}): void {
    this.done += n;
    for (const [k, v] of Object.entries(counters)) this.extra.set(k, (this.extra.get(k) ?? 0) + v);
    this.advanced();
    this.draw(false);
  }

  /** Change the total (one that was an estimate, e.g. a writer's planned bytes, refined as it goes). */
  setTotal(total: number): void {
    this.opts = { ...this.opts, total };
  }

  /** Counts found done when a job resumes: shown, but not a rate (the window starts at the next advance). */
  resume(done: number): void {
    this.done = done;
    this.draw(false);
  }

  /** Set the absolute count. */
  set(done: number): void {
    this.done = done;
    this.advanced();
    this.draw(false);
  }

  /** Draw one event of a job's Progress (src/util/jobio.ts's ProgressEvent, from src/util/progress.ts), as the method of the same name would. */
  apply(
    ev: { kind: 'start' | 'tick' | 'set' | 'resume' | 'total' | 'finish'; done: number; total: number;
      counters: Record<string, number> },
  ): void {
    if (ev.kind === 'total') return this.setTotal(ev.total);
    if (ev.kind === 'finish') return this.finish();
    this.done = ev.done;
    if (ev.kind === 'tick') { for (const [k, v] of Object.entries(ev.counters)) this.extra.set(k, v); }
    if (ev.kind !== 'resume') this.advanced();
    this.draw(false);
  }

  /** Start the window at the first advance; advances in the same burst (one batch's items) join its zero. */
  private advanced(): void {
    const now = Date.now();
    this.firstAt ??= now;
    if (!this.first || now - this.firstAt < BURST_MS)
      this.first = { t: now, done: this.done, extra: new Map(this.extra) };
  }

  finish(message?: string): void {
    if (this.finished) return;
    this.finished = true;
    this.draw(true);
    if (this.tty && !this.opts.quiet) this.stream.write('\n');
    if (message && !this.opts.quiet) this.stream.write(message + '\n');
  }

  /** A plain message that does not break the bar. */
  log(message: string): void {
    if (this.opts.quiet) return;
    if (this.tty) this.stream.write('\r\x1b[K');
    this.stream.write(message + '\n');
    this.lastLine = '';
    this.lastDraw = 0;
    this.draw(false);
  }

  private draw(force: boolean): void {
    if (this.opts.quiet) return;
    const now = Date.now();
    const interval = this.tty ? 100 : this.opts.intervalMs ?? 10_000;
    if (!force && now - this.lastDraw < interval) return;
    this.lastDraw = now;
    const secs = Math.max((now - this.start) / 1000, 1e-9);
    const unit = this.opts.unit ?? 'items';
    // The window since the first advance; a rate needs something done in at least half a second of it.
    const f = this.first;
    const win = f ? (now - f.t) / 1000 : 0;
    const windowed = !!f && win >= 0.5 &&
      (this.done > f.done || [...this.extra].some(([k, v]) => v > (f.extra.get(k) ?? 0)));
    const overall = force && !windowed && secs >= 0.5;
    const rate = (v: number, v0: number) => (windowed ? fmtRate((v - v0) / win) : overall ? fmtRate(v / secs) : '-');
    const rates = [`${rate(this.done, f?.done ?? 0)} ${unit}/s`];
    for (const [k, v] of this.extra) rates.push(`${rate(v, f?.extra.get(k) ?? 0)} ${k}/s`);
    const total = this.opts.total;
    let eta = '';
    if (windowed && total > 0 && this.done > f!.done && this.done < total)
      eta = ` ETA ${fmtTime(((total - this.done) * win) / (this.done - f!.done))}`;
    const count = total > 0 ? `${this.done}/${total}` : `${this.done}`;
    if (this.tty) {
      const width = 24;
      const frac = total > 0 ? Math.min(this.done / total, 1) : 0;
      const fill = Math.round(frac * width);
      const bar = total > 0 ? `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ` : '';
      this.stream.write(`\r\x1b[K${this.opts.label} ${bar}${count} ${unit}, ${rates.join(', ')}${eta}`);
    } else {
      const line = `${this.opts.label}: ${count} ${unit}, ${rates.join(', ')}${eta}, ${fmtTime(secs)} elapsed`;
      // finish() right after a line with nothing new (a last tick) would repeat it
      if (line === this.lastLine) return;
      this.lastLine = line;
      this.stream.write(line + '\n');
    }
  }
}

function fmtRate(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

export function fmtTime(s: number): string {
  if (!isFinite(s)) return '?';
  if (s < 60) return `${s.toFixed(0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
