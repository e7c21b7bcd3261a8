/**
 * `lobes attend`'s attention capture (layers.L.attn.weights, found by structure) on the
 * conversions of the Hugging Face checkpoints, against transformers' own attention weights
 * (eager, output_attentions, test/goldens/make_hf_checkpoint_goldens.py): every layer and head
 * from the last token, the texts as one padded batch. Covers Qwen2's biased q/k, Qwen3's q/k
 * norms before the rotary embedding and Mistral's sliding window (8 tokens, texts of 10 to 66),
 * in the explicit layout (Softmax in the graph) and the genai layout (weights recomputed from
 * GroupQueryAttention's inputs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfCheckpoint } from '../../src/convert/convert.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { CKPTS, META, golden } from './hf-families.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-hf-attn-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

describe.each(['llama', 'mistral', 'qwen2', 'qwen3'] as const)('%s attention weights', (family) => {
  for (const layout of ['explicit', 'genai'] as const) {
    it(`${layout}: every layer and head from the last token equals transformers`, async () => {
      const out = path.join(tmp, `${family}-${layout}`);
      await convertHfCheckpoint(path.join(CKPTS, family), out, { layout });
      const eng = await openAttentionEngine(out, { device: 'cpu' });
      let worst = 0;
      try {
        expect(eng.layers).toEqual([0, 1]);
        for (const side of layout === 'explicit' ? (['left', 'right'] as const) : (['right'] as const)) {
          const b = padBatch(META.ids, META.pad, side);
          const rows = realRows(b, await eng.run(b), eng.layers);
          rows.forEach((r, i) => {
            const want = golden(`${family}.attn.text${i}`);
            expect(r.length, `${family} text ${i}`).toBe(want.length);
            const e = maxAbs(r, want);
            worst = Math.max(worst, e);
            expect(e, `${family} ${layout} text ${i} (${side} padding)`).toBeLessThan(1e-5);
          });
        }
      } finally {
        await eng.close();
      }
      console.log(`${family} ${layout}: attention weights max abs error vs transformers ${worst.toExponential(2)}`);
    });
  }
});
