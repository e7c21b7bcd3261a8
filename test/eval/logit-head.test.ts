/**
 * The in-graph letter head (src/runtime/logit-head.ts) against independent forward passes
 * written from the Llama equations in float64: the generated models' own parameters
 * (test/models/reference-forward.ts) and the onnxruntime-genai fixture's weights
 * (test/runtime/genai-forward.ts). Candidate logits, full-vocabulary log-sum-exp and
 * argmax at each row's last real token, with right padding; the KV-cache path (prefill, then
 * one or several tokens at a time) gives the same numbers; only [batch, k] and [batch]
 * tensors leave the session; a model without an lm_head is a one-line error.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { ensureGeneratedModel, generatedModelParams } from '../../src/models/write.js';
import { analyseModel, planInputs } from '../../src/runtime/engine.js';
import { buildLogitHeadModel, CAND_LOGITS, LOG_SUM_EXP, TOP_ID } from '../../src/runtime/logit-head.js';
import { discover } from '../../src/runtime/discover.js';
import { loadModel, readInitializerFloat32, type LoadedModel } from '../../src/onnx/index.js';
import { openScorer } from '../../src/eval/engine.js';
import type { Scorer } from '../../src/runtime/scorer.js';
import { referenceForward, cachedParams } from '../models/reference-forward.js';
import { genaiForward } from '../runtime/genai-forward.js';
import { GENAI, hasGenai, expectLobesError } from '../runtime/helpers.js';

const SEQS = [
  [1, 17, 40, 301, 99, 7, 250, 12, 18],
  [1, 5],
  [1, 480, 3, 77, 200, 64, 9, 33, 120, 44, 8, 16, 311],
  [1, 300, 301, 302],
];
const CANDS = [5, 66, 7, 300, 511];

function lse(row: ArrayLike<number>): number {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) m = Math.max(m, row[i]!);
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i]! - m);
  return m + Math.log(s);
}

function argmax(row: ArrayLike<number>): number {
  let b = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[b]!) b = i;
  return b;
}

const scorers: Scorer[] = [];
afterAll(async () => {
  for (const s of scorers) await s.close();
});

describe.each([
  ['tiny-llama', 2e-4],
  ['tiny-llama-past', 2e-4],
  ['tiny-llama-opaque', 2e-4],
  ['tiny-llama-q4', 2e-4],
  ['tiny-llama-fp16', 2e-2],
])('letter head on %s vs the reference forward pass', (name, tol) => {
  const p = cachedParams(name, generatedModelParams);
  const V = p.opts.vocab;
  const refs = SEQS.map((s) => {
    const r = referenceForward(p, s);
    return r.logits.subarray((r.seq - 1) * V, r.seq * V);
  });

  it('candidate logits, log-sum-exp and argmax of right-padded rows', async () => {
    const sc = await openScorer(ensureGeneratedModel(name), { device: 'cpu', generation: true });
    scorers.push(sc);
    const h = await sc.score(SEQS, CANDS, 0);
    expect(h.k).toBe(CANDS.length);
    expect(h.cand.length).toBe(SEQS.length * CANDS.length);
    SEQS.forEach((_, r) => {
      CANDS.forEach((c, j) =>
        expect(Math.abs(h.cand[r * h.k + j]! - refs[r]![c]!), `row ${r} token ${c}`).toBeLessThan(tol * 10)
      );
      expect(Math.abs(h.lse[r]! - lse(refs[r]!))).toBeLessThan(tol * 10);
      expect(h.top[r]).toBe(argmax(refs[r]!));
    });
    if (sc.hasPast) {
      // The KV-cache path: prefill part of a row, then extend by several tokens and by one.
      const s = SEQS[2]!;
      const a = await sc.prefill(s.slice(0, 5), CANDS);
      const b = await sc.extend(a.state, s.slice(5, 11), CANDS);
      const c = await sc.extend(b.state, s.slice(11), CANDS);
      expect(c.state.length).toBe(s.length);
      CANDS.forEach((t, j) => expect(Math.abs(c.out.cand[j]! - refs[2]![t]!)).toBeLessThan(tol * 10));
      expect(Math.abs(c.out.lse[0]! - lse(refs[2]!))).toBeLessThan(tol * 10);
      expect(c.out.top[0]).toBe(argmax(refs[2]!));
    }
  });
});

describe.skipIf(!hasGenai)('letter head on the onnxruntime-genai fp16 export', () => {
  it('matches the float64 forward pass, batched and through the KV cache', async () => {
    const m = loadModel(GENAI);
    const W = readInitializerFloat32(m, 'lm_head.MatMul.weight');
    const H = 16;
    const V = W.length / H;
    const seqs = [
      [1, 450, 4996, 17354, 1701, 29916],
      [1, 6324],
      [1, 512, 1000, 31999, 77, 9, 3000],
    ];
    const cands = [450, 29916, 1000, 20, 31000];
    const refs = seqs.map((s) => {
      const f = genaiForward(GENAI, s);
      const x = f.finalHidden.subarray((s.length - 1) * H, s.length * H);
      const out = new Float64Array(V);
      for (let i = 0; i < H; i++) for (let v = 0; v < V; v++) out[v]! += x[i]! * W[i * V + v]!;
      return out;
    });
    const sc = await openScorer(GENAI, { device: 'cpu', generation: true });
    scorers.push(sc);
    const h = await sc.score(seqs, cands, 0);
    seqs.forEach((_, r) => {
      const scale = Math.max(...Array.from(refs[r]!, Math.abs));
      cands.forEach((c, j) => expect(Math.abs(h.cand[r * h.k + j]! - refs[r]![c]!) / scale).toBeLessThan(5e-3));
      expect(Math.abs(h.lse[r]! - lse(refs[r]!)) / scale).toBeLessThan(5e-3);
    });
    const a = await sc.prefill(seqs[2]!.slice(0, 3), cands);
    const b = await sc.extend(a.state, seqs[2]!.slice(3), cands);
    cands.forEach((_, j) => expect(Math.abs(b.out.cand[j]! - h.cand[2 * h.k + j]!)).toBeLessThan(2e-2));
  });

  it('opening it prints nothing: the multi-token cache probe that this export refuses is an answer, not an onnxruntime error line', () => {
    // onnxruntime writes its log to fd 2 from C++, so only a child process sees it.
    const engine = path.resolve(import.meta.dirname, '../../src/eval/engine.ts');
    const code = `import { openScorer } from ${JSON.stringify(engine)};
      const sc = await openScorer(${JSON.stringify(GENAI)}, { device: 'cpu', generation: true });
      process.stdout.write(JSON.stringify({ hasPast: sc.hasPast, multi: sc.multiTokenExtend }));
      await sc.close();`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    // The probe ran and was refused (one new token at a time after a cache, on this export).
    expect(JSON.parse(r.stdout)).toEqual({ hasPast: true, multi: false });
    expect(r.stderr).not.toMatch(/onnxruntime|Expand|invalid expand shape/);
  });
});

describe('the scoring graph', () => {
  it('outputs only [batch, k] logits, [batch] log-sum-exp and [batch] argmax; the original lm_head is gone', () => {
    const a = analyseModel(ensureGeneratedModel('tiny-llama-past'));
    const { mask, inGraphPast } = planInputs(a);
    const g = buildLogitHeadModel(a.loaded.model, a.disc, { maskInput: mask, inGraphPast });
    const outs = g.model.graph!.output.map((
      o,
    ) => [o.name, o.type!.tensorType!.shape!.dim.map((d) => d.dimParam ?? d.dimValue)]);
    expect(outs).toEqual([
      [CAND_LOGITS, ['batch', 'candidates']],
      [LOG_SUM_EXP, ['batch']],
      [TOP_ID, ['batch']],
    ]);
    const nodes = g.model.graph!.node;
    expect(nodes.includes(a.disc.lmHead.node)).toBe(false);
    const heads = nodes.filter((n) => n.input[1] === a.disc.lmHead.node.input[1]);
    expect(heads.length).toBe(1);
    expect(heads[0]!.input[0]).toBe('lobes.sel.lh.hidden_sel');
    // With the KV cache kept for generation, the present.* outputs are added and nothing else.
    const gen = buildLogitHeadModel(a.loaded.model, a.disc, { maskInput: mask, keepPresent: true });
    expect(gen.present.length).toBe(4);
    expect(gen.model.graph!.output.map((o) => o.name)).toEqual([CAND_LOGITS, LOG_SUM_EXP, TOP_ID, ...gen.present]);
  });

  it('a model without an lm_head is a one-line error', async () => {
    const m: LoadedModel = loadModel(ensureGeneratedModel('tiny-llama'));
    const g = m.model.graph!;
    const lm = discover(m).lmHead;
    // Drop lm_head: the graph now ends at the final hidden state.
    const cut: LoadedModel = { ...m,
      model: { ...m.model,
        graph: { ...g, node: g.node.filter((n) => n !== lm.node), output: [{ ...g.output[0]!, name: lm.x }] } } };
    const e = await expectLobesError(() => discover(cut));
    expect(e.message).toMatch(/no lm_head/);
  });
});
