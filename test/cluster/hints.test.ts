/**
 * Error hints suggest only values that are allowed: a perplexity the hint names must pass
 * the same check (and --perplexity's lower bound of 1); below 4 points no value is allowed,
 * and the hint says to add points instead.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { checkPerplexity } from '../../src/tsne/affinity.js';
import { lobes, writeNpy, values } from '../integrity/helpers.js';

/** The message of what checkPerplexity throws, or null. */
function problem(p: number, n: number): string | null {
  try {
    checkPerplexity(p, n);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe('perplexity hints', () => {
  it('every suggested --perplexity is at least 1 and accepted for that N', () => {
    let suggestions = 0;
    for (let n = 2; n <= 60; n++) {
      for (const p of [1, 1.5, 2, 5, 10, 30]) {
        const msg = problem(p, n);
        if (msg === null) continue;
        const m = /pass perplexity (\d+(?:\.\d+)?) or fewer/.exec(msg);
        if (n < 4) {
          expect(m, msg).toBeNull();
          expect(msg).toMatch(/t-SNE needs at least 4 points/);
          continue;
        }
        expect(m, msg).not.toBeNull();
        const v = Number(m![1]);
        expect(v).toBeGreaterThanOrEqual(1);
        expect(problem(v, n), `n=${n} p=${p} suggests ${v}`).toBeNull();
        suggestions++;
      }
    }
    expect(suggestions).toBeGreaterThan(20);
  });

  it('lobes cluster on 3 points with --perplexity 1 says to add points, not to pass a smaller perplexity', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-ppx-'));
    try {
      const npy = path.join(dir, 'm.npy');
      writeNpy(npy, 3, 4, values(12, 3));
      writeFileSync(path.join(dir, 'labels.txt'), 'a\nb\na\n');
      const r = await lobes(['cluster', npy, '--labels', path.join(dir, 'labels.txt'), '--perplexity', '1', '--quiet']);
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).not.toMatch(/--perplexity \d/);
      expect(r.stderr).toMatch(/at least 4 points|too few/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
