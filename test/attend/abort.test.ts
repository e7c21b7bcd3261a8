/**
 * runAttend's signal: aborted once the first item is done, the job stops before the next chunk
 * with code E_ABORTED and leaves the folder as a kill would (the first chunk listed, no lock);
 * the same call without the signal finishes it, and items.jsonl and the summary are those of an
 * uninterrupted run (the oracle), byte for byte.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAttend, type AttendOptions } from '../../src/attend/run.js';
import { readAttendManifest, readAttendResults } from '../../src/attend/store.js';
import { LobesError } from '../../src/util/errors.js';

const TINY = path.resolve(import.meta.dirname, '../../models/tiny-llama');
const N = 9;

describe('lobes attend cancelled through its signal', () => {
  let root: string;
  let reference: string;
  let base: AttendOptions;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-attend-abort-'));
    base = { model: TINY, data: 'builtin:social', limit: N, chunkUnits: 3, batch: 2, layers: 'all', bootstrap: 50,
      out: '' };
    reference = path.join(root, 'reference');
    await runAttend({ ...base, out: reference, quiet: true });
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('aborted after the first item, then rerun without the signal: the bytes of an uninterrupted run', async () => {
    const out = path.join(root, 'aborted');
    const ac = new AbortController();
    // The progress line that reports the first item done aborts the controller (a line per tick: intervalMs 0).
    const stream = { isTTY: false,
      write: (s: string) => (/^attend: [1-9]\d*\//.test(s) && ac.abort(), true) } as unknown as NodeJS.WriteStream;
    const err = await runAttend({ ...base, out, signal: ac.signal, log: () => {}, progress: { stream, intervalMs: 0 } })
      .catch((x: unknown) => x);
    expect(err).toBeInstanceOf(LobesError);
    expect((err as LobesError).code).toBe('E_ABORTED');
    expect((err as LobesError).message).toMatch(/lobes attend was cancelled before chunk 1/);
    const idx = JSON.parse(readFileSync(path.join(out, 'records/index.json'), 'utf8'));
    expect(idx.chunks.map((c: { chunk: number }) => c.chunk)).toEqual([0]);
    expect(readAttendManifest(out).complete).toBe(false);
    expect(existsSync(path.join(out, '.lobes-lock'))).toBe(false);
    await runAttend({ ...base, out, quiet: true });
    expect(readFileSync(path.join(out, 'items.jsonl'))).toEqual(readFileSync(path.join(reference, 'items.jsonl')));
    const r = readAttendResults(out);
    const numbers = (s: typeof r.summary) => ({ ...s, createdAt: null, timings: null });
    expect(numbers(r.summary)).toEqual(numbers(readAttendResults(reference).summary));
    expect(r.manifest.timings.attempts).toBe(2);
    expect(existsSync(path.join(out, 'records'))).toBe(false);
    expect(readdirSync(out).filter((f) => f.startsWith('.') && f !== '.lobes-output.json')).toEqual([]);
  }, 300_000);
});
