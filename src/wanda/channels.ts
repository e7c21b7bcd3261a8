/**
 * The direct test of what a region compares. A group enters Wanda's score only through its
 * per-channel activation RMS s_g (the pooled map is Σ_j s_g[j] · C[bi, j] over a block's
 * columns, with C the one |W| map all groups share), so two groups' regions differ exactly
 * where their s_g differ. This module tests s_g itself, per capture point and per channel.
 *
 * For channel j of a capture point, with s[j] the RMS over all used samples (the same for
 * every labelling) and n_g the group sizes (N in all):
 *
 *   T_j = Σ_g (n_g / N) · (s_g[j] / s[j] − 1)²          (0 when s[j] = 0)
 *
 * the weighted squared relative deviation of the groups' RMS from the overall RMS. A capture
 * point's statistic is the mean of T_j over its channels. Both are tested against the same
 * label permutations as the regions: p = (1 + #{null ≥ observed}) / (R + 1), per capture point
 * (Holm and Benjamini–Hochberg across capture points) and per channel (Benjamini–Hochberg
 * across the channels of a capture point).
 */
import { nullZ } from '../util/stats.js';
import { declareFamily, indexMembers, type Family } from '../util/families.js';
import { familyVerdicts, type Sizing } from '../util/resolution.js';
import type { WandaChannelTest } from './types.js';
import type { SimdKernel } from './simd.js';

/**
 * T_j for every channel from one labelling's group RMS s [G * d] (group-major) and the group
 * sizes. Group by group over all channels (the additions of each T_j in group order, as a loop
 * over groups inside a loop over channels would do them: the same bits, with typed-array loops).
 */
export function channelSpread(s: ArrayLike<number>, counts: readonly number[], d: number,
  out: Float64Array = new Float64Array(d), work: Float64Array = new Float64Array(d)): Float64Array
{
  const G = counts.length;
  let N = 0;
  for (const c of counts) N += c;
  // Overall RMS from the group RMS: s² = Σ n_g s_g² / N.
  const all = work;
  all.fill(0, 0, d);
  for (let g = 0; g < G; g++) {
    const n = counts[g]!;
    for (let j = 0, o = g * d; j < d; j++, o++) {
      const v = s[o]!;
      all[j] += n * (v * v);
    }
  }
  for (let j = 0; j < d; j++) all[j] = Math.sqrt(all[j]! / N);
  out.fill(0, 0, d);
  for (let g = 0; g < G; g++) {
    const w = counts[g]! / N;
    for (let j = 0, o = g * d; j < d; j++, o++) {
      const a = all[j]!;
      if (a > 0) {
        const e = s[o]! / a - 1;
        out[j] += w * (e * e);
      }
    }
  }
  return out;
}

/** Bytes of channelSpreadSimd's parameters for G groups. */
export const spreadParamBytes = (G: number): number => 16 + 16 * G;

/**
 * channelSpread through the SIMD kernel (the same operations per channel, so the same bits):
 * the group RMS are G rows of d float64 at byte sOff of the kernel's memory, the parameters go
 * to pOff (spreadParamBytes, 8-aligned) and T to outOff, returned as a view (valid until the
 * memory grows or the next call).
 */
export function channelSpreadSimd(k: SimdKernel, sOff: number, d: number, counts: readonly number[], pOff: number,
  outOff: number): Float64Array
{
  const G = counts.length;
  let N = 0;
  for (const c of counts) N += c;
  const mem = k.memory.buffer;
  const head = new Int32Array(mem, pOff, 2);
  head[0] = G;
  head[1] = d * 8;
  const par = new Float64Array(mem, pOff + 8, 1 + 2 * G);
  par[0] = N;
  for (let g = 0; g < G; g++) {
    par[1 + 2 * g] = counts[g]!;
    par[2 + 2 * g] = counts[g]! / N;
  }
  if (d >> 1 > 0) k.spread(sOff, outOff, d >> 1, pOff);
  const out = new Float64Array(mem, outOff, d);
  if (d & 1) {
    // The last channel of an odd dimension: channelSpread of that channel alone.
    const s = new Float64Array(mem, sOff, G * d);
    out[d - 1] = channelSpread(Float64Array.from(counts, (_, g) => s[g * d + d - 1]!), counts, 1)[0]!;
  }
  return out;
}

/** How many top channels each capture point lists. */
export const TOP_CHANNELS = 10;

/** Accumulates the observed spread and its null for one capture point, one labelling at a time. */
export class ChannelNull {
  private observed: Float64Array | null = null;
  private observedS: Float64Array | null = null;
  private readonly ge: Int32Array;
  private readonly layerNull: Float64Array;
  private r = 0;
  private readonly buf: Float64Array;
  private readonly work: Float64Array;
  /** BH over the capture point's channels: a family of d members, declared with the capture point (before any labelling is added). */
  private readonly family: Family;

  constructor(
    readonly hook: string,
    readonly d: number,
    readonly counts: readonly number[],
    readonly R: number,
  ) {
    this.ge = new Int32Array(d);
    this.layerNull = new Float64Array(R);
    this.buf = new Float64Array(d);
    this.work = new Float64Array(d);
    this.family = declareFamily({ name: `channels ${hook}`,
      claim: "a channel's group RMS differs beyond shuffled labels", members: indexMembers(d), correction: 'bh' });
  }

  /** Labelling 0 is the observed one; 1..R the permutations, in order. `spread`: channelSpread(s) when the caller has it (channelSpreadSimd). */
  add(labelling: number, s: ArrayLike<number>, spread?: Float64Array): void {
    const t: Float64Array = spread
      ? (labelling === 0 ? spread.slice() : spread)
      : channelSpread(s, this.counts, this.d, labelling === 0 ? new Float64Array(this.d) : this.buf, this.work);
    if (labelling === 0) {
      this.observed = t;
      this.observedS = Float64Array.from(s as ArrayLike<number>);
      return;
    }
    const obs = this.observed!;
    let sum = 0;
    for (let j = 0; j < this.d; j++) {
      sum += t[j]!;
      if (t[j]! >= obs[j]!) this.ge[j]!++;
    }
    this.layerNull[this.r++] = sum / this.d;
  }

  /** The capture point's result (without the family corrections, which span capture points). */
  result(groups: readonly string[], layer: number): WandaChannelTest {
    const obs = this.observed!;
    const S = this.observedS!;
    const R = this.r;
    let value = 0;
    for (let j = 0; j < this.d; j++) value += obs[j]!;
    value /= this.d;
    let geL = 0;
    let nm = 0;
    for (let r = 0; r < R; r++) {
      if (this.layerNull[r]! >= value) geL++;
      nm += this.layerNull[r]!;
    }
    const pj = R > 0 ? Array.from(this.ge, (c) => (1 + c) / (R + 1)) : null;
    const qj = pj ? this.family.adjust(pj, 'bh') : null;
    const order = Array.from({ length: this.d }, (_, j) => j).sort((a, b) => obs[b]! - obs[a]! || a - b);
    const G = groups.length;
    const top = order.slice(0, TOP_CHANNELS).map((j) => {
      let hi = 0;
      let lo = 0;
      for (let g = 1; g < G; g++) {
        if (S[g * this.d + j]! > S[hi * this.d + j]!) hi = g;
        if (S[g * this.d + j]! < S[lo * this.d + j]!) lo = g;
      }
      const sLo = S[lo * this.d + j]!;
      return {
        channel: j,
        value: obs[j]!,
        p: pj ? pj[j]! : null,
        q: qj ? qj[j]! : null,
        high: groups[hi]!,
        low: groups[lo]!,
        ratio: sLo > 0 ? S[hi * this.d + j]! / sLo : null,
      };
    });
    return {
      hook: this.hook,
      layer,
      channels: this.d,
      value,
      p: R > 0 ? (1 + geL) / (R + 1) : null,
      z: R > 0 ? nullZ(value, this.layerNull.subarray(0, R)) : null,
      nullMean: R > 0 ? nm / R : null,
      pHolm: null,
      pBH: null,
      channelsBH05: qj ? qj.filter((q) => q !== null && q <= 0.05).length : null,
      top,
      ...(qj ? { family: this.family.record() } : {}),
    };
  }
}

/** Holm and Benjamini–Hochberg across the capture points (the layers of the run). */
export function correctChannelFamily(fam: Family, tests: WandaChannelTest[],
  test?: { R: number; sizing?: Sizing }): WandaChannelTest[]
{
  const h = fam.adjust(tests.map((t) => t.p), 'holm');
  const b = fam.adjust(tests.map((t) => t.p), 'bh');
  const v = test && test.R > 0
    ? familyVerdicts(
      tests.map((t) => ({ p: t.p, z: t.z, R: test.R, sizing: test.sizing,
        nullSd: t.p !== null && t.z === null ? 0 : undefined, nullMean: t.nullMean })
      ),
      fam,
    )
    : null;
  return tests.map((t, i) => ({ ...t, pHolm: h[i]!, pBH: b[i]!, ...(v ? { verdict: v[i] } : {}) }));
}
