/**
 * eval's padded-token budget: on the CPU, without --token-budget, the batched rows of
 * `lobes eval --scoring cloze` ((context + option)[:-1], one per option) and of letter scoring
 * without a KV cache (one prompt per option order) run in batches of at most
 * LONG_PROMPT_TOKEN_BUDGET padded tokens; --token-budget wins over that cap; off the CPU
 * there is no cap. The cap changes how rows are grouped, never a number: records and summary
 * are the same bytes as an evaluation without it. The memory plan checks the batches the engine
 * runs (a memory limit between the capped and the uncapped batches passes only with the cap).
 *
 * The batches are observed as the sessions see them: every run's input_ids shape [rows, seq].
 */
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { runEval, evalTokenBudget, type EvalOptions } from '../../src/eval/run.js';
import { openLoglikEngine, type LoglikOptions } from '../../src/runtime/loglik.js';
import { LONG_PROMPT_TOKEN_BUDGET } from '../../src/runtime/batching.js';
import { batchBytes } from '../../src/runtime/plan.js';
import { ensureGeneratedModel } from '../../src/models/write.js';

/** [rows, seq] of every session run's input_ids since the last reset. */
let shapes: [number, number][] = [];
// onnxruntime-node's sessions are instances of onnxruntime-common's InferenceSession class.
const proto = (ort.InferenceSession as unknown as { prototype: ort.InferenceSession }).prototype;
const realRun = proto.run;
vi.spyOn(proto, 'run').mockImplementation(
  function(this: ort.InferenceSession, feeds: ort.InferenceSession.FeedsType, ...rest: unknown[]) {
    const ids = feeds['input_ids'];
    if (ids && ids.dims.length === 2) shapes.push([Number(ids.dims[0]), Number(ids.dims[1])]);
    return (realRun as (...a: unknown[]) => ReturnType<ort.InferenceSession['run']>).call(this, feeds, ...rest);
  } as ort.InferenceSession['run'],
);

const padded = (s: [number, number][]) => s.map(([r, q]) => r * q);
const BUDGET = LONG_PROMPT_TOKEN_BUDGET;

describe('cloze scoring on the CPU caps padded tokens per batch', () => {
  // The generated model without a KV cache: every option is a padded row of its whole prompt.
  const model = ensureGeneratedModel('tiny-llama');
  const arch = { heads: 4, hidden: 64, intermediate: 256 };
  let root: string;
  let spec: string;
  const words = 'the a person went to market and saw friend who was helping others with care'.split(' ');
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-cloze-budget-'));
    const file = path.join(root, 'items.jsonl');
    // Three items of about 600 tokens each with four short options: the default --batch 4 puts
    // an item's four rows in one batch of about 2,400 padded tokens, over the cap.
    const items = Array.from({ length: 3 }, (_, i) => ({
      id: `long${i}`,
      question: Array.from({ length: 165 + 5 * i }, (_, k) => words[(k * 5 + i) % words.length]).join(' '),
      options: ['the sun', 'ice', 'a friend', 'care for others'],
      answer: i % 4,
    }));
    writeFileSync(file, items.map((x) => JSON.stringify(x)).join('\n') + '\n');
    spec = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  let letters = false;
  const evaluate = async (name: string, extra: Partial<EvalOptions>) => {
    shapes = [];
    const out = path.join(root, name);
    await runEval({ model, data: spec, out, ...(letters ? { shuffles: 3 } : { scoring: 'cloze', mutualInfo: true }),
      chatTemplate: 'off', quiet: true, bootstrap: 0, ...extra });
    return { out, shapes: [...shapes],
      files: ['records.jsonl', 'summary.json'].map((f) => readFileSync(path.join(out, f), 'utf8')) };
  };

  it('letter scoring without a KV cache: batches within the cap, and the same records and summary as uncapped', async () => {
    letters = true;
    try {
      // 3 items × 3 option orders: 9 prompts of about 600 tokens; the default --batch 4 would pad
      // four of them into one batch over the cap.
      const capped = await evaluate('letters-capped', {});
      expect(capped.shapes.length, JSON.stringify(capped.shapes)).toBeGreaterThan(0);
      expect(padded(capped.shapes).every((p) => p <= BUDGET), JSON.stringify(capped.shapes)).toBe(true);
      expect(Math.max(...capped.shapes.map(([, q]) => q)) * 4).toBeGreaterThan(BUDGET);
      expect(capped.shapes.reduce((a, [r]) => a + r, 0)).toBe(9);
      const open = await evaluate('letters-uncapped', { batch: 4, tokenBudget: 1_000_000 });
      expect(Math.max(...padded(open.shapes)), JSON.stringify(open.shapes)).toBeGreaterThan(BUDGET);
      expect(capped.shapes).not.toEqual(open.shapes);
      expect(capped.files[0]).toBe(open.files[0]);
      expect(capped.files[1]).toBe(open.files[1]);
      // --token-budget wins over the cap here too
      const wide = await evaluate('letters-4096', { batch: 4, tokenBudget: 4096 });
      expect(padded(wide.shapes).every((p) => p <= 4096), JSON.stringify(wide.shapes)).toBe(true);
      expect(Math.max(...padded(wide.shapes)), JSON.stringify(wide.shapes)).toBeGreaterThan(BUDGET);
    } finally {
      letters = false;
    }
  });

  it('the budget: --token-budget, else the cap on the CPU, else none', () => {
    expect(evalTokenBudget({ device: 'cpu', tokenBudget: null })).toBe(BUDGET);
    expect(evalTokenBudget({ device: 'cpu', tokenBudget: 4096 })).toBe(4096);
    expect(evalTokenBudget({ device: 'cpu', tokenBudget: 512 })).toBe(512);
    expect(evalTokenBudget({ device: 'cuda', tokenBudget: null })).toBeNull();
    expect(evalTokenBudget({ device: 'webgpu', tokenBudget: null })).toBeNull();
    expect(evalTokenBudget({ device: 'cuda', tokenBudget: 4096 })).toBe(4096);
  });

  it('batches stay within the cap, and records and summary equal an uncapped evaluation byte for byte', async () => {
    const capped = await evaluate('capped', {});
    const batched = capped.shapes.filter(([r]) => r > 1);
    expect(batched.length, JSON.stringify(capped.shapes)).toBeGreaterThan(0);
    expect(padded(capped.shapes.filter(([r]) => r > 1)).every((p) => p <= BUDGET), JSON.stringify(capped.shapes)).toBe(
      true,
    );
    // The prompt rows are long enough that the default 4 rows would not fit the cap.
    expect(Math.max(...capped.shapes.map(([, q]) => q)) * 4).toBeGreaterThan(BUDGET);
    const open = await evaluate('uncapped', { batch: 4, tokenBudget: 1_000_000 });
    expect(Math.max(...padded(open.shapes)), JSON.stringify(open.shapes)).toBeGreaterThan(BUDGET);
    expect(open.shapes.length).toBeLessThan(capped.shapes.length);
    expect(capped.files[0]).toBe(open.files[0]);
    expect(capped.files[1]).toBe(open.files[1]);
    // settings record what the user asked (the cap is not part of the evaluation's identity)
    const m = JSON.parse(readFileSync(path.join(capped.out, 'eval.json'), 'utf8')) as {
      settings: { tokenBudget: number | null; batch: number | null };
    };
    expect(m.settings.tokenBudget).toBeNull();
    expect(m.settings.batch).toBe(4);
  });

  it('--token-budget wins over the cap', async () => {
    const r = await evaluate('budget-4096', { batch: 4, tokenBudget: 4096 });
    expect(padded(r.shapes).every((p) => p <= 4096), JSON.stringify(r.shapes)).toBe(true);
    expect(Math.max(...padded(r.shapes)), JSON.stringify(r.shapes)).toBeGreaterThan(BUDGET);
  });

  it('no cap off the CPU (the engine is asked for no budget)', async () => {
    const asked: LoglikOptions[] = [];
    const r = await evaluate('cuda', {
      device: 'cuda',
      memoryLimit: () => 1e12,
      // The real engine on the CPU, opened with what eval asked for on the GPU.
      deps: {
        openLoglik: (m: string, o: LoglikOptions) => (asked.push(o), openLoglikEngine(m, { ...o, device: 'cpu' })),
      },
    });
    expect(asked.map((o) => o.tokenBudget)).toEqual([undefined]);
    expect(Math.max(...padded(r.shapes)), JSON.stringify(r.shapes)).toBeGreaterThan(BUDGET);
  });

  it('the memory plan checks the capped batches: a limit between capped and uncapped batches passes only with the cap', async () => {
    // Row lengths as the capped run saw them: at most 3 of these rows fit the cap, 4 do not.
    const probe = await evaluate('probe', {});
    const S = Math.max(...probe.shapes.map(([, q]) => q));
    expect(3 * S, JSON.stringify(probe.shapes)).toBeLessThanOrEqual(BUDGET);
    const limit = (batchBytes(arch, 3, S) + batchBytes(arch, 4, S)) / 2;
    await evaluate('plan-capped', { memoryLimit: () => limit });
    await expect(evaluate('plan-uncapped', { memoryLimit: () => limit, batch: 4, tokenBudget: 1_000_000 })).rejects
      .toThrow(/a batch of 4 rows × \d+ tokens needs about/);
  });
});
