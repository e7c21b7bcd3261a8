/**
 * Duplicate options are refused whichever way the answer is given. Before, an item whose
 * options repeated a text was scored silently when its answer was an index (or a letter) and
 * refused when the same item gave its answer as the text.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadMcqJsonl, resolveAnswer } from '../../src/data/mcq.js';
import { LobesErrors } from '../../src/util/errors.js';

describe('duplicate options', () => {
  let dir: string;
  let file: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'lobes-dup-'));
    file = path.join(dir, 'items.jsonl');
    const options = ['yes', 'no', 'yes'];
    const lines = [
      { id: 'by-index', q: 'Is it?', o: options, a: 0 },
      { id: 'by-text', q: 'Is it?', o: options, a: 'yes' },
      { id: 'by-letter', q: 'Is it?', o: options, a: 'C' },
      { id: 'by-index-other', q: 'Is it?', o: ['yes', 'no', ' no '], a: 0 },
      { id: 'fine', q: 'Is it?', o: ['yes', 'no', 'maybe'], a: 2 },
    ];
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const spec = () => `jsonl:${file}?question=q&options=o&answer=a&id=id`;

  it('refuses the item the same way for an index, a text and a letter answer', () => {
    for (const a of [0, 2, 'yes', 'C', 'no'])
      expect(resolveAnswer(a, ['yes', 'no', 'yes'])).toBe(
        'options 0 and 2 (0-based) are the same text "yes"; the answer cannot be told apart',
      );
    expect(resolveAnswer(0, ['yes', 'no', 'maybe'])).toBe(0);
  });

  it('a dataset with such items fails listing each of them, and --skip-invalid leaves all of them out', () => {
    let err: unknown;
    try {
      loadMcqJsonl(spec());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LobesErrors);
    const problems = (err as LobesErrors).problems.map((p) => p.message);
    expect(problems).toHaveLength(4);
    for (const [i, p] of problems.entries())
      expect(p).toMatch(new RegExp(`items\\.jsonl: line ${i + 1}: options \\d and 2 \\(0-based\\) are the same text`));
    const ok = loadMcqJsonl(spec(), true);
    expect(ok.items.map((x) => x.id)).toEqual(['fine']);
    expect(ok.excluded.map((x) => x.id)).toEqual(
      ['by-index', 'by-text', 'by-letter', 'by-index-other'].map((_, i) => `items.jsonl: line ${i + 1}`),
    );
  });
});
