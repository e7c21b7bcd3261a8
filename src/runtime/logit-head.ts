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
import type { ModelProto, ValueInfo } from '../onnx/index.js';
import { DataType, makeNode, makeValueInfo } from '../onnx/index.js';
import { LobesError } from '../util/errors.js';
import type { Discovery } from './discover.js';
import { editedInputs, emptyPasts, GraphEdit, opsetOf, prune, type InGraphPast } from './surgery.js';

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
 * Build the scoring graph from a discovered model. Throws a LobesError when the model has
 * no lm_head feeding a graph output (discovery finds none) or an opset older than 11.
 */
export function buildLogitHeadModel(model: ModelProto, disc: Discovery, opts: LogitHeadOptions): LogitHeadResult {
  const g = model.graph!;
  const opset = opsetOf(model);
  if (opset < 11) throw new LobesError(`the model's ONNX opset ${opset} is older than 11, which lobes needs`);
  const finalPoint = disc.points.find((p) => p.name === 'final.hidden');
  if (!finalPoint || finalPoint.source.kind !== 'value') throw new LobesError('the model has no final hidden state feeding an lm_head', { hint: 'run `lobes inspect` on the model' });
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
  const cur = e.add('Slice', [m64, negS, e.c64('lh.end', [Number.MAX_SAFE_INTEGER], [1]), e.c64('lh.axis1', [1], [1])], 'lh.mask_cur');
  const ar = e.add('Range', [zero, S, one], 'lh.arange_S');
  const weighted = e.add('Mul', [cur, ar], 'lh.mask_pos');
  const last = opset >= 18 ? e.add('ReduceMax', [weighted, e.c64('lh.axes1', [1], [1])], 'lh.last', { keepdims: 0 }) : e.add('ReduceMax', [weighted], 'lh.last', { keepdims: 0, axes: [1] });
  const rows = e.add('Range', [zero, B, one], 'lh.arange_B');
  const flat = e.add('Add', [e.add('Mul', [rows, S], 'lh.row_start'), last], 'lh.flat_index');
  if (opts.inGraphPast?.length) emptyPasts(e, B, opts.inGraphPast);

  // lm_head on the selected rows only.
  const hidden = finalPoint.dim;
  const x2 = e.add('Reshape', [finalPoint.source.value, e.c64('lh.rows_shape', [-1, hidden], [2])], 'lh.hidden_rows');
  const xLast = e.add('Gather', [x2, flat], 'lh.hidden_last', { axis: 0 });
  const head = disc.lmHead.node;
  const headInputs = [...head.input];
  headInputs[0] = xLast;
  e.nodes.push(makeNode(head.opType, headInputs, ['lobes.sel.lh.logits'], {}, head.domain || undefined, 'lobes.sel.lh.lm_head'));
  e.nodes[e.nodes.length - 1]!.attribute = head.attribute;
  const logits = e.add('Cast', ['lobes.sel.lh.logits'], 'lh.logits_f32', { to: DataType.FLOAT });

  e.nodes.push(makeNode('Gather', [logits, CANDIDATES_INPUT], [CAND_LOGITS], { axis: 1 }, undefined, CAND_LOGITS));
  if (opset >= 18) e.nodes.push(makeNode('ReduceLogSumExp', [logits, e.c64('lh.axes_v', [1], [1])], [LOG_SUM_EXP], { keepdims: 0 }, undefined, LOG_SUM_EXP));
  else e.nodes.push(makeNode('ReduceLogSumExp', [logits], [LOG_SUM_EXP], { keepdims: 0, axes: [1] }, undefined, LOG_SUM_EXP));
  e.nodes.push(makeNode('ArgMax', [logits], [TOP_ID], { axis: 1, keepdims: 0 }, undefined, TOP_ID));

  const outInfos: ValueInfo[] = [
    makeValueInfo(CAND_LOGITS, DataType.FLOAT, ['batch', 'candidates']),
    makeValueInfo(LOG_SUM_EXP, DataType.FLOAT, ['batch']),
    makeValueInfo(TOP_ID, DataType.INT64, ['batch']),
  ];
  const present: string[] = [];
  if (opts.keepPresent) {
    for (const o of g.output) {
      const s = o.type?.tensorType?.shape?.dim.length ?? 0;
      if (o.name && s === 4 && o.name !== CAND_LOGITS) {
        outInfos.push(o);
        present.push(o.name);
      }
    }
  }
  const graph = prune(g, e, inputs, outInfos);
  // The candidates input is read only by the Gather added above; keep it even if unused shapes pruned it.
  if (!graph.input.some((v) => v.name === CANDIDATES_INPUT)) graph.input.push(inputs.find((v) => v.name === CANDIDATES_INPUT)!);
  return { model: { ...model, graph }, maskInput: mask, maskAdded, present };
}
