/**
 * Reduces a finished `lobes eval --scoring cloze --mutual-info` evaluation to the small file
 * bench/findings-summary.ts reads (bench/findings-cloze.ts: the picks, per option the
 * log-likelihoods and lengths, and the overlap of the option's words with the context), checked
 * against the evaluation's own summary before it is written.
 *
 *   node --import tsx bench/findings-cloze-items.ts OUT.json EVAL_DIR...     # one evaluation, or finished shards of one
 */
import * as path from 'node:path';
import { writeFileAtomicSync } from '../src/util/io.js';
import { readEvalResults } from '../src/eval/store.js';
import { checkClozeFile, clozeItems, type ClozeFile } from './findings-cloze.js';

const [out, ...dirs] = process.argv.slice(2);
if (!out || !dirs.length) {
  process.stderr.write('usage: node --import tsx bench/findings-cloze-items.ts OUT.json EVAL_DIR...\n');
  process.exit(2);
}
try {
  const file: ClozeFile = {
    about:
      'lobes eval --scoring cloze --mutual-info of SocialEval IAE (one evaluation, or the finished shards of one), reduced by bench/findings-cloze-items.ts: per item the answer (index into the options in the dataset order), the picks of acc, acc_norm, acc_bytes and acc_mutual_info, and per option ll (log-likelihood after the context), ll0 (after the prefix token alone), tokens, chars, bytes, and overlap = [distinct words (Han characters) of the option found in the context, distinct words of the option].',
    evaluations: [],
    items: [],
  };
  let identity: string | null = null;
  for (const dir of dirs) {
    const { manifest: m, records, summary } = readEvalResults(dir);
    const iae = summary.cloze?.iae;
    if (!iae) throw new Error(`${dir}: no IAE cloze summary (an evaluation with --task iae --scoring cloze is needed)`);
    const src = m.model.source;
    const settings = { limit: m.settings.limit, seed: m.settings.seed, scoring: m.settings.scoring,
      mutualInfo: m.settings.mutualInfo, chatTemplate: m.settings.chatTemplate, maxTokens: m.settings.maxTokens,
      chunkUnits: m.settings.chunkUnits };
    const id = JSON.stringify([m.dataset.unitsSha256, settings, m.model.graphSha256]);
    if (identity !== null && id !== identity)
      throw new Error(`${dir}: not a shard of the same evaluation as ${dirs[0]} (data, settings or model differ)`);
    identity = id;
    const items = clozeItems(records);
    file.evaluations.push({
      source: {
        dataset: m.dataset.spec,
        unitsSha256: m.dataset.unitsSha256,
        settings,
        shard: m.shard ? `${m.shard.index}/${m.shard.count}` : null,
        model: src
          ? { file: path.basename(src.path), sha256: src.sha256 ?? null, identity: src.identity ?? null,
            layout: src.options?.layout ?? null }
          : { graphSha256: m.model.graphSha256 },
        recordsSha256: m.files!.records.sha256,
        createdAt: m.createdAt,
        wallMs: m.timings?.wallMs ?? null,
      },
      summary: iae,
      items: items.length,
    });
    file.items.push(...items);
  }
  checkClozeFile(file, out);
  // one item per line, so that a rerun's differences read item by item
  const head = JSON.stringify({ ...file, items: [] }, null, 2).replace(/"items": \[\]\n\}$/, '"items": [');
  writeFileAtomicSync(out, `${head}\n${file.items.map((i) => `    ${JSON.stringify(i)}`).join(',\n')}\n  ]\n}\n`);
  process.stderr.write(
    `wrote ${out} (${file.items.length} items from ${dirs.length} evaluation${dirs.length > 1 ? 's' : ''})\n`,
  );
} catch (e) {
  process.stderr.write(`findings-cloze-items: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}\n`);
  process.exit(1);
}
