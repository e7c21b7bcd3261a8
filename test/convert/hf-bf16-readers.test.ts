/**
 * The commands that read weights from the ONNX graph, on a bf16-stored model (the committed BF16
 * llama checkpoint converted with --weights bf16) against the fp32-stored conversion of the same
 * checkpoint:
 *  - the weights located (src/runtime/weights.ts) are BFLOAT16 initializers behind the Cast and
 *    decode to the fp32 model's values exactly;
 *  - wanda's regions and metrics (|W| column sums of every MLP matrix, times the activations)
 *    are equal;
 *  - the lens head (final norm, lm_head) and the lens's results are equal;
 *  - ablation names the same initializers and blocks, zeroes them exactly (the weight is 0 after
 *    the Cast), and its effect on the logits is the fp32 model's, bit for bit;
 *  - the random-weights control is drawn in bf16 and laid out again in the genai layout (what
 *    eval --control random on a checkpoint runs) with bf16 matrices.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfCheckpoint } from '../../src/convert/convert.js';
import { runExtract } from '../../src/extract/run.js';
import { runWanda } from '../../src/wanda/index.js';
import { runLens } from '../../src/lens/run.js';
import { readLensHead } from '../../src/lens/head.js';
import { blockEdits, copyModelFolder, storedMatrices, WeightPatcher } from '../../src/ablate/patch.js';
import { analyseModel } from '../../src/runtime/engine.js';
import { onnxMatrices } from '../../src/wanda/weights.js';
import { readInitializerFloat32 } from '../../src/onnx/index.js';
import { openHfCheckpoint } from '../../src/convert/hf-checkpoint.js';
import { randomControlModel } from '../../src/runtime/control.js';
import { genaiControlModel } from '../../src/runtime/control-layout.js';
import { relErr } from '../models/reference-forward.js';
import { CKPTS, META, batchLogits } from './hf-families.js';

let tmp: string;
const dirs = { bf16: '', fp32: '' };
const runs = { bf16: '', fp32: '' };
const TEXTS = ['The cat sat on the mat.', 'A dog ran in the park today.', 'Numbers: one two three four.',
  'Rain falls on the quiet town.', 'She reads a long book at night.', 'Birds sing before the sun rises.'];

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-bf16-readers-'));
  const data = path.join(tmp, 'items.jsonl');
  writeFileSync(data,
    TEXTS.map((text, i) => JSON.stringify({ id: `t${i}`, text, group: i % 2 ? 'odd' : 'even' })).join('\n') + '\n');
  for (const w of ['bf16', 'fp32'] as const) {
    const r = await convertHfCheckpoint(path.join(CKPTS, 'llama'), path.join(tmp, `model-${w}`), { weights: w });
    expect(r.options.weights).toBe(w);
    dirs[w] = r.dir;
    runs[w] = path.join(tmp, `run-${w}`);
    await runExtract({ model: r.dir, data: `jsonl:${data}?text=text&label=group&id=id`, out: runs[w],
      capture: ['final', 'mlp', 'resid'], dtype: 'fp32', quiet: true });
  }
}, 300_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

describe('a bf16-stored model read by wanda, the lens and ablation', () => {
  it("the projection weights are located as BF16 initializers and decode to the fp32 model's values", () => {
    const got: Record<string, { dtype: string; values: Float32Array[] }> = {};
    for (const w of ['bf16', 'fp32'] as const) {
      const a = analyseModel(dirs[w]);
      const refs = onnxMatrices(a.loaded, a.info.points,
        [0, 1].flatMap((layer) =>
          ['gate_proj', 'up_proj', 'down_proj'].map((proj) => ({ name: `layers.${layer}.mlp.${proj}`, layer, proj,
            input: proj === 'down_proj' ? `layers.${layer}.mlp.down_in` : `layers.${layer}.mlp.in`,
            dIn: proj === 'down_proj' ? 128 : 64 })
          )
        ));
      const dtypes = new Set(refs.map((r) => (r.source.kind === 'dense' ? r.source.dtype : r.source.kind)));
      expect(dtypes.size).toBe(1);
      got[w] = { dtype: [...dtypes][0]!,
        values: refs.map((r) => readInitializerFloat32(a.loaded, (r.source as { tensor: string }).tensor)) };
    }
    expect(got.bf16!.dtype).toBe('BF16');
    expect(got.fp32!.dtype).toBe('F32');
    for (const [k, v] of got.fp32!.values.entries()) expect(bits(got.bf16!.values[k]!)).toEqual(bits(v));
    // Both conversions decode through the project's code: check one against the checkpoint's own
    // bits, decoded here (a bfloat16 is the high half of a float32), read [d_in, d_out].
    const ck = openHfCheckpoint(path.join(CKPTS, 'llama'));
    ck.weights.close();
    const name = 'model.layers.0.mlp.gate_proj.weight';
    const h = ck.tensors.get(name)!;
    const t = h.tensors.get(name)!;
    expect(t.dtype).toBe('BF16');
    const raw = readFileSync(h.file).subarray(t.offset, t.offset + t.byteLength);
    const u16 = new Uint16Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const [dOut, dIn] = t.shape as [number, number];
    const want = new Uint32Array(dOut * dIn);
    for (let r = 0; r < dOut; r++) for (let c = 0; c < dIn; c++) want[c * dOut + r] = u16[r * dIn + c]! << 16;
    expect(bits(got.bf16!.values[0]!)).toEqual(want);
  });

  it("wanda's regions and metrics are the fp32 model's", async () => {
    const opts = { by: 'group', block: 16, top: { kind: 'count' as const, value: 3 }, permutations: 19, seed: 5,
      quiet: true };
    const a = await runWanda(runs.bf16, opts);
    const b = await runWanda(runs.fp32, opts);
    expect(a.regions.matrices.length).toBe(6);
    expect(a.regions).toEqual(b.regions);
    expect(a.metrics).toEqual(b.metrics);
  });

  it("the lens head and the lens's results are the fp32 model's", async () => {
    const ha = readLensHead(dirs.bf16);
    const hb = readLensHead(dirs.fp32);
    expect(bits(Float32Array.from(ha.normWeight))).toEqual(bits(Float32Array.from(hb.normWeight)));
    expect(ha.eps).toBe(hb.eps);
    expect(ha.found.dtype).toBe('BF16');
    expect(hb.found.dtype).toBe('F32');
    expect(ha.unembed.length).toBe(384 * 64);
    expect(bits(ha.unembed)).toEqual(bits(hb.unembed));
    const la = await runLens(runs.bf16, { quiet: true, topK: 3 });
    const lb = await runLens(runs.fp32, { quiet: true, topK: 3 });
    expect(la.result.items).toEqual(lb.result.items);
    expect(la.result.layers).toEqual(lb.result.layers);
  });

  it('ablation zeroes the same named blocks exactly, with the effect of the fp32 model, bit for bit', async () => {
    const matrices =
      (await runWanda(runs.fp32, { by: 'group', block: 16, permutations: 0, quiet: true })).regions.matrices;
    const sa = storedMatrices(dirs.bf16, matrices);
    const sb = storedMatrices(dirs.fp32, matrices);
    expect(sa.map((s) => s.initializer)).toEqual(sb.map((s) => s.initializer));
    expect(sa.map((s) => (s.ref.source as { dtype: string }).dtype)).toEqual(sa.map(() => 'BF16'));
    const blocks = [
      { k: 0,
        b: { tensor: 'model.layers.0.mlp.gate_proj.weight', rows: [16, 48] as [number, number],
          cols: [0, 32] as [number, number] } },
      { k: 5,
        b: { tensor: 'model.layers.1.mlp.down_proj.weight', rows: [0, 64] as [number, number],
          cols: [32, 96] as [number, number] } },
    ];
    const logits: Float32Array[] = [];
    for (const [w, stored] of [['bf16', sa], ['fp32', sb]] as const) {
      const work = path.join(tmp, `ablated-${w}`);
      copyModelFolder(dirs[w], work);
      const p = new WeightPatcher(dirs[w], work);
      for (const { k, b } of blocks) p.apply(blockEdits(stored[k]!, b));
      p.close();
      // The zeroed weights read back as 0 (through the same reader), the others unchanged.
      const a = analyseModel(work);
      const W = readInitializerFloat32(a.loaded, stored[0]!.initializer);
      const dOut = 128;
      expect(W[0 * dOut + 16]).toBe(0);
      expect(W[31 * dOut + 47]).toBe(0);
      expect(W[32 * dOut + 16]).not.toBe(0);
      logits.push((await batchLogits(work, META.ids, META.pad, 'right')).logits);
    }
    expect(bits(logits[0]!)).toEqual(bits(logits[1]!));
    const before = (await batchLogits(dirs.fp32, META.ids, META.pad, 'right')).logits;
    expect(bits(logits[0]!)).not.toEqual(bits(before));
    // the original folders are untouched
    expect(
      readFileSync(path.join(dirs.bf16, 'model.onnx.data')).equals(
        readFileSync(path.join(tmp, 'model-bf16', 'model.onnx.data')),
      ),
    ).toBe(true);
  });

  it('the random-weights control of the bf16 model is drawn in bf16 and laid out again in the genai layout with the same values', async () => {
    const cacheDir = path.join(tmp, 'controls');
    const drawn = await randomControlModel(dirs.bf16, { hidden: 64, intermediate: 128 }, { seed: 3, cacheDir,
      quiet: true });
    const ck = openHfCheckpoint(path.join(CKPTS, 'llama'));
    ck.weights.close();
    const genai = await genaiControlModel(drawn, ck.spec, { dtype: 'fp32', quiet: true });
    // Matrices by data type: the control's are the trained model's (bfloat16, and the float32 tables the writer computes).
    const types = (d: string) =>
      analyseModel(d).loaded.model.graph!.initializer.filter((t) => t.dims.length === 2).map((t) =>
        `${t.name}:${t.dataType}`
      ).sort();
    expect(types(drawn.dir)).toEqual(types(dirs.bf16));
    const g = types(genai.dir);
    expect(g.filter((t) => t.endsWith(':16')).length).toBeGreaterThan(5);
    expect(g.filter((t) => !t.endsWith(':16'))).toEqual(['cos_cache:1', 'sin_cache:1']);
    // The same drawn weights in both graphs: the logits agree as the two layouts do.
    const a = await batchLogits(drawn.dir, META.ids, META.pad, 'right');
    const b = await batchLogits(genai.dir, META.ids, META.pad, 'right');
    const trained = await batchLogits(dirs.bf16, META.ids, META.pad, 'right');
    expect(relErr(b.logits, a.logits)).toBeLessThan(1e-4);
    expect(relErr(trained.logits, a.logits)).toBeGreaterThan(1e-2);
  });
});
