/**
 * DIR/summary.json of an attend folder: the facts recorded in its manifest (model, tokenizer,
 * input, settings) with the numbers across its items (counts, the non-content mass, part and
 * role shares with bootstrap intervals, keywords). A function of the items and the facts alone,
 * so that a merge of shards computes it as a single run does.
 */
import { LOBES_VERSION } from '../version.js';
import { Rng } from '../util/rng.js';
import type { AttendItem, AttendSummary } from './types.js';
import type { AttendManifest } from './store.js';
import { keywords, meanCI, shareTable } from './stats.js';
import { NON_CONTENT, r6 } from './record.js';

/** The summary of a finished attend job (or of merged shards). */
export function summarize(items: AttendItem[], m: Pick<AttendManifest, 'facts' | 'timings' | 'shard'>): AttendSummary {
  const { model, tokenizer, input, settings } = m.facts;
  const B = settings.bootstrap;
  const seed = settings.seed;
  const right = items.filter((it) => it.correct === true);
  const wrong = items.filter((it) => it.correct === false);
  const nonContent = items.map((it) =>
    Object.entries(it.partMass).reduce((s, [p, v]) => s + (NON_CONTENT.has(p) ? v : 0), 0)
  );
  const hasRoles = items.some((it) => it.roleShare);
  const { attempts: _a, ...timings } = m.timings;
  const full: AttendSummary = {
    format: 'lobes-attend',
    formatVersion: 1,
    lobesVersion: LOBES_VERSION,
    createdAt: new Date().toISOString(),
    model: { ...model, heads: items[0]?.heads ?? model.heads ?? null },
    tokenizer,
    input: { ...input, selected: items.length },
    settings,
    counts: {
      items: items.length,
      right: right.length,
      wrong: wrong.length,
      unscored: items.length - right.length - wrong.length,
      tokens: items.reduce((s, it) => s + it.ids.length, 0),
      truncated: items.filter((it) => it.truncated).length,
      unalignedTokens: items.reduce((s, it) => s + it.unaligned, 0),
    },
    nonContentMass: meanCI(nonContent, B, new Rng(seed)),
    parts: shareTable(items, (it) => it.partShare, B, seed + 1),
    roles: hasRoles ? shareTable(items, (it) => it.roleShare, B, seed + 2) : null,
    keywords: { all: keywords(items, settings.top), right: keywords(right, settings.top),
      wrong: keywords(wrong, settings.top) },
    timings,
    ...(m.shard ? { shard: m.shard } : {}),
  };
  // Figures to 6 significant digits, in the file and in what is returned.
  return JSON.parse(JSON.stringify(full, (_k, v) => (typeof v === 'number' && !Number.isInteger(v) ? r6(v) : v)));
}
