/**
 * The real SmolLM2-135M-Instruct GGUF (../shared) converted to ONNX, against Hugging Face
 * transformers' own GGUF load of the same file (goldens from test/goldens/
 * make_smollm2_goldens.py: float32, eager attention, one text per forward pass):
 *
 *   - the dequantized, un-permuted weights equal HF's bit for bit (sha256 of float32 bytes);
 *   - the converted tokenizer gives HF's token ids on 26 English and Chinese texts;
 *   - `lobes extract` (batches of 8, right-padded) through the fp32-weight conversion gives
 *     last-token final.hidden and every layer's mlp.in / mlp.down_in within 1e-4 relative;
 *   - `lobes extract --model FILE.gguf` (default conversion: the Q4_1 blocks kept as
 *     MatMulNBits) gives the same numbers within float tolerance, and records the GGUF;
 *   - greedy decoding after the chat template gives HF's 12 tokens for 5 prompts (through the
 *     genai layout's KV cache, so that layout is checked on the real model too);
 *   - `lobes wanda` scores the GGUF's own weights, equal to the converted fp32 weights'.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { SMOL_GGUF, ROOT, haveShared } from './gguf-fixtures.js';
import { loadSmolGoldens, sketch, type SmolGoldens } from './smollm2-goldens.js';
import { relErr } from './tiny-llama3.js';
import { openGgufLlama } from '../../src/convert/gguf-llama.js';
import { resolveModel } from '../../src/convert/cache.js';
import { runExtract } from '../../src/extract/run.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { openRun } from '../../src/store/index.js';
import { ggufMatrices, onnxMatrices, wantedMatrices } from '../../src/wanda/weights.js';
import { columnBlockSums } from '../../src/wanda/kernel.js';
import { inspectModel } from '../../src/runtime/engine.js';
import { loadModel } from '../../src/onnx/index.js';

const HAVE = haveShared(SMOL_GGUF);
if (!HAVE) console.log(`skipping SmolLM2 conversion tests: ${SMOL_GGUF} is missing (../shared holds the real model)`);
const BIN = path.join(ROOT, 'src/cli/bin.ts');

function lobes(args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Worst relative error of a run's activations against the goldens: final.hidden in full, layers through sketches and norms. */
async function compareRun(runDir: string, g: SmolGoldens): Promise<{ final: number; sketch: number; norm: number }> {
  const run = await openRun(runDir);
  const T = g.texts.length;
  const H = g.config.hidden;
  const K = g.sketch_dim;
  const worst = { final: 0, sketch: 0, norm: 0 };
  const fin = await run.read('final.hidden');
  for (let t = 0; t < T; t++)
    worst.final = Math.max(worst.final, relErr(fin.subarray(t * H, (t + 1) * H), g.final.subarray(t * H, (t + 1) * H)));
  for (let l = 0; l < g.config.layers; l++) {
    for (const [p, hook] of [`layers.${l}.mlp.in`, `layers.${l}.mlp.down_in`].entries()) {
      const a = await run.read(hook);
      const d = a.length / T;
      for (let t = 0; t < T; t++) {
        const v = a.subarray(t * d, (t + 1) * d);
        const i = (t * g.config.layers + l) * 2 + p;
        const gs = g.sketches.subarray(i * K, (i + 1) * K);
        worst.sketch = Math.max(worst.sketch, relErr(sketch(v, K), gs));
        let n2 = 0;
        for (const x of v) n2 += x * x;
        worst.norm = Math.max(worst.norm, Math.abs(Math.sqrt(n2) - g.norms[i]!) / g.norms[i]!);
      }
    }
  }
  return worst;
}

describe.skipIf(!HAVE)('SmolLM2-135M-Instruct GGUF against Hugging Face transformers', () => {
  let g: SmolGoldens;
  let tmp: string;
  let cache: string;
  let fp32Dir: string;
  let data: string;
  beforeAll(async () => {
    g = loadSmolGoldens();
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-smollm2-'));
    cache = path.join(tmp, 'cache');
    data = path.join(tmp, 'texts.jsonl');
    writeFileSync(data,
      g.texts.map((text, i) => JSON.stringify({ id: `t${i}`, text, lang: /[\u4e00-\u9fff]/.test(text) ? 'zh' : 'en' }))
        .join('\n') + '\n');
    fp32Dir = (await resolveModel(SMOL_GGUF, { cache, weights: 'fp32', log: () => {} })).dir;
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('dequantizes and un-permutes the weights exactly as transformers does', () => {
    const m = openGgufLlama(SMOL_GGUF);
    try {
      for (const [name, want] of Object.entries(g.weights)) {
        expect(m.weights.shape(name), name).toEqual(want.shape);
        const rows = m.weights.rows(name, 0, want.shape[0]!);
        expect(createHash('sha256').update(new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength)).digest('hex'),
          name).toBe(want.sha256);
      }
    } finally {
      m.close();
    }
  });

  it('tokenizes like Hugging Face', async () => {
    const tok = await loadTokenizer(fp32Dir, { maxTokens: null, chatTemplate: false });
    expect(g.texts.map((t) => tok.encode(t).ids)).toEqual(g.ids);
  });

  it('lobes extract through the fp32 conversion matches the last-token activations within 1e-4', async () => {
    const out = path.join(tmp, 'run-fp32');
    await runExtract({ model: fp32Dir, data: `jsonl:${data}?text=text&label=lang&id=id`, out, capture: ['final', 'mlp'],
      dtype: 'fp32', batch: 8, quiet: true });
    const w = await compareRun(out, g);
    expect(w.final).toBeLessThan(1e-4);
    expect(w.sketch).toBeLessThan(1e-4);
    expect(w.norm).toBeLessThan(1e-4);
  });

  it('lobes extract --model FILE.gguf (Q4_1 kept as MatMulNBits) gives the same numbers and records the GGUF', async () => {
    const out = path.join(tmp, 'run-q4');
    const r = lobes(['extract', '--model', SMOL_GGUF, '--cache', cache, '--data',
      `jsonl:${data}?text=text&label=lang&id=id`, '--out', out, '--dtype', 'fp32', '--batch', '8', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    const w = await compareRun(out, g);
    expect(w.final).toBeLessThan(1e-4);
    expect(w.sketch).toBeLessThan(1e-4);
    expect(w.norm).toBeLessThan(1e-4);
    const m = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.model.source).toMatchObject({ format: 'gguf', path: path.resolve(SMOL_GGUF), size: 98362432 });
    expect(m.model.source.headerSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(m.model.dir).toBe(m.model.source.converted);
    expect(m.model.arch.quantization).toMatch(/MatMulNBits/);
    // The two conversions are two cache entries.
    expect(m.model.dir).not.toBe(fp32Dir);

    // wanda on this run scores the GGUF itself (the run's source), by default.
    const wr = lobes(['wanda', out, '--by', 'lang', '--permutations', '0', '--threads', '1', '--json']);
    expect(wr.code, wr.stderr).toBe(0);
    const weights = JSON.parse(wr.stdout).settings.weights;
    expect(weights).toMatchObject({ source: 'gguf', path: path.resolve(SMOL_GGUF) });
    // The file scored, hashed: the sha256 ../shared's NOTICE.md gives for it.
    expect(weights.files).toEqual([{ name: path.basename(SMOL_GGUF), bytes: 98362432,
      sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53' }]);
  });

  it('greedy decoding after the chat template gives Hugging Face’s tokens (genai layout, KV cache)', async () => {
    const genai = (await resolveModel(SMOL_GGUF, { cache, weights: 'fp32', layout: 'genai', log: () => {} })).dir;
    const session = await ort.InferenceSession.create(path.join(genai, 'model.onnx'));
    const { layers, kv_heads: kvHeads } = g.config;
    const hd = g.config.hidden / g.config.heads;
    try {
      for (const gr of g.greedy) {
        const ids = [...gr.ids];
        let past: Record<string, ort.Tensor> = {};
        for (let l = 0; l < layers; l++) {
          for (const kv of ['key', 'value'])
            past[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, hd]);
        }
        let input = ids;
        for (let step = 0; step < gr.new_ids.length; step++) {
          const n = input.length;
          const out = await session.run({
            input_ids: new ort.Tensor('int64', BigInt64Array.from(input, BigInt), [1, n]),
            attention_mask: new ort.Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
            ...past,
          });
          const logits = out.logits!.data as Float32Array;
          const V = logits.length / n;
          let best = 0;
          for (let v = 1; v < V; v++) if (logits[(n - 1) * V + v]! > logits[(n - 1) * V + best]!) best = v;
          ids.push(best);
          input = [best];
          past = {};
          for (let l = 0; l < layers; l++)
            for (const kv of ['key', 'value']) past[`past_key_values.${l}.${kv}`] = out[`present.${l}.${kv}`]!;
        }
        expect(ids.slice(gr.ids.length), gr.prompt).toEqual(gr.new_ids);
      }
    } finally {
      await session.release();
    }
  });

  it('wanda column sums from the GGUF equal those from the converted fp32 weights', async () => {
    const hooks = [576, 1536].flatMap((dim, k) =>
      [0, 29].map((l) => ({ name: `layers.${l}.${k ? 'mlp.down_in' : 'mlp.in'}`, dim }))
    );
    const wanted = wantedMatrices(hooks);
    const fromGguf = ggufMatrices(SMOL_GGUF, wanted);
    const info = await inspectModel(fp32Dir);
    const fromOnnx = onnxMatrices(loadModel(fp32Dir), info.points, wanted);
    expect(fromGguf.map((m) => m.name)).toEqual(fromOnnx.map((m) => m.name));
    for (let i = 0; i < fromGguf.length; i++) {
      const a = columnBlockSums(fromGguf[i]!, { rowBlock: 64 });
      const b = columnBlockSums(fromOnnx[i]!, { rowBlock: 64 });
      expect(a.length).toBe(b.length);
      expect(Buffer.from(a.buffer).equals(Buffer.from(b.buffer)), fromGguf[i]!.name).toBe(true);
    }
  });
});
