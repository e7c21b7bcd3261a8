/**
 * `lobes attend` results in a report: read an attend folder through its store (src/attend/store.ts:
 * items.jsonl and summary.json verified against attend.json), check what the page relies on, and
 * make the compact payload of the Attention section (client/sections/attention.ts).
 */
import * as path from 'node:path';
import { LobesError } from '../util/errors.js';
import type { AttendItem, AttendSummary } from '../attend/types.js';
import { ITEMS, readAttendResults } from '../attend/store.js';
import type { AttendItemPayload, AttendPayload } from './types.js';

export { isAttendDir } from '../attend/store.js';

export interface AttendData {
  dir: string;
  summary: AttendSummary;
  items: AttendItem[];
}

/** Items shown in a page by default (the rest are counted as omitted). */
export const DEFAULT_PAGE_ITEMS = 200;

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkItem(it: any, file: string, line: number): void {
  const bad = (what: string) => new LobesError(what, { file, where: `line ${line}` });
  if (!isObj(it) || typeof it.id !== 'string' || typeof it.prompt !== 'string' || !Array.isArray(it.words) ||
    !Array.isArray(it.parts) || !Array.isArray(it.top))
  {
    throw bad('an item needs id, prompt (strings), parts, words and top (arrays)');
  }
  const n = it.prompt.length;
  for (const [k, w] of it.words.entries()) {
    if (!isObj(w) || !Number.isInteger(w.start) || !Number.isInteger(w.end) || w.start < 0 || w.end > n ||
      w.end < w.start || typeof w.weight !== 'number' || typeof w.part !== 'string')
    {
      throw bad(`word ${k} needs start ≤ end within the prompt, a numeric weight and a part`);
    }
  }
  for (const [k, p] of it.parts.entries()) {
    if (!isObj(p) || typeof p.name !== 'string' || !Number.isInteger(p.start) || !Number.isInteger(p.end) ||
      p.start < 0 || p.end > n || p.end < p.start)
      throw bad(`part ${k} needs a name and start ≤ end within the prompt`);
  }
  for (const t of it.top)
    if (!Number.isInteger(t) || t < 0 || t >= it.words.length)
      throw bad(`top word index ${JSON.stringify(t)} is not a word of the item`);
}

/**
 * Read a complete attend folder (files verified against attend.json); a file that breaks the
 * format is an error naming it and the place.
 */
export function loadAttend(dir: string): AttendData {
  const r = readAttendResults(dir);
  const sf = path.join(dir, r.manifest.files!.summary.path);
  if (!isObj(r.summary) || r.summary.format !== 'lobes-attend' || !isObj(r.summary.parts) ||
    !isObj(r.summary.keywords))
  {
    throw new LobesError('not a lobes attend summary (format, parts or keywords missing)', { file: sf });
  }
  const itf = path.join(dir, ITEMS);
  r.items.forEach((it, i) => checkItem(it, itf, i + 1));
  return { dir: r.dir, summary: r.summary, items: r.items };
}

const round4 = (x: number) => (x === 0 ? 0 : Number(x.toPrecision(4)));

/** The Attention section's payload: the summary, and the first `maxItems` items compacted. */
export function attendPayload(a: AttendData, maxItems = DEFAULT_PAGE_ITEMS): AttendPayload {
  const s = a.summary;
  const partNames: string[] = [];
  const pi = (name: string) => {
    let i = partNames.indexOf(name);
    if (i < 0) i = partNames.push(name) - 1;
    return i;
  };
  const items: AttendItemPayload[] = a.items.slice(0, maxItems).map((it) => {
    const p: AttendItemPayload = {
      id: it.id,
      correct: it.correct ?? null,
      prompt: it.prompt,
      parts: it.parts.map((x) => [pi(x.name), x.start, x.end]),
      ws: it.words.map((w) => w.start),
      we: it.words.map((w) => w.end),
      ww: it.words.map((w) => round4(w.weight)),
      wp: it.words.map((w) => pi(w.part)),
      wc: it.words.map((w) => (w.content ? 1 : 0)),
      top: it.top,
      share: it.roleShare ?? it.partShare ?? {},
    };
    if (it.roles) p.roles = it.roles;
    return p;
  });
  return {
    dir: a.dir,
    itemsFile: path.join(a.dir, ITEMS),
    model: s.model?.dir ?? '',
    attention: s.model?.attention ?? '',
    layers: s.settings?.layers ?? [],
    heads: s.model?.heads ?? null,
    position: s.settings?.position ?? '',
    top: s.settings?.top ?? 30,
    counts: { items: s.counts?.items ?? a.items.length, right: s.counts?.right ?? 0, wrong: s.counts?.wrong ?? 0,
      unscored: s.counts?.unscored ?? 0 },
    nonContentMass: s.nonContentMass,
    parts: s.parts,
    roles: s.roles ?? null,
    keywords: s.keywords,
    partNames,
    items,
    omitted: Math.max(0, a.items.length - items.length),
  };
}

/** Provenance lines of an attend folder shown alone. */
export function attendProvenance(a: AttendData): [string, string][] {
  const s = a.summary;
  const out: [string, string][] = [];
  const add = (k: string, v: unknown) => {
    if (v !== undefined && v !== null && v !== '') out.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
  };
  add('attend results', a.dir);
  add('created', s.createdAt);
  add('lobes version', s.lobesVersion);
  add('model', s.model?.dir);
  add('model graph sha256', s.model?.graphSha256);
  if (s.model?.source?.identity)
    add('model source',
      `${
        s.model.source.format === 'hf-checkpoint' ? 'Hugging Face checkpoint' : 'GGUF'
      } ${s.model.source.path} (sha256 ${s.model.source.sha256}); identity ${s.model.source.identity} (the same for every layout: ${s.model.source.options?.layout} here)`);
  add('attention', `${s.model?.attention}; ${s.model?.layers} layers, ${s.model?.heads ?? '?'} heads`);
  add('tokenizer',
    `${s.tokenizer?.source}; ${s.tokenizer?.scheme}; chat template ${s.tokenizer?.chatTemplate ? 'on' : 'off'}`);
  add('input', `${s.input?.kind} ${s.input?.spec} (${s.input?.items}: ${s.input?.selected} of ${s.input?.total})`);
  add('input sha256', s.input?.sha256);
  add('settings', s.settings);
  return out;
}
