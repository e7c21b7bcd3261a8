/**
 * The capture engine on float16 onnxruntime-genai exports (GroupQueryAttention with KV-cache
 * outputs), batched with padding: the layout of the builder's fp16 CUDA export of
 * Llama-3.1-8B. The capture graph no longer reads the present.* caches, and ONNX Runtime's CPU
 * planner then wrote a float16 GroupQueryAttention's cache into a buffer sized for the empty
 * past; the surgery keeps them as graph outputs (surgery.ts, keptKvOutputs).
 *
 * Oracle: the unmodified model run by ONNX Runtime one row at a time (no padding): its logits at
 * the last token equal final.hidden × lm_head, lm_head taken from the weight source.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { writeLlamaOnnx, seededLlamaSource, type LlamaSpec } from '../../src/convert/llama-onnx/index.js';
import { openCaptureEngine } from '../../src/runtime/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { halfToFloat } from '../../src/util/half.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-gqa-fp16-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SPEC: LlamaSpec = {
  layers: 2,
  hidden: 64,
  intermediate: 160,
  heads: 4,
  kvHeads: 2,
  headDim: 16,
  vocab: 97,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  ropeScaling: null,
  maxPositions: 128,
  tiedEmbeddings: false,
};
const ROWS = [[3, 14, 15, 92, 65], [35, 89, 79, 32, 38, 46, 26, 43, 38], [27, 18]];

/** Last-token logits of one unpadded row through the unmodified fp16 model. */
async function logitsAlone(s: ort.InferenceSession, ids: number[]): Promise<Float32Array> {
  const T = ids.length;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, T]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(T).fill(1n), [1, T]),
  };
  for (const n of s.inputNames)
    if (n.startsWith('past_key_values.'))
      feeds[n] = new ort.Tensor('float16', new Uint16Array(0), [1, SPEC.kvHeads, 0, SPEC.headDim]);
  const data = (await s.run(feeds)).logits!.data as Uint16Array;
  return Float32Array.from(data.subarray((T - 1) * SPEC.vocab, T * SPEC.vocab), halfToFloat);
}

describe('capture engine on a float16 GroupQueryAttention export', () => {
  it("runs padded batches and final.hidden × lm_head equals the unmodified model's last-token logits", async () => {
    const src = seededLlamaSource(SPEC, 5);
    const dir = path.join(tmp, 'fp16');
    await writeLlamaOnnx(dir, SPEC, src, { layout: 'genai', dtype: 'fp16', weights: 'fp16' });
    const eng = await openCaptureEngine(dir, { capture: ['final', 'mlp'], device: 'cpu' });
    const plain = await ort.InferenceSession.create(path.join(dir, 'model.onnx'));
    try {
      const lm = src.rows('lm_head.weight', 0, SPEC.vocab); // HF [V, H]
      // Right padding, as lobes pads (loadTokenizer); GroupQueryAttention takes each row's length
      // from seqlens_k and places its tokens from position 0, so left padding is not its layout.
      for (const side of ['right'] as const) {
        const out = await eng.run(padBatch(ROWS, 0, side));
        const fh = out.get('final.hidden')!;
        for (const [r, ids] of ROWS.entries()) {
          const ref = await logitsAlone(plain, ids);
          const h = fh.subarray(r * SPEC.hidden, (r + 1) * SPEC.hidden);
          let num = 0;
          let den = 0;
          for (let v = 0; v < SPEC.vocab; v++) {
            let y = 0;
            for (let k = 0; k < SPEC.hidden; k++) y += h[k]! * lm[v * SPEC.hidden + k]!;
            num += (y - ref[v]!) ** 2;
            den += ref[v]! ** 2;
          }
          expect(Math.sqrt(num / den), `${side} row ${r}`).toBeLessThan(2e-2);
        }
        for (const hk of eng.hooks) expect(out.get(hk.name)!.every(Number.isFinite), hk.name).toBe(true);
      }
    } finally {
      await eng.close();
      await plain.release();
    }
  });
});
