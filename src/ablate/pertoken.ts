/**
 * The per-token cost ratio of an ablation's specificity rows (AblateSpecificity.perToken;
 * docs/ablate.md, "Length"): each item's change d divided by its continuation's token count, own
 * items' mean over the others' mean, against the same random regions and with the same tests as
 * the row's cost ratio. A longer continuation loses more nats under any region, so a label whose
 * continuations are longer has a raw ratio above 1 without any specificity; its per-token ratio
 * does not.
 */
import { declareFamily, type FamilyRecord } from '../util/families.js';
import { LobesError } from '../util/errors.js';
import { ablationStats, costRatio, mean, ratioTests, specId, type AblateSpecificity,
  type StatsInput } from './stats.js';

/**
 * The per-token cost ratio of each specificity row (in place): d_i / tokens_i for the region and
 * each of its random regions, own items' mean over the others' mean, the same tests as the row's
 * ratio (ratioTests), Holm over the rows for the t p and for the headline p. `perItem(row)` gives
 * the row's per-item changes, its random regions' and the own and other items.
 */
export function perTokenTests(spec: AblateSpecificity[], tokens: ArrayLike<number>,
  perItem: (
    s: AblateSpecificity,
  ) => { d: Float64Array; nd: Float64Array[]; own: number[]; others: number[] } | null): FamilyRecord
{
  // declared from the specificity rows (the plan's regions) before any test runs; a row without its per-item changes stays a member, not tested
  const fam = declareFamily({ name: 'specificity-per-token',
    claim: "zeroing a region costs its own label's items more per token than the others' (every region)",
    members: spec.map(specId) });
  const rows: AblateSpecificity[] = [];
  for (const s of spec) {
    const x = perItem(s);
    if (!x) {
      fam.notTested(specId(s), 'no per-item changes for its region or target');
      continue;
    }
    const perTok = (v: Float64Array) => Float64Array.from(v, (dv, i) => dv / tokens[i]!);
    const side = (v: Float64Array) => {
      const q = perTok(v);
      const own = mean(q, x.own);
      const others = mean(q, x.others);
      return { own, others, ratio: costRatio(own, others) };
    };
    const real = side(x.d);
    const nullRatio = x.nd.map((v) => side(v).ratio);
    s.perToken = { own: real.own, others: real.others, ratio: real.ratio, nullRatio,
      ...ratioTests(real.ratio, nullRatio), ratioPHolm: null, ratioPHeadHolm: null };
    rows.push(s);
  }
  const hT = fam.adjust(spec.map((s) => s.perToken?.ratioP ?? null));
  const hH = fam.adjust(spec.map((s) => s.perToken?.ratioPHead ?? null));
  spec.forEach((s, i) => {
    if (!s.perToken) return;
    s.perToken.ratioPHolm = hT[i]!;
    s.perToken.ratioPHeadHolm = hH[i]!;
  });
  return fam.record();
}

/**
 * ablationStats with the per-token ratio of each specificity row: `tokens` holds each item's
 * continuation token count (the records' continuationTokens), in item order.
 */
export function ablationStatsPerToken(x: StatsInput & { tokens: ArrayLike<number> }): ReturnType<typeof ablationStats> {
  const st = ablationStats(x);
  const N = x.before.length;
  const spec = st.specificity;
  const tokens = x.tokens;
  if (tokens.length !== N) throw new LobesError(`per-token ratio: ${tokens.length} token counts for ${N} items`);
  for (let i = 0; i < N; i++)
    if (!(tokens[i]! >= 1)) throw new LobesError(`per-token ratio: item ${i} has ${tokens[i]} continuation tokens`);
  const delta = (after: Float64Array) => Float64Array.from(after, (a, i) => a - x.before[i]!);
  const fam = perTokenTests(spec, tokens, (s) => {
    const r = x.regions.find((q) => q.name === s.region && q.minus === s.minus);
    const t = x.labels.indexOf(s.target);
    if (!r || t < 0) return null;
    const own: number[] = [];
    const others: number[] = [];
    for (let i = 0; i < N; i++) (x.labelOf[i] === t ? own : others).push(i);
    return { d: delta(r.after), nd: r.random.map(delta), own, others };
  });
  st.families.push(fam);
  return st;
}
