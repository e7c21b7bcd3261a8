/**
 * The report's first lines: in plain words, which separation numbers beat chance and by how
 * much, and which analyses are too coarse to read.
 *
 * A classifier (the linear probe, the kNN classifier, a token baseline) "beats chance" when its
 * balanced accuracy beats its own label-permutation null (one-sided p ≤ 0.05); without a null,
 * when the lower end of its bootstrap CI is above chance (1/C). Labels are called "separated"
 * only when some classifier's balanced accuracy beats chance: accuracy alone never counts, since
 * always answering the most frequent class already scores the majority rate.
 */
import type { ClassifierMetrics, ClusterMetrics, ClusterSettings, MetricWithCI } from '../cluster/types.js';
import type { WandaSettings } from '../wanda/types.js';

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

/** "balanced accuracy 0.45 [0.43, 0.47] vs chance 0.20 (null 0.20 [0.17, 0.23], p = 0.02)". */
export function describeBalanced(m: MetricWithCI, chance: number): string {
  const ci = m.ci95 ? ` [${f2(m.ci95[0])}, ${f2(m.ci95[1])}]` : '';
  const nul = m.nullMean !== null && m.nullMean !== undefined ? `null ${f2(m.nullMean)}${m.nullBand ? ` [${f2(m.nullBand[0])}, ${f2(m.nullBand[1])}]` : ''}, ` : '';
  const p = m.p !== null && m.p !== undefined ? `p = ${fp(m.p)}` : 'no permutation null';
  return `balanced accuracy ${f2(m.value)}${ci} vs chance ${f2(chance)} (${nul}${p})`;
}

/** One classifier's sentence and whether it beats chance. */
function classifierLine(name: string, c: ClassifierMetrics, chance: number, majority: number): { text: string; beats: boolean | null; gain: number } {
  const b = c.balancedAccuracy;
  const beats = beatsChance(b, chance);
  const ref = b.nullMean ?? chance;
  const gain = b.value - ref;
  const verdict = beats === null ? 'not tested against chance' : beats ? `above chance by ${f2(gain)}` : 'not above chance';
  const acc = c.accuracy.value;
  const accNote = acc <= majority + 1e-9 ? `accuracy ${f2(acc)} is no better than the majority-class guess (${f2(majority)})` : `accuracy ${f2(acc)} (majority-class guess ${f2(majority)})`;
  return { text: `${name}: ${describeBalanced(b, chance)}: ${verdict}; ${accNote}.`, beats, gain };
}

/** The plain-words summary of one run's cluster metrics (and wanda's block-size warnings). */
export function verdictLines(metrics: ClusterMetrics | null, settings: ClusterSettings | null, wanda?: WandaSettings | null): string[] {
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
    if (eu?.probe) lines.push({ ...classifierLine(`Linear probe on the representation (${eu.probeDims ?? metrics.dim} dims)`, eu.probe, chance, majority), model: true });
    const cos = space('original-cosine');
    const k = settings?.knnK ?? 10;
    if (cos?.knn) lines.push({ ...classifierLine(`kNN (k = ${k}, cosine) on the representation`, cos.knn, chance, majority), model: true });
    const emb = space('embedding');
    if (emb?.knn) lines.push({ ...classifierLine(`kNN (k = ${k}) in the t-SNE map`, emb.knn, chance, majority), model: true });
    for (const b of metrics.baselines ?? []) lines.push({ ...classifierLine(`Tokens alone, ${b.name} probe`, b.probe, chance, majority), model: false });
    for (const l of lines) out.push(l.text);
    const model = lines.filter((l) => l.model);
    const sep = model.filter((l) => l.beats);
    if (model.length && model.every((l) => l.beats === null)) out.push('Not tested: without permutations or bootstrap resamples no number is read against chance.');
    else if (sep.length === 0) out.push(`Not separated: no classifier's balanced accuracy on the representation beats its permutation null (p ≤ ${ALPHA}); accuracy alone does not count.`);
    else out.push(`Separated beyond chance by ${sep.length} of ${model.length} classifiers on the representation (balanced accuracy against its permutation null, p ≤ ${ALPHA}).`);
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
    for (const n of metrics.notes ?? []) out.push(`Note: ${n}.`.replace(/\.\.$/, '.'));
  }
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
