/**
 * The capture engine: load a model's graph (never its weights into JS), find the capture
 * points, rewrite the graph so each hook leaves the session as float32 [batch, dim] at each
 * row's last real token, and run batches through ONNX Runtime.
 */
import * as ort from 'onnxruntime-node';
import type { CaptureEngine, CapturePoint, EngineOptions, ModelInfo, TokenBatch } from './types.js';
import { LobesError, ModelError } from '../util/errors.js';
import { siteFamily } from '../hooks.js';
import { parseLayerSelection } from './layers.js';
import { DataType, dataTypeName, loadModel, valueShape, type LoadedModel, type ValueInfo } from '../onnx/index.js';
import { attrInt } from '../onnx/build.js';
import type { GraphIndex } from '../onnx/graph.js';
import { discover, isPastInput, type DiscoveredPoint, type Discovery } from './discover.js';
import { configDir, readConfigHints } from './config.js';
import { checkModel } from './consistency.js';
import { buildCaptureModel, type InGraphPast } from './surgery.js';
import { applyInterventions } from './intervene.js';
import { executionProviders, listProviders, openEditedSession } from './providers.js';

export interface Analysis {
  loaded: LoadedModel;
  disc: Discovery;
  info: ModelInfo;
}

function inputShape(v: ValueInfo): (number | string)[] {
  return (valueShape(v) ?? []).map((d) => d ?? '?');
}

/** Load and analyse a model folder (or .onnx file). */
export function analyseModel(modelDir: string): Analysis {
  const loaded = loadModel(modelDir);
  const cdir = configDir(modelDir, loaded.dir);
  const disc = discover(loaded, readConfigHints(cdir));
  const info: ModelInfo = {
    dir: modelDir,
    arch: disc.arch,
    points: disc.points.map(publicPoint),
    providers: listProviders(),
    inputs: loaded.model.graph!.input.map((v) => ({
      name: v.name ?? '',
      dtype: dataTypeName(v.type?.tensorType?.elemType),
      shape: inputShape(v),
    })),
    check: checkModel(disc.index, loaded, cdir),
  };
  return { loaded, disc, info };
}

/** A discovered point without its graph source. */
function publicPoint(p: DiscoveredPoint): CapturePoint {
  const { source: _source, ...point } = p;
  return point;
}

/** Architecture, capture points and providers of a model. */
export async function inspectModel(modelDir: string): Promise<ModelInfo> {
  return analyseModel(modelDir).info;
}

export type InputRole = 'ids' | 'mask' | 'pos' | 'past';

/** How one graph input is fed: its role, ONNX Runtime type and (KV-cache inputs) [kvHeads, headDim]. */
export interface FeedPlan {
  name: string;
  role: InputRole;
  type: ort.Tensor.Type;
  /** For past inputs: [kvHeads, headDim]. */
  kv?: [number, number];
  /**
   * For past inputs of a GroupQueryAttention with `sliding_window_cache` (onnxruntime-genai's
   * builder, Gemma 2 / 3 sliding layers): the buffer length the op needs, its local_window_size.
   * The first pass feeds a zero buffer this long, with no past tokens in it: the mask (and so
   * seqlens_k and total_sequence_length, which the graph derives from it) covers the new tokens
   * only, as onnxruntime-genai feeds its static buffer. Absent: an empty past [B, kv, 0, hd].
   */
  cacheLen?: number;
}

/**
 * The buffer length a KV-cache input needs: the local_window_size of a GroupQueryAttention with
 * `sliding_window_cache` that reads it (onnxruntime refuses a shorter buffer: "KV cache capacity
 * (0) must be at least local_window_size"), else 0.
 */
export function pastCacheLen(g: GraphIndex, name: string): number {
  for (const [c] of g.consThrough(name)) {
    if (c.domain === 'com.microsoft' && c.opType === 'GroupQueryAttention' &&
      attrInt(c, 'sliding_window_cache', 0) === 1)
    {
      const w = attrInt(c, 'local_window_size', -1);
      if (w > 0) return w;
    }
  }
  return 0;
}

const ORT_TYPES: Record<number, ort.Tensor.Type> = {
  [DataType.FLOAT]: 'float32',
  [DataType.FLOAT16]: 'float16',
  [DataType.INT64]: 'int64',
  [DataType.INT32]: 'int32',
};

/** The graph inputs lobes feeds (ids, mask, position ids, KV caches) and the KV caches it must make in-graph. */
export function planInputs(
  a: Analysis,
): { plans: FeedPlan[]; mask: string | null; inGraphPast: InGraphPast[]; windowCache: boolean } {
  const g = a.disc.index;
  const plans: FeedPlan[] = [];
  const inGraphPast: InGraphPast[] = [];
  let mask: string | null = null;
  let headDimHint: number | null | undefined;
  const file = a.loaded.file;
  for (const v of a.loaded.model.graph!.input) {
    const name = v.name!;
    if (a.loaded.initializers.has(name)) continue; // old-style inputs with initializer defaults
    const et = v.type?.tensorType?.elemType;
    const type = et !== undefined ? ORT_TYPES[et] : undefined;
    if (isPastInput(g, name)) {
      const s = g.shapeOf(name)!;
      const kvh = typeof s[1] === 'number' ? s[1] : a.disc.arch.kvHeads;
      // The declared head size, else the config files' (Qwen3's is not hidden/heads), else hidden/heads.
      headDimHint ??= readConfigHints(a.loaded.dir).headDim ?? null;
      const hd = typeof s[3] === 'number'
        ? s[3]
        : Number.isInteger(headDimHint) && headDimHint! > 0
        ? headDimHint
        : a.disc.arch.heads
        ? a.disc.arch.hidden / a.disc.arch.heads
        : null;
      if (!kvh || !hd)
        throw new ModelError(`cannot tell the KV-cache shape of graph input ${name} (declared ${JSON.stringify(s)})`, {
          file,
        });
      const len = pastCacheLen(g, name);
      // bfloat16 (and other types JavaScript cannot hold) are made in-graph instead of fed.
      if (type) plans.push({ name, role: 'past', type, kv: [kvh, hd], ...(len ? { cacheLen: len } : {}) });
      else inGraphPast.push({ name, elemType: et ?? DataType.FLOAT, kv: [kvh, hd], ...(len ? { len } : {}) });
      continue;
    }
    if (!type) throw new ModelError(`graph input ${name} has unsupported type ${dataTypeName(et)}`, { file });
    if (name === 'input_ids') plans.push({ name, role: 'ids', type });
    else if (name === 'attention_mask') {
      plans.push({ name, role: 'mask', type });
      mask = name;
    } else if (name === 'position_ids') plans.push({ name, role: 'pos', type });
    else {
      throw new ModelError(
        `graph input ${name} is not one lobes can feed (input_ids, attention_mask, position_ids, past_key_values.*)`,
        { file },
      );
    }
  }
  if (!plans.some((p) => p.role === 'ids')) throw new ModelError('the graph has no input_ids input', { file });
  const windowCache = plans.some((p) => p.cacheLen) || inGraphPast.some((p) => p.len);
  return { plans, mask, inGraphPast, windowCache };
}

/**
 * Refuse a graph whose KV cache is window-sized (GroupQueryAttention `sliding_window_cache`, as
 * onnxruntime-genai's builder writes Gemma 2 / 3): `what` carries a cache from step to step,
 * and such a cache keeps its keys in the op's own ring-buffer coordinates, which lobes' growing
 * cache does not follow.
 */
export function refuseWindowCache(a: Analysis, windowCache: boolean, what: string): void {
  if (!windowCache) return;
  throw new ModelError(
    `${what} cannot use this graph: its GroupQueryAttention keeps a window-sized KV cache (sliding_window_cache, as onnxruntime-genai's builder exports Gemma 2 / 3)`,
    { file: a.loaded.file,
      hint:
        'give lobes the Hugging Face checkpoint (it converts it) for eval, ablate and log-likelihood scoring; extract and attend read this export' },
  );
}

/** An integer tensor of the type a graph input wants (int64, or int32 converted). */
export function intTensor(type: ort.Tensor.Type, data: BigInt64Array, dims: number[]): ort.Tensor {
  if (type === 'int64') return new ort.Tensor('int64', data, dims);
  return new ort.Tensor('int32', Int32Array.from(data, (x) => Number(x)), dims);
}

/** The token inputs of one batch: ids and positions [B, S], the mask [B, T] (T = cached + S tokens). */
export interface BatchInputs {
  ids: BigInt64Array;
  mask: BigInt64Array;
  pos: BigInt64Array;
  B: number;
  S: number;
  T: number;
}

/**
 * The graph's own inputs for one batch, by feed plan: ids, mask, positions and the KV cache
 * (`past`, or empty caches), plus the mask input graph surgery added (`addedMask`, when the
 * session has it). Scorers add their own head's inputs to the result.
 */
export function modelFeeds(session: ort.InferenceSession, plans: readonly FeedPlan[], b: BatchInputs,
  past: Map<string, ort.Tensor> | null, addedMask: string | null): Record<string, ort.Tensor>
{
  const wanted = new Set(session.inputNames);
  const f: Record<string, ort.Tensor> = {};
  for (const p of plans) {
    if (!wanted.has(p.name)) continue;
    if (p.role === 'ids') f[p.name] = intTensor(p.type, b.ids, [b.B, b.S]);
    else if (p.role === 'mask') f[p.name] = intTensor(p.type, b.mask, [b.B, b.T]);
    else if (p.role === 'pos') f[p.name] = intTensor(p.type, b.pos, [b.B, b.S]);
    else f[p.name] = past?.get(p.name) ?? emptyPast(p.type, [b.B, p.kv![0], p.cacheLen ?? 0, p.kv![1]]);
  }
  if (addedMask && wanted.has(addedMask)) f[addedMask] = new ort.Tensor('int64', b.mask, [b.B, b.T]);
  return f;
}

/**
 * A KV-cache tensor [batch, kvHeads, len, headDim] of a graph input's type holding no past
 * tokens: empty (len 0), or zeros for a window-sized buffer (FeedPlan.cacheLen).
 */
export function emptyPast(type: ort.Tensor.Type, dims: number[]): ort.Tensor {
  const n = dims.reduce((x, y) => x * y, 1);
  switch (type) {
    case 'float32':
      return new ort.Tensor('float32', new Float32Array(n), dims);
    case 'float16':
      return new ort.Tensor('float16', new Uint16Array(n), dims);
    default:
      return new ort.Tensor(type as any, new Uint16Array(n) as any, dims);
  }
}

/** HF-style position ids: cumulative count of real tokens minus one (0 on padding). */
export function positionIds(mask: BigInt64Array, batch: number, seq: number): BigInt64Array {
  const out = new BigInt64Array(batch * seq);
  for (let b = 0; b < batch; b++) {
    let c = 0;
    for (let s = 0; s < seq; s++) {
      const i = b * seq + s;
      if (mask[i]) c++;
      out[i] = BigInt(Math.max(c - 1, 0));
    }
  }
  return out;
}

/**
 * The feeds of one batch for a session: every planned input the session reads (ids, mask,
 * position ids, empty KV caches) and `addedMask`, an int64 mask input the capture graph
 * added, when given.
 */
export function batchFeeds(session: ort.InferenceSession, plans: FeedPlan[], b: TokenBatch,
  addedMask: string | null): Record<string, ort.Tensor>
{
  const feeds: Record<string, ort.Tensor> = {};
  const dims = [b.batch, b.seq];
  const wanted = new Set(session.inputNames);
  for (const p of plans) {
    if (!wanted.has(p.name)) continue;
    if (p.role === 'ids') feeds[p.name] = intTensor(p.type, b.inputIds, dims);
    else if (p.role === 'mask') feeds[p.name] = intTensor(p.type, b.attentionMask, dims);
    else if (p.role === 'pos') feeds[p.name] = intTensor(p.type, positionIds(b.attentionMask, b.batch, b.seq), dims);
    else feeds[p.name] = emptyPast(p.type, [b.batch, p.kv![0], p.cacheLen ?? 0, p.kv![1]]);
  }
  if (addedMask !== null && wanted.has(addedMask)) feeds[addedMask] = new ort.Tensor('int64', b.attentionMask, dims);
  return feeds;
}

/** Refuse an empty or inconsistent batch, or a row without real tokens. */
export function checkBatch(b: TokenBatch, file: string): void {
  if (b.batch < 1 || b.seq < 1) throw new LobesError(`empty batch (${b.batch}×${b.seq})`, { file });
  if (b.inputIds.length !== b.batch * b.seq || b.attentionMask.length !== b.batch * b.seq) {
    throw new LobesError(`batch arrays do not match ${b.batch}×${b.seq}`, { file });
  }
  for (let r = 0; r < b.batch; r++) {
    let any = false;
    for (let s = 0; s < b.seq; s++) if (b.attentionMask[r * b.seq + s]) any = true;
    if (!any) throw new LobesError(`batch row ${r} has no real tokens (empty input)`, { file });
  }
}

class OrtCaptureEngine implements CaptureEngine {
  constructor(
    readonly info: ModelInfo,
    readonly hooks: CapturePoint[],
    private readonly session: ort.InferenceSession,
    private readonly plans: FeedPlan[],
    private readonly outputs: Map<string, string>,
    private readonly maskInput: string,
    private readonly maskAdded: boolean,
    private readonly file: string,
    private readonly windowCache = false,
  ) {}

  async run(b: TokenBatch): Promise<Map<string, Float32Array>> {
    checkBatch(b, this.file);
    if (this.maskAdded || this.windowCache) {
      // The graph cannot mask padding, or its window-cache GroupQueryAttention refuses a row
      // shorter than the batch (onnxruntime: "seqlens_k[1] = 15 is too small for sequence_length
      // 66"): run padded rows one at a time, unpadded.
      let padded = false;
      for (let i = 0; i < b.attentionMask.length; i++) if (!b.attentionMask[i]) padded = true;
      if (padded) return this.runRows(b);
    }
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      // Only the hooks' outputs are fetched (the graph may also output KV caches; see surgery.ts).
      out = await this.session.run(batchFeeds(this.session, this.plans, b, this.maskAdded ? this.maskInput : null), [
        ...this.outputs.values(),
      ]);
    } catch (e) {
      throw new LobesError(
        `onnxruntime failed on a ${b.batch}×${b.seq} batch: ${String((e as Error).message ?? e).split('\n')[0]}`,
        { file: this.file },
      );
    }
    const res = new Map<string, Float32Array>();
    for (const h of this.hooks) {
      const t = out[this.outputs.get(h.name)!]!;
      res.set(h.name, t.data as Float32Array);
    }
    return res;
  }

  private async runRows(b: TokenBatch): Promise<Map<string, Float32Array>> {
    const res = new Map<string, Float32Array>(this.hooks.map((h) => [h.name, new Float32Array(b.batch * h.dim)]));
    for (let r = 0; r < b.batch; r++) {
      const ids: bigint[] = [];
      for (let s = 0; s < b.seq; s++) if (b.attentionMask[r * b.seq + s]) ids.push(b.inputIds[r * b.seq + s]!);
      const one: TokenBatch = {
        inputIds: BigInt64Array.from(ids),
        attentionMask: new BigInt64Array(ids.length).fill(1n),
        batch: 1,
        seq: ids.length,
        lastIndex: Int32Array.of(ids.length - 1),
      };
      const o = await this.run(one);
      for (const h of this.hooks) res.get(h.name)!.set(o.get(h.name)!, r * h.dim);
    }
    return res;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** Open a capture session on a model folder (or .onnx file). */
export async function openCaptureEngine(modelDir: string, opts: EngineOptions): Promise<CaptureEngine> {
  const a = analyseModel(modelDir);
  const fams = new Set(opts.capture);
  if (fams.size === 0) throw new LobesError('nothing to capture (no capture families selected)');
  const layers = opts.layers ? new Set(parseLayerSelection(opts.layers, a.info.arch.layers)) : null;
  const edited = applyInterventions(a.loaded.model, a.disc, opts.interventions, a.loaded.file);
  const hooks = edited.points.filter((p) =>
    fams.has(siteFamily(p.site)) && (layers === null || p.layer === null || layers.has(p.layer))
  );
  const { plans, mask, inGraphPast, windowCache } = planInputs(a);
  const surg = buildCaptureModel(edited.model, hooks, mask, inGraphPast);
  const session = await openEditedSession(surg.model, a.loaded.dir, opts, a.loaded.file);
  return new OrtCaptureEngine(a.info, hooks.map(publicPoint), session, plans, surg.outputs, surg.maskInput,
    surg.maskAdded, a.loaded.file, windowCache);
}

/** Open a plain session on the unmodified model (for references and benchmarks). */
export async function openPlainSession(modelDir: string, device: EngineOptions['device'] = 'cpu', deviceId = 0,
  threads?: number): Promise<{ session: ort.InferenceSession; feeds: (b: TokenBatch) => Record<string, ort.Tensor> }>
{
  const a = analyseModel(modelDir);
  const { plans } = planInputs(a);
  const session = await ort.InferenceSession.create(a.loaded.file, {
    executionProviders: executionProviders(device, deviceId),
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    ...(threads ? { intraOpNumThreads: threads } : {}),
  });
  return { session, feeds: (b: TokenBatch) => batchFeeds(session, plans, b, null) };
}
