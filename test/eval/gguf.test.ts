/**
 * lobes eval on a GGUF file: converted once (genai layout, with its KV cache) into the cache,
 * recorded as the model's source, scored through the KV cache with the letters as their own
 * tokens (SmolLM2's tokenizer.json: A–D are ids 49–52). The oracle for the scores is the other
 * layout: `--layout explicit` has no KV cache, so every prompt is one full forward pass, and its
 * letter logits must equal the shared-prefix ones.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { readEvalResults } from '../../src/eval/run.js';
import { cli } from '../runtime/helpers.js';
import { SMOLLM2_GGUF } from './smollm2.js';

const have = existsSync(SMOLLM2_GGUF);
if (!have) console.warn(`test/eval/gguf: skipped: ${SMOLLM2_GGUF} is absent`);

describe.skipIf(!have)('lobes eval MODEL.gguf', () => {
  let root: string;
  beforeAll(() => void (root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-gguf-'))));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('converts, records the source, scores through the KV cache', async () => {
    const items = path.join(root, 'items.jsonl');
    writeFileSync(items, [
      { q: 'What is the capital of France?', o: ['Berlin', 'Paris', 'Rome', 'Madrid'], a: 1 },
      { q: 'Which number is even?', o: ['3', '7', '8', '5'], a: 2 },
    ].map((x) => JSON.stringify(x)).join('\n') + '\n');
    const out = path.join(root, 'eval');
    const r = await cli(['eval', SMOLLM2_GGUF, '--data', `jsonl:${items}?question=q&options=o&answer=a`, '--out', out,
      '--cache', path.join(root, 'cache'), '--answer-prefix', '{"choice": "', '--quiet']);
    expect(r.code, r.err).toBe(0);
    const e = readEvalResults(out);
    expect(e.manifest.model.source?.format).toBe('gguf');
    expect((e.manifest.model.source as any).options.layout).toBe('genai');
    expect(e.manifest.sharedPrefix).toBe(true);
    expect(e.manifest.settings.maxTokens).toBe(8192);
    for (const rec of e.records) for (const s of rec.shuffles) expect(s.letterTokenIds).toEqual([49, 50, 51, 52]);
    // A second evaluation finds the conversion in the cache.
    const r2 = await cli(['eval', SMOLLM2_GGUF, '--data', `jsonl:${items}?question=q&options=o&answer=a`, '--out',
      path.join(root, 'eval2'), '--cache', path.join(root, 'cache')]);
    expect(r2.code).toBe(0);
    expect(r2.err).not.toMatch(/converting/);
    // The explicit layout: its own conversion, no KV cache, the same logits and picks.
    const out3 = path.join(root, 'eval3');
    const r3 = await cli(['eval', SMOLLM2_GGUF, '--data', `jsonl:${items}?question=q&options=o&answer=a`, '--out', out3,
      '--cache', path.join(root, 'cache'), '--layout', 'explicit', '--answer-prefix', '{"choice": "', '--quiet']);
    expect(r3.code, r3.err).toBe(0);
    const x = readEvalResults(out3);
    expect((x.manifest.model.source as any).options.layout).toBe('explicit');
    expect(x.manifest.model.dir).not.toBe(e.manifest.model.dir);
    expect(x.manifest.sharedPrefix).toBe(false);
    expect(x.records.map((r) => r.id)).toEqual(e.records.map((r) => r.id));
    e.records.forEach((rec, i) => {
      expect(x.records[i]!.vote).toBe(rec.vote);
      rec.shuffles.forEach((s, j) => {
        const t = x.records[i]!.shuffles[j]!;
        expect(t.order).toEqual(s.order);
        expect(t.prompt).toBe(s.prompt);
        expect(t.pick).toBe(s.pick);
        s.logits.forEach((l, k) =>
          expect(Math.abs(t.logits[k]! - l), `record ${i} shuffle ${j} letter ${k}`).toBeLessThan(2e-3)
        );
      });
    });
    // Bad --layout: a usage error before anything is converted or written.
    const bad = await cli(['eval', SMOLLM2_GGUF, '--data', `jsonl:${items}?question=q&options=o&answer=a`, '--out',
      path.join(root, 'eval4'), '--cache', path.join(root, 'cache'), '--layout', 'fused']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--layout must be genai or explicit, got "fused"/);
    expect(existsSync(path.join(root, 'eval4'))).toBe(false);
  }, 600_000);
});
