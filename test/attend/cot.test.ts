/**
 * `lobes attend --cot N` (SocialEval App. C.4): the model reasons first, greedily through its KV
 * cache, then the answer cue is appended and attention is read where the answer letter comes
 * next. Oracles: Hugging Face transformers on the same weights (test/goldens/
 * make_attend_cot_goldens.py: greedy argmax of full forward passes without a cache, and
 * output_attentions at the last position); a planted token stream for where generation stops;
 * and the float64 forward pass (reference.ts) for the weights of a whole --cot run, read at the
 * cue's last token.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { greedy } from '../../src/attend/cot.js';
import { runAttend } from '../../src/attend/run.js';
import { readAttendResults } from '../../src/attend/store.js';
import { average } from '../../src/attend/record.js';
import { openScorer } from '../../src/eval/engine.js';
import type { Scorer, HeadOutput } from '../../src/runtime/scorer.js';
import { loadEvalTokenizer } from '../../src/runtime/eval-tokenizer.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { generatedModelParams } from '../../src/models/index.js';
import { lastRowAttention } from './reference.js';
import { cases } from '../goldens/cases.js';

const GOLDEN = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../goldens/attend-cot/tiny-llama.json'), 'utf8'),
);
const SOCIALEVAL = path.resolve(import.meta.dirname, '../../../shared/socialeval/worldtree_data');
const TINY = path.resolve(import.meta.dirname, '../../models/tiny-llama');

/** A scorer whose argmax follows a planted stream: step k answers stream[k]. */
function plantedScorer(stream: number[]): Scorer & { fed: number[][] } {
  const fed: number[][] = [];
  let step = 0;
  const head = (): HeadOutput => ({ cand: new Float32Array(1), lse: new Float32Array(1),
    top: Int32Array.of(stream[step++]!), k: 1 });
  return {
    fed,
    info: {} as Scorer['info'],
    hasPast: true,
    multiTokenExtend: true,
    score: async () => head(),
    prefill: async (ids) => (fed.push(ids), { out: head(), state: { length: ids.length, past: new Map() } }),
    extend: async (s,
      ids) => (fed.push(ids), { out: head(), state: { length: s.length + ids.length, past: new Map() } }),
    close: async () => undefined,
  };
}

describe('greedy generation', () => {
  it('stops at an end-of-turn token (not kept), at the budget, or when told; feeds each token back once', async () => {
    const eos = new Set([99]);
    const a = plantedScorer([5, 6, 99, 7]);
    expect(await greedy(a, [1, 2], 10, eos)).toEqual({ ids: [5, 6], end: 'eos' });
    expect(a.fed).toEqual([[1, 2], [5], [6]]);
    expect(await greedy(plantedScorer([5, 6, 7, 8]), [1], 3, eos)).toEqual({ ids: [5, 6, 7], end: 'budget' });
    expect(await greedy(plantedScorer([5, 6, 7, 8]), [1], 10, eos, (g) => g.at(-1) === 6)).toEqual({ ids: [5, 6],
      end: 'stop' });
    expect(await greedy(plantedScorer([5]), [1], 0, eos)).toEqual({ ids: [], end: 'budget' });
  });
});

describe('against Hugging Face transformers (tiny-llama weights)', () => {
  let scorer: Scorer;
  const past = ensureGeneratedModel('tiny-llama-past');
  beforeAll(async () => {
    scorer = await openScorer(past, { device: 'cpu', generation: true });
  });
  afterAll(async () => scorer?.close());

  it('greedy generation through the KV cache equals the argmax of full forward passes', async () => {
    for (const g of cases(GOLDEN, 'items')) {
      const got = await greedy(scorer, g.ids, GOLDEN.budget, new Set([GOLDEN.eos]));
      // Compare while the argmax is robust (a gap of 1e-3 between the two largest logits).
      const robust = g.gaps.findIndex((x: number) => x < 1e-3);
      const n = robust < 0 ? g.generated.length : robust;
      expect(n).toBeGreaterThan(3);
      expect(got.ids.slice(0, n)).toEqual(g.generated.slice(0, n));
      if (robust < 0) expect(got.end).toBe(g.stop === 'eos' ? 'eos' : 'budget');
    }
  });

  it("the attention at the cue's last token, averaged over heads and layers, equals output_attentions", async () => {
    const engine = await openAttentionEngine(past, { device: 'cpu', layers: null });
    try {
      for (const g of cases(GOLDEN, 'items')) {
        const tb = padBatch([g.sequence], 0, 'right');
        const res = await engine.run(tb);
        const row = realRows(tb, res, engine.layers)[0]!;
        const { mean, perLayer } = average(row, engine.layers.length, res.heads, g.sequence.length);
        let worst = 0;
        mean.forEach((w, j) => (worst = Math.max(worst, Math.abs(w - g.weights[j]))));
        perLayer.forEach((pl, l) =>
          pl.forEach((w, j) => (worst = Math.max(worst, Math.abs(w - g.layerWeights[l][j]))))
        );
        expect(worst).toBeLessThan(1e-5);
      }
    } finally {
      await engine.close();
    }
  });
});

describe('lobes attend --eval of an evaluation made with --cot', () => {
  it('reads each record after its reasoning: the tokens the evaluation scored, the reasoning kept', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'lobes-attend-evalcot-'));
    try {
      const model = ensureGeneratedModel('tiny-llama-past');
      const data = path.join(root, 'items.jsonl');
      const rows = [
        { id: 'a', q: 'What is the capital of France?', o: ['Berlin', 'Paris', 'Rome'], a: 1 },
        { id: 'b', q: 'Which number is even?', o: ['3', '8', '5'], a: 1 },
        { id: 'c', q: 'Which is a colour?', o: ['red', 'dog', 'run'], a: 0 },
      ];
      writeFileSync(data, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const ev = path.join(root, 'eval');
      const { runEval, readEvalResults } = await import('../../src/eval/run.js');
      await runEval({ model, data: `jsonl:${data}?id=id&question=q&options=o&answer=a`, out: ev, cot: 5, shuffles: 1,
        bootstrap: 0, quiet: true });
      const records = readEvalResults(ev).records;
      const out = path.join(root, 'attend');
      const opts = { model, eval: ev, items: 'all' as const, layers: 'all', bootstrap: 0, out, quiet: true };
      await runAttend(opts);
      const { items, summary } = readAttendResults(out);
      expect(items.map((x) => x.id)).toEqual(['a', 'b', 'c']);
      // The summary says the attention was read after the evaluation's reasoning budget,
      // while the job's identity keeps the flag (0), so the same command finds the job done.
      expect(summary.settings.cot).toBe(5);
      const job = JSON.parse(readFileSync(path.join(out, 'attend.json'), 'utf8')) as { identity: Record<string, string>;
        facts: { settings: { cot: number } } };
      expect(job.identity['--cot']).toBe('0');
      expect(job.facts.settings.cot).toBe(5);
      await runAttend(opts);
      const scorer = await openScorer(model, { device: 'cpu' });
      const p = generatedModelParams('tiny-llama');
      for (const it of items) {
        const sh = records.find((r) => r.id === it.id)!.shuffles[0]!;
        expect(sh.cot!.generated).toBeGreaterThan(0);
        expect(it.reasoning).toEqual(sh.cot);
        expect(it.ids.length).toBe(sh.tokens);
        // These are the tokens the evaluation scored: a full pass over them gives its letter logits (it went through the KV cache).
        const h = await scorer.score([it.ids], sh.letterTokenIds, 0);
        Array.from(h.cand).forEach((x, k) => expect(Math.abs(x - sh.logits[k]!)).toBeLessThan(1e-4));
        expect(it.prompt).toBe(sh.prompt.slice(0, sh.answerAt));
        expect(it.parts.map((x) => x.name)).toContain('answer_prefix');
        const ref = lastRowAttention(p, it.ids);
        const n = it.ids.length;
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (const row of ref) for (let h = 0; h < it.heads; h++) s += row[h * n + j]!;
          expect(Math.abs(it.weights[j]! - s / (ref.length * it.heads))).toBeLessThan(2e-6);
        }
      }
      await scorer.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 300_000);
});

describe.skipIf(!existsSync(SOCIALEVAL))('lobes attend --data socialeval: --cot N', () => {
  let root: string;
  let model: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-attend-cot-'));
    // The byte-level tiny tokenizer makes SocialEval prompts longer than its declared 2,048 positions.
    model = path.join(root, 'tiny-past-long');
    const src = ensureGeneratedModel('tiny-llama-past');
    cpSync(src, model, { recursive: true });
    writeFileSync(path.join(model, 'config.json'),
      JSON.stringify({ ...JSON.parse(readFileSync(path.join(src, 'config.json'), 'utf8')),
        max_position_embeddings: 1 << 16 }));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("keeps the greedy reasoning, appends the cue, and reads the attention at the cue's last token", async () => {
    const out = path.join(root, 'cot');
    const COT = 6;
    await runAttend({ model, data: `socialeval:${SOCIALEVAL}?lang=en`, limit: 2, cot: COT, layers: 'all', bootstrap: 0,
      out, quiet: true });
    const { items, summary } = readAttendResults(out);
    expect(summary.settings.cot).toBe(COT);
    const etok = await loadEvalTokenizer(model, { chatTemplate: 'auto' });
    const scorer = await openScorer(model, { device: 'cpu', generation: true });
    const p = generatedModelParams('tiny-llama');
    try {
      for (const it of items) {
        const r = it.reasoning!;
        const part = (name: string) => it.parts.find((x) => x.name === name);
        const cue = part('answer_prefix')!;
        // The prompt that asked for reasoning: the published explanation prompt (iae-cot).
        const reasoningAt = part('reasoning')?.start ?? cue.start;
        const base = it.prompt.slice(0, reasoningAt);
        expect(base).toContain('explain');
        const baseIds = etok.encode(base);
        // The reasoning is the model's greedy continuation of that prompt (the tiny model never writes "choice": forced cue).
        const g = await greedy(scorer, baseIds, COT, etok.eos);
        expect(r.ids).toEqual(g.ids);
        expect(r.generated).toBe(g.ids.length);
        expect(r.text).toBe(etok.decode(g.ids));
        expect(it.prompt.slice(reasoningAt, cue.start)).toBe(r.text);
        expect(r.forced).toBe(true);
        expect(r.suffix).toBe('\n{"choice": "');
        expect(it.prompt.slice(cue.start)).toBe('\n{"choice": "');
        // The model read prompt, reasoning and cue; the weights are those of the cue's last token.
        const cueIds =
          etok.pieceSlot(r.suffix, ['A', 'B', 'C', 'D'].slice(0, Object.keys(it.roles!).length), it.id).ids;
        expect(it.ids).toEqual([...baseIds, ...r.ids, ...cueIds]);
        expect(it.position).toBe(it.ids.length - 1);
        const ref = lastRowAttention(p, it.ids);
        const n = it.ids.length;
        let worst = 0;
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (const row of ref) for (let h = 0; h < it.heads; h++) s += row[h * n + j]!;
          worst = Math.max(worst, Math.abs(it.weights[j]! - s / (ref.length * it.heads)));
        }
        expect(worst).toBeLessThan(2e-6);
        expect(it.partShare.reasoning).toBeGreaterThan(0);
      }
    } finally {
      await scorer.close();
    }
  }, 300_000);

  it('refuses --cot where it does not apply, and on a model without a KV cache', async () => {
    await expect(runAttend({ model, data: 'builtin:social', cot: 4, out: path.join(root, 'x'), quiet: true })).rejects
      .toThrow(/^cot .* needs position answer/);
    await expect(runAttend({ model, eval: root, cot: 4, out: path.join(root, 'x'), quiet: true })).rejects.toThrow(
      /lobes eval --cot N already hold the model's reasoning/,
    );
    const long = path.join(root, 'tiny-long');
    cpSync(TINY, long, { recursive: true });
    writeFileSync(path.join(long, 'config.json'),
      JSON.stringify({ ...JSON.parse(readFileSync(path.join(TINY, 'config.json'), 'utf8')),
        max_position_embeddings: 1 << 16 }));
    const out = path.join(root, 'nopast');
    await expect(
      runAttend({ model: long, data: `socialeval:${SOCIALEVAL}?lang=en`, limit: 1, cot: 4, out, quiet: true }),
    ).rejects.toThrow(/cot needs a model with KV-cache inputs/);
    expect(existsSync(out)).toBe(false);
  }, 300_000);
});
