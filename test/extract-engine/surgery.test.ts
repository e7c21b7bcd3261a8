import { describe, it, expect } from 'vitest';
import * as ort from 'onnxruntime-node';
import { GENAI, hasGenai } from './helpers.js';
import { analyseModel, openCaptureEngine, positionIds } from '../../src/extract/engine.js';
import { buildCaptureModel } from '../../src/extract/surgery.js';
import { isPastInput } from '../../src/extract/discover.js';
import { padBatch } from '../../src/extract/batching.js';
import { encodeModel } from '../../src/onnx/index.js';

describe.skipIf(!hasGenai)('capture graph surgery', () => {
  it('prunes lm_head and KV outputs; in-graph empty KV cache gives the same captures as fed empty tensors', async () => {
    const a = analyseModel(GENAI);
    const g = a.disc.index;
    const past = a.loaded.model.graph!.input.filter((v) => isPastInput(g, v.name!));
    expect(past).toHaveLength(4);
    const hooks = a.disc.points;
    const surg = buildCaptureModel(
      a.loaded.model,
      hooks,
      'attention_mask',
      past.map((v) => ({ name: v.name!, elemType: v.type!.tensorType!.elemType!, kv: [1, 16] as [number, number] })),
    );
    const gr = surg.model.graph!;
    // Only the hook outputs remain; the lm_head weight and its MatMul are gone.
    expect(gr.output.map((o) => o.name)).toEqual(hooks.map((h) => `lobes.out.${h.name}`));
    const lmW = a.disc.lmHead.weight;
    expect(gr.initializer.some((t) => t.name === lmW)).toBe(false);
    expect(gr.node.some((n) => n.input.includes(lmW))).toBe(false);
    expect(gr.input.map((v) => v.name)).toEqual(['input_ids', 'attention_mask', 'position_ids']);
    const sess = await ort.InferenceSession.create(encodeModel(surg.model), {
      logSeverityLevel: 3,
      extra: { session: { model_external_initializers_file_folder_path: a.loaded.dir } },
    } as any);
    const eng = await openCaptureEngine(GENAI, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
    try {
      const b = padBatch([[1, 5, 6, 7, 8], [1, 9], [1, 300, 301]], 0, 'left');
      const dims = [b.batch, b.seq];
      const out = await sess.run({
        input_ids: new ort.Tensor('int64', b.inputIds, dims),
        attention_mask: new ort.Tensor('int64', b.attentionMask, dims),
        position_ids: new ort.Tensor('int64', positionIds(b.attentionMask, b.batch, b.seq), dims),
      });
      const want = await eng.run(b);
      for (const h of hooks) {
        expect(out[`lobes.out.${h.name}`]!.dims).toEqual([3, h.dim]);
        expect(Array.from(out[`lobes.out.${h.name}`]!.data as Float32Array)).toEqual(Array.from(want.get(h.name)!));
      }
    } finally {
      await sess.release();
      await eng.close();
    }
  });
});
