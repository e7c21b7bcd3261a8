/**
 * One item's record once its answering row is known: the row averaged over heads and layers,
 * tokens placed in the prompt and aggregated to words with their parts (words.ts), the part
 * and role shares, and the top words. Numbers are rounded to 6 significant digits, so a
 * record is the same bytes whenever the same row comes back.
 */
import type { AttendItem } from './types.js';
import type { AttendTokenizer } from './tokenize.js';
import type { PreparedItem } from './inputs.js';
import { aggregate, alignTokens, segmentUnits, SPECIAL_PART, TEMPLATE_PART, tokenBytes, topWords,
  UNALIGNED_PART } from './words.js';

/** Parts that are not content: their attention counts apart (nonContentMass), not in the shares. */
export const NON_CONTENT = new Set([TEMPLATE_PART, SPECIAL_PART, UNALIGNED_PART, 'answer_prefix']);

/** A number rounded to 6 significant digits (items.jsonl stays small; float32 weights carry about 7). */
export function r6(x: number): number {
  return x === 0 || !Number.isFinite(x) ? x : Number(x.toPrecision(6));
}

/** The answering row of one item, averaged: per token the mean over heads and layers, and per layer the mean over heads. */
export function average(row: Float32Array, L: number, H: number,
  n: number): { mean: Float64Array; perLayer: Float64Array[] }
{
  const mean = new Float64Array(n);
  const perLayer: Float64Array[] = [];
  for (let l = 0; l < L; l++) {
    const pl = new Float64Array(n);
    for (let h = 0; h < H; h++) {
      const base = (l * H + h) * n;
      for (let j = 0; j < n; j++) pl[j]! += row[base + j]!;
    }
    for (let j = 0; j < n; j++) {
      pl[j]! /= H;
      mean[j]! += pl[j]! / L;
    }
    perLayer.push(pl);
  }
  return { mean, perLayer };
}

/** Shares of the content parts in the content mass; role shares when the item has option roles. */
function shares(partMass: Record<string, number>,
  roles: PreparedItem['roles']): { partShare: Record<string, number>; roleShare?: Record<string, number> }
{
  let content = 0;
  for (const [p, m] of Object.entries(partMass)) if (!NON_CONTENT.has(p)) content += m;
  const partShare: Record<string, number> = {};
  for (const [p, m] of Object.entries(partMass)) if (!NON_CONTENT.has(p)) partShare[p] = content > 0 ? m / content : 0;
  if (!roles) return { partShare };
  const roleShare: Record<string, number> = {};
  for (const [p, s] of Object.entries(partShare)) {
    const role = roles[p];
    const key = role ? `option (${role})` : p;
    roleShare[key] = (roleShare[key] ?? 0) + s;
  }
  for (const role of new Set(Object.values(roles))) roleShare[`option (${role})`] ??= 0;
  return { partShare, roleShare };
}

const rounded = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, r6(v)]));

/** Everything about one item once its attention row ([layers, heads, n] float32) is known. */
export function itemRecord(it: PreparedItem, row: Float32Array, layers: number[], heads: number, tok: AttendTokenizer,
  opts: { top: number; cjk: 'char' | 'segment'; perLayer: boolean }): AttendItem
{
  const n = it.ids.length;
  const { mean, perLayer } = average(row, layers.length, heads, n);
  const table = tok.table;
  const allSpecial = it.allIds.map((id) => table.special(id));
  const { spans: allSpans } = alignTokens(it.prompt,
    it.allIds.map((id, i) => tokenBytes(table.piece(id), table.scheme, allSpecial[i]!)), allSpecial);
  const spans = it.kept.map((i) => allSpans[i]!);
  const special = it.kept.map((i) => allSpecial[i]!);
  const agg = aggregate(it.prompt, spans, special, mean, it.parts, segmentUnits(it.prompt, { cjk: opts.cjk }),
    new Set([TEMPLATE_PART, 'answer_prefix']));
  const words = agg.words.map((w) => ({ text: w.text, start: w.start, end: w.end, kind: w.kind, part: w.part,
    weight: r6(w.weight), content: w.content })
  );
  const index = new Map(agg.words.map((w, i) => [w, i]));
  const { partShare, roleShare } = shares(agg.partMass, it.roles);
  const rec: AttendItem = {
    id: it.id,
    index: it.index,
    labels: it.labels,
    correct: it.correct,
    prompt: it.prompt,
    parts: it.parts,
    ids: it.ids,
    tokens: it.ids.map((id) => table.piece(id)),
    spans: spans.map((s) => [s.start, s.end]),
    special,
    position: n - 1,
    layers,
    heads,
    weights: Array.from(mean, r6),
    words,
    top: topWords(agg.words, opts.top).map((w) => index.get(w)!),
    partMass: rounded(agg.partMass),
    partShare: rounded(partShare),
    unaligned: agg.unaligned,
  };
  if (it.roles) rec.roles = it.roles;
  if (roleShare) rec.roleShare = rounded(roleShare);
  if (opts.perLayer) rec.layerWeights = perLayer.map((pl) => Array.from(pl, r6));
  if (it.truncated) rec.truncated = true;
  if (it.reasoning) rec.reasoning = it.reasoning;
  return rec;
}
