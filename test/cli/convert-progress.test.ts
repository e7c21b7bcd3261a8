/**
 * The conversion's progress line (src/cli/convert.ts convertProgress): the writer's planned total
 * is an estimate that grows as it writes (blocks the source gives), so the line must follow the
 * refined total and never print more done than total (it once ended "195/183 MB").
 */
import { describe, expect, it } from 'vitest';
import { convertProgress } from '../../src/cli/convert.js';

function fakeStream(): { stream: NodeJS.WriteStream; lines: string[] } {
  const lines: string[] = [];
  const stream = { isTTY: false, write: (s: string) => (lines.push(s), true) } as unknown as NodeJS.WriteStream;
  return { stream, lines };
}

describe('convert progress', () => {
  it('follows a total that grows while writing, and ends at done = total', () => {
    const { stream, lines } = fakeStream();
    const p = convertProgress(false, stream);
    // the writer's sequence: planned 183 MB, then done passes it and the total follows done
    p.onProgress(0, 183e6);
    p.onProgress(150e6, 183e6);
    p.onProgress(190e6, 190e6);
    p.onProgress(195.3e6, 195.3e6);
    p.finish();
    const counts = lines.map((l) => /convert: (\d+)\/(\d+) MB/.exec(l)).filter((m): m is RegExpExecArray => !!m);
    expect(counts.length).toBeGreaterThan(0);
    for (const m of counts) expect(Number(m[1])).toBeLessThanOrEqual(Number(m[2]));
    const last = counts[counts.length - 1]!;
    expect([Number(last[1]), Number(last[2])]).toEqual([195, 195]);
  });

  it('prints nothing when quiet', () => {
    const { stream, lines } = fakeStream();
    const p = convertProgress(true, stream);
    p.onProgress(10e6, 20e6);
    p.finish();
    expect(lines).toEqual([]);
  });
});
