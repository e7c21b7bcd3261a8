/**
 * Throughput and memory of the streaming Llama ONNX writer on a Llama-3.1-8B-shaped model
 * (32 layers, hidden 4096, intermediate 14336, 32 / 8 heads, vocab 128256, llama3 rope,
 * context 131072) in the genai int4 layout, from a seeded random source, written into a
 * temporary folder and deleted afterwards. Two sources, each in its own child process (so each
 * peak RSS is its own):
 *
 *   rows   float rows, quantized to 4 bits by the writer (the safetensors / F16 GGUF path)
 *   nbits  4-bit blocks handed over by the source (the Q4_0 / Q4_K GGUF path)
 *
 * Each prints wall time and CPU time, bytes written, throughput, `cat model.onnx.data > /dev/null`
 * of the written file from the page cache and a raw durable write of as many bytes
 * (`dd if=/dev/zero … conv=fsync`: what the disk takes) in the same run, and the child's peak RSS.
 * The writer fsyncs the data file before the rename (reported apart as fsync_s).
 *
 *   npx tsx bench/llama-writer.ts [--layers N] [--source rows|nbits|both] [--weights q4|fp16]
 *                                 [--layout genai|explicit] [--dir PARENT] [--keep]
 *
 * Check `df -h` first: the full model is about 7 GB (fp32 embeddings, as onnxruntime-genai's
 * CPU int4 export stores them). Targets: peak RSS ≤ 2 GB.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { plannedDataBytes, seededLlamaSource, writeLlamaOnnx, type LlamaSpec,
  type WriteLlamaOptions } from '../src/convert/llama-onnx/index.js';
import { buildOptions } from '../src/convert/llama-onnx/build.js';
import { LLAMA_31_8B } from './scale/weights.js';

const { values } = parseArgs({
  options: {
    layers: { type: 'string' },
    source: { type: 'string' },
    weights: { type: 'string' },
    layout: { type: 'string' },
    dir: { type: 'string' },
    keep: { type: 'boolean' },
    child: { type: 'string' },
  },
});

// Llama-3.1-8B-Instruct: the base model's shape with the instruct model's end-of-turn ids.
const spec: LlamaSpec = { ...LLAMA_31_8B, layers: Number(values.layers ?? 32), eosTokenId: [128001, 128008, 128009] };
const opts: WriteLlamaOptions = {
  layout: (values.layout ?? 'genai') as WriteLlamaOptions['layout'],
  dtype: values.weights === 'fp16' ? 'fp16' : 'fp32',
  weights: (values.weights ?? 'q4') as WriteLlamaOptions['weights'],
};
const GB = 1e9;

async function child(kind: 'rows' | 'nbits', parent: string): Promise<void> {
  const dir = path.join(parent, `model-${kind}`);
  const src = seededLlamaSource(spec, 8, { nbits4: kind === 'nbits' });
  let last = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await writeLlamaOnnx(dir, spec, src, {
    ...opts,
    onProgress: (done, total, tensor) => {
      const now = performance.now();
      if (now - last < 10000) return;
      last = now;
      process.stderr.write(
        `  ${kind}: ${(done / GB).toFixed(2)} / ${(total / GB).toFixed(2)} GB (${tensor}) at ${
          ((now - t0) / 1000).toFixed(0)
        } s\n`,
      );
    },
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const data = path.join(dir, 'model.onnx.data');
  const c0 = performance.now();
  const cat = spawnSync('sh', ['-c', `cat "${data}" > /dev/null`]);
  const catS = (performance.now() - c0) / 1000;
  if (cat.status !== 0) throw new Error(`cat failed: ${cat.stderr}`);
  const rss = process.resourceUsage().maxRSS * 1024;
  // Raw durable write of as many bytes (dd from /dev/zero, fsync at the end), for scale.
  const raw = path.join(parent, `raw-${kind}`);
  const d0 = performance.now();
  const dd = spawnSync('sh', ['-c',
    `dd if=/dev/zero of="${raw}" bs=4M count=${Math.ceil(r.dataBytes / 4194304)} conv=fsync 2>/dev/null`]);
  const ddS = (performance.now() - d0) / 1000;
  rmSync(raw, { force: true });
  if (dd.status !== 0) throw new Error(`dd failed: ${dd.stderr}`);
  const bytes = r.dataBytes + r.modelBytes;
  console.log(
    JSON.stringify({
      source: kind,
      layout: opts.layout,
      weights: opts.weights,
      layers: spec.layers,
      wall_s: +wall.toFixed(1),
      cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(1),
      load: os.loadavg()[0]!.toFixed(1),
      weights_s: +r.seconds.weights.toFixed(1),
      fsync_s: +r.seconds.sync.toFixed(1),
      graph_s: +r.seconds.graph.toFixed(2),
      data_gb: +(r.dataBytes / GB).toFixed(3),
      model_onnx_mb: +(r.modelBytes / 1e6).toFixed(2),
      write_gb_s: +(bytes / GB / wall).toFixed(3),
      cat_s: +catS.toFixed(1),
      cat_gb_s: +(r.dataBytes / GB / catS).toFixed(2),
      ratio_vs_cat: +(catS / wall).toFixed(3),
      dd_write_s: +ddS.toFixed(1),
      ratio_vs_dd: +(ddS / wall).toFixed(3),
      peak_rss_mb: Math.round(rss / 1e6),
      storage: [...new Set(Object.values(r.storage))].join(','),
    }),
  );
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  if (values.child) {
    await child(values.child as 'rows' | 'nbits', values.dir!);
    return;
  }
  const parentBase = values.dir ?? os.tmpdir();
  const need = plannedDataBytes(spec, buildOptions(opts), opts.layout);
  const fs = statfsSync(parentBase);
  const free = fs.bavail * fs.bsize;
  console.error(
    `planned model.onnx.data ${(need / GB).toFixed(2)} GB; free in ${parentBase}: ${(free / GB).toFixed(1)} GB; load ${
      os.loadavg().map((x) => x.toFixed(2)).join(' ')
    }`,
  );
  if (free < need * 1.2) throw new Error(`not enough free space in ${parentBase} for ${(need / GB).toFixed(1)} GB`);
  const parent = mkdtempSync(path.join(parentBase, 'lobes-writer-bench-'));
  const kinds = values.source === 'rows' || values.source === 'nbits' ? [values.source] : ['nbits', 'rows'];
  const self = fileURLToPath(import.meta.url);
  try {
    for (const kind of kinds) {
      const args = ['--import', 'tsx', self, '--child', kind, '--dir', parent, '--layers', String(spec.layers),
        '--layout', opts.layout, '--weights', opts.weights];
      if (values.keep) args.push('--keep');
      const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
      if (r.status !== 0) throw new Error(`${kind} run failed (${r.status})`);
    }
  } finally {
    if (!values.keep && existsSync(parent)) rmSync(parent, { recursive: true, force: true });
  }
}

await main();
