/**
 * Cost of verifying the GGUF conversion cache (src/convert/cache.ts): what a command that takes
 * `--model FILE.gguf` (extract, eval, attend…) pays to check its cached conversion against the
 * sha256 recorded when it was written, first run and later runs, side by side in one process.
 *
 *   npx tsx bench/cache-verify.ts [--gguf FILE] [--reps 5]
 *
 * First run (fresh cache, fresh file-hash cache): the conversion alone (convertGguf into a
 * folder), then resolveModel (the GGUF's sha256 + the conversion + hashing the entry's files),
 * and the two hashing parts timed on their own. Later runs: resolveModel on the valid entry
 * (median of --reps), the entry check alone with the file-hash cache (stat per file) and without
 * it (LOBES_HASH_CACHE=off: every byte read again), and the size-only check lobes did before.
 * Prints a markdown table; the machine's load average is printed with it.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { convertGguf } from '../src/convert/convert.js';
import { entryProblem, resolveModel } from '../src/convert/cache.js';
import { sha256Stream } from '../src/store/filehash.js';

const { values } = parseArgs({ options: { gguf: { type: 'string' }, reps: { type: 'string' } } });
const GGUF = path.resolve(
  values.gguf ??
    path.join(import.meta.dirname, '../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf'),
);
const REPS = Number(values.reps ?? 5);
const root = mkdtempSync(path.join(tmpdir(), 'lobes-bench-cache-'));
process.env.LOBES_HASH_CACHE = path.join(root, 'file-sha256.json');

const ms = async (f: () => unknown) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const quiet = { log: () => {} };

try {
  const load0 = loadavg()[0]!;
  const tConvert = await ms(() => convertGguf(GGUF, path.join(root, 'plain'), {}));
  const cache = path.join(root, 'cache');
  let dir = '';
  const tFirst = await ms(async () => (dir = (await resolveModel(GGUF, { ...quiet, cache })).dir));
  const entry = path.basename(dir);
  const files = readdirSync(dir).filter((f) => f !== 'lobes-cache.json');
  const bytes = files.reduce((a, f) => a + statSync(path.join(dir, f)).size, 0);
  const tHashGguf = await ms(() => sha256Stream(GGUF));
  const tHashEntry = await ms(() => files.forEach((f) => sha256Stream(path.join(dir, f))));
  const later: number[] = [];
  const warm: number[] = [];
  const sizes: number[] = [];
  const cold: number[] = [];
  for (let r = 0; r < REPS; r++) {
    later.push(await ms(() => resolveModel(GGUF, { ...quiet, cache })));
    warm.push(await ms(() => entryProblem(dir, entry)));
    sizes.push(await ms(() => files.forEach((f) => statSync(path.join(dir, f)).size)));
    process.env.LOBES_HASH_CACHE = 'off';
    cold.push(await ms(() => entryProblem(dir, entry)));
    process.env.LOBES_HASH_CACHE = path.join(root, 'file-sha256.json');
  }
  const load1 = loadavg()[0]!;
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
  console.log(
    `GGUF ${GGUF} (${(statSync(GGUF).size / 1e6).toFixed(1)} MB); entry ${files.length} files, ${
      (bytes / 1e6).toFixed(1)
    } MB; load average ${load0.toFixed(1)} → ${load1.toFixed(1)}\n`,
  );
  console.log('| step | ms | ÷ conversion |');
  console.log('|---|---|---|');
  const row = (k: string, v: number) => console.log(`| ${k} | ${f(v)} | ${(v / tConvert).toFixed(4)} |`);
  row('conversion alone (convertGguf)', tConvert);
  row('first run: resolveModel (GGUF sha256 + conversion + entry hashes)', tFirst);
  row('  of which: sha256 of the GGUF (once per machine)', tHashGguf);
  row('  of which: sha256 of the entry files (once, when written)', tHashEntry);
  row(`later run: resolveModel on the valid entry (median of ${REPS})`, median(later));
  row('later run: entry check with the file-hash cache', median(warm));
  row('later run: entry check without it (LOBES_HASH_CACHE=off)', median(cold));
  row('size-only check (what lobes did before)', median(sizes));
} finally {
  rmSync(root, { recursive: true, force: true });
}
