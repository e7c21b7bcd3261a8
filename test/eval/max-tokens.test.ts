/**
 * --max-tokens: items and GAE decisions whose prompt is longer are not scored; their records say
 * why, the summary lists them and leaves them out of every figure; the rest are scored exactly
 * as without the limit. The default is the model's context length from its config files.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { modelContext } from '../../src/runtime/plan.js';

const modelContextLength = (dir: string) => modelContext(dir)?.tokens ?? null;
import { ensureGeneratedModel } from '../../src/models/write.js';
import { GENAI, hasGenai } from '../runtime/helpers.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');

describe.skipIf(!existsSync(DATA))('--max-tokens', () => {
  let root: string;
  beforeAll(() => void (root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-maxtok-'))));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('skips what does not fit, says why, and scores the rest as before', async () => {
    // SocialEval prompts are longer than the tiny model's declared 2,048 positions (its byte-level
    // tokenizer): a copy that declares a longer context lets every item fit, as the comparison needs.
    const declared = ensureGeneratedModel('tiny-llama-past');
    const model = path.join(root, 'long-context');
    cpSync(declared, model, { recursive: true });
    const cfg = JSON.parse(readFileSync(path.join(model, 'config.json'), 'utf8'));
    writeFileSync(path.join(model, 'config.json'), JSON.stringify({ ...cfg, max_position_embeddings: 1 << 16 }));
    const short = await runEval({ model: declared, data: `socialeval:${DATA}?lang=en`, task: 'iae', limit: 6,
      quiet: true, bootstrap: 0, out: path.join(root, 'declared'), maxTokens: 0 });
    expect(short.settings.maxTokens).toBe(2048);
    const base = { model, data: `socialeval:${DATA}?lang=en`, task: 'both' as const, limit: 6, quiet: true,
      bootstrap: 50 };
    await runEval({ ...base, out: path.join(root, 'all'), maxTokens: 0 });
    const all = readEvalResults(path.join(root, 'all'));
    // --max-tokens 0 asks for no limit of its own: the model's context still bounds the prompts.
    expect(all.manifest.settings.maxTokens).toBe(modelContextLength(model));
    expect(all.manifest.settings.maxTokens).toBeGreaterThan(0);
    // A limit above the context is the context.
    const over = await runEval({ ...base, limit: 1, task: 'iae', out: path.join(root, 'over'), maxTokens: 1_000_000 });
    expect(over.settings.maxTokens).toBe(modelContextLength(model));
    const lengths = all.records.filter((r) => r.task === 'iae' && r.shuffles.length > 0).map((r) =>
      Math.max(...r.shuffles.map((s) => s.tokens))
    ).sort((a, b) => a - b);
    const limit = lengths[Math.floor(lengths.length / 2)]!;
    await runEval({ ...base, out: path.join(root, 'cut'), maxTokens: limit });
    const cut = readEvalResults(path.join(root, 'cut'));
    const items = cut.records.filter((r) => r.task === 'iae');
    const skipped = items.filter((r) => r.skipped);
    expect(skipped.length).toBeGreaterThan(0);
    expect(skipped.length).toBeLessThan(items.length);
    for (const r of items) {
      const before = all.records.find((x) => x.id === r.id)!;
      const need = Math.max(...before.shuffles.map((s) => s.tokens));
      if (r.skipped) {
        expect(r.skipped).toBe(`the prompt has ${need} tokens; --skip-longer-than is ${limit}`);
        expect(r.shuffles).toEqual([]);
        expect(r.correct).toBeNull();
      } else {
        expect(need).toBeLessThanOrEqual(limit);
        expect(r.shuffles.map((s) => s.logits)).toEqual(before.shuffles.map((s) => s.logits));
      }
    }
    expect(cut.summary.iae!.skipped).toEqual(skipped.map((r) => r.id));
    expect(cut.summary.iae!.items).toBe(items.length - skipped.length);
    // GAE: a walk that meets a decision longer than the limit stops there and is left out.
    for (const e of cut.episodes) {
      const steps = cut.records.filter((r) => r.gae?.tree === e.tree);
      if (e.end === 'skipped') expect(steps[steps.length - 1]!.skipped).toMatch(/--skip-longer-than is/);
      else expect(steps.every((r) => !r.skipped)).toBe(true);
    }
    expect(cut.summary.gae!.skipped).toEqual(cut.episodes.filter((e) => e.end === 'skipped').map((e) => e.tree));
    expect(cut.summary.gae!.ended).toBe(cut.episodes.filter((e) => e.end === 'ending').length);
  }, 600_000);

  it.skipIf(!hasGenai)('defaults to the context length in the model folder', () => {
    // The onnxruntime-genai export says context_length in genai_config.json.
    expect(modelContextLength(GENAI)).toBe(2048);
    // config.json's max_position_embeddings of the generated model.
    expect(modelContextLength(path.resolve(__dirname, '../../models/tiny-llama'))).toBe(2048);
  });
});
