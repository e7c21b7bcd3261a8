/**
 * Cloze scoring without the real model: the exact (Clopper–Pearson) intervals against
 * statsmodels (proportion_confint, method "beta"; values in test/goldens/lm-eval/goldens.json),
 * the picks (acc, acc_norm per character, acc_bytes per byte, mutual information; first on
 * ties) on planted numbers, and `lobes eval --scoring cloze` end to end on a generated model:
 * each option's log-likelihood equals the engine scoring lm-eval's split directly, the SocialEval
 * style context is cut where the options start, and a letter evaluation folder refuses to
 * resume as cloze.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { clopperPearson } from '../../src/eval/summary-cloze.js';
import { clozeContext, clozePicks } from '../../src/eval/cloze.js';
import { runEval, readEvalResults } from '../../src/eval/run.js';
import { loadEvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { openLoglikEngine, splitContinuation, type LoglikEngine,
  type LoglikRequest } from '../../src/runtime/loglik.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { LobesError } from '../../src/util/errors.js';

const GOLD = JSON.parse(readFileSync(path.resolve(__dirname, '../goldens/lm-eval/goldens.json'), 'utf8')) as {
  clopper_pearson: { k: number; n: number; ci: [number, number] }[];
};

describe('exact intervals', () => {
  it('equal statsmodels Clopper–Pearson', () => {
    expect(GOLD.clopper_pearson.length).toBeGreaterThanOrEqual(5);
    for (const g of GOLD.clopper_pearson) {
      const ci = clopperPearson(g.k, g.n)!;
      expect(Math.abs(ci[0] - g.ci[0]), `${g.k}/${g.n} lower`).toBeLessThan(1e-9);
      expect(Math.abs(ci[1] - g.ci[1]), `${g.k}/${g.n} upper`).toBeLessThan(1e-9);
    }
    expect(clopperPearson(0, 0)).toBeNull();
  });
});

describe('cloze picks', () => {
  it('acc by log-likelihood, acc_norm per character, acc_bytes per byte, mutual information; ties to the first', () => {
    // ll −6 over "café" (4 characters, 5 bytes) vs ll −7.4 over "cafe!" (5, 5): per character
    // −1.5 vs −1.48 (option 1), per byte −1.2 vs −1.48 (option 0).
    const p = clozePicks([
      { logprob: -6, chars: 4, bytes: 5, unconditional: -1 },
      { logprob: -7.4, chars: 5, bytes: 5, unconditional: -3 },
    ]);
    expect(p).toEqual({ pick: 0, pickNorm: 1, pickBytes: 0, pickMutualInfo: 1 });
    expect(clozePicks([{ logprob: -2, chars: 1, bytes: 1 }, { logprob: -2, chars: 1, bytes: 1 }])).toEqual({ pick: 0,
      pickNorm: 0, pickBytes: 0, pickMutualInfo: null });
  });
});

describe('lobes eval --scoring cloze on a generated model', () => {
  let root: string;
  let file: string;
  const model = ensureGeneratedModel('tiny-llama-past');
  const ITEMS = [
    { id: 'q1', question: 'Which one is warm?', options: ['the sun', 'ice', 'snow and hail'], answer: 0 },
    { id: 'q2', question: '哪个是水果？', options: ['苹果', '石头'], answer: 0 },
  ];
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-cloze-'));
    file = path.join(root, 'items.jsonl');
    writeFileSync(file, ITEMS.map((x) => JSON.stringify(x)).join('\n') + '\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('records every option with lm-eval split log-likelihoods equal to the engine run directly', async () => {
    const spec = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
    const out = path.join(root, 'cloze');
    await runEval({ model, data: spec, out, scoring: 'cloze', mutualInfo: true, chatTemplate: 'off', quiet: true,
      bootstrap: 0 });
    const r = readEvalResults(out);
    expect(r.manifest.settings.scoring).toBe('cloze');
    const tok = await loadEvalTokenizer(model, { chatTemplate: 'off' });
    const e = await openLoglikEngine(model, { device: 'cpu', cache: 'off' });
    try {
      for (const [i, rec] of r.records.entries()) {
        const c = rec.cloze!;
        expect(rec.shuffles).toEqual([]);
        expect(c.context).toBe(`Question: ${ITEMS[i]!.question}\nAnswer:`);
        const splits = ITEMS[i]!.options.map((o) => splitContinuation(tok, c.context, ' ' + o, tok.prefixId!));
        const want = await e.score([{ context: splits[0]!.context, continuations: splits.map((s) => s.continuation) }]);
        c.options.forEach((o, j) => {
          expect(o.text).toBe(' ' + ITEMS[i]!.options[j]);
          expect(o.tokens).toBe(splits[j]!.continuation.length);
          expect(Math.abs(o.logprob - want[0]![j]!.logprob)).toBeLessThan(1e-4);
          expect(o.bytes).toBe(Buffer.byteLength(ITEMS[i]!.options[j]!));
          expect(o.chars).toBe([...ITEMS[i]!.options[j]!].length);
          expect(o.unconditional).toBeTypeOf('number');
        });
        const picks = clozePicks(c.options);
        expect([c.pick, c.pickNorm, c.pickBytes, c.pickMutualInfo]).toEqual([picks.pick, picks.pickNorm,
          picks.pickBytes, picks.pickMutualInfo]);
        expect(rec.vote).toBe(c.pick);
      }
      const s = r.summary.cloze!.mcq!;
      expect(s.items).toBe(2);
      expect(s.acc.correct).toBe(r.records.filter((x) => x.cloze!.pick === x.answer).length);
      expect(s.acc.ci95).toEqual(clopperPearson(s.acc.correct, 2));
      expect(s.acc_mutual_info).not.toBeNull();
    } finally {
      await e.close();
    }
    // A letter evaluation in the same folder is refused (the scoring is part of its identity).
    await expect(runEval({ model, data: spec, out, chatTemplate: 'off', quiet: true, bootstrap: 0 })).rejects.toThrow(
      /--scoring/,
    );
  }, 120_000);

  it('skips an item with an empty option, with its reason, and scores the others (with --mutual-info)', async () => {
    const f = path.join(root, 'empty.jsonl');
    const rows = [...ITEMS, { id: 'q3', question: 'Which one is cold?', options: ['ice', ''], answer: 0 }];
    writeFileSync(f, rows.map((x) => JSON.stringify(x)).join('\n') + '\n');
    const out = path.join(root, 'cloze-empty');
    await runEval({ model, data: `jsonl:${f}?question=question&options=options&answer=answer&id=id`, out,
      scoring: 'cloze', mutualInfo: true, chatTemplate: 'off', quiet: true, bootstrap: 0 });
    const r = readEvalResults(out);
    const byId = new Map(r.records.map((x) => [x.id, x]));
    expect(byId.get('q3')!.skipped).toMatch(/option 1 is empty/);
    expect(byId.get('q3')!.cloze).toBeUndefined();
    expect(byId.get('q1')!.cloze!.options).toHaveLength(3);
    expect(byId.get('q2')!.cloze!.options[0]!.unconditional).toBeTypeOf('number');
    expect(r.summary.cloze!.mcq!.items).toBe(2);
  }, 120_000);

  it('cuts a prompt with {choices} where the first option starts', async () => {
    const tok = await loadEvalTokenizer(model, { chatTemplate: 'off' });
    const style = { variant: 'custom', template: 'Q: {question}\n[Options]\n{choices}\n\nAnswer in JSON.',
      separator: '. ', answerPrefix: '' };
    const c = clozeContext({ id: 'x', fields: { question: 'Why?' }, options: ['a', 'b'] }, style, tok);
    expect(c).toEqual({ text: 'Q: Why?\n[Options]\n', cut: true });
  });

  it('rejects --cot and --shuffles with cloze, and cloze flags with letters', async () => {
    const spec = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
    await expect(runEval({ model, data: spec, out: path.join(root, 'x1'), scoring: 'cloze', cot: 8, quiet: true }))
      .rejects.toThrow(/^cot applies to letter scoring/);
    await expect(runEval({ model, data: spec, out: path.join(root, 'x2'), scoring: 'cloze', shuffles: 3, quiet: true }))
      .rejects.toThrow(/^shuffles applies to letter scoring/);
    await expect(runEval({ model, data: spec, out: path.join(root, 'x3'), mutualInfo: true, quiet: true })).rejects
      .toBeInstanceOf(LobesError);
  });
});

describe('the memory plan of cloze scoring', () => {
  let root: string;
  const model = ensureGeneratedModel('tiny-llama-past');
  const ITEMS = [
    { id: 'short', question: 'Warm?', options: ['sun', 'ice'], answer: 0 },
    { id: 'long', question: 'Which of these is the warmest thing you could hold in your hand on a cold winter morning?',
      options: ['a cup of hot tea with honey', 'snow'], answer: 0 },
  ];
  // An engine without any session: it counts what it is asked to score.
  const ARCH = { family: 'llama', layers: 1, hidden: 8, intermediate: 16, heads: 2, kvHeads: 2, vocab: 100,
    dtype: 'fp32', quantization: null };
  const fake = () => {
    const calls: LoglikRequest[][] = [];
    const engine: LoglikEngine = {
      info: { dir: 'fake', arch: ARCH, points: [], providers: [], inputs: [] } as any,
      usesCache: false,
      stats: { scoredTokens: 0, computedTokens: 0, runs: 0, tensors: 0, liveTensors: 0 },
      async score(reqs) {
        calls.push([...reqs]);
        return reqs.map((r) =>
          r.continuations.map((c) => ({ logprob: -c.length, tokens: c.length, greedy: false,
            tokenLogprobs: new Float32Array(c.length).fill(-1), tokenGreedy: new Uint8Array(c.length) })
          )
        );
      },
      async close() {},
    };
    return { engine, calls };
  };
  // Bytes of one batch of `rows` × `seq` tokens, written here from the plan's formula (docs/eval.md):
  // float32 attention scores for every head plus the hidden and MLP activations.
  const bytes = (rows: number, seq: number) =>
    4 * rows * seq * (2 * ARCH.heads * seq + 4 * ARCH.hidden + 3 * ARCH.intermediate);
  let worst: { seq: number; id: string };
  let spec: string;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-cloze-plan-'));
    const file = path.join(root, 'items.jsonl');
    writeFileSync(file, ITEMS.map((x) => JSON.stringify(x)).join('\n') + '\n');
    spec = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
    // The longest row: (context + option)[:-1], lm-eval's split, as the engine runs it.
    const tok = await loadEvalTokenizer(model, { chatTemplate: 'off' });
    worst = { seq: 0, id: '' };
    for (const it of ITEMS) {
      for (const o of it.options) {
        const sp = splitContinuation(tok, `Question: ${it.question}\nAnswer:`, ' ' + o, tok.prefixId!);
        const seq = sp.context.length + sp.continuation.length - 1;
        if (seq > worst.seq) worst = { seq, id: it.id };
      }
    }
    expect(worst.id).toBe('long');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("refuses a batch bigger than the memory with the plan's one line before the engine runs anything, and runs it at the limit or with --ignore-plan", async () => {
    const need = bytes(1, worst.seq);
    const base = { model, data: spec, scoring: 'cloze' as const, chatTemplate: 'off' as const, quiet: true,
      bootstrap: 0, batch: 1 };
    const a = fake();
    const err = await runEval({ ...base, out: path.join(root, 'refused'), memoryLimit: () => need - 1,
      deps: { openLoglik: async () => a.engine } }).catch((e) => e);
    expect(err).toBeInstanceOf(LobesError);
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain(`a batch of 1 row × ${worst.seq} tokens needs about`);
    expect(err.message).toContain('sample long');
    expect(err.message).toContain('ignorePlan runs it anyway');
    expect(a.calls).toEqual([]);
    const b = fake();
    await runEval({ ...base, out: path.join(root, 'fits'), memoryLimit: () => need,
      deps: { openLoglik: async () => b.engine } });
    expect(b.calls.length).toBeGreaterThan(0);
    const c = fake();
    const lines: string[] = [];
    await runEval({ ...base, out: path.join(root, 'ignored'), memoryLimit: () => need - 1, ignorePlan: true,
      log: (l) => lines.push(l), deps: { openLoglik: async () => c.engine } });
    expect(c.calls.length).toBeGreaterThan(0);
    expect(lines.some((l) => l.startsWith('warning: a batch of 1 row') && l.endsWith('(--ignore-plan given)'))).toBe(
      true,
    );
  });
});
