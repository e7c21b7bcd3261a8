/**
 * The answer scorer: ONNX Runtime sessions over the logit-head graph
 * (src/runtime/logit-head.ts). `score` runs right-padded batches and returns, per row, the
 * logits of the candidate tokens at its last real token, the full-vocabulary log-sum-exp and
 * argmax. `prefill`/`extend` run one sequence with the model's KV cache (greedy generation
 * for --cot): a second session that also returns the cache.
 */
import * as ort from 'onnxruntime-node';
import { LobesError, opt } from '../util/errors.js';
import { analyseModel, modelFeeds, planInputs, positionIds, refuseWindowCache, type Analysis,
  type FeedPlan } from '../runtime/engine.js';
import { buildLogitHeadModel, CAND_LOGITS, CANDIDATES_INPUT, LOG_SUM_EXP, TOP_ID } from '../runtime/logit-head.js';
import { openEditedSession } from '../runtime/providers.js';
import type { ModelInfo } from '../runtime/types.js';
import type { HeadOutput, KvState, Scorer, ScorerOptions } from '../runtime/scorer.js';
import { applyInterventions } from '../runtime/intervene.js';

const i64 = (xs: ArrayLike<number>) => BigInt64Array.from(Array.from(xs, (x) => BigInt(x)));

class OrtScorer implements Scorer {
  constructor(
    readonly info: ModelInfo,
    private readonly a: Analysis,
    private readonly plans: FeedPlan[],
    private readonly scoring: ort.InferenceSession,
    private readonly scoreMask: { name: string; added: boolean },
    private readonly gen: ort.InferenceSession | null,
    private readonly genPresent: string[],
    readonly hasPast: boolean,
  ) {}

  multiTokenExtend = false;

  /** Find out whether the KV-cache session takes several tokens after a cache (a 2 + 2 token probe). */
  async probe(): Promise<void> {
    if (!this.gen) return;
    try {
      const a = await this.extend({ length: 0, past: new Map() }, [0, 1], [0]);
      this.multiTokenExtend = true;
      await this.extend(a.state, [1, 0], [0]);
    } catch {
      this.multiTokenExtend = false;
    }
  }

  private feeds(session: ort.InferenceSession, ids: BigInt64Array, mask: BigInt64Array, pos: BigInt64Array, B: number,
    S: number, T: number, candidates: number[], past: Map<string, ort.Tensor> | null,
    addedMask: string | null): Record<string, ort.Tensor>
  {
    const f = modelFeeds(session, this.plans, { ids, mask, pos, B, S, T }, past, addedMask);
    f[CANDIDATES_INPUT] = new ort.Tensor('int64', i64(candidates), [candidates.length]);
    return f;
  }

  private async run(session: ort.InferenceSession, feeds: Record<string, ort.Tensor>,
    what: string): Promise<ort.InferenceSession.OnnxValueMapType>
  {
    try {
      return await session.run(feeds);
    } catch (e) {
      throw new LobesError(`onnxruntime failed on ${what}: ${String((e as Error).message ?? e).split('\n')[0]}`, {
        file: this.a.loaded.file,
      });
    }
  }

  private head(out: ort.InferenceSession.OnnxValueMapType, k: number): HeadOutput {
    const top = out[TOP_ID]!.data as BigInt64Array;
    return { cand: out[CAND_LOGITS]!.data as Float32Array, lse: out[LOG_SUM_EXP]!.data as Float32Array,
      top: Int32Array.from(top, (x) => Number(x)), k };
  }

  async score(rows: number[][], candidates: number[], padId: number): Promise<HeadOutput> {
    if (rows.length === 0) throw new LobesError('nothing to score (empty batch)');
    if (candidates.length === 0) throw new LobesError('no candidate tokens to score');
    // A graph without a mask input cannot mask padding: score its rows one at a time.
    if (this.scoreMask.added && rows.some((r) => r.length !== rows[0]!.length)) {
      const k = candidates.length;
      const cand = new Float32Array(rows.length * k);
      const lse = new Float32Array(rows.length);
      const top = new Int32Array(rows.length);
      for (const [i, r] of rows.entries()) {
        const o = await this.score([r], candidates, padId);
        cand.set(o.cand, i * k);
        lse[i] = o.lse[0]!;
        top[i] = o.top[0]!;
      }
      return { cand, lse, top, k };
    }
    const B = rows.length;
    const S = Math.max(...rows.map((r) => r.length));
    const ids = new BigInt64Array(B * S).fill(BigInt(padId));
    const mask = new BigInt64Array(B * S);
    rows.forEach((r, b) => {
      if (r.length === 0) throw new LobesError(`row ${b} has no tokens`);
      r.forEach((t, j) => {
        ids[b * S + j] = BigInt(t);
        mask[b * S + j] = 1n;
      });
    });
    const pos = positionIds(mask, B, S);
    const out = await this.run(this.scoring,
      this.feeds(this.scoring, ids, mask, pos, B, S, S, candidates, null,
        this.scoreMask.added ? this.scoreMask.name : null), `a ${B}×${S} batch`);
    return this.head(out, candidates.length);
  }

  async prefill(ids: number[], candidates: number[]): Promise<{ out: HeadOutput; state: KvState }> {
    return this.extend({ length: 0, past: new Map() }, ids, candidates);
  }

  async extend(state: KvState, ids: number[], candidates: number[]): Promise<{ out: HeadOutput; state: KvState }> {
    if (!this.gen)
      throw new LobesError('generation needs a model with KV-cache inputs (past_key_values.*)', {
        file: this.a.loaded.file,
        hint:
          `export the model with its KV cache (e.g. optimum --task text-generation-with-past, or the onnxruntime-genai builder), or drop ${
            opt('cot')
          }`,
      });
    if (ids.length === 0) throw new LobesError('nothing to feed');
    if (ids.length > 1 && state.length > 0 && !this.multiTokenExtend) {
      let r = await this.extend(state, [ids[0]!], candidates);
      for (const t of ids.slice(1)) r = await this.extend(r.state, [t], candidates);
      return r;
    }
    const S = ids.length;
    const T = state.length + S;
    const mask = new BigInt64Array(T).fill(1n);
    const pos = i64(Array.from({ length: S }, (_, j) => state.length + j));
    const out = await this.run(this.gen,
      this.feeds(this.gen, i64(ids), mask, pos, 1, S, T, candidates, state.past, null),
      `a generation step (${state.length} cached + ${S} new tokens)`);
    const past = new Map<string, ort.Tensor>();
    // present.{i}.{key,value} outputs feed past_key_values.{i}.{key,value} inputs, matched by order.
    const pastInputs = this.plans.filter((p) => p.role === 'past').map((p) => p.name);
    this.genPresent.forEach((o, i) => past.set(pastInputs[i]!, out[o]!));
    return { out: this.head(out, candidates.length), state: { length: T, past } };
  }

  async close(): Promise<void> {
    await this.scoring.release();
    if (this.gen) await this.gen.release();
  }
}

/** Open the scorer on a model folder (or .onnx file). */
export async function openScorer(modelDir: string, opts: ScorerOptions): Promise<Scorer> {
  const a = analyseModel(modelDir);
  const { plans, mask, inGraphPast, windowCache } = planInputs(a);
  refuseWindowCache(a, windowCache, 'the scorer (lobes eval, ablate --task iae, attend --cot)');
  const hasPast = plans.some((p) => p.role === 'past');
  const model = applyInterventions(a.loaded.model, a.disc, opts.interventions, a.loaded.file).model;
  const scoringGraph = buildLogitHeadModel(model, a.disc, { maskInput: mask, inGraphPast });
  const scoring = await openEditedSession(scoringGraph.model, a.loaded.dir, opts, a.loaded.file);
  let gen: ort.InferenceSession | null = null;
  let genPresent: string[] = [];
  if (opts.generation && hasPast) {
    if (inGraphPast.length)
      throw new LobesError(
        'the model keeps its KV cache in a dtype JavaScript cannot feed (e.g. bfloat16), so lobes cannot generate with it',
        { file: a.loaded.file, hint: 'export the model in float16 or float32' },
      );
    const g = buildLogitHeadModel(model, a.disc, { maskInput: mask, keepPresent: true });
    const nPast = plans.filter((p) => p.role === 'past').length;
    if (g.present.length !== nPast)
      throw new LobesError(`the model has ${nPast} KV-cache inputs but ${g.present.length} KV-cache outputs`, {
        file: a.loaded.file,
      });
    // Fatal messages only: the multi-token probe below is expected to fail on exports whose
    // mask subgraph takes one new token after a cache (onnxruntime-genai's), and a failed step
    // is thrown with onnxruntime's message, so its own red log line would only alarm.
    gen = await openEditedSession(g.model, a.loaded.dir, { ...opts, logSeverityLevel: 4 }, a.loaded.file);
    genPresent = g.present;
  }
  const sc = new OrtScorer(a.info, a, plans, scoring, { name: scoringGraph.maskInput, added: scoringGraph.maskAdded },
    gen, genPresent, hasPast);
  // An edit at the last position edits the last token of each run: a prefix scored once and then
  // extended would have its own last token edited, so prefixes are not shared (one token per step).
  if (!opts.interventions?.some((iv) => iv.positions === 'last')) await sc.probe();
  return sc;
}
