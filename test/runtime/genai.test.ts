import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { GENAI, hasGenai, relErr } from './helpers.js';
import { openCaptureEngine, openPlainSession } from '../../src/runtime/engine.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { padBatch } from '../../src/runtime/batching.js';
import { loadModel, readInitializerFloat32 } from '../../src/onnx/index.js';
import { halfArrayToFloat } from '../../src/util/half.js';
import type { CaptureEngine, LobesTokenizer } from '../../src/runtime/types.js';
import { genaiForward, lastTokenHook } from './genai-forward.js';

const TEXTS = [
  'The quick brown fox jumps over the lazy dog.',
  'Hi',
  'In a village of La Mancha, the name of which I have no desire to call to mind, there lived not long since one of those gentlemen.',
  'Numbers: 3.14159, 2.71828 and 1.41421 appear often.',
];

function matvec(x: Float32Array, W: Float32Array, dIn: number, dOut: number): Float64Array {
  const y = new Float64Array(dOut);
  for (let k = 0; k < dIn; k++) {
    const xk = x[k]!;
    for (let j = 0; j < dOut; j++) y[j]! += xk * W[k * dOut + j]!;
  }
  return y;
}

describe.skipIf(!hasGenai)('capture engine on the onnxruntime-genai fp16 fixture', () => {
  let eng: CaptureEngine;
  let tok: LobesTokenizer;
  let seqs: number[][];
  beforeAll(async () => {
    eng = await openCaptureEngine(GENAI, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
    tok = await loadTokenizer(GENAI, { maxTokens: null, chatTemplate: false });
    seqs = TEXTS.map((t) => tok.encode(t).ids);
  });
  afterAll(async () => {
    await eng?.close();
  });

  it('outputs every hook as float32 [batch, dim]', async () => {
    expect(eng.hooks.map((h) => h.name)).toEqual([
      'final.hidden',
      'layers.0.mlp.in',
      'layers.0.mlp.down_in',
      'layers.0.resid_out',
      'layers.1.mlp.in',
      'layers.1.mlp.down_in',
      'layers.1.resid_out',
    ]);
    const out = await eng.run(padBatch(seqs, tok.padId, 'left'));
    for (const h of eng.hooks) {
      const v = out.get(h.name)!;
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(seqs.length * h.dim);
      expect(v.some((x) => x !== 0)).toBe(true);
    }
  });

  it('every hook of every row equals an independent forward pass at the last real token, with left or right padding', async () => {
    const refs = seqs.map((s) => genaiForward(GENAI, s));
    for (const side of ['left', 'right'] as const) {
      const out = await eng.run(padBatch(seqs, tok.padId, side));
      for (const h of eng.hooks) {
        const v = out.get(h.name)!;
        refs.forEach((f, r) => {
          // fp16 weights and compute in the graph; the forward pass is float64
          expect(relErr(v.subarray(r * h.dim, (r + 1) * h.dim), lastTokenHook(f, h.name)), `${side} ${h.name} row ${r}`)
            .toBeLessThan(3e-3);
        });
      }
    }
  });

  it('final.hidden × lm_head equals the unmodified model logits at the last token', async () => {
    const m = loadModel(GENAI);
    const lm = eng.info.points.find((p) => p.name === 'final.hidden')!.projections![0]!;
    expect(lm.proj).toBe('lm_head');
    const W = readInitializerFloat32(m, lm.weight);
    const plain = await openPlainSession(GENAI);
    try {
      for (const s of seqs) {
        const b = padBatch([s], tok.padId, 'right');
        const fh = (await eng.run(b)).get('final.hidden')!;
        const res = await plain.session.run(plain.feeds(b));
        const logits = res[plain.session.outputNames[0]!]!;
        expect(logits.dims).toEqual([1, s.length, lm.dOut]);
        const all = halfArrayToFloat(logits.data as Uint16Array);
        const want = all.subarray((s.length - 1) * lm.dOut, s.length * lm.dOut);
        const got = matvec(fh, W, lm.dIn, lm.dOut);
        // fp16 logits: half an ulp at |logit| < 0.5 is 1.2e-4; allow accumulation-order differences.
        expect(relErr(got, want)).toBeLessThan(2e-3);
        let argGot = 0;
        let argWant = 0;
        for (let j = 1; j < lm.dOut; j++) {
          if (got[j]! > got[argGot]!) argGot = j;
          if (want[j]! > want[argWant]!) argWant = j;
        }
        expect(Math.abs(got[argWant]! - got[argGot]!)).toBeLessThan(5e-4);
      }
    } finally {
      await plain.session.release();
    }
  });

  it('a mixed-length batch with left or right padding equals the texts one at a time', async () => {
    const single: Map<string, Float32Array>[] = [];
    for (const s of seqs) single.push(await eng.run(padBatch([s], tok.padId, 'right')));
    for (const side of ['left', 'right'] as const) {
      const out = await eng.run(padBatch(seqs, tok.padId, side));
      for (const h of eng.hooks) {
        const v = out.get(h.name)!;
        seqs.forEach((_, r) => {
          const row = v.subarray(r * h.dim, (r + 1) * h.dim);
          expect(relErr(row, single[r]!.get(h.name)!), `${side} ${h.name} row ${r}`).toBeLessThan(5e-3);
        });
      }
    }
  });

  it('captures agree with an independent TypeScript computation from the weights', async () => {
    const m = loadModel(GENAI);
    const out = await eng.run(padBatch(seqs, tok.padId, 'left'));
    const B = seqs.length;
    for (let layer = 0; layer < 2; layer++) {
      const pin = eng.info.points.find((p) => p.name === `layers.${layer}.mlp.in`)!;
      const gate = pin.projections!.find((p) => p.proj === 'gate_proj')!;
      const up = pin.projections!.find((p) => p.proj === 'up_proj')!;
      const Wg = readInitializerFloat32(m, gate.weight);
      const Wu = readInitializerFloat32(m, up.weight);
      const x = out.get(`layers.${layer}.mlp.in`)!;
      const di = out.get(`layers.${layer}.mlp.down_in`)!;
      for (let r = 0; r < B; r++) {
        const xr = x.subarray(r * 16, (r + 1) * 16);
        const g = matvec(xr, Wg, 16, 64);
        const u = matvec(xr, Wu, 16, 64);
        const want = g.map((gv, j) => (gv / (1 + Math.exp(-gv))) * u[j]!);
        expect(relErr(di.subarray(r * 64, (r + 1) * 64), want)).toBeLessThan(2e-2);
      }
    }
    // final.hidden = RMSNorm(resid_out of the last layer) · γ (eps 1e-6)
    const gamma = readInitializerFloat32(m, [...m.initializers.keys()].find((k) => /final_norm/.test(k))!);
    const res = out.get('layers.1.resid_out')!;
    const fh = out.get('final.hidden')!;
    for (let r = 0; r < B; r++) {
      const v = res.subarray(r * 16, (r + 1) * 16);
      let ss = 0;
      for (const a of v) ss += a * a;
      const inv = 1 / Math.sqrt(ss / 16 + 1e-6);
      const want = Array.from(v, (a, i) => a * inv * gamma[i]!);
      expect(relErr(fh.subarray(r * 16, (r + 1) * 16), want)).toBeLessThan(5e-3);
    }
  });
});
