import { describe, it, expect } from 'vitest';
import * as ort from 'onnxruntime-node';
import { GENAI, hasGenai } from './helpers.js';
import { analyseModel, openCaptureEngine, positionIds } from '../../src/runtime/engine.js';
import { buildCaptureModel } from '../../src/runtime/surgery.js';
import { isPastInput } from '../../src/runtime/discover.js';
import { padBatch } from '../../src/runtime/batching.js';
import { encodeModel } from '../../src/onnx/index.js';
import { genaiForward, lastTokenHook } from './genai-forward.js';
import { ensureGeneratedModel, generatedModelParams } from '../../src/models/write.js';
import { encodeBpe } from '../../src/models/tokenizer.js';
import { referenceForward, row } from '../models/reference-forward.js';
import { relErr } from './helpers.js';
import { sitePool } from '../../src/hooks.js';

describe.skipIf(!hasGenai)('capture graph surgery', () => {
  it('prunes lm_head and KV outputs; in-graph empty KV cache gives the same captures as fed empty tensors', async () => {
    const a = analyseModel(GENAI);
    const g = a.disc.index;
    const past = a.loaded.model.graph!.input.filter((v) => isPastInput(g, v.name!));
    expect(past).toHaveLength(4);
    // the last-token points (the mean-pooled ones are checked on the generated model below)
    const hooks = a.disc.points.filter((h) => sitePool(h.site) === 'last');
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
      const seqs = [[1, 5, 6, 7, 8], [1, 9], [1, 300, 301]];
      const b = padBatch(seqs, 0, 'left');
      const dims = [b.batch, b.seq];
      const out = await sess.run({
        input_ids: new ort.Tensor('int64', b.inputIds, dims),
        attention_mask: new ort.Tensor('int64', b.attentionMask, dims),
        position_ids: new ort.Tensor('int64', positionIds(b.attentionMask, b.batch, b.seq), dims),
      });
      const want = await eng.run(b);
      // Each row's selected values are the last real token's, by an independent forward pass
      // (fp16 weights and compute in the graph: agreement to fp16 precision).
      const refs = seqs.map((s) => genaiForward(GENAI, s));
      for (const h of hooks) {
        const got = out[`lobes.out.${h.name}`]!;
        expect(got.dims).toEqual([3, h.dim]);
        const data = got.data as Float32Array;
        refs.forEach((f, r) => {
          expect(relErr(data.subarray(r * h.dim, (r + 1) * h.dim), lastTokenHook(f, h.name)), `${h.name} row ${r}`)
            .toBeLessThan(3e-3);
          // and not the token before it
          expect(
            relErr(data.subarray(r * h.dim, (r + 1) * h.dim),
              lastTokenHook(genaiForward(GENAI, seqs[r].slice(0, -1)), h.name)),
            `${h.name} row ${r}`,
          ).toBeGreaterThan(0.3);
        });
        // In-graph empty KV tensors give exactly what the engine gets by feeding empty tensors.
        expect(Array.from(data)).toEqual(Array.from(want.get(h.name)!));
      }
    } finally {
      await sess.release();
      await eng.close();
    }
  });
});

describe('capture graph surgery on a generated model with KV-cache inputs', () => {
  it("selects each row's last real token, and averages the mean-pooled points over its real tokens (left and right padding), against the plain-TypeScript forward pass", async () => {
    const dir = ensureGeneratedModel('tiny-llama-past');
    const p = generatedModelParams('tiny-llama-past');
    const { hidden: H, intermediate: I, kvHeads } = p.opts;
    const a = analyseModel(dir);
    const g = a.disc.index;
    const past = a.loaded.model.graph!.input.filter((v) => isPastInput(g, v.name!));
    expect(past).toHaveLength(2 * p.opts.layers);
    const hooks = a.disc.points;
    const surg = buildCaptureModel(
      a.loaded.model,
      hooks,
      'attention_mask',
      past.map((v) => ({ name: v.name!, elemType: v.type!.tensorType!.elemType!,
        kv: [kvHeads, p.headDim] as [number, number] })
      ),
    );
    const sess = await ort.InferenceSession.create(encodeModel(surg.model), {
      logSeverityLevel: 3,
      extra: { session: { model_external_initializers_file_folder_path: a.loaded.dir } },
    } as any);
    try {
      const seqs = ['Kindness costs nothing.', 'Hi', 'She listened, then asked what he needed most.'].map((
        t,
      ) => [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, t)]);
      expect(new Set(seqs.map((s) => s.length)).size).toBe(3); // padding on every row but one
      const refs = seqs.map((s) => referenceForward(p, s));
      // the mean over the text's positions of a per-position value [seq, d]
      const meanRows = (M: Float64Array, seq: number, d: number): Float64Array => {
        const out = new Float64Array(d);
        for (let t = 0; t < seq; t++) for (let j = 0; j < d; j++) out[j] += M[t * d + j]! / seq;
        return out;
      };
      expect(hooks.filter((h) => sitePool(h.site) === 'mean').map((h) => h.name)).toEqual(['final.mean',
        ...Array.from({ length: p.opts.layers }, (_, l) => `layers.${l}.resid_out.mean`)]);
      const want = (r: number, name: string): Float64Array => {
        const f = refs[r]!;
        const t = f.seq - 1;
        if (name === 'final.hidden') return row(f.finalHidden, t, H);
        if (name === 'final.mean') return meanRows(f.finalHidden, f.seq, H);
        const mm = /^layers\.(\d+)\.resid_out\.mean$/.exec(name);
        if (mm) return meanRows(f.residOut[Number(mm[1])]!, f.seq, H);
        const m = /^layers\.(\d+)\.(mlp\.in|mlp\.down_in|resid_out)$/.exec(name)!;
        const l = Number(m[1]);
        if (m[2] === 'mlp.in') return row(f.mlpIn[l]!, t, H);
        if (m[2] === 'mlp.down_in') return row(f.downIn[l]!, t, I);
        return row(f.residOut[l]!, t, H);
      };
      for (const side of ['left', 'right'] as const) {
        const b = padBatch(seqs, p.tokenizer.padId, side);
        const dims = [b.batch, b.seq];
        const out = await sess.run({
          input_ids: new ort.Tensor('int64', b.inputIds, dims),
          attention_mask: new ort.Tensor('int64', b.attentionMask, dims),
          position_ids: new ort.Tensor('int64', positionIds(b.attentionMask, b.batch, b.seq), dims),
        });
        for (const h of hooks) {
          const v = out[`lobes.out.${h.name}`]!.data as Float32Array;
          seqs.forEach((_, r) => {
            expect(relErr(v.subarray(r * h.dim, (r + 1) * h.dim), want(r, h.name)), `${side} ${h.name} row ${r}`)
              .toBeLessThan(1e-4);
          });
        }
      }
    } finally {
      await sess.release();
    }
  });
});
