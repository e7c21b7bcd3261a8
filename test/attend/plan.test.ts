/**
 * lobes attend checks the context and the memory of its batches the way extract and eval do
 * (src/runtime/plan.ts): a text past the model's context is refused before the model loads,
 * a batch larger than the memory limit before any batch runs; neither leaves a folder.
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cli } from '../runtime/helpers.js';
import { runAttend } from '../../src/attend/run.js';
import { batchBytes } from '../../src/runtime/plan.js';

const TINY = resolve(import.meta.dirname, '../../models/tiny-llama');

describe('attend: context and memory plans', () => {
  let tmp: string;
  let short: string;
  let data: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'lobes-attend-plan-'));
    // The tiny model declaring a 24-token context.
    short = join(tmp, 'short-context');
    cpSync(TINY, short, { recursive: true });
    const cfg = JSON.parse(readFileSync(join(short, 'config.json'), 'utf8'));
    writeFileSync(join(short, 'config.json'), JSON.stringify({ ...cfg, max_position_embeddings: 24 }));
    data = join(tmp, 'texts.jsonl');
    const long = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    writeFileSync(data,
      [{ id: 'a', text: 'a short one', label: 'x' }, { id: 'long', text: long, label: 'y' }].map((r) =>
        JSON.stringify(r)
      ).join('\n') + '\n');
  });

  it('refuses a text longer than the context with one line, and --max-tokens cuts it to fit', async () => {
    const out = join(tmp, 'ctx-out');
    const r = await cli(['attend', short, '--data', `jsonl:${data}?text=text&label=label`, '--out', out, '--quiet']);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(
      /sample texts\.jsonl:2: 1 of 2 texts are longer than the model's context of 24 tokens \(config\.json max_position_embeddings\); the longest has \d+ tokens \(keep the last 24 tokens of each prompt with --max-tokens 24/,
    );
    expect(existsSync(out)).toBe(false);
    const ok = await cli(['attend', short, '--data', `jsonl:${data}?text=text&label=label`, '--out', out, '--quiet',
      '--max-tokens', '24', '--bootstrap', '0']);
    expect(ok.code, ok.err).toBe(0);
  });

  it('refuses a batch plan over the memory limit before running it, naming the batch and its bytes', async () => {
    const out = join(tmp, 'mem-out');
    const limit = 10_000;
    const err = await runAttend({ model: TINY, data: `jsonl:${data}?text=text&label=label`, out, quiet: true,
      memoryLimit: () => limit }).catch((e) => e);
    expect(err.message).toMatch(
      /a batch of 2 rows × \d+ tokens needs about .* more than the 9\.8 KiB of memory this machine has/,
    );
    expect(existsSync(out)).toBe(false);
    // Its estimate is the plan's formula for the model's shape.
    const seq = Number(/× (\d+) tokens/.exec(err.message)![1]);
    const cfg = JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8'));
    expect(
      batchBytes({ heads: cfg.num_attention_heads, hidden: cfg.hidden_size, intermediate: cfg.intermediate_size }, 2,
        seq),
    ).toBeGreaterThan(limit);
  });
});
