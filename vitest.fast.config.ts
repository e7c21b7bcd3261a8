/**
 * The fast tier (`npm run test:fast`): the test files that took under FAST_SECONDS in the last
 * recorded run of the whole suite (test/durations.json, written by `npx tsx bench/suite-timing.ts
 * --write`), and files not recorded yet, without the browser and notebook tests. They are the
 * unit tests: statistics, formats, parsers, stores, the report's payload and the small engines.
 * `npm test` still runs everything; this tier is for the edit–test loop, and CI runs the whole.
 */
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { readDurations } from './test/sequencer.js';

/** A file recorded at or over this many seconds is in the full suite only. */
export const FAST_SECONDS = 2;
/** Tests that need a browser or a notebook kernel, whatever they took. */
const SLOW_KINDS = /(browser|notebooks|first-screen|navigation)[^/]*\.test\.ts$/;

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? testFiles(p) : n.endsWith('.test.ts') ? [p.split(path.sep).join('/')] : [];
  });
}

const durations = readDurations();
const fast = testFiles('test').filter((f) => !SLOW_KINDS.test(f) && (durations.get(f) ?? 0) < FAST_SECONDS);

// the base config with its include replaced (mergeConfig would add the lists together)
export default defineConfig({ ...base, test: { ...base.test, include: fast } });
