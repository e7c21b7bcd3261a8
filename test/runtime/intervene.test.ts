/**
 * Interventions (src/runtime/intervene.ts) against Hugging Face forward hooks making the same
 * edits (test/goldens/intervene/make_intervene_goldens.py, the generated tiny-llama's weights in
 * LlamaForCausalLM): the captures of the capture engine, the log-likelihoods of the loglik engine,
 * the logits of the answer scorer and the attention weights of the attention engine, each with the
 * edits in the graph. Also: what lies before the edit is bit-identical to the plain run, edits
 * that change nothing (scale 1, add 0) give the plain run's numbers, a float16 model casts the
 * vector, and bad interventions are refused in one line.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { analyseModel, openCaptureEngine } from '../../src/runtime/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { openLoglikEngine } from '../../src/runtime/loglik.js';
import { openAttentionEngine, realRows } from '../../src/runtime/attention-engine.js';
import { openScorer } from '../../src/eval/engine.js';
import { applyInterventions, checkInterventions, describeIntervention, fromInterventionRecords, type Intervention,
  type InterventionRecord } from '../../src/runtime/intervene.js';
import type { CaptureEngine, TokenBatch } from '../../src/runtime/types.js';
import { expectLobesError, GENAI, hasGenai, relErr } from './helpers.js';
import { genaiForward, lastTokenHook } from './genai-forward.js';

interface GSeq {
  [hook: string]: any;
  attn: Record<string, number[]>;
  logits: number[];
}
interface GCase {
  interventions: InterventionRecord[];
  seqs: GSeq[];
  loglik: { context: number[]; continuations: { tokens: number[]; logprobs: number[] }[] }[];
}
const GOLD = JSON.parse(readFileSync(path.resolve(__dirname, '../goldens/intervene/tiny-llama.json'), 'utf8')) as {
  seqs: number[][];
  cases: Record<string, GCase>;
};
const SEQS = GOLD.seqs;
const CASES = Object.keys(GOLD.cases);
const ivsOf = (c: string): Intervention[] => fromInterventionRecords(GOLD.cases[c]!.interventions);
const HOOKS = ['layers.0.mlp.in', 'layers.0.mlp.down_in', 'layers.0.resid_out', 'layers.1.mlp.in',
  'layers.1.mlp.down_in', 'layers.1.resid_out', 'final.hidden'];
const TOL = 1e-4;

const closers: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const c of closers) await c.close();
});

async function capture(model: string, ivs: Intervention[] | undefined,
  side: 'left' | 'right' = 'right'): Promise<{ e: CaptureEngine; b: TokenBatch; out: Map<string, Float32Array> }>
{
  const e = await openCaptureEngine(model, { capture: ['final', 'mlp', 'resid'], device: 'cpu', interventions: ivs });
  closers.push(e);
  const b = padBatch(SEQS, 511, side);
  return { e, b, out: await e.run(b) };
}

const rowOf = (out: Map<string, Float32Array>, e: CaptureEngine, hook: string, r: number) => {
  const dim = e.hooks.find((h) => h.name === hook)!.dim;
  return out.get(hook)!.subarray(r * dim, (r + 1) * dim);
};

/**
 * The golden value at a hook. `mlp_out_scale` scales the MLP's output in Hugging Face and
 * mlp.down_in in lobes (the same by linearity of down_proj), so there lobes' down_in capture is
 * Hugging Face's times 0.5.
 */
function golden(c: string, r: number, h: string): number[] {
  const g = GOLD.cases[c]!.seqs[r]![h] as number[];
  return c === 'mlp_out_scale' && h === 'layers.1.mlp.down_in' ? g.map((x) => x * 0.5) : g;
}

describe('captures with interventions equal Hugging Face hooks making the same edit', () => {
  const tiny = ensureGeneratedModel('tiny-llama');
  it.each(CASES)('%s (right and left padding)', async (c) => {
    for (const side of ['right', 'left'] as const) {
      const { e, out } = await capture(tiny, ivsOf(c), side);
      SEQS.forEach((_, r) => {
        for (const h of HOOKS)
          expect(relErr(rowOf(out, e, h, r), golden(c, r, h)), `${c} ${side} row ${r} ${h}`).toBeLessThan(TOL);
      });
    }
  });

  it('every edit changes what it should: each case differs from the plain run downstream of its hook', () => {
    const plain = GOLD.cases.none!.seqs;
    for (const c of CASES.filter((x) => x !== 'none')) {
      const changed = GOLD.cases[c]!.seqs.some((s, r) => relErr(s['final.hidden'], plain[r]!['final.hidden']) > 1e-2);
      expect(changed, c).toBe(true);
    }
  });

  it('a float16 model casts the vector and gives the same captures to float16 precision', async () => {
    const { e, out } = await capture(ensureGeneratedModel('tiny-llama-fp16'), ivsOf('two_edits'));
    SEQS.forEach((_, r) => {
      for (const h of HOOKS)
        expect(relErr(rowOf(out, e, h, r), GOLD.cases.two_edits!.seqs[r]![h]), `row ${r} ${h}`).toBeLessThan(2e-2);
    });
  });

  it('the same edits on the opaque layout (other names, other node order)', async () => {
    const { e, out } = await capture(ensureGeneratedModel('tiny-llama-opaque'), ivsOf('mlp_in_replace'));
    SEQS.forEach((_, r) => {
      for (const h of HOOKS)
        expect(relErr(rowOf(out, e, h, r), GOLD.cases.mlp_in_replace!.seqs[r]![h]), `row ${r} ${h}`).toBeLessThan(TOL);
    });
  });
});

describe.skipIf(!hasGenai)('fused residual sums (onnxruntime-genai fixture, SkipSimplifiedLayerNormalization)', () => {
  // layer 0's sum is an output of the next fused norm; the last layer's is not (rebuilt from its inputs)
  it.each([0, 1])('an add at layers.%i.resid_out equals the float64 forward pass with the same edit', async (layer) => {
    const v = Float32Array.from({ length: 16 }, (_, i) => Math.sin(i + 1) * 0.75);
    const ivs: Intervention[] = [{ hook: `layers.${layer}.resid_out`, op: 'add', value: v }];
    const e = await openCaptureEngine(GENAI, { capture: ['final', 'mlp', 'resid'], device: 'cpu', interventions: ivs });
    closers.push(e);
    const seqs = [[1, 5, 6, 7, 8], [1, 9], [1, 300, 301]];
    const out = await e.run(padBatch(seqs, 0, 'right'));
    seqs.forEach((s, r) => {
      const f = genaiForward(GENAI, s, (l, x, S) => {
        if (l === layer) { for (let t = 0; t < S; t++) for (let j = 0; j < 16; j++) x[t * 16 + j] += v[j]!; }
      });
      const plain = genaiForward(GENAI, s);
      for (const h of e.hooks) {
        const got = out.get(h.name)!.subarray(r * h.dim, (r + 1) * h.dim);
        expect(relErr(got, lastTokenHook(f, h.name)), `${h.name} row ${r}`).toBeLessThan(3e-3);
      }
      // the edit reaches the final hidden state
      expect(relErr(lastTokenHook(f, 'final.hidden'), lastTokenHook(plain, 'final.hidden'))).toBeGreaterThan(0.05);
    });
  });
});

describe('what an edit leaves alone', () => {
  const tiny = ensureGeneratedModel('tiny-llama');
  it('captures before the edited hook are bit-identical to the plain run; at and after it they differ', async () => {
    const plain = await capture(tiny, undefined);
    const edited = await capture(tiny, [{ hook: 'layers.1.mlp.down_in', op: 'add', value: 0.25 }]);
    for (const h of ['layers.0.mlp.in', 'layers.0.mlp.down_in', 'layers.0.resid_out', 'layers.1.mlp.in']) {
      expect(Buffer.from(edited.out.get(h)!.buffer).equals(Buffer.from(plain.out.get(h)!.buffer)), h).toBe(true);
    }
    for (const h of ['layers.1.mlp.down_in', 'layers.1.resid_out', 'final.hidden']) {
      expect(relErr(edited.out.get(h)!, plain.out.get(h)!), h).toBeGreaterThan(1e-3);
    }
    // at the hook itself, the capture is the edited value: the plain one plus 0.25
    const d = edited.out.get('layers.1.mlp.down_in')!;
    const p = plain.out.get('layers.1.mlp.down_in')!;
    for (let i = 0; i < d.length; i++) expect(d[i]! - p[i]!).toBeCloseTo(0.25, 5);
  });

  it.each(['tiny-llama', 'tiny-llama-fp16', 'tiny-llama-q4'])('scale 1 and add 0 give exactly the plain run (%s)',
    async (name) => {
      const model = ensureGeneratedModel(name);
      const plain = await capture(model, undefined);
      const noop = await capture(model, [
        { hook: 'layers.0.resid_out', op: 'scale', value: 1 },
        { hook: 'layers.1.mlp.in', op: 'add', value: new Float32Array(64) },
        { hook: 'final.hidden', op: 'scale', value: new Float32Array(64).fill(1) },
      ]);
      for (const h of HOOKS)
        expect(Buffer.from(noop.out.get(h)!.buffer).equals(Buffer.from(plain.out.get(h)!.buffer)), h).toBe(true);
    });

  it('two edits of one hook apply in order: add v then scale 2 is 2·(x + v) there', async () => {
    const v = Float32Array.from({ length: 64 }, (_, i) => Math.cos(i) / 2);
    const plain = await capture(tiny, undefined);
    const both = await capture(tiny, [
      { hook: 'layers.0.resid_out', op: 'add', value: v },
      { hook: 'layers.0.resid_out', op: 'scale', value: 2 },
    ]);
    const p = plain.out.get('layers.0.resid_out')!;
    const b = both.out.get('layers.0.resid_out')!;
    for (let i = 0; i < p.length; i++) expect(b[i]!).toBeCloseTo(2 * (p[i]! + v[i % 64]!), 5);
  });

  it('the edit sits right after the producing node, and the graph without interventions is the model itself', () => {
    const a = analyseModel(tiny);
    expect(applyInterventions(a.loaded.model, a.disc, []).model).toBe(a.loaded.model);
    const p = a.disc.points.find((q) => q.name === 'layers.0.resid_out')!;
    const v = p.source.kind === 'value' ? p.source.value : '';
    const ed =
      applyInterventions(a.loaded.model, a.disc, [{ hook: 'layers.0.resid_out', op: 'add', value: 1 }]).model.graph!
        .node;
    const at = ed.findIndex((n) => n.output.includes('lobes.iv.0.pre'));
    expect(at).toBeGreaterThanOrEqual(0);
    expect(ed.slice(at + 1, at + 3).map((n) => n.opType)).toEqual(['CastLike', 'Add']);
    expect(ed[at + 2]!.output).toEqual([v]);
    // no other node writes the value, every old reader still reads it
    expect(ed.filter((n) => n.output.includes(v))).toHaveLength(1);
  });
});

describe('log-likelihoods with interventions equal Hugging Face hooks making the same edit', () => {
  for (const [name, cache] of [['tiny-llama', 'off'], ['tiny-llama-past', 'auto']] as const) {
    it.each(CASES)(`%s (${name}, cache ${cache})`, async (c) => {
      const e = await openLoglikEngine(ensureGeneratedModel(name), { device: 'cpu', cache, batch: 3, cacheMinContext: 1,
        interventions: ivsOf(c) });
      closers.push(e);
      const gold = GOLD.cases[c]!.loglik;
      const got = await e.score(
        gold.map((q) => ({ context: q.context, continuations: q.continuations.map((x) => x.tokens) })),
      );
      gold.forEach((q, i) =>
        q.continuations.forEach((x, j) =>
          x.logprobs.forEach((lp, k) =>
            expect(Math.abs(got[i]![j]!.tokenLogprobs[k]! - lp), `${c} request ${i} continuation ${j} token ${k}`)
              .toBeLessThan(TOL * Math.max(1, Math.abs(lp)))
          )
        )
      );
    });
  }
});

describe('answer scoring with interventions', () => {
  it.each(CASES)('the logits at the last token equal Hugging Face hooks making the same edit (%s)', async (c) => {
    const s = await openScorer(ensureGeneratedModel('tiny-llama'), { device: 'cpu', interventions: ivsOf(c) });
    closers.push(s);
    const all = Array.from({ length: 512 }, (_, i) => i);
    const out = await s.score(SEQS, all, 511);
    SEQS.forEach((_, r) => {
      const want = GOLD.cases[c]!.seqs[r]!.logits;
      expect(relErr(out.cand.subarray(r * 512, (r + 1) * 512), want), `${c} row ${r}`).toBeLessThan(TOL);
      const m = Math.max(...want);
      const lse = m + Math.log(want.reduce((z, x) => z + Math.exp(x - m), 0));
      expect(Math.abs(out.lse[r]! - lse)).toBeLessThan(TOL * Math.max(1, Math.abs(lse)));
    });
  });
});

describe('answer scoring with an edit at the last position and a KV cache', () => {
  it("shares no prefixes (the cached prefix's last token is not the row's) and scores as Hugging Face", async () => {
    const plain = await openScorer(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu', generation: true });
    closers.push(plain);
    expect(plain.multiTokenExtend).toBe(true);
    const s = await openScorer(ensureGeneratedModel('tiny-llama-past'), { device: 'cpu', generation: true,
      interventions: ivsOf('resid_add_last') });
    closers.push(s);
    expect(s.multiTokenExtend).toBe(false);
    const all = Array.from({ length: 512 }, (_, i) => i);
    const out = await s.score(SEQS, all, 511);
    SEQS.forEach((_, r) =>
      expect(relErr(out.cand.subarray(r * 512, (r + 1) * 512), GOLD.cases.resid_add_last!.seqs[r]!.logits), `row ${r}`)
        .toBeLessThan(TOL)
    );
  });
});

describe('attention weights with interventions', () => {
  it("an edit of layer 0's output changes layer 1's weights as in Hugging Face, and leaves layer 0's", async () => {
    for (const c of ['resid_add', 'resid_add_last']) {
      const e = await openAttentionEngine(ensureGeneratedModel('tiny-llama'), { device: 'cpu',
        interventions: ivsOf(c) });
      closers.push(e);
      const b = padBatch(SEQS, 511, 'right');
      const res = await e.run(b);
      for (const layer of [0, 1]) {
        const rows = realRows(b, res, [layer]);
        SEQS.forEach((_, r) =>
          expect(relErr(rows[r]!, GOLD.cases[c]!.seqs[r]!.attn[`layers.${layer}.attn.weights`]!),
            `${c} layer ${layer} row ${r}`).toBeLessThan(TOL)
        );
      }
    }
    // the golden weights themselves: layer 1's moved, layer 0's did not
    const plain = GOLD.cases.none!.seqs[0]!.attn;
    const moved = GOLD.cases.resid_add!.seqs[0]!.attn;
    expect(relErr(moved['layers.0.attn.weights']!, plain['layers.0.attn.weights']!)).toBe(0);
    expect(relErr(moved['layers.1.attn.weights']!, plain['layers.1.attn.weights']!)).toBeGreaterThan(1e-3);
  });
});

describe('bad interventions are refused in one line', () => {
  const a = analyseModel(ensureGeneratedModel('tiny-llama'));
  const check = (iv: Intervention) => expectLobesError(() => checkInterventions([iv], a.disc.points, 'm.onnx'));
  it.each([
    [{ hook: 'layers.0.resid', op: 'zero' }, /unknown hook "layers\.0\.resid"/],
    [{ hook: 'layers.7.resid_out', op: 'zero' }, /no editable value at layers\.7\.resid_out/],
    [{ hook: 'layers.0.attn.weights', op: 'zero' }, /no editable value at layers\.0\.attn\.weights/],
    [{ hook: 'final.mean', op: 'zero' }, /mean over the positions/],
    [{ hook: 'layers.0.resid_out', op: 'add', value: new Float32Array(63) },
      /63 numbers but layers\.0\.resid_out has width 64/],
    [{ hook: 'layers.0.mlp.down_in', op: 'replace', value: new Float32Array(64) },
      /64 numbers but layers\.0\.mlp\.down_in has width 256/],
    [{ hook: 'layers.0.resid_out', op: 'add' }, /add needs a value/],
    [{ hook: 'layers.0.resid_out', op: 'scale' }, /scale needs a value/],
    [{ hook: 'layers.0.resid_out', op: 'zero', value: 1 }, /zero takes no value/],
    [{ hook: 'layers.0.resid_out', op: 'shift', value: 1 }, /unknown operation "shift"/],
    [{ hook: 'layers.0.resid_out', op: 'scale', value: NaN }, /not a finite number/],
    [{ hook: 'layers.0.resid_out', op: 'add', value: 1, positions: 'first' }, /positions must be 'all' or 'last'/],
  ].map(([iv, m]) => [describeIntervention(iv as Intervention), iv, m]) as [string, Intervention, RegExp][])('%s',
    async (_, iv, msg) => {
      const err = await check(iv);
      expect(err.message).toMatch(msg);
      expect(err.message).toMatch(/^m\.onnx: intervention /);
    });

  it('an engine refuses before it opens a session', async () => {
    const err = await expectLobesError(
      openCaptureEngine(ensureGeneratedModel('tiny-llama'), { capture: ['resid'], device: 'cpu',
        interventions: [{ hook: 'layers.0.resid_out', op: 'add', value: new Float32Array(3) }] }),
    );
    expect(err.message).toMatch(/3 numbers but layers\.0\.resid_out has width 64/);
  });
});
