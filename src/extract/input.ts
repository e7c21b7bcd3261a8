/**
 * The extraction's input and its pre-flight checks: the dataset loaded, sampled (--limit) and
 * tokenized, the model's files hashed; the context, the graph's consistency with its config files
 * and the memory a batch needs, each checked before any batch runs.
 */
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { Progress } from '../util/progress.js';
import type { JobIO } from '../util/jobio.js';
import type { Sample } from '../data/types.js';
import type { ModelArch, SampleRow } from '../store/types.js';
import type { CaptureEngine, LobesTokenizer } from '../runtime/types.js';
import { shardRange, chunkCount } from '../store/layout.js';
import { samplesSha256 } from '../store/manifest.js';
import { hashItems, hashModelFiles } from '../store/provenance.js';
import { modelFiles } from '../runtime/modelfiles.js';
import { tokenizerDir } from '../runtime/tokenize.js';
import { configDir, declaredContext, type ContextLimit } from '../runtime/config.js';
import { checkBatchMemory, checkContext as checkTextContext } from '../runtime/plan.js';
import type { GraphFacts } from '../runtime/consistency.js';
import { limitItems, type LimitRecord } from '../data/subset.js';
import { type ExtractDeps, type ExtractOptions, type Settings, type Input, chunkSpan } from './settings.js';

/**
 * Load the dataset and the tokenizer, hash the items and the model's files (graph, external
 * data, tokenizer files: through the file-hash cache, src/store/filehash.ts), and tokenize
 * this shard's rows.
 */
export async function loadInput(spec: string, s: Settings, deps: ExtractDeps, opts: ExtractOptions,
  io: JobIO): Promise<Input>
{
  const t0 = Date.now();
  let dataset = await deps.loadDataset(spec);
  let limit: LimitRecord | null = null;
  if (s.limit) {
    const l = limitItems(dataset.samples, dataset.axes, s.limit);
    dataset = { ...dataset, samples: l.items };
    limit = l.record;
    io.log(
      `extract: --limit ${l.record.limit}: ${l.items.length} of ${l.record.of} samples, stratified by ${
        l.record.by.join(',') || 'nothing (no label axes)'
      }, seed ${l.record.seed}`,
    );
  }
  const itemsSha256 = hashItems(dataset.samples);
  const N = dataset.samples.length;
  const tokDir = tokenizerDir(s.model);
  const refs = (deps.modelFiles ?? modelFiles)(s.model, tokDir);
  // The tokenizer before the hashes: a folder without one is refused before its weights are read.
  const tokenizer = await deps.loadTokenizer(s.model, { maxTokens: s.maxTokens, chatTemplate: s.chatTemplate });
  let hashing: Progress | null = null;
  const files = hashModelFiles(refs, (done, total) => {
    if (total < 256 << 20) return;
    hashing ??= new Progress({ label: 'extract: hash model files', total: Math.round(total / 1e6), unit: 'MB', io });
    hashing.set(Math.round(done / 1e6));
  });
  (hashing as Progress | null)?.finish();
  const graphSha256 = files.find((f) => f.role === 'graph')!.sha256;
  const context = declaredContext(configDir(s.model, path.dirname(refs[0]!.path)));
  const range = shardRange(N, s.chunkRows, s.shard);
  const rowsHere = range.rowEnd - range.rowStart;
  if (s.shard && rowsHere === 0) {
    io.log(
      `shard ${s.shard.index}/${s.shard.count} holds no rows (${
        chunkCount(N, s.chunkRows)
      } chunks of ${s.chunkRows} rows for ${s.shard.count} shards; lower --chunk-rows to use every shard)`,
    );
  }
  const tok = tokenizeRows(dataset.samples, range.rowStart, range.rowEnd, tokenizer);
  return { dataset, limit, itemsSha256, N, graphSha256, files, context, tokenizer, range, rowsHere, ...tok,
    samplesSha256: samplesSha256(tok.rows), tokenizeMs: Date.now() - t0 };
}

/** Tokenize dataset rows [start, end): their ids and sample rows; an empty text is an error. */
function tokenizeRows(samples: Sample[], start: number, end: number,
  tokenizer: LobesTokenizer): Pick<Input, 'ids' | 'rows' | 'truncated' | 'tokens'>
{
  const ids: number[][] = [];
  const rows: SampleRow[] = [];
  let truncated = 0;
  let tokens = 0;
  for (let g = start; g < end; g++) {
    const s = samples[g];
    let t;
    try {
      t = tokenizer.encode(s.text);
    } catch (e: any) {
      throw new LobesError(`cannot tokenize (${e.message})`, { where: `sample ${s.id}` });
    }
    if (t.ids.length === 0)
      throw new LobesError('text tokenizes to zero tokens', { where: `sample ${s.id}`,
        hint: 'remove empty items from the dataset' });
    ids.push(t.ids);
    const row: SampleRow = { index: rows.length, id: s.id, labels: s.labels, tokens: t.ids.length,
      truncated: t.truncated, text: s.text };
    if (s.provenance) row.provenance = s.provenance;
    rows.push(row);
    if (t.truncated) truncated++;
    tokens += t.ids.length;
  }
  return { ids, rows, truncated, tokens };
}

/** Refuse texts longer than the model's context (src/runtime/plan.ts), naming --max-tokens. */
export function checkContext(input: Input, limit: ContextLimit | null): void {
  checkTextContext(input.rows, limit,
    (l) =>
      `keep the last ${l.tokens} tokens of each text with --max-tokens ${l.tokens} (recorded as truncated in samples.jsonl), or leave the long items out`);
}

/** Rounded to 6 significant digits (graph facts recovered from floating-point constants). */
const sig = (x: number | null) => (x === null ? null : Number(x.toPrecision(6)));

/**
 * The consistency check of the model (src/runtime/consistency.ts): every disagreement between
 * the graph and its config files is printed as a warning, or refused with --strict. Returns
 * the graph's facts as the manifest records them.
 */
export function checkGraph(engine: CaptureEngine, s: Settings, opts: ExtractOptions, io: JobIO): GraphFacts
  | undefined
{
  const c = engine.info.check;
  if (!c) return undefined;
  if (c.problems.length) {
    if (opts.strict) {
      throw new LobesError(`the model is not what its folder says: ${c.problems.join('; ')}`, { file: s.model,
        hint: `re-export the model so that the graph matches its config (see lobes inspect), or drop ${
          opt('strict')
        } to extract anyway` });
    }
    for (const p of c.problems)
      io.warn(`warning: ${s.model}: ${p} (lobes inspect shows both; --strict refuses such a model)`);
  }
  const g = c.graph;
  return { ...g, ropeTheta: sig(g.ropeTheta), rmsNormEps: g.rmsNormEps.map((e) => sig(e)!) };
}

/**
 * Bound what one batch can need before any is run (src/runtime/plan.ts): a plan whose largest
 * batch needs more than the device has is refused naming the batch; --ignore-plan runs it.
 */
export function checkMemory(s: Settings, input: Input, deps: ExtractDeps, arch: ModelArch, opts: ExtractOptions,
  io: JobIO): void
{
  const batches: number[][] = [];
  for (let c = input.range.chunkStart; c < input.range.chunkEnd; c++) {
    const { start, n } = chunkSpan(c, s.chunkRows, input.N);
    const local = start - input.range.rowStart;
    const lengths = new Int32Array(n);
    for (let i = 0; i < n; i++) lengths[i] = input.ids[local + i]!.length;
    for (const b of deps.planBatches(lengths, { batch: s.batch ?? undefined, tokenBudget: s.tokenBudget ?? undefined }))
      batches.push(b.map((i) => local + i));
  }
  checkBatchMemory(batches, input.rows.map((r) => ({ id: r.id, tokens: input.ids[r.index]!.length })), arch, {
    device: s.device,
    limit: opts.memoryLimit?.(s.device),
    force: opts.force,
    say: io.warn,
    hint: `${opt('maxTokens', 'N')} keeps the last N tokens of each text; ${opt('batch', 1)} or ${
      opt('tokenBudget', 'N')
    } makes batches smaller; ${opt('force')} runs it anyway (e.g. with a memory-efficient attention kernel)`,
  });
}
