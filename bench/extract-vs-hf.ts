/**
 * CPU extraction: `lobes extract --capture final,mlp` against Hugging Face transformers with
 * forward hooks (bench/extract-hf.py), on SmolLM2-135M-Instruct and SocialEval English items,
 * with the same number of threads, in one run.
 *
 *   npx tsx bench/extract-vs-hf.ts [--items 64] [--reps 5] [--threads 2] [--batch 8]
 *        [--weights auto|fp32] [--hf-order sorted|dataset] [--cache DIR]
 *
 * lobes: the whole extraction in process (runExtract: tokenization, the capture engine, fp16
 * chunk files written and hashed, manifest) into a fresh folder each repetition; the GGUF is
 * converted once into the cache before timing and the model's load is not counted (its
 * modelLoadMs is subtracted). HF: tokenization, padding, the decoder forward with 61 hooks
 * that copy out last-token rows, results put back in text order, in memory (no files). Both
 * batch --batch rows sorted by token length. The repetitions alternate which side goes first;
 * the load average is recorded around each. Figures: median wall per side, the ratio
 * HF / lobes (>1: lobes faster) of the medians and the median of the per-repetition ratios,
 * tokens/s. A check: the largest |lobes − HF| of final.hidden relative to its scale (lobes
 * stores fp16; the weights are the same Q4_1 values, dequantized by each side).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { runExtract } from '../src/extract/run.js';
import { loadDataset } from '../src/data/index.js';
import { resolveModel } from '../src/convert/cache.js';
import { openCaptureEngine } from '../src/runtime/engine.js';
import { openRunDir } from '../src/store/reader.js';
import type { WeightsMode } from '../src/convert/convert.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const GGUF = path.resolve(ROOT, '../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');
const DATA = path.resolve(ROOT, '../shared/socialeval/worldtree_data');
const { values: o } = parseArgs({
  options: {
    items: { type: 'string', default: '64' },
    reps: { type: 'string', default: '5' },
    threads: { type: 'string', default: '2' },
    batch: { type: 'string', default: '8' },
    weights: { type: 'string', default: 'auto' },
    'hf-order': { type: 'string', default: 'sorted' },
    cache: { type: 'string' },
  },
});
const threads = Number(o.threads);
const reps = Number(o.reps);
const batch = Number(o.batch);
const load = () => os.loadavg()[0]!;

const resolved = await resolveModel(GGUF, { layout: 'explicit', weights: o.weights as WeightsMode,
  ...(o.cache ? { cache: o.cache } : {}), log: () => undefined });
const full = await loadDataset(`socialeval:${DATA}?lang=en`);
const dataset = { ...full, samples: full.samples.slice(0, Number(o.items)) };
const texts = dataset.samples.map((s) => s.text);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-extract-bench-'));

async function lobesPass(
  out: string,
): Promise<{ wall: number; tokens: number; compute: number; store: number; tokenize: number }> {
  const m = await runExtract({
    model: resolved.dir,
    data: 'bench',
    out,
    capture: ['final', 'mlp'],
    batch,
    quiet: true,
    deps: { loadDataset: async () => dataset,
      openCaptureEngine: (dir, eo) => openCaptureEngine(dir, { ...eo, threads }) },
  });
  const t = m.timings as Record<string, number>;
  return { wall: (t.wallMs! - t.modelLoadMs!) / 1000, tokens: m.counts.tokens, compute: t.computeMs! / 1000,
    store: t.storeMs! / 1000, tokenize: t.tokenizeMs! / 1000 };
}

// The HF server: loads once, then one pass per "run".
const textsFile = path.join(tmp, 'texts.json');
writeFileSync(textsFile, JSON.stringify(texts));
const py = spawn('/work/venv/bin/python', [path.join(ROOT, 'bench/extract-hf.py'), '--gguf', GGUF, '--texts', textsFile,
  '--threads', String(threads), '--batch', String(batch), '--order', String(o['hf-order'])], {
  env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
  stdio: ['pipe', 'pipe', 'ignore'],
});
const lines = createInterface({ input: py.stdout! })[Symbol.asyncIterator]();
const hf = async (cmd: string | null): Promise<any> => {
  if (cmd !== null) py.stdin!.write(cmd + '\n');
  const r = await lines.next();
  if (r.done) throw new Error('the HF side exited');
  return JSON.parse(r.value);
};

try {
  const ready = await hf(null);
  // Warm-up: one pass each (caches, allocators, first-run graph optimisation).
  await lobesPass(path.join(tmp, 'warm'));
  await hf('run');
  const rows: { rep: number; first: string; lobes: number; hf: number; load0: number; load1: number;
    lobesTokens: number; hfTokens: number; compute: number; store: number; tokenize: number }[] = [];
  for (let r = 0; r < reps; r++) {
    const load0 = load();
    const out = path.join(tmp, `run${r}`);
    let L: Awaited<ReturnType<typeof lobesPass>>;
    let H: { wall: number; tokens: number };
    if (r % 2 === 0) {
      L = await lobesPass(out);
      H = await hf('run');
    } else {
      H = await hf('run');
      L = await lobesPass(out);
    }
    rows.push({ rep: r, first: r % 2 === 0 ? 'lobes' : 'hf', lobes: L.wall, hf: H.wall, load0, load1: load(),
      lobesTokens: L.tokens, hfTokens: H.tokens, compute: L.compute, store: L.store, tokenize: L.tokenize });
    if (r > 0) rmSync(out, { recursive: true, force: true });
    console.error(
      `rep ${r}: lobes ${L.wall.toFixed(2)} s (compute ${L.compute.toFixed(2)}, store ${L.store.toFixed(2)}, tokenize ${
        L.tokenize.toFixed(2)
      }), HF ${H.wall.toFixed(2)} s, ratio ${(H.wall / L.wall).toFixed(2)}, load ${load0.toFixed(1)}→${
        load().toFixed(1)
      }`,
    );
  }
  // Agreement on final.hidden.
  await hf(`dump ${path.join(tmp, 'hf')}`);
  const run = await openRunDir(path.join(tmp, 'run0'));
  const a = await run.read('final.hidden');
  const raw = readFileSync(path.join(tmp, 'hf', 'final.hidden.npy'));
  const hdr = raw.readUInt16LE(8);
  const b = new Float32Array(raw.buffer.slice(raw.byteOffset + 10 + hdr, raw.byteOffset + raw.length));
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  const med = (xs: number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const mL = med(rows.map((x) => x.lobes));
  const mH = med(rows.map((x) => x.hf));
  console.log(
    `items ${texts.length} (SocialEval English, first in dataset order), threads ${threads}, batch ${batch}, lobes weights ${o.weights} (${
      path.basename(resolved.dir)
    }), HF order ${o['hf-order']}, torch ${ready.torch}, ${reps} interleaved reps after one warm-up each`,
  );
  console.log('| rep | first | lobes s | (compute / store / tokenize) | HF s | HF / lobes | load 1m before → after |');
  console.log('|---|---|---:|---|---:|---:|---|');
  for (const x of rows)
    console.log(
      `| ${x.rep} | ${x.first} | ${x.lobes.toFixed(2)} | ${x.compute.toFixed(2)} / ${x.store.toFixed(2)} / ${
        x.tokenize.toFixed(2)
      } | ${x.hf.toFixed(2)} | ${(x.hf / x.lobes).toFixed(2)} | ${x.load0.toFixed(1)} → ${x.load1.toFixed(1)} |`,
    );
  console.log(
    `tokens: lobes ${rows[0]!.lobesTokens}, HF ${rows[0]!.hfTokens}; tokens/s (medians): lobes ${
      (rows[0]!.lobesTokens / mL).toFixed(0)
    }, HF ${(rows[0]!.hfTokens / mH).toFixed(0)}`,
  );
  console.log(
    `ratio HF / lobes: ${(mH / mL).toFixed(2)}× (medians), ${
      med(rows.map((x) => x.hf / x.lobes)).toFixed(2)
    }× (median of per-rep ratios)`,
  );
  console.log(`final.hidden: largest |lobes − HF| ${worst.toExponential(2)} (largest |HF| ${scale.toFixed(1)})`);
} finally {
  py.stdin!.end('quit\n');
  rmSync(tmp, { recursive: true, force: true });
}
