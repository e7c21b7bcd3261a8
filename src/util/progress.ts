/**
 * Progress for long work. On a TTY: a single redrawn bar with rate(s) and ETA.
 * Off a TTY: a plain line at most every `intervalMs`. `quiet` prints nothing.
 * Output goes to stderr so stdout stays clean for --json.
 */
export interface ProgressOptions {
  /** What is being done, e.g. "extract". */
  label: string;
  /** Total units (e.g. samples); 0 when unknown. */
  total: number;
  /** Unit name for the main counter, e.g. "samples". */
  unit?: string;
  quiet?: boolean;
  /** Minimum time between plain lines off a TTY (default 10 s). */
  intervalMs?: number;
  stream?: NodeJS.WriteStream;
}

export class Progress {
  private done = 0;
  private extra = new Map<string, number>();
  private readonly start = Date.now();
  private lastDraw = 0;
  private readonly tty: boolean;
  private readonly stream: NodeJS.WriteStream;
  private finished = false;

  constructor(private opts: ProgressOptions) {
    this.stream = opts.stream ?? process.stderr;
    this.tty = !!this.stream.isTTY && !process.env.CI;
  }

  /** Advance by `n` units; `counters` adds secondary rates such as tokens. */
  tick(n = 1, counters: Record<string, number> = {}): void {
    this.done += n;
    for (const [k, v] of Object.entries(counters)) this.extra.set(k, (this.extra.get(k) ?? 0) + v);
    this.draw(false);
  }

  /** Change the total (one that was an estimate, e.g. a writer's planned bytes, refined as it goes). */
  setTotal(total: number): void {
    this.opts = { ...this.opts, total };
  }

  /** Set the absolute count (for resumed work). */
  set(done: number): void {
    this.done = done;
    this.draw(false);
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
    // Rates over less than half a second are noise; show them once there is something to average.
    const rate = (v: number) => (secs < 0.5 ? '-' : fmtRate(v / secs));
    const rates = [`${rate(this.done)} ${unit}/s`];
    for (const [k, v] of this.extra) rates.push(`${rate(v)} ${k}/s`);
    const total = this.opts.total;
    let eta = '';
    if (total > 0 && this.done > 0 && this.done < total) eta = ` ETA ${fmtTime(((total - this.done) * secs) / this.done)}`;
    const count = total > 0 ? `${this.done}/${total}` : `${this.done}`;
    if (this.tty) {
      const width = 24;
      const frac = total > 0 ? Math.min(this.done / total, 1) : 0;
      const fill = Math.round(frac * width);
      const bar = total > 0 ? `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ` : '';
      this.stream.write(`\r\x1b[K${this.opts.label} ${bar}${count} ${unit}, ${rates.join(', ')}${eta}`);
    } else {
      this.stream.write(`${this.opts.label}: ${count} ${unit}, ${rates.join(', ')}${eta}, ${fmtTime(secs)} elapsed\n`);
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
