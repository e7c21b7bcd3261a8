/**
 * The read path alone: open a run and stream every capture point once, the way wanda reads
 * them (iterate in blocks of 4 MiB of float32), with this checkout's reader (every chunk
 * verified: sha256, header, row_start) and with the reader of another checkout (e.g. main,
 * before verified reads), alternating, in one process. Each pass opens the run afresh, so
 * every pass of the verifying reader hashes every chunk file.
 *
 *   node --import tsx bench/verified-reads.ts RUN BEFORE_CHECKOUT [PASSES]
 *
 * Prints the median wall and CPU milliseconds per pass of each reader and their ratio.
 */
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openRun as openAfter } from '../src/store/index.js';
import type { RunReader } from '../src/store/types.js';

const [run, beforeDir, passesArg] = process.argv.slice(2);
if (!run || !beforeDir) {
  console.error('usage: node --import tsx bench/verified-reads.ts RUN BEFORE_CHECKOUT [PASSES]');
  process.exit(2);
}
const passes = Number(passesArg ?? 7);
const { openRun: openBefore } = (await import(pathToFileURL(path.resolve(beforeDir, 'src/store/index.ts')).href)) as {
  openRun: (d: string) => Promise<RunReader>;
};

async function pass(open: (d: string) => Promise<RunReader>): Promise<{ wall: number; cpu: number; bytes: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await open(run!);
  let bytes = 0;
  for (const h of r.hooks()) {
    for await (const chunk of r.iterate(h.name, Math.max(1, Math.floor((4 << 20) / (4 * h.dim)))))
      bytes += chunk.data.length * (h.dtype === 'F16' ? 2 : 4);
  }
  const c = process.cpuUsage(c0);
  return { wall: performance.now() - t0, cpu: (c.user + c.system) / 1000, bytes };
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const before: { wall: number; cpu: number }[] = [];
const after: { wall: number; cpu: number }[] = [];
let bytes = 0;
await pass(openBefore); // warm the page cache and the JIT
await pass(openAfter);
for (let i = 0; i < passes; i++) {
  before.push(await pass(openBefore));
  const a = await pass(openAfter);
  after.push(a);
  bytes = a.bytes;
}
const b = { wall: median(before.map((x) => x.wall)), cpu: median(before.map((x) => x.cpu)) };
const a = { wall: median(after.map((x) => x.wall)), cpu: median(after.map((x) => x.cpu)) };
console.log(`${(bytes / 1e6).toFixed(0)} MB of activations per pass, ${passes} passes each, medians:`);
console.log(`before (no verification)  wall ${b.wall.toFixed(0)} ms  cpu ${b.cpu.toFixed(0)} ms`);
console.log(`after (verified reads)    wall ${a.wall.toFixed(0)} ms  cpu ${a.cpu.toFixed(0)} ms`);
console.log(`after − before            wall ${(a.wall - b.wall).toFixed(0)} ms  cpu ${(a.cpu - b.cpu).toFixed(0)} ms`);
