/**
 * Capture engine on generated models vs the independent plain-TypeScript forward pass
 * (test/models/reference-forward.ts, computed from the generator's in-memory weights).
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { ensureGeneratedModel, generatedModelParams as genParams } from '../../src/models/write.js';
import { encodeBpe } from '../../src/models/tokenizer.js';
import type { TinyLlamaParams } from '../../src/models/tinyllama.js';
import { openCaptureEngine } from '../../src/runtime/engine.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { padBatch } from '../../src/runtime/batching.js';
import { cachedParams, referenceForward, relErr, row, type ReferenceOutputs } from './reference-forward.js';

const generatedModelParams = (name: string) => cachedParams(name, genParams);

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TINY = path.join(ROOT, 'models', 'tiny-llama');

const TEXTS = [
  'The team met on Monday to plan the garden.',
  'Hi',
  '下雨的时候，她喜欢坐在窗边读书。',
  'Trust grows slowly. You keep small promises, you arrive on time, and you return what you borrow.',
  'Be curious!',
];
const TOL = 1e-4;

function expected(p: TinyLlamaParams, r: ReferenceOutputs, name: string): Float64Array {
  const t = r.seq - 1;
  const { hidden: H, intermediate: I } = p.opts;
  if (name === 'final.hidden') return row(r.finalHidden, t, H);
  const m = /^layers\.(\d+)\.(mlp\.in|mlp\.down_in|resid_out)$/.exec(name);
  if (!m) throw new Error(`unexpected hook ${name}`);
  const l = Number(m[1]);
  if (m[2] === 'mlp.in') return row(r.mlpIn[l]!, t, H);
  if (m[2] === 'mlp.down_in') return row(r.downIn[l]!, t, I);
  return row(r.residOut[l]!, t, H);
}

async function compare(dir: string, p: TinyLlamaParams, texts: string[], tol = TOL) {
  const seqs = texts.map((t) => [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, t)]);
  const refs = seqs.map((s) => referenceForward(p, s));
  const engine = await openCaptureEngine(dir, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
  let worst = 0;
  try {
    const L = p.opts.layers;
    const want = ['final.hidden'];
    for (let l = 0; l < L; l++) want.push(`layers.${l}.mlp.in`, `layers.${l}.mlp.down_in`, `layers.${l}.resid_out`);
    expect(engine.hooks.map((h) => h.name).sort()).toEqual(want.sort());
    for (const side of ['left', 'right'] as const) {
      const out = await engine.run(padBatch(seqs, p.tokenizer.padId, side));
      for (const h of engine.hooks) {
        const got = out.get(h.name)!;
        expect(got, h.name).toBeInstanceOf(Float32Array);
        expect(got.length, h.name).toBe(seqs.length * h.dim);
        for (let b = 0; b < seqs.length; b++) {
          const e = relErr(got.subarray(b * h.dim, (b + 1) * h.dim), expected(p, refs[b]!, h.name));
          expect(e, `${h.name} row ${b} (${side} padding)`).toBeLessThan(tol);
          worst = Math.max(worst, e);
        }
      }
    }
    // One at a time gives the same numbers as the mixed batch.
    const batched = await engine.run(padBatch(seqs, p.tokenizer.padId, 'left'));
    for (let b = 0; b < seqs.length; b++) {
      const single = await engine.run(padBatch([seqs[b]!], p.tokenizer.padId, 'left'));
      for (const h of engine.hooks) {
        const a = single.get(h.name)!;
        const c = batched.get(h.name)!.subarray(b * h.dim, (b + 1) * h.dim);
        expect(relErr(c, a), `${h.name} row ${b} batch vs single`).toBeLessThan(tol / 10);
      }
    }
  } finally {
    await engine.close();
  }
  return worst;
}

describe('capture engine vs plain-TypeScript forward pass', () => {
  it('built-in tiny-llama: final, mlp and resid captures, both padding sides, batch = singles', async () => {
    await compare(TINY, generatedModelParams('tiny-llama'), TEXTS);
  });

  it('tiny-llama with KV-cache inputs (empty past)', async () => {
    await compare(ensureGeneratedModel('tiny-llama-past'), generatedModelParams('tiny-llama-past'), TEXTS.slice(0, 3));
  });

  it('tiny-llama with opaque names and shuffled node order', async () => {
    await compare(ensureGeneratedModel('tiny-llama-opaque'), generatedModelParams('tiny-llama-opaque'),
      TEXTS.slice(0, 3));
  });

  it('float16 model: captures come back as float32 and agree within fp16 precision', async () => {
    await compare(ensureGeneratedModel('tiny-llama-fp16'), generatedModelParams('tiny-llama-fp16'), TEXTS.slice(0, 3),
      1e-2);
  });

  it('4-bit MatMulNBits model (dequantized weights in the reference)', async () => {
    await compare(ensureGeneratedModel('tiny-llama-q4'), generatedModelParams('tiny-llama-q4'), TEXTS.slice(0, 3));
  });

  it('blocks model (hidden 512, intermediate 1024)', async () => {
    await compare(ensureGeneratedModel('blocks'), generatedModelParams('blocks'), TEXTS.slice(0, 3));
  });

  it("lobes' tokenizer on the generated folder adds BOS and matches the generator's BPE", async () => {
    const p = generatedModelParams('tiny-llama');
    const tok = await loadTokenizer(TINY, { maxTokens: null, chatTemplate: false });
    expect(tok.padId).toBe(p.tokenizer.padId);
    for (const t of TEXTS) expect(tok.encode(t).ids).toEqual([p.tokenizer.bosId, ...encodeBpe(p.tokenizer, t)]);
  });

  it('final.hidden × lm_head equals the unmodified model logits at the last token', async () => {
    const p = generatedModelParams('tiny-llama');
    const { hidden: H, vocab: V } = p.opts;
    const seqs = TEXTS.map((t) => [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, t)]);
    const batch = padBatch(seqs, p.tokenizer.padId, 'right');
    const engine = await openCaptureEngine(TINY, { capture: ['final'], device: 'cpu' });
    const fin = (await engine.run(batch)).get('final.hidden')!;
    await engine.close();
    const s = await ort.InferenceSession.create(path.join(TINY, 'model.onnx'));
    const pos = new BigInt64Array(batch.batch * batch.seq);
    for (let b = 0; b < batch.batch; b++) for (let t = 0; t < batch.seq; t++) pos[b * batch.seq + t] = BigInt(t);
    const out = await s.run({
      input_ids: new ort.Tensor('int64', batch.inputIds, [batch.batch, batch.seq]),
      attention_mask: new ort.Tensor('int64', batch.attentionMask, [batch.batch, batch.seq]),
      position_ids: new ort.Tensor('int64', pos, [batch.batch, batch.seq]),
    });
    await s.release();
    const logits = out.logits!.data as Float32Array;
    for (let b = 0; b < batch.batch; b++) {
      const h = fin.subarray(b * H, (b + 1) * H);
      const z = new Float64Array(V);
      for (let v = 0; v < V; v++) {
        let acc = 0;
        for (let j = 0; j < H; j++) acc += p.lmHead[v * H + j]! * h[j]!;
        z[v] = acc;
      }
      const t = batch.lastIndex[b]!;
      expect(relErr(z, logits.subarray((b * batch.seq + t) * V, (b * batch.seq + t + 1) * V))).toBeLessThan(TOL);
    }
  });
});
