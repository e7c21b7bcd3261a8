/**
 * Conversion of a Hugging Face bf16 checkpoint at a real model's shape, beside `cp` of the same
 * checkpoint; prints one JSON line.
 *
 *   npx tsx bench/hf-convert.ts [--family llama|qwen2] [--layers N] [--weights W[,W...]] [--dir DIR] [--keep]
 *
 * llama: Llama-3.1-8B's shape (hidden 4096, intermediate 14336, 32 / 8 heads, vocab 128256,
 * untied); qwen2: Qwen2.5-7B's (hidden 3584, intermediate 18944, 28 / 4 heads, vocab 152064,
 * q/k/v biases, RoPE base 1e6, untied). --layers keeps the first N layers (default: all), every
 * tensor still at the full model's shape, so the largest tensors (embeddings and lm_head) are
 * the real ones and time per byte carries over to the whole model.
 *
 * Generated into DIR (default $LOBES_MODEL_CACHE or the system temp folder), never into the
 * repository: a seeded checkpoint (src/convert/llama-onnx seededLlamaSource rounded to bf16)
 * in 5 GB shards with model.safetensors.index.json, the Llama-3.1 tokenizer from node_modules.
 * Then, in one run, from the page cache (the checkpoint was just written; RAM permitting):
 *   cp       `cp -r` of the checkpoint folder, wall time, and with a `sync` of the copy after it
 *            (the conversion fsyncs what it writes);
 *   convert  `lobes convert --model CKPT --out OUT --weights W` (explicit layout; W auto by
 *            default, which is bf16 for this checkpoint: the bf16 bits kept, cast to fp32 in the
 *            graph; fp32 writes them decoded, twice the bytes) in its own process: wall time
 *            and peak RSS (/usr/bin/time's maximum resident set size).
 * With several W (e.g. --weights bf16,fp32,bf16,fp32: pairs alternating in one sitting), cp and
 * convert are run once per W, in order, against the same checkpoint (each output removed before
 * the next), one JSON line each, with the load average (1 min) before and after.
 * Everything generated is removed at the end unless --keep.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, statSync, readdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { StTensorSpec } from '../src/formats/safetensors.js';
import { writeShardedSafetensors } from '../src/formats/safetensors-shards.js';
import { expectedWeights, seededLlamaSource, type LlamaSpec } from '../src/convert/llama-onnx/index.js';
import { floatToBf16 } from '../src/util/half.js';
import { LLAMA_31_8B } from './scale/weights.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: v } = parseArgs({
  options: { family: { type: 'string', default: 'llama' }, layers: { type: 'string' },
    weights: { type: 'string', default: 'auto' }, dir: { type: 'string' }, keep: { type: 'boolean' } },
});
const weightsList = v.weights!.split(',');

const SHAPES: Record<string, LlamaSpec> = {
  // Llama-3.1-8B's shape, as bench/scale does
  llama: { ...LLAMA_31_8B, modelType: 'llama' },
  qwen2: { layers: 28, hidden: 3584, intermediate: 18944, heads: 28, kvHeads: 4, headDim: 128, vocab: 152064,
    rmsNormEps: 1e-6, ropeTheta: 1000000, ropeScaling: null, maxPositions: 32768, tiedEmbeddings: false,
    modelType: 'qwen2', attnBias: true },
};
const base = SHAPES[v.family!];
if (!base) throw new Error(`--family must be llama or qwen2, got ${v.family}`);
const spec: LlamaSpec = { ...base, layers: v.layers ? Number(v.layers) : base.layers };
const dir = path.join(v.dir ?? process.env.LOBES_MODEL_CACHE ?? os.tmpdir(),
  `lobes-hf-convert-${v.family}-${spec.layers}-${process.pid}`);
const ckpt = path.join(dir, 'ckpt');
mkdirSync(dir, { recursive: true });

const folderBytes = (d: string) => readdirSync(d).reduce((a, f) => a + statSync(path.join(d, f)).size, 0);

try {
  // The checkpoint: seeded float32 rows rounded to bf16, a 32 MB piece at a time.
  const src = seededLlamaSource(spec, 8);
  const specs: StTensorSpec[] = expectedWeights(spec).map(([name, shape]) => ({ name, dtype: 'BF16', shape }));
  const t0 = performance.now();
  await writeShardedSafetensors(ckpt, specs, (t, write) => {
    const rows = t.shape[0]!;
    const cols = t.shape.length === 1 ? 1 : t.shape[1]!;
    const per = Math.max(1, Math.floor((16 << 20) / cols));
    for (let r = 0; r < rows; r += per) {
      const f = src.rows(t.name, r, Math.min(rows, r + per));
      const h = new Uint16Array(f.length);
      for (let i = 0; i < f.length; i++) h[i] = floatToBf16(f[i]!);
      write(h);
    }
  }, { metadata: { format: 'pt' } });
  const genSeconds = (performance.now() - t0) / 1000;
  const config = {
    architectures: [spec.modelType === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    model_type: spec.modelType,
    hidden_size: spec.hidden,
    intermediate_size: spec.intermediate,
    num_hidden_layers: spec.layers,
    num_attention_heads: spec.heads,
    num_key_value_heads: spec.kvHeads,
    head_dim: spec.headDim,
    vocab_size: spec.vocab,
    rms_norm_eps: spec.rmsNormEps,
    rope_theta: spec.ropeTheta,
    rope_scaling: spec.ropeScaling,
    max_position_embeddings: spec.maxPositions,
    tie_word_embeddings: false,
    hidden_act: 'silu',
    torch_dtype: 'bfloat16',
  };
  writeFileSync(path.join(ckpt, 'config.json'), JSON.stringify(config, null, 2) + '\n');
  const tok = path.join(ROOT, 'node_modules', '@lenml', 'tokenizer-llama3_1', 'models');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(tok, f), path.join(ckpt, f));
  const bytes = folderBytes(ckpt);
  const largest = Math.max(...specs.map((s) => s.shape.reduce((a, b) => a * b, 1) * 2));

  for (const [run, weights] of weightsList.entries()) {
    const load0 = os.loadavg()[0];
    const c0 = performance.now();
    const cp = spawnSync('cp', ['-r', ckpt, path.join(dir, 'copy')]);
    if (cp.status !== 0) throw new Error(`cp failed: ${cp.stderr}`);
    const cpSeconds = (performance.now() - c0) / 1000;
    // The conversion fsyncs what it wrote; cp does not: the same copy followed by sync, for comparison.
    const s0 = performance.now();
    spawnSync('sync');
    const cpSyncSeconds = cpSeconds + (performance.now() - s0) / 1000;
    rmSync(path.join(dir, 'copy'), { recursive: true, force: true });

    const out = path.join(dir, 'onnx');
    rmSync(out, { recursive: true, force: true });
    const k0 = performance.now();
    const conv = spawnSync('/usr/bin/time', ['-f', 'maxrss_kb=%M user=%U sys=%S', process.execPath, '--import', 'tsx',
      path.join(ROOT, 'src/cli/bin.ts'), 'convert', '--model', ckpt, '--out', out, '--weights', weights, '--quiet',
      '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
    const convSeconds = (performance.now() - k0) / 1000;
    if (conv.status !== 0) throw new Error(`convert failed: ${conv.stderr}`);
    const rss = Number(/maxrss_kb=(\d+)/.exec(conv.stderr)?.[1]) * 1024;
    const cpu = /user=([\d.]+) sys=([\d.]+)/.exec(conv.stderr);
    const res = JSON.parse(conv.stdout);
    rmSync(out, { recursive: true, force: true });
    console.log(JSON.stringify({
      run,
      family: v.family,
      layers: spec.layers,
      ofLayers: base.layers,
      hidden: spec.hidden,
      intermediate: spec.intermediate,
      vocab: spec.vocab,
      checkpointBytes: bytes,
      largestTensorBytes: largest,
      outputBytes: res.modelBytes + res.dataBytes,
      weightsRequested: weights,
      weights: res.options.weights,
      generateSeconds: +genSeconds.toFixed(1),
      cpSeconds: +cpSeconds.toFixed(2),
      convertSeconds: +convSeconds.toFixed(2),
      convertVsCp: +(convSeconds / cpSeconds).toFixed(2),
      cpSyncSeconds: +cpSyncSeconds.toFixed(2),
      convertVsCpSync: +(convSeconds / cpSyncSeconds).toFixed(2),
      writerPhases: res.phases,
      convertUserSeconds: Number(cpu?.[1]),
      convertSysSeconds: Number(cpu?.[2]),
      peakRssBytes: rss,
      peakRssBeyondLargestTensorBytes: rss - largest,
      loadAverage: [+load0.toFixed(2), +os.loadavg()[0].toFixed(2)],
      cpus: os.cpus().length,
      node: process.version,
    }));
  }
} finally {
  if (!v.keep) rmSync(dir, { recursive: true, force: true });
}
