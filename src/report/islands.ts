/**
 * Which label axis the islands of a 2-D map follow. A t-SNE map is coloured by the axis the run
 * was clustered by, but its islands may follow another (on SocialEval: language, not aspect). For
 * each label axis the page can colour by, this measures how well a point's neighbours in the map
 * predict its value:
 *
 *   kNN balanced accuracy in the map: each point's k = 10 nearest other points (Euclidean, in the
 *   2-D map) vote, ties going to the tied class met first (nearest); balanced accuracy is the mean
 *   recall over the axis's C classes, so chance is 1/C for any vote that ignores the map.
 *   Adjusted: (BA − 1/C) / (1 − 1/C), 0 at chance and 1 when neighbours always agree, so axes with
 *   different numbers of classes compare on one scale (scikit-learn's balanced_accuracy_score
 *   with adjusted=True).
 *   Null: the same statistic after shuffling the axis's values over the points (P = 200 seeded
 *   permutations; the map and its neighbour lists stay fixed); p one-sided, +1 corrected.
 *
 * Maps of more than 4,000 points are measured on a seeded sample of 4,000 (neighbours within the
 * sample), which keeps the cost to a few tens of milliseconds.
 */
import { Rng } from '../util/rng.js';
import type { AxisFit } from './types.js';

export type { AxisFit } from './types.js';

export const ISLAND_K = 10;
export const ISLAND_PERMUTATIONS = 200;
export const ISLAND_MAX_POINTS = 4000;

/** The k nearest other points of each point of a 2-D map (brute force), nearest first: n·k indices. */
export function mapNeighbours(x: ArrayLike<number>, y: ArrayLike<number>, k: number): Int32Array {
  const n = x.length;
  const kk = Math.min(k, n - 1);
  const out = new Int32Array(n * kk);
  const bd = new Float64Array(kk);
  const bi = new Int32Array(kk);
  for (let i = 0; i < n; i++) {
    let m = 0;
    const xi = x[i]!;
    const yi = y[i]!;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const dx = x[j]! - xi;
      const dy = y[j]! - yi;
      const d = dx * dx + dy * dy;
      if (m === kk && d >= bd[kk - 1]!) continue;
      // insertion into the sorted best list (ties keep the lower index first)
      let p = m < kk ? m++ : kk - 1;
      while (p > 0 && bd[p - 1]! > d) {
        bd[p] = bd[p - 1]!;
        bi[p] = bi[p - 1]!;
        p--;
      }
      bd[p] = d;
      bi[p] = j;
    }
    out.set(bi.subarray(0, kk), i * kk);
  }
  return out;
}

/** Balanced accuracy of the neighbours' vote for labels y (0..C−1); classes without points are left out of the mean. */
export function neighbourVoteBA(nb: Int32Array, k: number, y: Int32Array, C: number): number {
  const n = y.length;
  const votes = new Int32Array(C);
  const hit = new Float64Array(C);
  const size = new Float64Array(C);
  for (let i = 0; i < n; i++) {
    votes.fill(0);
    let best = -1;
    let bestV = 0;
    for (let t = 0; t < k; t++) {
      const c = y[nb[i * k + t]!]!;
      votes[c]!++;
    }
    // the most votes; among tied classes, the one met first in nearest-first order
    for (let t = 0; t < k; t++) {
      const c = y[nb[i * k + t]!]!;
      if (votes[c]! > bestV) {
        bestV = votes[c]!;
        best = c;
      }
    }
    size[y[i]!]!++;
    if (best === y[i]) hit[y[i]!]!++;
  }
  let s = 0;
  let m = 0;
  for (let c = 0; c < C; c++) {
    if (size[c]! > 0) {
      s += hit[c]! / size[c]!;
      m++;
    }
  }
  return m ? s / m : 0;
}

/** The fit of every axis (codes per point, C classes each) to the map (x, y). */
export function axisFits(x: ArrayLike<number>, y: ArrayLike<number>,
  axes: { axis: string; codes: Int32Array; classes: number }[], seed = 0): AxisFit[]
{
  const N = x.length;
  if (N < ISLAND_K + 2) return [];
  const rng = new Rng(seed);
  // the points measured: all, or a seeded sample
  let rows: Int32Array;
  if (N <= ISLAND_MAX_POINTS) rows = Int32Array.from({ length: N }, (_, i) => i);
  else {
    const all = Int32Array.from({ length: N }, (_, i) => i);
    for (let i = 0; i < ISLAND_MAX_POINTS; i++) {
      const j = i + rng.int(N - i);
      const t = all[i]!;
      all[i] = all[j]!;
      all[j] = t;
    }
    rows = all.slice(0, ISLAND_MAX_POINTS).sort();
  }
  const n = rows.length;
  const sx = Float64Array.from(rows, (r) => x[r]!);
  const sy = Float64Array.from(rows, (r) => y[r]!);
  const k = Math.min(ISLAND_K, n - 1);
  const nb = mapNeighbours(sx, sy, k);
  const out: AxisFit[] = [];
  for (const a of axes) {
    const lab = Int32Array.from(rows, (r) => a.codes[r]!);
    const present = new Set(lab).size;
    if (present < 2) continue;
    const C = present;
    const ba = neighbourVoteBA(nb, k, lab, a.classes);
    const perm = lab.slice();
    const nulls = new Float64Array(ISLAND_PERMUTATIONS);
    let ge = 0;
    for (let p = 0; p < ISLAND_PERMUTATIONS; p++) {
      for (let i = n - 1; i > 0; i--) {
        const j = rng.int(i + 1);
        const t = perm[i]!;
        perm[i] = perm[j]!;
        perm[j] = t;
      }
      nulls[p] = neighbourVoteBA(nb, k, perm, a.classes);
      if (nulls[p]! >= ba) ge++;
    }
    nulls.sort();
    const q = (f: number) => nulls[Math.min(nulls.length - 1, Math.max(0, Math.round(f * (nulls.length - 1))))]!;
    const chance = 1 / C;
    out.push({
      axis: a.axis,
      classes: C,
      n,
      balancedAccuracy: ba,
      chance,
      adjusted: (ba - chance) / (1 - chance),
      nullMean: nulls.reduce((s, v) => s + v, 0) / nulls.length,
      nullBand: [q(0.025), q(0.975)],
      p: (ge + 1) / (ISLAND_PERMUTATIONS + 1),
    });
  }
  return out;
}

const f2 = (v: number) => v.toFixed(2);

/** How much better another axis must fit (on the adjusted scale) before the first lines say so. */
export const ISLAND_MARGIN = 0.1;

/**
 * The first line when the map's islands follow another axis better than the one it is coloured by:
 * that axis beats its null (p ≤ 0.05) and its adjusted balanced accuracy is ISLAND_MARGIN higher.
 * Null when the chosen axis fits best (or nearly), or when it is not among the fits.
 */
export function islandLine(fits: AxisFit[], chosen: string): string | null {
  const own = fits.find((f) => f.axis === chosen);
  if (!own) return null;
  const best = fits.filter((f) => f.axis !== chosen && f.p <= 0.05).sort((a, b) => b.adjusted - a.adjusted)[0];
  if (!best || best.adjusted < own.adjusted + ISLAND_MARGIN) return null;
  const one = (f: AxisFit) =>
    `${f2(f.balancedAccuracy)} for ${f.axis} (chance ${f2(f.chance)}, null ${f2(f.nullMean)} [${f2(f.nullBand[0])}, ${
      f2(f.nullBand[1])
    }], p = ${f.p < 0.001 ? f.p.toExponential(1) : f.p.toFixed(3)}; adjusted ${f2(f.adjusted)})`;
  return `The map's islands follow "${best.axis}" better than "${chosen}", the label it is coloured by: the ${ISLAND_K} nearest points in the 2-D map predict a point's ${best.axis} with balanced accuracy ${
    one(best)
  }, against ${one(own)}. ` +
    `Adjusted: 0 at chance, 1 when neighbours always agree. Recolour the map by ${best.axis} to see it.`;
}
