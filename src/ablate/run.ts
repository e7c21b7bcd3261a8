/**
 * The `lobes ablate` job (docs/ablate.md): score every item's continuation log-likelihood with
 * the model as it is, then with each region's blocks zeroed, then with each random region
 * zeroed, and compare.
 *
 * Mechanism: the model folder is copied once into DIR/.lobes-ablate-model (lobes' own copy,
 * removed at the end); for each pass the blocks are set to exact zeros in that copy's weight
 * bytes (src/ablate/patch.ts), a session is opened on it, the items are scored, and the bytes
 * are restored from the original before the next pass. The graph is never rebuilt.
 *
 * The job folder is claimed like every job (src/store/job.ts); scores go to record chunks
 * (src/store/records.ts), one chunk per (pass, 64 items), so a killed job resumes where it was.
 * ablation.json, records.jsonl and summary.json are written only when every pass is done.
 */
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import { Progress, fmtTime } from '../util/progress.js';
import { claimJobFolder, isFreshFolder } from '../store/job.js';
import { RecordChunks, readVerifiedJsonl, type RecordLayout } from '../store/records.js';
import { readManifest, sha256Text } from '../store/manifest.js';
import { sameModel } from '../store/provenance.js';
import { modelIdentity, resolveRunModel } from '../runtime/modelfiles.js';
import { checkContext, modelContext } from '../runtime/plan.js';
import { splitContinuation, type LoglikEngine, type LoglikOptions } from '../runtime/loglik.js';
import type { EvalTokenizer, EvalTokenizerOptions } from '../eval/tokenizer.js';
import type { Device } from '../runtime/types.js';
import type { ModelSourceRecord } from '../store/types.js';
import { LOBES_VERSION } from '../version.js';
import { loadAblateItems } from './items.js';
import { blockEdits, copyModelFolder, storedMatrices, WeightPatcher, type Edit, type StoredMatrix } from './patch.js';
import type { WandaMatrix } from '../wanda/types.js';
import { countBlocks, hfBlocks, nullPools, poolCounts, randomRegion, randomSeed, readWandaResults, regionKey, regionMasks, regionSpecs, type Masks, type NullScope, NULL_SCOPES } from './regions.js';
import { ablationStats } from './stats.js';
import { ABLATE_OUTPUTS, CHUNK_INDEX, JOB_MANIFEST, ablateChunksDir, isAblateJobDir, readAblateJob, readAblateSummary, type AblateJob, type AblatePass, type AblateSummary, writeAblateOutputs } from './store.js';

export interface AblateOptions {
  run: string;
  region: string;
  minus?: string | null;
  data: string;
  out: string;
  /** Random regions per null set (default 10). */
  random?: number;
  scope?: NullScope;
  /** A model folder to score (default: the run's model); must be the run's model (sameModel). */
  model?: string | null;
  modelSource?: ModelSourceRecord | null;
  seed?: number;
  limit?: number | null;
  by?: string[];
  device?: Device;
  deviceId?: number;
  threads?: number;
  batch?: number;
  bootstrap?: number;
  chunkUnits?: number;
  force?: boolean;
  quiet?: boolean;
  log?: (line: string) => void;
  deps?: Partial<AblateDeps>;
}

export interface AblateDeps {
  openLoglik(model: string, opts: LoglikOptions): Promise<LoglikEngine>;
  loadTokenizer(model: string, opts: EvalTokenizerOptions): Promise<EvalTokenizer>;
}

export const WORK_DIR = '.lobes-ablate-model';
export const ABLATE_RECORDS: RecordLayout = { format: 'lobes-ablate-chunks', streams: ['scores'] };

/** Run (or resume) an ablation; returns the summary. Nothing is written before every input has been checked. */
export async function runAblate(o: AblateOptions): Promise<AblateSummary> {
  const t0 = Date.now();
  const say = o.log ?? ((l: string) => void (o.quiet ? undefined : process.stderr.write(l + '\n')));
  const K = o.random ?? 10;
  if (!Number.isInteger(K) || K < 1) throw new UsageError(`--random must be a positive integer, got ${K}`);
  const scope = o.scope ?? 'matrix';
  if (!NULL_SCOPES.includes(scope)) throw new UsageError(`--scope must be ${NULL_SCOPES.join(', ')}, got ${JSON.stringify(scope)}`);
  const seed = o.seed ?? 0;
  const chunkUnits = o.chunkUnits ?? 64;
  if (!isFreshFolder(o.out) && !isAblateJobDir(o.out)) throw new LobesError('output folder exists and is not a lobes ablation; lobes does not write into it', { file: o.out, hint: 'give a new or empty folder' });

  // The run, its wanda results, the regions.
  const manifest = readManifest(o.run);
  const w = readWandaResults(o.run, manifest);
  const specs = regionSpecs(w, o.region, o.minus ?? null);
  const masks = specs.map((r) => regionMasks(w, r));
  const matrices = w.regions.matrices;

  // The model: the run's own, or one that is the run's model.
  let modelDir: string;
  if (o.model) {
    const id = modelIdentity(o.model);
    if (!sameModel({ graphSha256: id.graphSha256, source: o.modelSource ?? null }, manifest.model)) {
      throw new LobesError(`--model is not the run's model (the run was extracted from ${manifest.model.dir})`, { file: o.model, hint: 'give the model the run was extracted with, or leave --model out' });
    }
    modelDir = o.model;
  } else modelDir = resolveRunModel(manifest, o.run);
  const stored = storedMatrices(modelDir, matrices);

  // The items, their labels on wanda's axis, and their tokens.
  const data = await loadAblateItems(o.data, { limit: o.limit ?? null, by: o.by, seed });
  const by = w.settings.by;
  if (!data.axes.includes(by)) throw new LobesError(`the data has no label axis ${JSON.stringify(by)}, which the wanda results group by (axes: ${data.axes.join(', ')})`, { hint: 'give data labelled on the same axis as the run' });
  const labels = [...w.settings.groups].sort();
  const items = data.items.filter((it) => labels.includes(it.labels[by] ?? ''));
  if (!items.length) throw new LobesError(`no item of ${data.spec} has a ${by} label among the wanda groups (${labels.join(', ')})`);
  const deps: AblateDeps = {
    openLoglik: o.deps?.openLoglik ?? (await import('../runtime/loglik.js')).openLoglikEngine,
    loadTokenizer: o.deps?.loadTokenizer ?? (await import('../eval/tokenizer.js')).loadEvalTokenizer,
  };
  const tok = await deps.loadTokenizer(modelDir, { chatTemplate: 'off' });
  const split = items.map((it) => {
    const s = splitContinuation(tok, it.context, it.continuation, tok.prefixId ?? 0);
    if (!s.context.length) throw new LobesError('the context has no tokens', { where: `item ${it.id}` });
    if (!s.continuation.length) throw new LobesError('the continuation has no tokens of its own after the context', { where: `item ${it.id}` });
    return s;
  });
  checkContext(split.map((s, i) => ({ id: items[i]!.id, tokens: s.context.length + s.continuation.length })), modelContext(modelDir), () => 'leave out the longer items (lobes ablate scores each context and continuation whole)');

  // Null sets: regions with the same size per pool share their K random regions.
  const pools = nullPools(matrices, scope);
  const sigs: string[] = [];
  const nullOf = masks.map((m) => {
    const sig = poolCounts(m, pools).join(',');
    if (!sigs.includes(sig)) sigs.push(sig);
    return sigs.indexOf(sig);
  });
  const passes: AblatePass[] = [{ id: 'before', kind: 'before', masks: null }];
  specs.forEach((r, i) => passes.push({ id: regionKey(r), kind: 'region', region: r, masks: masks[i]!, nullSet: nullOf[i]! }));
  sigs.forEach((_, s) => {
    const counts = poolCounts(masks[nullOf.indexOf(s)]!, pools);
    for (let j = 0; j < K; j++) {
      const sd = randomSeed(seed, s, j);
      passes.push({ id: `random:${s}:${j}`, kind: 'random', nullSet: s, seed: sd, masks: randomRegion(counts, pools, matrices, sd) });
    }
  });

  const job: AblateJob = {
    format: 'lobes-ablate',
    formatVersion: 1,
    lobesVersion: LOBES_VERSION,
    run: { dir: o.run, identity: manifest.identity ?? null, wanda: { by, block: w.settings.block, top: w.settings.top } },
    model: { dir: modelDir, graphSha256: manifest.model.graphSha256 },
    data: { spec: data.spec, items: items.length, limit: data.limit, itemsSha256: sha256Text(items.map((it) => JSON.stringify([it.id, it.labels, it.context, it.continuation]) + '\n').join('')) },
    settings: { region: o.region, minus: o.minus ?? null, random: K, scope, seed, chunkUnits, bootstrap: o.bootstrap ?? 2000, device: o.device ?? 'cpu' },
    passes: passes.map((p) => p.id),
    complete: false,
  };
  const claim = await claimJobFolder(o.out, { command: 'lobes ablate', isJob: isAblateJobDir, what: 'a lobes ablation', log: say });
  let failed = true;
  const work = path.join(o.out, WORK_DIR);
  let patcher: WeightPatcher | null = null;
  try {
    const prev = isAblateJobDir(o.out) ? readAblateJob(o.out) : null;
    if (prev && (o.force || JSON.stringify({ ...prev, complete: false, files: undefined, timings: undefined }) !== JSON.stringify({ ...job, timings: undefined }))) {
      const differ = (['run', 'model', 'data', 'settings', 'passes'] as const).filter((k) => JSON.stringify(prev[k]) !== JSON.stringify(job[k]));
      if (!o.force) throw new LobesError(`this ablation folder was made with other settings, data, run or model${differ.length ? ` (${differ.join(', ')} differ${differ.length === 1 ? 's' : ''})` : ''}`, { file: path.join(o.out, JOB_MANIFEST), hint: 'use a new --out, or --force to replace it' });
      for (const f of ABLATE_OUTPUTS) rmSync(path.join(o.out, f), { recursive: true, force: true });
    } else if (prev?.complete) {
      say(`ablate: ${o.out} is already complete; nothing to do`);
      failed = false;
      return readAblateSummary(o.out);
    }
    writeFileAtomicSync(path.join(o.out, JOB_MANIFEST), JSON.stringify(job, null, 2) + '\n');
    const { writer, dropped } = await RecordChunks.resume(o.out, ABLATE_RECORDS, chunkUnits);
    for (const d of dropped) say(`ablate: ${d}; scoring it again`);
    const nChunks = Math.ceil(items.length / chunkUnits);
    const todo = passes.map((_, p) => Array.from({ length: nChunks }, (_, j) => p * nChunks + j).filter((c) => !writer.has(c)));
    const left = todo.reduce((a, t) => a + t.length, 0);
    say(`ablate: ${items.length} items × ${passes.length} passes (before, ${specs.length} region${specs.length > 1 ? 's' : ''}, ${sigs.length * K} random regions)${left < passes.length * nChunks ? `, resuming: ${passes.length * nChunks - left} of ${passes.length * nChunks} chunks done` : ''}`);
    if (left) {
      rmSync(work, { recursive: true, force: true });
      copyModelFolder(modelDir, work);
      patcher = new WeightPatcher(path.resolve(modelDir), work);
    }
    const byMatrix = new Map(stored.map((s, k) => [k, s]));
    for (const [p, pass] of passes.entries()) {
      if (!todo[p]!.length) continue;
      patcher!.restore();
      if (pass.masks) patcher!.apply(zeroEdits(pass.masks, matrices, w.settings.block, byMatrix));
      const engine = await deps.openLoglik(work, { device: o.device ?? 'cpu', deviceId: o.deviceId, threads: o.threads, cache: 'off', batch: o.batch ?? 8 });
      const progress = new Progress({ label: `ablate ${p + 1}/${passes.length} ${pass.id}`, total: todo[p]!.reduce((a, c) => a + Math.min(chunkUnits, items.length - (c - p * nChunks) * chunkUnits), 0), unit: 'items', quiet: o.quiet });
      try {
        for (const c of todo[p]!) {
          const j = c - p * nChunks;
          const idx = Array.from({ length: Math.min(chunkUnits, items.length - j * chunkUnits) }, (_, k) => j * chunkUnits + k);
          const got = await engine.score(idx.map((i) => ({ context: split[i]!.context, continuations: [split[i]!.continuation] })), (k) => progress.tick(k));
          writer.write(c, c * chunkUnits, idx.length, { scores: idx.map((i, k) => ({ id: items[i]!.id, ll: got[k]![0]!.logprob })) });
        }
      } finally {
        await engine.close();
      }
      progress.finish();
    }
    // Every pass is scored: gather, check, compute, write.
    const ll = passes.map(() => new Float64Array(items.length));
    const byChunk = new Map(writer.index.chunks.map((e) => [e.chunk, e]));
    passes.forEach((_, p) => {
      for (let j = 0; j < nChunks; j++) {
        const e = byChunk.get(p * nChunks + j)!;
        const rows = readVerifiedJsonl<{ id: string; ll: number }>(ablateChunksDir(o.out), e.scores as any, CHUNK_INDEX);
        rows.forEach((r, k) => {
          const i = j * chunkUnits + k;
          if (r.id !== items[i]!.id) throw new LobesError(`record chunk ${e.chunk} holds item ${r.id} where ${items[i]!.id} was expected`, { file: ablateChunksDir(o.out), hint: 'delete the folder and run again' });
          ll[p]![i] = r.ll;
        });
      }
    });
    const labelOf = Int32Array.from(items, (it) => labels.indexOf(it.labels[by]!));
    const randomPasses = (s: number) => passes.map((q, p) => (q.kind === 'random' && q.nullSet === s ? p : -1)).filter((p) => p >= 0);
    const st = ablationStats({
      labels,
      labelOf,
      before: ll[0]!,
      regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, after: ll[i + 1]!, random: randomPasses(nullOf[i]!).map((p) => ll[p]!) })),
      bootstrap: job.settings.bootstrap,
      seed,
    });
    const summary: AblateSummary = {
      kind: 'ablate',
      version: 1,
      by,
      labels,
      random: K,
      unit: 'nats',
      regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, blocks: countBlocks(masks[i]!) })),
      cells: st.cells,
      specificity: st.specificity,
      pFloor: 1 / (K + 1),
      scope,
      seed,
      items: items.length,
    };
    const files = writeAblateOutputs(o.out, { passes, items, split, ll, stored, matrices, block: w.settings.block, summary, job });
    job.complete = true;
    job.files = files;
    job.timings = { wallMs: Date.now() - t0 };
    writeFileAtomicSync(path.join(o.out, JOB_MANIFEST), JSON.stringify(job, null, 2) + '\n');
    writer.dropChunks();
    say(`ablate: done, ${items.length} items × ${passes.length} passes in ${fmtTime((Date.now() - t0) / 1000)} -> ${o.out}`);
    failed = false;
    return summary;
  } finally {
    patcher?.close();
    rmSync(work, { recursive: true, force: true });
    claim.close(failed);
  }
}

/** The edits zeroing every block of a set. */
export function zeroEdits(masks: Masks, matrices: WandaMatrix[], block: [number, number], stored: Map<number, StoredMatrix>): Edit[] {
  return hfBlocks(masks, matrices, block).flatMap((b) => blockEdits(stored.get(b.matrix)!, b));
}
