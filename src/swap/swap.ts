/**
 * The question/response swap analysis (`lobes swap RUN`): on the swapped samples of a run
 * extracted from `socialeval:…&swap=SEED` (src/data/swap.ts), where every response follows a
 * question that names a different aspect, does the state follow the question's aspect or the
 * response's?
 *
 * At every capture point (final.hidden, final.mean and each layers.{i}.resid_out(.mean) the run
 * holds), the same linear probe as `lobes cluster` (src/cluster/probecv.ts: in-fold PCA and
 * standardization, nested C, cold starts, repeated stratified CV; its label-permutation null) is
 * fitted twice on the same items: once for the question's aspect and once for the response's.
 * The token baselines of the same texts (token counts, mean input embedding; src/cluster/baseline.ts)
 * go through the same probe for both labels. Paired bootstraps over items and fold repeats
 * (src/cluster/paired.ts) give:
 *
 *  - question − response: score(question's aspect) − score(response's aspect) of one state, each
 *    scored against its own labels on the same resampled items;
 *  - state − words, per label;
 *  - (words + state) − words, per label: the incremental probe (each block reduced by its own
 *    in-fold PCA) against the words alone.
 *
 * Balanced accuracy is the score to read across the two labels (chance 1/K for both, while the
 * majority rates differ). The two labels are never equal on a swapped sample, so a state that
 * encodes only one aspect still predicts the other above 1/K, and above the plain
 * label-permutation null. `crossChance` (the best score one label alone gives for the other) is
 * reported as a description of the design only: a probe below it does not show that its label is
 * absent, nor one above it that it is present.
 *
 * The test of each label is the conditional permutation null (src/cluster/conditional.ts): the
 * label's values are shuffled only among the items that share the other label's value, so the
 * null keeps the dependence of the two labels, and a p below α says the state carries this
 * label beyond what the other explains. One family of tests: every point × both labels, Holm
 * within it for each score (`families`), each test's verdict read as the rest of lobes reads
 * them (src/util/resolution.ts: "not testable at R = …" when its count cannot reach α over the
 * family). Its permutation count is sized to the family (permutationsForFamily), at most
 * CONDITIONAL_PERMUTATION_CAP by default (beyond: the verdicts read z's normal approximation).
 *
 * Its types (inputs, options, SwapResult as swap.json holds it) are in ./types.ts.
 */
import { LobesError, opt } from '../util/errors.js';
import { Progress } from '../util/progress.js';
import { jobIO, silentIO } from '../util/jobio.js';
import { Rng, hash32 } from '../util/rng.js';
import { compareHooks, parseHook, sitePool } from '../hooks.js';
import type { RunReader } from '../store/types.js';
import { hashItems } from '../store/provenance.js';
import type { ClassifierMetrics } from '../cluster/types.js';
import { chanceOf, runProbe, type MeasureContext, type MetricSample } from '../cluster/measure.js';
import { pairedBootstrap } from '../cluster/paired.js';
import { blockKey, probeSettings, type Block, type RepeatedCv } from '../cluster/probecv.js';
import { swapFolder } from './store.js';
import type { ScoreName } from '../cluster/scores.js';
import { crossChance } from '../data/swap.js';
import { cellsOf, exchangeability, stratifiedPermutations } from '../cluster/conditional.js';
import { GROUP_AXIS } from '../data/generic.js';
import { nullOptions, probeNullScores, withNull } from '../cluster/space.js';
import { familyVerdicts, planPermutations, type PermutationPlan, type Verdict } from '../util/resolution.js';
import { declareFamily, type Family } from '../util/families.js';
import type { MetricWithCI } from '../cluster/types.js';
import type { ConditionalTest, Label, ScoreDifferences, SwapFamily, SwapInput, SwapLabelResult, SwapOptions,
  SwapPointResult, SwapResult, SwapWordsResult } from './types.js';

export type { ConditionalTest, Label, ScoreDifferences, SwapControlResult, SwapFamily, SwapGrouping, SwapInput,
  SwapLabelResult, SwapOptions, SwapPointResult, SwapPointSource, SwapResult, SwapWordsResult } from './types.js';

/** The most conditional-null permutations by default (each refits every fold, as the probe's null). */
export const CONDITIONAL_PERMUTATION_CAP = 100;

const SCORES: ScoreName[] = ['accuracy', 'balancedAccuracy', 'macroF1'];

/**
 * The permutation count of the conditional nulls of a family of `family` tests: the count given;
 * else sized to the family (at most the cap); with only the plain count given, the smaller of it
 * and what the family needs (then `user` when below it).
 */
export function conditionalPlan(family: number,
  opts: Pick<SwapOptions, 'permutations' | 'conditionalPermutations'>): PermutationPlan
{
  if (opts.conditionalPermutations !== undefined)
    return planPermutations(family, opts.conditionalPermutations, CONDITIONAL_PERMUTATION_CAP);
  if (opts.permutations === undefined) return planPermutations(family, undefined, CONDITIONAL_PERMUTATION_CAP);
  const plan = planPermutations(family, undefined, Math.min(opts.permutations, CONDITIONAL_PERMUTATION_CAP));
  return opts.permutations < plan.needed ? { ...plan, sizing: 'user' } : plan;
}

/** Score column k of a [R][3] null table. */
function column(t: Float64Array, k: number): Float64Array {
  return Float64Array.from({ length: t.length / 3 }, (_, r) => t[3 * r + k]!);
}

/**
 * Holm within the family of conditional tests (each score separately) and each test's verdict
 * (src/util/resolution.ts), written onto the tests; a test without a null is not testable, with
 * its reason. Returns the family as swap.json declares it.
 */
export function adjustConditional(points: SwapPointResult[], plan: PermutationPlan, declared?: Family): SwapFamily {
  const tests = points.flatMap((p) =>
    (['question', 'response'] as const).map((l) => ({ name: `${p.point}:${l}`, t: p[l].conditional }))
  );
  // declared by swapAnalysis from the points before any test ran (a caller without it: from the points' results)
  const fam = declared ?? conditionalFamily(points.map((p) => p.point));
  if (fam.members.length !== tests.length || fam.members.some((m, i) => m !== tests[i]!.name))
    throw new Error(
      `family conditional: declared with ${fam.members.join(', ')}, tested ${tests.map((x) => x.name).join(', ')}`,
    );
  for (const s of SCORES) {
    const ms = tests.map((x) => x.t[s]);
    const adj = fam.adjustBy(new Map(tests.map((x, i) => [x.name, ms[i]!.p])));
    const h = tests.map((x) => adj.get(x.name)!);
    const v = familyVerdicts(
      ms.map((m) => ({ p: m.p, z: m.z ?? null, R: m.permutations ?? 0, sizing: plan.sizing, nullSd: m.nullSd,
        nullMean: m.nullMean })
      ),
      fam,
    );
    ms.forEach((m, i) => {
      m.pHolm = h[i] ?? null;
      m.verdict = tests[i]!.t.untestable ? untestableVerdict(v[i]!, tests[i]!.t.untestable!) : v[i]!;
    });
  }
  return { ...fam.record(), family: 'conditional', scores: SCORES };
}

/** The conditional family of the swap's points: every point × both labels, from the points alone (the settings). */
export function conditionalFamily(points: readonly string[]): Family {
  return declareFamily({ name: 'conditional',
    claim: 'the state carries a label beyond the other (every point × both labels, each score)',
    members: points.flatMap((p) => [`${p}:question`, `${p}:response`]) });
}

function untestableVerdict(v: Verdict, reason: string): Verdict {
  return { ...v, status: 'not-testable', reason };
}

/** A probe's repeated-CV predictions and scores. */
interface Fitted {
  metrics: ClassifierMetrics;
  cv: RepeatedCv;
}

/** The analysis on in-memory inputs (runSwap reads them from a run). */
export async function swapAnalysis(input: SwapInput, opts: SwapOptions = {}): Promise<SwapResult> {
  const n = input.question.length;
  if (input.response.length !== n)
    throw new LobesError(`swap: ${n} question labels but ${input.response.length} response labels`);
  if (n < 10) throw new LobesError(`swap: ${n} swapped samples are too few for a cross-validated probe`);
  const seed = opts.seed ?? 0;
  const classes = [...new Set([...input.question, ...input.response])].sort();
  const codeOf = new Map(classes.map((c, i) => [c, i]));
  const codes = { question: Int32Array.from(input.question, (l) => codeOf.get(l)!),
    response: Int32Array.from(input.response, (l) => codeOf.get(l)!) };
  const B = opts.bootstrap ?? 1000;
  const R = opts.permutations ?? 20;
  const probePca = opts.probePca ?? 50;
  const probe = probeSettings(opts.folds, opts.probeRepeats, opts.probeC, opts.classWeight ?? null);
  // the samples' groups, numbered in order of first appearance
  let gNames = !opts.ungrouped && input.groups ? input.groups : null;
  if (gNames && gNames.length !== n) throw new LobesError(`swap: ${n} samples but ${gNames.length} groups`);
  const nGroups = gNames ? new Set(gNames).size : 0;
  if (gNames && nGroups < probe.folds) {
    // grouped folds need a group per fold at least: fewer groups leave the analysis ungrouped, said
    input.notes.push(
      `not grouped: the ${nGroups} group${nGroups === 1 ? '' : 's'} of ${
        JSON.stringify(input.groupAxis ?? GROUP_AXIS)
      } are fewer than the probe's ${probe.folds} folds`,
    );
    gNames = null;
  }
  const gIndex = new Map<string, number>();
  const groups = gNames
    ? Int32Array.from(gNames, (g) => gIndex.get(g) ?? (gIndex.set(g, gIndex.size), gIndex.size - 1))
    : null;
  const probeG = groups ? { ...probe, groups } : probe;
  const rows = Int32Array.from({ length: n }, (_, i) => i);
  const plan = conditionalPlan(2 * input.points.length, opts);
  // the family, declared from the points (the settings) before any test runs
  const conditionalFam = conditionalFamily(input.points.map((p) => p.name));
  const Rc = plan.R;
  const io = jobIO(opts);
  const say = (m: string) => io.log(`swap: ${m}`);
  const sample = (label: Label): MetricSample => ({ rows, m: n, sub: codes[label],
    mopts: { k: 10, bootstrap: B, permutations: R, probePermutations: R, seed, probe: probeG }, probePca,
    sweepPermutations: R });
  const ctx = (label: Label): MeasureContext => ({
    X: new Float32Array(0),
    n,
    d: 0,
    coded: { classes, codes: codes[label] },
    seed,
    pool: opts.pool ?? null,
    runPca: () => {
      throw new Error('swap: no PCA outside the probe');
    },
    io: silentIO(),
    say: () => {},
    lap: () => {},
  });
  const C = classes.length;
  const fit = async (label: Label, blocks: Block[], perms: number, name: string): Promise<Fitted> => {
    const r = await runProbe(ctx(label), blocks, sample(label), perms, name);
    return { metrics: r.metrics, cv: r.cv };
  };
  // the conditional null: the label shuffled within the strata of the other, refitting repeat 0's
  // prepared folds with C fixed at the modal choice, as the plain null does; the same shuffles at every point
  const conditional = async (label: Label, f: Fitted): Promise<ConditionalTest> => {
    const given: Label = label === 'question' ? 'response' : 'question';
    // with groups, the strata are the cells of the other label × group
    const strata = cellsOf(codes[given], groups);
    const ex = exchangeability(codes[label], strata);
    const nowhere = groups
      ? `no group holds, within one value of the ${given}'s aspect, two items with different ${label}'s aspects, so nothing can be shuffled`
      : `no value of the ${given}'s aspect holds two items with different ${label}'s aspects, so nothing can be shuffled`;
    const untestable = ex.items === 0 ? nowhere : Rc === 0 ? 'no permutations (--permutations 0)' : null;
    const m = f.metrics;
    if (untestable) {
      const bare = (k: ScoreName): MetricWithCI => ({ value: m[k].value, ci95: m[k].ci95, p: null, nullMean: null,
        nullBand: null, z: null, permutations: Rc });
      return { given, exchangeable: ex, accuracy: bare('accuracy'), balancedAccuracy: bare('balancedAccuracy'),
        macroF1: bare('macroF1'), untestable };
    }
    const perms = stratifiedPermutations(codes[label], strata, Rc, hash32(`${seed}\u0000conditional ${label}`));
    const popts = nullOptions({ ...probeG, pca: probePca, seed }, f.cv);
    const pool = opts.pool ?? null;
    const nulls = pool
      ? await pool.probeScores(f.cv.prepared, n, perms, C, popts, seed)
      : probeNullScores(f.cv.prepared, n, perms, C, popts, seed);
    const w = (k: ScoreName, col: number) => withNull(m[k].value, m[k].ci95, column(nulls, col));
    return { given, exchangeable: ex, accuracy: w('accuracy', 0), balancedAccuracy: w('balancedAccuracy', 1),
      macroF1: w('macroF1', 2) };
  };
  const diff = (a: Fitted, ya: Int32Array, b: Fitted, yb: Int32Array, key: string): ScoreDifferences =>
    pairedBootstrap(ya, a.cv.preds, b.cv.preds, C, B, new Rng(hash32(`${seed}\u0000${key}`)), yb, groups);
  const labels: Label[] = ['question', 'response'];

  // the words alone, for both labels
  // keyed blocks: the in-fold PCA of a block on one label's folds is computed once and shared by
  // every probe that reduces it (probe-fold.ts reducedParts), which changes no number
  const wordBlocks = new Map(input.words.map((w) => [w.name, { X: w.X, d: w.dim, key: blockKey(`words ${w.name}`) }]));
  const words: SwapWordsResult[] = [];
  const wordFits = new Map<string, Record<Label, Fitted>>();
  for (const w of input.words) {
    if (w.dim === 0) {
      input.notes.push(`${w.name}: no features (no token occurs in two items)`);
      continue;
    }
    say(`words: ${w.name}`);
    const wb = wordBlocks.get(w.name)!;
    const f = { question: await fit('question', [wb], R, w.name), response: await fit('response', [wb], R, w.name) };
    wordFits.set(w.name, f);
    words.push({ name: w.name, description: w.description, dim: w.dim, question: f.question.metrics,
      response: f.response.metrics,
      questionMinusResponse: diff(f.question, codes.question, f.response, codes.response, `words ${w.name}`) });
  }
  const incName = opts.words ?? 'token-counts';
  if (opts.words !== undefined && !input.words.some((w) => w.name === opts.words))
    throw new LobesError(
      `swap: no word features named ${JSON.stringify(opts.words)} (have ${
        input.words.map((w) => w.name).join(', ') || 'none'
      })`,
    );
  const incWords = input.words.find((w) => w.name === incName && w.dim > 0) ?? null;

  const points: SwapPointResult[] = [];
  const prog = new Progress({ label: 'swap points', total: input.points.length, unit: 'points', io });
  for (const p of input.points) {
    const X = await p.read();
    for (let t = 0; t < X.length; t++)
      if (!Number.isFinite(X[t]))
        throw new LobesError(`non-finite value at sample ${Math.floor(t / p.dim)}`, { where: p.name });
    const block: Block = { X, d: p.dim, key: blockKey(`point ${p.name}`) };
    const per = {} as Record<Label, SwapLabelResult>;
    const fits = {} as Record<Label, Fitted>;
    for (const label of labels) {
      const f = await fit(label, [block], R, p.name);
      fits[label] = f;
      const minusWords: Record<string, ScoreDifferences> = {};
      for (const [name, wf] of wordFits)
        minusWords[name] = diff(f, codes[label], wf[label], codes[label], `${p.name} ${label} - ${name}`);
      let incremental: ScoreDifferences | null = null;
      let combined: ClassifierMetrics | null = null;
      if (incWords) {
        const both = await fit(label, [wordBlocks.get(incWords.name)!, block], 0, `${incWords.name} + ${p.name}`);
        combined = both.metrics;
        incremental = diff(both, codes[label], wordFits.get(incWords.name)![label], codes[label],
          `${p.name} ${label} incremental`);
      }
      per[label] = { probe: f.metrics, conditional: await conditional(label, f), minusWords, incremental, combined };
    }
    points.push({ point: p.name, layer: p.layer, pool: p.pool, question: per.question, response: per.response,
      questionMinusResponse: diff(fits.question, codes.question, fits.response, codes.response, `${p.name} q-r`) });
    prog.tick(1);
    const q = per.question.probe.balancedAccuracy.value;
    const r = per.response.probe.balancedAccuracy.value;
    say(`${p.name}: balanced accuracy question ${q.toFixed(3)}, response ${r.toFixed(3)}`);
  }
  prog.finish();
  const family = adjustConditional(points, plan, conditionalFam);
  return {
    n,
    classes,
    chance: { question: chanceOf(codes.question, classes), response: chanceOf(codes.response, classes) },
    crossChance: { questionFromResponse: crossChance(input.question, input.response),
      responseFromQuestion: crossChance(input.response, input.question) },
    words,
    incrementalWords: incWords?.name ?? null,
    points,
    families: [family],
    notes: input.notes,
    settings: { seed, bootstrap: B, permutations: R, conditionalPermutations: plan, probe, probePca,
      ...(groups
        ? { group: { axis: input.groupAxis ?? GROUP_AXIS, groups: gIndex.size, conditional: 'within-groups' as const } }
        : {}) },
  };
}

/** The label axes a swap run needs. */
const NEEDED = ['question_aspect', 'response_aspect', 'swapped'];

/**
 * The inputs of the analysis from a run of a swap composition: its swapped samples, their two
 * labels, every final/resid point (last token and mean; `points` picks some by name) and the
 * word features of their texts.
 */
export async function swapInputOf(run: RunReader, modelDir: string | undefined, pick?: string[],
  withWords = true): Promise<SwapInput>
{
  for (const a of NEEDED) {
    if (!run.samples.every((s) => a in s.labels)) {
      throw new LobesError(`the run has no ${a} label: it is not a question/response swap`, { file: run.dir,
        hint: 'extract from socialeval:DIR?swap=SEED (docs/datasets.md)' });
    }
  }
  const rows = Int32Array.from(run.samples.flatMap((s, i) => (s.labels.swapped === 'swapped' ? [i] : [])));
  if (rows.length === 0) throw new LobesError('the run has no swapped samples', { file: run.dir });
  const hooks = run
    .hooks()
    .map((h) => ({ h, hook: parseHook(h.name) }))
    .filter((x) =>
      x.hook &&
      (x.hook.site === 'final.hidden' || x.hook.site === 'final.mean' || x.hook.site === 'resid_out' ||
        x.hook.site === 'resid_out.mean')
    )
    .filter((x) => !pick || pick.includes(x.h.name))
    .sort((a, b) => (a.hook!.layer ?? Infinity) - (b.hook!.layer ?? Infinity) || compareHooks(a.hook!, b.hook!));
  if (pick) {
    for (const p of pick)
      if (!hooks.some((x) => x.h.name === p))
        throw new LobesError(
          `the run has no capture point ${p} (final.hidden, final.mean, layers.{i}.resid_out, layers.{i}.resid_out.mean)`,
          { file: run.dir },
        );
  }
  if (hooks.length === 0)
    throw new LobesError('the run has no final or residual-stream capture points', { file: run.dir,
      hint: `extract with ${opt('capture', 'final,resid,mean')}` });
  const { wordFeatures } = await import('../cluster/baseline.js');
  const w = withWords ? await wordFeatures(run, rows, modelDir) : { features: [], notes: [] };
  return {
    question: Array.from(rows, (r) => run.samples[r].labels.question_aspect),
    response: Array.from(rows, (r) => run.samples[r].labels.response_aspect),
    points: hooks.map(({ h, hook }) => ({ name: h.name, layer: hook!.layer,
      pool: sitePool(hook!.site) === 'mean' ? 'mean' : 'last', dim: h.dim, read: () => run.read(h.name, rows) })
    ),
    words: w.features,
    notes: w.notes,
    // the response's world tree of each swapped sample, when the spec grouped the items (group=tree)
    ...(run.labelAxes().includes(GROUP_AXIS)
      ? { groups: Array.from(rows, (r) => run.samples[r].labels[GROUP_AXIS] ?? ''), groupAxis: GROUP_AXIS }
      : {}),
  };
}

/**
 * Check that `control` is a random-weights control (`extract --control random`) of the model of
 * `run`, extracted from the same samples (ids, texts and labels in the same order, the same swap
 * pairing); throws one line naming the control run and what differs.
 */
export function checkSwapControl(run: RunReader, control: RunReader): void {
  const short = (h: string | undefined) => (h ? `${h.slice(0, 12)}…` : 'none');
  const hint = 'extract the control with lobes extract --control random from the same model and --data';
  const c = control.manifest.model.control;
  if (run.manifest.model.control)
    throw new LobesError(
      `the run is itself a random-weights control: give the trained run, and the control with ${opt('control')}`,
      { file: run.dir },
    );
  if (!c || c.kind !== 'random')
    throw new LobesError(`${opt('control')}: not a random-weights control run (its manifest has no model.control)`, {
      file: control.dir,
      hint,
    });
  if (c.sourceGraphSha256 !== run.manifest.model.graphSha256)
    throw new LobesError(
      `${opt('control')}: a control of another model (its source graph sha256 ${
        short(c.sourceGraphSha256)
      }, the run's ${short(run.manifest.model.graphSha256)})`,
      { file: control.dir, hint },
    );
  const pairs = (r: RunReader) => r.manifest.dataset.composition?.pairsSha256;
  if (pairs(control) !== pairs(run))
    throw new LobesError(
      `${opt('control')}: another question/response pairing (pairs sha256 ${short(pairs(control))}, the run's ${
        short(pairs(run))
      })`,
      { file: control.dir, hint },
    );
  if (control.samples.length !== run.samples.length || hashItems(control.samples) !== hashItems(run.samples))
    throw new LobesError(
      `${
        opt('control')
      }: other samples than the run's (${control.samples.length} samples, the run ${run.samples.length}; their ids, texts and labels hash differently)`,
      { file: control.dir, hint },
    );
}

/** The output folder of the analysis of a run. */
export function swapDir(run: RunReader, out?: string): string {
  return out ?? swapFolder(run.dir);
}
