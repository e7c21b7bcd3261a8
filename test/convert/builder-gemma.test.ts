/**
 * onnxruntime-genai's model builder exports (-p fp32 -e cpu) of the committed Gemma checkpoints
 * (test/goldens/make_hf_checkpoint_goldens.py --builder-gemma: builder-gemma2/, builder-gemma/):
 * lobes finds every capture point by structure in the builder's graphs and its captures and logits
 * equal transformers' (the checkpoint's own goldens) within 1e-4 relative, on the mixed-length
 * English / Chinese texts (10 to 66 tokens, longer than Gemma 2's 8-token window) in one padded
 * batch.
 *  - Gemma 2: the builder's sliding layers are GroupQueryAttention nodes with sliding_window_cache,
 *    which onnxruntime runs only with a KV buffer at least local_window_size long; lobes feeds a
 *    zero buffer of that length holding no past tokens (the mask covers the new tokens only) and,
 *    since such a node refuses a row shorter than the batch, the padded rows one at a time.
 *  - Gemma 1: the export is of an F32 copy of the F16 checkpoint (the same values): from F16 the
 *    builder stores its norm weights as fp16(1 + w), which transformers computes in float32.
 *  - Gemma 3: the builder (0.18, under transformers 5) does not export it in any config.json
 *    spelling; the generator records each error.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyseModel, planInputs } from '../../src/runtime/engine.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { openLoglikEngine } from '../../src/runtime/loglik.js';
import { openScorer } from '../../src/eval/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { CKPTS, GoldenSet, expectGoldens } from './hf-families.js';

describe.each(['gemma2', 'gemma'] as const)('builder export of the %s checkpoint', (family) => {
  const set = new GoldenSet(`goldens-${family}`);
  const dir = path.join(CKPTS, `builder-${family}`);

  it('every capture point (found by structure) and the logits equal transformers (right padding)', async () => {
    const info = set.meta.families[family]!.builder_export;
    expect(info.oracle).toBe(family);
    const lengths = set.meta.ids.map((r) => r.length);
    expect(new Set(lengths).size).toBeGreaterThan(1);
    const worst = await expectGoldens(dir, info.oracle, 'right', 1e-4, set);
    console.log(`builder ${family}: max relative error vs transformers ${worst.toExponential(2)}`);
  });

  it("attend's attention weights (every layer and head from the last token) equal transformers' output_attentions", async () => {
    const eng = await openAttentionEngine(dir, { device: 'cpu' });
    let worst = 0;
    try {
      const b = padBatch(set.meta.ids, set.meta.pad, 'right');
      const rows = realRows(b, await eng.run(b), eng.layers);
      rows.forEach((r, i) => {
        const want = set.golden(`${family}.attn.text${i}`);
        expect(r.length, `text ${i}`).toBe(want.length);
        let e = 0;
        for (let j = 0; j < want.length; j++) e = Math.max(e, Math.abs(r[j]! - want[j]!));
        worst = Math.max(worst, e);
        expect(e, `${family} text ${i}`).toBeLessThan(1e-5);
      });
    } finally {
      await eng.close();
    }
    console.log(`builder ${family}: attention weights max abs error vs transformers ${worst.toExponential(2)}`);
  });

  if (family === 'gemma2') {
    it('the scorer and the log-likelihood engine refuse its window-sized cache in one line', async () => {
      await expect(openScorer(dir, { device: 'cpu' })).rejects.toThrow(
        /^[^\n]*model\.onnx: the scorer .*window-sized KV cache \(sliding_window_cache/,
      );
      await expect(openLoglikEngine(dir, { device: 'cpu' })).rejects.toThrow(
        /^[^\n]*model\.onnx: the log-likelihood engine .*window-sized KV cache/,
      );
    });

    it("feeds the sliding layers' window-cache GroupQueryAttention a buffer of local_window_size, the full layer an empty past", () => {
      const cfg = JSON.parse(readFileSync(path.join(dir, 'genai_config.json'), 'utf8')).model.decoder;
      const w: number = cfg.sliding_window.window_size;
      expect(Math.max(...set.meta.ids.map((r) => r.length))).toBeGreaterThan(w);
      const { plans, windowCache } = planInputs(analyseModel(dir));
      expect(windowCache).toBe(true);
      const past = plans.filter((p) => p.role === 'past');
      expect(past.length).toBe(2 * cfg.num_hidden_layers);
      for (const p of past) {
        const layer = Number(p.name.split('.')[1]);
        expect(p.cacheLen ?? 0, p.name).toBe(cfg.sliding_window.layers.includes(layer) ? w : 0);
      }
    });
  }
});

describe('builder export of the gemma3 checkpoint', () => {
  it('is not made: the builder fails on every config.json spelling, and the generator records why', () => {
    const info = new GoldenSet('goldens-gemma3').meta.families.gemma3!.builder_export;
    expect(info.oracle as string | null).toBeNull();
    expect(Object.keys(info.errors ?? {}).length).toBe(3);
    for (const e of Object.values(info.errors ?? {})) expect(e).toMatch(/Error/);
    expect(existsSync(path.join(CKPTS, 'builder-gemma3'))).toBe(false);
  });
});
