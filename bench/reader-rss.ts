/**
 * The reader streams a 2 GB capture in constant memory.
 *
 *   npx tsx bench/reader-rss.ts [--gb 2] [--dim 4096] [--block 256]
 *
 * A child process writes a run with one F32 capture point of --gb gigabytes (rows of a
 * known function of (row, feature)), then a fresh child opens it with openRun() and
 * iterates it in blocks of --block rows, checking every value and sampling RSS. Peak RSS
 * (getrusage maxrss) of the reading process is reported with the file size; the target is
 * that it stays far below the file size and independent of it (compare --gb 0.5 and 2).
 */
import { spawnSync } from 'node:child_process';
import { rmSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const { values } = parseArgs({
  options: {
    gb: { type: 'string', default: '2' },
    dim: { type: 'string', default: '4096' },
    block: { type: 'string', default: '256' },
    role: { type: 'string' },
    dir: { type: 'string' },
  },
});
const dim = Number(values.dim);
const value = (row: number, j: number) => ((row * 131 + j * 7) % 1009) / 1009 - 0.5;

if (values.role === 'write') {
  const { ChunkWriter } = await import('../src/store/writer.js');
  const { writeManifest, writeSamples } = await import('../src/store/manifest.js');
  const dir = values.dir!;
  const rows = Math.floor((Number(values.gb) * 1e9) / (dim * 4));
  const K = 1024;
  const chunks = Math.ceil(rows / K);
  const hook = { name: 'layers.0.mlp.in', dim, dtype: 'F32' as const };
  const samples = Array.from({ length: rows },
    (_, i) => ({ index: i, id: `s${i}`, labels: { group: `g${i % 5}` }, tokens: 1, truncated: false }));
  writeManifest(dir, {
    format: 'lobes-run',
    formatVersion: 1,
    lobesVersion: 'bench',
    createdAt: new Date().toISOString(),
    model: { dir: 'synthetic', graphSha256: '0'.repeat(64),
      arch: { family: 'llama', layers: 1, hidden: dim, intermediate: dim, heads: null, kvHeads: null, vocab: 0,
        dtype: 'float32', quantization: null } },
    tokenizer: { source: 'synthetic', chatTemplate: false, addBos: false, maxTokens: null },
    dataset: { spec: 'synthetic', itemsSha256: '0'.repeat(64), count: rows, axes: ['group'] },
    capture: { points: [hook], selection: ['mlp'] },
    dtype: 'fp32',
    provider: { device: 'cpu', deviceId: 0 },
    shard: null,
    counts: { samples: rows, truncated: 0, tokens: rows },
    timings: {},
    complete: true,
    settings: { batch: 1, tokenBudget: null, chunkRows: K },
    layout: { datasetRows: rows, rowStart: 0, rowEnd: rows, chunkStart: 0, chunkEnd: chunks },
  });
  writeSamples(dir, samples);
  const w = ChunkWriter.create(dir, [hook], K);
  for (let c = 0; c < chunks; c++) {
    const n = Math.min(K, rows - c * K);
    const data = new Float32Array(n * dim);
    for (let r = 0; r < n; r++) for (let j = 0; j < dim; j++) data[r * dim + j] = value(c * K + r, j);
    w.write(c, c * K, n, new Map([[hook.name, data]]));
  }
  process.stdout.write(JSON.stringify({ rows, bytes: rows * dim * 4 }) + '\n');
} else if (values.role === 'read') {
  const { openRun } = await import('../src/store/index.js');
  const baseline = process.memoryUsage().rss;
  const run = await openRun(values.dir!);
  const afterOpen = process.memoryUsage().rss;
  let peak = afterOpen;
  let rowsSeen = 0;
  let bad = 0;
  const t0 = performance.now();
  for await (const c of run.iterate('layers.0.mlp.in', Number(values.block))) {
    for (let r = 0; r < c.rows; r += 97)
      for (let j = 0; j < dim; j += 13) if (c.data[r * dim + j] !== Math.fround(value(c.start + r, j))) bad++;
    rowsSeen += c.rows;
    if ((c.start / c.rows) % 16 === 0) peak = Math.max(peak, process.memoryUsage().rss);
  }
  const secs = (performance.now() - t0) / 1000;
  const maxRss = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify({ rowsSeen, bad, secs, baseline, afterOpen, peakSampled: peak, maxRss }) + '\n');
} else {
  const self = fileURLToPath(import.meta.url);
  const dir = path.resolve('bench/out/reader-rss');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const child = (role: string) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', self, '--role', role, '--dir', dir, '--gb', values.gb!,
      '--dim', values.dim!, '--block', values.block!], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${role} failed: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop()!);
  };
  const t = performance.now();
  const w = child('write');
  console.log(
    `wrote ${(w.bytes / 1e9).toFixed(2)} GB (${w.rows} rows x ${dim} F32) in ${
      ((performance.now() - t) / 1000).toFixed(1)
    } s (setup, not measured)`,
  );
  const r = child('read');
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  console.log(
    `streamed ${r.rowsSeen} rows in blocks of ${values.block} in ${r.secs.toFixed(1)} s (${
      (w.bytes / 1e9 / r.secs).toFixed(2)
    } GB/s), ${r.bad} wrong values`,
  );
  console.log(
    `reader RSS: ${mb(r.baseline)} at start, ${mb(r.afterOpen)} after openRun, peak ${
      mb(r.maxRss)
    } (getrusage maxrss); capture is ${mb(w.bytes)}`,
  );
  console.log(
    `peak RSS / capture size = ${(r.maxRss / w.bytes).toFixed(3)}; streaming added ${
      mb(r.maxRss - r.afterOpen)
    } above openRun (the samples table of ${w.rows} rows is the part that grows with the run)`,
  );
  writeFileSync(path.join(dir, 'result.json'), JSON.stringify({ ...w, ...r }, null, 2));
  rmSync(path.join(dir, 'activations'), { recursive: true, force: true });
}
