/**
 * The mean-pooled capture points against Hugging Face: `final.mean` and
 * `layers.{i}.resid_out.mean` of the tiny reference models (torch.onnx dynamo export, and
 * optimum's with KV-cache inputs) against the masked means of test/goldens/make_mean_goldens.py,
 * in one mixed-length batch padded on the left and on the right.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCaptureEngine } from '../../src/runtime/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { relErr } from './reference-forward.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOK = path.join(ROOT, 'node_modules', '@lenml', 'tokenizer-llama3_1', 'models');
const haveTok = existsSync(path.join(TOK, 'tokenizer.json'));

for (const variant of ['hf-tiny-llama31', 'hf-tiny-llama31-optimum']) {
  const REF = path.join(ROOT, 'test', 'goldens', variant);
  const g: { ids: number[][]; tensors: Record<string, number[][]> } = JSON.parse(
    readFileSync(path.join(REF, 'mean-goldens.json'), 'utf8'),
  );

  describe.skipIf(!haveTok)(`mean-pooled captures against Hugging Face (${variant})`, () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'lobes-mean-'));
      for (const f of ['model.onnx', 'config.json']) copyFileSync(path.join(REF, f), path.join(dir, f));
      for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(TOK, f), path.join(dir, f));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('the texts have different lengths, so the batches are padded', () => {
      expect(new Set(g.ids.map((x) => x.length)).size).toBeGreaterThan(1);
    });

    for (const side of ['left', 'right'] as const) {
      it(`final.mean and every layers.{i}.resid_out.mean match the masked means (${side} padding)`, async () => {
        const engine = await openCaptureEngine(dir, { capture: ['final', 'resid', 'mean'], device: 'cpu' });
        try {
          const names = engine.hooks.map((h) => h.name);
          const want = Object.keys(g.tensors).sort();
          expect(names.filter((n) => n.endsWith('.mean')).sort()).toEqual(want);
          const out = await engine.run(padBatch(g.ids, 128004, side));
          for (const name of want) {
            const d = g.tensors[name]![0]!.length;
            const got = out.get(name)!;
            expect(got.length).toBe(g.ids.length * d);
            for (let i = 0; i < g.ids.length; i++) {
              expect(relErr(got.subarray(i * d, (i + 1) * d), Float64Array.from(g.tensors[name]![i]!)),
                `${name} text ${i}`).toBeLessThan(1e-4);
            }
          }
          // the mean is not the last token's state (the comparison above could not pass for it)
          const d = g.tensors['final.mean']![0]!.length;
          expect(relErr(out.get('final.hidden')!.subarray(0, d), out.get('final.mean')!.subarray(0, d)))
            .toBeGreaterThan(0.05);
        } finally {
          await engine.close();
        }
      });
    }

    it('--capture mean alone gives only the pooled points', async () => {
      const engine = await openCaptureEngine(dir, { capture: ['mean'], device: 'cpu', layers: '1' });
      try {
        expect(engine.hooks.map((h) => h.name)).toEqual(['final.mean', 'layers.1.resid_out.mean']);
      } finally {
        await engine.close();
      }
    });
  });
}
