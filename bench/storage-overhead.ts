/**
 * Storage overhead of `lobes extract`: time spent encoding, hashing, writing and fsyncing
 * chunk files and the index (manifest timings.storeMs) relative to time inside the model
 * (timings.computeMs), on the ~106M-parameter generated model (12 layers, hidden 768,
 * intermediate 3072) over builtin:social. Target: storeMs <= 5% of computeMs.
 *
 *   npx tsx bench/storage-overhead.ts [--capture final,mlp] [--dtype fp16] [--limit N] [--device cpu]
 *
 * Both figures come from the same run. Output goes to bench/out/storage-overhead/.
 */
import { rmSync, writeFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureGeneratedModel } from '../src/models/index.js';
import { loadDataset } from '../src/data/index.js';
import { runExtract } from '../src/extract/run.js';
import type { CaptureFamily, Device } from '../src/runtime/types.js';

const { values } = parseArgs({
  options: {
    capture: { type: 'string', default: 'final,mlp' },
    dtype: { type: 'string', default: 'fp16' },
    limit: { type: 'string', default: '64' },
    device: { type: 'string', default: 'cpu' },
    batch: { type: 'string', default: '8' },
    'chunk-rows': { type: 'string', default: '16' },
  },
});

const model = ensureGeneratedModel('bench');
const out = path.resolve('bench/out/storage-overhead');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// A fixed prefix of the built-in dataset as a jsonl file (the whole set takes minutes on 2 cores).
const ds = await loadDataset('builtin:social');
const limit = Number(values.limit);
const file = path.join(out, 'items.jsonl');
writeFileSync(file,
  ds.samples.slice(0, limit).map((s) => JSON.stringify({ id: s.id, text: s.text, aspect: s.labels.aspect })).join(
    '\n',
  ) + '\n');

const run = path.join(out, 'run');
const m = await runExtract({
  model,
  data: `jsonl:${file}?text=text&label=aspect&id=id`,
  out: run,
  capture: values.capture!.split(',') as CaptureFamily[],
  dtype: values.dtype as 'fp16' | 'fp32',
  device: values.device as Device,
  batch: Number(values.batch),
  chunkRows: Number(values['chunk-rows']),
  quiet: true,
});
let bytes = 0;
let files = 0;
for (const h of readdirSync(path.join(run, 'activations'))) {
  const d = path.join(run, 'activations', h);
  if (!statSync(d).isDirectory()) continue;
  for (const f of readdirSync(d)) {
    bytes += statSync(path.join(d, f)).size;
    files++;
  }
}
const t = m.timings;
const perSample = bytes / m.counts.samples;
console.log(
  `model: ${
    path.basename(model)
  } (${m.model.arch.layers} layers, hidden ${m.model.arch.hidden}, intermediate ${m.model.arch.intermediate}), device ${m.provider.device}`,
);
console.log(
  `samples: ${m.counts.samples}, tokens: ${m.counts.tokens}, capture ${
    m.capture.selection.join(',')
  } = ${m.capture.points.length} points, ${m.dtype}`,
);
console.log(
  `stored: ${(bytes / 1e6).toFixed(1)} MB in ${files} chunk files (${(perSample / 1024).toFixed(1)} KiB per sample)`,
);
console.log(`computeMs ${t.computeMs}  storeMs ${t.storeMs}  wallMs ${t.wallMs}`);
console.log(
  `storage overhead: ${((100 * t.storeMs) / t.computeMs).toFixed(2)}% of compute time (target <= 5%), ${
    ((100 * t.storeMs) / t.wallMs).toFixed(2)
  }% of wall time`,
);
