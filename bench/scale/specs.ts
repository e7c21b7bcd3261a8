/**
 * The shapes bench/scale-8b.ts runs: Llama-3.1-8B's, and a small one with the same vocabulary
 * and head layout for trying the whole script in a minute (--small).
 */
import { LLAMA_31_8B, type ScaleSpec } from './weights.js';

/** 4 layers, hidden 512, intermediate 1792 (7/2 × hidden, as 8B's 14336/4096), 8 heads / 2 KV heads of 64. */
export const SMALL: ScaleSpec = { ...LLAMA_31_8B, layers: 4, hidden: 512, intermediate: 1792, heads: 8, kvHeads: 2,
  headDim: 64 };

/** The spec for a run. */
export function specFor(small: boolean): ScaleSpec {
  return small ? SMALL : LLAMA_31_8B;
}
