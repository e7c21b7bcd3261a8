/**
 * The `lobes lens` job: every layer's residual stream at the run's captured position (the last
 * token; `layers.{i}.resid_out`) read through the model's final norm and unembedding
 * (head.ts, compute.ts), and written to RUN/lens/ whole (writeDirAtomic, with lineage: the run,
 * the chunk files of every point read, and the model's files).
 *
 * Answer candidates: items whose labels carry `answer` (the correct option's letter, A, B, ...)
 * get the rank and probability of the correct option's token and, per layer, whether it wins
 * among the options' tokens. The options are A.. the label `options` (their count) when an item
 * has it, else A.. the last letter any item of the run answers. Each letter's token is the one
 * the evaluation scores after the item's text (src/runtime/eval-tokenizer.ts answerSlot); an item whose
 * answer slot is not the run's last token (the tokenizer writes the text's last characters and
 * the letter as one token) has no candidates, and is counted with the reason.
 */
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { checkOutputDir } from '../util/output.js';
import { writeDirAtomic } from '../util/io.js';
import { Progress } from '../util/progress.js';
import { jobIO, type JobIOOptions } from '../util/jobio.js';
import { parseHook } from '../hooks.js';
import { analysisProvenance } from '../store/provenance.js';
import { modelInput, runInputs } from '../store/lineage.js';
import { manifestPath } from '../store/layout.js';
import type { RunReader, SampleRow } from '../store/types.js';
import { resolveRunModel } from '../runtime/modelfiles.js';
import { LOBES_VERSION } from '../version.js';
import { readLensHead, type LensHead } from './head.js';
import { entropy, klDivergence, lensLogProbs, rankOf, topK } from './compute.js';
import { lensDir, writeLensFiles } from './store.js';
import type { LensItem, LensLayerSummary, LensResult } from './types.js';

/** Its IO (`io`: its progress) and the deprecated `quiet` (src/util/jobio.ts). */
export interface LensOptions extends JobIOOptions {
  /** The run's model folder, when it has moved (checked by hash). */
  model?: string;
  /** Tokens listed per layer (default 5). */
  topK?: number;
  /** Output folder (default RUN/lens). */
  out?: string;
  noWrite?: boolean;
  /** The head to apply instead of the model's (tests). */
  head?: LensHead;
}

export const DEFAULT_TOP_K = 5;

/** The run's `layers.{i}.resid_out` points, by layer; an error naming the run when it has none or lacks the last layer. */
export function lensPoints(run: RunReader): { layer: number; point: string }[] {
  const pts = run.hooks().flatMap((h) => {
    const k = parseHook(h.name);
    return k && k.layer !== null && k.site === 'resid_out' ? [{ layer: k.layer, point: h.name }] : [];
  }).sort((a, b) => a.layer - b.layer);
  const file = manifestPath(run.dir);
  if (!pts.length)
    throw new LobesError('the run holds no layers.{i}.resid_out capture points (the residual stream at the last token)',
      { file, hint: `extract the run with ${opt('capture', 'resid')} (or all)` });
  const last = (run.manifest.model?.arch?.layers ?? pts.at(-1)!.layer + 1) - 1;
  if (pts.at(-1)!.layer !== last)
    throw new LobesError(
      `the run holds layers.${
        pts.at(-1)!.layer
      }.resid_out but not the last layer's, layers.${last}.resid_out: the lens compares every layer with the final distribution`,
      { file, hint: `extract the run with ${opt('capture', 'resid')} and every layer` },
    );
  return pts;
}

/** The letters A.. of `n` options. */
const lettersOf = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(65 + i));

/** Each item's options' letters and the correct one's, from its labels (answer, options); null without `answer`. */
export function itemOptions(samples: SampleRow[]): ({ letter: string; letters: string[] } | null)[] {
  const isLetter = (s: unknown): s is string => typeof s === 'string' && /^[A-Z]$/.test(s);
  const maxLetter = samples.reduce((m, s) => (isLetter(s.labels?.answer) && s.labels.answer > m ? s.labels.answer : m),
    '');
  return samples.map((s) => {
    const a = s.labels?.answer;
    if (!isLetter(a)) return null;
    const k = Number(s.labels.options);
    const letters = Number.isInteger(k) && k >= 2 && k <= 26 ? lettersOf(k) : lettersOf(maxLetter.charCodeAt(0) - 64);
    return letters.includes(a) ? { letter: a, letters } : null;
  });
}

const median = (xs: number[]) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Run the lens on a run and write RUN/lens/ (or opts.out). */
export async function runLens(input: RunReader | string,
  opts: LensOptions = {}): Promise<{ result: LensResult; outDir: string | null }>
{
  const { openRun } = await import('../store/index.js');
  const run = typeof input === 'string' ? await openRun(input) : input;
  const out = path.resolve(opts.out ?? lensDir(run.dir));
  const k = opts.topK ?? DEFAULT_TOP_K;
  if (!Number.isInteger(k) || k < 1) throw new LobesError(`${opt('topK')} must be a positive integer, got ${k}`);
  if (!opts.noWrite) checkOutputDir(out, 'lens');
  const points = lensPoints(run);
  const manifest = opts.model !== undefined
    ? { ...run.manifest, model: { ...run.manifest.model, dir: path.resolve(opts.model) } }
    : run.manifest;
  const modelDir = resolveRunModel(manifest, run.dir, { roles: ['graph', 'data', 'tokenizer'],
    hint: `restore the model the run was extracted with, or name it with ${opt('model', 'DIR')}` });
  const head = opts.head ?? readLensHead(modelDir);
  const dim = run.hooks().find((h) => h.name === points[0]!.point)!.dim;
  if (dim !== head.hidden)
    throw new LobesError(`the run's residual stream has ${dim} dimensions, the model's final norm ${head.hidden}`, {
      file: manifestPath(run.dir),
    });
  const { loadEvalTokenizer } = await import('../runtime/eval-tokenizer.js');
  const tok = await loadEvalTokenizer(modelDir, { chatTemplate: 'off' });
  const decode = new Map<number, string>();
  const dec = (id: number) => decode.get(id) ?? decode.set(id, tok.decode([id])).get(id)!;
  // answer candidates: each letter's token after the item's text, when it is the run's last position
  const samples = run.samples;
  const options = itemOptions(samples);
  let skipped = 0;
  let skippedWhy: string | null = null;
  const cands = options.map((o, i) => {
    if (!o) return null;
    const s = samples[i]!;
    if (typeof s.text !== 'string') {
      skipped++;
      skippedWhy ??= 'the run does not store the item texts';
      return null;
    }
    try {
      const slot = tok.answerSlot(s.text, o.letters, `item ${s.id}`);
      if (slot.ids.length !== s.tokens) {
        skipped++;
        skippedWhy ??=
          `the answer slot of item ${s.id} is at token ${slot.ids.length}, the run captured token ${s.tokens} (the tokenizer joins the text's end and the letter)`;
        return null;
      }
      return { ...o, tokens: slot.candidates };
    } catch (e) {
      if (!(e instanceof LobesError)) throw e;
      skipped++;
      skippedWhy ??= e.message;
      return null;
    }
  });
  const rows = await Promise.all(points.map((p) => run.read(p.point)));
  const n = samples.length;
  const L = points.length;
  const bar = new Progress({ label: 'lens', total: n, unit: 'items', io: jobIO(opts) });
  const items: LensItem[] = [];
  for (let i = 0; i < n; i++) {
    const logps = rows.map((r) => lensLogProbs(r.subarray(i * dim, (i + 1) * dim), head));
    const fin = logps[L - 1]!;
    const c = cands[i];
    items.push({
      id: samples[i]!.id,
      layers: logps.map((lp) => {
        const correct = c ?
          (() => {
            const want = c.tokens[c.letters.indexOf(c.letter)]!;
            const best = c.tokens.reduce((b, t) => (lp[t]! > lp[b]! ? t : b), c.tokens[0]!);
            return { rank: rankOf(lp, want), p: Math.exp(lp[want]!), hit: best === want };
          })() :
          undefined;
        return { top: topK(lp, k).map((t) => ({ id: t.id, token: dec(t.id), p: Math.exp(t.logp) })),
          entropy: entropy(lp), kl: klDivergence(fin, lp), ...(correct ? { correct } : {}) };
      }),
      ...(c ? { answer: { letter: c.letter, letters: c.letters, tokens: c.tokens } } : {}),
    });
    bar.tick(1);
  }
  bar.finish();
  const withC = items.filter((it) => it.answer);
  const summary: LensLayerSummary[] = points.map((p, l) => {
    const mean = (f: (it: LensItem) => number, xs: LensItem[]) =>
      xs.reduce((s, it) => s + f(it), 0) / Math.max(1, xs.length);
    return {
      layer: p.layer,
      point: p.point,
      entropy: mean((it) => it.layers[l]!.entropy, items),
      kl: mean((it) => it.layers[l]!.kl, items),
      accuracy: withC.length ? mean((it) => (it.layers[l]!.correct!.hit ? 1 : 0), withC) : null,
      medianRank: median(withC.map((it) => it.layers[l]!.correct!.rank)),
      meanP: withC.length ? mean((it) => it.layers[l]!.correct!.p, withC) : null,
    };
  });
  const candidates = withC.length || skipped
    ? { items: withC.length,
      chance: withC.length ? withC.reduce((s, it) => s + 1 / it.answer!.letters.length, 0) / withC.length : 0, skipped,
      skippedWhy }
    : null;
  const result: LensResult = { format: 'lobes-lens', version: 1, topK: k, layers: points, summary, candidates, items };
  if (opts.noWrite) return { result, outDir: null };
  const hooks = points.map((p) => p.point);
  const settings = { topK: k, position: 'last token', points: hooks,
    head: { ...head.found, eps: head.eps, hidden: head.hidden, vocab: head.vocab, softcap: head.softcap },
    model: modelDir, lobesVersion: LOBES_VERSION, provenance: analysisProvenance(run, hooks) };
  const files = run.manifest.model?.files ?? [];
  await writeDirAtomic(out, (tmp) => writeLensFiles(tmp, { settings, result }), { kind: 'lens',
    inputs: [...runInputs(run, hooks), ...(files.length ? [modelInput(files, modelDir)] : [])] });
  return { result, outDir: out };
}

/** The plain-words lines `lobes lens` prints: one per layer. */
export function lensLines(r: LensResult): string[] {
  const c = r.candidates;
  const head = c && c.items
    ? `lens over ${r.items.length} items; ${c.items} with answer options (chance ${(c.chance * 100).toFixed(1)}%)${
      c.skipped ? `; ${c.skipped} without: ${c.skippedWhy}` : ''
    }`
    : `lens over ${r.items.length} items (no answer options: items need the label "answer")`;
  return [head,
    ...r.summary.map((s) =>
      `${s.point}: entropy ${s.entropy.toFixed(2)} nats, KL to final ${s.kl.toFixed(3)}${
        s.accuracy !== null
          ? `, accuracy ${(s.accuracy * 100).toFixed(1)}% (chance ${
            (c!.chance * 100).toFixed(1)
          }%), median rank ${s.medianRank}`
          : ''
      }`
    )];
}
