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
 *
 * With --task iae (src/ablate/iae.ts) every pass answers eval's multiple-choice items with
 * eval's scorers instead, and the chunks hold whether each item was answered right. The pass
 * before ablating is scored first, on the model folder itself, and the job is refused (nothing
 * written) unless the model answers above chance.
 *
 * Long file: what is left here is runAblate alone, one job's sequence (check the inputs, plan the
 * passes, score each pass with resumable chunks, write the outputs), about 460 lines sharing one
 * set of locals; dividing it would change code, not move it. Its options are in options.ts, the
 * parts it calls around the passes in passes.ts, its statistics in stats.ts.
 */
import { rmSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError, opt, throwIfAborted } from '../util/errors.js';
import { Progress, fmtTime } from '../util/progress.js';
import { jobIO } from '../util/jobio.js';
import { withJobFolder, isFreshFolder } from '../store/job.js';
import { RecordChunks, readVerifiedJsonl, type RecordLayout } from '../store/records.js';
import { readManifest, sha256Text } from '../store/manifest.js';
import { runIdentity, sameModel } from '../store/provenance.js';
import { DATA_INPUT, RUN_INPUT, inputsDiffer, modelInput } from '../store/lineage.js';
import { wandaRegionInputs } from '../wanda/store.js';
import { controlOfFolder } from '../runtime/control.js';
import { modelFolderDifference, modelIdentity, resolveRunModel } from '../runtime/modelfiles.js';
import { modelContext } from '../runtime/plan.js';
import { interventionRecords } from '../runtime/intervene.js';
import { LOBES_VERSION } from '../version.js';
import { copyModelFolder, storedMatrices, WeightPatcher } from './patch.js';
import { selectTop } from '../wanda/regions.js';
import { differenceOrEmpty, maskJaccard, refitRegions, shuffledKey, shuffledSection } from './refit.js';
import { blockMeanAbs, magnitudeRegion, countBlocks, doseKey, groupMasksAtTop, isStoredTop, nullPools, poolCounts,
  randomRegion, randomSeed, readWandaResults, regionKey, regionMasks, regionSpecs, NULL_SCOPES } from './regions.js';
import { ABLATE_RANDOM } from './stats.js';
import { ablationStatsPerToken } from './pertoken.js';
import { chanceTest, iaeSettings, iaeStats, scoreIaeUnits, type IaeOutcome } from './iae.js';
import { ABLATE_OUTPUTS, CHUNK_INDEX, JOB_MANIFEST, ablateChunksDir, continuationRecords, isAblateJobDir, passRecords,
  readAblateJob, readAblateSummary, type AblateIaeRecord, type AblateDose, type AblateJob, type AblatePass,
  type AblateSummary, writeAblateOutputs } from './store.js';
import { writeJsonAtomic } from '../store/json.js';
import type { AblateDeps, AblateOptions } from './options.js';
export type { AblateDeps, AblateOptions } from './options.js';
import { MAGNITUDE, checkChance, ivOpt, loadContinuations, loadTask, magnitudeKey, magnitudeRows, openIae, splitItems,
  zeroEdits, type TaskItems } from './passes.js';

export const WORK_DIR = '.lobes-ablate-model';
export const ABLATE_RECORDS: RecordLayout = { format: 'lobes-ablate-chunks', streams: ['scores'] };

/** Run (or resume) an ablation; returns the summary. Nothing is written before every input has been checked. */
export async function runAblate(o: AblateOptions): Promise<AblateSummary> {
  const t0 = Date.now();
  // everything ablate says is a log line, silenced by --quiet
  const io = jobIO(o, { logUnderQuiet: true });
  throwIfAborted(io.signal, 'lobes ablate');
  const K = o.random ?? ABLATE_RANDOM;
  if (!Number.isInteger(K) || K < 1) throw new UsageError(`${opt('random')} must be a positive integer, got ${K}`);
  const scope = o.scope ?? 'matrix';
  if (!NULL_SCOPES.includes(scope))
    throw new UsageError(`${opt('scope')} must be ${NULL_SCOPES.join(', ')}, got ${JSON.stringify(scope)}`);
  const seed = o.seed ?? 0;
  const iae = iaeSettings(o.task, o.scoring, o.metric);
  const chunkUnits = o.chunkUnits ?? 64;
  const S = o.shuffled ?? 0;
  if (!Number.isInteger(S) || S < 0)
    throw new UsageError(`${opt('shuffled')} must be a non-negative integer, got ${S}`);
  const fitSeed = o.fitSplit ?? null;
  if (fitSeed !== null && !(Number.isInteger(fitSeed) && fitSeed >= 0))
    throw new UsageError(`${opt('fitSplit')} takes a seed, a non-negative integer, got ${fitSeed}`);
  // A dose–response: the regions at other top fractions, from the stored pooled block scores.
  const tops = o.tops?.length ? [...new Set(o.tops)].sort((a, b) => a - b) : null;
  for (const t of tops ?? [])
    if (!(t > 0 && t <= 1)) throw new UsageError(`${opt('tops')} takes fractions in (0, 1], got ${t}`);
  if (o.magnitude && iae) throw new UsageError(`${opt('magnitude')} applies to the continuation task`);
  if (tops && iae)
    throw new UsageError(
      `${opt('tops')} (a dose–response) applies to the continuation task; ${
        opt('task', 'iae')
      } ablates the stored regions only`,
    );
  if (S && iae) throw new UsageError(`${opt('shuffled')} applies to the continuation task`);
  if (!isFreshFolder(o.out) && !isAblateJobDir(o.out))
    throw new LobesError('output folder exists and is not a lobes ablation; lobes does not write into it', {
      file: o.out,
      hint: 'give a new or empty folder',
      code: 'E_EXISTS',
    });

  // The run, its wanda results, the regions.
  const manifest = readManifest(o.run);
  const w = readWandaResults(o.run, manifest, o.wandaBy);
  const specs = regionSpecs(w, o.region, o.minus ?? null);
  const matrices = w.regions.matrices;
  const doseTops = (tops ?? []).filter((t) => !isStoredTop(w, t));

  // The model: the run's own, or one that is the run's model.
  let modelDir: string;
  if (o.model) {
    // By content: every file (graph, weights, tokenizer), or the GGUF's conversion identity.
    const id = modelIdentity(o.model);
    if (!sameModel({ graphSha256: id.graphSha256, filesSha256: id.filesSha256, source: o.modelSource ?? null,
      control: controlOfFolder(o.model) }, manifest.model))
    {
      const diff = id.graphSha256 === manifest.model.graphSha256 && !o.modelSource
        ? modelFolderDifference(o.model, manifest.model.files ?? [])
        : null;
      throw new LobesError(
        `${opt('model')} is not the run's model (the run was extracted from ${manifest.model.dir}${
          diff ? `; ${diff.message}` : ''
        })`,
        { file: o.model, hint: `give the model the run was extracted with, or leave ${opt('model')} out` },
      );
    }
    modelDir = o.model;
  } else
    modelDir = resolveRunModel(manifest, o.run, { roles: ['graph', 'data', 'tokenizer'],
      hint: `restore the model the run was extracted with, or give it with ${opt('model')}` });
  const modelFilesNow = o.model ? modelIdentity(o.model).files : manifest.model.files ?? [];
  const stored = storedMatrices(modelDir, matrices);

  // The items, their labels on wanda's axis, and (continuation task) their tokens.
  const by = w.settings.by;
  const labels = [...w.settings.groups].sort();
  const loaded = iae
    ? await loadTask(o.data, iae, { limit: o.limit ?? null, by: o.by, seed }, by, labels)
    : await loadContinuations(o.data, { limit: o.limit ?? null, by: o.by, seed }, by, labels);

  // --shuffled, --fit-split: regions recomputed from the run's rows by wanda's machinery (src/ablate/refit.ts).
  const loadedIds = loaded.kind === 'iae' ? loaded.units.map((u) => u.facts.id) : loaded.items.map((it) => it.id);
  const loadedLabels =
    (loaded.kind === 'iae' ? loaded.units.map((u) => u.facts.labels) : loaded.items.map((it) => it.labels)).map((l) =>
      l[by]!
    );
  const refit = S || fitSeed !== null
    ? await refitRegions(o.run, w, modelDir, stored, { ids: loadedIds, labels: loadedLabels }, { S, seed, fitSeed })
    : null;
  // --fit-split: only the test half is scored.
  const fitFlags = refit?.fit ?? null;
  const items: TaskItems = !fitFlags
    ? loaded
    : loaded.kind === 'iae'
    ? { ...loaded, units: loaded.units.filter((_, i) => !fitFlags[i]) }
    : { ...loaded, items: loaded.items.filter((_, i) => !fitFlags[i]) };
  // Each region: from the stored regions, or (--fit-split) from the regions fitted on the fit half.
  const fitted = refit?.fitted ?? null;
  const masks = specs.map((
    r,
  ) => (fitted ? regionMasks(w, r, (g) => fitted.masks[labels.indexOf(g)]!.map((m) => m.slice())) : regionMasks(w, r)));
  const doseMasks = doseTops.map((t) => {
    const at = fitted
      ? (g: string) =>
        selectTop(fitted.pooled[labels.indexOf(g)]!, matrices, { ...w.settings.top, kind: 'fraction', value: t })
      : groupMasksAtTop(w, t);
    return specs.map((r) => regionMasks(w, r, at, t));
  });
  const allMasks = [...masks, ...doseMasks.flat()];
  /** The index into allMasks (and nullOf) of region i at dose d (−1: the stored regions). */
  const maskIndex = (d: number, i: number) => (d < 0 ? i : specs.length * (1 + d) + i);
  const deps: AblateDeps = {
    openLoglik: o.deps?.openLoglik ?? (await import('../runtime/loglik.js')).openLoglikEngine,
    loadTokenizer: o.deps?.loadTokenizer ?? (await import('../runtime/eval-tokenizer.js')).loadEvalTokenizer,
    openScorer: o.deps?.openScorer ?? (await import('../eval/engine.js')).openScorer,
  };
  const tok = await deps.loadTokenizer(modelDir, { chatTemplate: iae ? 'auto' : 'off' });
  const split = items.kind === 'continuation' ? splitItems(items.items, tok, modelDir) : [];
  const maxTokens = modelContext(modelDir)?.tokens ?? null;
  const ids = items.kind === 'iae' ? items.units.map((u) => u.facts.id) : items.items.map((it) => it.id);
  const itemLabels = items.kind === 'iae' ? items.units.map((u) => u.facts.labels) : items.items.map((it) => it.labels);
  const N = ids.length;

  // Null sets: regions with the same size per pool share their K random regions.
  const pools = nullPools(matrices, scope);
  const sigs: string[] = [];
  const nullOf = allMasks.map((m) => {
    const sig = poolCounts(m, pools).join(',');
    if (!sigs.includes(sig)) sigs.push(sig);
    return sigs.indexOf(sig);
  });
  const passes: AblatePass[] = [{ id: 'before', kind: 'before', masks: null }];
  specs.forEach((r, i) =>
    passes.push({ id: regionKey(r), kind: 'region', region: r, masks: masks[i]!, nullSet: nullOf[i]! })
  );
  doseTops.forEach((t, d) =>
    specs.forEach((r, i) =>
      passes.push({ id: doseKey(r, t), kind: 'region', region: r, masks: doseMasks[d]![i]!,
        nullSet: nullOf[maskIndex(d, i)]!, top: t })
    )
  );
  if (o.magnitude) {
    // |W| alone: the mean |W| of every block, from wanda's column sums of |W| per row block.
    const { columnBlockSums } = await import('../wanda/kernel.js');
    const meanAbs = stored.map((st, k) =>
      blockMeanAbs(columnBlockSums(st.ref, { rowBlock: w.settings.block[0] }), matrices[k]!, w.settings.block)
    );
    sigs.forEach((_, s) =>
      passes.push({ id: magnitudeKey(s), kind: 'region', region: { name: MAGNITUDE, minus: null },
        masks: magnitudeRegion(poolCounts(allMasks[nullOf.indexOf(s)]!, pools), pools, meanAbs), nullSet: s })
    );
  }
  // The shuffled-label regions: for shuffle s, each region as wanda gives it under those labels.
  refit?.shuffled.forEach((sh, s) => {
    const gm = (g: string) => sh.masks[labels.indexOf(g)]!.map((m) => m.slice());
    for (const r of specs)
      passes.push({ id: shuffledKey(s, r), kind: 'shuffled', region: r, shuffle: s, seed: refit.seeds[s]!,
        masks: differenceOrEmpty(w, r, gm) });
  });
  sigs.forEach((_, s) => {
    const counts = poolCounts(allMasks[nullOf.indexOf(s)]!, pools);
    for (let j = 0; j < K; j++) {
      const sd = randomSeed(seed, s, j);
      passes.push({ id: `random:${s}:${j}`, kind: 'random', nullSet: s, seed: sd,
        masks: randomRegion(counts, pools, matrices, sd) });
    }
  });

  // Every edit is computed once before anything is written: a block the weight layout cannot zero
  // exactly (a 4-bit layout's quantisation blocks cut by a wanda block) is refused here.
  const byMatrix = new Map(stored.map((st, k) => [k, st]));
  for (const pass of passes) if (pass.masks) zeroEdits(pass.masks, matrices, w.settings.block, byMatrix);

  const itemsSha256 = items.kind === 'iae'
    ? items.unitsSha256
    : sha256Text(
      items.items.map((it) => JSON.stringify([it.id, it.labels, it.context, it.continuation]) + '\n').join(''),
    );
  const job: AblateJob = {
    format: 'lobes-ablate',
    formatVersion: 1,
    lobesVersion: LOBES_VERSION,
    run: { dir: o.run, identity: manifest.identity ?? null,
      wanda: { by, block: w.settings.block, top: w.settings.top } },
    // Lineage: what the scores stand on, by content (the regions' files, the model's files, the items).
    inputs: [
      { name: RUN_INPUT, sha256: manifest.identity ?? runIdentity(manifest), from: path.resolve(o.run) },
      ...wandaRegionInputs(o.run, w.dir),
      // The regions recomputed from other labels stand on the run's activations too.
      ...(refit ? refit.inputs : []),
      modelInput(modelFilesNow, modelDir),
      { name: DATA_INPUT, sha256: itemsSha256 },
    ],
    model: { dir: modelDir, graphSha256: manifest.model.graphSha256 },
    data: { spec: items.spec, items: N, limit: items.limit,
      ...(items.kind === 'iae' ? { unitsSha256: items.unitsSha256 } : { itemsSha256 }) },
    settings: {
      region: o.region,
      minus: o.minus ?? null,
      random: K,
      scope,
      seed,
      chunkUnits,
      bootstrap: o.bootstrap ?? 2000,
      device: o.device ?? 'cpu',
      ...(tops ? { tops } : {}),
      ...(o.magnitude ? { magnitude: true } : {}),
      ...(S ? { shuffled: S } : {}),
      ...(fitSeed !== null ? { fitSplit: fitSeed } : {}),
      ...(iae ? { task: 'iae' as const, scoring: iae.scoring, metric: iae.metric, shuffles: iae.shuffles } : {}),
      ...(o.interventions?.length ? { interventions: interventionRecords(o.interventions) } : {}),
    },
    passes: passes.map((p) => p.id),
    complete: false,
  };
  return withJobFolder(o.out, { command: 'lobes ablate', isJob: isAblateJobDir, what: 'a lobes ablation', log: io.log },
    async () => {
      const work = path.join(o.out, WORK_DIR);
      let patcher: WeightPatcher | null = null;
      const nChunks = Math.ceil(N / chunkUnits);
      const chunkIdx = (j: number) =>
        Array.from({ length: Math.min(chunkUnits, N - j * chunkUnits) }, (_, k) => j * chunkUnits + k);
      /** Score the chunks `js` of one pass with the model in `dir`; each chunk's rows go to `put`. */
      const scorePass = async (dir: string, label: string, js: number[], put: (j: number, rows: object[]) => void) => {
        const progress = new Progress({ label, total: js.reduce((a, j) => a + chunkIdx(j).length, 0), unit: 'items',
          io });
        const opened = iae
          ? await openIae(deps, dir, iae, o)
          : {
            engine: await deps.openLoglik(dir, { device: o.device ?? 'cpu', deviceId: o.deviceId, threads: o.threads,
              cache: 'off', batch: o.batch ?? 8, ...ivOpt(o) }),
            scorer: null,
          };
        try {
          for (const j of js) {
            // Cancelled between chunks: the chunks written so far stay listed, as after a kill.
            throwIfAborted(io.signal, 'lobes ablate', `${label}, before chunk ${j}`);
            const idx = chunkIdx(j);
            if (items.kind === 'iae') {
              const got = await scoreIaeUnits(idx.map((i) => items.units[i]!), { settings: iae!, tok,
                scorer: opened.scorer, engine: opened.engine, seed, batch: o.batch ?? 8, maxTokens,
                device: o.device ?? 'cpu', say: io.log, onItem: () => progress.tick(1) });
              put(j, got.map((g) => ({ id: g.id, correct: g.correct, pick: g.pick })));
            } else {
              const got = await opened.engine!.score(
                idx.map((i) => ({ context: split[i]!.context, continuations: [split[i]!.continuation] })),
                (k) => progress.tick(k),
              );
              put(j, idx.map((i, k) => ({ id: ids[i]!, ll: got[k]![0]!.logprob })));
            }
          }
        } finally {
          await opened.engine?.close();
          await opened.scorer?.close();
        }
        progress.finish();
      };
      try {
        const prev = isAblateJobDir(o.out) ? readAblateJob(o.out) : null;
        if (prev &&
          (o.force ||
            JSON.stringify({ ...prev, complete: false, files: undefined, timings: undefined }) !==
              JSON.stringify({ ...job, timings: undefined })))
        {
          if (!o.force) {
            const differ = (['run', 'model', 'data', 'settings', 'passes'] as const).filter((k) =>
              JSON.stringify(prev[k]) !== JSON.stringify(job[k])
            );
            // The same settings, run, model and items, but an input that changed by content (the
            // regions rewritten by lobes wanda, a model file): lineage names it.
            const changed = differ.length ? null : inputsDiffer(prev.inputs, job.inputs!);
            const file = path.join(o.out, JOB_MANIFEST);
            const hint = `use a new ${opt('out')}, or ${opt('force')} to replace it`;
            if (changed)
              throw new LobesError(
                `this ablation folder ${
                  prev.complete ? 'holds a finished ablation' : 'holds an unfinished ablation'
                } made from other inputs: ${changed}`,
                { file, hint, code: 'E_STALE' },
              );
            throw new LobesError(
              `this ablation folder was made with other settings, data, run or model${
                differ.length ? ` (${differ.join(', ')} differ${differ.length === 1 ? 's' : ''})` : ''
              }`,
              { file, hint },
            );
          }
          for (const f of ABLATE_OUTPUTS) rmSync(path.join(o.out, f), { recursive: true, force: true });
        } else if (prev?.complete) {
          io.log(`ablate: ${o.out} is already complete; nothing to do`);
          return readAblateSummary(o.out);
        }
        // --task iae, a new job: the pass before ablating first, on the model folder itself, and the
        // test against chance before anything is written.
        const before = new Map<number, object[]>();
        if (iae && !prev) {
          await scorePass(modelDir, `ablate 1/${passes.length} before`, Array.from({ length: nChunks }, (_, j) => j),
            (j, rows) => before.set(j, rows));
          checkChance([...before.keys()].sort((a, b) => a - b).flatMap((j) => before.get(j)! as IaeOutcome[]), items,
            iae);
        }
        writeJsonAtomic(path.join(o.out, JOB_MANIFEST), job, 2);
        const { writer, dropped } = await RecordChunks.resume(o.out, ABLATE_RECORDS, chunkUnits);
        for (const d of dropped) io.log(`ablate: ${d}; scoring it again`);
        for (const [j, rows] of before) writer.write(j, j * chunkUnits, rows.length, { scores: rows });
        const todo = passes.map((_, p) =>
          Array.from({ length: nChunks }, (_, j) => p * nChunks + j).filter((c) => !writer.has(c))
        );
        const left = todo.reduce((a, t) => a + t.length, 0);
        io.log(
          `ablate: ${N} items${
            refit?.split ? ` (the test half; the regions were fitted on ${refit.split.fit.rows} other rows)` : ''
          } × ${passes.length} passes (before, ${specs.length} region${specs.length > 1 ? 's' : ''}${
            doseTops.length ? ` at ${doseTops.length + 1} tops` : ''
          }, ${sigs.length * K} random regions${S ? `, ${S * specs.length} shuffled-label regions` : ''})${
            left < passes.length * nChunks
              ? `, resuming: ${passes.length * nChunks - left} of ${passes.length * nChunks} chunks done`
              : ''
          }`,
        );
        const byChunk = () => new Map(writer.index.chunks.map((e) => [e.chunk, e]));
        /** The rows of pass p, in item order, read back from their verified chunks. */
        const passRows = <T extends { id: string }>(p: number, index = byChunk()): T[] =>
          Array.from({ length: nChunks }, (_, j) => {
            const e = index.get(p * nChunks + j)!;
            const rows = readVerifiedJsonl<T>(ablateChunksDir(o.out), e.scores as any, CHUNK_INDEX);
            rows.forEach((r, k) => {
              const i = j * chunkUnits + k;
              if (r.id !== ids[i])
                throw new LobesError(`record chunk ${e.chunk} holds item ${r.id} where ${ids[i]} was expected`, {
                  file: ablateChunksDir(o.out),
                  hint: 'delete the folder and run again',
                });
            });
            return rows;
          }).flat();
        if (left) {
          rmSync(work, { recursive: true, force: true });
          copyModelFolder(modelDir, work);
          patcher = new WeightPatcher(path.resolve(modelDir), work);
        }
        for (const [p, pass] of passes.entries()) {
          // --task iae: a resumed job whose pass before ablating was scored now is tested against chance here.
          if (iae && p === 1 && todo[0]!.length) checkChance(passRows<IaeOutcome>(0), items, iae);
          if (!todo[p]!.length) continue;
          patcher!.restore();
          if (pass.masks) patcher!.apply(zeroEdits(pass.masks, matrices, w.settings.block, byMatrix));
          await scorePass(work, `ablate ${p + 1}/${passes.length} ${pass.id}`, todo[p]!.map((c) => c - p * nChunks),
            (j, rows) => writer.write(p * nChunks + j, (p * nChunks + j) * chunkUnits, rows.length, { scores: rows }));
        }
        // Every pass is scored: gather, check, compute, write.
        const index = byChunk();
        const randomPasses = (s: number) =>
          passes.map((q, p) => (q.kind === 'random' && q.nullSet === s ? p : -1)).filter((p) => p >= 0);
        const regionsOut = specs.map((r, i) => ({ name: r.name, minus: r.minus, blocks: countBlocks(masks[i]!) }));
        const base = { kind: 'ablate' as const, version: 1 as const, by, labels, random: K, regions: regionsOut,
          pFloor: 1 / (K + 1), scope, seed };
        let summary: AblateSummary;
        let records: object[];
        if (items.kind === 'iae') {
          const got = passes.map((_, p) => passRows<IaeOutcome>(p, index));
          // Items left unscored (a prompt longer than the model's context) are out of every figure.
          const scored = ids.map((_, i) => i).filter((i) => got.every((g) => g[i]!.correct !== null));
          const skipped = ids.filter((_, i) => !scored.includes(i));
          const bits = (p: number) => Uint8Array.from(scored, (i) => (got[p]![i]!.correct ? 1 : 0));
          const st = iaeStats({
            labels,
            labelOf: Int32Array.from(scored, (i) => labels.indexOf(itemLabels[i]![by]!)),
            before: bits(0),
            regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, after: bits(i + 1),
              random: randomPasses(nullOf[i]!).map(bits) })
            ),
            bootstrap: job.settings.bootstrap,
            seed,
          });
          const chance = chanceTest(scored.map((i) => got[0]![i]!.correct!),
            scored.map((i) => 1 / items.units[i]!.facts.options.length));
          summary = { ...base, unit: 'accuracy', cells: st.cells, specificity: st.specificity,
            declaredFamilies: st.families, items: scored.length,
            iae: { version: 1, scoring: iae!.scoring, metric: iae!.metric, shuffles: iae!.shuffles, chance, skipped,
              cells: st.iae } };
          records = passRecords(passes, N, (p, i) => got[p]![i]!.correct).map((v, i): AblateIaeRecord => {
            const f = items.units[i]!.facts;
            return { id: f.id, labels: f.labels, options: f.options.length, answer: f.answer!, ...v };
          });
        } else {
          const ll = passes.map((_, p) =>
            Float64Array.from(passRows<{ id: string; ll: number }>(p, index), (r) => r.ll)
          );
          // the continuations' token counts, for the per-token cost ratio (a longer continuation loses more nats under any region)
          const tokens = Float64Array.from(split, (s) => s.continuation.length);
          const st = ablationStatsPerToken({
            labels,
            labelOf: Int32Array.from(itemLabels, (l) => labels.indexOf(l[by]!)),
            before: ll[0]!,
            regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, after: ll[i + 1]!,
              random: randomPasses(nullOf[i]!).map((p) => ll[p]!) })
            ),
            bootstrap: job.settings.bootstrap,
            seed,
            tokens,
          });
          const passIdx = new Map(passes.map((q, p) => [q.id, p]));
          const doses = tops?.map((t): AblateDose => {
            if (isStoredTop(w, t))
              return { top: t, stored: true, regions: regionsOut, cells: st.cells, specificity: st.specificity,
                declaredFamilies: st.families };
            const d = doseTops.indexOf(t);
            const sd = ablationStatsPerToken({
              labels,
              labelOf: Int32Array.from(itemLabels, (l) => labels.indexOf(l[by]!)),
              before: ll[0]!,
              regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, after: ll[passIdx.get(doseKey(r, t))!]!,
                random: randomPasses(nullOf[maskIndex(d, i)]!).map((p) => ll[p]!) })
              ),
              bootstrap: job.settings.bootstrap,
              seed,
              tokens,
            });
            return { top: t, stored: false,
              regions: specs.map((r, i) => ({ name: r.name, minus: r.minus, blocks: countBlocks(doseMasks[d]![i]!) })),
              cells: sd.cells, specificity: sd.specificity, declaredFamilies: sd.families };
          });
          const magnitude = o.magnitude
            ? magnitudeRows(specs, labels, Int32Array.from(itemLabels, (l) => labels.indexOf(l[by]!)), ll,
              (i) => ({ region: ll[i + 1]!, magnitude: ll[passIdx.get(magnitudeKey(nullOf[i]!))!]!,
                random: randomPasses(nullOf[i]!).map((p) => ll[p]!),
                blocks: countBlocks(passes[passIdx.get(magnitudeKey(nullOf[i]!))!]!.masks!) }), job.settings.bootstrap,
              seed)
            : null;
          const shuffled = refit && S
            ? shuffledSection(refit, specs, passes, labels, Int32Array.from(itemLabels, (l) => labels.indexOf(l[by]!)),
              ll, (i) => ll[i + 1]!)
            : null;
          summary = { ...base, unit: 'nats', cells: st.cells, specificity: st.specificity,
            declaredFamilies: st.families, items: N, ...(doses ? { doses } : {}), ...(magnitude ? { magnitude } : {}),
            ...(shuffled ? { shuffled } : {}) };
          records = continuationRecords(passes, items.items, split, ll);
        }
        if (refit?.split)
          summary.fitSplit = { ...refit.split,
            regions: labels.map((g, gi) => ({ name: g, blocks: countBlocks(refit.fitted!.masks[gi]!),
              jaccardWithStored: maskJaccard(refit.fitted!.masks[gi]!, regionMasks(w, { name: g, minus: null })) })
            ) };
        const extra = refit
          ? { recomputed: refit.record, ...(refit.split
            ? { fitSplit: { ...summary.fitSplit, fitIds: refit.fitIds, fitRows: refit.fitRows, testIds: ids } }
            : {}) }
          : undefined;
        const files = writeAblateOutputs(o.out, { passes, records: records as any, stored, matrices,
          block: w.settings.block, summary, job, extra });
        job.complete = true;
        job.files = files;
        job.timings = { wallMs: Date.now() - t0 };
        writeJsonAtomic(path.join(o.out, JOB_MANIFEST), job, 2);
        writer.dropChunks();
        io.log(
          `ablate: done, ${N} items × ${passes.length} passes in ${fmtTime((Date.now() - t0) / 1000)} -> ${o.out}`,
        );
        return summary;
      } finally {
        patcher?.close();
        rmSync(work, { recursive: true, force: true });
      }
    });
}
