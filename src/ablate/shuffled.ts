/**
 * The statistics of the shuffled-label null (docs/ablate.md, "The shuffled-label null",
 * --shuffled S, src/ablate/refit.ts): each region's specificity contrast and cost ratio for its
 * target against those of the regions wanda gives for the same group under S shuffled labellings,
 * their rank p's and z's, and Holm over the regions. The per-cell and random-region statistics
 * they build on are in stats.ts.
 */
import { nullZ } from '../util/stats.js';
import { declareFamily, type FamilyRecord } from '../util/families.js';
import { ablationPlan, adjustRows, specId } from './plan.js';
import { costRatio, lowerP, mean, upperP } from './stats.js';

/**
 * The shuffled-label null of one region (docs/ablate.md, "The shuffled-label null"): the real
 * region's specificity for its target against the regions wanda gives for the same group when
 * the labels are shuffled across the run's rows. Both are scored on the same items with their
 * real labels; S shuffles.
 */
export interface ShuffledLabelRow {
  region: string;
  minus: string | null;
  target: string;
  /** The real region's contrast (mean d of the target's items − mean d of the others) and each shuffled region's. */
  contrast: number;
  nullContrast: number[];
  /** (1 + #{nullContrast ≤ contrast}) / (S + 1), lower: more specific than the shuffled-label regions. */
  contrastP: number;
  /** Holm over the regions of the run. */
  contrastPHolm: number | null;
  contrastZ: number | null;
  /** The cost ratio (own / others, both costs; else null) and each shuffled region's. */
  ratio: number | null;
  nullRatio: (number | null)[];
  /** (1 + #{nullRatio ≥ ratio}) / (S + 1), upper; null without a ratio or when a shuffled region's is undefined. */
  ratioP: number | null;
  ratioPHolm: number | null;
  /** z of ln ratio against the ln nullRatio (costs spread multiplicatively). */
  ratioZ: number | null;
}

/** The shuffled-label rows of every region with a target; Holm over the regions, for the contrast's and the ratio's rank p each. */
export function shuffledLabelTests(
  x: { labels: string[]; labelOf: Int32Array; before: Float64Array;
    regions: { name: string; minus: string | null; after: Float64Array; shuffled: Float64Array[] }[] },
): { rows: ShuffledLabelRow[]; family: FamilyRecord } {
  const N = x.before.length;
  // declared from the plan (every region whose target is a label with items and some other item) before any test runs
  const fam = declareFamily({ name: 'shuffled-label-regions',
    claim: 'a region is more specific than the regions of shuffled labels (every region)',
    members: ablationPlan(x).spec.map(specId) });
  const rows: ShuffledLabelRow[] = [];
  for (const r of x.regions) {
    const t = x.labels.indexOf(r.name);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < N; i++) (x.labelOf[i] === t ? a : b).push(i);
    if (t < 0 || !a.length || !b.length) continue;
    const side = (after: Float64Array) => {
      const d = Float64Array.from(after, (v, i) => v - x.before[i]!);
      const ma = mean(d, a);
      const mb = mean(d, b);
      return { contrast: ma - mb, ratio: costRatio(ma, mb) };
    };
    const real = side(r.after);
    const nulls = r.shuffled.map(side);
    const nullContrast = nulls.map((v) => v.contrast);
    const nullRatio = nulls.map((v) => v.ratio);
    const ratios = nullRatio.every((v) => v !== null) ? (nullRatio as number[]) : null;
    rows.push({
      region: r.name,
      minus: r.minus,
      target: r.name,
      contrast: real.contrast,
      nullContrast,
      contrastP: lowerP(real.contrast, nullContrast),
      contrastPHolm: null,
      contrastZ: nullZ(real.contrast, nullContrast),
      ratio: real.ratio,
      nullRatio,
      ratioP: real.ratio === null || ratios === null ? null : upperP(real.ratio, ratios),
      ratioPHolm: null,
      ratioZ: real.ratio === null || ratios === null ? null : nullZ(Math.log(real.ratio), ratios.map(Math.log)),
    });
  }
  const hc = adjustRows(fam, rows, specId, (s) => s.contrastP);
  const hr = adjustRows(fam, rows, specId, (s) => s.ratioP);
  rows.forEach((s, i) => {
    s.contrastPHolm = hc[i]!;
    s.ratioPHolm = hr[i]!;
  });
  return { rows, family: fam.record() };
}
