/**
 * The `lobes swap` command's job: open a run of a question/response swap composition, run the
 * swap analysis (src/swap/swap.ts) and write RUN/swap/ whole (writeDirAtomic):
 *
 *   settings.json   the run's provenance and the probe settings
 *   swap.json       SwapResult: chance levels, crossChance (descriptive), the words' probes, every
 *                   point with its conditional tests, and their family
 *   swap.csv        one row per point and label: the scores with CIs and plain nulls, the
 *                   conditional tests (null, Holm, verdict), and the paired differences
 *                   (question − response, state − words, (words + state) − words)
 *
 * and the plain-words summary `summaryLines` prints: per point, the conditional test's verdict.
 */
import { throwIfAborted } from '../util/errors.js';
import { writeDirAtomic } from '../util/io.js';
import { writeSwapFiles } from './store.js';
import { checkOutputDir } from '../util/output.js';
import { csvField } from '../util/csv.js';
import { analysisProvenance } from '../store/provenance.js';
import { defaultThreads } from '../util/worker.js';
import { LOBES_VERSION } from '../version.js';
import type { RunReader } from '../store/types.js';
import { baselineModelDir, baselineModelInput } from '../cluster/baseline.js';
import { otherRunInputs, runInputs } from '../store/lineage.js';
import * as path from 'node:path';
import { ClusterPool } from '../cluster/pool.js';
import { checkSwapControl, swapAnalysis, swapDir, swapInputOf, type ScoreDifferences, type SwapOptions,
  type SwapResult } from './swap.js';
import type { MetricWithCI } from '../cluster/types.js';
import type { ConditionalTest, Label, SwapPointResult } from './swap.js';
import { verdictNumbers } from '../util/resolution.js';
import { jobIO } from '../util/jobio.js';

/** Besides SwapOptions' IO: `io.signal` (or the deprecated `signal`) cancels between its analyses (the run's, then the control's) and before the writes: a LobesError with code E_ABORTED; nothing is written. */
export interface RunSwapOptions extends SwapOptions {
  /** The run's model folder when it has moved (checked by hash, as cluster --model). */
  model?: string;
  /** Only these capture points (default: every final and residual-stream point). */
  points?: string[];
  threads?: number;
  out?: string;
  noWrite?: boolean;
  /** A random-weights control run of the same samples: the same probes and conditional tests on it. */
  control?: RunReader | string;
}

/** Run the swap analysis on a run and write RUN/swap/ (or opts.out). */
export async function runSwap(input: RunReader | string,
  opts: RunSwapOptions = {}): Promise<{ result: SwapResult; outDir: string | null }>
{
  const io = jobIO(opts);
  let run: RunReader;
  if (typeof input === 'string') {
    const { openRun } = await import('../store/index.js');
    run = await openRun(input);
  } else run = input;
  const out = swapDir(run, opts.out);
  if (!opts.noWrite) checkOutputDir(out, 'swap');
  let control: RunReader | null = null;
  if (opts.control !== undefined) {
    const { openRun } = await import('../store/index.js');
    control = typeof opts.control === 'string' ? await openRun(opts.control) : opts.control;
    checkSwapControl(run, control);
  }
  const modelDir = baselineModelDir(run, opts.model);
  const inp = await swapInputOf(run, modelDir, opts.points);
  // the control is read at the same points (it must hold every one)
  const cinp = control ? await swapInputOf(control, undefined, inp.points.map((p) => p.name), false) : null;
  const threads = opts.threads ?? (await defaultThreads());
  const pool = threads > 1 ? await ClusterPool.start(threads - 1) : null;
  let result: SwapResult;
  try {
    throwIfAborted(io.signal, 'lobes swap', 'before its analysis');
    result = await swapAnalysis(inp, { ...opts, io, pool });
    if (control && cinp) {
      throwIfAborted(io.signal, 'lobes swap', "before the control's analysis");
      const c = await swapAnalysis(cinp, { ...opts, io, pool, words: undefined });
      const info = control.manifest.model.control!;
      result.control = { run: path.resolve(control.dir), identity: control.manifest.identity ?? null, seed: info.seed,
        scheme: info.scheme, points: c.points, families: c.families,
        conditionalPermutations: c.settings.conditionalPermutations };
    }
  } finally {
    await pool?.close();
  }
  throwIfAborted(io.signal, 'lobes swap', 'before writing its outputs');
  if (opts.noWrite) return { result, outDir: null };
  const settings = { ...result.settings, points: result.points.map((p) => p.point),
    words: result.words.map((w) => w.name), incrementalWords: result.incrementalWords, lobesVersion: LOBES_VERSION,
    provenance: analysisProvenance(run) };
  await writeDirAtomic(
    out,
    (tmp) => writeSwapFiles(tmp, { settings, csv: swapCsv(result), result }),
    { kind: 'swap',
      inputs: [...runInputs(run), ...baselineModelInput(run, modelDir),
        ...(control ? otherRunInputs(control, 'control') : [])] },
  );
  return { result, outDir: out };
}

const num = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));

/** The header of swap.csv. */
export const SWAP_CSV_HEADER =
  'point,pool,layer,label,quantity,value,ci_low,ci_high,p,null_mean,null_low,null_high,p_holm,z,permutations,verdict';

/**
 * The analysis as CSV (SWAP_CSV_HEADER). The conditional tests are the rows `conditional:SCORE`
 * (their null, Holm within the family, permutations and verdict); the control's rows, when
 * there is one, have the point `control:POINT`.
 */
export function swapCsv(r: SwapResult): string {
  const lines = [SWAP_CSV_HEADER];
  const row = (point: string, pool: string, layer: number | null, label: string, q: string,
    m: MetricWithCI | { value: number; ci95: [number, number] | null; p: number | null } | null | undefined) =>
  {
    if (!m) return;
    const nm = 'nullMean' in m ? m : null;
    const w = m as MetricWithCI;
    lines.push(
      [csvField(point), pool, num(layer), label, csvField(q), num(m.value), num(m.ci95?.[0]), num(m.ci95?.[1]),
        num(m.p), num(nm?.nullMean), num(nm?.nullBand?.[0]), num(nm?.nullBand?.[1]), num(w.pHolm), num(w.z),
        num(w.permutations), w.verdict?.status ?? ''].join(','),
    );
  };
  const conditionalRows = (name: string, p: SwapPointResult, label: Label) => {
    const t = p[label].conditional;
    row(name, p.pool, p.layer, label, 'conditional:balanced_accuracy', t.balancedAccuracy);
    row(name, p.pool, p.layer, label, 'conditional:accuracy', t.accuracy);
    row(name, p.pool, p.layer, label, 'conditional:macro_f1', t.macroF1);
    lines.push(
      [csvField(name), p.pool, num(p.layer), label, 'conditional:exchangeable_items', String(t.exchangeable.items), '',
        '', '', '', '', '', '', '', '', ''].join(','),
    );
  };
  const diffs = (point: string, pool: string, layer: number | null, label: string, prefix: string,
    d: ScoreDifferences | null) =>
  {
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
      conditionalRows(p.point, p, label);
      for (const [name, d] of Object.entries(l.minusWords)) diffs(p.point, p.pool, p.layer, label, `state-${name}`, d);
      if (r.incrementalWords)
        diffs(p.point, p.pool, p.layer, label, `incremental-${r.incrementalWords}`, l.incremental);
    }
    diffs(p.point, p.pool, p.layer, 'question-response', 'difference', p.questionMinusResponse);
  }
  for (const p of r.control?.points ?? []) {
    for (const label of ['question', 'response'] as const) {
      row(`control:${p.point}`, p.pool, p.layer, label, 'balanced_accuracy', p[label].probe.balancedAccuracy);
      conditionalRows(`control:${p.point}`, p, label);
    }
  }
  const rest = ',,,,,,,,,,';
  lines.push(`chance,all,,question,balanced_accuracy,${r.chance.question.balancedAccuracy}${rest}`);
  lines.push(`chance,all,,question,majority_rate,${r.chance.question.majorityRate}${rest}`);
  lines.push(`chance,all,,response,majority_rate,${r.chance.response.majorityRate}${rest}`);
  lines.push(
    `cross_chance,all,,question,balanced_accuracy,${r.crossChance.questionFromResponse.balancedAccuracy}${rest}`,
  );
  lines.push(
    `cross_chance,all,,response,balanced_accuracy,${r.crossChance.responseFromQuestion.balancedAccuracy}${rest}`,
  );
  return lines.join('\n') + '\n';
}

/** Which way a paired difference's CI points: 'above' 0, 'below' 0, or 'spans' 0. */
export function ciSide(d: { ci95: [number, number] | null }): 'above' | 'below' | 'spans' {
  if (!d.ci95) return 'spans';
  if (d.ci95[0] > 0) return 'above';
  if (d.ci95[1] < 0) return 'below';
  return 'spans';
}

/**
 * One conditional test in words: "carries the response's aspect beyond the question's: p = …,
 * Holm … over 12 tests", "no evidence it carries …", or "… not testable at R = …: why".
 */
export function conditionalWords(t: ConditionalTest, label: Label, n: number): string {
  const what = `the ${label}'s aspect beyond the ${t.given}'s`;
  const v = t.balancedAccuracy.verdict;
  const ex = t.exchangeable.items < n ? ` (${t.exchangeable.items} of ${n} items exchangeable)` : '';
  if (!v) return `${what}: untested`;
  switch (v.status) {
    case 'pass':
      return `carries ${what}: ${verdictNumbers(v, 'tests')}${ex}`;
    case 'fail':
      return `no evidence it carries ${what}: ${verdictNumbers(v, 'tests')}${ex}`;
    case 'not-testable':
      return `${what}: not testable at R = ${v.R}: ${v.reason}${ex}`;
    case 'degenerate':
      return `${what}: no p: ${v.reason}${ex}`;
    default:
      return `${what}: untested`;
  }
}

/** The summary in plain words: chance, the final points, every point's conditional tests, the count of layers on each side. */
export function summaryLines(r: SwapResult): string[] {
  const f = (x: number) => x.toFixed(3);
  const s = (x: number) => (x >= 0 ? '+' : '') + x.toFixed(3);
  const ci = (m: { ci95: [number, number] | null }) => (m.ci95 ? ` [${s(m.ci95[0])}, ${s(m.ci95[1])}]` : '');
  const fam = r.families.find((x) => x.family === 'conditional');
  const plan = r.settings.conditionalPermutations;
  const lines = [
    `swap: ${r.n} swapped samples; balanced accuracy by chance ${
      f(r.chance.question.balancedAccuracy)
    }; crossChance (descriptive: the best one label alone gives for the other) ${
      f(r.crossChance.questionFromResponse.balancedAccuracy)
    } (question's aspect) / ${f(r.crossChance.responseFromQuestion.balancedAccuracy)} (response's)`,
    `  test of each label beyond the other: its null shuffles the label within the strata of the other (${plan.R} permutations, ${
      plan.sizing === 'user'
        ? 'as given'
        : plan.sizing === 'capped'
        ? `held below the ${plan.needed} the family needs, so the verdicts read z's normal approximation`
        : 'sized to the family'
    }); Holm over the family of ${fam?.size ?? 0} tests (points × labels)`,
  ];
  for (const w of r.words)
    lines.push(
      `  words ${w.name}: question ${f(w.question.balancedAccuracy.value)}${
        ci(w.question.balancedAccuracy)
      }, response ${f(w.response.balancedAccuracy.value)}${ci(w.response.balancedAccuracy)}; question − response ${
        s(w.questionMinusResponse.balancedAccuracy.value)
      }${ci(w.questionMinusResponse.balancedAccuracy)}`,
    );
  const control = new Map((r.control?.points ?? []).map((p) => [p.point, p]));
  const tests = (p: SwapPointResult, indent: string) => {
    for (const label of ['question', 'response'] as const) {
      lines.push(`${indent}${conditionalWords(p[label].conditional, label, r.n)}`);
      const c = control.get(p.point);
      if (c)
        lines.push(
          `${indent}  random-weights control: ${f(c[label].probe.balancedAccuracy.value)}; ${
            conditionalWords(c[label].conditional, label, r.n)
          }`,
        );
    }
  };
  for (const p of r.points) {
    if (p.layer !== null) continue;
    const d = p.questionMinusResponse.balancedAccuracy;
    lines.push(
      `  ${p.point}: question ${f(p.question.probe.balancedAccuracy.value)} (plain null ${
        f(p.question.probe.balancedAccuracy.nullMean ?? NaN)
      }), response ${f(p.response.probe.balancedAccuracy.value)} (plain null ${
        f(p.response.probe.balancedAccuracy.nullMean ?? NaN)
      }); question − response ${s(d.value)}${ci(d)}`,
    );
    tests(p, '    ');
    for (const label of ['question', 'response'] as const) {
      const inc = p[label].incremental;
      if (inc)
        lines.push(
          `    (${r.incrementalWords} + state) − ${r.incrementalWords}, ${label}'s aspect: ${
            s(inc.balancedAccuracy.value)
          }${ci(inc.balancedAccuracy)}`,
        );
    }
  }
  for (const pool of ['last', 'mean'] as const) {
    const layers = r.points.filter((p) => p.layer !== null && p.pool === pool);
    if (!layers.length) continue;
    const side = (k: 'above' | 'below') =>
      layers.filter((p) => ciSide(p.questionMinusResponse.balancedAccuracy) === k).length;
    const inc = (label: 'question' | 'response') =>
      layers.filter((p) => p[label].incremental && ciSide(p[label].incremental!.balancedAccuracy) === 'above').length;
    const status = (label: Label, st: string) =>
      layers.filter((p) => p[label].conditional.balancedAccuracy.verdict?.status === st).length;
    lines.push(
      `  layers (${pool === 'last' ? 'last token' : 'mean over tokens'}): question − response CI above 0 at ${
        side('above')
      } of ${layers.length}, below 0 at ${side('below')}; state adds to the words (CI above 0) at ${
        inc('question')
      } (question's aspect) and ${inc('response')} (response's)`,
    );
    lines.push(
      `    beyond the other label (Holm ≤ 0.05): the question's aspect at ${
        status('question', 'pass')
      } of ${layers.length}, the response's at ${status('response', 'pass')}${
        status('question', 'not-testable') + status('response', 'not-testable')
          ? `; not testable: ${status('question', 'not-testable')} (question's) and ${
            status('response', 'not-testable')
          } (response's)`
          : ''
      }`,
    );
    for (const p of layers) {
      lines.push(`    ${p.point}:`);
      tests(p, '      ');
    }
  }
  for (const n of r.notes) lines.push(`  note: ${n}`);
  return lines;
}
