/**
 * Fused projection weights split into their Hugging Face parts. Phi-3 / Phi-4(-mini) hold
 * q_proj, k_proj and v_proj as one `self_attn.qkv_proj.weight` ([heads·D + 2·kvHeads·D, hidden]:
 * q rows, then k, then v, as transformers slices it) and gate_proj and up_proj as one
 * `mlp.gate_up_proj.weight` ([2·intermediate, hidden]: gate rows, then up, as transformers'
 * chunk(2) reads it). The writer, wanda and ablate see the parts under the Llama names
 * (model.layers.N.self_attn.q_proj.weight, ...), each a row range of the fused tensor.
 */
import { LobesError } from '../util/errors.js';
import type { LlamaSpec, LlamaWeightSource, NbitsBlocks } from './llama-onnx/index.js';

/** One part of a fused weight: rows [r0, r0 + rows) of `fused`. */
export interface FusedPart {
  fused: string;
  r0: number;
  rows: number;
}

/** The fused weights of a Phi-3 layer, each with its parts in row order (Hugging Face names). */
export function phi3FusedWeights(
  spec: LlamaSpec,
): Array<{ fused: string; cols: number; parts: Array<[string, number]> }> {
  const { heads, kvHeads, headDim: d, intermediate: I, hidden: H } = spec;
  const out: Array<{ fused: string; cols: number; parts: Array<[string, number]> }> = [];
  for (let l = 0; l < spec.layers; l++) {
    const a = `model.layers.${l}.self_attn`;
    const m = `model.layers.${l}.mlp`;
    out.push({ fused: `${a}.qkv_proj.weight`, cols: H,
      parts: [[`${a}.q_proj.weight`, heads * d], [`${a}.k_proj.weight`, kvHeads * d], [`${a}.v_proj.weight`,
        kvHeads * d]] });
    out.push({ fused: `${m}.gate_up_proj.weight`, cols: H,
      parts: [[`${m}.gate_proj.weight`, I], [`${m}.up_proj.weight`, I]] });
  }
  return out;
}

/** Part name → where it lies in its fused weight. */
export function phi3Parts(spec: LlamaSpec): Map<string, FusedPart> {
  const map = new Map<string, FusedPart>();
  for (const f of phi3FusedWeights(spec)) {
    let r0 = 0;
    for (const [name, rows] of f.parts) {
      map.set(name, { fused: f.fused, r0, rows });
      r0 += rows;
    }
  }
  return map;
}

/**
 * A weight source that serves each part of a fused weight under its own name (a row range of
 * the fused tensor in `inner`), and every other weight as `inner` has it. Parts have no
 * MatMulNBits blocks of their own (the writer quantizes them from rows when asked for q4).
 */
export class SplitWeightSource implements LlamaWeightSource {
  constructor(
    private readonly inner: LlamaWeightSource,
    private readonly parts: Map<string, FusedPart>,
  ) {}

  private part(name: string): FusedPart | undefined {
    return this.parts.get(name);
  }

  shape(name: string): number[] {
    const p = this.part(name);
    if (!p) return this.inner.shape(name);
    const s = this.inner.shape(p.fused);
    if (s.length !== 2 || s[0]! < p.r0 + p.rows)
      throw new LobesError(
        `fused weight has shape [${s.join(', ')}], too small for ${name} (rows ${p.r0}..${p.r0 + p.rows})`,
        { where: p.fused },
      );
    return [p.rows, s[1]!];
  }

  private range(name: string, r0: number, r1: number): [string, number, number] {
    const p = this.part(name);
    if (!p) return [name, r0, r1];
    if (!(r0 >= 0 && r1 >= r0 && r1 <= p.rows))
      throw new LobesError(`rows [${r0}, ${r1}) out of range for ${p.rows}`, { where: name });
    return [p.fused, p.r0 + r0, p.r0 + r1];
  }

  rows(name: string, r0: number, r1: number): Float32Array {
    const [n, a, b] = this.range(name, r0, r1);
    return this.inner.rows(n, a, b);
  }

  rowsInto(name: string, r0: number, r1: number, out: Float32Array): Float32Array {
    const [n, a, b] = this.range(name, r0, r1);
    if (this.inner.rowsInto) return this.inner.rowsInto(n, a, b, out);
    const v = this.inner.rows(n, a, b);
    out.set(v);
    return out.subarray(0, v.length);
  }

  bf16RowsInto(name: string, r0: number, r1: number, out: Uint16Array): Uint16Array | null {
    const [n, a, b] = this.range(name, r0, r1);
    return this.inner.bf16RowsInto?.(n, a, b, out) ?? null;
  }

  nbits(name: string): NbitsBlocks | null {
    if (this.part(name)) return null;
    return this.inner.nbits?.(name) ?? null;
  }
}
