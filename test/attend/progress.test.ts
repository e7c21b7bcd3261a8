/**
 * `lobes attend` shows progress per item (issue: it printed nothing for two minutes when every
 * item fitted in one batch): a line as soon as the work starts, then one per item, through
 * src/util/progress.ts. --quiet drops progress and the start and end lines, and keeps warnings.
 * On the CPU a batch holds at most CPU_TOKEN_BUDGET padded tokens, so long prompts run in
 * several batches and their ticks come as each batch finishes, not all at the end.
 */
import { describe, it, expect, afterAll, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAttend, CPU_TOKEN_BUDGET, type AttendOptions } from '../../src/attend/run.js';

/** What happened, in order: each batch the engine starts (`run ROWSxSEQ`) and each progress line. */
const events: string[] = [];

// The real engine, with each batch's start noted in `events`.
vi.mock('../../src/runtime/attention-engine.js', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../src/runtime/attention-engine.js')>();
  return {
    ...orig,
    openAttentionEngine: async (...a: Parameters<typeof orig.openAttentionEngine>) => {
      const e = await orig.openAttentionEngine(...a);
      return Object.assign(Object.create(Object.getPrototypeOf(e)), e, {
        run: (b: Parameters<typeof e.run>[0]) => {
          events.push(`run ${b.batch}x${b.seq}`);
          return e.run(b);
        },
        close: () => e.close(),
      });
    },
  };
});

const TINY = path.resolve(import.meta.dirname, '../../models/tiny-llama');
const root = mkdtempSync(path.join(tmpdir(), 'lobes-attend-progress-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A stream that is not a terminal and keeps what is written to it. */
function sink(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let text = '';
  const stream = { isTTY: false,
    write: (
      s: string,
    ) => ((text += s), events.push(...s.split('\n').filter(Boolean)), true) } as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

describe('attend progress', () => {
  const N = 6;
  const run = async (name: string, extra: Partial<AttendOptions>) => {
    const s = sink();
    const logged: string[] = [];
    // All six items in one batch of one chunk: the case that printed nothing before.
    await runAttend({ model: TINY, data: 'builtin:social', limit: N, batch: 8, bootstrap: 0, out: path.join(root, name),
      progress: { stream: s.stream, intervalMs: 0 }, log: (l) => logged.push(l), ...extra });
    return { progress: s.lines(), logged };
  };

  it('one line at the start and one per item, each counting the items done', async () => {
    const { progress, logged } = await run('loud', {});
    const counts = progress.map((l) => /^attend: (\d+)\/6 items, /.exec(l)?.[1]).filter((x) => x !== undefined).map(
      Number,
    );
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

  it('long prompts that one batch of the old plan held run in several batches on the CPU, each ticking as it finishes', async () => {
    // Six prompts of about 700 tokens (the tiny model's tokenizer: about 1.7 tokens a word):
    // one batch of 6 × 700 padded tokens before; now at most 2048 padded tokens a batch.
    const words = 'the a person went to market and saw friend who was helping others with care'.split(' ');
    const file = path.join(root, 'long.jsonl');
    const rows = Array.from({ length: N },
      (_, i) => ({ id: `long${i}`,
        text: Array.from({ length: 400 + 7 * i }, (_, k) => words[(k * 7 + i) % words.length]).join(' '),
        group: i % 2 ? 'a' : 'b' }));
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    events.length = 0;
    const { progress } = await run('long', { data: `jsonl:${file}?text=text&label=group&id=id`, limit: null });
    const runs = events.filter((e) => e.startsWith('run '));
    const shapes = runs.map((e) => /^run (\d+)x(\d+)$/.exec(e)!.slice(1).map(Number) as [number, number]);
    expect(shapes.length, `batches: ${runs.join(', ')}`).toBeGreaterThan(1);
    expect(shapes.every(([r, q]) => r === 1 || r * q <= CPU_TOKEN_BUDGET), runs.join(', ')).toBe(true);
    expect(shapes.reduce((a, [r]) => a + r, 0)).toBe(N);
    expect(Math.max(...shapes.map(([, q]) => q)) * N).toBeGreaterThan(CPU_TOKEN_BUDGET);
    // the tick sequence: 0, then 1..6 one by one (the closing line repeats 6/6)
    const counts = progress.map((l) => /^attend: (\d+)\/6 items, /.exec(l)?.[1]).filter((x) => x !== undefined).map(
      Number,
    );
    expect(counts.filter((c, i) => i === 0 || c !== counts[i - 1])).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(counts).toEqual([...counts].sort((p, q) => p - q));
    // the ticks of the first batches come before the last batch starts
    const ticks = events.map((e) => Number(/^attend: (\d+)\/6 items, /.exec(e)?.[1] ?? NaN));
    const at = events.flatMap((e, i) => (e.startsWith('run ') ? [i] : []));
    const before = ticks.slice(0, at.at(-1)).filter((k) => k > 0);
    expect(before.length, events.join(' | ')).toBeGreaterThan(0);
    expect(Math.max(...before)).toBe(N - shapes.at(-1)![0]);
    // every batch's rows have ticked before the next batch starts
    let done = 0;
    at.forEach((i, b) => {
      expect(Math.max(0, ...ticks.slice(0, i).filter((k) => k >= 0)), `before batch ${b}`).toBe(done);
      done += shapes[b]![0];
    });
  });
});
