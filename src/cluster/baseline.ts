/**
 * Baselines from the tokens alone: does the text's token content already separate the labels,
 * before any model computation? For the metric sample of a run, each item is tokenized again
 * exactly as extract fed it (the run's model folder, chat template and truncation), and two
 * feature sets go through the same linear probe as the model's representation:
 *
 *  - `token-counts`: how often each token id occurs in the item (a bag of tokens), over the
 *    ids that occur in at least two items of the sample (an id seen in one item cannot inform
 *    the prediction of any other);
 *  - `token-embedding-mean`: the mean of the model's input embedding rows of the item's tokens
 *    (the model's own first layer input, averaged: no attention, no MLP).
 *
 * With the representation's probe at hand, each baseline is also compared with it item by item
 * (a paired bootstrap over items and fold repeats, src/cluster/paired.ts), and an incremental
 * probe sees both feature sets side by side (each reduced by its own in-fold PCA): does the
 * representation add anything to the words?
 *
 * A baseline that cannot be computed (no model folder, no texts in the run, an embedding table
 * lobes cannot find) is left out with a note; the rest of the analysis does not depend on it.
 *
 * A control beside them, `length` (lengthControl): the item's token count as extract fed it (the
 * run's samples table) and its log, through the same probe with its null, and the incremental
 * probe (length + representation) − length. It needs no model folder. It is not a member of the
 * verdict's family of classifiers (docs/cluster.md, "Length control").
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { RepeatedCv } from './probecv.js';
import type { RunReader } from '../store/types.js';
import { modelFolderDifference, runModelCandidates } from '../runtime/modelfiles.js';
import { modelInput, type LineageInput } from '../store/lineage.js';
import { LobesError, opt } from '../util/errors.js';
import type { BaselineMetrics, ClusterItems, IncrementalMetrics, ProbeComparison } from './types.js';
import { compareProbes, runProbe, type MeasureContext, type MetricSample } from './measure.js';

/**
 * The model folder whose tokenizer and input embeddings the baselines read: the run's recorded
 * folder, or `override` (cluster --model, for a run moved to another machine). Either must hold
 * the very files the run recorded (graph, external data and tokenizer, by sha256; hashes are
 * cached per machine): a different tokenizer or embedding table (the graph holds the embeddings
 * when they are not in external data) would give baselines of another model. Undefined when the
 * run records no model folder; a recorded folder that is gone is returned as it is (the
 * baselines then say they cannot be had).
 */
export function baselineModelDir(run: RunReader, override?: string): string | undefined {
  const recorded = run.manifest?.model?.files ?? [];
  if (override === undefined) {
    if (!run.manifest?.model?.dir) return undefined;
    const found = runModelCandidates(run.manifest, run.dir).find((d) => existsSync(d));
    if (!found) return run.manifest.model.dir;
    const diff = modelFolderDifference(found, recorded);
    if (diff)
      throw new LobesError(`${diff.message}, so its token baselines would be another model's`, { file: diff.file,
        hint: `restore the model folder, give the run's model with ${
          opt('model', 'DIR')
        }, or leave the baselines out with ${opt('baselines')}` });
    return found;
  }
  if (!existsSync(override))
    throw new LobesError('no such model folder', { file: override,
      hint: `cluster ${opt('model')} names the folder of the model the run was extracted with` });
  for (const f of recorded) {
    const file = path.join(override, f.name);
    if (!existsSync(file))
      throw new LobesError(`${f.name} is missing, and the run was extracted with one`, { file: override,
        hint: 'give the folder of the model the run was extracted with' });
  }
  const diff = modelFolderDifference(override, recorded);
  if (diff)
    throw new LobesError(
      `${diff.message}; the token baselines need the tokenizer and embeddings (graph and weight files) the run was extracted with`,
      { file: diff.file, hint: 'give the folder of the model the run was extracted with' },
    );
  return override;
}

/** The lineage input of the model the baselines read (the run's recorded files, which baselineModelDir checked the folder holds). */
export function baselineModelInput(run: RunReader, dir: string | undefined): LineageInput[] {
  const files = run.manifest?.model?.files;
  return dir && files?.length && existsSync(dir) ? [modelInput(files, dir)] : [];
}

/** Token ids of the metric sample's items, as extract fed them; or why they cannot be had. */
async function sampleTokens(run: RunReader, rows: Int32Array,
  dir: string | undefined): Promise<{ ids: number[][]; mismatched: number } | { note: string }>
{
  if (!dir || !existsSync(dir))
    return {
      note:
        `no token baselines: the run's model folder ${dir} is not there (its tokenizer is needed; cluster --model DIR names where it is now)`,
    };
  const texts = Array.from(rows, (r) => run.samples[r]?.text);
  if (texts.some((t) => typeof t !== 'string'))
    return { note: 'no token baselines: the run does not store the item texts' };
  const { loadTokenizer } = await import('../runtime/tokenize.js');
  let tok;
  try {
    tok = await loadTokenizer(dir, { maxTokens: run.manifest.tokenizer?.maxTokens ?? null,
      chatTemplate: !!run.manifest.tokenizer?.chatTemplate });
  } catch (e) {
    return { note: `no token baselines: ${String((e as Error).message ?? e).split('\n')[0]}` };
  }
  let mismatched = 0;
  const ids = texts.map((t, i) => {
    const enc = tok.encode(t!).ids;
    if (enc.length !== run.samples[rows[i]].tokens) mismatched++;
    return enc;
  });
  return { ids, mismatched };
}

/** Token-count features [m, V] over the ids occurring in at least two items. */
export function tokenCounts(ids: number[][]): { X: Float64Array; dim: number } {
  const items = new Map<number, number>();
  for (const seq of ids) for (const t of new Set(seq)) items.set(t, (items.get(t) ?? 0) + 1);
  const vocab = [...items.entries()].filter(([, c]) => c >= 2).map(([t]) => t).sort((a, b) => a - b);
  const col = new Map(vocab.map((t, j) => [t, j]));
  const V = vocab.length;
  const X = new Float64Array(ids.length * V);
  ids.forEach((seq, i) => {
    for (const t of seq) {
      const j = col.get(t);
      if (j !== undefined) X[i * V + j]++;
    }
  });
  return { X, dim: V };
}

/**
 * The input embedding table of an ONNX model: the 2-D float constant that a Gather reads with
 * an integer graph input as indices. Null (with the reason) when there is none.
 */
async function embeddingTable(
  modelDir: string,
): Promise<{ E: Float32Array; vocab: number; dim: number } | { note: string }> {
  const onnx = await import('../onnx/index.js');
  let m;
  try {
    m = onnx.loadModel(modelDir);
  } catch (e) {
    return { note: `no token-embedding-mean baseline: ${String((e as Error).message ?? e).split('\n')[0]}` };
  }
  const graph = m.model.graph;
  if (!graph) return { note: 'no token-embedding-mean baseline: the model file has no graph' };
  const g = new onnx.GraphIndex(graph);
  const intInputs = new Set(
    graph.input.filter((v) =>
      v.type?.tensorType?.elemType === onnx.DataType.INT64 || v.type?.tensorType?.elemType === onnx.DataType.INT32
    ).map((v) => v.name),
  );
  for (const node of graph.node) {
    if (node.opType !== 'Gather' || node.domain) continue;
    let idx: string | undefined = node.input[1];
    // look through casts of the token ids
    for (let k = 0; k < 3 && idx && !intInputs.has(idx); k++) {
      const p = g.prod(idx);
      idx = p && p.opType === 'Cast' ? p.input[0] : undefined;
    }
    if (!idx || !intInputs.has(idx)) continue;
    const t = g.constTensor(node.input[0]);
    if (!t || t.dims.length !== 2 || !node.input[0] || !m.initializers.has(node.input[0])) continue;
    const [vocab, dim] = t.dims.map(Number);
    if (vocab * dim * 4 > 4e9)
      return { note: 'no token-embedding-mean baseline: the embedding table is larger than 4 GB as float32' };
    try {
      return { E: onnx.readInitializerFloat32(m, node.input[0]), vocab, dim };
    } catch (e) {
      return { note: `no token-embedding-mean baseline: ${String((e as Error).message ?? e).split('\n')[0]}` };
    }
  }
  return {
    note:
      'no token-embedding-mean baseline: no float embedding table read by the token ids (a quantized table is not supported)',
  };
}

/** Mean embedding rows [m, dim] of each item's tokens. */
export function embeddingMeans(ids: number[][], E: Float32Array, vocab: number, dim: number): Float64Array {
  const X = new Float64Array(ids.length * dim);
  ids.forEach((seq, i) => {
    const o = i * dim;
    for (const t of seq) {
      if (t < 0 || t >= vocab) continue;
      const e = t * dim;
      for (let j = 0; j < dim; j++) X[o + j] += E[e + j];
    }
    const inv = seq.length ? 1 / seq.length : 0;
    for (let j = 0; j < dim; j++) X[o + j] *= inv;
  });
  return X;
}

/** The representation's probe, for the paired comparisons with the words. */
export interface StateProbe {
  /** Its name in the comparisons (the capture point). */
  name: string;
  /** Features of the metric sample [m, d]. */
  X: Float64Array;
  d: number;
  cv: RepeatedCv;
}

/** A feature set computed from the tokens alone. */
export interface WordFeatures {
  name: string;
  description: string;
  X: Float64Array;
  dim: number;
}

/**
 * The token-baseline features of the run's rows `rows` (token counts; the mean input embedding),
 * tokenized as extract fed them, with notes on what could not be computed.
 */
export async function wordFeatures(run: RunReader, rows: Int32Array,
  modelDir: string | undefined): Promise<{ features: WordFeatures[]; notes: string[] }>
{
  const notes: string[] = [];
  const features: WordFeatures[] = [];
  const tok = await sampleTokens(run, rows, modelDir);
  if ('note' in tok) return { features, notes: [tok.note] };
  if (tok.mismatched)
    notes.push(
      `token baselines: ${tok.mismatched} of ${tok.ids.length} items tokenize to another length than the run recorded (has the model folder's tokenizer changed?)`,
    );
  const counts = tokenCounts(tok.ids);
  features.push({ name: 'token-counts',
    description: `counts of each token id in the item (${counts.dim} ids that occur in at least two items)`,
    ...counts });
  const emb = await embeddingTable(modelDir!);
  if ('note' in emb) notes.push(emb.note);
  else
    features.push({ name: 'token-embedding-mean',
      description: `mean of the model's input embeddings of the item's tokens (d = ${emb.dim})`,
      X: embeddingMeans(tok.ids, emb.E, emb.vocab, emb.dim), dim: emb.dim });
  return { features, notes };
}

/** The name of the length control's feature set. */
export const LENGTH_CONTROL = 'length';

/**
 * The length features [m, 2] of the run's rows `rows`: each item's token count as extract fed it
 * (samples.jsonl `tokens`) and its natural log. A note instead when a row has no token count.
 */
export function lengthFeatures(run: Pick<RunReader, 'samples'>, rows: Int32Array): WordFeatures | { note: string } {
  const X = new Float64Array(rows.length * 2);
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < rows.length; i++) {
    const s = run.samples[rows[i]!];
    const t = s?.tokens;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 1)
      return {
        note: `no length control: samples row ${rows[i]! + 1}${
          s?.id !== undefined ? ` (id ${s.id})` : ''
        } has no token count (tokens ${JSON.stringify(t)})`,
      };
    X[2 * i] = t;
    X[2 * i + 1] = Math.log(t);
    lo = Math.min(lo, t);
    hi = Math.max(hi, t);
  }
  return { name: LENGTH_CONTROL, description: `the item's token count as extract fed it (${lo}–${hi}) and its log`, X,
    dim: 2 };
}

/**
 * The length control of a run's metric sample: the probe on the length features with its null
 * and, given the representation's probe, the incremental probe (length + representation) and its
 * paired comparison with length alone (kind `incremental`, so that it joins the
 * representation-vs-words family). Nothing but a note when the run has no token counts.
 */
export async function lengthControl(
  ctx: MeasureContext,
  run: Pick<RunReader, 'samples'>,
  sample: MetricSample,
  state?: StateProbe,
): Promise<
  { controls: BaselineMetrics[]; items: ClusterItems['baselines']; notes: string[]; incremental: IncrementalMetrics[];
    comparisons: ProbeComparison[] }
> {
  const f = lengthFeatures(run, sample.rows);
  if ('note' in f) return { controls: [], items: [], notes: [f.note], incremental: [], comparisons: [] };
  const Rp = sample.mopts.probePermutations;
  const r = await runProbe(ctx, [{ X: f.X, d: f.dim }], sample, Rp, `cluster probe (${f.name})`);
  const controls = [{ name: f.name, description: f.description, dim: f.dim, probeDims: r.dims, probe: r.metrics }];
  const items = [{ name: f.name, probe: Array.from(r.cv.preds[0]!),
    probeRepeats: r.cv.preds.map((p) => Array.from(p)) }];
  if (!state) return { controls, items, notes: [], incremental: [], comparisons: [] };
  const both = await runProbe(ctx, [{ X: f.X, d: f.dim }, { X: state.X, d: state.d }], sample, Rp,
    `cluster probe (${f.name} + ${state.name})`);
  const comparison = compareProbes(ctx, sample, 'incremental', { name: `${f.name} + ${state.name}`, cv: both.cv }, {
    name: f.name,
    cv: r.cv,
  });
  return { controls, items, notes: [], incremental: [{ words: f.name, probeDims: both.dims, probe: both.metrics }],
    comparisons: [comparison] };
}

/**
 * The summary's sentence on the length control: whether length alone separates the labels, i.e.
 * its probe's balanced accuracy is above chance on its permutation null (p ≤ 0.05, one test: the
 * control is read on its own), or, without a null, its CI's lower end is above chance.
 */
export function lengthSentence(control: BaselineMetrics, chance: number): string {
  const b = control.probe.balancedAccuracy;
  const ci = b.ci95 ? ` [${b.ci95[0].toFixed(3)}, ${b.ci95[1].toFixed(3)}]` : '';
  const p = b.p !== null && b.p !== undefined ? `, p=${b.p.toPrecision(2)}` : '';
  const above = b.p !== null && b.p !== undefined ? b.p <= 0.05 : !!b.ci95 && b.ci95[0] > chance;
  const figures = `balanced accuracy ${b.value.toFixed(3)}${ci} vs chance ${chance.toFixed(3)}${p}`;
  return above
    ? `length alone separates the labels: ${figures}; read the (length + representation) − length comparison before crediting the representation`
    : `length alone does not separate the labels: ${figures}`;
}

/**
 * The token baselines of a run's metric sample (each with the probe's scores, CIs and null) and,
 * given the representation's probe, for each baseline: the paired difference representation −
 * words, and the incremental probe on both feature sets together, (words + representation) − words.
 */
export async function tokenBaselines(
  ctx: MeasureContext,
  run: RunReader,
  sample: MetricSample,
  modelDir = baselineModelDir(run),
  state?: StateProbe,
): Promise<
  { baselines: BaselineMetrics[]; items: ClusterItems['baselines']; notes: string[]; incremental: IncrementalMetrics[];
    comparisons: ProbeComparison[] }
> {
  const notes: string[] = [];
  const baselines: BaselineMetrics[] = [];
  const items: ClusterItems['baselines'] = [];
  const incremental: IncrementalMetrics[] = [];
  const comparisons: ProbeComparison[] = [];
  const wf = await wordFeatures(run, sample.rows, modelDir);
  notes.push(...wf.notes);
  const feats = wf.features;
  const Rp = sample.mopts.probePermutations;
  for (const f of feats) {
    if (f.dim === 0) {
      notes.push(`${f.name}: no features (no token occurs in two items)`);
      continue;
    }
    const r = await runProbe(ctx, [{ X: f.X, d: f.dim }], sample, Rp, `cluster probe (${f.name})`);
    baselines.push({ name: f.name, description: f.description, dim: f.dim, probeDims: r.dims, probe: r.metrics });
    items.push({ name: f.name, probe: Array.from(r.cv.preds[0]), probeRepeats: r.cv.preds.map((p) => Array.from(p)) });
    if (!state) continue;
    const words = { name: f.name, cv: r.cv };
    comparisons.push(compareProbes(ctx, sample, 'model-vs-words', { name: state.name, cv: state.cv }, words));
    const both = await runProbe(ctx, [{ X: f.X, d: f.dim }, { X: state.X, d: state.d }], sample, Rp,
      `cluster probe (${f.name} + ${state.name})`);
    incremental.push({ words: f.name, probeDims: both.dims, probe: both.metrics });
    comparisons.push(
      compareProbes(ctx, sample, 'incremental', { name: `${f.name} + ${state.name}`, cv: both.cv }, words),
    );
  }
  return { baselines, items, notes, incremental, comparisons };
}
