/**
 * Batching: sort texts by token length into buckets under a row limit and a padded-token
 * budget, and pad a bucket into a TokenBatch. The caller puts results back in dataset order
 * (each batch lists the dataset indices it holds).
 */
import type { BatchPlanOptions, TokenBatch } from './types.js';
import { LobesError } from '../util/errors.js';

/**
 * Padded tokens (rows × longest row) per batch where long prompts run on the CPU and the user
 * gave no --token-budget (attend, ablate's --task iae): long prompts then run in several
 * batches, so progress ticks as each finishes (one batch of eight long prompts was minutes
 * without a line), and a model without a KV cache, whose batch memory grows with its rows times
 * the square of their length, stays bounded (ablate with --batch 8 on SmolLM2's IAE prompts
 * peaked at 18 GB and was killed).
 */
export const LONG_PROMPT_TOKEN_BUDGET = 2048;

/**
 * Group item indices into batches. Items are sorted by length (longest first, ties by index,
 * so the plan is deterministic); a batch closes when adding the next item would exceed
 * `batch` rows or `tokenBudget` padded tokens (rows × longest). An item longer than the
 * budget gets a batch of its own.
 */
export function planBatches(lengths: ArrayLike<number>, opts: BatchPlanOptions): number[][] {
  const maxRows = opts.batch ?? 16;
  const budget = opts.tokenBudget ?? Infinity;
  if (!Number.isInteger(maxRows) || maxRows < 1)
    throw new LobesError(`batch size must be a positive integer, got ${maxRows}`);
  if (!(budget > 0)) throw new LobesError(`token budget must be positive, got ${budget}`);
  const idx = Array.from({ length: lengths.length }, (_, i) => i);
  for (const i of idx) {
    const l = lengths[i]!;
    if (!Number.isInteger(l) || l < 1)
      throw new LobesError(`item ${i} has ${l} tokens (empty input)`, { where: `item ${i}` });
  }
  idx.sort((a, b) => lengths[b]! - lengths[a]! || a - b);
  const out: number[][] = [];
  let cur: number[] = [];
  let longest = 0;
  for (const i of idx) {
    const l = lengths[i]!;
    const nl = Math.max(longest, l);
    if (cur.length && (cur.length + 1 > maxRows || (cur.length + 1) * nl > budget)) {
      out.push(cur);
      cur = [];
      longest = 0;
    }
    cur.push(i);
    longest = Math.max(longest, l);
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Pad token sequences into a [batch, seq] TokenBatch (padding on `side`). */
export function padBatch(seqs: number[][], padId: number, side: 'left' | 'right'): TokenBatch {
  const batch = seqs.length;
  if (batch === 0) throw new LobesError('cannot pad an empty batch');
  let seq = 0;
  for (const [r, s] of seqs.entries()) {
    if (s.length === 0) throw new LobesError(`row ${r} has no tokens (empty input)`);
    seq = Math.max(seq, s.length);
  }
  const inputIds = new BigInt64Array(batch * seq).fill(BigInt(padId));
  const attentionMask = new BigInt64Array(batch * seq);
  const lastIndex = new Int32Array(batch);
  for (let r = 0; r < batch; r++) {
    const s = seqs[r]!;
    const off = side === 'left' ? seq - s.length : 0;
    for (let j = 0; j < s.length; j++) {
      inputIds[r * seq + off + j] = BigInt(s[j]!);
      attentionMask[r * seq + off + j] = 1n;
    }
    lastIndex[r] = off + s.length - 1;
  }
  return { inputIds, attentionMask, batch, seq, lastIndex };
}
