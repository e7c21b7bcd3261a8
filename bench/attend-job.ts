/**
 * Cost of attend's job folder: the same `lobes attend` run (runAttend, one process) with its
 * items written in record chunks of 32 (the default: an index, fsynced chunk files, manifest
 * updates, the join and its verified read) and of 1 (the worst case: every item its own chunk),
 * against one chunk holding every item (what the folder written whole at the end cost). The
 * variants alternate within each repetition; ratios are medians over repetitions of
 * (variant wall time ÷ one-chunk wall time in that repetition).
 *
 *   npx tsx bench/attend-job.ts [--models tiny-llama,smollm2-explicit] [--texts 64] [--reps 3]
 *
 * Models: a generated model name (tiny-llama) or smollm2-explicit (../shared's SmolLM2 GGUF
 * converted by lobes, in the test cache). Prints a markdown table.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { runAttend } from '../src/attend/run.js';
import { resolveModel as resolveGguf } from '../src/convert/cache.js';
import { ensureGeneratedModel } from '../src/models/index.js';

const { values } = parseArgs({
  options: { models: { type: 'string', default: 'tiny-llama,smollm2-explicit' },
    texts: { type: 'string', default: '64' }, reps: { type: 'string', default: '3' } },
});
const GGUF = resolve(import.meta.dirname, '../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');

async function modelDir(name: string): Promise<string> {
  if (name === 'smollm2-explicit')
    return (await resolveGguf(GGUF, { cache: process.env.LOBES_BENCH_CACHE ?? join(tmpdir(), 'lobes-test-gguf-cache'),
      layout: 'explicit', log: () => undefined })).dir;
  return ensureGeneratedModel(name);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const texts = Number(values.texts);
const reps = Number(values.reps);
const root = mkdtempSync(join(tmpdir(), 'lobes-bench-attend-job-'));
console.log(`| model | items | one chunk (s) | chunks of 32 (s) | chunks of 1 (s) | 32 ÷ one | 1 ÷ one |`);
console.log(`|---|---|---|---|---|---|---|`);
try {
  for (const name of values.models!.split(',')) {
    const model = await modelDir(name);
    const t: Record<string, number[]> = { one: [], c32: [], c1: [] };
    const variants: [string, number][] = [['one', texts], ['c32', 32], ['c1', 1]];
    for (let r = 0; r < reps; r++) {
      // Rotate the order so that no variant always runs first (warm caches, machine load).
      for (let k = 0; k < variants.length; k++) {
        const [key, chunkUnits] = variants[(k + r) % variants.length]!;
        const out = join(root, `${name}-${key}-${r}`);
        const t0 = performance.now();
        await runAttend({ model, data: 'builtin:social', limit: texts, chunkUnits, bootstrap: 200, out, quiet: true });
        t[key]!.push((performance.now() - t0) / 1000);
        rmSync(out, { recursive: true, force: true });
      }
    }
    const ratio = (key: string) => median(t[key]!.map((x, i) => x / t.one![i]!));
    console.log(
      `| ${name} | ${texts} | ${median(t.one!).toFixed(2)} | ${median(t.c32!).toFixed(2)} | ${
        median(t.c1!).toFixed(2)
      } | ${ratio('c32').toFixed(3)} | ${ratio('c1').toFixed(3)} |`,
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
