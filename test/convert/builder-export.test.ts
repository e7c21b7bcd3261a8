/**
 * onnxruntime-genai's model builder exports (-p fp32 -e cpu) of the same Hugging Face
 * checkpoints (test/goldens/make_hf_checkpoint_goldens.py: builder-FAMILY/): lobes finds every
 * capture point by structure in the builder's own graphs (its fused qkv_proj with the Qwen2 bias
 * Add, Qwen3's per-head SimplifiedLayerNormalization, Mistral's local_window_size) and its
 * captures and logits equal transformers' within 1e-4 relative. The qwen2 export is of the
 * checkpoint without its llama3 rope scaling (the builder refuses that scaling), so its oracle is
 * transformers on the qwen2 GGUF, which holds the same weights without scaling.
 *
 * Where the builder (0.18) exports another model than the checkpoint, lobes reads what it wrote:
 * it leaves out a rope_scaling spelled with the legacy "type" key (llama: linear factor 2) and
 * Mistral's sliding window. Those exports' oracle is transformers on the checkpoint with that
 * setting removed (FAMILY-builder goldens), and they are checked to differ from the checkpoint.
 * The Gemma exports (builder-gemma2, builder-gemma) are tested in builder-gemma.test.ts.
 */
import { describe, expect, it } from 'vitest';
import * as path from 'node:path';
import { CKPTS, META, expectGoldens } from './hf-families.js';

describe.each(['llama', 'mistral', 'qwen2', 'qwen3'] as const)('builder export of the %s checkpoint', (family) => {
  it('every capture point (found by structure) and the logits equal transformers (right padding)', async () => {
    const info = META.families[family]!.builder_export;
    const worst = await expectGoldens(path.join(CKPTS, `builder-${family}`), info.oracle, 'right');
    console.log(
      `builder ${family}: max relative error vs transformers ${worst.toExponential(2)} (oracle ${info.oracle})`,
    );
    if (info.drops) expect(info.builder_vs_checkpoint_logits_rel!).toBeGreaterThan(0.1);
  });
});
