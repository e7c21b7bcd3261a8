/**
 * The order vitest hands the test files to its workers: longest first. With 2 workers and one file
 * far longer than the rest, the order decides the wall time: a long file started late runs alone at
 * the end. vitest orders by its own timings cache when it has one (node_modules/.vite, which a clean
 * `npm ci` removes) and otherwise by file size, which says little about time.
 *
 * The durations come from test/durations.json, seconds per file from a measured run of the whole
 * suite (`npx tsx bench/suite-timing.ts --write`). Files it does not list (new ones) go after the
 * listed ones that took over a second, largest first, as vitest orders them; the rest follow by
 * duration. A stale entry only changes the order, never what runs.
 */
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const DURATIONS = path.join(import.meta.dirname, 'durations.json');

/** Seconds per test file (path relative to the repository root, with /), or an empty map. */
export function readDurations(file = DURATIONS): Map<string, number> {
  let json: { files?: Record<string, number> };
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return new Map();
  }
  return new Map(Object.entries(json.files ?? {}).filter(([, s]) => typeof s === 'number' && Number.isFinite(s)));
}

/** Recorded durations that rank new files: listed files under this many seconds go after them. */
const UNKNOWN_AT = 1;

/** The files in the order to start them: by recorded seconds (new files ranked at UNKNOWN_AT), then larger first. */
export function longestFirst<T>(files: T[], rel: (f: T) => string, size: (f: T) => number,
  seconds: Map<string, number>): T[]
{
  const key = files.map((f) => ({ f, s: seconds.get(rel(f)) ?? UNKNOWN_AT, b: size(f) }));
  key.sort((a, b) => b.s - a.s || b.b - a.b);
  return key.map((k) => k.f);
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = readDurations();
    const size = (f: TestSpecification) => {
      try {
        return statSync(f.moduleId).size;
      } catch {
        return 0;
      }
    };
    return longestFirst(files, (f) => path.relative(root, f.moduleId).split(path.sep).join('/'), size, seconds);
  }
}
