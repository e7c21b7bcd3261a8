/**
 * Graph surgery for continuation log-likelihoods: the log-probability of given next tokens at
 * given positions, and whether each is the model's greedy choice there.
 *
 * Inputs added to the model's own:
 *   lobes.positions  int64 [n]  rows of the flattened current tokens [batch · seq] to score
 *   lobes.targets    int64 [n]  the token whose log-probability is wanted at each of those rows
 * The final hidden state is cut to those n rows, the model's lm_head is applied to them alone
 * ([n, vocab], inside the session), and the outputs are
 *   lobes.out.target_logprob  float32 [n]  logit[target] − log Σ_v exp(logit_v)
 *   lobes.out.top_id          int64   [n]  argmax over the vocabulary (first on ties)
 * and, for the KV-cache session, the model's own present.* outputs. No [batch, seq, vocab] or
 * [n, vocab] tensor leaves the session.
 */
import type { ModelProto, ValueInfo } from '../onnx/index.js';
import { DataType, makeNode, makeValueInfo } from '../onnx/index.js';
import { LobesError } from '../util/errors.js';
import type { Discovery } from './discover.js';
import { lmHeadOnRows, presentOutputs } from './logit-head.js';
import { editedInputs, emptyPasts, GraphEdit, opsetOf, prune, type InGraphPast } from './surgery.js';

export const POSITIONS_INPUT = 'lobes.positions';
export const TARGETS_INPUT = 'lobes.targets';
export const TARGET_LOGPROB = 'lobes.out.target_logprob';
export const TARGET_TOP = 'lobes.out.top_id';

export interface LoglikHeadOptions {
  /** Graph input holding the attention mask, or null to add `lobes.attention_mask` [batch, seq]. */
  maskInput: string | null;
  /** KV-cache inputs to make in-graph as empty tensors (dtypes JavaScript cannot feed). */
  inGraphPast?: InGraphPast[];
  /** Keep the model's KV-cache outputs (present.*). */
  keepPresent?: boolean;
}

export interface LoglikHeadResult {
  model: ModelProto;
  maskInput: string;
  maskAdded: boolean;
  /** KV-cache outputs kept (graph output names, in the model's order); empty unless asked for. */
  present: string[];
}

/** Build the log-likelihood graph from a discovered model (one-line LobesError when it has no lm_head or an opset older than 13). */
export function buildLoglikHeadModel(model: ModelProto, disc: Discovery, opts: LoglikHeadOptions): LoglikHeadResult {
  const g = model.graph!;
  const opset = opsetOf(model);
  if (opset < 13)
    throw new LobesError(`the model's ONNX opset ${opset} is older than 13, which log-likelihood scoring needs`);
  const finalPoint = disc.points.find((p) => p.name === 'final.hidden');
  if (!finalPoint || finalPoint.source.kind !== 'value')
    throw new LobesError('the model has no final hidden state feeding an lm_head', {
      hint: 'run `lobes inspect` on the model',
    });
  if (!g.input.some((v) => v.name === 'input_ids')) throw new LobesError('the graph has no input_ids input');
  const e = new GraphEdit(g);
  const { inputs, mask, maskAdded } = editedInputs(g, opts.inGraphPast ?? [], opts.maskInput);
  inputs.push(makeValueInfo(POSITIONS_INPUT, DataType.INT64, ['scored']));
  inputs.push(makeValueInfo(TARGETS_INPUT, DataType.INT64, ['scored']));
  if (opts.inGraphPast?.length) {
    const B = e.add('Gather', [e.add('Shape', ['input_ids'], 'll.ids_shape'), e.c64('ll.zero', [0], [])], 'll.B', {
      axis: 0,
    });
    emptyPasts(e, B, opts.inGraphPast);
  }
  const logits = lmHeadOnRows(e, disc, finalPoint.source.value, finalPoint.dim, POSITIONS_INPUT, 'll');
  const axes = e.c64('ll.axes1', [1], [1]);
  const lse = opset >= 18
    ? e.add('ReduceLogSumExp', [logits, axes], 'll.lse', { keepdims: 1 })
    : e.add('ReduceLogSumExp', [logits], 'll.lse', { keepdims: 1, axes: [1] });
  const tgt = e.add('Unsqueeze', [TARGETS_INPUT, axes], 'll.targets_col');
  const picked = e.add('GatherElements', [logits, tgt], 'll.target_logit', { axis: 1 });
  const lp = e.add('Sub', [picked, lse], 'll.target_logprob_col');
  e.nodes.push(makeNode('Reshape', [lp, e.c64('ll.flat', [-1], [1])], [TARGET_LOGPROB], {}, undefined, TARGET_LOGPROB));
  e.nodes.push(makeNode('ArgMax', [logits], [TARGET_TOP], { axis: 1, keepdims: 0 }, undefined, TARGET_TOP));
  const outInfos: ValueInfo[] = [makeValueInfo(TARGET_LOGPROB, DataType.FLOAT, ['scored']),
    makeValueInfo(TARGET_TOP, DataType.INT64, ['scored'])];
  const present = opts.keepPresent ? presentOutputs(g, outInfos) : [];
  const graph = prune(g, e, inputs, outInfos);
  return { model: { ...model, graph }, maskInput: mask, maskAdded, present };
}
