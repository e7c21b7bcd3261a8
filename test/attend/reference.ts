/**
 * An independent attention oracle for lobes' generated Llama models: a float64 forward pass
 * written from the Llama equations over the generator's in-memory parameters (HF layout
 * W: [d_out, d_in]; RoPE on halves with inv_freq = θ^(−2i/d) rounded to float32, as the generator
 * stores it), which never reads the ONNX graph. Returns, per layer, the attention weights of the
 * last position over every position, for every head: [heads, seq].
 */
import type { TinyLlamaParams } from '../../src/models/tinyllama.js';
import { linear, rmsNorm } from '../models/reference-forward.js';

/** Per layer: the last position's attention weights, [heads, seq] (row-major). */
export function lastRowAttention(p: TinyLlamaParams, ids: number[]): Float64Array[] {
  const { hidden: H, intermediate: I, heads, kvHeads, rmsNormEps: eps, ropeTheta } = p.opts;
  const hd = p.headDim;
  const half = hd / 2;
  const S = ids.length;
  const x = new Float64Array(S * H);
  for (let t = 0; t < S; t++) for (let j = 0; j < H; j++) x[t * H + j] = p.embed[ids[t]! * H + j]!;
  const rope = (m: Float64Array, n: number) => {
    for (let t = 0; t < S; t++) {
      for (let h = 0; h < n; h++) {
        for (let i = 0; i < half; i++) {
          const ang = Math.fround(t * Math.fround(1 / Math.pow(ropeTheta, (2 * i) / hd)));
          const c = Math.cos(ang);
          const s = Math.sin(ang);
          const at = t * n * hd + h * hd + i;
          const a = m[at]!;
          const b = m[at + half]!;
          m[at] = a * c - b * s;
          m[at + half] = b * c + a * s;
        }
      }
    }
  };
  const out: Float64Array[] = [];
  const group = heads / kvHeads;
  for (const L of p.layers) {
    const h = rmsNorm(x, L.inputNorm, eps, S, H);
    const q = linear(h, L.q, S, H, heads * hd);
    const k = linear(h, L.k, S, H, kvHeads * hd);
    const v = linear(h, L.v, S, H, kvHeads * hd);
    rope(q, heads);
    rope(k, kvHeads);
    const ctx = new Float64Array(S * heads * hd);
    const last = new Float64Array(heads * S);
    for (let hh = 0; hh < heads; hh++) {
      const kv = Math.floor(hh / group);
      for (let t = 0; t < S; t++) {
        const w = new Float64Array(t + 1);
        let max = -Infinity;
        for (let u = 0; u <= t; u++) {
          let s = 0;
          for (let i = 0; i < hd; i++) s += q[t * heads * hd + hh * hd + i]! * k[u * kvHeads * hd + kv * hd + i]!;
          w[u] = s / Math.sqrt(hd);
          max = Math.max(max, w[u]!);
        }
        let z = 0;
        for (let u = 0; u <= t; u++) z += w[u] = Math.exp(w[u]! - max);
        for (let u = 0; u <= t; u++) {
          w[u]! /= z;
          for (let i = 0; i < hd; i++) ctx[t * heads * hd + hh * hd + i]! += w[u]! * v[u * kvHeads * hd + kv * hd + i]!;
        }
        if (t === S - 1) last.set(w, hh * S);
      }
    }
    out.push(last);
    const o = linear(ctx, L.o, S, heads * hd, H);
    for (let j = 0; j < S * H; j++) x[j]! += o[j]!;
    const h2 = rmsNorm(x, L.postNorm, eps, S, H);
    const g = linear(h2, L.gate, S, H, I);
    const u = linear(h2, L.up, S, H, I);
    for (let j = 0; j < S * I; j++) g[j] = (g[j]! / (1 + Math.exp(-g[j]!))) * u[j]!;
    const d = linear(g, L.down, S, I, H);
    for (let j = 0; j < S * H; j++) x[j]! += d[j]!;
  }
  return out;
}

/** Largest absolute difference between two arrays of the same length. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
