/**
 * Headless Chromium for figure export (and the report's browser tests): Debian's chromium
 * (or any Chromium at --chromium / $LOBES_CHROMIUM) driven by playwright-core, with a fresh
 * profile and no network, GPU or first-run work.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--no-first-run'];

/** The browser executable to use: the argument, else $LOBES_CHROMIUM, else /usr/bin/chromium. */
export function chromiumPath(given?: string): string {
  return given || process.env.LOBES_CHROMIUM || DEFAULT_CHROMIUM;
}

/** Why a browser cannot be used, or null when it exists. */
export function chromiumProblem(given?: string): string | null {
  const exe = chromiumPath(given);
  return existsSync(exe) ? null : `headless Chromium not found at ${exe}`;
}

export interface Browser {
  /** playwright-core BrowserContext. */
  context: any;
  close(): Promise<void>;
}

/** The browser executable, or a one-line error saying how to get one. */
export function requireChromium(given?: string): string {
  const exe = chromiumPath(given);
  if (!existsSync(exe)) {
    throw new LobesError(`headless Chromium not found at ${exe}`, {
      hint: `install it (Debian: apt-get install chromium) or pass ${opt('chromium', 'PATH')} / set LOBES_CHROMIUM`,
    });
  }
  return exe;
}

/** Launch headless Chromium with a fresh profile (removed on close). */
export async function launchChromium(given?: string): Promise<Browser> {
  const exe = requireChromium(given);
  let chromium: typeof import('playwright-core').chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    throw new LobesError('figure export needs the optional package playwright-core, which is not installed', {
      hint: 'npm install playwright-core',
    });
  }
  const profile = mkdtempSync(path.join(tmpdir(), 'lobes-chromium-'));
  let context: any;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: exe,
      headless: true,
      args: CHROMIUM_FLAGS.filter((f) => f !== '--headless'),
      viewport: { width: 1400, height: 1000 },
      timeout: 60_000,
    });
  } catch (e: any) {
    rmSync(profile, { recursive: true, force: true });
    throw new LobesError(`could not start Chromium at ${exe}: ${String(e?.message ?? e).split('\n')[0]}`, {
      hint: `check the executable, or pass another with ${opt('chromium', 'PATH')}`,
    });
  }
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface LoadTiming {
  /** From navigation start until the page's own script starts (the HTML parsed and Plotly evaluated) (ms). */
  scriptMs: number;
  /** From navigation start until the scatter and the first pair's heatmaps are drawn (ms). */
  readyMs: number;
  /** A real mouse hover on the scatter until its label shows, then a pair switch through the selector until the new heatmaps are drawn (ms). */
  interactMs: number;
  /** readyMs + interactMs: navigation start until the page has answered both interactions. */
  totalMs: number;
  /** CPU time of the page's main thread from its start until interactive (ms): independent of other load on the machine. */
  mainThreadCpuMs: number;
  /** CPU time of the page's renderer process, all its threads, until interactive (ms). */
  rendererCpuMs: number;
  /** The hover label's text. */
  hover: string;
  /** Console errors and warnings, and uncaught page errors. */
  problems: string[];
}

/**
 * Open a report in a fresh Chromium (cold: no compiled-script cache from an earlier load) and time
 * it until it is interactive. `pair` is the 0-based pair to switch to (a report with >= pair+1 pairs).
 */
export async function measureReportLoad(fileUrl: string,
  opts: { pair?: number; chromium?: string } = {}): Promise<LoadTiming>
{
  const pair = opts.pair ?? 1;
  const b = await launchChromium(opts.chromium);
  try {
    const page = await b.context.newPage();
    const problems: string[] = [];
    page.on('console', (m: any) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e: Error) => problems.push(`pageerror: ${e.message}`));
    const cdp = await b.context.newCDPSession(page);
    // thread-tick metrics: CPU time, not wall time, of the renderer that holds the page
    await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
    await page.goto(fileUrl, { waitUntil: 'load', timeout: 120_000 });
    await page.waitForFunction(
      'window.lobesReport && window.lobesReport.ready === true || document.documentElement.getAttribute("data-ready") === "error"',
      null,
      { timeout: 120_000, polling: 'raf' },
    );
    const [scriptMs, readyMs]: number[] = await page.evaluate(
      '[window.lobesReport.startMs, window.lobesReport.readyMs]',
    );
    if (!(readyMs > 0))
      throw new LobesError('the report page failed to draw its figures', { file: fileUrl, hint: problems.join('; ') });
    // where a scatter point lies on screen
    const at: { x: number; y: number } = await page.evaluate(`(function () {
      var gd = document.querySelector('[data-figure$="scatter"]'); gd.scrollIntoView();
      var fl = gd._fullLayout, t = gd.data[0], i = Math.floor(t.x.length / 2), r = gd.getBoundingClientRect();
      return { x: r.left + fl.xaxis._offset + fl.xaxis.l2p(t.x[i]), y: r.top + fl.yaxis._offset + fl.yaxis.l2p(t.y[i]) };
    })()`);
    const t0 = performance.now();
    await page.mouse.move(at.x - 3, at.y - 3);
    await page.mouse.move(at.x, at.y);
    await page.waitForFunction('(document.querySelector(".hoverlayer") || {}).textContent', null, { timeout: 30_000,
      polling: 'raf' });
    await page.selectOption('#pair-select', String(pair));
    await page.waitForFunction(`(function () {
      var gd = document.querySelector('[data-figure$="pair-${pair + 1}"]');
      return !!gd && !!gd._fullData && gd.querySelectorAll('.hm image').length === gd.data.length;
    })()`, null, { timeout: 60_000, polling: 'raf' });
    const interactMs = performance.now() - t0;
    const metrics: { name: string; value: number }[] = (await cdp.send('Performance.getMetrics')).metrics;
    const metric = (name: string) => 1000 * (metrics.find((m) => m.name === name)?.value ?? NaN);
    const hover: string = await page.evaluate('document.querySelector(".hoverlayer").textContent');
    return { scriptMs, readyMs, interactMs, totalMs: readyMs + interactMs, mainThreadCpuMs: metric('ThreadTime'),
      rendererCpuMs: metric('ProcessTime'), hover, problems };
  } finally {
    await b.close();
  }
}
