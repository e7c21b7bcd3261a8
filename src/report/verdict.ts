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
 */
import type { ClassifierMetrics, ClusterMetrics, ClusterSettings, MetricWithCI } from '../cluster/types.js';
import type { WandaMetrics, WandaSettings } from '../wanda/types.js';
import { binomialUpper, holm } from '../util/stats.js';

/** Significance level of the statements. */
export const ALPHA = 0.05;

const f2 = (v: number) => v.toFixed(2);
const fp = (p: number) => (p < 0.001 ? p.toExponential(0) : p < 0.01 ? p.toFixed(3) : p.toFixed(2));

/** Whether a balanced accuracy beats chance: its null (p ≤ ALPHA), else its CI against 1/C; null when untested. */
export function beatsChance(m: MetricWithCI, chance: number): boolean | null {
  if (m.p !== null && m.p !== undefined) return m.p <= ALPHA;
  if (m.ci95) return m.ci95[0] > chance;
  return null;
}

/** The family correction of one p in a verdict: the Holm-adjusted p, the family's size and the permutation floor. */
export interface FamilyP {
  holm: number | null;
  family: number;
  floor: number | null;
}

/** "p = 0.005 (the floor 1/(R+1) of 199 permutations)" when p sits at the floor, else "p = 0.02". */
function pText(p: number, floor: number | null): string {
  return floor !== null && Math.abs(p - floor) < 1e-12 ? `p = ${fp(p)} (the floor 1/(R+1) of ${Math.round(1 / floor - 1)} permutations)` : `p = ${fp(p)}`;
}

/** "balanced accuracy 0.45 [0.43, 0.47] vs chance 0.20 (null 0.20 [0.17, 0.23], p = 0.02, Holm 0.04 over 2 classifiers)". */
export function describeBalanced(m: MetricWithCI, chance: number, fam?: FamilyP): string {
  const ci = m.ci95 ? ` [${f2(m.ci95[0])}, ${f2(m.ci95[1])}]` : '';
  const nul = m.nullMean !== null && m.nullMean !== undefined ? `null ${f2(m.nullMean)}${m.nullBand ? ` [${f2(m.nullBand[0])}, ${f2(m.nullBand[1])}]` : ''}, ` : '';
  const adj = fam && fam.holm !== null && fam.family > 1 ? `, Holm ${fp(fam.holm)} over ${fam.family} classifiers` : '';
  const p = m.p !== null && m.p !== undefined ? `${pText(m.p, fam?.floor ?? null)}${adj}` : 'no permutation null';
  return `balanced accuracy ${f2(m.value)}${ci} vs chance ${f2(chance)} (${nul}${p})`;
}

/** One classifier's sentence and whether it beats chance (its Holm-adjusted p when it has a null). */
function classifierLine(name: string, c: ClassifierMetrics, chance: number, majority: number, fam?: FamilyP): { text: string; beats: boolean | null; gain: number } {
  const b = c.balancedAccuracy;
  const beats = fam && fam.holm !== null ? fam.holm <= ALPHA : beatsChance(b, chance);
  const ref = b.nullMean ?? chance;
  const gain = b.value - ref;
  const verdict = beats === null ? 'not tested against chance' : beats ? `above chance by ${f2(gain)}` : 'not above chance';
  const acc = c.accuracy.value;
  const accNote = acc <= majority + 1e-9 ? `accuracy ${f2(acc)} is no better than the majority-class guess (${f2(majority)})` : `accuracy ${f2(acc)} (majority-class guess ${f2(majority)})`;
  return { text: `${name}: ${describeBalanced(b, chance, fam)}: ${verdict}; ${accNote}.`, beats, gain };
}

/**
 * The layer sweep read as one family: how many layers' probe balanced accuracy beats its
 * permutation null before and after Holm across the layers, and whether the permutations
 * allow any layer to pass at all (1/(R+1) · L ≤ 0.05).
 */
export function sweepLines(metrics: ClusterMetrics, settings: ClusterSettings | null): string[] {
  const sw = (metrics.sweep ?? []).filter((s) => s.balancedAccuracy && s.balancedAccuracy.p !== null && s.balancedAccuracy.p !== undefined);
  if (!sw.length) return [];
  const ps = sw.map((s) => s.balancedAccuracy!.p!);
  const adj = holm(ps);
  const L = sw.length;
  const raw = ps.filter((p) => p <= ALPHA).length;
  const passed = adj.filter((p) => p !== null && p <= ALPHA).length;
  const R = settings?.sweepPermutations;
  const floor = R ? 1 / (R + 1) : Math.min(...ps);
  // Were the layers independent, P(at least `raw` of L at p ≤ α) under the null: small means the layers together beat chance.
  const tail = raw ? binomialUpper(raw, L, ALPHA) : 1;
  const rawText = !raw
    ? 'none reaches p ≤ 0.05 either'
    : tail > ALPHA
      ? `the ${raw} layer${raw > 1 ? 's' : ''} at p ≤ ${ALPHA} ${raw > 1 ? 'are' : 'is'} about what chance gives (${f2(L * ALPHA)} expected)`
      : `the ${raw} layers at p ≤ ${ALPHA} are far more than chance gives (${f2(L * ALPHA)} expected), so the layers together beat chance though no single layer can be named; read each layer's z`;
  const reach = floor * L > ALPHA ? ` With ${R ? `${R} permutations per layer` : 'these permutations'} the smallest p is ${floor.toFixed(3)}, so no layer can pass Holm across ${L} layers; ${rawText}.` : '';
  return [`Layer sweep: the probe's balanced accuracy beats its permutation null in ${passed} of ${L} layers after Holm across the layers (${raw} before).${reach}`];
}

/** The plain-words line on the neuron regions (wanda/metrics.json), counted after Holm within each family. */
export function wandaLines(m: WandaMetrics | null | undefined, by: string): string[] {
  if (!m || !m.permutations) return [];
  const P = m.pairs.length;
  const pass = (xs: (number | null | undefined)[]) => xs.filter((x) => x !== null && x !== undefined && x <= ALPHA).length;
  const jRaw = pass(m.pairs.map((p) => p.jaccard.pLower));
  const jHolm = pass(m.pairs.map((p) => p.jaccard.pLowerHolm));
  const parts = [`Neuron regions by "${by}": ${jHolm} of ${P} pairs overlap less than under shuffled labels after Holm (${jRaw} before; Jaccard, ${m.permutations} permutations, floor p = ${fp(1 / (m.permutations + 1))})`];
  const pl = m.pairs.flatMap((p) => [p.placementAminusB, p.placementBminusA]).filter((x) => !!x);
  if (pl.length) {
    const ratio = pl.map((x) => x!.densityRatio).filter((x): x is number => x !== null);
    const med = ratio.length ? ratio.slice().sort((a, b) => a - b)[Math.floor(ratio.length / 2)]! : NaN;
    parts.push(`${pass(pl.map((x) => x!.density.pHolm))} of ${pl.length} set differences are denser than random blocks of their size after Holm (median density ${f2(med)}× a random set's)`);
  }
  if (m.channels?.length) parts.push(`the groups' activation RMS differs beyond shuffled labels in ${pass(m.channels.map((c) => c.pHolm))} of ${m.channels.length} capture points after Holm`);
  return [parts.join('; ') + '.'];
}

/** The plain-words summary of one run's cluster metrics (and wanda's block-size warnings). */
export function verdictLines(metrics: ClusterMetrics | null, settings: ClusterSettings | null, wanda?: WandaSettings | null, wandaMetrics?: WandaMetrics | null): string[] {
  const out: string[] = [];
  if (metrics) {
    const C = metrics.classes.length;
    const chance = metrics.chance?.balancedAccuracy ?? 1 / C;
    const majority = metrics.chance?.majorityRate ?? NaN;
    const by = !settings?.by ? 'the labels' : settings.input === 'matrix' ? `the labels in ${settings.by.split(/[\\/]/).pop()}` : `"${settings.by}"`;
    const m = metrics.metricSample ?? metrics.n;
    const majText = metrics.chance ? `; always answering "${metrics.chance.majorityClass}" gets accuracy ${f2(majority)}` : '';
    out.push(`${C} classes of ${by} on ${m} items: chance balanced accuracy is ${f2(chance)}${majText}.`);
    const lines: { text: string; beats: boolean | null; gain: number; model: boolean }[] = [];
    const space = (name: string) => metrics.spaces.find((s) => s.space === name);
    const eu = space('original-euclidean');
    const cos = space('original-cosine');
    const emb = space('embedding');
    const k = settings?.knnK ?? 10;
    // The verdict's classifiers, one family for Holm.
    const family: { name: string; c: ClassifierMetrics; model: boolean }[] = [];
    if (eu?.probe) family.push({ name: `Linear probe on the representation (${eu.probe.cv && eu.probe.cv.pca > 0 ? `${eu.probe.cv.pca} principal components, fitted in each fold` : `${eu.probeDims ?? metrics.dim} dims`})`, c: eu.probe, model: true });
    if (cos?.knn) family.push({ name: `kNN (k = ${k}, cosine) on the representation`, c: cos.knn, model: true });
    if (emb?.knn) family.push({ name: `kNN (k = ${k}) in the t-SNE map`, c: emb.knn, model: true });
    for (const b of metrics.baselines ?? []) family.push({ name: `Tokens alone, ${b.name} probe`, c: b.probe, model: false });
    const adj = holm(family.map((f) => f.c.balancedAccuracy.p));
    const nTested = adj.filter((x) => x !== null).length;
    const floor = settings?.permutations ? 1 / (settings.permutations + 1) : null;
    family.forEach((f, i) => lines.push({ ...classifierLine(f.name, f.c, chance, majority, { holm: adj[i]!, family: nTested, floor }), model: f.model }));
    for (const l of lines) out.push(l.text);
    const model = lines.filter((l) => l.model);
    const sep = model.filter((l) => l.beats);
    if (model.length && model.every((l) => l.beats === null)) out.push('Not tested: without permutations or bootstrap resamples no number is read against chance.');
    else if (sep.length === 0) out.push(`Not separated: no classifier's balanced accuracy on the representation beats its permutation null (Holm-adjusted p ≤ ${ALPHA}); accuracy alone does not count.`);
    else out.push(`Separated beyond chance by ${sep.length} of ${model.length} classifiers on the representation (balanced accuracy against its permutation null, Holm-adjusted p ≤ ${ALPHA} over the ${nTested} classifiers tested).`);
    const probe = eu?.probe;
    const bases = (metrics.baselines ?? []).filter((b) => b.probe.balancedAccuracy);
    if (probe && bases.length) {
      const best = bases.reduce((a, b) => (b.probe.balancedAccuracy.value > a.probe.balancedAccuracy.value ? b : a));
      const d = probe.balancedAccuracy.value - best.probe.balancedAccuracy.value;
      const bv = f2(best.probe.balancedAccuracy.value);
      const pv = f2(probe.balancedAccuracy.value);
      out.push(
        d > 0
          ? `The representation's probe beats the best token baseline (${best.name}) by ${f2(d)} balanced accuracy (difference of point estimates; compare runs for a CI).`
          : sep.length === 0 && beatsChance(best.probe.balancedAccuracy, chance)
            ? `The tokens alone separate the labels (${best.name} ${bv} balanced accuracy) where the representation's probe does not (${pv}): what the texts' tokens carry does not reach this representation.`
            : `The tokens alone do at least as well: ${best.name} ${bv} vs the representation's probe ${pv} balanced accuracy, so the separation need not come from what the model computes.`,
      );
    }
    out.push(...sweepLines(metrics, settings));
    for (const n of metrics.notes ?? []) out.push(`Note: ${n}.`.replace(/\.\.$/, '.'));
  }
  if (wanda) out.push(...wandaLines(wandaMetrics, wanda.by));
  if (wanda?.blockCheck && wanda.blockCheck.coarse.length) {
    const bc = wanda.blockCheck;
    const first = bc.coarse[0];
    const more = bc.coarse.length > 1 ? ` (and ${bc.coarse.length - 1} more projection${bc.coarse.length > 2 ? 's' : ''})` : '';
    out.push(
      `Neuron regions are too coarse to read: at ${wanda.block.join('×')} blocks ${first.proj} has ${first.rowBlocks}×${first.colBlocks} blocks and the top selection keeps ${first.selected}${more}; ` +
        `the block-size rule needs ≥ ${bc.minShortSide} blocks on the short side and ≥ ${bc.minSelected} selected${bc.suggested ? ` (--block auto gives ${bc.suggested})` : ''}.`,
    );
  }
  return out;
}
