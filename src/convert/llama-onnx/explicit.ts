/**
 * The 'explicit' layout, in the style of an optimum / transformers.js export: decomposed
 * RMSNorm (Pow, ReduceMean, Add ε, Sqrt, Div, Mul), RoPE computed from position_ids and
 * inv_freq (rotate-half with Slice/Concat), attention as MatMul(q, kᵀ)·scale + mask → Softmax
 * → MatMul(·, v) with a causal + padding mask, grouped-query attention by repeating the KV
 * heads, SiLU as Sigmoid·x, optional KV-cache inputs/outputs. Qwen2's q/k/v biases are an Add
 * after each projection; Qwen3's q_norm / k_norm the same decomposed RMSNorm over each head;
 * Mistral's sliding window one more condition in the mask (i − j < window). Projections are MatMul over
 * [d_in, d_out] weights named onnx::MatMul_N, or MatMulNBits. lm_head is MatMulNBits when the
 * weights are 'q4' and the source gives its blocks in a form ONNX Runtime runs, else float.
 *
 * Inputs: input_ids, attention_mask [batch, total], position_ids, (past_key_values.{i}.key/value
 * [batch, kvHeads, past, headDim]). Outputs: logits (and present.{i}.key/value).
 */
import { int, ints } from './graph.js';
import type { GGraph } from './graph.js';
import type { GraphBuilder, ProjNaming } from './build.js';
import { ropeAttentionFactor, ropeInvFreq, ropeLongInvFreq, rotaryDim, W } from './spec.js';

/** Build the explicit graph, streaming the weights into the builder's sink. */
export function buildExplicit(b: GraphBuilder): GGraph {
  const s = b.spec;
  const { heads, kvHeads, vocab: V, layers, rmsNormEps, headDim: hd } = s;
  const rd = rotaryDim(s);
  const withPast = b.opts.withPast;
  const ft = b.ft;
  const rep = heads / kvHeads;
  const node = b.node.bind(b);
  let matmulCounter = 100;

  const naming = (prefix: string): ProjNaming => {
    let id = -1;
    const next = () => (id < 0 ? (id = matmulCounter++) : id);
    return {
      prefix,
      floatInit: () => `onnx::MatMul_${next()}`,
      nbitsInit: () => {
        const i = next();
        return { B: `onnx::MatMulNBits_${i}_B`, scales: `onnx::MatMulNBits_${i}_scales`, zp: `onnx::MatMulNBits_${i}_zp` };
      },
      node: (op) => (op === 'MatMul' ? { name: `${prefix}/MatMul`, output: `${prefix}/MatMul_output_0` } : { name: `${prefix}/MatMulNBits`, output: `${prefix}/MatMulNBits_output_0` }),
      scales2d: false,
    };
  };
  const proj = (prefix: string, input: string, weight: string) => b.projection(input, [weight], naming(prefix));

  // Shared constants.
  const cTwo = b.fconst('/model/constants/two', [2]);
  const cEps = b.fconst('/model/constants/eps', [rmsNormEps]);
  const cOne = b.fconst('/model/constants/one', [1]);
  const cNegOne = b.fconst('/model/constants/neg_one', [-1]);
  const cScale = b.fconst('/model/constants/attn_scale', [1 / Math.sqrt(hd)]);
  const cZero = b.fconst('/model/constants/zero', [0]);
  const cMaskMin = b.fconst('/model/constants/mask_min', [-3.4028234663852886e38]);
  const cI0 = b.i64('/model/constants/i0', [0], []);
  const cI1 = b.i64('/model/constants/i1', [1], []);
  const cAx2 = b.i64('/model/constants/axes2', [2]);
  const cAx1 = b.i64('/model/constants/axes1', [1]);
  const cAx12 = b.i64('/model/constants/axes12', [1, 2]);
  const cAxLast = b.i64('/model/constants/axes_last', [-1]);
  const cHalf0 = b.i64('/model/constants/half_start', [0]);
  const cHalf1 = b.i64('/model/constants/half_mid', [rd / 2]);
  const cHalf2 = b.i64('/model/constants/half_end', [rd]);
  const cHeadEnd = rd < hd ? b.i64('/model/constants/head_end', [hd]) : '';
  const cQShape = b.i64('/model/constants/q_shape', [0, 0, heads, hd]);
  const cKvShape = b.i64('/model/constants/kv_shape', [0, 0, kvHeads, hd]);
  const cRepShape = b.i64('/model/constants/rep_shape', [1, 1, rep, 1, 1]);
  const cGqaShape = b.i64('/model/constants/gqa_shape', [0, heads, -1, hd]);
  const cOutShape = b.i64('/model/constants/attn_out_shape', [0, 0, heads * hd]);

  // Embedding (stored like the projections' float weights; tied: also lm_head's weight).
  const embDtype = b.opts.weights === 'fp16' ? 'float16' : ft;
  const embed = b.floatTensor(W.embed, [W.embed], false, embDtype);
  let x = node('Gather', '/model/embed_tokens/Gather', [embed, 'input_ids']);
  x = b.castTo(x, embDtype, '/model/embed_tokens/Cast');

  // Attention mask [B, 1, S, T]: key j visible to query i iff j <= past + i and mask[b, j] = 1.
  const idsShape = node('Shape', '/model/Shape', ['input_ids']);
  const seqLen = node('Gather', '/model/Gather', [idsShape, cI1], { axis: int(0) });
  const maskShape = node('Shape', '/model/Shape_1', ['attention_mask']);
  const totLen = node('Gather', '/model/Gather_1', [maskShape, cI1], { axis: int(0) });
  const pastLen = node('Sub', '/model/Sub', [totLen, seqLen]);
  const kPos = node('Range', '/model/Range', [cI0, totLen, cI1]);
  const qPos0 = node('Range', '/model/Range_1', [pastLen, totLen, cI1]);
  const qPos = node('Unsqueeze', '/model/Unsqueeze', [qPos0, cAxLast]);
  let causal = node('LessOrEqual', '/model/LessOrEqual', [kPos, qPos]); // [S, T]
  if (s.slidingWindow) {
    // Mistral: key j is visible to query i only when i − j < window, i.e. j > i − window.
    const cWin = b.i64('/model/constants/sliding_window', [s.slidingWindow], []);
    const lo = node('Sub', '/model/Sub_window', [qPos, cWin]);
    const inWindow = node('Greater', '/model/Greater_window', [kPos, lo]);
    causal = node('And', '/model/And_window', [causal, inWindow]);
  }
  const padBool = node('Cast', '/model/Cast', ['attention_mask'], { to: int(9) });
  const pad4 = node('Unsqueeze', '/model/Unsqueeze_1', [padBool, cAx12]); // [B,1,1,T]
  const allowed = node('And', '/model/And', [causal, pad4]); // [B,1,S,T]
  const mask = node('Where', '/model/Where', [allowed, cZero, cMaskMin]);

  // Rotary embedding from position_ids, computed in float32 (cast to float16 after cos/sin).
  // (Partial rotary: rd of the hd dims of each head rotate.)
  const posF = node('Cast', '/model/rotary_emb/Cast', ['position_ids'], { to: int(1) });
  const posU = node('Unsqueeze', '/model/rotary_emb/Unsqueeze', [posF, cAxLast]); // [B,S,1]
  const longrope = ropeLongInvFreq(s);
  let freqs: string;
  if (longrope) {
    // longrope: each row's frequencies are the long ones when its length (largest position + 1)
    // exceeds original_max_position_embeddings, else the short ones, as transformers chooses
    // for a text run alone.
    const longInv = b.f32const('model.rotary_emb.long_inv_freq', longrope.long, [1, 1, rd / 2]);
    const shortInv = b.f32const('model.rotary_emb.short_inv_freq', ropeInvFreq(s), [1, 1, rd / 2]);
    const rowMax = node('ReduceMax', '/model/rotary_emb/ReduceMax', ['position_ids'], { axes: ints([1]), keepdims: int(1) }); // [B,1]
    const cLast = b.i64('/model/constants/longrope_last_short_position', [longrope.threshold - 1], []);
    const isLong = node('Greater', '/model/rotary_emb/Greater', [rowMax, cLast]);
    const isLong3 = node('Unsqueeze', '/model/rotary_emb/Unsqueeze_long', [isLong, cAxLast]); // [B,1,1]
    const inv = node('Where', '/model/rotary_emb/Where', [isLong3, longInv, shortInv]); // [B,1,rd/2]
    freqs = node('Mul', '/model/rotary_emb/Mul', [posU, inv]); // [B,S,rd/2]
  } else {
    const invFreq = b.f32const('model.rotary_emb.inv_freq', ropeInvFreq(s), [1, rd / 2]);
    freqs = node('MatMul', '/model/rotary_emb/MatMul', [posU, invFreq]); // [B,S,rd/2]
  }
  const emb = node('Concat', '/model/rotary_emb/Concat', [freqs, freqs], { axis: int(-1) });
  const cos0 = b.castTo(node('Cos', '/model/rotary_emb/Cos', [emb]), 'float32', '/model/rotary_emb/Cast_cos');
  const sin0 = b.castTo(node('Sin', '/model/rotary_emb/Sin', [emb]), 'float32', '/model/rotary_emb/Cast_sin');
  let cos = node('Unsqueeze', '/model/rotary_emb/Unsqueeze_1', [cos0, cAx1]); // [B,1,S,hd]
  let sin = node('Unsqueeze', '/model/rotary_emb/Unsqueeze_2', [sin0, cAx1]);
  const attnFactor = ropeAttentionFactor(s);
  if (attnFactor !== 1) {
    // YaRN: cos and sin scaled by the attention factor, as transformers' rotary embedding does.
    const cF = b.fconst('/model/constants/rope_attention_factor', [attnFactor]);
    cos = node('Mul', '/model/rotary_emb/Mul_cos', [cos, cF]);
    sin = node('Mul', '/model/rotary_emb/Mul_sin', [sin, cF]);
  }

  const rmsNorm = (prefix: string, input: string, wName: string): string => {
    const sq = node('Pow', `${prefix}/Pow`, [input, cTwo]);
    const mean = node('ReduceMean', `${prefix}/ReduceMean`, [sq], { axes: ints([-1]), keepdims: int(1) });
    const added = node('Add', `${prefix}/Add`, [mean, cEps]);
    const root = node('Sqrt', `${prefix}/Sqrt`, [added]);
    const inv = node('Div', `${prefix}/Div`, [cOne, root]);
    const normed = node('Mul', `${prefix}/Mul`, [input, inv]);
    return node('Mul', `${prefix}/Mul_1`, [b.floatTensor(wName, [wName], false, ft), normed]);
  };
  const rope = (prefix: string, t0: string): string => {
    // Partial rotary: the first rd dims rotate, dims rd..hd pass through unchanged.
    const t = rd < hd ? node('Slice', `${prefix}/Slice_rot`, [t0, cHalf0, cHalf2, cAxLast]) : t0;
    const x1 = node('Slice', `${prefix}/Slice`, [t, cHalf0, cHalf1, cAxLast]);
    const x2 = node('Slice', `${prefix}/Slice_1`, [t, cHalf1, cHalf2, cAxLast]);
    const nx2 = node('Mul', `${prefix}/Mul_neg`, [x2, cNegOne]);
    const rot = node('Concat', `${prefix}/Concat`, [nx2, x1], { axis: int(-1) });
    const a = node('Mul', `${prefix}/Mul`, [t, cos]);
    const c = node('Mul', `${prefix}/Mul_1`, [rot, sin]);
    const rotated = node('Add', `${prefix}/Add`, [a, c]);
    if (rd === hd) return rotated;
    const pass = node('Slice', `${prefix}/Slice_pass`, [t0, cHalf2, cHeadEnd, cAxLast]);
    return node('Concat', `${prefix}/Concat_pass`, [rotated, pass], { axis: int(-1) });
  };

  b.outputs.push({ name: 'logits', dtype: ft, shape: ['batch_size', 'sequence_length', V] });
  b.inputs.push(
    { name: 'input_ids', dtype: 'int64', shape: ['batch_size', 'sequence_length'] },
    { name: 'attention_mask', dtype: 'int64', shape: ['batch_size', 'total_sequence_length'] },
    { name: 'position_ids', dtype: 'int64', shape: ['batch_size', 'sequence_length'] },
  );

  for (let l = 0; l < layers; l++) {
    const pre = `/model/layers.${l}`;
    const h = rmsNorm(`${pre}/input_layernorm`, x, W.inputNorm(l));
    // Qwen2: a bias after each of q, k and v (o_proj has none).
    const biased = (p: 'q' | 'k' | 'v', t: string) =>
      s.attnBias ? node('Add', `${pre}/self_attn/${p}_proj/Add`, [b.floatTensor(W.attnBias(l, p), [W.attnBias(l, p)], false, ft), t]) : t;
    const q0 = biased('q', proj(`${pre}/self_attn/q_proj`, h, W.attn(l, 'q')));
    const k0 = biased('k', proj(`${pre}/self_attn/k_proj`, h, W.attn(l, 'k')));
    const v0 = biased('v', proj(`${pre}/self_attn/v_proj`, h, W.attn(l, 'v')));
    let q1 = node('Reshape', `${pre}/self_attn/Reshape`, [q0, cQShape]);
    let k1 = node('Reshape', `${pre}/self_attn/Reshape_1`, [k0, cKvShape]);
    if (s.qkNorm) {
      // Qwen3: RMSNorm over each head's headDim values, before the rotary embedding.
      q1 = rmsNorm(`${pre}/self_attn/q_norm`, q1, W.qkNorm(l, 'q'));
      k1 = rmsNorm(`${pre}/self_attn/k_norm`, k1, W.qkNorm(l, 'k'));
    }
    const v1 = node('Reshape', `${pre}/self_attn/Reshape_2`, [v0, cKvShape]);
    const q2 = node('Transpose', `${pre}/self_attn/Transpose`, [q1], { perm: ints([0, 2, 1, 3]) });
    const k2 = node('Transpose', `${pre}/self_attn/Transpose_1`, [k1], { perm: ints([0, 2, 1, 3]) });
    let v2 = node('Transpose', `${pre}/self_attn/Transpose_2`, [v1], { perm: ints([0, 2, 1, 3]) });
    const q3 = rope(`${pre}/self_attn/rotary_q`, q2);
    let k3 = rope(`${pre}/self_attn/rotary_k`, k2);
    if (withPast) {
      const pk = `past_key_values.${l}.key`;
      const pv = `past_key_values.${l}.value`;
      b.inputs.push({ name: pk, dtype: ft, shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      b.inputs.push({ name: pv, dtype: ft, shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      k3 = node('Concat', `${pre}/self_attn/Concat_k`, [pk, k3], { axis: int(2) });
      v2 = node('Concat', `${pre}/self_attn/Concat_v`, [pv, v2], { axis: int(2) });
      node('Identity', `${pre}/self_attn/present_key`, [k3], undefined, { outputs: [`present.${l}.key`] });
      node('Identity', `${pre}/self_attn/present_value`, [v2], undefined, { outputs: [`present.${l}.value`] });
      b.outputs.push({ name: `present.${l}.key`, dtype: ft, shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
      b.outputs.push({ name: `present.${l}.value`, dtype: ft, shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
    }
    // Grouped-query attention: repeat each kv head `rep` times.
    const repeat = (t: string, tag: string) => {
      const u = node('Unsqueeze', `${pre}/self_attn/Unsqueeze_${tag}`, [t, cAx2]);
      const e = node('Expand', `${pre}/self_attn/Expand_${tag}`, [u, cRepShape]);
      return node('Reshape', `${pre}/self_attn/Reshape_${tag}`, [e, cGqaShape]);
    };
    const kr = repeat(k3, 'k');
    const vr = repeat(v2, 'v');
    const kt = node('Transpose', `${pre}/self_attn/Transpose_3`, [kr], { perm: ints([0, 1, 3, 2]) });
    const scores0 = node('MatMul', `${pre}/self_attn/MatMul`, [q3, kt]);
    const scores1 = node('Mul', `${pre}/self_attn/Mul`, [scores0, cScale]);
    const scores = node('Add', `${pre}/self_attn/Add`, [scores1, mask]);
    const probs = node('Softmax', `${pre}/self_attn/Softmax`, [scores], { axis: int(-1) });
    const ctx0 = node('MatMul', `${pre}/self_attn/MatMul_1`, [probs, vr]);
    const ctx1 = node('Transpose', `${pre}/self_attn/Transpose_4`, [ctx0], { perm: ints([0, 2, 1, 3]) });
    const ctx = node('Reshape', `${pre}/self_attn/Reshape_3`, [ctx1, cOutShape]);
    const attn = proj(`${pre}/self_attn/o_proj`, ctx, W.attn(l, 'o'));
    x = node('Add', `${pre}/Add`, [x, attn]);
    const h2 = rmsNorm(`${pre}/post_attention_layernorm`, x, W.postNorm(l));
    const gate = proj(`${pre}/mlp/gate_proj`, h2, W.mlp(l, 'gate'));
    const up = proj(`${pre}/mlp/up_proj`, h2, W.mlp(l, 'up'));
    const sig = node('Sigmoid', `${pre}/mlp/act_fn/Sigmoid`, [gate]);
    const act = node('Mul', `${pre}/mlp/act_fn/Mul`, [gate, sig]);
    const prod = node('Mul', `${pre}/mlp/Mul`, [act, up]);
    const down = proj(`${pre}/mlp/down_proj`, prod, W.mlp(l, 'down'));
    x = node('Add', `${pre}/Add_1`, [x, down]);
  }
  const hf = rmsNorm('/model/norm', x, W.norm);
  if (s.tiedEmbeddings) {
    // lm_head reads the embedding matrix through a Transpose (one stored copy).
    let wT = node('Transpose', '/lm_head/Transpose', [embed], { perm: ints([1, 0]) });
    wT = b.castTo(wT, embDtype, '/lm_head/Cast');
    node('MatMul', '/lm_head/MatMul', [hf, wT], undefined, { outputs: ['logits'] });
  } else if (b.hasRunnableBlocks(W.lmHead)) {
    // The source's own blocks (e.g. a GGUF's Q6_K output weight) as MatMulNBits: exact, a
    // quarter to a third of the float bytes, and written whole instead of transposed.
    const n = naming('/lm_head');
    b.projection(hf, [W.lmHead], { ...n, node: (op, bits) => ({ ...n.node(op, bits), output: 'logits' }) });
  } else {
    // Otherwise lm_head stays float (fp32/fp16 like the embeddings): never re-quantized from rows.
    const n = naming('/lm_head');
    const dtype = b.opts.weights === 'fp16' ? 'float16' : ft;
    let w = b.floatTensor(n.floatInit(), [W.lmHead], true, dtype);
    w = b.castTo(w, dtype, '/lm_head/Cast');
    node('MatMul', '/lm_head/MatMul', [hf, w], undefined, { outputs: ['logits'] });
  }
  return b.graph(17);
}
