/**
 * The real model: SmolLM2-135M-Instruct (../shared, a Q4_1 GGUF) converted by lobes into both
 * layouts, explicit (Softmax in the graph) and genai (GroupQueryAttention with in-op rotary and
 * packed QKV), with exact 4-bit MatMulNBits weights. The attention rows of the answering
 * position equal Hugging Face transformers' eager attention (output_attentions=True, the GGUF
 * dequantized by transformers' loader; goldens from test/attend/make_attention_goldens.py) at
 * every layer and head within 1e-4, in one mixed-length batch padded on the left and one padded on
 * the right (GroupQueryAttention cannot read left padding: the engine moves the rows right and back); `lobes attend` on the GGUF
 * itself pads on the right.
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { existsSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { resolveModel } from '../../src/convert/cache.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';
import { cli } from '../runtime/helpers.js';
import { maxAbsDiff } from './reference.js';
import type { AttendItem } from '../../src/attend/types.js';

const GGUF = resolve(import.meta.dirname,
  '../../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');
const HAVE = existsSync(GGUF);
if (!HAVE) console.log(`SmolLM2 attention tests skipped: ${GGUF} is absent (../shared is missing)`);
const FIX = resolve(import.meta.dirname, 'fixtures');
/** Converted folders are kept between test runs (the cache key follows the GGUF and the converter). */
const CACHE = join(tmpdir(), 'lobes-test-gguf-cache');

describe.skipIf(!HAVE)('SmolLM2-135M-Instruct against Hugging Face eager attention', () => {
  const meta = JSON.parse(readFileSync(join(FIX, 'smollm2.json'), 'utf8'));
  const h = readSafetensorsHeader(join(FIX, 'smollm2.safetensors'));
  const gold: Float32Array[] = meta.ids.map((_: unknown, i: number) => readTensorFloat32(h, `ids${i}`));
  const dirs: Record<string, string> = {};
  beforeAll(async () => {
    for (const layout of ['explicit', 'genai'] as const)
      dirs[layout] = (await resolveModel(GGUF, { cache: CACHE, layout, log: () => undefined })).dir;
  }, 300_000);

  for (const layout of ['explicit', 'genai'] as const) {
    it(
      `${layout} export: all 30 layers × 9 heads within 1e-4, in mixed-length batches padded on the left and on the right`,
      async () => {
        const eng = await openAttentionEngine(dirs[layout]!, { device: 'cpu' });
        try {
          expect(eng.sites.length).toBe(30);
          expect(eng.sites[0]!.source).toBe(layout === 'explicit' ? 'softmax' : 'GroupQueryAttention');
          // The goldens are single prompts in Hugging Face (no padding); lengths 94, 156, 39.
          for (const side of ['left', 'right'] as const) {
            const b = padBatch(meta.ids, 0, side);
            const rows = realRows(b, await eng.run(b), eng.layers);
            rows.forEach((r, i) => {
              expect(r.length).toBe(gold[i]!.length);
              expect(maxAbsDiff(r, gold[i]!), `${layout} prompt ${i}, ${side} padding`).toBeLessThan(1e-4);
            });
          }
        } finally {
          await eng.close();
        }
      },
      300_000,
    );
  }

  it('lobes attend takes the GGUF itself, and reads the answering row of the last 20 layers', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'lobes-attend-smol-'));
    try {
      const out = join(tmp, 'out');
      const r = await cli(['attend', GGUF, '--cache', CACHE, '--data', 'builtin:social?lang=zh', '--limit', '2',
        '--out', out, '--quiet', '--bootstrap', '0']);
      expect(r.code, r.err).toBe(0);
      const items = readFileSync(join(out, 'items.jsonl'), 'utf8').trim().split('\n').map((l) =>
        JSON.parse(l) as AttendItem
      );
      expect(items[0]!.layers).toEqual(Array.from({ length: 20 }, (_, i) => 10 + i));
      expect(items[0]!.heads).toBe(9);
      for (const it of items) {
        expect(it.unaligned).toBe(0);
        // Chinese text, byte-level BPE: every Han character is a word of its own, with weight.
        const han = it.words.filter((w) => /\p{Script=Han}/u.test(w.text));
        expect(han.length).toBeGreaterThan(5);
        for (const w of han) expect([...w.text].length).toBe(1);
      }
      const s = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
      expect(s.model.source.format).toBe('gguf');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 300_000);
});
