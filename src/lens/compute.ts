/**
 * The logit lens's arithmetic: a residual-stream vector x [hidden] read as the model reads its
 * last layer's output, logits = U · (w ⊙ x / sqrt(mean(x²) + eps)) (U the unembedding,
 * [vocab, hidden]; Gemma 2's soft-cap applied when the model has one), then its log-softmax,
 * its top-k tokens, its entropy (nats) and the KL divergence KL(final ‖ layer) of the final
 * layer's distribution from it. Sums are in float64.
 */
import type { LensHead } from './head.js';

/** The final RMSNorm applied to x (float64 arithmetic, float32 result as the model's). */
export function rmsNorm(x: ArrayLike<number>, weight: ArrayLike<number>, eps: number): Float64Array {
  const n = x.length;
  let ms = 0;
  for (let i = 0; i < n; i++) ms += x[i]! * x[i]!;
  const inv = 1 / Math.sqrt(ms / n + eps);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = weight[i]! * (x[i]! * inv);
  return out;
}

/** Log-probabilities over the vocabulary of the residual vector `x` read through `head`. */
export function lensLogProbs(x: ArrayLike<number>,
  head: Pick<LensHead, 'hidden' | 'vocab' | 'normWeight' | 'eps' | 'unembed' | 'softcap'>): Float64Array
{
  const H = head.hidden;
  const y = rmsNorm(x, head.normWeight, head.eps);
  const U = head.unembed;
  const logits = new Float64Array(head.vocab);
  for (let v = 0; v < head.vocab; v++) {
    const off = v * H;
    let acc = 0;
    for (let h = 0; h < H; h++) acc += U[off + h]! * y[h]!;
    logits[v] = head.softcap ? head.softcap * Math.tanh(acc / head.softcap) : acc;
  }
  let max = -Infinity;
  for (const l of logits) if (l > max) max = l;
  let s = 0;
  for (const l of logits) s += Math.exp(l - max);
  const lse = max + Math.log(s);
  for (let v = 0; v < logits.length; v++) logits[v] = logits[v]! - lse;
  return logits;
}

/** The k largest log-probabilities, best first (ties: the smaller id first). */
export function topK(logp: ArrayLike<number>, k: number): { id: number; logp: number }[] {
  const best: { id: number; logp: number }[] = [];
  for (let v = 0; v < logp.length; v++) {
    const lp = logp[v]!;
    if (best.length === k && lp <= best[k - 1]!.logp) continue;
    let i = best.length;
    while (i > 0 && best[i - 1]!.logp < lp) i--;
    best.splice(i, 0, { id: v, logp: lp });
    if (best.length > k) best.pop();
  }
  return best;
}

/** Entropy in nats of the distribution of `logp`. */
export function entropy(logp: ArrayLike<number>): number {
  let h = 0;
  for (let v = 0; v < logp.length; v++) {
    const lp = logp[v]!;
    if (lp > -Infinity) h -= Math.exp(lp) * lp;
  }
  return h;
}

/** KL(p ‖ q) in nats, both given as log-probabilities. */
export function klDivergence(logp: ArrayLike<number>, logq: ArrayLike<number>): number {
  let d = 0;
  for (let v = 0; v < logp.length; v++) {
    const lp = logp[v]!;
    if (lp > -Infinity) d += Math.exp(lp) * (lp - logq[v]!);
  }
  return Math.max(0, d);
}

/** 1-based rank of token `id` in `logp` (1: the most probable; ties counted in its favour). */
export function rankOf(logp: ArrayLike<number>, id: number): number {
  const x = logp[id]!;
  let r = 1;
  for (let v = 0; v < logp.length; v++) if (logp[v]! > x) r++;
  return r;
}
