/**
 * The suite's file order (test/sequencer.ts): longest recorded first, new files ranked at 1 s and
 * larger first among equals, and a missing or damaged durations file changes only the order.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { longestFirst, readDurations, DURATIONS } from '../sequencer.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-sequencer-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface F {
  name: string;
  bytes: number;
}
const order = (files: F[], seconds: Record<string, number>) =>
  longestFirst(files, (f) => f.name, (f) => f.bytes, new Map(Object.entries(seconds))).map((f) => f.name);

describe('test file order', () => {
  it('puts the longest recorded first, new files after those over 1 s, ties by size', () => {
    const files: F[] = [
      { name: 'a', bytes: 10 }, // 0.2 s
      { name: 'new-small', bytes: 5 },
      { name: 'b', bytes: 10 }, // 300 s
      { name: 'new-big', bytes: 500 },
      { name: 'c', bytes: 10 }, // 12 s
      { name: 'd', bytes: 99 }, // 0.2 s, larger than a
    ];
    expect(order(files, { a: 0.2, b: 300, c: 12, d: 0.2 })).toEqual(['b', 'c', 'new-big', 'new-small', 'd', 'a']);
  });

  it('with no durations, orders by size (vitest without its cache)', () => {
    const files: F[] = [{ name: 'x', bytes: 1 }, { name: 'y', bytes: 3 }, { name: 'z', bytes: 2 }];
    expect(order(files, {})).toEqual(['y', 'z', 'x']);
  });

  it('reads the durations file; a missing or damaged one is empty, and non-numbers are left out', () => {
    const good = path.join(tmp, 'good.json');
    writeFileSync(good,
      JSON.stringify({ files: { 'test/a.test.ts': 4.5, 'test/b.test.ts': 'slow', 'test/c.test.ts': null } }));
    expect([...readDurations(good)]).toEqual([['test/a.test.ts', 4.5]]);
    const bad = path.join(tmp, 'bad.json');
    writeFileSync(bad, '{"files": {');
    expect(readDurations(bad).size).toBe(0);
    expect(readDurations(path.join(tmp, 'absent.json')).size).toBe(0);
  });

  it('the committed durations name test files of this checkout, the docs test among the longest', () => {
    const d = readDurations(DURATIONS);
    expect(d.size).toBeGreaterThan(100);
    for (const name of d.keys()) expect(name).toMatch(/^test\/.+\.test\.ts$/);
    const longest = [...d].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([n]) => n);
    expect(longest).toContain('test/docs/commands.test.ts');
  });
});
