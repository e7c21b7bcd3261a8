/**
 * Is the model what its folder says? The settings that an exporter bakes into the graph are
 * read from the graph itself and compared with what config.json, genai_config.json and GGUF
 * metadata declare (docs/capture.md, "A model that is not what its folder says"):
 *
 * - the RoPE base and scaling: from the inv_freq constant of an explicit rotary embedding
 *   (a positive, decreasing constant starting at 1 that flows into Cos/Sin), or from the
 *   cos/sin caches of fused GroupQueryAttention / RotaryEmbedding ops, whose row p holds
 *   cos(p·f_i), sin(p·f_i): each frequency f_i is recovered with atan2 at a position where
 *   the angle is about one radian, and the base θ is fitted to f_i = θ^(−2i/d) on the
 *   highest frequencies (which RoPE scaling leaves alone);
 * - the RMSNorm epsilon: the constant added to mean(x²) in a decomposed norm, or the
 *   epsilon attribute of fused norms;
 * - heads, KV heads and head dimension: attention-op attributes, or the 4-D reshapes of
 *   the q/k/v projections; the rotary dimension from the frequencies;
 * - the positions the rotary cache covers (a hard context limit for fused graphs).
 *
 * An exporter that ignored a config field (e.g. an older transformers reading a config whose
 * rope_theta sits in a `rope_parameters` block) gives a graph whose numbers are off while
 * every name and shape looks right; each disagreement is reported with both values.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DataType, tensorBytes, tensorToFloat32, type GraphIndex, type LoadedModel,
  type TensorProto } from '../onnx/index.js';
import { readGgufHeader } from '../formats/gguf.js';
import { GGUF_KEYS as K, GgufMeta, type GgufKey, type GgufKeyType, type GgufKeyValue } from '../formats/gguf-meta.js';
import { readJson } from './config.js';
import { asProjection } from './discover.js';
import type { GraphFacts, DeclaredFacts, RopeScaling, ModelCheck } from './types.js';

export type { GraphFacts, DeclaredFacts, RopeScaling, ModelCheck } from './types.js';

const FLOATS = new Set<number>([DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE]);

function numel(t: TensorProto): number {
  return (t.dims ?? []).reduce((a, b) => a * Number(b), 1);
}

function floats(m: LoadedModel, t: TensorProto): Float32Array | null {
  try {
    return tensorToFloat32(t, tensorBytes(t, m.dir, m.file));
  } catch {
    return null;
  }
}

/** Whether value `v` flows (within a few nodes) into a Cos or Sin. */
function feedsTrig(g: GraphIndex, v: string): boolean {
  const seen = new Set<string>([v]);
  let frontier = [v];
  for (let depth = 0; depth < 10 && frontier.length; depth++) {
    const next: string[] = [];
    for (const x of frontier) {
      for (const c of g.cons(x)) {
        if ((c.opType === 'Cos' || c.opType === 'Sin') && !c.domain) return true;
        for (const o of c.output) {
          if (o && !seen.has(o)) {
            seen.add(o);
            next.push(o);
          }
        }
      }
    }
    frontier = next;
  }
  return false;
}

/**
 * θ from f_i = s·θ^(−2i/d), d = 2n: consecutive frequencies have the ratio θ^(2/d) whatever
 * the overall scale s (linear RoPE scaling). Scaling such as Llama 3's changes only the low
 * frequencies, so the ratios are taken over the geometric head of the vector (while each stays
 * within 2% of the first) and their median gives θ.
 */
function fitTheta(f: ArrayLike<number>): number {
  const n = f.length;
  const r: number[] = [];
  for (let i = 0; i + 1 < n; i++) {
    const x = Math.log(f[i]! / f[i + 1]!);
    if (r.length && Math.abs(x - r[0]!) > 0.02 * r[0]!) break;
    r.push(x);
  }
  r.sort((a, b) => a - b);
  const med = r.length % 2 ? r[(r.length - 1) / 2]! : (r[r.length / 2 - 1]! + r[r.length / 2]!) / 2;
  return Math.exp(med * n);
}

/** Largest relative difference between two frequency vectors. */
function maxRel(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!) / Math.max(Math.abs(b[i]!), 1e-30));
  return m;
}

/** The frequencies θ^(−2i/d) of RoPE, with the scaling Hugging Face applies for `s`. */
export function ropeFrequencies(theta: number, dim: number, s: RopeScaling | null | undefined): Float64Array {
  const n = dim / 2;
  const f = new Float64Array(n);
  for (let i = 0; i < n; i++) f[i] = 1 / Math.pow(theta, (2 * i) / dim);
  if (!s) return f;
  if (s.type === 'linear' && s.factor) { for (let i = 0; i < n; i++) f[i]! /= s.factor; }
  if (s.type === 'llama3' && s.factor && s.lowFreqFactor && s.highFreqFactor && s.originalMax) {
    const lowWave = s.originalMax / s.lowFreqFactor;
    const highWave = s.originalMax / s.highFreqFactor;
    for (let i = 0; i < n; i++) {
      const wave = (2 * Math.PI) / f[i]!;
      if (wave > lowWave) f[i]! /= s.factor;
      else if (wave >= highWave) {
        const smooth = (s.originalMax / wave - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        f[i] = (1 - smooth) * (f[i]! / s.factor) + smooth * f[i]!;
      }
    }
  }
  return f;
}

/** Scaling types whose frequencies ropeFrequencies reproduces exactly. */
const CHECKABLE_SCALING = new Set(['linear', 'llama3', 'dynamic', 'default']);

/** The inv_freq constant of an explicit rotary embedding. */
function invFreqConstant(g: GraphIndex, m: LoadedModel): Float64Array | null {
  const candidates: [string, TensorProto][] = [...g.initializers.entries()];
  for (const n of g.nodes) {
    if (n.opType === 'Constant' && !n.domain && n.output[0]) {
      const t = g.constTensor(n.output[0]);
      if (t) candidates.push([n.output[0], t]);
    }
  }
  for (const [name, t] of candidates) {
    const k = numel(t);
    if (!FLOATS.has(t.dataType ?? -1) || k < 2 || k > 4096) continue;
    const v = floats(m, t);
    if (!v || !(v[0]! > 0 && v[0]! <= 1 + 1e-3)) continue;
    let ok = v[k - 1]! < 0.5 * v[0]!;
    for (let i = 1; ok && i < k; i++) ok = v[i]! > 0 && v[i]! < v[i - 1]!;
    if (ok && feedsTrig(g, name)) return Float64Array.from(v);
  }
  return null;
}

/** The cos/sin caches of a fused rotary op: [positions, n] each. */
function rotaryCaches(g: GraphIndex): { cos: string; sin: string } | null {
  for (const n of g.nodes) {
    if (n.opType === 'GroupQueryAttention' && n.domain === 'com.microsoft' && n.input[7] && n.input[8])
      return { cos: n.input[7], sin: n.input[8] };
    if (n.opType === 'RotaryEmbedding' && n.domain === 'com.microsoft' && n.input[2] && n.input[3])
      return { cos: n.input[2], sin: n.input[3] };
    if (n.opType === 'RotaryEmbedding' && !n.domain && n.input[1] && n.input[2])
      return { cos: n.input[1], sin: n.input[2] };
  }
  return null;
}

/** Frequencies from cos/sin caches: f_i = atan2(sin[p,i], cos[p,i]) / p at a position p where p·f_i is about 1. */
function cacheFrequencies(g: GraphIndex, m: LoadedModel, c: { cos: string; sin: string }): { f: Float64Array;
  positions: number } | null
{
  const ct = g.constTensor(g.skipBack(c.cos));
  const st = g.constTensor(g.skipBack(c.sin));
  if (!ct || !st || (ct.dims ?? []).length !== 2) return null;
  const [P, n] = (ct.dims ?? []).map(Number) as [number, number];
  const cos = floats(m, ct);
  const sin = floats(m, st);
  if (!cos || !sin || P < 2 || cos.length !== P * n || sin.length !== P * n) return null;
  const f = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const f1 = Math.atan2(sin[n + i]!, cos[n + i]!);
    const p = f1 > 0 ? Math.max(1, Math.min(P - 1, Math.floor(1 / f1))) : P - 1;
    f[i] = Math.atan2(sin[p * n + i]!, cos[p * n + i]!) / p;
  }
  return { f, positions: P };
}

/** The norm epsilons of the graph: decomposed Add(mean(x²), ε) and fused norms' attributes. */
function normEpsilons(g: GraphIndex): number[] {
  const out: number[] = [];
  const fused = new Set(['SimplifiedLayerNormalization', 'SkipSimplifiedLayerNormalization', 'RMSNormalization',
    'LayerNormalization', 'SkipLayerNormalization']);
  for (const n of g.nodes) {
    if (fused.has(n.opType)) {
      const a = n.attribute.find((x) => x.name === 'epsilon');
      out.push(a?.f ?? 1e-5);
      continue;
    }
    if (n.opType !== 'Add' || n.domain) continue;
    for (let k = 0; k < 2; k++) {
      const mean = g.prod(g.skipBack(n.input[k] ?? ''));
      if (!mean || mean.opType !== 'ReduceMean') continue;
      const sq = g.prod(g.skipBack(mean.input[0] ?? ''));
      const isSquare = sq &&
        ((sq.opType === 'Pow' && g.constNumbers(sq.input[1])?.[0] === 2) ||
          (sq.opType === 'Mul' && sq.input[0] === sq.input[1]));
      const eps = g.constNumbers(g.skipBack(n.input[1 - k] ?? ''));
      if (isSquare && eps?.length === 1) out.push(eps[0]!);
    }
  }
  const distinct: number[] = [];
  for (const e of out) if (!distinct.some((d) => Math.abs(d - e) <= 1e-3 * Math.abs(e))) distinct.push(e);
  return distinct;
}

/** Heads, KV heads and head dimension from attention ops, else from 4-D reshapes of projections. */
function attentionShape(g: GraphIndex): { heads: number | null; kvHeads: number | null; headDim: number | null } {
  for (const n of g.nodes) {
    if (n.domain !== 'com.microsoft') continue;
    const attr = (name: string) => Number(n.attribute.find((a) => a.name === name)?.i ?? 0) || null;
    if (n.opType === 'GroupQueryAttention')
      return { heads: attr('num_heads'), kvHeads: attr('kv_num_heads'), headDim: null };
    if (n.opType === 'MultiHeadAttention' || n.opType === 'Attention')
      return { heads: attr('num_heads'), kvHeads: null, headDim: null };
  }
  const seen: [number, number][] = [];
  for (const n of g.nodes) {
    if (n.opType !== 'Reshape' || n.domain) continue;
    const src = g.prod(g.skipBack(n.input[0] ?? ''));
    const proj = src ? asProjection(g, src) : null;
    const shape = g.constNumbers(n.input[1]);
    if (!proj || !shape || shape.length !== 4) continue;
    const [h, d] = [shape[2]!, shape[3]!];
    if (h > 0 && d > 0 && h * d === proj.dOut) seen.push([h, d]);
  }
  if (!seen.length) return { heads: null, kvHeads: null, headDim: null };
  const hs = seen.map((x) => x[0]);
  return { heads: Math.max(...hs), kvHeads: Math.min(...hs), headDim: seen[0]![1] };
}

/** Read the graph's own settings. */
export function graphFacts(g: GraphIndex, m: LoadedModel): { facts: GraphFacts; frequencies: Float64Array | null } {
  let f = invFreqConstant(g, m);
  let source: string | null = f ? 'inv_freq constant' : null;
  let positions: number | null = null;
  if (!f) {
    const caches = rotaryCaches(g);
    const got = caches ? cacheFrequencies(g, m, caches) : null;
    if (got) {
      f = got.f;
      positions = got.positions;
      source = 'cos/sin cache';
    }
  }
  let theta: number | null = null;
  let scaled: boolean | null = null;
  if (f && f.length >= 2) {
    theta = fitTheta(f);
    scaled = Math.abs(f[0]! - 1) > 1e-3 || maxRel(f, ropeFrequencies(theta, 2 * f.length, null)) > 1e-2;
  }
  const att = attentionShape(g);
  const rotaryDim = f ? 2 * f.length : null;
  return {
    facts: {
      ropeTheta: theta,
      ropeSource: source,
      rotaryDim,
      ropeScaled: scaled,
      ropePositions: positions,
      rmsNormEps: normEpsilons(g),
      heads: att.heads,
      kvHeads: att.kvHeads,
      headDim: att.headDim ?? rotaryDim,
    },
    frequencies: f,
  };
}

const int = (v: unknown): number | undefined => (Number.isInteger(v) && (v as number) > 0 ? (v as number) : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined);

function scalingOf(o: any): RopeScaling | null {
  if (!o || typeof o !== 'object') return null;
  const type = String(o.rope_type ?? o.type ?? '');
  if (!type || type === 'default') return null;
  return { type, factor: num(o.factor), lowFreqFactor: num(o.low_freq_factor), highFreqFactor: num(o.high_freq_factor),
    originalMax: int(o.original_max_position_embeddings) };
}

/** What config.json declares (rope_theta at the top level, or in rope_parameters as transformers 5 writes it). */
function fromConfigJson(cfg: any, problems: string[]): DeclaredFacts | null {
  if (!cfg || typeof cfg !== 'object') return null;
  const rp = cfg.rope_parameters && typeof cfg.rope_parameters === 'object' ? cfg.rope_parameters : null;
  const top = num(cfg.rope_theta);
  const inner = num(rp?.rope_theta);
  if (top !== undefined && inner !== undefined && Math.abs(top - inner) > 1e-6 * top) {
    problems.push(`config.json declares two RoPE bases: rope_theta ${top} and rope_parameters.rope_theta ${inner}`);
  }
  const heads = int(cfg.num_attention_heads);
  const hidden = int(cfg.hidden_size);
  const d: DeclaredFacts = {
    source: 'config.json',
    ropeTheta: inner ?? top,
    ropeThetaField: inner !== undefined ? 'rope_parameters.rope_theta' : top !== undefined ? 'rope_theta' : undefined,
    ropeScaling: scalingOf(cfg.rope_scaling) ?? scalingOf(rp),
    rmsNormEps: num(cfg.rms_norm_eps),
    heads,
    kvHeads: int(cfg.num_key_value_heads),
    headDim: int(cfg.head_dim) ?? (heads && hidden ? hidden / heads : undefined),
    contextLength: int(cfg.max_position_embeddings),
  };
  return d;
}

function fromGenai(genai: any): DeclaredFacts | null {
  const m = genai?.model;
  if (!m || typeof m !== 'object') return null;
  return {
    source: 'genai_config.json',
    heads: int(m.decoder?.num_attention_heads),
    kvHeads: int(m.decoder?.num_key_value_heads),
    headDim: int(m.decoder?.head_size),
    contextLength: int(m.context_length),
  };
}

/** What a GGUF file's metadata declares ({arch}.rope.freq_base, {arch}.attention.*, {arch}.context_length). */
export function fromGguf(file: string): DeclaredFacts | null {
  let meta: GgufMeta;
  try {
    meta = new GgufMeta(readGgufHeader(file).metadata, file);
  } catch {
    return null;
  }
  // What the file declares, leniently: a key of the wrong type declares nothing here.
  const v = <T extends GgufKeyType>(k: GgufKey<T>): GgufKeyValue<T> | undefined => {
    try {
      return meta.read(k);
    } catch {
      return undefined;
    }
  };
  const arch = meta.arch;
  const heads = int(v(K.headCount));
  const emb = int(v(K.embeddingLength));
  const type = v(K.ropeScalingType);
  return {
    source: file.split(/[\\/]/).pop()!,
    ropeTheta: num(v(K.ropeFreqBase)) ?? (arch === 'llama' ? 10000 : undefined),
    ropeThetaField: meta.key(K.ropeFreqBase),
    ropeScaling: typeof type === 'string' && type !== 'none'
      ? { type, factor: num(v(K.ropeScalingFactor)), originalMax: int(v(K.ropeScalingOriginalContext)) }
      : null,
    rmsNormEps: num(v(K.rmsNormEps)),
    heads,
    kvHeads: int(v(K.headCountKv)) ?? heads,
    headDim: int(v(K.keyLength)) ?? (heads && emb ? emb / heads : undefined),
    contextLength: int(v(K.contextLength)),
  };
}

/** The GGUF file a model folder came from: the only *.gguf in it, if any. */
function ggufIn(dir: string): string | null {
  try {
    const g = readdirSync(dir).filter((f) => f.toLowerCase().endsWith('.gguf'));
    return g.length === 1 ? join(dir, g[0]!) : null;
  } catch {
    return null;
  }
}

const fmt = (x: number) => (Math.abs(x) >= 100 ? String(Math.round(x)) : String(Number(x.toPrecision(4))));
/** A base recovered from the graph, to the precision fp16 caches allow (3 significant digits). */
const fmtBase = (x: number) => String(Number(x.toPrecision(3)));

/**
 * Compare what the graph computes with what `configDir`'s config files (and `gguf`, or the
 * only *.gguf in the folder) declare. Every disagreement is one line naming both values.
 */
export function checkModel(g: GraphIndex, m: LoadedModel, configDir: string, opts: { gguf?: string } = {}): ModelCheck {
  const { facts, frequencies } = graphFacts(g, m);
  const problems: string[] = [];
  const declared: DeclaredFacts[] = [];
  const cfg = fromConfigJson(readJson(join(configDir, 'config.json')), problems);
  if (cfg) declared.push(cfg);
  const genai = fromGenai(readJson(join(configDir, 'genai_config.json')));
  if (genai) declared.push(genai);
  const ggufFile = opts.gguf ?? ggufIn(configDir);
  if (ggufFile && existsSync(ggufFile)) {
    const gg = fromGguf(ggufFile);
    if (gg) declared.push(gg);
  }
  for (const d of declared) {
    const src = d.source;
    if (d.ropeTheta !== undefined && facts.ropeTheta !== null && facts.rotaryDim && frequencies) {
      const field = d.ropeThetaField ? ` ${d.ropeThetaField}` : '';
      const checkable = !d.ropeScaling || CHECKABLE_SCALING.has(d.ropeScaling.type);
      // Every frequency against what the declared base and scaling give; θ alone where the scaling type is not reproduced.
      const dev = checkable
        ? maxRel(frequencies,
          ropeFrequencies(d.ropeTheta, facts.rotaryDim, d.ropeScaling?.type === 'dynamic' ? null : d.ropeScaling))
        : 0;
      const thetaOff = Math.abs(facts.ropeTheta - d.ropeTheta) > 0.01 * d.ropeTheta;
      if ((checkable && dev > 2e-2) || (!checkable && thetaOff)) {
        if (thetaOff) {
          problems.push(
            `RoPE base: the graph computes ${
              fmtBase(facts.ropeTheta)
            } (from its ${facts.ropeSource}), ${src}${field} says ${fmt(d.ropeTheta)}`,
          );
        } else {
          const says = d.ropeScaling
            ? `${d.ropeScaling.type} scaling${d.ropeScaling.factor ? ` (factor ${fmt(d.ropeScaling.factor)})` : ''}`
            : 'no RoPE scaling';
          problems.push(
            `RoPE scaling: the graph's frequencies ${
              facts.ropeScaled ? 'are scaled' : 'are not scaled'
            } but ${src} says ${says} (frequencies differ by up to ${(dev * 100).toFixed(0)}%)`,
          );
        }
      }
    }
    if (d.rmsNormEps !== undefined) {
      for (const e of facts.rmsNormEps) {
        if (Math.abs(e - d.rmsNormEps) > 0.05 * d.rmsNormEps)
          problems.push(`RMSNorm epsilon: the graph uses ${fmt(e)}, ${src} says ${fmt(d.rmsNormEps)}`);
      }
    }
    const same = (what: string, got: number | null, want: number | undefined) => {
      if (got !== null && want !== undefined && got !== want)
        problems.push(`${what}: the graph has ${got}, ${src} says ${want}`);
    };
    same('attention heads', facts.heads, d.heads);
    same('KV heads', facts.kvHeads, d.kvHeads);
    same('head dimension', facts.headDim, d.headDim);
  }
  const limits: { tokens: number; source: string }[] = [];
  for (const d of declared)
    if (d.contextLength) limits.push({ tokens: d.contextLength, source: `${d.source} context length` });
  if (facts.ropePositions)
    limits.push({ tokens: facts.ropePositions, source: `the graph's rotary cache (${facts.ropePositions} positions)` });
  const context = limits.length ? limits.reduce((a, b) => (b.tokens < a.tokens ? b : a)) : null;
  return { graph: facts, declared, problems, context, frequencies: frequencies ?? undefined };
}
