/**
 * The attention engine: open a model, find each layer's attention by structure (attention.ts),
 * rewrite the graph so that only the answering row of the selected layers leaves the session
 * (attention-surgery.ts), and run padded batches. Rows come back in each batch's own padded
 * coordinates as float32 [batch, heads, seq] per layer; `realRows` keeps each row's real tokens.
 *
 * GroupQueryAttention computes a first prompt as right-padded (its keys are positions 0..n−1 of
 * each row): a left-padded batch is moved to the right before it runs and its rows moved back, so
 * either padding side gives the same weights.
 */
import * as ort from 'onnxruntime-node';
import type { Device, Intervention, ModelInfo, TokenBatch } from './types.js';
import { LobesError } from '../util/errors.js';
import { analyseModel, batchFeeds, checkBatch, planInputs, type Analysis } from './engine.js';
import { opsetOf } from './surgery.js';
import { findAttention, type AttentionSite } from './attention.js';
import { buildAttentionModel } from './attention-surgery.js';
import { applyInterventions } from './intervene.js';
import { openEditedSession } from './providers.js';

export { parseLayerSelection } from './layers.js';

export interface AttentionEngineOptions {
  /** Decoder layers to read (0-based), or a function of the model's layer count that picks them; null or absent: all. */
  layers?: number[] | ((layerCount: number) => number[]) | null;
  device: Device;
  deviceId?: number;
  /** ONNX Runtime intra-op threads (default: onnxruntime's choice). */
  threads?: number;
  /** Edits of activations (src/runtime/intervene.ts) before the weights are read. */
  interventions?: Intervention[];
}

/** What one attention site is, for manifests and `lobes attend` provenance. */
export interface AttentionSiteInfo {
  /** `layers.{i}.attn.weights`. */
  name: string;
  layer: number;
  /** 'softmax' (read from the graph) or the fused op whose weights are recomputed. */
  source: 'softmax' | 'GroupQueryAttention' | 'MultiHeadAttention';
  /** Fused ops: what the recomputation applies. */
  detail?: string;
}

/** One batch's attention rows. */
export interface AttentionBatch {
  batch: number;
  /** Padded length of the batch. */
  seq: number;
  heads: number;
  /** Per selected layer: float32 [batch, heads, seq], weights of each row's last real token over every position. */
  weights: Map<number, Float32Array>;
}

export interface AttentionEngine {
  readonly info: ModelInfo;
  /** Every layer's attention site (all layers, selected or not). */
  readonly sites: AttentionSiteInfo[];
  /** The layers this engine outputs, ascending. */
  readonly layers: number[];
  run(batch: TokenBatch): Promise<AttentionBatch>;
  close(): Promise<void>;
}

function siteInfo(s: AttentionSite): AttentionSiteInfo {
  if (s.kind === 'softmax') return { name: s.name, layer: s.layer, source: 'softmax' };
  const parts = [`${s.heads} heads / ${s.kvHeads} KV heads`, s.scale === null ? 'scale 1/√d' : `scale ${s.scale}`];
  if (s.rotary) parts.push(`in-op rotary (${s.rotary.interleaved ? 'interleaved' : 'halves'})`);
  if (s.softcap > 0) parts.push(`softcap ${s.softcap}`);
  if (s.localWindow > 0) parts.push(`local window ${s.localWindow}`);
  if (s.smoothSoftmax) parts.push('smooth softmax');
  if (s.headSink) parts.push('head sinks');
  if (s.attentionBias) parts.push('attention bias');
  if (!s.key) parts.push('packed QKV');
  return { name: s.name, layer: s.layer, source: s.op, detail: parts.join(', ') };
}

/** The attention sites of an analysed model (every layer). */
export function attentionSites(a: Analysis): AttentionSite[] {
  return findAttention(a.disc, a.loaded.file, opsetOf(a.loaded.model));
}

/** Whether each row's real tokens are a prefix of the row (no left padding, no gaps). */
function rightPadded(b: TokenBatch): boolean {
  for (let r = 0; r < b.batch; r++) {
    let ended = false;
    for (let s = 0; s < b.seq; s++) {
      const m = b.attentionMask[r * b.seq + s] !== 0n;
      if (m && ended) return false;
      if (!m) ended = true;
    }
  }
  return true;
}

/** The positions of each row's real tokens, in order. */
function realPositions(b: TokenBatch): number[][] {
  const out: number[][] = [];
  for (let r = 0; r < b.batch; r++) {
    const p: number[] = [];
    for (let s = 0; s < b.seq; s++) if (b.attentionMask[r * b.seq + s]) p.push(s);
    out.push(p);
  }
  return out;
}

/**
 * Each row's weights over its real tokens only: per row, float32 [layers, heads, n] with the
 * selected layers in ascending order and n the row's real token count (positions in order).
 */
export function realRows(b: TokenBatch, res: AttentionBatch, layers: number[]): Float32Array[] {
  const pos = realPositions(b);
  const H = res.heads;
  return pos.map((p, r) => {
    const n = p.length;
    const out = new Float32Array(layers.length * H * n);
    layers.forEach((l, li) => {
      const w = res.weights.get(l)!;
      for (let h = 0; h < H; h++) {
        const src = (r * H + h) * res.seq;
        const dst = (li * H + h) * n;
        for (let j = 0; j < n; j++) out[dst + j] = w[src + p[j]!]!;
      }
    });
    return out;
  });
}

class OrtAttentionEngine implements AttentionEngine {
  constructor(
    readonly info: ModelInfo,
    readonly sites: AttentionSiteInfo[],
    readonly layers: number[],
    private readonly session: ort.InferenceSession,
    private readonly plans: ReturnType<typeof planInputs>['plans'],
    private readonly outputs: Map<number, string>,
    private readonly maskInput: string,
    private readonly maskAdded: boolean,
    private readonly needsRightPadding: boolean,
    private readonly file: string,
    private readonly windowCache = false,
  ) {}

  async run(b: TokenBatch): Promise<AttentionBatch> {
    checkBatch(b, this.file);
    let padded = false;
    for (let i = 0; i < b.attentionMask.length; i++) if (!b.attentionMask[i]) padded = true;
    // A graph without a mask input cannot mask padding, and a window-cache GroupQueryAttention
    // refuses a row shorter than the batch: run padded rows one at a time, unpadded.
    if ((this.maskAdded || this.windowCache) && padded) return this.runRows(b);
    if (this.needsRightPadding && !rightPadded(b)) return this.runMoved(b);
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      out = await this.session.run(batchFeeds(this.session, this.plans, b, this.maskAdded ? this.maskInput : null));
    } catch (e) {
      throw new LobesError(
        `onnxruntime failed on a ${b.batch}×${b.seq} batch: ${String((e as Error).message ?? e).split('\n')[0]}`,
        { file: this.file },
      );
    }
    const weights = new Map<number, Float32Array>();
    let heads = 0;
    for (const l of this.layers) {
      const t = out[this.outputs.get(l)!]!;
      const dims = t.dims.map(Number);
      if (dims.length !== 3 || dims[0] !== b.batch || dims[2] !== b.seq) {
        throw new LobesError(
          `attention rows of layer ${l} have shape [${dims.join(', ')}], expected [${b.batch}, heads, ${b.seq}]`,
          { file: this.file },
        );
      }
      if (heads && dims[1] !== heads)
        throw new LobesError(`layer ${l} has ${dims[1]} attention heads, earlier layers ${heads}`, { file: this.file });
      heads = dims[1]!;
      weights.set(l, t.data as Float32Array);
    }
    return { batch: b.batch, seq: b.seq, heads, weights };
  }

  /** Run a batch with its real tokens moved to the front of each row, then move the rows back. */
  private async runMoved(b: TokenBatch): Promise<AttentionBatch> {
    const pos = realPositions(b);
    const ids = new BigInt64Array(b.batch * b.seq);
    const mask = new BigInt64Array(b.batch * b.seq);
    ids.fill(b.inputIds[0]!);
    pos.forEach((p, r) => p.forEach((s, j) => {
      ids[r * b.seq + j] = b.inputIds[r * b.seq + s]!;
      mask[r * b.seq + j] = 1n;
    }));
    const moved: TokenBatch = { inputIds: ids, attentionMask: mask, batch: b.batch, seq: b.seq,
      lastIndex: Int32Array.from(pos, (p) => p.length - 1) };
    const res = await this.run(moved);
    const weights = new Map<number, Float32Array>();
    for (const [l, w] of res.weights) {
      const back = new Float32Array(w.length);
      pos.forEach((p, r) => {
        for (let h = 0; h < res.heads; h++) {
          const base = (r * res.heads + h) * b.seq;
          p.forEach((s, j) => (back[base + s] = w[base + j]!));
        }
      });
      weights.set(l, back);
    }
    return { ...res, weights };
  }

  private async runRows(b: TokenBatch): Promise<AttentionBatch> {
    const pos = realPositions(b);
    const weights = new Map<number, Float32Array>();
    let heads = 0;
    for (let r = 0; r < b.batch; r++) {
      const p = pos[r]!;
      const one: TokenBatch = {
        inputIds: BigInt64Array.from(p, (s) => b.inputIds[r * b.seq + s]!),
        attentionMask: new BigInt64Array(p.length).fill(1n),
        batch: 1,
        seq: p.length,
        lastIndex: Int32Array.of(p.length - 1),
      };
      const res = await this.run(one);
      heads = res.heads;
      for (const [l, w] of res.weights) {
        let dst = weights.get(l);
        if (!dst) weights.set(l, dst = new Float32Array(b.batch * heads * b.seq));
        for (let h = 0; h < heads; h++) p.forEach((s, j) => (dst![(r * heads + h) * b.seq + s] = w[h * p.length + j]!));
      }
    }
    return { batch: b.batch, seq: b.seq, heads, weights };
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** Open an attention session on a model folder (or .onnx file). */
export async function openAttentionEngine(modelDir: string, opts: AttentionEngineOptions): Promise<AttentionEngine> {
  const a = analyseModel(modelDir);
  const all = attentionSites(a);
  const wanted = typeof opts.layers === 'function' ? opts.layers(all.length) : opts.layers;
  const layers = wanted ? [...new Set(wanted)].sort((x, y) => x - y) : all.map((s) => s.layer);
  for (const l of layers) {
    if (!Number.isInteger(l) || l < 0 || l >= all.length)
      throw new LobesError(`layer ${l} does not exist (the model has layers 0..${all.length - 1})`, {
        file: a.loaded.file,
      });
  }
  const chosen = all.filter((s) => layers.includes(s.layer));
  const { plans, mask, inGraphPast, windowCache } = planInputs(a);
  const model = applyInterventions(a.loaded.model, a.disc, opts.interventions, a.loaded.file).model;
  const surg = buildAttentionModel(model, a.disc.index, chosen, mask, inGraphPast, a.loaded.file);
  const session = await openEditedSession(surg.model, a.loaded.dir, opts, a.loaded.file);
  const outputs = new Map(chosen.map((s) => [s.layer, surg.outputs.get(s.name)!]));
  const needsRight = all.some((s) => s.kind === 'fused' && s.op === 'GroupQueryAttention');
  return new OrtAttentionEngine(a.info, all.map(siteInfo), layers, session, plans, outputs, surg.maskInput,
    surg.maskAdded, needsRight, a.loaded.file, windowCache);
}
