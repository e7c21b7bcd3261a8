/**
 * An independent forward pass of a generated Llama, written directly from the Llama equations
 * over the generator's in-memory parameters (HF layout, W: [d_out, d_in]); it never reads the
 * ONNX graph. Computes one unpadded sequence in float64 and returns, per position:
 * MLP inputs (gate/up input and down input) per layer, the residual after each layer,
 * the final normalized hidden state and the logits.
 */
import type { TinyLlamaParams } from '../../src/models/tinyllama.js';

export interface ReferenceOutputs {
  seq: number;
  /** layers × [seq, hidden]: input of gate_proj / up_proj. */
  mlpIn: Float64Array[];
  /** layers × [seq, intermediate]: input of down_proj. */
  downIn: Float64Array[];
  /** layers × [seq, hidden]: residual stream after the layer. */
  residOut: Float64Array[];
  /** [seq, hidden] final RMSNorm output (input of lm_head). */
  finalHidden: Float64Array;
  /** [seq, vocab] */
  logits: Float64Array;
}

export function rmsNorm(x: Float64Array, w: Float32Array, eps: number, seq: number, d: number): Float64Array {
  const out = new Float64Array(seq * d);
  for (let t = 0; t < seq; t++) {
    let ss = 0;
    for (let j = 0; j < d; j++) ss += x[t * d + j]! * x[t * d + j]!;
    const r = 1 / Math.sqrt(ss / d + eps);
    for (let j = 0; j < d; j++) out[t * d + j] = w[j]! * x[t * d + j]! * r;
  }
  return out;
}

/** y[t, o] = Σ_i W[o, i] x[t, i] with W stored [dOut, dIn]. */
export function linear(x: Float64Array, w: Float32Array, seq: number, dIn: number, dOut: number): Float64Array {
  const y = new Float64Array(seq * dOut);
  for (let t = 0; t < seq; t++) {
    for (let o = 0; o < dOut; o++) {
      let s = 0;
      const wo = o * dIn;
      const xt = t * dIn;
      for (let i = 0; i < dIn; i++) s += w[wo + i]! * x[xt + i]!;
      y[t * dOut + o] = s;
    }
  }
  return y;
}

/** Forward pass of one sequence; positions are 0..seq-1. */
export function referenceForward(p: TinyLlamaParams, ids: number[]): ReferenceOutputs {
  const { hidden: H, intermediate: I, heads, kvHeads, vocab: V, rmsNormEps: eps, ropeTheta } = p.opts;
  const hd = p.headDim;
  const S = ids.length;
  const x = new Float64Array(S * H);
  for (let t = 0; t < S; t++) for (let j = 0; j < H; j++) x[t * H + j] = p.embed[ids[t]! * H + j]!;

  // RoPE angles: position t, pair i (i < hd/2): θ = t · theta^(−2i/hd), applied to (x_i, x_{i+hd/2}).
  const cos = new Float64Array(S * (hd / 2));
  const sin = new Float64Array(S * (hd / 2));
  for (let t = 0; t < S; t++) {
    for (let i = 0; i < hd / 2; i++) {
      const invFreq = Math.fround(1 / Math.pow(ropeTheta, (2 * i) / hd));
      const a = Math.fround(t * invFreq);
      cos[t * (hd / 2) + i] = Math.cos(a);
      sin[t * (hd / 2) + i] = Math.sin(a);
    }
  }
  const applyRope = (m: Float64Array, nHeads: number) => {
    for (let t = 0; t < S; t++) {
      for (let h = 0; h < nHeads; h++) {
        const base = t * nHeads * hd + h * hd;
        for (let i = 0; i < hd / 2; i++) {
          const a = m[base + i]!;
          const b = m[base + i + hd / 2]!;
          const c = cos[t * (hd / 2) + i]!;
          const s = sin[t * (hd / 2) + i]!;
          m[base + i] = a * c - b * s;
          m[base + i + hd / 2] = b * c + a * s;
        }
      }
    }
  };

  const out: ReferenceOutputs = { seq: S, mlpIn: [], downIn: [], residOut: [], finalHidden: new Float64Array(0),
    logits: new Float64Array(0) };
  const group = heads / kvHeads;
  for (const L of p.layers) {
    const h = rmsNorm(x, L.inputNorm, eps, S, H);
    const q = linear(h, L.q, S, H, heads * hd);
    const k = linear(h, L.k, S, H, kvHeads * hd);
    const v = linear(h, L.v, S, H, kvHeads * hd);
    applyRope(q, heads);
    applyRope(k, kvHeads);
    const ctx = new Float64Array(S * heads * hd);
    const scores = new Float64Array(S);
    for (let hh = 0; hh < heads; hh++) {
      const kvh = Math.floor(hh / group);
      for (let t = 0; t < S; t++) {
        let max = -Infinity;
        for (let u = 0; u <= t; u++) {
          let s = 0;
          for (let i = 0; i < hd; i++) s += q[t * heads * hd + hh * hd + i]! * k[u * kvHeads * hd + kvh * hd + i]!;
          s /= Math.sqrt(hd);
          scores[u] = s;
          if (s > max) max = s;
        }
        let z = 0;
        for (let u = 0; u <= t; u++) {
          scores[u] = Math.exp(scores[u]! - max);
          z += scores[u]!;
        }
        for (let u = 0; u <= t; u++) {
          const wgt = scores[u]! / z;
          for (let i = 0; i < hd; i++) ctx[t * heads * hd + hh * hd + i]! += wgt * v[u * kvHeads * hd + kvh * hd + i]!;
        }
      }
    }
    const attn = linear(ctx, L.o, S, heads * hd, H);
    for (let j = 0; j < S * H; j++) x[j]! += attn[j]!;
    const h2 = rmsNorm(x, L.postNorm, eps, S, H);
    out.mlpIn.push(h2);
    const g = linear(h2, L.gate, S, H, I);
    const u = linear(h2, L.up, S, H, I);
    const m = new Float64Array(S * I);
    for (let j = 0; j < S * I; j++) m[j] = (g[j]! / (1 + Math.exp(-g[j]!))) * u[j]!;
    out.downIn.push(m);
    const d = linear(m, L.down, S, I, H);
    for (let j = 0; j < S * H; j++) x[j]! += d[j]!;
    out.residOut.push(x.slice());
  }
  out.finalHidden = rmsNorm(x, p.finalNorm, eps, S, H);
  out.logits = linear(out.finalHidden, p.lmHead, S, H, V);
  return out;
}

/** Row t of a [seq, d] array. */
export function row(a: Float64Array, t: number, d: number): Float64Array {
  return a.subarray(t * d, (t + 1) * d);
}

/** Max |a−b| / (max|b| + tiny): a relative error over a whole vector. */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num = Math.max(num, Math.abs(a[i]! - b[i]!));
    den = Math.max(den, Math.abs(b[i]!));
  }
  return num / (den + 1e-30);
}

const paramCache = new Map<string, TinyLlamaParams>();
/** generatedModelParams, memoized per test file (the tests never mutate the parameters). */
export function cachedParams(name: string, gen: (name: string) => TinyLlamaParams): TinyLlamaParams {
  let p = paramCache.get(name);
  if (!p) paramCache.set(name, p = gen(name));
  return p;
}
