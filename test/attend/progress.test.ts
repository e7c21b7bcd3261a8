/**
 * `lobes attend` shows progress per item (issue: it printed nothing for two minutes when every
 * item fitted in one batch): a line as soon as the work starts, then one per item, through
 * src/util/progress.ts. --quiet drops progress and the start and end lines, and keeps warnings.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAttend, type AttendOptions } from '../../src/attend/run.js';

const TINY = path.resolve(import.meta.dirname, '../../models/tiny-llama');
const root = mkdtempSync(path.join(tmpdir(), 'lobes-attend-progress-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A stream that is not a terminal and keeps what is written to it. */
function sink(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let text = '';
  const stream = { isTTY: false, write: (s: string) => ((text += s), true) } as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

describe('attend progress', () => {
  const N = 6;
  const run = async (name: string, extra: Partial<AttendOptions>) => {
    const s = sink();
    const logged: string[] = [];
    // All six items in one batch of one chunk: the case that printed nothing before.
    await runAttend({ model: TINY, data: 'builtin:social', limit: N, batch: 8, bootstrap: 0, out: path.join(root, name), progress: { stream: s.stream, intervalMs: 0 }, log: (l) => logged.push(l), ...extra });
    return { progress: s.lines(), logged };
  };

  it('one line at the start and one per item, each counting the items done', async () => {
    const { progress, logged } = await run('loud', {});
    const counts = progress.map((l) => /^attend: (\d+)\/6 items, /.exec(l)?.[1]).filter((x) => x !== undefined).map(Number);
    for (let k = 0; k <= N; k++) expect(counts, `a line with ${k}/6 items`).toContain(k);
    expect(counts[0]).toBe(0);
    expect(logged[0]).toMatch(/^attend: 6 items \(6 by --limit 6/);
    expect(logged.at(-1)).toMatch(/^attend: done, 6 items in/);
  });

  it('--quiet: no progress and no start or end line', async () => {
    const { progress, logged } = await run('quiet', { quiet: true });
    expect(progress).toEqual([]);
    expect(logged).toEqual([]);
  });
});
