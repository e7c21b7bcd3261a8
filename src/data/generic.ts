import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { aspectOf } from './bessi.js';
import { canonicalizeAbility } from './labels.js';
import { absentFieldsError, parseJson, readUtf8, type Problem } from './read.js';
import { checkParams, formatSpec, type ParsedSpec } from './spec.js';
import type { Excluded, Sample } from './types.js';

/** One record of a JSONL or CSV file: its fields and the line it starts on. */
interface Row {
  line: number;
  get(field: string): unknown;
  has(field: string): boolean;
}

export interface GenericResult {
  samples: Sample[];
  excluded: Excluded[];
  problems: Problem[];
  spec: string;
  axes: string[];
}

/** The label axis `group=FIELD` writes: each item's group (a name no label field is likely to have). */
export const GROUP_AXIS = 'item_group';

interface GenericSpec {
  text: string;
  labels: string[];
  id?: string;
  bessi?: string;
  /** Axis name of each label field (the field itself; for a nested JSON field a.b, b). */
  axes: string[];
}

function genericSpec(p: ParsedSpec, extra: string[], nested = false): GenericSpec {
  checkParams(p, ['text', 'label', 'id', 'bessi', 'group', ...extra]);
  if (!p.path)
    throw new UsageError(`${p.kind}: needs a file path`, `e.g. ${p.kind}:data.${p.kind}?text=text&label=label`);
  const text = p.params.get('text');
  const label = p.params.get('label');
  if (!text)
    throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: needs text=FIELD`,
      `e.g. ${p.kind}:${p.path}?text=text&label=label`);
  if (!label)
    throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: needs label=FIELD[,FIELD...]`,
      `e.g. ${p.kind}:${p.path}?text=${text}&label=label`);
  const labels = label.split(',').map((s) => s.trim()).filter(Boolean);
  if (new Set(labels).size !== labels.length)
    throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: a label field is named twice`);
  const bessi = p.params.get('bessi');
  if (bessi !== undefined && !labels.includes(bessi))
    throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: bessi=${bessi} must be one of the label fields`);
  const axes = labels.map((f) => (nested && f.includes('.') ? f.slice(f.lastIndexOf('.') + 1) : f));
  if (bessi !== undefined && axes.includes('aspect'))
    throw new UsageError(
      `dataset spec ${JSON.stringify(p.raw)}: bessi= adds the axis "aspect", which is already a label field`,
    );
  if (new Set(axes).size !== axes.length)
    throw new UsageError(
      `dataset spec ${JSON.stringify(p.raw)}: two label fields give the same axis name (${axes.join(', ')})`,
      'a nested field a.b gives the axis b',
    );
  // group=FIELD: each item's group (items of one story, one source...), read as the label axis
  // GROUP_AXIS, which lobes cluster then keeps whole in the probes' folds and resamples as a unit
  const group = p.params.get('group');
  if (group !== undefined) {
    if (group.trim() === '')
      throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: group= needs a field name`,
        `e.g. ${p.kind}:${p.path}?text=${text}&label=${label}&group=story`);
    if (axes.includes(GROUP_AXIS))
      throw new UsageError(
        `dataset spec ${JSON.stringify(p.raw)}: group= adds the axis "${GROUP_AXIS}", which is already a label field`,
        'name the group field with group= only',
      );
    labels.push(group.trim());
    axes.push(GROUP_AXIS);
  }
  return { text, labels, id: p.params.get('id'), bessi, axes };
}

/**
 * A field of a JSON object by name; a dotted name (`labels.aspect`) reads nested objects when
 * the object has no field of that exact name.
 */
function fieldOf(o: Record<string, unknown>, f: string): { has: boolean; value: unknown } {
  if (Object.prototype.hasOwnProperty.call(o, f)) return { has: true, value: o[f] };
  if (!f.includes('.')) return { has: false, value: undefined };
  let cur: unknown = o;
  for (const part of f.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur) ||
      !Object.prototype.hasOwnProperty.call(cur, part)) return { has: false, value: undefined };
    cur = (cur as Record<string, unknown>)[part];
  }
  return { has: true, value: cur };
}

function scalar(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return null;
}

/** Turn rows into samples, collecting every problem (missing fields, unknown labels, duplicate ids). */
function rowsToSamples(rows: Row[], file: string, g: GenericSpec, out: GenericResult): void {
  const seen = new Map<string, number>();
  const base = path.basename(file);
  for (const row of rows) {
    const where = `line ${row.line}`;
    const errs: string[] = [];
    const t = row.get(g.text);
    let text = '';
    if (!row.has(g.text)) errs.push(`missing field ${JSON.stringify(g.text)}`);
    else if (typeof t !== 'string') errs.push(`field ${JSON.stringify(g.text)} is not a string`);
    else if (t.trim() === '') errs.push(`field ${JSON.stringify(g.text)} is empty`);
    else text = t;
    // Label fields are the user's names: `__proto__` or `constructor` must stay plain keys.
    const labels: Record<string, string> = Object.create(null);
    for (const [k, f] of g.labels.entries()) {
      if (!row.has(f)) {
        errs.push(`missing label field ${JSON.stringify(f)}`);
        continue;
      }
      const v = scalar(row.get(f));
      if (v === null) errs.push(`label field ${JSON.stringify(f)} is not a string or number`);
      else if (v.trim() === '') errs.push(`label field ${JSON.stringify(f)} is empty`);
      else labels[g.axes[k]] = v.trim();
    }
    const bAxis = g.bessi ? g.axes[g.labels.indexOf(g.bessi)] : undefined;
    if (bAxis && labels[bAxis] !== undefined) {
      const r = canonicalizeAbility(labels[bAxis]);
      if (r.ability) {
        labels[bAxis] = r.ability;
        labels.aspect = aspectOf(r.ability);
      } else {
        errs.push(
          `unknown label ${JSON.stringify(labels[bAxis])} in ${JSON.stringify(g.bessi)}: ${
            'reason' in r ? r.reason : ''
          }`,
        );
      }
    }
    let id = `${base}:${row.line}`;
    if (g.id) {
      const v = row.has(g.id) ? scalar(row.get(g.id)) : null;
      if (v === null || v.trim() === '')
        errs.push(
          row.has(g.id)
            ? `id field ${JSON.stringify(g.id)} is empty or not a string`
            : `missing id field ${JSON.stringify(g.id)}`,
        );
      else id = v.trim();
    }
    if (errs.length === 0) {
      const prev = seen.get(id);
      if (prev !== undefined) errs.push(`duplicate id ${JSON.stringify(id)} (first on line ${prev})`);
      else seen.set(id, row.line);
    }
    if (errs.length) {
      for (const e of errs) out.problems.push({ file, where, reason: e, id });
      continue;
    }
    out.samples.push({ id, text, labels, provenance: { file: base, line: String(row.line) } });
  }
}

function axesOf(g: GenericSpec): string[] {
  return g.bessi ? [...g.axes, 'aspect'] : [...g.axes];
}

/**
 * A JSON Lines file in lobes' own sample form, as `lobes data export` writes it: one object per
 * line with `id`, `text`, `labels` (an object: every key is a label axis) and optionally
 * `provenance` and `extras`, kept as they are. Every line must carry the same label axes.
 */
function loadSampleJsonl(p: ParsedSpec): GenericResult {
  checkParams(p, [],
    `${p.kind}:FILE without text= is a file in lobes' sample form and takes no options; name your fields with text=FIELD&label=FIELD, e.g. ${p.kind}:FILE?text=question&label=aspect`);
  const file = p.path;
  const out: GenericResult = { samples: [], excluded: [], problems: [], spec: formatSpec('jsonl', p.path, p.params),
    axes: [] };
  const r = readUtf8(file);
  if ('problem' in r) {
    if (r.problem.reason === 'no such file') throw new LobesError('no such file', { file });
    out.problems.push(r.problem);
    return out;
  }
  checkSampleForm(r.text, file, p.raw);
  const seen = new Map<string, number>();
  let axes: string[] | null = null;
  r.text.split('\n').forEach((ln, k) => {
    const s = ln.replace(/\r$/, '');
    if (s.trim() === '') return;
    const where = `line ${k + 1}`;
    const bad = (reason: string, id?: string) => void out.problems.push({ file, where, reason, id });
    const j = parseJson(s, file, 0, where);
    if ('problem' in j) return void out.problems.push(j.problem);
    const o = j.value as Record<string, unknown>;
    if (typeof o !== 'object' || o === null || Array.isArray(o))
      return bad('expected a JSON object {id, text, labels}');
    const id = typeof o.id === 'string' && o.id.trim() !== '' ? o.id : null;
    if (!id)
      return bad('"id" must be a non-empty string (a file without id/text/labels needs jsonl:FILE?text=F&label=F)');
    if (typeof o.text !== 'string' || o.text.trim() === '') return bad('"text" must be a non-empty string', id);
    const labels = o.labels;
    if (typeof labels !== 'object' || labels === null || Array.isArray(labels))
      return bad('"labels" must be an object of label axes', id);
    const lab: Record<string, string> = {};
    for (const [key, v] of Object.entries(labels as Record<string, unknown>)) {
      const sv = scalar(v);
      if (sv === null || sv.trim() === '') return bad(`label ${JSON.stringify(key)} is empty or not a string`, id);
      lab[key] = sv.trim();
    }
    const keys = Object.keys(lab);
    if (axes === null) axes = keys;
    else if (keys.length !== axes.length || keys.some((x) => !axes!.includes(x))) {
      return bad(`label axes ${JSON.stringify(keys)} differ from the first line's ${JSON.stringify(axes)}`, id);
    }
    const prev = seen.get(id);
    if (prev !== undefined) return bad(`duplicate id ${JSON.stringify(id)} (first on line ${prev})`, id);
    seen.set(id, k + 1);
    const sample: Sample = { id, text: o.text, labels: lab };
    if (o.provenance !== undefined) {
      const pv = o.provenance;
      if (typeof pv !== 'object' || pv === null || Array.isArray(pv) ||
        Object.values(pv).some((x) => typeof x !== 'string'))
        return bad('"provenance" must be an object of strings', id);
      sample.provenance = pv as Record<string, string>;
    }
    if (o.extras !== undefined) {
      if (typeof o.extras !== 'object' || o.extras === null || Array.isArray(o.extras))
        return bad('"extras" must be an object', id);
      sample.extras = o.extras as Record<string, unknown>;
    }
    out.samples.push(sample);
  });
  if (out.samples.length === 0 && out.problems.length === 0)
    out.problems.push({ file, reason: 'file is empty (no JSON lines)' });
  out.axes = axes ?? [];
  return out;
}

/**
 * A file given as `jsonl:FILE` whose first object is not in lobes' sample form ({id, text,
 * labels}) is another JSON Lines file that needs its fields named: one error naming the fields
 * the first line has, instead of one per line.
 */
function checkSampleForm(text: string, file: string, spec: string): void {
  const nl = text.search(/\S/);
  if (nl < 0) return;
  const end = text.indexOf('\n', nl);
  const line = text.slice(nl, end < 0 ? undefined : end).replace(/\r$/, '');
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return;
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return;
  const r = o as Record<string, unknown>;
  const labels = r.labels;
  if (typeof r.id === 'string' && typeof r.text === 'string' && typeof labels === 'object' && labels !== null &&
    !Array.isArray(labels)) return;
  const fields = Object.keys(r);
  const strings = fields.filter((f) => typeof r[f] === 'string' || typeof r[f] === 'number');
  const textField = strings.find((f) => /^(text|prompt|question|sentence|content|input)$/i.test(f)) ?? strings[0];
  const labelFields = strings.filter((f) => f !== textField && !/^id$/i.test(f));
  const example = textField
    ? `${spec.split('?')[0]}?text=${textField}${labelFields.length ? `&label=${labelFields.join(',')}` : ''}${
      fields.includes('id') ? '&id=id' : ''
    }`
    : `${spec.split('?')[0]}?text=FIELD&label=FIELD`;
  throw new LobesError(
    `the file is not in lobes' sample form {id, text, labels} (what lobes data export writes); its first line has the fields ${
      fields.map((f) => JSON.stringify(f)).join(', ') || 'none'
    }`,
    {
      file,
      where: `line ${text.slice(0, nl).split('\n').length}`,
      hint: `name the fields in the spec, e.g. ${example} (docs/datasets.md)`,
    },
  );
}

/** `jsonl:FILE?text=F&label=F…`, or `jsonl:FILE` for a file in lobes' sample form (loadSampleJsonl). */
export function loadJsonl(p: ParsedSpec): GenericResult {
  if (!p.params.has('text') && !p.params.has('label')) {
    if (!p.path) throw new UsageError('jsonl: needs a file path', 'e.g. jsonl:data.jsonl?text=text&label=label');
    return loadSampleJsonl(p);
  }
  const g = genericSpec(p, [], true);
  const file = p.path;
  const out: GenericResult = { samples: [], excluded: [], problems: [], spec: formatSpec('jsonl', p.path, p.params),
    axes: axesOf(g) };
  const r = readUtf8(file);
  if ('problem' in r) {
    if (r.problem.reason === 'no such file') throw new LobesError('no such file', { file });
    out.problems.push(r.problem);
    return out;
  }
  const lines = r.text.split('\n');
  const rows: Row[] = [];
  const found = new Set<string>();
  lines.forEach((ln, i) => {
    const s = ln.replace(/\r$/, '');
    if (s.trim() === '') return;
    const j = parseJson(s, file, 0, `line ${i + 1}`);
    if ('problem' in j) return out.problems.push(j.problem);
    const v = j.value;
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      return out.problems.push({ file, where: `line ${i + 1}`, reason: 'expected a JSON object' });
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) found.add(k);
    rows.push({ line: i + 1, get: (f) => fieldOf(o, f).value, has: (f) => fieldOf(o, f).has });
  });
  if (rows.length === 0 && out.problems.length === 0)
    out.problems.push({ file, reason: 'file is empty (no JSON lines)' });
  const named: [string, string][] = [['text', g.text], ...g.labels.map((f): [string, string] => ['label', f]),
    ...(g.id ? [['id', g.id] as [string, string]] : [])];
  const absent = rows.length ? absentFieldsError(file, named, (f) => rows.some((row) => row.has(f)), found) : null;
  if (absent) throw absent;
  rowsToSamples(rows, file, g, out);
  return out;
}

/**
 * RFC 4180 records: comma-separated fields, optional double quotes, "" for a quote inside
 * quotes, CRLF or LF line ends, quoted fields may span lines. Returns records with the
 * line each starts on, or problems (unterminated quote, stray quote).
 */
export function parseCsv(text: string,
  delimiter = ','): { records: { line: number; fields: string[] }[]; problems: { line: number; reason: string }[] }
{
  const records: { line: number; fields: string[] }[] = [];
  const problems: { line: number; reason: string }[] = [];
  let i = 0;
  let line = 1;
  const n = text.length;
  while (i < n) {
    const start = line;
    const fields: string[] = [];
    let bad: string | null = null;
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i++;
        let closed = false;
        while (i < n) {
          const c = text[i];
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            closed = true;
            break;
          }
          if (c === '\n') line++;
          field += c;
          i++;
        }
        if (!closed) {
          bad = 'unterminated quoted field';
          break;
        }
        if (i < n && text[i] !== delimiter && text[i] !== '\n' && text[i] !== '\r') {
          bad = 'text after a closing quote (write "" for a quote inside a quoted field)';
          while (i < n && text[i] !== '\n') i++;
        }
      } else {
        while (i < n && text[i] !== delimiter && text[i] !== '\n' && !(text[i] === '\r' && text[i + 1] === '\n')) {
          if (text[i] === '"' && !bad)
            bad = 'quote inside an unquoted field (quote the whole field and write "" for the quote)';
          field += text[i];
          i++;
        }
      }
      fields.push(field);
      if (i < n && text[i] === delimiter) {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === '\r' && text[i + 1] === '\n') i++;
    if (text[i] === '\n') {
      i++;
      line++;
    } else if (text[i] === '\r') i++;
    if (bad) {
      problems.push({ line: start, reason: bad });
      if (bad === 'unterminated quoted field') break;
      continue;
    }
    if (fields.length === 1 && fields[0] === '') continue; // blank line
    records.push({ line: start, fields });
  }
  return { records, problems };
}

export function loadCsv(p: ParsedSpec): GenericResult {
  const g = genericSpec(p, ['delimiter']);
  const d = p.params.get('delimiter') ?? ',';
  const delimiter = d === 'tab' || d === '\\t' ? '\t' : d === 'semicolon' ? ';' : d;
  if (delimiter.length !== 1 || delimiter === '"' || delimiter === '\n')
    throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: delimiter must be one character (or tab, semicolon)`);
  const file = p.path;
  const out: GenericResult = { samples: [], excluded: [], problems: [], spec: formatSpec('csv', p.path, p.params),
    axes: axesOf(g) };
  const r = readUtf8(file);
  if ('problem' in r) {
    if (r.problem.reason === 'no such file') throw new LobesError('no such file', { file });
    out.problems.push(r.problem);
    return out;
  }
  const { records, problems } = parseCsv(r.text, delimiter);
  for (const pr of problems) out.problems.push({ file, where: `line ${pr.line}`, reason: pr.reason });
  if (records.length === 0) {
    if (problems.length === 0) out.problems.push({ file, reason: 'file is empty (no header row)' });
    return out;
  }
  const [header, ...body] = records;
  const cols = header.fields.map((h) => h.trim());
  const index = new Map<string, number>();
  cols.forEach((c, k) => {
    if (index.has(c))
      out.problems.push({ file, where: `line ${header.line}`,
        reason: `column ${JSON.stringify(c)} appears twice in the header` });
    else index.set(c, k);
  });
  const need = [g.text, ...g.labels, ...(g.id ? [g.id] : [])];
  const missing = need.filter((c) => !index.has(c));
  if (missing.length) {
    out.problems.push({ file, where: `line ${header.line}`,
      reason: `header has no column ${missing.map((m) => JSON.stringify(m)).join(', ')} (columns: ${
        cols.join(', ')
      })` });
    return out;
  }
  if (body.length === 0) out.problems.push({ file, reason: 'file has a header but no rows' });
  const rows: Row[] = [];
  for (const rec of body) {
    if (rec.fields.length !== cols.length) {
      out.problems.push({ file, where: `line ${rec.line}`,
        reason: `row has ${rec.fields.length} fields, the header has ${cols.length}` });
      continue;
    }
    rows.push({ line: rec.line, get: (f) => rec.fields[index.get(f)!], has: (f) => index.has(f) });
  }
  rowsToSamples(rows, file, g, out);
  return out;
}
