/**
 * Cloze progress ticks per item as the engine finishes each item's options, not once when the
 * whole chunk's scoring returns (it showed "0/32 units, 0.00 tokens/s" for minutes, then
 * done), and its token rate counts the scored tokens. The real engine on a generated model,
 * one continuation per batch, with each batch's end noted beside the progress lines.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runEval } from '../../src/eval/run.js';
import { openLoglikEngine, type LoglikEngine } from '../../src/runtime/loglik.js';
import { ensureGeneratedModel } from '../../src/models/write.js';

describe('cloze progress', () => {
  const model = ensureGeneratedModel('tiny-llama-past');
  const N = 6;
  let root: string;
  let file: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-cloze-progress-'));
    file = path.join(root, 'items.jsonl');
    const rows = Array.from({ length: N },
      (_, i) => ({ id: `q${i}`, question: `Which one is number ${i}?`,
        options: ['the first', 'the second one', 'a third'], answer: i % 3 }));
    writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a line per item while the options are scored, and scored tokens counted', async () => {
    const events: string[] = [];
    const stream = { isTTY: false,
      write: (s: string) => (events.push(...s.split('\n').filter(Boolean)), true) } as unknown as NodeJS.WriteStream;
    let scoredTokens = 0;
    const openLoglik = async (m: string, o: Parameters<typeof openLoglikEngine>[1]): Promise<LoglikEngine> => {
      const e = await openLoglikEngine(m, o);
      return {
        info: e.info,
        usesCache: e.usesCache,
        stats: e.stats,
        score: (reqs, onDone) =>
          e.score(reqs, (k, d) => {
            scoredTokens += d.tokens;
            onDone?.(k, d);
            events.push(`batch ${d.requests.join(',')}`);
          }),
        close: () => e.close(),
      };
    };
    const spec = `jsonl:${file}?question=question&options=options&answer=answer&id=id`;
    await runEval({ model, data: spec, out: path.join(root, 'e'), scoring: 'cloze', chatTemplate: 'off', bootstrap: 0,
      batch: 1, sharePrefix: 'off', log: () => {}, progress: { stream, intervalMs: 0 }, deps: { openLoglik } });
    const lastBatch = events.map((e, i) => (e.startsWith('batch') ? i : -1)).reduce((a, b) => Math.max(a, b), -1);
    expect(events.filter((e) => e.startsWith('batch')).length).toBe(N * 3);
    // every count from 1 to N-1 is shown before the last batch ends
    for (let k = 1; k < N; k++) {
      const i = events.findIndex((e) => e.startsWith(`eval: ${k}/${N} units`));
      expect(i, `a line with ${k}/${N} units`).toBeGreaterThanOrEqual(0);
      expect(i, `${k}/${N} shown while scoring`).toBeLessThan(lastBatch);
    }
    // the engine reported the tokens it scored: each option's tokens, at least one each
    expect(scoredTokens).toBeGreaterThanOrEqual(N * 3);
  }, 60_000);
});
