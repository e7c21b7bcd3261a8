/**
 * The 'genai' layout, the graph pattern onnxruntime-genai's model builder writes for Llama:
 *
 *   seqlens_k = int32(ReduceSum(attention_mask, 1) − 1), total_sequence_length = int32(shape[1])
 *   x = Gather(embed, input_ids)
 *   per layer: SimplifiedLayerNormalization (layer 0) or SkipSimplifiedLayerNormalization
 *     (residual + previous down_proj; its 4th output is the residual sum) → qkv_proj (one
 *     projection of q, k, v stacked) → GroupQueryAttention (do_rotary from cos_cache /
 *     sin_cache, past_key_values.{i}.key/value in, present.{i}.key/value out) → o_proj →
 *     SkipSimplifiedLayerNormalization → gate/up → Sigmoid·x → Mul → down_proj
 *   final SkipSimplifiedLayerNormalization → lm_head → logits
 *
 * Projections are MatMul over [d_in, d_out] weights or MatMulNBits ('q4'; lm_head too when it
 * is not tied). When q, k and v come from the source in different MatMulNBits forms they
 * stay three projections feeding GroupQueryAttention's separate query/key/value inputs.
 * Qwen2's q/k/v biases: an Add after the (stacked) projection. Qwen3's q_norm / k_norm: q, k and
 * v as three projections, q and k each reshaped to heads, SimplifiedLayerNormalization, reshaped
 * back, into GroupQueryAttention's separate query/key/value inputs.
 * Tied embeddings: one [hidden, vocab] weight, read by lm_head and, through a Transpose, by
 * the embedding Gather.
 * Gemma (spec.gemma; Gemma 1 without the post norms, soft-caps and windows): the embeddings times sqrt(hidden); every norm's weight (1 + w) (an
 * Add on the stored w); the attention output normalized (SimplifiedLayerNormalization,
 * post_attention_layernorm) before the SkipSimplifiedLayerNormalization that adds it and
 * normalizes for the MLP (pre_feedforward_layernorm); FastGelu (GELU's tanh approximation) on
 * the gate; down_proj's output normalized (post_feedforward_layernorm) before the next skip
 * norm adds it; GroupQueryAttention with scale query_pre_attn_scalar^−½, softcap (Gemma 2's
 * attention soft-capping, applied to the scaled scores before the mask), local_window_size on
 * the sliding layers only, and the sliding layers' own cos/sin caches (Gemma 3's local base);
 * the logits soft-capped after lm_head (Div, Tanh, Mul).
 */
import { float, int, ints, type GGraph } from './graph.js';
import type { GraphBuilder, ProjNaming } from './build.js';
import { ModelError } from '../../util/errors.js';
import { attnScale, localRopeSpec, ropeAttentionFactor, ropeInvFreq, ropeType, rotaryDim, W } from './spec.js';
import type { LlamaSpec } from './types.js';

function naming(prefix: string, base: string, scales2d = true): ProjNaming {
  return {
    prefix,
    floatInit: () => `${base}.MatMul.weight`,
    nbitsInit: (bits) => ({ B: `${base}.MatMul.weight_Q${bits}`, scales: `${base}.MatMul.weight_scales`,
      zp: `${base}.MatMul.weight_zp` }),
    node: (op, bits) => ({ name: op === 'MatMul' ? `${prefix}/MatMul` : `${prefix}/MatMul_Q${bits}`,
      output: `${prefix}/MatMul/output_0` }),
    scales2d,
  };
}

/** Build the genai graph, streaming the weights into the builder's sink. */
export function buildGenai(b: GraphBuilder): GGraph {
  const s = b.spec;
  const { heads, kvHeads, vocab: V, layers, rmsNormEps: eps, headDim: hd, maxPositions } = s;
  const ft = b.ft;
  if (ropeType(s) === 'longrope') {
    throw new ModelError(
      "longrope is not expressed in the genai layout: GroupQueryAttention reads one cos/sin cache for the whole batch, while longrope chooses its short or long factors by each text's length",
      {
        hint:
          'the explicit layout expresses it (lobes convert --layout explicit; what extract, attend without --cot and ablate without --task iae read)',
      },
    );
  }
  const node = b.node.bind(b);
  const ms = { domain: 'com.microsoft' };
  b.inputs.push(
    { name: 'input_ids', dtype: 'int64', shape: ['batch_size', 'sequence_length'] },
    { name: 'attention_mask', dtype: 'int64', shape: ['batch_size', 'total_sequence_length'] },
  );
  b.outputs.push({ name: 'logits', dtype: ft, shape: ['batch_size', 'sequence_length', V] });
  for (let l = 0; l < layers; l++) {
    for (const kv of ['key', 'value']) {
      b.inputs.push({ name: `past_key_values.${l}.${kv}`, dtype: ft,
        shape: ['batch_size', kvHeads, 'past_sequence_length', hd] });
      b.outputs.push({ name: `present.${l}.${kv}`, dtype: ft,
        shape: ['batch_size', kvHeads, 'total_sequence_length', hd] });
    }
  }

  // seqlens_k and total_sequence_length from the attention mask.
  const mp = '/model/attn_mask_reformat/attn_mask_subgraph';
  const c1 = b.i64('/model/constants/INT64/[1]', [1]);
  const c1s = b.i64('/model/constants/INT64/1', [1], []);
  const sum = node('ReduceSum', `${mp}/ReduceSum`, ['attention_mask', c1], { keepdims: int(0) }, {
    outputs: [`${mp}/ReduceSum/output_0`],
  });
  const sub = node('Sub', `${mp}/Sub`, [sum, c1], undefined, { outputs: [`${mp}/Sub/output_0`] });
  const seqlensK = node('Cast', `${mp}/Sub/Cast`, [sub], { to: int(6) }, { outputs: [`${mp}/Sub/Cast/output_0`] });
  const shape = node('Shape', `${mp}/Shape`, ['attention_mask'], undefined, { outputs: [`${mp}/Shape/output_0`] });
  const tot = node('Gather', `${mp}/Gather`, [shape, c1s], { axis: int(0) }, { outputs: [`${mp}/Gather/output_0`] });
  const totalLen = node('Cast', `${mp}/Gather/Cast`, [tot], { to: int(6) }, {
    outputs: [`${mp}/Gather/Cast/output_0`],
  });

  // Embedding.
  let x: string;
  let tiedWeight: string | null = null;
  const lmFloat = b.opts.weights === 'q4' ? ft : b.projFloat;
  if (s.tiedEmbeddings) {
    tiedWeight = b.floatTensor('lm_head.MatMul.weight', [W.embed], true, lmFloat);
    const t = node('Transpose', '/model/embed_tokens/Transpose', [tiedWeight], { perm: ints([1, 0]) }, {
      outputs: ['/model/embed_tokens/Transpose/output_0'],
    });
    x = node('Gather', '/model/embed_tokens/Gather', [t, 'input_ids'], undefined, {
      outputs: ['/model/embed_tokens/Gather/output_0'],
    });
    x = b.castTo(x, lmFloat, '/model/embed_tokens/Cast');
  } else {
    const embDtype = b.denseFloat;
    const e = b.floatTensor(W.embed, [W.embed], false, embDtype);
    x = node('Gather', '/model/embed_tokens/Gather', [e, 'input_ids'], undefined, {
      outputs: ['/model/embed_tokens/Gather/output_0'],
    });
    x = b.castTo(x, embDtype, '/model/embed_tokens/Cast');
  }

  const gm = s.gemma;
  if (gm) {
    // Gemma: the embeddings times sqrt(hidden) (transformers rounds the factor to the weights' dtype).
    x = node('Mul', '/model/embed_tokens/Mul_scale', [x,
      b.fconst('/model/constants/embed_scale', [Math.sqrt(s.hidden)])], undefined, {
      outputs: ['/model/embed_tokens/Mul_scale/output_0'],
    });
  }

  // cos/sin caches [maxPositions, headDim/2] from the (scaled) inverse frequencies.
  // Partial rotary: caches of rotaryDim/2 columns; GroupQueryAttention rotates that many dims.
  const half = rotaryDim(s) / 2;
  const trig = (rs: LlamaSpec, fn: (a: number) => number) => {
    const invFreq = ropeInvFreq(rs);
    const attnFactor = ropeAttentionFactor(rs);
    return (r0: number, r1: number) => {
      const out = new Float32Array((r1 - r0) * half);
      for (let p = r0; p < r1; p++)
        for (let i = 0; i < half; i++) out[(p - r0) * half + i] = attnFactor * fn(p * invFreq[i]!);
      return out;
    };
  };
  let caches: [string, string] | null = null;
  let localCaches: [string, string] | null = null;
  const local = localRopeSpec(s);
  const globalInv = ropeInvFreq(s);
  const sameRope = local === s ||
    (ropeInvFreq(local).every((v, i) => v === globalInv[i]) && ropeAttentionFactor(local) === ropeAttentionFactor(s));

  /** A norm weight as the norm applies it: w, or Gemma's 1 + w (an Add ONNX Runtime folds). */
  const cOne = gm ? b.fconst('/model/constants/one', [1]) : '';
  const normWeight = (initName: string, w: string) => {
    const t = b.floatTensor(initName, [w], false, ft);
    return gm
      ? node('Add', `/model/norm_weights/${initName}/Add_one`, [t, cOne], undefined, {
        outputs: [`${initName}.plus_one`],
      })
      : t;
  };
  const norm = (prefix: string, input: string, w: string) =>
    node('SimplifiedLayerNormalization', `${prefix}/LayerNorm`, [input, normWeight(w, w)], { epsilon: float(eps),
      axis: int(-1), stash_type: int(1) }, { outputs: [`${prefix}/output_0`] });
  /** Skip norm: [normed, sum] of residual + delta. */
  const skipNorm = (prefix: string, residual: string, delta: string, w: string, wName = w,
    withSum = true): [string, string] =>
  {
    const outs = withSum ? [`${prefix}/output_0`, '', '', `${prefix}/output_3`] : [`${prefix}/output_0`];
    node('SkipSimplifiedLayerNormalization', `${prefix}/SkipLayerNorm`, [residual, delta, normWeight(wName, w)], {
      epsilon: float(eps),
    }, { outputs: outs, ...ms });
    return [outs[0]!, outs[3] ?? ''];
  };
  /** cap · tanh(v / cap) (Gemma 2's final soft-capping). */
  const softcap = (prefix: string, v: string, cap: number, output: string): string => {
    const cCap = b.fconst(`${prefix}/cap`, [cap]);
    const d = node('Div', `${prefix}/Div`, [v, cCap], undefined, { outputs: [`${prefix}/Div/output_0`] });
    const t = node('Tanh', `${prefix}/Tanh`, [d], undefined, { outputs: [`${prefix}/Tanh/output_0`] });
    return node('Mul', `${prefix}/Mul`, [t, cCap], undefined, { outputs: [output] });
  };

  let residual = x;
  let pendingDelta: string | null = null;
  let cHeads: string[] | undefined;
  for (let l = 0; l < layers; l++) {
    const pre = `/model/layers.${l}`;
    const base = `model.layers.${l}`;
    let h: string;
    if (pendingDelta === null) h = norm(`${pre}/input_layernorm`, residual, W.inputNorm(l));
    else [h, residual] = skipNorm(`${pre}/input_layernorm`, residual, pendingDelta, W.inputNorm(l));

    // Attention: q, k, v stacked into one projection when they share a storage form (and no
    // per-head norm needs them apart), each bias added after its projection (Qwen2: one Add of
    // the three stacked biases after a stacked projection).
    const qkvParts = [W.attn(l, 'q'), W.attn(l, 'k'), W.attn(l, 'v')];
    const plan = b.opts.weights === 'q4' && !s.qkNorm ? b.nbitsPlan(qkvParts) : null;
    const addBias = (t: string, parts: string[], tag: string) =>
      s.attnBias
        ? node('Add', `${pre}/attn/${tag}/Add`, [t, b.floatTensor(`${base}.attn.${tag}.bias`, parts, false, ft)],
          undefined, { outputs: [`${pre}/attn/${tag}/Add/output_0`] })
        : t;
    let gqaIn: string[];
    if (!s.qkNorm && (b.opts.weights !== 'q4' || plan)) {
      const qkv = b.projection(h, qkvParts, naming(`${pre}/attn/qkv_proj`, `${base}.attn.qkv_proj`), plan);
      gqaIn = [addBias(qkv, (['q', 'k', 'v'] as const).map((p) => W.attnBias(l, p)), 'qkv_proj'), '', ''];
    } else {
      gqaIn = (['q', 'k', 'v'] as const).map((p) =>
        addBias(b.projection(h, [W.attn(l, p)], naming(`${pre}/attn/${p}_proj`, `${base}.attn.${p}_proj`)), [
          W.attnBias(l, p),
        ], `${p}_proj`)
      );
    }
    if (s.qkNorm) {
      // Qwen3: SimplifiedLayerNormalization over each head of q and k ([B, S, n, headDim]), as
      // onnxruntime-genai's builder writes it, before GroupQueryAttention rotates them.
      cHeads ??= [b.i64('/model/constants/q_heads_shape', [0, 0, heads, hd]),
        b.i64('/model/constants/kv_heads_shape', [0, 0, kvHeads, hd]),
        b.i64('/model/constants/flat_shape', [0, 0, -1])];
      const shapes = cHeads;
      for (const [i, p] of (['q', 'k'] as const).entries()) {
        const pp = `${pre}/attn/${p}_norm`;
        const r = node('Reshape', `${pp}/Reshape`, [gqaIn[i]!, shapes[i]!], undefined, {
          outputs: [`${pp}/Reshape/output_0`],
        });
        const n = node('SimplifiedLayerNormalization', `${pp}/SimplifiedLayerNormalization`, [r,
          normWeight(W.qkNorm(l, p), W.qkNorm(l, p))], { epsilon: float(eps), axis: int(-1), stash_type: int(1) }, {
          outputs: [`${pp}/SimplifiedLayerNormalization/output_0`],
        });
        gqaIn[i] = node('Reshape', `${pp}/Reshape_1`, [n, shapes[2]!], undefined, {
          outputs: [`${pp}/Reshape_1/output_0`],
        });
      }
    }
    if (!caches) {
      caches = [
        b.generatedTensor('cos_cache', maxPositions, half, ft, trig(s, Math.cos)),
        b.generatedTensor('sin_cache', maxPositions, half, ft, trig(s, Math.sin)),
      ];
    }
    // Gemma: only the sliding layers have the window; Gemma 3's rotate with their own base.
    const sliding = gm ? gm.sliding[l]! : !!s.slidingWindow;
    if (gm && sliding && !sameRope && !localCaches) {
      localCaches = [
        b.generatedTensor('cos_cache_local', maxPositions, half, ft, trig(local, Math.cos)),
        b.generatedTensor('sin_cache_local', maxPositions, half, ft, trig(local, Math.sin)),
      ];
    }
    const [cosC, sinC] = gm && sliding && localCaches ? localCaches : caches;
    const attn = node(
      'GroupQueryAttention',
      `${pre}/attn/GroupQueryAttention`,
      [...gqaIn, `past_key_values.${l}.key`, `past_key_values.${l}.value`, seqlensK, totalLen, cosC, sinC],
      { num_heads: int(heads), kv_num_heads: int(kvHeads), scale: float(attnScale(s)),
        local_window_size: int(sliding && s.slidingWindow ? s.slidingWindow : -1), softcap: float(gm?.attnSoftcap ?? 0),
        do_rotary: int(1), rotary_interleaved: int(0) },
      { outputs: [`${pre}/attn/GroupQueryAttention/output_0`, `present.${l}.key`, `present.${l}.value`], ...ms },
    );
    const o = b.projection(attn, [W.attn(l, 'o')], naming(`${pre}/attn/o_proj`, `${base}.attn.o_proj`));
    let h2: string;
    if (gm?.postNorms) {
      // Gemma 2 / 3: the attention output normalized before it is added; the MLP reads pre_feedforward_layernorm.
      const a = norm(`${pre}/post_attention_layernorm`, o, W.postNorm(l));
      [h2, residual] = skipNorm(`${pre}/pre_feedforward_layernorm`, residual, a, W.preFfNorm(l));
    } else [h2, residual] = skipNorm(`${pre}/post_attention_layernorm`, residual, o, W.postNorm(l));
    const gate = b.projection(h2, [W.mlp(l, 'gate')], naming(`${pre}/mlp/gate_proj`, `${base}.mlp.gate_proj`));
    const up = b.projection(h2, [W.mlp(l, 'up')], naming(`${pre}/mlp/up_proj`, `${base}.mlp.up_proj`));
    let act: string;
    if (gm)
      act = node('FastGelu', `${pre}/mlp/act_fn/FastGelu`, [gate], undefined, {
        outputs: [`${pre}/mlp/act_fn/FastGelu/output_0`],
        ...ms,
      });
    else {
      const sig = node('Sigmoid', `${pre}/mlp/act_fn/Sigmoid`, [gate], undefined, {
        outputs: [`${pre}/mlp/act_fn/Sigmoid/output_0`],
      });
      act = node('Mul', `${pre}/mlp/act_fn/Mul`, [gate, sig], undefined, {
        outputs: [`${pre}/mlp/act_fn/Mul/output_0`],
      });
    }
    const prod = node('Mul', `${pre}/mlp/Mul`, [act, up], undefined, { outputs: [`${pre}/mlp/Mul/output_0`] });
    pendingDelta = b.projection(prod, [W.mlp(l, 'down')], naming(`${pre}/mlp/down_proj`, `${base}.mlp.down_proj`));
    if (gm?.postNorms) pendingDelta = norm(`${pre}/post_feedforward_layernorm`, pendingDelta, W.postFfNorm(l));
  }
  const [hf] = skipNorm(`/model/layers.${layers}/final_norm_layernorm`, residual, pendingDelta!, W.norm,
    `model.layers.${layers}.final_norm_layernorm.weight`, false);

  // Gemma 2: lm_head's output soft-capped into the logits.
  const finalCap = gm?.finalSoftcap ?? null;
  const lmOut = finalCap ? '/lm_head/MatMul/output_0' : 'logits';
  if (tiedWeight) {
    const w = b.castTo(tiedWeight, lmFloat, '/lm_head/Cast');
    node('MatMul', '/lm_head/MatMul', [hf, w], undefined, { outputs: [lmOut] });
  } else {
    const n = naming('/lm_head', 'lm_head');
    b.projection(hf, [W.lmHead], { ...n, node: (op, bits) => ({ ...n.node(op, bits), output: lmOut }) });
  }
  if (finalCap) softcap('/lm_head/softcap', lmOut, finalCap, 'logits');
  return b.graph(17);
}
