/**
 * The `lobes swap` command's job: open a run of a question/response swap composition, run the
 * swap analysis (src/cluster/swap.ts) and write RUN/swap/ whole (writeDirAtomic):
 *
 *   settings.json   the run's provenance and the probe settings
 *   swap.json       SwapResult: chance levels, crossChance, the words' probes, every point
 *   swap.csv        one row per point and label: the scores with CIs and nulls, and the paired
 *                   differences (question − response, state − words, (words + state) − words)
 *
 * and the plain-words summary `summaryLines` prints.
 */
import { writeDirAtomic } from '../util/io.js';
import { writeSwapFiles } from './store.js';
import { checkOutputDir } from '../util/output.js';
import { csvField } from '../util/csv.js';
import { analysisProvenance } from '../store/provenance.js';
import { defaultThreads } from '../util/worker.js';
import { LOBES_VERSION } from '../version.js';
import type { RunReader } from '../store/types.js';
import { baselineModelDir, baselineModelInput } from './baseline.js';
import { runInputs } from '../store/lineage.js';
import { ClusterPool } from './pool.js';
import { swapAnalysis, swapDir, swapInputOf, type ScoreDifferences, type SwapOptions, type SwapResult } from './swap.js';
import type { MetricWithCI } from './types.js';

export interface RunSwapOptions extends SwapOptions {
  /** The run's model folder when it has moved (checked by hash, as cluster --model). */
  model?: string;
  /** Only these capture points (default: every final and residual-stream point). */
  points?: string[];
  threads?: number;
  out?: string;
  noWrite?: boolean;
}

/** Run the swap analysis on a run and write RUN/swap/ (or opts.out). */
export async function runSwap(input: RunReader | string, opts: RunSwapOptions = {}): Promise<{ result: SwapResult; outDir: string | null }> {
  let run: RunReader;
  if (typeof input === 'string') {
    const { openRun } = await import('../store/index.js');
    run = await openRun(input);
  } else run = input;
  const out = swapDir(run, opts.out);
  if (!opts.noWrite) checkOutputDir(out, 'swap');
  const modelDir = baselineModelDir(run, opts.model);
  const inp = await swapInputOf(run, modelDir, opts.points);
  const threads = opts.threads ?? (await defaultThreads());
  const pool = threads > 1 ? await ClusterPool.start(threads - 1) : null;
  let result: SwapResult;
  try {
    result = await swapAnalysis(inp, { ...opts, pool });
  } finally {
    await pool?.close();
  }
  if (opts.noWrite) return { result, outDir: null };
  const settings = { ...result.settings, points: result.points.map((p) => p.point), words: result.words.map((w) => w.name), incrementalWords: result.incrementalWords, lobesVersion: LOBES_VERSION, provenance: analysisProvenance(run) };
  await writeDirAtomic(
    out,
    (tmp) => writeSwapFiles(tmp, { settings, csv: swapCsv(result), result }),
    { kind: 'swap', inputs: [...runInputs(run), ...baselineModelInput(run, modelDir)] },
  );
  return { result, outDir: out };
}

const num = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));

/** The analysis as CSV: point,pool,layer,label,quantity,value,ci_low,ci_high,p,null_mean,null_low,null_high. */
export function swapCsv(r: SwapResult): string {
  const lines = ['point,pool,layer,label,quantity,value,ci_low,ci_high,p,null_mean,null_low,null_high'];
  const row = (point: string, pool: string, layer: number | null, label: string, q: string, m: MetricWithCI | { value: number; ci95: [number, number] | null; p: number | null } | null | undefined) => {
    if (!m) return;
    const nm = 'nullMean' in m ? m : null;
    lines.push([csvField(point), pool, num(layer), label, csvField(q), num(m.value), num(m.ci95?.[0]), num(m.ci95?.[1]), num(m.p), num(nm?.nullMean), num(nm?.nullBand?.[0]), num(nm?.nullBand?.[1])].join(','));
  };
  const diffs = (point: string, pool: string, layer: number | null, label: string, prefix: string, d: ScoreDifferences | null) => {
    if (!d) return;
    row(point, pool, layer, label, `${prefix}:accuracy`, d.accuracy);
    row(point, pool, layer, label, `${prefix}:balanced_accuracy`, d.balancedAccuracy);
    row(point, pool, layer, label, `${prefix}:macro_f1`, d.macroF1);
  };
  for (const w of r.words) {
    for (const label of ['question', 'response'] as const) {
      row(`words:${w.name}`, 'all', null, label, 'balanced_accuracy', w[label].balancedAccuracy);
      row(`words:${w.name}`, 'all', null, label, 'accuracy', w[label].accuracy);
    }
    diffs(`words:${w.name}`, 'all', null, 'question-response', 'difference', w.questionMinusResponse);
  }
  for (const p of r.points) {
    for (const label of ['question', 'response'] as const) {
      const l = p[label];
      row(p.point, p.pool, p.layer, label, 'balanced_accuracy', l.probe.balancedAccuracy);
      row(p.point, p.pool, p.layer, label, 'accuracy', l.probe.accuracy);
      row(p.point, p.pool, p.layer, label, 'macro_f1', l.probe.macroF1);
      for (const [name, d] of Object.entries(l.minusWords)) diffs(p.point, p.pool, p.layer, label, `state-${name}`, d);
      if (r.incrementalWords) diffs(p.point, p.pool, p.layer, label, `incremental-${r.incrementalWords}`, l.incremental);
    }
    diffs(p.point, p.pool, p.layer, 'question-response', 'difference', p.questionMinusResponse);
  }
  lines.push(`chance,all,,question,balanced_accuracy,${r.chance.question.balancedAccuracy},,,,,,`);
  lines.push(`chance,all,,question,majority_rate,${r.chance.question.majorityRate},,,,,,`);
  lines.push(`chance,all,,response,majority_rate,${r.chance.response.majorityRate},,,,,,`);
  lines.push(`cross_chance,all,,question,balanced_accuracy,${r.crossChance.questionFromResponse.balancedAccuracy},,,,,,`);
  lines.push(`cross_chance,all,,response,balanced_accuracy,${r.crossChance.responseFromQuestion.balancedAccuracy},,,,,,`);
  return lines.join('\n') + '\n';
}

/** Which way a paired difference's CI points: 'above' 0, 'below' 0, or 'spans' 0. */
export function ciSide(d: { ci95: [number, number] | null }): 'above' | 'below' | 'spans' {
  if (!d.ci95) return 'spans';
  if (d.ci95[0] > 0) return 'above';
  if (d.ci95[1] < 0) return 'below';
  return 'spans';
}

/** The summary in plain words: chance, the final points, and the count of layers on each side. */
export function summaryLines(r: SwapResult): string[] {
  const f = (x: number) => x.toFixed(3);
  const s = (x: number) => (x >= 0 ? '+' : '') + x.toFixed(3);
  const ci = (m: { ci95: [number, number] | null }) => (m.ci95 ? ` [${s(m.ci95[0])}, ${s(m.ci95[1])}]` : '');
  const lines = [
    `swap: ${r.n} swapped samples; balanced accuracy by chance ${f(r.chance.question.balancedAccuracy)}; from the other label alone at best ${f(r.crossChance.questionFromResponse.balancedAccuracy)} (question's aspect) / ${f(r.crossChance.responseFromQuestion.balancedAccuracy)} (response's)`,
  ];
  for (const w of r.words) lines.push(`  words ${w.name}: question ${f(w.question.balancedAccuracy.value)}${ci(w.question.balancedAccuracy)}, response ${f(w.response.balancedAccuracy.value)}${ci(w.response.balancedAccuracy)}; question − response ${s(w.questionMinusResponse.balancedAccuracy.value)}${ci(w.questionMinusResponse.balancedAccuracy)}`);
  for (const p of r.points) {
    if (p.layer !== null) continue;
    const d = p.questionMinusResponse.balancedAccuracy;
    lines.push(`  ${p.point}: question ${f(p.question.probe.balancedAccuracy.value)} (null ${f(p.question.probe.balancedAccuracy.nullMean ?? NaN)}), response ${f(p.response.probe.balancedAccuracy.value)} (null ${f(p.response.probe.balancedAccuracy.nullMean ?? NaN)}); question − response ${s(d.value)}${ci(d)}`);
    for (const label of ['question', 'response'] as const) {
      const inc = p[label].incremental;
      if (inc) lines.push(`    (${r.incrementalWords} + state) − ${r.incrementalWords}, ${label}'s aspect: ${s(inc.balancedAccuracy.value)}${ci(inc.balancedAccuracy)}`);
    }
  }
  for (const pool of ['last', 'mean'] as const) {
    const layers = r.points.filter((p) => p.layer !== null && p.pool === pool);
    if (!layers.length) continue;
    const side = (k: 'above' | 'below') => layers.filter((p) => ciSide(p.questionMinusResponse.balancedAccuracy) === k).length;
    const inc = (label: 'question' | 'response') => layers.filter((p) => p[label].incremental && ciSide(p[label].incremental!.balancedAccuracy) === 'above').length;
    lines.push(`  layers (${pool === 'last' ? 'last token' : 'mean over tokens'}): question − response CI above 0 at ${side('above')} of ${layers.length}, below 0 at ${side('below')}; state adds to the words (CI above 0) at ${inc('question')} (question's aspect) and ${inc('response')} (response's)`);
  }
  for (const n of r.notes) lines.push(`  note: ${n}`);
  return lines;
}
