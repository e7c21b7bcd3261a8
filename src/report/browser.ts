/**
 * Headless Chromium for figure export (and the report's browser tests): Debian's chromium
 * (or any Chromium at --chromium / $LOBES_CHROMIUM) driven by playwright-core, with a fresh
 * profile and no network, GPU or first-run work.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'];

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
      hint: 'install it (Debian: apt-get install chromium) or pass --chromium PATH / set LOBES_CHROMIUM',
    });
  }
  return exe;
}

/** Launch headless Chromium with a fresh profile (removed on close). */
export async function launchChromium(given?: string): Promise<Browser> {
  const exe = requireChromium(given);
  const { chromium } = await import('playwright-core');
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
      hint: 'check the executable, or pass another with --chromium PATH',
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
