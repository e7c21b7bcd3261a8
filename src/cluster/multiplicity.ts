/**
 * Multiplicity within cluster's own metrics: the permutation and bootstrap p-values of
 * metrics.json come in families, and each p gets its family's Holm-adjusted p (`pHolm`,
 * family-wise error) and Benjamini–Hochberg q (`pBH`, false discovery rate) beside it.
 *
 * Families (one per score: accuracy, balanced accuracy and macro-F1 are adjusted separately):
 * - `classifiers`: the classifiers the report's verdict reads (src/report/verdict.ts), in its
 *   order: the linear probe in the original space, kNN (cosine) in the original space, kNN in the
 *   t-SNE map, and each token baseline's probe. The other classifiers of the file (kNN with the
 *   euclidean distance, the probe on the map's two coordinates, the incremental probes, the
 *   `length` control of `metrics.controls`) are descriptive and are left unadjusted;
 * - `layers`: the probe at every layer of a `--sweep`;
 * - `representation-vs-words`: the paired comparisons of the representation against the words
 *   (`model-vs-words` and `incremental` together: one claim; the length control's (length +
 *   representation) − length is an `incremental` comparison and a member);
 * - `layers-steps`: the layer − previous layer comparisons of a `--sweep`.
 *
 * A missing p (no null) stays out of its family and gets no adjusted value.
 */
import { familyVerdicts, type Sizing } from '../util/resolution.js';
import { declareFamily, type Family } from '../util/families.js';
import type { ClassifierMetrics, ClusterMetrics, ClusterSettings, DifferenceCI, MetricFamily,
  MetricWithCI } from './types.js';

/** The score fields a classifier and a paired comparison carry. */
export const FAMILY_SCORES = ['accuracy', 'balancedAccuracy', 'macroF1'] as const;

/**
 * The classifiers of the verdict, in the verdict's order: [name, classifier]. The names are the
 * keys of `families` in metrics.json (space:classifier, or baseline:NAME).
 */
export function verdictClassifiers(metrics: ClusterMetrics): [string, ClassifierMetrics][] {
  const out: [string, ClassifierMetrics][] = [];
  const space = (name: string) => metrics.spaces.find((s) => s.space === name);
  const eu = space('original-euclidean');
  const cos = space('original-cosine');
  const emb = space('embedding');
  if (eu?.probe) out.push(['original-euclidean:probe', eu.probe]);
  if (cos?.knn) out.push(['original-cosine:knn', cos.knn]);
  if (emb?.knn) out.push(['embedding:knn', emb.knn]);
  for (const b of metrics.baselines ?? []) out.push([`baseline:${b.name}`, b.probe]);
  return out;
}

/** Holm and BH of the p-values of `tests` within `family`, written onto them (pHolm, pBH); a test without p gets null. */
function adjust(family: Family, tests: (MetricWithCI | DifferenceCI | null | undefined)[]): void {
  const p = tests.map((t) => t?.p ?? null);
  const h = family.adjust(p, 'holm');
  const q = family.adjust(p, 'bh');
  tests.forEach((t, i) => {
    if (!t) return;
    t.pHolm = h[i] ?? null;
    t.pBH = q[i] ?? null;
  });
}

/** The verdicts of a family's tests (src/util/resolution.ts), written onto them. */
function judge(family: Family, tests: (MetricWithCI | null | undefined)[],
  sizing: (i: number) => Sizing | undefined): void
{
  const v = familyVerdicts(
    tests.map((t, i) => ({ p: t?.p ?? null, z: t?.z ?? null, R: t?.permutations ?? 0, sizing: sizing(i),
      nullSd: t?.nullSd, nullMean: t?.nullMean })
    ),
    family,
  );
  tests.forEach((t, i) => {
    if (t) t.verdict = v[i];
  });
}

/**
 * Adds pHolm and pBH beside every p of the families above, in place, and each test's verdict
 * within its family (what its permutation count allows; `sizing` says how the counts were set),
 * and records the families (`metrics.families`). Returns the metrics.
 */
export function adjustFamilies(metrics: ClusterMetrics, sizing?: ClusterSettings['sizing']): ClusterMetrics {
  const families: MetricFamily[] = [];
  const cls = verdictClassifiers(metrics);
  if (cls.length) {
    // declared from the verdict's classifiers before any is adjusted; each score is adjusted over them
    const fam = declareFamily({ name: 'classifiers',
      claim: "the labels separate in the representation (the verdict's classifiers, each score)",
      members: cls.map(([n]) => n), correction: ['holm', 'bh'] });
    for (const s of FAMILY_SCORES) adjust(fam, cls.map(([, c]) => c[s]));
    // the kNN classifiers' nulls use --permutations, the probes' --probe-permutations
    const how = (
      i: number,
    ) => (cls[i]![0].endsWith(':knn') ? sizing?.permutations?.sizing : sizing?.probePermutations?.sizing);
    for (const s of FAMILY_SCORES) judge(fam, cls.map(([, c]) => c[s]), how);
    families.push(fam.record() as MetricFamily);
    // The accuracy is also kept as knnAccuracy / probeAccuracy of each space (the same numbers).
    for (const sp of metrics.spaces) {
      for (const [held, c] of [[sp.knnAccuracy, sp.knn], [sp.probeAccuracy, sp.probe]] as const) {
        if (held && c && held !== c.accuracy && c.accuracy.pHolm !== undefined) {
          held.pHolm = c.accuracy.pHolm;
          held.pBH = c.accuracy.pBH;
        }
      }
    }
  }
  const sweep = metrics.sweep ?? [];
  if (sweep.length) {
    const fam = declareFamily({ name: 'layers',
      claim: 'the probe separates the labels at a layer (every layer of the sweep)', members: sweep.map((w) => w.point),
      correction: ['holm', 'bh'] });
    for (const s of FAMILY_SCORES) adjust(fam, sweep.map((w) => w[s]));
    for (const s of FAMILY_SCORES) judge(fam, sweep.map((w) => w[s]), () => sizing?.sweepPermutations?.sizing);
    families.push(fam.record() as MetricFamily);
  }
  // One claim, one family, fixed before any result: "does the representation carry more than
  // the words?" is asked by the representation − words and the (words + representation) − words
  // comparisons together, so they are adjusted together (two families of two would let a split
  // chosen after the fact pass what one family of four does not).
  const kinds: [ProbeKind[], MetricFamily['family'], string][] = [
    [['model-vs-words', 'incremental'], 'representation-vs-words',
      'the representation carries more than the words (representation − words and (words + representation) − words)'],
    [['layers'], 'layers-steps', 'a layer separates the labels better than the layer before it'],
  ];
  for (const [kind, family, claim] of kinds) {
    const comps = (metrics.comparisons ?? []).filter((c) => kind.includes(c.kind));
    if (!comps.length) continue;
    const fam = declareFamily({ name: family, claim, members: comps.map((c) => `${c.a} − ${c.b}`),
      correction: ['holm', 'bh'] });
    for (const s of FAMILY_SCORES) adjust(fam, comps.map((c) => c[s]));
    families.push(fam.record() as MetricFamily);
  }
  if (families.length) metrics.families = families;
  return metrics;
}

type ProbeKind = NonNullable<ClusterMetrics['comparisons']>[number]['kind'];
