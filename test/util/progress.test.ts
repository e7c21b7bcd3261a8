/**
 * The progress line's rates and ETA (src/util/progress.ts): measured from the first advance, so
 * loading and warm-up before the first unit, and the units a resumed job found done, do not
 * enter them; no rate or ETA until one can be measured; the first batch's items count as one
 * advance. Time is vitest's fake clock.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProgressBar as Progress } from '../../src/util/progress-bar.js';

function sink(): { stream: NodeJS.WriteStream; lines: string[] } {
  const lines: string[] = [];
  const stream = { isTTY: false,
    write: (s: string) => (lines.push(...s.split('\n').filter(Boolean)), true) } as unknown as NodeJS.WriteStream;
  return { stream, lines };
}
const at = (ms: number) => vi.setSystemTime(new Date(1_000_000 + ms));

describe('progress rates and ETA', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    at(0);
  });
  afterEach(() => vi.useRealTimers());

  it('no rate or ETA before a second advance; then the rate of the work since the first unit, not since loading', () => {
    const { stream, lines } = sink();
    const p = new Progress({ label: 'x', total: 100, unit: 'items', stream, intervalMs: 0 });
    at(30_000); // 30 s of loading and warm-up, then the first item
    p.tick(1, { tokens: 50 });
    expect(lines.at(-1)).toBe('x: 1/100 items, - items/s, - tokens/s, 30s elapsed');
    at(32_000); // two more items in 2 s
    p.tick(1, { tokens: 50 });
    p.tick(1, { tokens: 50 });
    // 1 item/s since the first: 97 left take 97 s (from the start it would read 0.09 items/s, ETA 16m)
    expect(lines.at(-1)).toBe('x: 3/100 items, 1.00 items/s, 50.0 tokens/s ETA 1m37s, 32s elapsed');
  });

  it('counts a resumed job found done neither in the rate nor in the ETA', () => {
    const { stream, lines } = sink();
    const p = new Progress({ label: 'x', total: 100, unit: 'items', stream, intervalMs: 0 });
    p.resume(60);
    expect(lines.at(-1)).toBe('x: 60/100 items, - items/s, 0s elapsed');
    at(1_000);
    p.tick(1);
    at(5_000);
    p.tick(4); // 4 items in 4 s
    expect(lines.at(-1)).toBe('x: 65/100 items, 1.00 items/s ETA 35s, 5s elapsed');
  });

  it('the items of the first batch are one advance, so the next batch gives the true rate', () => {
    const { stream, lines } = sink();
    const p = new Progress({ label: 'x', total: 32, unit: 'items', stream, intervalMs: 0 });
    at(10_000);
    for (let k = 0; k < 8; k++) p.tick(1); // one batch of 8 finishes at once
    at(14_000);
    for (let k = 0; k < 8; k++) p.tick(1); // the next 8 take 4 s: 2 items/s
    expect(lines.at(-1)).toBe('x: 16/32 items, 2.00 items/s ETA 8s, 14s elapsed');
  });

  it('a steady stream of quick ticks still gets a rate', () => {
    const { stream, lines } = sink();
    const p = new Progress({ label: 'x', total: 1000, unit: 'rows', stream, intervalMs: 0 });
    for (let k = 1; k <= 100; k++) {
      at(k * 20); // a row every 20 ms
      p.tick(1);
    }
    expect(lines.at(-1)).toMatch(/^x: 100\/1000 rows, 50\.0 rows\/s ETA 18s, 2s elapsed$/);
  });

  it('the last line falls back to the whole time when no window rate exists', () => {
    const { stream, lines } = sink();
    const p = new Progress({ label: 'x', total: 1, unit: 'items', stream, intervalMs: 0 });
    at(4_000);
    p.tick(1);
    p.finish();
    expect(lines.at(-1)).toBe('x: 1/1 items, 0.25 items/s, 4s elapsed');
  });

  it('off a TTY, finish() right after an unchanged line does not write it again; a changed one it writes', () => {
    const { stream, lines } = sink();
    const p = new Progress({ label: 'w', total: 0, unit: 'MB', stream, intervalMs: 0 });
    p.tick(0);
    p.finish();
    expect(lines).toEqual(['w: 0 MB, - MB/s, 0s elapsed']);
    const q = sink();
    const r = new Progress({ label: 'w', total: 4, unit: 'points', stream: q.stream, intervalMs: 0 });
    r.tick(1);
    at(2_000);
    r.tick(3);
    r.log('a message');
    r.finish();
    // after a message, the last line is written again so the status is the last thing read
    expect(q.lines).toEqual(['w: 1/4 points, - points/s, 0s elapsed', 'w: 4/4 points, 1.50 points/s, 2s elapsed',
      'a message', 'w: 4/4 points, 1.50 points/s, 2s elapsed']);
  });
});
