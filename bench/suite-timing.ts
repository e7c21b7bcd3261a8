/**
 * The test suite's wall time and its costliest files, repeatably:
 *
 *   npx tsx bench/suite-timing.ts                   run `vitest run` with the JSON reporter, then report
 *   npx tsx bench/suite-timing.ts --from FILE.json  report a JSON report written earlier (no run)
 *   options: --top N (default 25), --tests N (costliest tests of each listed file, default 3),
 *            --write (record the per-file seconds in test/durations.json, which orders the files),
 *            -- ARGS (passed to vitest: test files, --maxWorkers)
 *
 * Prints the wall time (the run's, measured here), the sum of the files' own times, the load
 * average before and after (the machine is shared: a figure means little without it), and the
 * files by their time, each with its costliest tests.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { DURATIONS } from '../test/sequencer.js';

interface Assertion {
  fullName: string;
  duration?: number | null;
  status: string;
}
interface FileResult {
  name: string;
  startTime: number;
  endTime: number;
  assertionResults: Assertion[];
}
interface Report {
  numTotalTests: number;
  numFailedTests: number;
  numPendingTests: number;
  startTime: number;
  testResults: FileResult[];
}

const ROOT = path.resolve(import.meta.dirname, '..');

/** A file's path from the repository root; a report written in another checkout is named from its test/ folder. */
function relName(file: string): string {
  const rel = path.relative(ROOT, file).split(path.sep).join('/');
  if (!rel.startsWith('..')) return rel;
  const at = file.split(path.sep).join('/').lastIndexOf('/test/');
  return at >= 0 ? file.slice(at + 1) : rel;
}

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

function main(): void {
  const argv = process.argv.slice(2);
  const dash = argv.indexOf('--');
  const args = dash >= 0 ? argv.slice(0, dash) : argv;
  const passed = dash >= 0 ? argv.slice(dash + 1) : [];
  const top = Number(option(args, '--top') ?? 25);
  const perFile = Number(option(args, '--tests') ?? 3);
  let from = option(args, '--from');
  const load0 = loadavg();
  let wall: number | null = null;
  let tmp: string | null = null;
  if (!from) {
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-suite-timing-'));
    from = path.join(tmp, 'suite.json');
    const t0 = performance.now();
    const r = spawnSync('npx', ['vitest', 'run', '--reporter=json', `--outputFile=${from}`, ...passed], { cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'] });
    wall = (performance.now() - t0) / 1000;
    if (r.status !== 0) console.log(`vitest exited ${r.status}`);
  }
  const load1 = loadavg();
  const report = JSON.parse(readFileSync(from, 'utf8')) as Report;
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  const files = report.testResults.map((t) => ({
    name: relName(t.name),
    seconds: (t.endTime - t.startTime) / 1000,
    start: (t.startTime - report.startTime) / 1000,
    tests: [...t.assertionResults].filter((a) => a.duration).sort((a, b) => b.duration! - a.duration!),
  }));
  files.sort((a, b) => b.seconds - a.seconds);
  const sum = files.reduce((s, f) => s + f.seconds, 0);
  const span = Math.max(...report.testResults.map((t) => t.endTime)) -
    Math.min(...report.testResults.map((t) => t.startTime));
  const la = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `${files.length} files, ${report.numTotalTests} tests (${report.numFailedTests} failed, ${report.numPendingTests} skipped)`,
  );
  if (wall !== null)
    console.log(
      `wall ${wall.toFixed(1)} s (vitest run, start to exit); load average ${la(load0)} before, ${la(load1)} after`,
    );
  console.log(
    `first file start to last file end ${(span / 1000).toFixed(1)} s; the files' own times sum to ${sum.toFixed(1)} s`,
  );
  console.log(`\n${top} costliest files (seconds, start after the run began, tests):`);
  for (const f of files.slice(0, top)) {
    console.log(
      `${f.seconds.toFixed(1).padStart(7)}  at ${f.start.toFixed(0).padStart(4)}  ${f.name} (${f.tests.length})`,
    );
    for (const t of f.tests.slice(0, perFile))
      console.log(`${''.padStart(16)}${(t.duration! / 1000).toFixed(1).padStart(6)}  ${t.fullName.slice(0, 110)}`);
  }
  if (args.includes('--write')) {
    const out: Record<string, number> = {};
    for (const f of [...files].sort((a, b) => (a.name < b.name ? -1 : 1)))
      out[f.name] = Math.round(f.seconds * 10) / 10;
    const note =
      'seconds per test file in one run of the whole suite (bench/suite-timing.ts --write); test/sequencer.ts starts the longest first';
    writeFileSync(DURATIONS, JSON.stringify({ note, files: out }, null, 1) + '\n');
    console.log(`\nwrote ${path.relative(ROOT, DURATIONS)} (${files.length} files)`);
  }
}

main();
