/**
 * The report's first lines: in plain words, which separation numbers beat chance and by how
 * much, and which analyses are too coarse to read.
 *
 * A classifier (the linear probe, the kNN classifier, a token baseline) "beats chance" when its
 * balanced accuracy beats its own label-permutation null (one-sided p ≤ 0.05); without a null,
 * when the lower end of its bootstrap CI is above chance (1/C). Labels are called "separated"
 * only when some classifier's balanced accuracy beats chance: accuracy alone never counts, since
 * always answering the most frequent class already scores the majority rate. The classifiers of
 * one verdict are one family: their permutation p-values are Holm-adjusted together, and a
 * classifier beats chance when its adjusted p is ≤ 0.05. A p at the permutation floor 1/(R + 1)
 * is marked as such (it says only that no shuffle did as well).
 *
 * Neuron regions get one line: how many region pairs overlap less than the label-permutation
 * null gives (Jaccard), how many differences are denser than random blocks of their size, and
 * in how many capture points the groups' activation RMS differs, each counted after Holm
 * within its family.
 *
 * The verdict table made from the same verdicts (one row per question) is in ./verdict-table.ts.
 */
import { declareFamily, indexMembers } from '../util/families.js';
import type { ClassifierMetrics, ClusterMetrics, ClusterSettings, MetricWithCI } from '../cluster/types.js';
import type { NullTested, WandaMetrics, WandaSettings } from '../wanda/types.js';
import { binomialUpper } from '../util/stats.js';
import { familyVerdicts, formatP, verdictNumbers, verdictWords, type Sizing,
  type Verdict } from '../util/resolution.js';

/** Significance level of the statements. */
export const ALPHA = 0.05;

const f2 = (v: number) => v.toFixed(2);
const fp = formatP;

/** Whether a balanced accuracy beats chance: its null (p ≤ ALPHA), else its CI against 1/C; null when untested. */
export function beatsChance(m: MetricWithCI, chance: number): boolean | null {
  if (m.p !== null && m.p !== undefined) return m.p <= ALPHA;
  if (m.ci95) return m.ci95[0] > chance;
  return null;
}

/**
 * The verdicts of a family of tests as their metrics record them (metrics.json written by this
 * version), else computed here from their p, z and permutation counts (`R` when the file does not
 * record them; how they were sized unknown, so each is read as the permutation test it was).
 */
export function verdictsOf(tests: MetricWithCI[], R: (i: number) => number,
  sizing?: (i: number) => Sizing | undefined): Verdict[]
{
  if (tests.every((t) => t.verdict)) return tests.map((t) => t.verdict!);
  const fam = declareFamily({ name: 'classifiers',
    claim: 'the labels separate in the representation (recomputed from a file without verdicts)',
    members: indexMembers(tests.length) });
  return familyVerdicts(
    tests.map((t, i) => ({ p: t.p, z: t.z ?? null, R: t.permutations ?? R(i), sizing: sizing?.(i), nullSd: t.nullSd,
      nullMean: t.nullMean })
    ),
    fam,
    ALPHA,
  );
}

/** "balanced accuracy 0.45 [0.43, 0.47] vs chance 0.20 (null 0.20 [0.17, 0.23], p = 0.02, z = 3.0, normal approx. p = 0.001, Holm 0.04 over 2 classifiers)". */
export function describeBalanced(m: MetricWithCI, chance: number, v?: Verdict): string {
  const ci = m.ci95 ? ` [${f2(m.ci95[0])}, ${f2(m.ci95[1])}]` : '';
  const nul = m.nullMean !== null && m.nullMean !== undefined
    ? `null ${f2(m.nullMean)}${m.nullBand ? ` [${f2(m.nullBand[0])}, ${f2(m.nullBand[1])}]` : ''}, `
    : '';
  const p = v
    ? verdictNumbers(v, 'classifiers')
    : m.p !== null && m.p !== undefined
    ? `p = ${fp(m.p)}`
    : 'no permutation null';
  return `balanced accuracy ${f2(m.value)}${ci} vs chance ${f2(chance)} (${nul}${p})`;
}

/** One row of the verdict: a classifier, its verdict object, and the sentence made from it. */
export interface Row {
  name: string;
  c: ClassifierMetrics;
  model: boolean;
  knn: boolean;
  v: Verdict;
  text: string;
}

/** One classifier's sentence from its verdict. */
function classifierLine(name: string, c: ClassifierMetrics, chance: number, majority: number, v: Verdict): string {
  const b = c.balancedAccuracy;
  // without a null, the CI against chance (no verdict object is needed for that)
  const noNull = v.status === 'untested' ? beatsChance(b, chance) : null;
  const ref = b.nullMean ?? chance;
  const gain = b.value - ref;
  const verdict = v.status === 'untested'
    ? (noNull === null
      ? 'not tested against chance'
      : noNull
      ? `above chance by ${f2(b.value - chance)} (its CI, no null)`
      : 'not above chance (its CI, no null)')
    : verdictWords(v, `above chance by ${f2(gain)}`, 'not above chance');
  const acc = c.accuracy.value;
  const accNote = acc <= majority + 1e-9
    ? `accuracy ${f2(acc)} is no better than the majority-class guess (${f2(majority)})`
    : `accuracy ${f2(acc)} (majority-class guess ${f2(majority)})`;
  return `${name}: ${describeBalanced(b, chance, v)}: ${verdict}; ${accNote}.`;
}

/** Whether a row's verdict separates (its own test, or without a null its CI). */
function passes(r: Row, chance: number): boolean {
  return r.v.status === 'pass' || (r.v.status === 'untested' && beatsChance(r.c.balancedAccuracy, chance) === true);
}

/** The names of rows, as a list in words. */
const names = (rs: Row[]) => rs.map((r) => r.name.replace(/ \(.*\)$/, '')).join('; ');

/**
 * The headline from the model rows' verdicts: separated (some pass), not separated (every tested
 * one fails), or not testable (none passes and some could not have: their permutation counts are
 * too few for the family). Never "not separated" when a row could not have passed.
 */
function headline(rows: Row[], chance: number): string[] {
  const model = rows.filter((r) => r.model);
  if (!model.length) return [];
  const tested = rows.filter((r) => r.v.status !== 'untested').length;
  if (model.every((r) => r.v.status === 'untested' && beatsChance(r.c.balancedAccuracy, chance) === null))
    return ['Not tested: without permutations or bootstrap resamples no number is read against chance.'];
  const sep = model.filter((r) => passes(r, chance));
  const blind = model.filter((r) => r.v.status === 'not-testable');
  const noP = model.filter((r) => r.v.status === 'degenerate');
  const normal = model.some((r) => r.v.basis === 'normal')
    ? ' (read on the normal approximation of z where the default permutations were held down for cost, flagged on each line)'
    : '';
  const extra = [
    blind.length
      ? `${blind.length} not testable at R = ${[...new Set(blind.map((r) => r.v.R))].join(', ')} (${names(blind)})`
      : '',
    noP.length ? `${noP.length} without a p (a null with no spread: ${names(noP)})` : '',
  ].filter(Boolean).join('; ');
  if (sep.length)
    return [
      `Separated beyond chance by ${sep.length} of ${model.length} classifiers on the representation (balanced accuracy against its permutation null, Holm-adjusted p ≤ ${ALPHA} over the ${tested} classifiers tested)${normal}${
        extra ? `; ${extra}` : ''
      }.`,
    ];
  if (blind.length) {
    const need = Math.max(...blind.map((r) => r.v.needed));
    return [
      `Not testable at R = ${[...new Set(blind.map((r) => r.v.R))].join(', ')}: ${
        names(blind)
      } cannot reach a Holm-adjusted p ≤ ${ALPHA} over ${
        blind[0]!.v.family
      } classifiers with so few permutations (${need} would), so the representation's separation is not decided; ${
        model.length - blind.length - noP.length
      } other classifier${
        model.length - blind.length - noP.length === 1 ? '' : 's'
      } on the representation tested without passing.`,
    ];
  }
  return [
    `Not separated: no classifier's balanced accuracy on the representation beats its permutation null (Holm-adjusted p ≤ ${ALPHA})${normal}${
      extra ? `; ${extra}` : ''
    }; accuracy alone does not count.`,
  ];
}

/** The representation's probe against the best token baseline, from the same rows' verdicts. */
function tokenLine(probe: Row, bases: Row[], rows: Row[], chance: number): string {
  const best = bases.reduce((a, b) => (b.c.balancedAccuracy.value > a.c.balancedAccuracy.value ? b : a));
  const bn = best.name.replace(/^Tokens alone, /, '').replace(/ probe$/, '');
  const d = probe.c.balancedAccuracy.value - best.c.balancedAccuracy.value;
  const bv = f2(best.c.balancedAccuracy.value);
  const pv = f2(probe.c.balancedAccuracy.value);
  const sep = rows.some((r) => r.model && passes(r, chance));
  if (d > 0)
    return `The representation's probe beats the best token baseline (${bn}) by ${
      f2(d)
    } balanced accuracy (difference of point estimates; compare runs for a CI).`;
  if (passes(best, chance) && !sep) {
    const pw = probe.v.status === 'not-testable'
      ? `is not testable at R = ${probe.v.R}`
      : probe.v.status === 'degenerate'
      ? 'has no p'
      : 'does not';
    return `The tokens alone separate the labels (${bn} ${bv} balanced accuracy) where the representation's probe ${pw} (${pv})${
      probe.v.status === 'fail' ? ": what the texts' tokens carry does not reach this representation" : ''
    }.`;
  }
  if (sep)
    return `The tokens alone do at least as well: ${bn} ${bv} vs the representation's probe ${pv} balanced accuracy, so the separation need not come from what the model computes.`;
  return `The tokens alone score at least as high (${bn} ${bv} vs the representation's probe ${pv} balanced accuracy), and are themselves ${
    verdictWords(best.v, 'above chance', 'not above chance')
  }.`;
}

/**
 * The layer sweep read as one family: how many layers' probe balanced accuracy beats its
 * permutation null before and after Holm across the layers, and whether the permutations
 * allow any layer to pass at all (1/(R+1) · L ≤ 0.05).
 */
export function sweepLines(metrics: ClusterMetrics, settings: ClusterSettings | null): string[] {
  const sw = (metrics.sweep ?? []).filter((s) =>
    s.balancedAccuracy && s.balancedAccuracy.p !== null && s.balancedAccuracy.p !== undefined
  );
  if (!sw.length) return [];
  const ps = sw.map((s) => s.balancedAccuracy!.p!);
  const L = sw.length;
  const raw = ps.filter((p) => p <= ALPHA).length;
  const R = settings?.sweepPermutations;
  const vs = verdictsOf(sw.map((s) => s.balancedAccuracy!), () => R ?? 0,
    () => settings?.sizing?.sweepPermutations?.sizing);
  const passed = vs.filter((v) => v.status === 'pass').length;
  if (vs.some((v) => v.basis === 'normal')) {
    const v = vs.find((x) => x.basis === 'normal')!;
    return [
      `Layer sweep: the probe's balanced accuracy beats its null in ${passed} of ${L} layers after Holm across the layers, read on the normal approximation of each layer's z (${
        R ?? v.R
      } permutations per layer is below the ${v.needed} the ${L} layers need for a permutation p to pass; the count was held down for cost, so these p-values assume a normal null) (${raw} at permutation p ≤ ${ALPHA}).`,
    ];
  }
  const floor = R ? 1 / (R + 1) : Math.min(...ps);
  // Were the layers independent, P(at least `raw` of L at p ≤ α) under the null: small means the layers together beat chance.
  const tail = raw ? binomialUpper(raw, L, ALPHA) : 1;
  const rawText = !raw
    ? 'none reaches p ≤ 0.05 either'
    : tail > ALPHA
    ? `the ${raw} layer${raw > 1 ? 's' : ''} at p ≤ ${ALPHA} ${raw > 1 ? 'are' : 'is'} about what chance gives (${
      f2(L * ALPHA)
    } expected)`
    : `the ${raw} layers at p ≤ ${ALPHA} are far more than chance gives (${
      f2(L * ALPHA)
    } expected), so the layers together beat chance though no single layer can be named; read each layer's z`;
  const reach = floor * L > ALPHA
    ? ` With ${R ? `${R} permutations per layer` : 'these permutations'} the smallest p is ${
      floor.toFixed(3)
    }, so no layer can pass Holm across ${L} layers; ${rawText}.`
    : '';
  return [
    `Layer sweep: the probe's balanced accuracy beats its permutation null in ${passed} of ${L} layers after Holm across the layers (${raw} before).${reach}`,
  ];
}

/**
 * One family of region tests in words: "3 of 20 … after Holm (5 before)", or "not testable at R =
 * 199 (…)" when no member could pass, with the normal-approximation reading flagged.
 */
function familyCount(vs: (Verdict | undefined)[], raw: number, what: string, also = ''): string {
  const got = vs.filter((v): v is Verdict => !!v);
  const n = vs.length;
  const blind = got.filter((v) => v.status === 'not-testable');
  if (got.length && blind.length === got.length) {
    const v = blind[0]!;
    return `the ${n} ${what}: not testable at R = ${v.R} (${v.reason}; ${raw} at raw p ≤ ${ALPHA}${
      also ? `; ${also}` : ''
    })`;
  }
  const pass = got.filter((v) => v.status === 'pass').length;
  const normal = got.some((v) => v.basis === 'normal')
    ? `, on the normal approximation of z (${
      got.find((v) => v.basis === 'normal')!.reason!.replace(/^read from the normal approximation of z: /, '')
    })`
    : '';
  const none = got.filter((v) => v.status === 'degenerate').length;
  return `${pass} of ${n} ${what} after Holm${normal} (${raw} before${
    none ? `; ${none} without a p, their null has no spread` : ''
  }${blind.length ? `; ${blind.length} not testable at R = ${blind[0]!.R}` : ''}${also ? `; ${also}` : ''})`;
}

/** The verdicts of a wanda family: recorded ones, else computed from p and z (older files). */
export function wandaVerdicts(
  ts: (NullTested | { p: number | null; z: number | null; nullMean: number | null; verdict?: Verdict })[],
  R: number,
  lower: boolean,
  name: string,
): Verdict[] {
  const have = ts.map((t) => (lower ? (t as NullTested).verdictLower : t.verdict));
  if (have.every((v) => !!v)) return have as Verdict[];
  const fam = declareFamily({ name, claim: 'a wanda family recomputed from a file without verdicts',
    members: indexMembers(ts.length) });
  return familyVerdicts(ts.map((t) => {
    const p = lower ? (t as NullTested).pLower ?? null : t.p;
    return { p, z: t.z ?? null, R, tail: lower ? 'lower' : 'upper', nullSd: p !== null && t.z === null ? 0 : undefined,
      nullMean: t.nullMean };
  }), fam, ALPHA);
}

/** The plain-words line on the neuron regions (wanda/metrics.json), counted after Holm within each family from its verdicts. */
export function wandaLines(m: WandaMetrics | null | undefined, by: string): string[] {
  if (!m || !m.permutations) return [];
  const R = m.permutations;
  const raw = (xs: (number | null | undefined)[]) =>
    xs.filter((x) => x !== null && x !== undefined && x <= ALPHA).length;
  const jv = wandaVerdicts(m.pairs.map((p) => p.jaccard), R, true, 'region-pairs');
  const parts = [
    `Neuron regions by "${by}": ${
      familyCount(jv, raw(m.pairs.map((p) => p.jaccard.pLower)), 'pairs overlap less than under shuffled labels',
        `Jaccard, ${R} permutations, floor p = ${fp(1 / (R + 1))}`)
    }`,
  ];
  const pl = m.pairs.flatMap((p) => [p.placementAminusB, p.placementBminusA]).filter((x): x is NonNullable<typeof x> =>
    !!x
  );
  if (pl.length) {
    const ratio = pl.map((x) => x.densityRatio).filter((x): x is number => x !== null);
    const med = ratio.length ? ratio.slice().sort((a, b) => a - b)[Math.floor(ratio.length / 2)]! : NaN;
    const pv = wandaVerdicts(pl.map((x) => x.density), R, false, 'placement-set-differences');
    parts.push(
      familyCount(pv, raw(pl.map((x) => x.density.p)), 'set differences are denser than random blocks of their size',
        `median density ${f2(med)}× a random set's`),
    );
  }
  if (m.channels?.length) {
    const cv = wandaVerdicts(m.channels, R, false, 'capture-points');
    parts.push(
      `the groups' activation RMS differs beyond shuffled labels in ${
        familyCount(cv, raw(m.channels.map((c) => c.p)), 'capture points')
      }`,
    );
  }
  return [parts.join('; ') + '.'];
}

/** The verdict's classifiers, one family for Holm, each with its verdict object (every sentence and table row is made from these). */
export function classifierFamily(metrics: ClusterMetrics, settings: ClusterSettings | null): Omit<Row, 'text'>[] {
  const space = (name: string) => metrics.spaces.find((s) => s.space === name);
  const eu = space('original-euclidean');
  const cos = space('original-cosine');
  const emb = space('embedding');
  const k = settings?.knnK ?? 10;
  const family: { name: string; c: ClassifierMetrics; model: boolean; knn: boolean }[] = [];
  if (eu?.probe)
    family.push({
      name: `Linear probe on the representation (${
        eu.probe.cv && eu.probe.cv.pca > 0
          ? `${eu.probe.cv.pca} principal components, fitted in each fold`
          : `${eu.probeDims ?? metrics.dim} dims`
      })`,
      c: eu.probe,
      model: true,
      knn: false,
    });
  if (cos?.knn)
    family.push({ name: `kNN (k = ${k}, cosine) on the representation`, c: cos.knn, model: true, knn: true });
  if (emb?.knn) family.push({ name: `kNN (k = ${k}) in the t-SNE map`, c: emb.knn, model: true, knn: true });
  for (const b of metrics.baselines ?? [])
    family.push({ name: `Tokens alone, ${b.name} probe`, c: b.probe, model: false, knn: false });
  const Rof = (i: number) =>
    (family[i]!.knn ? settings?.permutations : settings?.probePermutations ?? settings?.permutations) ?? 0;
  const sizingOf = (
    i: number,
  ) => (family[i]!.knn ? settings?.sizing?.permutations?.sizing : settings?.sizing?.probePermutations?.sizing);
  const verdicts = verdictsOf(family.map((f) => f.c.balancedAccuracy), Rof, sizingOf);
  return family.map((f, i) => ({ ...f, v: verdicts[i]! }));
}

/** The plain-words summary of one run's cluster metrics (and wanda's block-size warnings). */
export function verdictLines(metrics: ClusterMetrics | null, settings: ClusterSettings | null,
  wanda?: WandaSettings | null, wandaMetrics?: WandaMetrics | null): string[]
{
  const out: string[] = [];
  if (metrics) {
    const C = metrics.classes.length;
    const chance = metrics.chance?.balancedAccuracy ?? 1 / C;
    const majority = metrics.chance?.majorityRate ?? NaN;
    const by = !settings?.by
      ? 'the labels'
      : settings.input === 'matrix'
      ? `the labels in ${settings.by.split(/[\\/]/).pop()}`
      : `"${settings.by}"`;
    const m = metrics.metricSample ?? metrics.n;
    const majText = metrics.chance
      ? `; always answering "${metrics.chance.majorityClass}" gets accuracy ${f2(majority)}`
      : '';
    const lo = settings?.leftOut;
    const left = lo
      ? ` (${lo.count} of the run's ${lo.of} items have no value on ${by} and are left out: ${
        Object.entries(lo.values).map(([v, c]) => `${c} ${v}`).join(', ')
      })`
      : '';
    const nul = settings?.group?.null === 'groups'
      ? ", and the nulls shuffle whole groups' labels"
      : settings?.group?.null === 'within-groups'
      ? ', and the nulls shuffle labels within each group'
      : '';
    const grp = settings?.group
      ? `; the probes' folds keep the ${settings.group.groups} groups of "${settings.group.axis}" whole and their CIs resample groups${nul}`
      : '';
    out.push(`${C} classes of ${by} on ${m} items${left}: chance balanced accuracy is ${f2(chance)}${majText}${grp}.`);
    const rows: Row[] = classifierFamily(metrics, settings).map((f) => ({ ...f,
      text: classifierLine(f.name, f.c, chance, majority, f.v) })
    );
    for (const r of rows) out.push(r.text);
    out.push(...headline(rows, chance));
    const probe = rows.find((r) => r.model && !r.knn);
    const bases = rows.filter((r) => !r.model);
    if (probe && bases.length) out.push(tokenLine(probe, bases, rows, chance));
    out.push(...sweepLines(metrics, settings));
    for (const n of metrics.notes ?? []) out.push(`Note: ${n}.`.replace(/\.\.$/, '.'));
  }
  if (wanda) out.push(...wandaLines(wandaMetrics, wanda.by));
  if (wanda?.blockCheck && wanda.blockCheck.coarse.length) {
    const bc = wanda.blockCheck;
    const first = bc.coarse[0];
    const more = bc.coarse.length > 1
      ? ` (and ${bc.coarse.length - 1} more projection${bc.coarse.length > 2 ? 's' : ''})`
      : '';
    out.push(
      `Neuron regions are too coarse to read: at ${
        wanda.block.join('×')
      } blocks ${first.proj} has ${first.rowBlocks}×${first.colBlocks} blocks and the top selection keeps ${first.selected}${more}; ` +
        `the block-size rule needs ≥ ${bc.minShortSide} blocks on the short side and ≥ ${bc.minSelected} selected${
          bc.suggested ? ` (--block auto gives ${bc.suggested})` : ''
        }.`,
    );
  }
  return out;
}
