/**
 * The continuation log-likelihood engine (src/runtime/loglik.ts) against Hugging Face
 * transformers: the log-softmax of LlamaForCausalLM at the same positions, for the generated
 * model's weights (test/goldens/make_loglik_goldens.py), in every generated layout (plain,
 * with KV cache, opaque names and node order, float16), through the KV cache and in
 * right-padded batches. The 4-bit layout's weights differ from the float ones, so it is checked
 * against the float64 forward pass of its own dequantized weights (test/models/reference-forward.ts).
 * Also: greedy flags, what leaves the session, the work the cache saves, and bad requests.
 */
import { describe, it, expect, afterAll, vi } from 'vitest';
import * as ort from 'onnxruntime-node';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ensureGeneratedModel, generatedModelParams } from '../../src/models/write.js';
import { analyseModel, planInputs } from '../../src/runtime/engine.js';
import { buildLoglikHeadModel, TARGET_LOGPROB, TARGET_TOP } from '../../src/runtime/loglik-head.js';
import { openLoglikEngine, type LoglikEngine, type LoglikRequest } from '../../src/runtime/loglik.js';
import { referenceForward, cachedParams } from '../models/reference-forward.js';
import { expectLobesError } from './helpers.js';

interface GRow {
  logprob: number;
  argmax: number;
  gap: number;
}
interface GCont {
  tokens: number[];
  rows: GRow[];
  logprob: number;
}
const GOLD = JSON.parse(readFileSync(path.resolve(__dirname, '../goldens/loglik/tiny-llama.json'), 'utf8')) as {
  requests: { context: number[]; continuations: GCont[] }[];
};
const REQS: LoglikRequest[] = GOLD.requests.map((r) => ({ context: r.context,
  continuations: r.continuations.map((c) => c.tokens) })
);

/** HF's golden rows, or (4-bit) the float64 forward pass of the model's own weights. */
function expected(name: string): GCont[][] {
  if (name !== 'tiny-llama-q4') return GOLD.requests.map((r) => r.continuations);
  const p = cachedParams(name, generatedModelParams);
  const V = p.opts.vocab;
  return REQS.map((r) =>
    r.continuations.map((c) => {
      const f = referenceForward(p, [...r.context, ...c].slice(0, -1));
      const rows = c.map((t, j) => {
        const row = f.logits.subarray((r.context.length - 1 + j) * V, (r.context.length + j) * V);
        let m = -Infinity;
        let a = 0;
        for (let v = 0; v < V; v++) {
          if (row[v]! > m) {
            m = row[v]!;
            a = v;
          }
        }
        let z = 0;
        let second = -Infinity;
        for (let v = 0; v < V; v++) {
          z += Math.exp(row[v]! - m);
          if (v !== a) second = Math.max(second, row[v]!);
        }
        return { logprob: row[t]! - m - Math.log(z), argmax: a, gap: m - second };
      });
      return { tokens: c, rows, logprob: rows.reduce((s, x) => s + x.logprob, 0) };
    })
  );
}

const engines: LoglikEngine[] = [];
afterAll(async () => {
  for (const e of engines) await e.close();
});

describe.each([
  ['tiny-llama', 2e-5, false],
  ['tiny-llama-past', 2e-5, true],
  ['tiny-llama-opaque', 2e-5, false],
  ['tiny-llama-q4', 2e-5, false],
  ['tiny-llama-fp16', 2e-2, true],
] as const)('log-likelihoods on %s', (name, tol, hasCache) => {
  const want = expected(name);
  for (const cache of ['auto', 'off'] as const) {
    it(`equal the reference per token and summed (cache ${cache})`, async () => {
      const e = await openLoglikEngine(ensureGeneratedModel(name), { device: 'cpu', cache, batch: 3,
        cacheMinContext: 1 });
      engines.push(e);
      expect(e.usesCache).toBe(cache === 'auto' && hasCache);
      const got = await e.score(REQS);
      let checkedGreedy = 0;
      want.forEach((conts, i) =>
        conts.forEach((c, j) => {
          const g = got[i]![j]!;
          expect(g.tokens).toBe(c.tokens.length);
          c.rows.forEach((row, k) => {
            expect(Math.abs(g.tokenLogprobs[k]! - row.logprob), `request ${i} continuation ${j} token ${k}`)
              .toBeLessThan(tol * Math.max(1, Math.abs(row.logprob)));
            // Greedy flags where the two largest logits are clearly apart.
            if (row.gap > (tol < 1e-3 ? 1e-3 : 0.1)) {
              expect(g.tokenGreedy[k], `request ${i} continuation ${j} token ${k}`).toBe(
                row.argmax === c.tokens[k] ? 1 : 0,
              );
              checkedGreedy++;
            }
          });
          expect(Math.abs(g.logprob - c.logprob)).toBeLessThan(tol * c.rows.length * Math.max(1, Math.abs(c.logprob)));
          expect(g.greedy).toBe(Array.from(g.tokenGreedy).every((x) => x === 1));
        })
      );
      expect(checkedGreedy).toBeGreaterThan(10);
    });
  }
});

describe('greedy continuations', () => {
  it('a continuation made of the argmax tokens is greedy, a changed one is not', async () => {
    const e = await openLoglikEngine(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu' });
    engines.push(e);
    const r0 = GOLD.requests[0]!;
    // The HF argmax after the context, then after that token: a greedy continuation of two tokens.
    const first = r0.continuations[0]!.rows[0]!.argmax;
    const probe = await e.score([{ context: r0.context, continuations: [[first, 0]] }]);
    expect(probe[0]![0]!.tokenGreedy[0]).toBe(1);
    const p = cachedParams('tiny-llama', generatedModelParams);
    const f = referenceForward(p, [...r0.context, first]);
    const V = p.opts.vocab;
    const row = f.logits.subarray(r0.context.length * V, (r0.context.length + 1) * V);
    let second = 0;
    for (let v = 1; v < V; v++) if (row[v]! > row[second]!) second = v;
    const [[g, notG]] = await e.score([{ context: r0.context,
      continuations: [[first, second], [first, (second + 1) % V]] }]) as any;
    expect(g.greedy).toBe(true);
    expect(notG.greedy).toBe(false);
  });
});

describe('the engine', () => {
  // Memory does not grow with the requests of a call: every tensor that goes into or comes out
  // of a session run (feeds, tiled KV caches, outputs) is disposed by the time score returns.
  for (const cache of ['auto', 'off'] as const) {
    it(`disposes every tensor it feeds or receives (cache ${cache})`, async () => {
      const seen = new Set<ort.Tensor>();
      const outputs: string[][] = [];
      const proto = (ort.InferenceSession as any).prototype as ort.InferenceSession;
      const run = proto.run;
      const spy = vi.spyOn(proto, 'run').mockImplementation(
        async function(this: ort.InferenceSession, feeds: any, ...rest: any[]) {
          for (const t of Object.values(feeds)) seen.add(t as ort.Tensor);
          const out = await (run as any).call(this, feeds, ...rest);
          for (const t of Object.values(out)) seen.add(t as ort.Tensor);
          outputs.push(Object.keys(out));
          return out;
        },
      );
      try {
        const e = await openLoglikEngine(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu', cache, batch: 2,
          cacheMinContext: 1 });
        engines.push(e);
        expect(e.usesCache).toBe(cache === 'auto');
        const before = seen.size;
        await e.score([...REQS, ...REQS]);
        expect(seen.size - before).toBeGreaterThan(20);
        const live = [...seen].filter((t) => t.location !== 'none');
        expect(live.length, 'tensors fed to or received from a session and never disposed').toBe(0);
        expect(e.stats.liveTensors).toBe(0);
        // A run fetches what it reads: scores, or (a prefill) the KV cache, never both.
        for (const names of outputs)
          expect(names.includes(TARGET_LOGPROB) && names.some((n) => n.startsWith('present')), names.join(',')).toBe(
            false,
          );
      } finally {
        spy.mockRestore();
      }
    });
  }

  it('computes the context once per request through the KV cache', async () => {
    const a = await openLoglikEngine(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu', cacheMinContext: 1 });
    const b = await openLoglikEngine(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu', cache: 'off' });
    engines.push(a, b);
    await a.score(REQS);
    await b.score(REQS);
    // Every request has two or more continuations, so all of them go through the cache.
    expect(REQS.every((r) => r.continuations.length >= 2)).toBe(true);
    const ctx = REQS.reduce((s, r) => s + r.context.length - 1, 0);
    const conts = REQS.reduce((s, r) => s + r.continuations.reduce((t, c) => t + c.length, 0), 0);
    const batched = REQS.reduce((s, r) => s + r.continuations.reduce((t, c) => t + r.context.length + c.length - 1, 0),
      0);
    expect(a.stats.computedTokens).toBe(ctx + conts);
    expect(b.stats.computedTokens).toBe(batched);
    expect(a.stats.scoredTokens).toBe(conts);
    expect(b.stats.scoredTokens).toBe(conts);
  });

  it('scores short contexts in batches and long ones through the cache by default, with the same numbers', async () => {
    const a = await openLoglikEngine(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu' });
    const b = await openLoglikEngine(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu', cache: 'off' });
    engines.push(a, b);
    const long = Array.from({ length: 40 }, (_, i) => (i * 37 + 11) % 500);
    const reqs = [...REQS, { context: long, continuations: [[3, 4], [5], [6, 7, 8]] }];
    const x = await a.score(reqs);
    const y = await b.score(reqs);
    x.forEach((r, i) => r.forEach((c, j) => expect(Math.abs(c.logprob - y[i]![j]!.logprob)).toBeLessThan(1e-4)));
    // Only the long context went through the cache: its 39 tokens once, not three times.
    const batchedShort = REQS.reduce(
      (s, r) => s + r.continuations.reduce((t, c) => t + r.context.length + c.length - 1, 0),
      0,
    );
    expect(a.stats.computedTokens).toBe(batchedShort + 39 + 6);
  });

  it('lets only [n] log-probabilities and argmax ids leave the session (and the KV cache when asked)', () => {
    const a = analyseModel(ensureGeneratedModel('tiny-llama-past'));
    const { mask, inGraphPast } = planInputs(a);
    const g = buildLoglikHeadModel(a.loaded.model, a.disc, { maskInput: mask, inGraphPast });
    const outs = g.model.graph!.output.map((
      o,
    ) => [o.name, o.type!.tensorType!.shape!.dim.map((d) => d.dimParam ?? d.dimValue)]);
    expect(outs).toEqual([
      [TARGET_LOGPROB, ['scored']],
      [TARGET_TOP, ['scored']],
    ]);
    expect(g.model.graph!.node.includes(a.disc.lmHead.node)).toBe(false);
    const c = buildLoglikHeadModel(a.loaded.model, a.disc, { maskInput: mask, keepPresent: true });
    expect(c.present.length).toBe(4);
    expect(c.model.graph!.output.map((o) => o.name)).toEqual([TARGET_LOGPROB, TARGET_TOP, ...c.present]);
  });

  it('refuses an empty context or an empty continuation with a one-line error', async () => {
    const e = await openLoglikEngine(ensureGeneratedModel('tiny-llama'), { device: 'cpu' });
    engines.push(e);
    expect((await expectLobesError(e.score([{ context: [], continuations: [[1]] }]))).message).toMatch(
      /request 0 has an empty context/,
    );
    expect((await expectLobesError(e.score([{ context: [1], continuations: [[2], []] }]))).message).toMatch(
      /request 0, continuation 1 has no tokens/,
    );
  });
});
