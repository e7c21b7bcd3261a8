/**
 * Multiple-choice items from a JSONL file, for `lobes eval`:
 *
 *   jsonl:FILE?question=FIELD&options=FIELD&answer=FIELD[&label=FIELD[,FIELD...]][&id=FIELD]
 *
 * `options` is a list of at least two strings; `answer` is the 0-based index of the correct
 * option, or its exact text (or a letter A, B, … when no option has that text); an item whose
 * options repeat a text is invalid however its answer is given. Every label
 * field becomes a label axis; every string or number field of the line can be used in a
 * --prompt template as {FIELD}. Invalid lines fail with every problem listed (or, with
 * skipInvalid, are left out and reported).
 */
import * as path from 'node:path';
import { LobesError, LobesErrors, UsageError, opt } from '../util/errors.js';
import { absentFieldsError, invalidInputHint, parseJson, problemError, readUtf8, type Problem } from './read.js';
import { checkParams, formatSpec, parseSpec } from './spec.js';
import type { Excluded } from './types.js';

/** One multiple-choice item. */
export interface McqItem {
  id: string;
  question: string;
  options: string[];
  answer: number;
  labels: Record<string, string>;
  /** String and number fields of the line (for --prompt templates), question included. */
  fields: Record<string, string>;
  line: number;
}

export interface McqLoad {
  spec: string;
  items: McqItem[];
  excluded: Excluded[];
  axes: string[];
}

export const MCQ_KEYS = ['question', 'options', 'answer', 'label', 'id'];

/** The first two options (0-based) with the same text after trimming, or null. */
export function duplicateOptions(options: readonly string[]): [number, number] | null {
  const seen = new Map<string, number>();
  for (let i = 0; i < options.length; i++) {
    const t = options[i]!.trim();
    const j = seen.get(t);
    if (j !== undefined) return [j, i];
    seen.set(t, i);
  }
  return null;
}

/** Resolve an answer value against the options: index, exact text, or a letter (items with two equal options are refused). */
export function resolveAnswer(v: unknown, options: string[]): number | string {
  // Two options with the same text cannot be told apart by the model or by the answer, so
  // such an item is refused whichever way its answer is given (an index, a text or a letter).
  const dup = duplicateOptions(options);
  if (dup)
    return `options ${dup[0]} and ${dup[1]} (0-based) are the same text ${
      JSON.stringify(options[dup[1]]!.trim().slice(0, 60))
    }; the answer cannot be told apart`;
  if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= 0 && v < options.length) return v;
    return `answer ${v} is not an index of the ${options.length} options (0-based)`;
  }
  if (typeof v === 'string') {
    const hits = options.flatMap((o, i) => (o === v ? [i] : []));
    if (hits.length === 1) return hits[0]!;
    const t = v.trim();
    if (/^[A-Z]$/.test(t) && t.charCodeAt(0) - 65 < options.length) return t.charCodeAt(0) - 65;
    return `answer ${
      JSON.stringify(v.slice(0, 60))
    } is neither an option's text nor a letter of the ${options.length} options`;
  }
  return 'answer is neither a number nor a string';
}

/**
 * Load a `jsonl:` multiple-choice spec. `maxOptions`: the most options an item may have (the
 * answer letters of a lettered prompt, 26); an item with more is invalid like any other bad
 * line, so it is refused (or left out with skipInvalid) before anything is written.
 */
export function loadMcqJsonl(spec: string, skipInvalid = false, limits: { maxOptions?: number } = {}): McqLoad {
  const maxOptions = limits.maxOptions ?? Infinity;
  const p = parseSpec(spec);
  if (p.kind !== 'jsonl')
    throw new UsageError(`multiple-choice items come from jsonl: files, got ${JSON.stringify(spec)}`,
      'e.g. jsonl:items.jsonl?question=question&options=options&answer=answer');
  checkParams(p, MCQ_KEYS);
  if (!p.path)
    throw new UsageError('jsonl: needs a file path',
      'e.g. jsonl:items.jsonl?question=question&options=options&answer=answer');
  const need = (k: string) => {
    const v = p.params.get(k);
    if (!v)
      throw new UsageError(`dataset spec ${JSON.stringify(spec)}: needs ${k}=FIELD for multiple choice`,
        'e.g. jsonl:items.jsonl?question=question&options=options&answer=answer&label=topic');
    return v;
  };
  const qf = need('question');
  const of = need('options');
  const af = need('answer');
  const labels = (p.params.get('label') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const idf = p.params.get('id');
  const file = p.path;
  const base = path.basename(file);
  const r = readUtf8(file);
  if ('problem' in r) {
    if (r.problem.reason === 'no such file') throw new LobesError('no such file', { file });
    throw problemError(r.problem);
  }
  const problems: Problem[] = [];
  const items: McqItem[] = [];
  const seen = new Map<string, number>();
  // Every field a line has, and how many lines are objects (for absentFieldsError).
  const found = new Set<string>();
  let objects = 0;
  r.text.split('\n').forEach((ln, i) => {
    const line = i + 1;
    const s = ln.replace(/\r$/, '');
    if (!s.trim()) return;
    const where = `line ${line}`;
    const bad = (reason: string, id?: string) => void problems.push({ file, where, reason, id });
    const j = parseJson(s, file, 0, where);
    if ('problem' in j) return void problems.push(j.problem);
    const o = j.value as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) return bad('expected a JSON object');
    objects++;
    for (const k of Object.keys(o)) found.add(k);
    const q = o[qf];
    if (typeof q !== 'string' || !q.trim())
      return bad(
        q === undefined
          ? `missing field ${JSON.stringify(qf)}`
          : `field ${JSON.stringify(qf)} is not a non-empty string`,
      );
    const opts = o[of];
    if (!Array.isArray(opts) || !opts.every((x) => typeof x === 'string'))
      return bad(
        opts === undefined
          ? `missing field ${JSON.stringify(of)}`
          : `field ${JSON.stringify(of)} is not a list of strings`,
      );
    if (opts.length < 2)
      return bad(`the item has ${opts.length} option${opts.length === 1 ? '' : 's'}; multiple choice needs at least 2`);
    if (opts.length > maxOptions)
      return bad(
        `the item has ${opts.length} options, more than the ${maxOptions} answer letters (--scoring cloze, without {choices} in the prompt, takes any number)`,
      );
    if (!(af in o)) return bad(`missing field ${JSON.stringify(af)}`);
    const ans = resolveAnswer(o[af], opts as string[]);
    if (typeof ans === 'string') return bad(ans);
    const lab: Record<string, string> = {};
    for (const f of labels) {
      const v = o[f];
      if (typeof v !== 'string' && typeof v !== 'number')
        return bad(
          v === undefined
            ? `missing label field ${JSON.stringify(f)}`
            : `label field ${JSON.stringify(f)} is not a string or number`,
        );
      lab[f] = String(v).trim();
    }
    let id = `${base}:${line}`;
    if (idf) {
      const v = o[idf];
      if (typeof v !== 'string' && typeof v !== 'number') return bad(`missing id field ${JSON.stringify(idf)}`);
      id = String(v);
    }
    const prev = seen.get(id);
    if (prev !== undefined) return bad(`duplicate id ${JSON.stringify(id)} (first on line ${prev})`, id);
    seen.set(id, line);
    const fields: Record<string, string> = {};
    for (const [k, v] of Object.entries(o)) if (typeof v === 'string' || typeof v === 'number') fields[k] = String(v);
    fields.question = q;
    items.push({ id, question: q, options: opts as string[], answer: ans, labels: lab, fields, line });
  });
  if (items.length === 0 && problems.length === 0) problems.push({ file, reason: 'file is empty (no JSON lines)' });
  const named: [string, string][] = [['question', qf], ['options', of], ['answer', af],
    ...labels.map((f): [string, string] => ['label', f]), ...(idf ? [['id', idf] as [string, string]] : [])];
  const absent = objects ? absentFieldsError(file, named, (f) => found.has(f), found) : null;
  if (absent) throw absent;
  const excluded: Excluded[] = [];
  if (problems.length) {
    if (!skipInvalid)
      throw new LobesErrors(`dataset ${spec} has invalid items`, problems.map(problemError), {
        hint: invalidInputHint(items.length, 'fix the lines', opt('skipInvalid')),
      });
    for (const pr of problems)
      excluded.push({ id: pr.id ?? `${base}: ${pr.where ?? ''}`, file: pr.file, where: pr.where,
        reason: `invalid: ${pr.reason}` });
  }
  if (items.length === 0) throw new LobesError(`dataset ${spec} has no valid items`, { file });
  return { spec: formatSpec('jsonl', p.path, p.params), items, excluded, axes: labels };
}
