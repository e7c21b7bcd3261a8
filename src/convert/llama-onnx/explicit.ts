/**
 * The 'explicit' layout, in the style of an optimum / transformers.js export: decomposed
 * RMSNorm (Pow, ReduceMean, Add ε, Sqrt, Div, Mul), RoPE computed from position_ids and
 * inv_freq (rotate-half with Slice/Concat), attention as MatMul(q, kᵀ)·scale + mask → Softmax
 * → MatMul(·, v) with a causal + padding mask, grouped-query attention by repeating the KV
 * heads, SiLU as Sigmoid·x, optional KV-cache inputs/outputs. Qwen2's q/k/v biases are an Add
 * after each projection; Qwen3's q_norm / k_norm the same decomposed RMSNorm over each head;
 * Mistral's sliding window one more condition in the mask (i − j < window). Gemma (spec.gemma; Gemma 1
 * without the post norms, soft-caps and windows):
 * embeddings times sqrt(hidden), every RMSNorm's weight w applied as (1 + w) (an Add on the
 * stored w), post-attention and post-feedforward norms before each residual Add, the MLP read
 * from pre_feedforward_layernorm, GELU (tanh approximation) decomposed as
 * x · 0.5 · (1 + tanh(√(2/π) · (x + 0.044715 · x³))), the attention scale query_pre_attn_scalar^−½,
 * soft-capping cap · tanh(s / cap) of the scores (before the mask) and of the logits (after
 * lm_head), two masks (full, and windowed for the sliding layers) and two rotary tables (the
 * sliding layers' own base). Projections are MatMul over
 * [d_in, d_out] weights named onnx::MatMul_N, or MatMulNBits. lm_head is MatMulNBits when the
 * weights are 'q4' and the source gives its blocks in a form ONNX Runtime runs, else float.
 * Float weights stored in another dtype than the graph's (fp16 or bf16 storage in an fp32 graph)
 * are read through a Cast: after each projection weight, after the embedding Gather, and after
 * the Transpose of tied embeddings.
 *
 * Inputs: input_ids, attention_mask [batch, total], position_ids, (past_key_values.{i}.key/value
 * [batch, kvHeads, past, headDim]). Outputs: logits (and present.{i}.key/value).
 */
import { int, ints } from './graph.js';
import type { GGraph } from './graph.js';
import type { GraphBuilder, ProjNaming } from './build.js';
import { attnScale, localRopeSpec, ropeAttentionFactor, ropeInvFreq, ropeLongInvFreq, rotaryDim, W } from './spec.js';
import type { LlamaSpec } from './types.js';

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
        return { B: `onnx::MatMulNBits_${i}_B`, scales: `onnx::MatMulNBits_${i}_scales`,
          zp: `onnx::MatMulNBits_${i}_zp` };
      },
      node: (
        op,
      ) => (op === 'MatMul'
        ? { name: `${prefix}/MatMul`, output: `${prefix}/MatMul_output_0` }
        : { name: `${prefix}/MatMulNBits`, output: `${prefix}/MatMulNBits_output_0` }),
      scales2d: false,
    };
  };
  const proj = (prefix: string, input: string, weight: string) => b.projection(input, [weight], naming(prefix));

  // Shared constants.
  const cTwo = b.fconst('/model/constants/two', [2]);
  const cEps = b.fconst('/model/constants/eps', [rmsNormEps]);
  const cOne = b.fconst('/model/constants/one', [1]);
  const cNegOne = b.fconst('/model/constants/neg_one', [-1]);
  const gm = s.gemma;
  const cScale = b.fconst('/model/constants/attn_scale', [attnScale(s)]);
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
  const embDtype = b.denseFloat;
  const embed = b.floatTensor(W.embed, [W.embed], false, embDtype);
  let x = node('Gather', '/model/embed_tokens/Gather', [embed, 'input_ids']);
  x = b.castTo(x, embDtype, '/model/embed_tokens/Cast');
  // Gemma: the embeddings times sqrt(hidden) (transformers rounds the factor to the weights' dtype).
  if (gm)
    x = node('Mul', '/model/embed_tokens/Mul_scale', [x,
      b.fconst('/model/constants/embed_scale', [Math.sqrt(s.hidden)])]);

  // Attention mask [B, 1, S, T]: key j visible to query i iff j <= past + i and mask[b, j] = 1.
  const idsShape = node('Shape', '/model/Shape', ['input_ids']);
  const seqLen = node('Gather', '/model/Gather', [idsShape, cI1], { axis: int(0) });
  const maskShape = node('Shape', '/model/Shape_1', ['attention_mask']);
  const totLen = node('Gather', '/model/Gather_1', [maskShape, cI1], { axis: int(0) });
  const pastLen = node('Sub', '/model/Sub', [totLen, seqLen]);
  const kPos = node('Range', '/model/Range', [cI0, totLen, cI1]);
  const qPos0 = node('Range', '/model/Range_1', [pastLen, totLen, cI1]);
  const qPos = node('Unsqueeze', '/model/Unsqueeze', [qPos0, cAxLast]);
  const causal = node('LessOrEqual', '/model/LessOrEqual', [kPos, qPos]); // [S, T]
  /** The causal condition with the window: key j is visible to query i only when i − j < window, i.e. j > i − window. */
  const windowed = (tag: string): string => {
    const cWin = b.i64('/model/constants/sliding_window', [s.slidingWindow!], []);
    const lo = node('Sub', `/model/Sub_window${tag}`, [qPos, cWin]);
    const inWindow = node('Greater', `/model/Greater_window${tag}`, [kPos, lo]);
    return node('And', `/model/And_window${tag}`, [causal, inWindow]);
  };
  // Mistral, Phi-3: the window in every layer.
  const causalAll = !gm && s.slidingWindow ? windowed('') : causal;
  const padBool = node('Cast', '/model/Cast', ['attention_mask'], { to: int(9) });
  const pad4 = node('Unsqueeze', '/model/Unsqueeze_1', [padBool, cAx12]); // [B,1,1,T]
  const maskOf = (c: string, tag: string): string =>
    node('Where', `/model/Where${tag}`, [node('And', `/model/And${tag}`, [c, pad4]), cZero, cMaskMin]); // [B,1,S,T]
  const mask = maskOf(causalAll, '');
  // Gemma: a full mask and, for the sliding layers, a windowed one.
  const slidingMask = gm && gm.sliding.some((x) => x) ? maskOf(windowed('_sliding'), '_sliding') : mask;

  // Rotary embedding from position_ids, computed in float32 (cast to float16 after cos/sin).
  // (Partial rotary: rd of the hd dims of each head rotate.)
  const posF = node('Cast', '/model/rotary_emb/Cast', ['position_ids'], { to: int(1) });
  const posU = node('Unsqueeze', '/model/rotary_emb/Unsqueeze', [posF, cAxLast]); // [B,S,1]
  const rotary = (rs: LlamaSpec, rp: string, tag: string): [string, string] => {
    const longrope = ropeLongInvFreq(rs);
    let freqs: string;
    if (longrope) {
      // longrope: each row's frequencies are the long ones when its length (largest position + 1)
      // exceeds original_max_position_embeddings, else the short ones, as transformers chooses
      // for a text run alone.
      const longInv = b.f32const('model.rotary_emb.long_inv_freq', longrope.long, [1, 1, rd / 2]);
      const shortInv = b.f32const('model.rotary_emb.short_inv_freq', ropeInvFreq(rs), [1, 1, rd / 2]);
      const rowMax = node('ReduceMax', '/model/rotary_emb/ReduceMax', ['position_ids'], { axes: ints([1]),
        keepdims: int(1) }); // [B,1]
      const cLast = b.i64('/model/constants/longrope_last_short_position', [longrope.threshold - 1], []);
      const isLong = node('Greater', '/model/rotary_emb/Greater', [rowMax, cLast]);
      const isLong3 = node('Unsqueeze', '/model/rotary_emb/Unsqueeze_long', [isLong, cAxLast]); // [B,1,1]
      const inv = node('Where', '/model/rotary_emb/Where', [isLong3, longInv, shortInv]); // [B,1,rd/2]
      freqs = node('Mul', '/model/rotary_emb/Mul', [posU, inv]); // [B,S,rd/2]
    } else {
      const invFreq = b.f32const(`model.${rp}.inv_freq`, ropeInvFreq(rs), [1, rd / 2]);
      freqs = node('MatMul', `/model/${rp}/MatMul`, [posU, invFreq]); // [B,S,rd/2]
    }
    const emb = node('Concat', `/model/${rp}/Concat`, [freqs, freqs], { axis: int(-1) });
    const cos0 = b.castTo(node('Cos', `/model/${rp}/Cos`, [emb]), 'float32', `/model/${rp}/Cast_cos`);
    const sin0 = b.castTo(node('Sin', `/model/${rp}/Sin`, [emb]), 'float32', `/model/${rp}/Cast_sin`);
    let cos = node('Unsqueeze', `/model/${rp}/Unsqueeze_1`, [cos0, cAx1]); // [B,1,S,hd]
    let sin = node('Unsqueeze', `/model/${rp}/Unsqueeze_2`, [sin0, cAx1]);
    const attnFactor = ropeAttentionFactor(rs);
    if (attnFactor !== 1) {
      // YaRN: cos and sin scaled by the attention factor, as transformers' rotary embedding does.
      const cF = b.fconst(`/model/constants/rope_attention_factor${tag}`, [attnFactor]);
      cos = node('Mul', `/model/${rp}/Mul_cos`, [cos, cF]);
      sin = node('Mul', `/model/${rp}/Mul_sin`, [sin, cF]);
    }
    return [cos, sin];
  };
  const globalRope = rotary(s, 'rotary_emb', '');
  // Gemma 3: the sliding layers rotate with their own base (rope_local_base_freq) when it differs.
  const local = localRopeSpec(s);
  const globalInv = ropeInvFreq(s);
  const sameRope = local === s ||
    (ropeInvFreq(local).every((v, i) => v === globalInv[i]) && ropeAttentionFactor(local) === ropeAttentionFactor(s));
  const localRope = gm && gm.sliding.some((x) => x) && !sameRope
    ? rotary(local, 'rotary_emb_local', '_local')
    : globalRope;

  const rmsNorm = (prefix: string, input: string, wName: string): string => {
    let w = b.floatTensor(wName, [wName], false, ft);
    // Gemma: the norm scales by (1 + w), w as stored (ONNX Runtime folds the Add).
    if (gm) w = node('Add', `${prefix}/Add_one`, [w, cOne]);
    const sq = node('Pow', `${prefix}/Pow`, [input, cTwo]);
    const mean = node('ReduceMean', `${prefix}/ReduceMean`, [sq], { axes: ints([-1]), keepdims: int(1) });
    const added = node('Add', `${prefix}/Add`, [mean, cEps]);
    const root = node('Sqrt', `${prefix}/Sqrt`, [added]);
    const inv = node('Div', `${prefix}/Div`, [cOne, root]);
    const normed = node('Mul', `${prefix}/Mul`, [input, inv]);
    return node('Mul', `${prefix}/Mul_1`, [w, normed]);
  };
  const rope = (prefix: string, t0: string, [cos, sin]: [string, string]): string => {
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

  /** cap · tanh(v / cap) (Gemma 2's soft-capping of attention scores and logits). */
  const softcap = (prefix: string, v: string, cap: number, output?: string): string => {
    const cCap = b.fconst(`${prefix}/cap`, [cap]);
    const t = node('Tanh', `${prefix}/Tanh`, [node('Div', `${prefix}/Div`, [v, cCap])]);
    return node('Mul', `${prefix}/Mul`, [t, cCap], undefined, output ? { outputs: [output] } : {});
  };
  /** GELU, tanh approximation (transformers' gelu_pytorch_tanh): x · 0.5 · (1 + tanh(√(2/π) · (x + 0.044715 · x³))). */
  const geluConsts = gm
    ? [b.fconst('/model/constants/gelu_kappa', [0.044715]),
      b.fconst('/model/constants/gelu_beta', [Math.sqrt(2 / Math.PI)]), b.fconst('/model/constants/half', [0.5])]
    : [];
  const geluTanh = (prefix: string, v: string): string => {
    const [cKappa, cBeta, cHalfF] = geluConsts as [string, string, string];
    const cube = node('Mul', `${prefix}/Mul_cube`, [node('Mul', `${prefix}/Mul_sq`, [v, v]), v]);
    const inner = node('Add', `${prefix}/Add`, [v, node('Mul', `${prefix}/Mul_kappa`, [cube, cKappa])]);
    const t = node('Tanh', `${prefix}/Tanh`, [node('Mul', `${prefix}/Mul_beta`, [inner, cBeta])]);
    const half = node('Mul', `${prefix}/Mul_half`, [node('Add', `${prefix}/Add_one`, [t, cOne]), cHalfF]);
    return node('Mul', `${prefix}/Mul`, [v, half]);
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
      s.attnBias
        ? node('Add', `${pre}/self_attn/${p}_proj/Add`, [b.floatTensor(W.attnBias(l, p), [W.attnBias(l, p)], false, ft),
          t])
        : t;
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
    const sliding = !!gm?.sliding[l];
    const trig = sliding ? localRope : globalRope;
    const q3 = rope(`${pre}/self_attn/rotary_q`, q2, trig);
    let k3 = rope(`${pre}/self_attn/rotary_k`, k2, trig);
    if (withPast) {
      const pk = `past_key_values.${l}.key`;
      const pv = `past_key_values.${l}.value`;
      b.inputs.push({ name: pk, dtype: ft, shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      b.inputs.push({ name: pv, dtype: ft, shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      k3 = node('Concat', `${pre}/self_attn/Concat_k`, [pk, k3], { axis: int(2) });
      v2 = node('Concat', `${pre}/self_attn/Concat_v`, [pv, v2], { axis: int(2) });
      node('Identity', `${pre}/self_attn/present_key`, [k3], undefined, { outputs: [`present.${l}.key`] });
      node('Identity', `${pre}/self_attn/present_value`, [v2], undefined, { outputs: [`present.${l}.value`] });
      b.outputs.push({ name: `present.${l}.key`, dtype: ft,
        shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
      b.outputs.push({ name: `present.${l}.value`, dtype: ft,
        shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
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
    let scores1 = node('Mul', `${pre}/self_attn/Mul`, [scores0, cScale]);
    if (gm?.attnSoftcap) scores1 = softcap(`${pre}/self_attn/softcap`, scores1, gm.attnSoftcap);
    const scores = node('Add', `${pre}/self_attn/Add`, [scores1, sliding ? slidingMask : mask]);
    const probs = node('Softmax', `${pre}/self_attn/Softmax`, [scores], { axis: int(-1) });
    const ctx0 = node('MatMul', `${pre}/self_attn/MatMul_1`, [probs, vr]);
    const ctx1 = node('Transpose', `${pre}/self_attn/Transpose_4`, [ctx0], { perm: ints([0, 2, 1, 3]) });
    const ctx = node('Reshape', `${pre}/self_attn/Reshape_3`, [ctx1, cOutShape]);
    let attn = proj(`${pre}/self_attn/o_proj`, ctx, W.attn(l, 'o'));
    // Gemma: the attention output is normalized (post_attention_layernorm) before the residual Add,
    // and the MLP reads pre_feedforward_layernorm.
    if (gm?.postNorms) attn = rmsNorm(`${pre}/post_attention_layernorm`, attn, W.postNorm(l));
    x = node('Add', `${pre}/Add`, [x, attn]);
    const h2 = gm?.postNorms
      ? rmsNorm(`${pre}/pre_feedforward_layernorm`, x, W.preFfNorm(l))
      : rmsNorm(`${pre}/post_attention_layernorm`, x, W.postNorm(l));
    const gate = proj(`${pre}/mlp/gate_proj`, h2, W.mlp(l, 'gate'));
    const up = proj(`${pre}/mlp/up_proj`, h2, W.mlp(l, 'up'));
    const act = gm
      ? geluTanh(`${pre}/mlp/act_fn`, gate)
      : node('Mul', `${pre}/mlp/act_fn/Mul`, [gate, node('Sigmoid', `${pre}/mlp/act_fn/Sigmoid`, [gate])]);
    const prod = node('Mul', `${pre}/mlp/Mul`, [act, up]);
    let down = proj(`${pre}/mlp/down_proj`, prod, W.mlp(l, 'down'));
    if (gm?.postNorms) down = rmsNorm(`${pre}/post_feedforward_layernorm`, down, W.postFfNorm(l));
    x = node('Add', `${pre}/Add_1`, [x, down]);
  }
  const hf = rmsNorm('/model/norm', x, W.norm);
  // Gemma 2: lm_head's output soft-capped into the logits.
  const finalCap = gm?.finalSoftcap ?? null;
  const lmOut = finalCap ? '/lm_head/output_0' : 'logits';
  if (s.tiedEmbeddings) {
    // lm_head reads the embedding matrix through a Transpose (one stored copy).
    let wT = node('Transpose', '/lm_head/Transpose', [embed], { perm: ints([1, 0]) });
    wT = b.castTo(wT, embDtype, '/lm_head/Cast');
    node('MatMul', '/lm_head/MatMul', [hf, wT], undefined, { outputs: [lmOut] });
  } else if (b.hasRunnableBlocks(W.lmHead)) {
    // The source's own blocks (e.g. a GGUF's Q6_K output weight) as MatMulNBits: exact, a
    // quarter to a third of the float bytes, and written whole instead of transposed.
    const n = naming('/lm_head');
    b.projection(hf, [W.lmHead], { ...n, node: (op, bits) => ({ ...n.node(op, bits), output: lmOut }) });
  } else {
    // Otherwise lm_head stays float (fp32/fp16/bf16 like the embeddings): never re-quantized from rows.
    const n = naming('/lm_head');
    const dtype = b.denseFloat;
    let w = b.floatTensor(n.floatInit(), [W.lmHead], true, dtype);
    w = b.castTo(w, dtype, '/lm_head/Cast');
    node('MatMul', '/lm_head/MatMul', [hf, w], undefined, { outputs: [lmOut] });
  }
  if (finalCap) softcap('/lm_head/softcap', lmOut, finalCap, 'logits');
  return b.graph(17);
}
