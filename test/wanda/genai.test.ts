/**
 * A real exporter's graph: the onnxruntime-genai fp16 tiny Llama in ../shared (weights in
 * model.onnx.data). Extract a few labelled texts, then score its fp16 initializers and check
 * the maps against the naive computation from the initializers read independently.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runExtract } from '../../src/extract/run.js';
import { runWanda } from '../../src/wanda/index.js';
import { openRun } from '../../src/store/index.js';
import { inspectModel } from '../../src/runtime/engine.js';
import { loadModel, readInitializerFloat32 } from '../../src/onnx/index.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import { tmpDir, cleanupTmp, naivePooled, transpose } from './helpers.js';

afterAll(cleanupTmp);

const GENAI = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
  '../../../shared/models/ort-genai-tiny-llama-fp16');
const has = existsSync(path.join(GENAI, 'model.onnx'));
if (!has) console.log(`skipping the onnxruntime-genai wanda test: ${GENAI} is absent`);

describe.skipIf(!has)('wanda on the onnxruntime-genai fp16 graph', () => {
  it('reads fp16 MatMul initializers from external data and pools them exactly', async () => {
    const dir = tmpDir('lobes-wanda-genai-');
    const texts = ['The cat sat on the mat.', 'Numbers like 3.14 are fun.', 'She said hello and left.',
      'We met again today.', 'Rain fell all night long.', 'He wrote a short note.'];
    const data = path.join(dir, 'd.jsonl');
    writeFileSync(data,
      texts.map((t, i) => JSON.stringify({ id: `t${i}`, text: t, kind: i % 2 ? 'odd' : 'even' })).join('\n') + '\n');
    const run = path.join(dir, 'run');
    await runExtract({ model: GENAI, data: `jsonl:${data}?text=text&label=kind&id=id`, out: run, capture: ['mlp'],
      dtype: 'fp32', quiet: true });
    const res = await runWanda(run, { by: 'kind', block: [16, 8], permutations: 9, seed: 1, quiet: true });
    expect(res.settings.weights.source).toBe('onnx');
    expect(res.regions.matrices.length).toBe(6);
    // Naive: the initializer as float32 via the ONNX module, transposed to [d_out, d_in].
    const info = await inspectModel(GENAI);
    const model = loadModel(GENAI);
    const reader = await openRun(run);
    const rows = reader.select('kind', 'even');
    const h = readSafetensorsHeader(path.join(res.dir, 'pooled.safetensors'));
    for (const m of res.regions.matrices) {
      const ref = info.points.find((p) => p.name === m.input)!.projections!.find((p) => p.proj === m.proj)!;
      expect(ref.layout).toBe('in_out');
      const w = transpose(readInitializerFloat32(model, ref.weight), m.dIn, m.dOut);
      const x = await reader.read(m.input, rows);
      const s = Array.from({ length: m.dIn },
        (_, j) => Math.sqrt(Array.from(rows).reduce((a, _r, k) => a + x[k * m.dIn + j] ** 2, 0) / rows.length));
      const naive = naivePooled(w, m.dOut, m.dIn, s, 16, 8);
      const got = readTensorFloat32(h, `even|${m.name}`);
      for (let k = 0; k < naive.length; k++) expect(got[k]).toBeCloseTo(naive[k], 5);
    }
  });
});
