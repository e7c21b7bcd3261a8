/**
 * Attention discovery by graph structure: per decoder layer, where its attention weights can be
 * read (`layers.{i}.attn.weights`, src/hooks.ts). Names of nodes and values are never looked at.
 *
 * Two kinds of graph:
 *   explicit  the graph computes Softmax(Q·Kᵀ·scale + mask) itself (optimum, torch.onnx,
 *             transformers.js-style exports, lobes' generated models): the weights are the output
 *             of that Softmax, a Softmax on the last axis whose input comes, through elementwise
 *             ops, from a MatMul of two computed (non-constant) values.
 *   fused     one contrib op computes the whole attention and never exposes its weights
 *             (onnxruntime-genai's GroupQueryAttention, with the rotary embedding inside the op,
 *             or MultiHeadAttention fed by RotaryEmbedding ops): the capture graph recomputes the
 *             weights from the op's own inputs (query, key, its attributes, its bias and rotary
 *             caches), see attention-surgery.ts.
 *
 * Each attention site is assigned to the decoder layer whose MLP it feeds first: layer i's
 * attention reaches layer i's MLP input and not layer i−1's.
 */
import type { Discovery } from './discover.js';
import { LobesError, ModelError } from '../util/errors.js';
import { attrInt, getAttr, PASSTHROUGH, type GraphIndex, type NodeProto } from '../onnx/index.js';
import { hookName } from '../hooks.js';

/** Rotary embedding applied inside a fused op (GroupQueryAttention with do_rotary=1). */
export interface InOpRotary {
  /** cos / sin caches [maxPositions, rotaryDim/2] (graph values). */
  cos: string;
  sin: string;
  /** Pairs (2i, 2i+1) when true; halves (i, i + rotaryDim/2) when false. */
  interleaved: boolean;
}

/** Attention computed by one contrib op; its weights are recomputed from the op's inputs. */
export interface FusedAttention {
  kind: 'fused';
  layer: number;
  /** The hook name, `layers.{layer}.attn.weights`. */
  name: string;
  op: 'GroupQueryAttention' | 'MultiHeadAttention';
  node: NodeProto;
  /** Query [batch, seq, heads·headDim], or the packed Q|K|V [batch, seq, (heads + 2·kvHeads)·headDim]. */
  query: string;
  /** Key [batch, seq, kvHeads·headDim]; null when packed into `query`. */
  key: string | null;
  heads: number;
  kvHeads: number;
  /** The op's scale, or null for 1/√headDim. */
  scale: number | null;
  /** Logit soft-capping c (c·tanh(x/c)), 0 for none. */
  softcap: number;
  /** An extra logit 0 in the softmax denominator (smooth_softmax). */
  smoothSoftmax: boolean;
  /** Per-head sink logits [heads] in the softmax denominator (head_sink), or null. */
  headSink: string | null;
  /** Sliding window (local_window_size): the query sees its own and the w−1 previous positions; −1 for all. */
  localWindow: number;
  /** Rotary embedding the op applies to query and key, or null (the inputs are already rotated). */
  rotary: InOpRotary | null;
  /** Additive bias of the attention logits [batch|1, heads|1, seq, total], or null. */
  attentionBias: string | null;
  /** MultiHeadAttention's projection bias [3·hidden] added to Q|K|V, or null. */
  qkvBias: string | null;
}

/** Attention written out in the graph: the weights are a Softmax's output. */
export interface SoftmaxAttention {
  kind: 'softmax';
  layer: number;
  name: string;
  node: NodeProto;
  /** The Softmax output, [batch, heads, seq, total] (or [batch·heads, seq, total]). */
  probs: string;
}

export type AttentionSite = FusedAttention | SoftmaxAttention;

/** Ops that compute attention weights in a form lobes cannot read, with what to do. */
const UNSUPPORTED_OPS: Record<string, string> = {
  Attention:
    "an Attention op (its weights and the projections are fused); export the model with explicit attention (optimum, torch.onnx) or with onnxruntime-genai's builder",
  PackedAttention: 'a PackedAttention op',
  PackedMultiHeadAttention: 'a PackedMultiHeadAttention op',
  SparseAttention: 'a SparseAttention op (block-sparse)',
  PagedAttention: 'a PagedAttention op',
  DecoderMaskedMultiHeadAttention: 'a DecoderMaskedMultiHeadAttention op (decoding only)',
  DecoderMaskedSelfAttention: 'a DecoderMaskedSelfAttention op (decoding only)',
};

/** Elementwise ops between the score MatMul and the Softmax (scale, mask, soft-capping, casts). */
const SCORE_OPS = new Set(['Add', 'Sub', 'Mul', 'Div', 'Where', 'Tanh', 'Cast', 'Identity', 'Clip', 'Min', 'Max']);

/** The MatMul of two computed values that `v` derives from through elementwise ops, or null. */
function scoreMatMul(g: GraphIndex, v: string): NodeProto | null {
  const seen = new Set<string>();
  const stack = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (seen.has(x) || seen.size > 64) continue;
    seen.add(x);
    const p = g.prod(x);
    if (!p || p.domain) continue;
    if (p.opType === 'MatMul') {
      if (!g.constTensor(g.skipBack(p.input[0]!)) && !g.constTensor(g.skipBack(p.input[1]!))) return p;
      continue;
    }
    if (SCORE_OPS.has(p.opType)) { for (const i of p.input) if (i && !g.constTensor(i)) stack.push(i); }
  }
  return null;
}

/** Whether a Softmax normalizes over its input's last axis. */
function onLastAxis(g: GraphIndex, n: NodeProto, opset: number): boolean {
  const axis = attrInt(n, 'axis', opset >= 13 ? -1 : 1);
  if (axis === -1) return true;
  const rank = g.shapeOf(n.input[0]!)?.length ?? g.shapeOf(n.output[0]!)?.length;
  return rank !== undefined && axis === rank - 1;
}

/** The explicit attention Softmaxes of a graph, in topological order. */
function softmaxSites(g: GraphIndex, opset: number): NodeProto[] {
  return g.nodes.filter((n) =>
    n.opType === 'Softmax' && !n.domain && onLastAxis(g, n, opset) && scoreMatMul(g, n.input[0]!) !== null
  );
}

const floatAttr = (n: NodeProto, name: string, def: number): number => getAttr(n, name)?.f ?? def;

/** The graph input a value is, looking through casts, or null. */
function inputBehind(g: GraphIndex, v: string): string | null {
  const x = g.skipBack(v, PASSTHROUGH);
  return g.inputs.has(x) ? x : null;
}

/** A fused attention op (GroupQueryAttention, MultiHeadAttention) as a FusedAttention without its layer; throws a LobesError saying what is not supported. */
export function fusedAttentionSite(g: GraphIndex, n: NodeProto,
  hints: { heads: number | null; kvHeads: number | null } = { heads: null, kvHeads: null },
  file = ''): Omit<FusedAttention, 'layer' | 'name'>
{
  const input = (i: number): string | null => n.input[i] || null;
  const refuse = (what: string) =>
    new ModelError(`cannot recompute the attention weights of ${n.opType}: ${what}`, { file,
      where: n.name ? `node ${n.name}` : undefined,
      hint: 'export the model with explicit attention (optimum or torch.onnx), which lobes reads directly' });
  const heads = attrInt(n, 'num_heads', 0) || hints.heads || 0;
  if (!heads) throw refuse('no num_heads attribute');
  if (n.opType === 'GroupQueryAttention') {
    const kvHeads = attrInt(n, 'kv_num_heads', 0);
    if (!kvHeads || heads % kvHeads !== 0)
      throw refuse(`num_heads ${heads} is not a multiple of kv_num_heads ${kvHeads}`);
    if (input(12) || input(13) || getAttr(n, 'k_quant_type') || getAttr(n, 'kv_cache_bit_width'))
      throw refuse('a quantized KV cache (the op attends to dequantized keys lobes does not see)');
    if (input(14) || input(15)) throw refuse('fused Q/K RMS normalization (q_norm_weight / k_norm_weight inputs)');
    const doRotary = attrInt(n, 'do_rotary', 0) === 1;
    let rotary: InOpRotary | null = null;
    if (doRotary) {
      const cos = input(7);
      const sin = input(8);
      if (!cos || !sin) throw refuse('do_rotary=1 without cos_cache and sin_cache inputs');
      // onnxruntime's kernels differ on a position_ids input (the 1.30 CPU kernel ignores it on a
      // first prompt and rotates by 0..n−1); onnxruntime-genai's builder never wires one.
      if (input(9))
        throw refuse(
          'a position_ids input with in-op rotary (how the kernel uses it differs between onnxruntime versions and providers)',
        );
      rotary = { cos, sin, interleaved: attrInt(n, 'rotary_interleaved', 0) === 1 };
    }
    const scale = floatAttr(n, 'scale', 0);
    return {
      kind: 'fused',
      op: 'GroupQueryAttention',
      node: n,
      query: n.input[0]!,
      key: input(1),
      heads,
      kvHeads,
      scale: scale === 0 ? null : scale,
      softcap: floatAttr(n, 'softcap', 0),
      smoothSoftmax: attrInt(n, 'smooth_softmax', 0) === 1,
      headSink: input(11),
      localWindow: attrInt(n, 'local_window_size', -1),
      rotary,
      attentionBias: input(10),
      qkvBias: null,
    };
  }
  // MultiHeadAttention: query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value, ...
  const key = input(1);
  if (!key) throw refuse('packed query/key/value (no key input)');
  const keyRank = g.shapeOf(key)?.length;
  if (keyRank !== undefined && keyRank !== 3)
    throw refuse(`key of rank ${keyRank} (only [batch, seq, hidden] keys are supported)`);
  const kpm = input(4);
  if (kpm && !inputBehind(g, kpm))
    throw refuse('a key_padding_mask computed in the graph (only the attention mask input itself is supported)');
  const scale = floatAttr(n, 'scale', 0);
  return {
    kind: 'fused',
    op: 'MultiHeadAttention',
    node: n,
    query: n.input[0]!,
    key,
    heads,
    kvHeads: heads,
    scale: scale === 0 ? null : scale,
    softcap: 0,
    smoothSoftmax: false,
    headSink: null,
    localWindow: -1,
    rotary: null,
    attentionBias: input(5),
    qkvBias: input(3),
  };
}

/**
 * Every decoder layer's attention site, in layer order, found by structure. `disc` is the
 * model's capture-point discovery (its MLPs number the layers). Throws a LobesError naming what
 * is missing or not supported.
 */
export function findAttention(disc: Discovery, file: string, opset: number): AttentionSite[] {
  const g = disc.index;
  const layers = disc.mlps.length;
  for (const n of g.nodes) {
    const why = (n.domain === 'com.microsoft' || !n.domain) && UNSUPPORTED_OPS[n.opType];
    if (why) {
      throw new LobesError(`cannot read attention weights: the graph computes attention with ${why}`, { file,
        where: n.name ? `node ${n.name}` : undefined });
    }
  }
  const fusedNodes = g.nodes.filter((n) =>
    n.domain === 'com.microsoft' && (n.opType === 'GroupQueryAttention' || n.opType === 'MultiHeadAttention')
  );
  const softmaxNodes = softmaxSites(g, opset);
  let sites: Omit<AttentionSite, 'layer' | 'name'>[];
  if (fusedNodes.length && softmaxNodes.length) {
    throw new LobesError(
      `cannot read attention weights: the graph mixes ${fusedNodes.length} fused attention ops with ${softmaxNodes.length} explicit attention softmaxes`,
      { file },
    );
  }
  if (fusedNodes.length) sites = fusedNodes.map((n) => fusedAttentionSite(g, n, disc.arch, file));
  else if (softmaxNodes.length)
    sites = softmaxNodes.map((n) => ({ kind: 'softmax' as const, node: n, probs: n.output[0]! }));
  else {
    throw new LobesError(
      'cannot read attention weights: no attention found (neither a Softmax over Q·Kᵀ nor a GroupQueryAttention / MultiHeadAttention op)',
      {
        file,
        hint: "lobes reads explicit attention (optimum, torch.onnx) and onnxruntime-genai's fused attention",
      },
    );
  }
  if (sites.length !== layers) {
    throw new LobesError(
      `cannot read attention weights: found ${sites.length} attention sites for ${layers} decoder layers`,
      { file },
    );
  }
  return sites.map((s, i) => {
    const out = s.node.output[0]!;
    // Layer i's attention feeds layer i's MLP and comes after layer i−1's.
    if (!g.reaches(out, disc.mlps[i]!.input) || (i > 0 && g.reaches(out, disc.mlps[i - 1]!.input))) {
      throw new LobesError(
        `cannot read attention weights: the attention site in graph order ${i} does not feed layer ${i}'s MLP`,
        { file, where: s.node.name ? `node ${s.node.name}` : undefined },
      );
    }
    return { ...s, layer: i, name: hookName({ layer: i, site: 'attn.weights' }) } as AttentionSite;
  });
}
