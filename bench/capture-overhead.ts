/**
 * Capture overhead: time of a capture run ÷ time of the unmodified model, same inputs, same
 * provider, measured in one process (interleaved repetitions, medians), plus tokens/s.
 *
 *   npx tsx bench/capture-overhead.ts [--device cpu|cuda|webgpu] [--device-id N]
 *        [--models genai,tiny-llama,bench] [--texts 64] [--batch 8] [--reps 5] [--seed 1] [--threads N]
 *
 * Models: `genai` (../shared/models/ort-genai-tiny-llama-fp16), a generated model name
 * (tiny-llama, blocks, bench ≈ 106M parameters) or a folder path. Writes
 * bench/out/capture-overhead-<device>.json and prints a markdown table.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openCaptureEngine, openPlainSession } from '../src/runtime/engine.js';
import { loadTokenizer } from '../src/runtime/tokenize.js';
import { padBatch, planBatches } from '../src/runtime/batching.js';
import { Rng } from '../src/util/rng.js';
import type { CaptureEngine, CaptureFamily, Device, TokenBatch } from '../src/runtime/types.js';

const { values } = parseArgs({
  options: {
    device: { type: 'string', default: 'cpu' },
    'device-id': { type: 'string', default: '0' },
    models: { type: 'string', default: 'genai,tiny-llama,bench' },
    texts: { type: 'string', default: '64' },
    batch: { type: 'string', default: '8' },
    reps: { type: 'string', default: '5' },
    seed: { type: 'string', default: '1' },
    threads: { type: 'string', default: '0' },
  },
});
const device = values.device as Device;
const deviceId = Number(values['device-id']);
const nTexts = Number(values.texts);
const batchRows = Number(values.batch);
const reps = Number(values.reps);
const seed = Number(values.seed);
const threads = Number(values.threads) || undefined;
const here = import.meta.dirname;

const WORDS = (
  'the a of and to in is was that for on with as by at from his her they this which people village market river ' +
  'children teacher family friend stranger elder festival harvest promise secret letter story question answer help ' +
  'quietly suddenly often never always because although while after before during between against around ' +
  'shared refused offered remembered argued laughed listened waited travelled apologised thanked welcomed'
).split(' ');

function makeTexts(rng: Rng, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const len = 10 + rng.int(90);
    const w: string[] = [];
    for (let j = 0; j < len; j++) w.push(WORDS[rng.int(WORDS.length)]!);
    out.push(w.join(' ') + '.');
  }
  return out;
}

async function resolveModel(name: string): Promise<string | null> {
  if (name === 'genai') {
    const d = resolve(here, '../../shared/models/ort-genai-tiny-llama-fp16');
    return existsSync(join(d, 'model.onnx')) ? d : null;
  }
  if (name.includes('/') && existsSync(name)) return name;
  try {
    const models: any = await import('../src/models/index.js');
    return models.ensureGeneratedModel(name);
  } catch (e) {
    console.error(`skipping ${name}: ${(e as Error).message}`);
    return null;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

interface Row {
  model: string;
  params: string;
  texts: number;
  tokens: number;
  batches: number;
  plainMs: number;
  captureMs: number;
  ratio: number;
  captureAllMs: number;
  ratioAll: number;
  finalOnlyMs: number;
  ratioFinal: number;
  tokensPerSecond: number;
}

const rows: Row[] = [];
for (const name of String(values.models).split(',')) {
  const dir = await resolveModel(name);
  if (!dir) {
    console.error(`skipping ${name}: not found`);
    continue;
  }
  const tok = await loadTokenizer(dir, { maxTokens: 256, chatTemplate: false });
  const texts = makeTexts(new Rng(seed), nTexts);
  const seqs = texts.map((t) => tok.encode(t).ids);
  const plan = planBatches(seqs.map((s) => s.length), { batch: batchRows });
  const batches: TokenBatch[] = plan.map((idx) => padBatch(idx.map((i) => seqs[i]!), tok.padId, tok.paddingSide));
  const tokens = seqs.reduce((s, x) => s + x.length, 0);

  const plain = await openPlainSession(dir, device, deviceId, threads);
  const fams: CaptureFamily[][] = [['final', 'mlp'], ['final', 'mlp', 'resid'], ['final']];
  const engines: CaptureEngine[] = [];
  for (const f of fams) engines.push(await openCaptureEngine(dir, { capture: f, device, deviceId, threads }));
  const info = engines[0]!.info.arch;
  const params = `${info.layers}L h${info.hidden} i${info.intermediate} v${info.vocab} ${info.dtype}`;

  const runPlain = async (b: TokenBatch) => {
    await plain.session.run(plain.feeds(b));
  };
  const runCap = async (k: number, b: TokenBatch) => {
    await engines[k]!.run(b);
  };
  const runners = [(b: TokenBatch) => runPlain(b), (b: TokenBatch) => runCap(0, b), (b: TokenBatch) => runCap(1, b),
    (b: TokenBatch) => runCap(2, b)];
  // Warm-up.
  for (const b of batches) for (const f of runners) await f(b);
  const totals = runners.map(() => [] as number[]);
  const perBatch = runners.map(() => [] as number[]);
  // Per batch, the four variants run back to back (order rotated), so changes in machine load
  // hit all of them alike; per repetition the batch times are summed.
  for (let r = 0; r < reps; r++) {
    const sum = runners.map(() => 0);
    for (const [bi, b] of batches.entries()) {
      for (let k = 0; k < runners.length; k++) {
        const j = (k + r + bi) % runners.length;
        const t = performance.now();
        await runners[j]!(b);
        const dt = performance.now() - t;
        sum[j]! += dt;
        perBatch[j]!.push(dt);
      }
    }
    sum.forEach((x, j) => totals[j]!.push(x));
  }
  const [tp, tc, ta, tf] = totals as [number[], number[], number[], number[]];
  // Ratio: median over (repetition, batch) of variant time ÷ plain time on the same batch.
  const paired = (xs: number[]) => median(xs.map((x, i) => x / perBatch[0]![i]!));
  await plain.session.release();
  for (const e of engines) await e.close();
  const row: Row = {
    model: name,
    params,
    texts: nTexts,
    tokens,
    batches: batches.length,
    plainMs: median(tp),
    captureMs: median(tc),
    ratio: paired(perBatch[1]!),
    captureAllMs: median(ta),
    ratioAll: paired(perBatch[2]!),
    finalOnlyMs: median(tf),
    ratioFinal: paired(perBatch[3]!),
    tokensPerSecond: tokens / (median(tc) / 1000),
  };
  rows.push(row);
  console.error(
    `${name}: plain ${row.plainMs.toFixed(1)} ms, capture ${row.captureMs.toFixed(1)} ms (×${
      row.ratio.toFixed(3)
    }), all families ×${row.ratioAll.toFixed(3)}, final only ×${row.ratioFinal.toFixed(3)}, ${
      row.tokensPerSecond.toFixed(0)
    } tok/s`,
  );
}

const outDir = join(here, 'out');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, `capture-overhead-${device}.json`),
  JSON.stringify({ device, deviceId, seed, texts: nTexts, batch: batchRows, reps, rows }, null, 2));
console.log(
  `device ${device}, threads ${
    threads ?? 'default'
  }, ${nTexts} texts, batch ${batchRows}, ${reps} interleaved reps (times: medians of the repetition totals; ratios: medians over repetitions × batches of the per-batch ratio to the plain model), seed ${seed}`,
);
console.log(
  '| model | shape | tokens | plain ms | capture ms (final,mlp) | ratio | ratio (final,mlp,resid) | ratio (final only) | capture tok/s |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(
    `| ${r.model} | ${r.params} | ${r.tokens} | ${r.plainMs.toFixed(1)} | ${r.captureMs.toFixed(1)} | ${
      r.ratio.toFixed(3)
    } | ${r.ratioAll.toFixed(3)} | ${r.ratioFinal.toFixed(3)} | ${r.tokensPerSecond.toFixed(0)} |`,
  );
}
