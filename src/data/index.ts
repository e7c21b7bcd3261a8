/**
 * Datasets: turn a spec string into labelled Samples.
 *   builtin:NAME                       the built-in interpersonal-ability set (builtin:social)
 *   socialeval:PATH[?options]          SocialEval world trees (one item per skill choice)
 *   jsonl:PATH?text=F&label=F[,F...]   one JSON object per line
 *   csv:PATH?text=F&label=F[,F...]     RFC 4180 CSV with a header row
 * See docs/datasets.md.
 */
import { statSync } from 'node:fs';
import { LobesError, LobesErrors, UsageError, opt } from '../util/errors.js';
import { loadBuiltin } from './builtin.js';
import { loadCsv, loadJsonl } from './generic.js';
import { invalidInputHint, problemError, type Problem } from './read.js';
import { listFiles, loadSocialEval } from './socialeval.js';
import { parseSpec } from './spec.js';
import type { Dataset, Excluded, LoadOptions, Sample } from './types.js';

export { ABILITIES, ASPECTS, aspectOf } from './bessi.js';
export { canonicalizeAbility, normalizeLabel } from './labels.js';
export { DEFAULT_TEMPLATE } from './template.js';
export type { Dataset, Sample, Excluded, LoadOptions } from './types.js';

/** The dataset used when none is given. */
export const DEFAULT_DATASET = 'builtin:social';

/**
 * What a command checks before it loads or converts a model: the spec parses, its kind is one
 * the command reads (`kinds`, default every kind), and its path exists (a socialeval: folder
 * holds world-tree files; a jsonl:/csv: path is a regular file). The content is read later.
 */
export function checkDataSpec(spec: string, kinds: readonly string[] = ['builtin', 'socialeval', 'jsonl', 'csv'],
  flag = opt('data')): void
{
  const p = parseSpec(spec);
  if (!kinds.includes(p.kind))
    throw new UsageError(
      `${flag} ${JSON.stringify(spec)}: ${
        ['builtin', 'socialeval', 'jsonl', 'csv'].includes(p.kind)
          ? 'this command does not read'
          : 'unknown dataset kind'
      } ${p.kind}:`,
      `kinds here: ${kinds.join(', ')}`,
    );
  if (p.kind === 'builtin') return;
  if (p.kind === 'socialeval') {
    listFiles(p.path);
    return;
  }
  checkInputFile(p.path);
}

/** A file an input must be: it exists and is a regular file (not a folder, pipe or device). */
export function checkInputFile(file: string): void {
  let st;
  try {
    st = statSync(file);
  } catch (e: any) {
    throw new LobesError(e?.code === 'ENOENT' ? 'no such file' : `cannot read (${e?.code ?? e?.message ?? e})`, {
      file,
    });
  }
  if (st.isDirectory()) throw new LobesError('is a folder, expected a file', { file });
  if (!st.isFile()) throw new LobesError('is not a regular file (a pipe or device); give a file', { file });
}

/**
 * Load a dataset. Invalid input (unreadable or mis-encoded files, invalid JSON, missing
 * fields, unknown labels, duplicate ids) fails with a LobesErrors listing every problem,
 * unless opts.skipInvalid, in which case each invalid item is reported in `excluded`.
 */
export async function loadDataset(spec: string, opts: LoadOptions = {}): Promise<Dataset> {
  const p = parseSpec(spec);
  let r: { samples: Sample[]; excluded: Excluded[]; problems: Problem[]; spec: string; axes: string[];
    composition?: Dataset['composition'] };
  switch (p.kind) {
    case 'builtin':
      r = { ...loadBuiltin(p), problems: [] };
      break;
    case 'socialeval':
      r = loadSocialEval(p);
      break;
    case 'jsonl':
      r = loadJsonl(p);
      break;
    case 'csv':
      r = loadCsv(p);
      break;
    default:
      throw new UsageError(`unknown dataset kind ${JSON.stringify(p.kind)} in ${JSON.stringify(spec)}`,
        'kinds: builtin, socialeval, jsonl, csv');
  }
  if (r.problems.length > 0) {
    if (!opts.skipInvalid) {
      const hint = opts.skipFlag
        ? invalidInputHint(r.samples.length, 'fix the input', opts.skipFlag, 'those items')
        : `fix the input (lobes data inspect ${JSON.stringify(spec)} lists every problem)`;
      throw new LobesErrors(`dataset ${spec} has invalid input`, r.problems.map(problemError), { hint });
    }
    for (const pr of r.problems)
      r.excluded.push({ id: pr.id ?? [pr.file, pr.where].filter(Boolean).join(': '), file: pr.file, where: pr.where,
        reason: `invalid: ${pr.reason}` });
  }
  if (r.samples.length === 0) {
    throw new LobesError(
      `dataset ${spec} has no samples${
        r.excluded.length ? ` (${r.excluded.length} excluded; first: ${r.excluded[0].reason})` : ''
      }`,
      { hint: 'check the filters and the input' },
    );
  }
  return { spec: r.spec, samples: r.samples, excluded: r.excluded, axes: r.axes,
    ...(r.composition ? { composition: r.composition } : {}) };
}
