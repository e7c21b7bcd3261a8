/**
 * The continuation log-likelihood engine: for a context and continuations (token ids), the
 * summed log-probability of each continuation's tokens given the context and the tokens
 * before them, and whether each token is the model's greedy (argmax) choice, computed through
 * the log-likelihood head (src/runtime/loglik-head.ts) so that only [n] values per scored
 * token leave the session.
 *
 * For context c (n tokens) and continuation x (m tokens) the model reads (c + x)[:-1] and
 * token x_j is scored at position n − 1 + j:  ll = Σ_j log softmax(z_{n−1+j})[x_j].
 *
 * Two ways to compute it, with the same numbers up to floating point:
 * - cache (models with KV-cache inputs that take several tokens after a cache): the context
 *   but its last token is computed once; the continuations of equal length then run together
 *   as one batch over copies of that cache, each row being [c_{n−1}, x_0, …, x_{m−2}];
 * - batches (otherwise, or with cache: 'off'): every (c + x)[:-1] as one right-padded row,
 *   rows planned by length (planBatches).
 * The engine opens any model folder lobes can read, so a model whose weights were edited on
 * disk is scored the same way.
 *
 * Memory: every tensor the engine makes (feeds, tiled caches) or receives (session outputs) is
 * disposed as soon as it is no longer needed, and a run fetches only the outputs it reads (a
 * continuation run no KV cache, a prefill only the KV cache), so what a call holds does not grow
 * with the number of requests. stats.liveTensors counts the tensors not yet disposed (0 between
 * calls).
 */
import * as ort from 'onnxruntime-node';
import { LobesError } from '../util/errors.js';
import { planBatches } from './batching.js';
import { analyseModel, modelFeeds, planInputs, refuseWindowCache, type Analysis, type FeedPlan } from './engine.js';
import { buildLoglikHeadModel, POSITIONS_INPUT, TARGET_LOGPROB, TARGET_TOP, TARGETS_INPUT } from './loglik-head.js';
import { openEditedSession } from './providers.js';
import type { Device, Intervention, ModelInfo } from './types.js';
import { applyInterventions } from './intervene.js';

/** One context and the continuations to score after it (token ids; the context is not empty). */
export interface LoglikRequest {
  context: number[];
  continuations: number[][];
}

/** The score of one continuation. */
export interface ContinuationScore {
  /** Σ_j log p(x_j | context, x_<j). */
  logprob: number;
  /** Number of continuation tokens. */
  tokens: number;
  /** Every continuation token is the argmax of its row. */
  greedy: boolean;
  /** Per-token log-probabilities. */
  tokenLogprobs: Float32Array;
  /** Per-token greedy flags (1: the token is the argmax). */
  tokenGreedy: Uint8Array;
}

export interface LoglikOptions {
  device: Device;
  deviceId?: number;
  threads?: number;
  /** 'auto' (default): the KV cache when the model has one that takes several tokens; 'off': right-padded batches. */
  cache?: 'auto' | 'off';
  /** Contexts shorter than this many tokens go to batches even with the cache (default CACHE_MIN_CONTEXT). */
  cacheMinContext?: number;
  /** Rows per batch (batches mode; default 16). */
  batch?: number;
  /** Padded tokens per batch (batches mode). */
  tokenBudget?: number;
  /**
   * Edits of activations (src/runtime/intervene.ts), in every token's forward pass. An edit at
   * the last position only turns the cache off (a cached context's last token is not a row's last).
   */
  interventions?: Intervention[];
}

/** Work counters (cumulative). */
export interface LoglikStats {
  /** Continuation tokens scored. */
  scoredTokens: number;
  /** Tokens the model computed (padding excluded). */
  computedTokens: number;
  runs: number;
  /** Tensors made or received (cumulative). */
  tensors: number;
  /** Of those, the ones not yet disposed (0 between calls of score). */
  liveTensors: number;
}

/** Called as continuations finish: how many, their requests (indices into the call's list), their scored tokens. */
export type OnScored = (k: number, done: { requests: readonly number[]; tokens: number }) => void;

export interface LoglikEngine {
  readonly info: ModelInfo;
  /** True when continuations are scored after a shared KV cache of their context. */
  readonly usesCache: boolean;
  readonly stats: LoglikStats;
  /**
   * Scores per request, per continuation, in order. `onDone(k, done)` is called as k more
   * continuations are done: `done.requests` gives each one's request (an index into `reqs`),
   * `done.tokens` the continuation tokens they scored.
   */
  score(reqs: readonly LoglikRequest[], onDone?: OnScored): Promise<ContinuationScore[][]>;
  close(): Promise<void>;
}

/**
 * Contexts shorter than this are scored in batches even when the cache is used: for a short
 * context one batched run costs less than a prefill and a run per continuation.
 */
export const CACHE_MIN_CONTEXT = 32;

/** Whether a request goes through the KV cache (a context worth sharing among several continuations) rather than into batches. */
function goesViaCache(r: LoglikRequest, usesCache: boolean, cacheMinContext: number | undefined): boolean {
  return usesCache && r.context.length >= (cacheMinContext ?? CACHE_MIN_CONTEXT) && r.continuations.length >= 2;
}

/**
 * The sequences an engine runs for `reqs` and how they are batched, for the memory plan
 * (src/runtime/plan.ts checkBatchMemory) before anything runs: in batches, one row per
 * continuation, (context + continuation)[:-1], batched as score() batches them; through the
 * cache, one sequence per request at a time, its context and longest continuation. `request`
 * maps each row to its request.
 */
export function loglikMemoryPlan(
  reqs: readonly LoglikRequest[],
  o: { usesCache: boolean; batch?: number; tokenBudget?: number; cacheMinContext?: number },
): { tokens: number[]; request: number[]; batches: number[][] } {
  const tokens: number[] = [];
  const request: number[] = [];
  const batches: number[][] = [];
  const batched: number[] = [];
  reqs.forEach((r, i) => {
    if (goesViaCache(r, o.usesCache, o.cacheMinContext)) {
      batches.push([tokens.length]);
      tokens.push(r.context.length + Math.max(...r.continuations.map((c) => c.length)) - 1);
      request.push(i);
    } else {
      for (const c of r.continuations) {
        batched.push(tokens.length);
        tokens.push(r.context.length + c.length - 1);
        request.push(i);
      }
    }
  });
  if (batched.length) {
    for (const b of planBatches(Int32Array.from(batched, (k) => tokens[k]!), { batch: o.batch,
      tokenBudget: o.tokenBudget })) batches.push(b.map((j) => batched[j]!));
  }
  return { tokens, request, batches };
}

const i64 = (xs: ArrayLike<number>) => BigInt64Array.from(Array.from(xs, (x) => BigInt(x)));

/** A [batch, …] KV-cache tensor with its single row repeated `b` times. */
function tile(t: ort.Tensor, b: number): ort.Tensor {
  if (b === 1) return t;
  const src = t.data as Float32Array | Uint16Array;
  const out = new (src.constructor as Float32ArrayConstructor | Uint16ArrayConstructor)(src.length * b);
  for (let i = 0; i < b; i++) out.set(src, i * src.length);
  return new ort.Tensor(t.type as 'float32', out as Float32Array, [b, ...t.dims.slice(1)]);
}

function validate(reqs: readonly LoglikRequest[]): void {
  reqs.forEach((r, i) => {
    if (r.context.length === 0)
      throw new LobesError(
        `request ${i} has an empty context (a context needs at least one token, e.g. the BOS or end-of-text token)`,
      );
    r.continuations.forEach((c, j) => {
      if (c.length === 0) throw new LobesError(`request ${i}, continuation ${j} has no tokens`);
    });
  });
}

class OrtLoglik implements LoglikEngine {
  readonly stats: LoglikStats = { scoredTokens: 0, computedTokens: 0, runs: 0, tensors: 0, liveTensors: 0 };
  /** Tensors made or received and not yet disposed. */
  private readonly live = new Set<ort.Tensor>();

  private own<T extends ort.Tensor>(t: T): T {
    if (!this.live.has(t)) {
      this.live.add(t);
      this.stats.tensors++;
      this.stats.liveTensors = this.live.size;
    }
    return t;
  }

  /** Dispose tensors this engine owns (others are left alone). */
  private drop(ts: Iterable<ort.Tensor>): void {
    for (const t of ts) {
      if (!this.live.delete(t)) continue;
      t.dispose();
    }
    this.stats.liveTensors = this.live.size;
  }
  constructor(
    readonly info: ModelInfo,
    private readonly a: Analysis,
    private readonly plans: FeedPlan[],
    private readonly batched: ort.InferenceSession,
    private readonly addedMask: string | null,
    private readonly cached: ort.InferenceSession | null,
    private readonly present: string[],
    private readonly opts: LoglikOptions,
  ) {}

  usesCache = false;
  /** Whether several continuations run as one batch over copies of the cache (GroupQueryAttention takes one row only). */
  cacheBatches = false;

  /** Use the cache session only when it takes several tokens after a non-empty cache (2 + 2 token probes, one row then two). */
  async probe(): Promise<void> {
    if (!this.cached || this.opts.cache === 'off') return;
    const runs = this.stats.runs;
    this.quiet = true;
    try {
      const a = await this.runCached(null, 0, [[0, 1]], null);
      try {
        await this.runCached(a.past, 2, [[1, 0]], [[0, 0]]);
        this.usesCache = true;
        await this.runCached(a.past, 2, [[1, 0], [1, 0]], [[0, 0], [0, 0]]);
        this.cacheBatches = true;
      } finally {
        this.drop(a.past.values());
      }
    } catch {
      // What failed stays off.
    }
    this.drop([...this.live]);
    this.quiet = false;
    this.stats.runs = runs;
  }

  private feeds(session: ort.InferenceSession, ids: BigInt64Array, mask: BigInt64Array, pos: BigInt64Array, B: number,
    S: number, T: number, positions: BigInt64Array, targets: BigInt64Array,
    past: Map<string, ort.Tensor> | null): Record<string, ort.Tensor>
  {
    const f = modelFeeds(session, this.plans, { ids, mask, pos, B, S, T }, past, this.addedMask);
    f[POSITIONS_INPUT] = new ort.Tensor('int64', positions, [positions.length]);
    f[TARGETS_INPUT] = new ort.Tensor('int64', targets, [targets.length]);
    for (const t of Object.values(f)) this.own(t);
    return f;
  }

  /** Set while probing: a failing probe is expected and must not print onnxruntime's error log. */
  private quiet = false;

  /**
   * Run a session on feeds, fetching only `fetches`; the feeds the engine made are disposed
   * (those in `keep`, a KV cache the caller still uses, are not), the outputs are the caller's
   * to dispose.
   */
  private async run(session: ort.InferenceSession, feeds: Record<string, ort.Tensor>, fetches: string[], what: string,
    keep: Iterable<ort.Tensor> = []): Promise<ort.InferenceSession.OnnxValueMapType>
  {
    this.stats.runs++;
    const kept = new Set(keep);
    try {
      const out = await session.run(feeds, fetches, this.quiet ? { logSeverityLevel: 4 } : {});
      for (const t of Object.values(out)) this.own(t as ort.Tensor);
      return out;
    } catch (e) {
      throw new LobesError(`onnxruntime failed on ${what}: ${String((e as Error).message ?? e).split('\n')[0]}`, {
        file: this.a.loaded.file,
      });
    } finally {
      this.drop(Object.values(feeds).filter((t) => !kept.has(t)));
    }
  }

  /**
   * Rows of equal length after a cache of `pastLen` tokens (`past` holds one row, repeated for
   * every row); every position of every row is scored against `targets[row][j]`, or (targets
   * null: a prefill) only one row, whose scores are not wanted.
   */
  private async runCached(past: Map<string, ort.Tensor> | null, pastLen: number, rows: number[][],
    targets: number[][] | null): Promise<{ past: Map<string, ort.Tensor>; lp: Float32Array; top: BigInt64Array }>
  {
    const B = rows.length;
    const S = rows[0]!.length;
    const T = pastLen + S;
    const tiled = past ? new Map([...past].map(([k, v]) => [k, tile(v, B)])) : null;
    const pos = new BigInt64Array(B * S);
    for (let b = 0; b < B; b++) for (let j = 0; j < S; j++) pos[b * S + j] = BigInt(pastLen + j);
    const positions = targets ? i64(Array.from({ length: B * S }, (_, i) => i)) : i64([0]);
    const tg = targets ? i64(targets.flat()) : i64([0]);
    // A prefill fetches the KV cache only; a continuation run its scores only.
    const fetches = targets ? [TARGET_LOGPROB, TARGET_TOP] : this.present;
    const feeds = this.feeds(this.cached!, i64(rows.flat()), new BigInt64Array(B * T).fill(1n), pos, B, S, T, positions,
      tg, tiled);
    const out = await this.run(this.cached!, feeds, fetches,
      `${B} continuation(s) of ${S} tokens after ${pastLen} cached tokens`, past?.values());
    const next = new Map<string, ort.Tensor>();
    if (!targets) {
      const pastInputs = this.plans.filter((p) => p.role === 'past').map((p) => p.name);
      this.present.forEach((o, i) => next.set(pastInputs[i]!, out[o]!));
      return { past: next, lp: new Float32Array(0), top: new BigInt64Array(0) };
    }
    const lp = Float32Array.from(out[TARGET_LOGPROB]!.data as Float32Array);
    const top = BigInt64Array.from(out[TARGET_TOP]!.data as BigInt64Array);
    this.drop(Object.values(out) as ort.Tensor[]);
    return { past: next, lp, top };
  }

  async score(reqs: readonly LoglikRequest[], onDone?: OnScored): Promise<ContinuationScore[][]> {
    validate(reqs);
    // Through the cache: requests whose context is worth sharing; the rest in batches.
    const viaCache = reqs.map((r) => goesViaCache(r, this.usesCache, this.opts.cacheMinContext));
    const cachedIdx = reqs.flatMap((_, i) => (viaCache[i] ? [i] : []));
    const batchedIdx = reqs.flatMap((_, i) => (viaCache[i] ? [] : [i]));
    // each part numbers its requests from 0: report them in the caller's numbering
    const back = (
      idx: number[],
    ): OnScored | undefined => (onDone
      ? (k, d) => onDone(k, { requests: d.requests.map((r) => idx[r]!), tokens: d.tokens })
      : undefined);
    const a = await this.scoreCached(cachedIdx.map((i) => reqs[i]!), back(cachedIdx));
    const b = await this.scoreBatched(batchedIdx.map((i) => reqs[i]!), back(batchedIdx));
    let ia = 0;
    let ib = 0;
    return reqs.map((_, i) => (viaCache[i] ? a[ia++]! : b[ib++]!));
  }

  private async scoreCached(reqs: readonly LoglikRequest[], onDone?: OnScored): Promise<ContinuationScore[][]> {
    const out: ContinuationScore[][] = [];
    for (const [ri, r] of reqs.entries()) {
      const n = r.context.length;
      let past: Map<string, ort.Tensor> | null = null;
      if (n >= 2) {
        past = (await this.runCached(null, 0, [r.context.slice(0, n - 1)], null)).past;
        this.stats.computedTokens += n - 1;
      }
      const res: ContinuationScore[] = new Array(r.continuations.length);
      // Continuations of equal length run together over copies of the cache.
      const byLen = new Map<number, number[]>();
      r.continuations.forEach((c, j) => byLen.set(c.length, [...(byLen.get(c.length) ?? []), j]));
      const groups = [...byLen].sort((x, y) => x[0] - y[0]).flatMap((
        [m, idx],
      ): [number, number[]][] => (this.cacheBatches ? [[m, idx]] : idx.map((j) => [m, [j]])));
      try {
        for (const [m, idx] of groups) {
          const rows = idx.map((j) => [r.context[n - 1]!, ...r.continuations[j]!.slice(0, m - 1)]);
          const o = await this.runCached(past, n - 1, rows, idx.map((j) => r.continuations[j]!));
          idx.forEach((j, b) => (res[j] = collect(o.lp, o.top, b * m, r.continuations[j]!)));
          this.stats.computedTokens += m * idx.length;
          this.stats.scoredTokens += m * idx.length;
          onDone?.(idx.length, { requests: idx.map(() => ri), tokens: m * idx.length });
        }
      } finally {
        if (past) this.drop(past.values());
      }
      out.push(res);
    }
    return out;
  }

  private async scoreBatched(reqs: readonly LoglikRequest[], onDone?: OnScored): Promise<ContinuationScore[][]> {
    const rows: { req: number; cont: number; ids: number[]; from: number }[] = [];
    reqs.forEach((r, i) =>
      r.continuations.forEach((c, j) =>
        rows.push({ req: i, cont: j, ids: [...r.context, ...c].slice(0, -1), from: r.context.length - 1 })
      )
    );
    const out: ContinuationScore[][] = reqs.map((r) => new Array(r.continuations.length));
    if (rows.length === 0) return out;
    const plan = planBatches(Int32Array.from(rows, (r) => r.ids.length), { batch: this.opts.batch,
      tokenBudget: this.opts.tokenBudget });
    for (const b of plan) {
      const B = b.length;
      const S = Math.max(...b.map((i) => rows[i]!.ids.length));
      const ids = new BigInt64Array(B * S);
      const mask = new BigInt64Array(B * S);
      const pos = new BigInt64Array(B * S);
      const positions: number[] = [];
      const targets: number[] = [];
      b.forEach((i, k) => {
        const r = rows[i]!;
        r.ids.forEach((t, j) => {
          ids[k * S + j] = BigInt(t);
          mask[k * S + j] = 1n;
          pos[k * S + j] = BigInt(j);
        });
        const cont = reqs[r.req]!.continuations[r.cont]!;
        cont.forEach((t, j) => {
          positions.push(k * S + r.from + j);
          targets.push(t);
        });
        this.stats.computedTokens += r.ids.length;
        this.stats.scoredTokens += cont.length;
      });
      const o = await this.run(this.batched,
        this.feeds(this.batched, ids, mask, pos, B, S, S, i64(positions), i64(targets), null), [TARGET_LOGPROB,
        TARGET_TOP], `a ${B}×${S} batch`);
      const lp = Float32Array.from(o[TARGET_LOGPROB]!.data as Float32Array);
      const top = BigInt64Array.from(o[TARGET_TOP]!.data as BigInt64Array);
      this.drop(Object.values(o) as ort.Tensor[]);
      let at = 0;
      for (const i of b) {
        const r = rows[i]!;
        const cont = reqs[r.req]!.continuations[r.cont]!;
        out[r.req]![r.cont] = collect(lp, top, at, cont);
        at += cont.length;
      }
      onDone?.(B, { requests: b.map((i) => rows[i]!.req), tokens: at });
    }
    return out;
  }

  async close(): Promise<void> {
    this.drop([...this.live]);
    await this.batched.release();
    if (this.cached) await this.cached.release();
  }
}

/** The score of continuation `cont` from its scored rows starting at `at`. */
function collect(lp: Float32Array, top: BigInt64Array, at: number, cont: number[]): ContinuationScore {
  const m = cont.length;
  const tokenLogprobs = lp.slice(at, at + m);
  const tokenGreedy = new Uint8Array(m);
  let s = 0;
  for (let j = 0; j < m; j++) {
    s += tokenLogprobs[j]!;
    tokenGreedy[j] = Number(top[at + j]) === cont[j] ? 1 : 0;
  }
  return { logprob: s, tokens: m, greedy: tokenGreedy.every((g) => g === 1), tokenLogprobs, tokenGreedy };
}

/** Open the log-likelihood engine on a model folder (or .onnx file). */
export async function openLoglikEngine(modelDir: string, opts: LoglikOptions): Promise<LoglikEngine> {
  const a = analyseModel(modelDir);
  const { plans, mask, inGraphPast, windowCache } = planInputs(a);
  refuseWindowCache(a, windowCache, 'the log-likelihood engine (lobes eval --scoring cloze, ablate)');
  const hasPast = plans.some((p) => p.role === 'past');
  const model = applyInterventions(a.loaded.model, a.disc, opts.interventions, a.loaded.file).model;
  if (opts.interventions?.some((iv) => iv.positions === 'last')) opts = { ...opts, cache: 'off' };
  const bg = buildLoglikHeadModel(model, a.disc, { maskInput: mask, inGraphPast });
  const batched = await openEditedSession(bg.model, a.loaded.dir, opts, a.loaded.file);
  let cached: ort.InferenceSession | null = null;
  let present: string[] = [];
  if (hasPast && inGraphPast.length === 0 && opts.cache !== 'off') {
    const cg = buildLoglikHeadModel(model, a.disc, { maskInput: mask, keepPresent: true });
    const nPast = plans.filter((p) => p.role === 'past').length;
    if (cg.present.length === nPast) {
      cached = await openEditedSession(cg.model, a.loaded.dir, opts, a.loaded.file);
      present = cg.present;
    }
  }
  const e = new OrtLoglik(a.info, a, plans, batched, bg.maskAdded ? bg.maskInput : null, cached, present, opts);
  await e.probe();
  return e;
}

/** How a text is encoded for splitting: `encode` as the tokenizer encodes a whole prompt, `encodePiece` without special tokens. */
export interface SplitEncoder {
  encode(text: string): number[];
  encodePiece(text: string): number[];
}

/**
 * The token split of a (context, continuation) pair as lm-evaluation-harness makes it:
 * trailing whitespace of the context moves to the front of the continuation; the whole text
 * is encoded, the context alone is encoded, and the continuation's tokens are the whole's
 * tokens after the context's count. An empty context is the prefix token (BOS, else EOS) with
 * the continuation encoded alone without special tokens (when that encoding itself starts with
 * the prefix token, its first token is the context).
 */
export function splitContinuation(enc: SplitEncoder, context: string, continuation: string,
  prefixId: number): { context: number[]; continuation: number[] }
{
  if (context === '') {
    const c = enc.encodePiece(continuation);
    return c[0] === prefixId
      ? { context: c.slice(0, 1), continuation: c.slice(1) }
      : { context: [prefixId], continuation: c };
  }
  const trimmed = context.replace(/\s+$/u, '');
  const ctx = trimmed;
  const cont = context.slice(trimmed.length) + continuation;
  const whole = enc.encode(ctx + cont);
  const c = enc.encode(ctx);
  return { context: c, continuation: whole.slice(c.length) };
}
