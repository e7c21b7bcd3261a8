/**
 * Weight-pass throughput of `lobes wanda` on synthetic safetensors with Llama-3.1-8B MLP
 * shapes (gate/up 14336×4096, down 4096×14336, bf16), against `cat FILE > /dev/null` of the
 * same files from the page cache, in the same run. Also the per-group cost after the pass
 * (pooling one group's scaler into every block map) and the peak RSS.
 *
 *   npx tsx bench/wanda-throughput.ts [--layers N] [--threads N] [--reps N] [--keep DIR]
 *   npx tsx bench/wanda-throughput.ts --e2e SAMPLES [--permutations R] [--layers N] [--keep DIR] [--cold]
 *
 * --e2e: instead, a whole `runWanda` over a run directory with SAMPLES synthetic fp16 samples
 * in 5 groups (mlp.in 4096 and down_in 14336 per layer) and the same checkpoint, three times
 * (the first with an empty file-hash cache, so it hashes the checkpoint; the others find the
 * hashes cached), each against `cat` of the checkpoint timed just before it: wall times, the
 * ratio cat / wanda (target >= 0.5), the CPU time of each run (user + system, all threads)
 * and the peak RSS. --cold: the checkpoint's pages are dropped from the page cache (GNU dd
 * iflag=nocache) before `cat` and before each run, so that both read it from disk.
 *
 * Under tsx the worker threads load TypeScript through tsx (slow start-up); to measure what an
 * installed lobes does, bundle the script and the worker first:
 *
 *   npx esbuild bench/wanda-throughput.ts --bundle --platform=node --format=esm --outfile=bench/out/wb/bench.mjs
 *   npx esbuild src/wanda/colsum.worker.ts --bundle --platform=node --format=esm --outfile=bench/out/wb/colsum.worker.js
 *   node bench/out/wb/bench.mjs --layers 4
 *
 * Targets: pass >= 0.5x cat, per group <= 1 ms per layer-projection, peak RSS <= 2 GB.
 */
import { mkdtempSync, rmSync, statSync, mkdirSync, existsSync, openSync, writeSync, closeSync, renameSync,
  readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { readSafetensorsHeader } from '../src/formats/safetensors.js';
import { Rng } from '../src/util/rng.js';
import { weightPass } from '../src/wanda/pass.js';
import { poolBlocks } from '../src/wanda/stats.js';
import type { MatrixRef } from '../src/wanda/kernel.js';
import { defaultThreads } from '../src/util/worker.js';

const { values } = parseArgs({
  options: { layers: { type: 'string' }, threads: { type: 'string' }, reps: { type: 'string' },
    keep: { type: 'string' }, e2e: { type: 'string' }, permutations: { type: 'string' }, cold: { type: 'boolean' } },
});
const LAYERS = Number(values.layers ?? 1);
const REPS = Number(values.reps ?? 3);
const HIDDEN = 4096;
const INTER = 14336;
const BLOCK = 256;

/** Random bf16 bit patterns of N(0, ~0.02)-like magnitudes (exponent field kept in a realistic range). */
function randomBf16(rng: Rng, n: number): Uint16Array {
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = rng.nextU32();
    // sign | exponent 116..123 (~2^-11 .. 2^-4) | 7 mantissa bits
    out[i] = ((r & 1) << 15) | ((116 + ((r >>> 1) & 7)) << 7) | ((r >>> 4) & 0x7f);
    if (i + 1 < n) out[i + 1] = (((r >>> 11) & 1) << 15) | ((116 + ((r >>> 12) & 7)) << 7) | ((r >>> 15) & 0x7f);
  }
  return out;
}

/** Write one shard with the layer's three matrices, streaming rows (never a whole matrix in memory). */
function generate(dir: string): string[] {
  const rng = new Rng(2024);
  const files: string[] = [];
  for (let l = 0; l < LAYERS; l++) {
    const file = path.join(dir,
      `model-${String(l + 1).padStart(5, '0')}-of-${String(LAYERS).padStart(5, '0')}.safetensors`);
    files.push(file);
    if (existsSync(file)) continue;
    const specs = [
      ['gate_proj', INTER, HIDDEN],
      ['up_proj', INTER, HIDDEN],
      ['down_proj', HIDDEN, INTER],
    ] as const;
    const header: Record<string, unknown> = {};
    let off = 0;
    for (const [proj, dOut, dIn] of specs) {
      header[`model.layers.${l}.mlp.${proj}.weight`] = { dtype: 'BF16', shape: [dOut, dIn],
        data_offsets: [off, off + dOut * dIn * 2] };
      off += dOut * dIn * 2;
    }
    let json = JSON.stringify(header);
    json += ' '.repeat((8 - ((Buffer.byteLength(json) + 8) % 8)) % 8);
    const tmp = file + '.tmp';
    const fd = openSync(tmp, 'w');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
    writeSync(fd, len);
    writeSync(fd, Buffer.from(json));
    for (const [, dOut, dIn] of specs) {
      const rowsPer = 1024;
      for (let r = 0; r < dOut; r += rowsPer) {
        const rows = Math.min(rowsPer, dOut - r);
        const chunk = randomBf16(rng, rows * dIn);
        writeSync(fd, new Uint8Array(chunk.buffer));
      }
    }
    closeSync(fd);
    renameSync(tmp, file);
  }
  return files;
}

function matricesOf(files: string[]): MatrixRef[] {
  const out: MatrixRef[] = [];
  for (const file of files) {
    const h = readSafetensorsHeader(file);
    for (const t of h.tensors.values()) {
      const m = /^model\.layers\.(\d+)\.mlp\.(\w+)\.weight$/.exec(t.name)!;
      const layer = Number(m[1]);
      const proj = m[2];
      out.push({
        name: `layers.${layer}.mlp.${proj}`,
        layer,
        proj,
        input: proj === 'down_proj' ? `layers.${layer}.mlp.down_in` : `layers.${layer}.mlp.in`,
        dOut: t.shape[0],
        dIn: t.shape[1],
        source: { kind: 'dense', tensor: t.name, dtype: 'BF16', layout: 'out_in',
          data: { file, offset: t.offset, byteLength: t.byteLength } },
      });
    }
  }
  return out;
}

function timeCat(files: string[]): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync('sh', ['-c', `cat ${files.map((f) => `'${f}'`).join(' ')} > /dev/null`]);
  if (r.status !== 0) throw new Error(`cat failed: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** Drop the files' pages from the page cache (GNU dd, posix_fadvise DONTNEED), so that the next read is from disk. */
function dropCache(files: string[]): void {
  for (const f of files) {
    const r = spawnSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none']);
    if (r.status !== 0) throw new Error(`dd iflag=nocache failed for ${f}: ${r.stderr}`);
  }
}

async function main(): Promise<void> {
  const dir = values.keep ?? mkdtempSync(path.join(os.tmpdir(), 'lobes-bench-wanda-'));
  mkdirSync(dir, { recursive: true });
  const tg = Date.now();
  const files = generate(dir);
  const bytes = files.reduce((a, f) => a + statSync(f).size, 0);
  console.log(
    `files: ${files.length} x ${(bytes / files.length / 1e6).toFixed(0)} MB in ${dir} (generated in ${
      ((Date.now() - tg) / 1000).toFixed(1)
    } s)`,
  );
  const matrices = matricesOf(files);
  const weightBytes = matrices.reduce((a, m) => a + m.dOut * m.dIn * 2, 0);
  const threads = Number(values.threads ?? (await defaultThreads()));

  timeCat(files); // warm the page cache
  const catTimes: number[] = [];
  const passTimes: number[] = [];
  let colsums = new Map<string, Float32Array>();
  for (let r = 0; r < REPS; r++) {
    catTimes.push(timeCat(files));
    const t0 = process.hrtime.bigint();
    colsums = await weightPass(matrices, { rowBlock: BLOCK, threads });
    passTimes.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  const cat = Math.min(...catTimes);
  const pass = Math.min(...passTimes);
  const catGBs = bytes / cat / 1e9;
  const passGBs = weightBytes / pass / 1e9;

  // Per-group cost: pool one group's scaler into every matrix's block map.
  const rng = new Rng(1);
  const sIn = Float64Array.from({ length: HIDDEN }, () => Math.abs(rng.normal()));
  const sDown = Float64Array.from({ length: INTER }, () => Math.abs(rng.normal()));
  const outs = matrices.map((m) => new Float32Array(Math.ceil(m.dOut / BLOCK) * Math.ceil(m.dIn / BLOCK)));
  const GROUP_REPS = 50;
  for (let w = 0; w < 5; w++)
    matrices.forEach((m, k) =>
      poolBlocks(colsums.get(m.name)!, m.dIn === HIDDEN ? sIn : sDown, m.dOut, m.dIn, BLOCK, BLOCK, outs[k])
    );
  const t1 = process.hrtime.bigint();
  for (let r = 0; r < GROUP_REPS; r++)
    matrices.forEach((m, k) =>
      poolBlocks(colsums.get(m.name)!, m.dIn === HIDDEN ? sIn : sDown, m.dOut, m.dIn, BLOCK, BLOCK, outs[k])
    );
  const perGroupMs = Number(process.hrtime.bigint() - t1) / 1e6 / GROUP_REPS;
  const perMatrixMs = perGroupMs / matrices.length;

  const rssMB = process.resourceUsage().maxRSS / 1024;
  const result = {
    layers: LAYERS,
    matrices: matrices.length,
    threads,
    cores: os.availableParallelism(),
    weightGB: weightBytes / 1e9,
    catSeconds: cat,
    catGBs,
    passSeconds: pass,
    passGBs,
    ratio: passGBs / catGBs,
    /** 1-minute load average of the machine during the run (other work competes for the cores). */
    loadAverage: os.loadavg()[0],
    perGroupMs,
    perLayerProjectionMs: perMatrixMs,
    peakRssMB: rssMB,
  };
  console.log(JSON.stringify(result, null, 1));
  console.log(
    `threads ${threads}: weight pass ${passGBs.toFixed(2)} GB/s vs cat ${catGBs.toFixed(2)} GB/s: ${
      result.ratio.toFixed(2)
    }x (target >= 0.5x); ` +
      `per group ${perMatrixMs.toFixed(3)} ms per layer-projection (target <= 1 ms); peak RSS ${
        rssMB.toFixed(0)
      } MB (target <= 2048 MB); load average ${result.loadAverage.toFixed(1)}`,
  );
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}

async function e2e(): Promise<void> {
  const { writeManifest, writeSamples } = await import('../src/store/manifest.js');
  const { ChunkWriter } = await import('../src/store/writer.js');
  const { runWanda } = await import('../src/wanda/index.js');
  const dir = values.keep ?? mkdtempSync(path.join(os.tmpdir(), 'lobes-bench-wanda-'));
  mkdirSync(dir, { recursive: true });
  const t0 = Date.now();
  generate(dir);
  const n = Number(values.e2e);
  const R = Number(values.permutations ?? 100);
  const run = path.join(dir, `run-${n}`);
  if (!existsSync(path.join(run, 'manifest.json'))) {
    rmSync(run, { recursive: true, force: true });
    mkdirSync(run, { recursive: true });
    const groups = ['Self-Management', 'Social Engagement', 'Cooperation', 'Emotional Resilience', 'Innovation'];
    const hooks = [];
    for (let l = 0; l < LAYERS; l++)
      hooks.push({ name: `layers.${l}.mlp.in`, dim: HIDDEN, dtype: 'F16' as const }, { name: `layers.${l}.mlp.down_in`,
        dim: INTER, dtype: 'F16' as const });
    const manifest: any = {
      format: 'lobes-run',
      formatVersion: 1,
      lobesVersion: 'bench',
      createdAt: new Date().toISOString(),
      model: { dir, graphSha256: '0'.repeat(64),
        arch: { family: 'llama', layers: LAYERS, hidden: HIDDEN, intermediate: INTER, heads: null, kvHeads: null,
          vocab: 0, dtype: 'bf16', quantization: null } },
      tokenizer: { source: 'bench', chatTemplate: false, addBos: true, maxTokens: null },
      dataset: { spec: 'bench', itemsSha256: '0'.repeat(64), count: n, axes: ['aspect'] },
      capture: { points: hooks, selection: ['mlp'] },
      dtype: 'fp16',
      provider: { device: 'cpu', deviceId: 0 },
      shard: null,
      counts: { samples: n, truncated: 0, tokens: n },
      timings: {},
      complete: false,
    };
    writeManifest(run, manifest);
    writeSamples(run,
      Array.from({ length: n },
        (_, i) => ({ index: i, id: `s${i}`, labels: { aspect: groups[i % 5] }, tokens: 1, truncated: false })));
    const chunkRows = 128;
    const w = ChunkWriter.create(run, hooks, chunkRows);
    const rng = new Rng(7);
    for (let c = 0, start = 0; start < n; c++, start += chunkRows) {
      const rows = Math.min(chunkRows, n - start);
      const data = new Map<string, Float32Array>();
      for (const h of hooks) {
        const a = new Float32Array(rows * h.dim);
        for (let i = 0; i < a.length; i++) a[i] = rng.next() * 2 - 1;
        data.set(h.name, a);
      }
      w.write(c, start, rows, data);
    }
    writeManifest(run, { ...manifest, complete: true });
  }
  const prep = (Date.now() - t0) / 1000;
  const files = readdirSync(dir).filter((f) => f.endsWith('.safetensors')).map((f) => path.join(dir, f));
  const bytes = files.reduce((a, f) => a + statSync(f).size, 0);
  // The whole command against `cat` of the same checkpoint, in one run: the first run on a
  // machine hashes every weight file (a fresh file-hash cache), later runs find the hashes in
  // the cache. `cat` is timed right before each run, from the page cache.
  const hashCache = path.join(dir, `file-sha256-${process.pid}.json`);
  process.env.LOBES_HASH_CACHE = hashCache;
  rmSync(hashCache, { force: true });
  const threads = values.threads ? Number(values.threads) : undefined;
  const rows: { run: string; catSeconds: number; wandaSeconds: number; cpuSeconds: number; ratio: number;
    loadAverage: number }[] = [];
  timeCat(files);
  for (const label of ['first run (hashes the checkpoint)', 'second run (hashes cached)',
    'third run (hashes cached)'])
  {
    // --cold: `cat` and the command each read the checkpoint from disk.
    if (values.cold) dropCache(files);
    const cat = timeCat(files);
    if (values.cold) dropCache(files);
    const t1 = Date.now();
    const c1 = process.cpuUsage();
    await runWanda(run, { weights: dir, permutations: R, seed: 1, quiet: true, threads });
    const wall = (Date.now() - t1) / 1000;
    // User + system time of the whole process (every thread).
    const c = process.cpuUsage(c1);
    rows.push({ run: label, catSeconds: cat, wandaSeconds: wall, cpuSeconds: (c.user + c.system) / 1e6,
      ratio: cat / wall, loadAverage: os.loadavg()[0] });
  }
  const rssMB = process.resourceUsage().maxRSS / 1024;
  const out = { samples: n, layers: LAYERS, permutations: R, cold: !!values.cold, checkpointGB: bytes / 1e9,
    prepSeconds: prep, runs: rows, peakRssMB: rssMB };
  console.log(JSON.stringify(out, null, 1));
  console.log(`| run | cat s | lobes wanda s | CPU s | ratio (cat s / wanda s) | load |`);
  console.log(`|---|---|---|---|---|---|`);
  for (const r of rows)
    console.log(
      `| ${r.run} | ${r.catSeconds.toFixed(2)} | ${r.wandaSeconds.toFixed(2)} | ${r.cpuSeconds.toFixed(2)} | ${
        r.ratio.toFixed(2)
      } | ${r.loadAverage.toFixed(1)} |`,
    );
  console.log(
    `runWanda: ${n} samples, ${LAYERS} layers (${3 * LAYERS} matrices, ${
      (bytes / 1e9).toFixed(2)
    } GB), ${R} permutations; peak RSS ${rssMB.toFixed(0)} MB (target <= 2048 MB); target: ratio >= 0.5`,
  );
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
  else rmSync(hashCache, { force: true });
}

(values.e2e ? e2e() : main()).catch((e) => {
  console.error(e);
  process.exit(1);
});
