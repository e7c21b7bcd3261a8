/**
 * Graph surgery for scoring answers: at each row's last real token, the model's lm_head
 * logits of a few candidate tokens only, the full-vocabulary log-sum-exp and argmax there.
 *
 * The final hidden state [batch, seq, hidden] is cut to each row's last real token
 * ([batch, hidden]), the lm_head projection is applied to those rows alone ([batch, vocab],
 * inside the session), and the outputs are
 *   lobes.out.cand_logits  float32 [batch, k]  logits of the `lobes.candidates` token ids (int64 [k])
 *   lobes.out.logsumexp    float32 [batch]     log Σ_v exp(logit_v) over the whole vocabulary
 *   lobes.out.top_id       int64   [batch]     argmax over the whole vocabulary
 * (and, for generation, the model's own KV-cache outputs). No [batch, seq, vocab] tensor is
 * computed or leaves the session. With KV-cache inputs the current tokens are the last
 * `seq` columns of the attention mask, so the same graph serves prefill and decode steps.
 */
import type { GraphProto, ModelProto, ValueInfo } from '../onnx/index.js';
import { DataType, makeNode, makeValueInfo } from '../onnx/index.js';
import { LobesError } from '../util/errors.js';
import type { Discovery } from './discover.js';
import { editedInputs, emptyPasts, GraphEdit, opsetOf, prune, SEL_PREFIX, type InGraphPast } from './surgery.js';

export const CANDIDATES_INPUT = 'lobes.candidates';
export const CAND_LOGITS = 'lobes.out.cand_logits';
export const LOG_SUM_EXP = 'lobes.out.logsumexp';
export const TOP_ID = 'lobes.out.top_id';

export interface LogitHeadResult {
  model: ModelProto;
  /** The graph input holding the attention mask (added when the model has none). */
  maskInput: string;
  maskAdded: boolean;
  /** KV-cache outputs kept (graph output names, in the model's order); empty unless asked for. */
  present: string[];
}

export interface LogitHeadOptions {
  /** Graph input holding the attention mask, or null to add `lobes.attention_mask` [batch, seq]. */
  maskInput: string | null;
  /** KV-cache inputs to make in-graph as empty tensors (dtypes JavaScript cannot feed). */
  inGraphPast?: InGraphPast[];
  /** Keep the model's KV-cache outputs (present.*) for generation. */
  keepPresent?: boolean;
}

/**
 * lm_head applied to some rows of the final hidden state only: `hiddenValue` [batch, seq, dim]
 * is flattened to [batch·seq, dim], the rows `rowIndex` (int64 [n]) are gathered, and the
 * model's own lm_head node (same op, weights and attributes) is applied to them, followed by
 * the model's soft-capping of the logits when it has one (Gemma 2). Returns the name of the
 * float32 [n, vocab] logits.
 */
export function lmHeadOnRows(e: GraphEdit, disc: Discovery, hiddenValue: string, dim: number, rowIndex: string,
  tag: string): string
{
  const x2 = e.add('Reshape', [hiddenValue, e.c64(`${tag}.rows_shape`, [-1, dim], [2])], `${tag}.hidden_rows`);
  const xSel = e.add('Gather', [x2, rowIndex], `${tag}.hidden_sel`, { axis: 0 });
  const head = disc.lmHead.node;
  const headInputs = [...head.input];
  headInputs[0] = xSel;
  const raw = `${SEL_PREFIX}${tag}.logits`;
  e.nodes.push(makeNode(head.opType, headInputs, [raw], {}, head.domain || undefined, `${SEL_PREFIX}${tag}.lm_head`));
  e.nodes[e.nodes.length - 1]!.attribute = head.attribute;
  const f32 = e.add('Cast', [raw], `${tag}.logits_f32`, { to: DataType.FLOAT });
  const cap = disc.logitSoftcap;
  if (!cap) return f32;
  // The model soft-caps its logits after lm_head (Gemma 2): cap · tanh(logits / cap), as its own graph does.
  const c = e.f32(`${tag}.softcap`, [cap], []);
  const t = e.add('Tanh', [e.add('Div', [f32, c], `${tag}.softcap_div`)], `${tag}.softcap_tanh`);
  return e.add('Mul', [t, c], `${tag}.logits_capped`);
}

/** Append the model's KV-cache outputs (present.*: rank-4 graph outputs) to `outInfos`; returns their names in the model's order. */
export function presentOutputs(g: GraphProto, outInfos: ValueInfo[]): string[] {
  const present: string[] = [];
  const taken = new Set(outInfos.map((o) => o.name));
  for (const o of g.output) {
    const s = o.type?.tensorType?.shape?.dim.length ?? 0;
    if (o.name && s === 4 && !taken.has(o.name)) {
      outInfos.push(o);
      present.push(o.name);
    }
  }
  return present;
}

/**
 * Build the scoring graph from a discovered model. Throws a LobesError when the model has
 * no lm_head feeding a graph output (discovery finds none) or an opset older than 11.
 */
export function buildLogitHeadModel(model: ModelProto, disc: Discovery, opts: LogitHeadOptions): LogitHeadResult {
  const g = model.graph!;
  const opset = opsetOf(model);
  if (opset < 11) throw new LobesError(`the model's ONNX opset ${opset} is older than 11, which lobes needs`);
  const finalPoint = disc.points.find((p) => p.name === 'final.hidden');
  if (!finalPoint || finalPoint.source.kind !== 'value')
    throw new LobesError('the model has no final hidden state feeding an lm_head', {
      hint: 'run `lobes inspect` on the model',
    });
  const ids = g.input.find((v) => v.name === 'input_ids');
  if (!ids) throw new LobesError('the graph has no input_ids input');
  const e = new GraphEdit(g);
  const { inputs, mask, maskAdded, maskType } = editedInputs(g, opts.inGraphPast ?? [], opts.maskInput);
  inputs.push(makeValueInfo(CANDIDATES_INPUT, DataType.INT64, ['candidates']));

  // Each row's last real token among the current `seq` positions (the mask's last seq columns).
  const zero = e.c64('lh.zero', [0], []);
  const one = e.c64('lh.one', [1], []);
  const idShape = e.add('Shape', ['input_ids'], 'lh.ids_shape');
  const B = e.add('Gather', [idShape, zero], 'lh.B', { axis: 0 });
  const S = e.add('Gather', [idShape, one], 'lh.S', { axis: 0 });
  const m64 = maskType === DataType.INT64 ? mask : e.add('Cast', [mask], 'lh.mask_i64', { to: DataType.INT64 });
  const S1 = e.add('Reshape', [S, e.c64('lh.shape1', [1], [1])], 'lh.S1');
  const negS = e.add('Neg', [S1], 'lh.negS');
  const cur = e.add('Slice', [m64, negS, e.c64('lh.end', [Number.MAX_SAFE_INTEGER], [1]), e.c64('lh.axis1', [1], [1])],
    'lh.mask_cur');
  const ar = e.add('Range', [zero, S, one], 'lh.arange_S');
  const weighted = e.add('Mul', [cur, ar], 'lh.mask_pos');
  const last = opset >= 18
    ? e.add('ReduceMax', [weighted, e.c64('lh.axes1', [1], [1])], 'lh.last', { keepdims: 0 })
    : e.add('ReduceMax', [weighted], 'lh.last', { keepdims: 0, axes: [1] });
  const rows = e.add('Range', [zero, B, one], 'lh.arange_B');
  const flat = e.add('Add', [e.add('Mul', [rows, S], 'lh.row_start'), last], 'lh.flat_index');
  if (opts.inGraphPast?.length) emptyPasts(e, B, opts.inGraphPast);

  const logits = lmHeadOnRows(e, disc, finalPoint.source.value, finalPoint.dim, flat, 'lh');

  e.nodes.push(makeNode('Gather', [logits, CANDIDATES_INPUT], [CAND_LOGITS], { axis: 1 }, undefined, CAND_LOGITS));
  if (opset >= 18)
    e.nodes.push(
      makeNode('ReduceLogSumExp', [logits, e.c64('lh.axes_v', [1], [1])], [LOG_SUM_EXP], { keepdims: 0 }, undefined,
        LOG_SUM_EXP),
    );
  else
    e.nodes.push(
      makeNode('ReduceLogSumExp', [logits], [LOG_SUM_EXP], { keepdims: 0, axes: [1] }, undefined, LOG_SUM_EXP),
    );
  e.nodes.push(makeNode('ArgMax', [logits], [TOP_ID], { axis: 1, keepdims: 0 }, undefined, TOP_ID));

  const outInfos: ValueInfo[] = [
    makeValueInfo(CAND_LOGITS, DataType.FLOAT, ['batch', 'candidates']),
    makeValueInfo(LOG_SUM_EXP, DataType.FLOAT, ['batch']),
    makeValueInfo(TOP_ID, DataType.INT64, ['batch']),
  ];
  const present = opts.keepPresent ? presentOutputs(g, outInfos) : [];
  const graph = prune(g, e, inputs, outInfos);
  // The candidates input is read only by the Gather added above; keep it even if unused shapes pruned it.
  if (!graph.input.some((v) => v.name === CANDIDATES_INPUT))
    graph.input.push(inputs.find((v) => v.name === CANDIDATES_INPUT)!);
  return { model: { ...model, graph }, maskInput: mask, maskAdded, present };
}
