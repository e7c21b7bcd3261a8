/**
 * Keywords across items (src/attend/stats.ts keywords): a word's weight summed within an item and
 * averaged over the group's items, 0 where absent, computed here by hand; function words ("the",
 * "a", 的) and the benchmark's instruction part (its "JSON", its example answer's letter) are not
 * keywords even when they are the heaviest units, while they stay in the items' words.
 */
import { describe, expect, it } from 'vitest';
import { keywords, FUNCTION_WORDS } from '../../src/attend/stats.js';
import type { AttendItem } from '../../src/attend/types.js';

type W = [text: string, part: string, weight: number, kind?: string, content?: boolean];
function item(id: string, words: W[], top: number[] = []): AttendItem {
  return {
    id,
    index: 0,
    labels: {},
    correct: null,
    prompt: '',
    parts: [],
    ids: [],
    tokens: [],
    spans: [],
    special: [],
    position: 0,
    layers: [0],
    heads: 1,
    weights: [],
    words: words.map(([text, part, weight, kind, content]) => ({ text, start: 0, end: 0, kind: (kind ?? 'word') as any,
      part, weight, tokens: [], content: content ?? true })
    ),
    top,
    partMass: {},
    partShare: {},
    unaligned: 0,
    truncated: false,
  } as unknown as AttendItem;
}

describe('attend keywords', () => {
  const items = [
    item('a', [['The', 'question', 0.3], ['friend', 'question', 0.1], ['Friend', 'context', 0.05], ['JSON',
      'instruction', 0.4], ['C', 'instruction', 0.2], ['.', 'question', 0.5, 'punct'], ['apologize', 'options', 0.02]],
      [2, 1]),
    item('b', [['the', 'context', 0.25], ['apologize', 'options', 0.08], ['的', 'context', 0.3, 'cjk'], ['朋',
      'context', 0.06, 'cjk'], ['json', 'instruction', 0.35], ['wrapper', 'template', 0.9, 'word', false]], [1]),
  ];

  it('averages each word over the items, 0 where absent, and leaves out function words, the instruction, punctuation and template text', () => {
    const k = keywords(items, 10);
    // by hand: friend (0.1 + 0.05) / 2, apologize (0.02 + 0.08) / 2, 朋 0.06 / 2
    expect(k.map((x) => x.word)).toEqual(['friend', 'apologize', '朋']);
    expect(k[0]!.weight).toBeCloseTo(0.075, 12);
    expect(k[1]!.weight).toBeCloseTo(0.05, 12);
    expect(k[2]!.weight).toBeCloseTo(0.03, 12);
    expect(k.map((x) => [x.items, x.inTop])).toEqual([[1, 1], [2, 1], [1, 0]]);
    // the part it sits in most: friend is once in question, once in context (ties by name)
    expect(k[0]!.part).toBe('context');
    for (const w of ['the', '的', 'json', 'c']) expect(k.some((x) => x.word === w), w).toBe(false);
    expect(FUNCTION_WORDS.has('the') && FUNCTION_WORDS.has('的')).toBe(true);
  });

  it('keeps the k heaviest', () => {
    expect(keywords(items, 2).map((x) => x.word)).toEqual(['friend', 'apologize']);
  });
});
