/**
 * The verdict table of one label axis: one row per question the run's analyses answer (the
 * classifiers and silhouettes of cluster, the wanda region families, the ablation's specificity),
 * each with its value, chance, null, Holm-adjusted p and verdict in a word or three, and the same
 * table as plain-text lines for a terminal. Its verdicts are the objects of src/util/resolution.ts
 * that the plain-words lines of ./verdict.ts are made from (the classifier family and the wanda
 * families come from there).
 */
import { declareFamily } from '../util/families.js';
import type { ClusterMetrics, ClusterSettings } from '../cluster/types.js';
import type { WandaMetrics, WandaSettings } from '../wanda/types.js';
import type { AblatePayload, VerdictTable, VerdictTableRow } from './types.js';
import { familyVerdicts, formatP, type Verdict } from '../util/resolution.js';
import { ALPHA, beatsChance, classifierFamily, verdictsOf, wandaVerdicts } from './verdict.js';

const f2 = (v: number) => v.toFixed(2);
const fp = formatP;

/**
 * A verdict in a word or three, for the verdict table: "above chance" (`pass` names a passing
 * test's direction), "at chance", "not testable at R = 49", "degenerate null", "untested"; a
 * verdict read on the normal approximation says so.
 */
export function verdictWord(v: Verdict, pass = 'above chance'): string {
  const normal = v.basis === 'normal' ? ' (normal approx.)' : '';
  switch (v.status) {
    case 'pass':
      return pass + normal;
    case 'fail':
      return 'at chance' + normal;
    case 'not-testable':
      return `not testable at R = ${v.R}`;
    case 'degenerate':
      return 'degenerate null';
    default:
      return 'untested';
  }
}

/** "0.45 [0.43, 0.47]". */
const withCi = (m: { value: number; ci95: [number, number] | null }) =>
  `${f2(m.value)}${m.ci95 ? ` [${f2(m.ci95[0])}, ${f2(m.ci95[1])}]` : ''}`;
/** "0.20 [0.17, 0.23]", or '' without a null. */
const nullText = (
  m: { nullMean?: number | null; nullBand?: [number, number] | null },
) => (m.nullMean === null || m.nullMean === undefined
  ? ''
  : `${f2(m.nullMean)}${m.nullBand ? ` [${f2(m.nullBand[0])}, ${f2(m.nullBand[1])}]` : ''}`);

/** The deciding p of a verdict, adjusted within its family, with the family named: "0.004 (Holm over 5 in family classifiers)" (files without family names: "Holm over 5 classifiers"). */
export function adjustedP(v: Verdict, noun: string): string {
  if (v.status === 'degenerate' || v.status === 'untested') return '';
  const p = v.adjusted ?? v.p;
  if (p === null) return '';
  const floor = v.atFloor && v.basis === 'permutation' ? `; raw p at the floor 1/(R+1), R = ${v.R}` : '';
  const what = v.basis === 'normal' ? 'normal approx. p, ' : '';
  return v.family > 1 ? `${fp(p)} (${what}${holmOver(v, noun)}${floor})` : `${fp(p)} (${what}one test${floor})`;
}

/** "Holm over 5 in family classifiers", naming the declared family the verdict was adjusted in (older files: "Holm over 5 classifiers"). */
const holmOver = (v: Verdict,
  noun: string) => (v.familyName ? `Holm over ${v.family} in family ${v.familyName}` : `Holm over ${v.family} ${noun}`);

/** A table row's status from its verdict, where a test without a null may still be read from its CI. */
const rowStatus = (v: Verdict): VerdictTableRow['status'] => v.status;

/**
 * The family of a set of tests read as one row: its verdict is the number of members that pass
 * ("3 of 10 below chance"), else every member's shared status.
 */
function familyRow(question: string, anchor: string, vs: Verdict[], value: string, chance: string, nul: string,
  noun: string, pass: string): VerdictTableRow | null
{
  if (!vs.length) return null;
  const passed = vs.filter((v) => v.status === 'pass').length;
  const blind = vs.filter((v) => v.status === 'not-testable');
  const tested = vs.filter((v) => v.adjusted !== null);
  const best = tested.length ? tested.reduce((a, b) => (b.adjusted! < a.adjusted! ? b : a)) : null;
  const p = best ? `${fp(best.adjusted!)} (the smallest; ${holmOver(best, noun)})` : '';
  let status: VerdictTableRow['status'];
  let verdict: string;
  if (passed) [status, verdict] = ['pass', `${pass} in ${passed} of ${vs.length}`];
  else if (blind.length &&
    blind.length === vs.filter((v) => v.status !== 'degenerate' && v.status !== 'untested').length)
    [status, verdict] = ['not-testable', `not testable at R = ${blind[0]!.R}`];
  else if (vs.every((v) => v.status === 'degenerate')) [status, verdict] = ['degenerate', 'degenerate null'];
  else if (vs.every((v) => v.status === 'untested')) [status, verdict] = ['untested', 'untested'];
  else [status, verdict] = ['fail', `at chance in all ${vs.length}`];
  if (vs.some((v) => v.basis === 'normal')) verdict += ' (normal approx.)';
  return { question, anchor, value, chance, nul, p, verdict, status };
}

const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
};

/**
 * The verdict table of one label axis: one row per question the run's analyses answer, with the
 * numbers the metrics files hold and the verdicts of src/util/resolution.ts (the same objects
 * verdictLines words). Rows link to the page's sections: `metrics` (separation), `regions`
 * (wanda), `ablation`. Null when the run holds none of these analyses.
 */
export function verdictTable(metrics: ClusterMetrics | null, settings: ClusterSettings | null,
  wanda: WandaSettings | null | undefined, wandaMetrics: WandaMetrics | null | undefined,
  ablate?: AblatePayload | null): VerdictTable | null
{
  const rows: VerdictTableRow[] = [];
  const axis = settings?.by ?? wanda?.by ?? ablate?.by ?? 'label';
  if (metrics) {
    const C = metrics.classes.length;
    const chance = metrics.chance?.balancedAccuracy ?? 1 / C;
    const point = settings?.point ? ` at ${settings.point}` : '';
    const q = (name: string, c: { model: boolean; knn: boolean }) => {
      if (!c.model)
        return `Do the texts' tokens alone separate "${axis}"? (${
          name.replace(/^Tokens alone, /, '')
        }, balanced accuracy)`;
      if (name.includes('t-SNE'))
        return `Does the t-SNE map keep the ${C} values of "${axis}" apart? (${
          name.replace(/ in the t-SNE map$/, '')
        } in the map, balanced accuracy)`;
      return `Does the representation${point} separate the ${C} values of "${axis}"? (${
        name.replace(/ on the representation/, '').replace(/^Linear probe \((.*)\)$/, 'linear probe, $1')
      }, balanced accuracy)`;
    };
    for (const r of classifierFamily(metrics, settings)) {
      const b = r.c.balancedAccuracy;
      let verdict = verdictWord(r.v);
      let status = rowStatus(r.v);
      if (r.v.status === 'untested') {
        const ci = beatsChance(b, chance);
        if (ci !== null)
          [verdict, status] = ci ? ['above chance (its CI, no null)', 'pass'] : ['at chance (its CI, no null)', 'fail'];
      }
      rows.push({ question: q(r.name, r), anchor: 'metrics', value: withCi(b), chance: f2(chance), nul: nullText(b),
        p: adjustedP(r.v, 'classifiers'), verdict, status });
    }
    const sil = metrics.spaces.filter((s) => s.silhouette);
    const sv = verdictsOf(sil.map((s) => s.silhouette), () => settings?.permutations ?? 0,
      () => settings?.sizing?.permutations?.sizing);
    const spaceName = (s: string) => (s === 'embedding' ? 't-SNE map' : s.replace(/^original-/, ''));
    sil.forEach((s, i) => {
      const v = sv[i]!;
      rows.push({
        question: `Do items of one value of "${axis}" lie nearer each other than other values' items? (silhouette, ${
          spaceName(s.space)
        })`,
        anchor: 'metrics',
        value: withCi(s.silhouette),
        chance: '',
        nul: nullText(s.silhouette),
        p: adjustedP(v, 'spaces'),
        verdict: verdictWord(v),
        status: rowStatus(v),
      });
    });
  }
  if (wanda && wandaMetrics && wandaMetrics.permutations) {
    const R = wandaMetrics.permutations;
    const m = wandaMetrics;
    const jv = wandaVerdicts(m.pairs.map((p) => p.jaccard), R, true, 'region-pairs');
    const js = m.pairs.map((p) => p.jaccard.value);
    const jn = m.pairs.map((p) => p.jaccard.nullMean ?? NaN);
    const many = m.pairs.length > 1;
    const row = familyRow(
      `Do the neuron regions of the values of "${wanda.by}" overlap less than shuffled labels' regions? (wanda region Jaccard, ${m.pairs.length} pair${
        many ? 's' : ''
      })`,
      'regions',
      jv,
      many ? `median ${f2(median(js))} (${f2(Math.min(...js))} to ${f2(Math.max(...js))})` : f2(js[0] ?? NaN),
      '',
      many ? `median ${f2(median(jn))}` : f2(jn[0] ?? NaN),
      'pairs',
      'below chance',
    );
    if (row) rows.push(row);
    const pl = m.pairs.flatMap((p) => [p.placementAminusB, p.placementBminusA]).filter((
      x,
    ): x is NonNullable<typeof x> => !!x);
    if (pl.length) {
      const ratio = pl.map((x) => x.densityRatio).filter((x): x is number => x !== null);
      const pv = wandaVerdicts(pl.map((x) => x.density), R, false, 'placement-set-differences');
      const r2 = familyRow(
        `Are the set differences (A∖B) denser than random blocks of their size? (wanda region isolation, ${pl.length} differences)`,
        'regions',
        pv,
        `median ${f2(median(ratio))}× a random set's density`,
        '1.00×',
        '',
        'differences',
        'denser',
      );
      if (r2) rows.push(r2);
    }
    if (m.channels?.length) {
      const cv = wandaVerdicts(m.channels, R, false, 'capture-points');
      const r3 = familyRow(
        `Does the groups' activation RMS differ beyond shuffled labels? (wanda channels, ${m.channels.length} capture points)`,
        'regions',
        cv,
        `median ${median(m.channels.map((c) => c.value)).toExponential(2)}`,
        '',
        `median ${median(m.channels.map((c) => c.nullMean ?? NaN)).toExponential(2)}`,
        'capture points',
        'differs',
      );
      if (r3) rows.push(r3);
    }
  }
  if (ablate && ablate.specificity.length) {
    const sp = ablate.specificity;
    const fam = declareFamily({ name: 'specificity',
      claim: "zeroing a region costs its own label's items more than the others'", members: sp.map((s) => s.region) });
    const vs = familyVerdicts(sp.map((s) => ({ p: s.p, R: ablate.random })), fam, ALPHA);
    const best = sp.reduce((a, b) => (b.contrast > a.contrast ? b : a));
    const r = familyRow(
      `Does zeroing a region cost its own label's items more than the others'? (ablation specificity, ${sp.length} region${
        sp.length === 1 ? '' : 's'
      }, ${ablate.random} random regions)`,
      'ablation',
      vs,
      `largest ${f2(best.contrast)} [${f2(best.ci[0])}, ${f2(best.ci[1])}] (${best.region})`,
      '',
      `${f2(best.nullMean)} [${f2(best.nullBand[0])}, ${f2(best.nullBand[1])}]`,
      'regions',
      'specific',
    );
    if (r) rows.push(r);
  }
  return rows.length ? { axis, rows } : null;
}

/** A verdict table as plain-text lines for a terminal: one block per row, the question then its numbers. */
export function verdictTableLines(t: VerdictTable): string[] {
  const out = [
    `Verdicts for "${t.axis}" (value [95% CI] | chance | null mean [95% band] | adjusted p (family) | verdict):`,
  ];
  for (const r of t.rows) {
    out.push(`  ${r.question}`);
    out.push(
      `    ${r.verdict.toUpperCase()}: ${r.value}${r.chance ? ` | chance ${r.chance}` : ''}${
        r.nul ? ` | null ${r.nul}` : ''
      }${r.p ? ` | p ${r.p}` : ''}`,
    );
  }
  return out;
}
