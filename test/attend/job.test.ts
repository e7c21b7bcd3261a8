/**
 * The attend folder is a job folder (src/store/job.ts, src/attend/store.ts): a run killed twice
 * (SIGKILL) and rerun with the same command ends with the same items.jsonl, byte for byte, as an
 * uninterrupted one; a damaged chunk is computed again; shards merged equal the single run; a
 * foreign folder is refused before a byte is written; a rerun with other settings is refused
 * (replaced with --force); an edited item is refused by the reader. The oracle is the
 * uninterrupted run of the same command (the chunk's records depend on its items alone).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync,
  writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAndKill as runKill } from '../kill-child.js';
import { runAttend, type AttendOptions } from '../../src/attend/run.js';
import { mergeAttend } from '../../src/attend/merge.js';
import { readAttendManifest, readAttendResults } from '../../src/attend/store.js';
import type { AttendSummary } from '../../src/attend/types.js';

const TINY = path.resolve(import.meta.dirname, '../../models/tiny-llama');
const CHILD = path.resolve(import.meta.dirname, 'child.ts');
const N = 30;

/** The summary's numbers (what does not depend on when and how fast it ran). */
const numbers = (s: AttendSummary) => ({ ...s, createdAt: null, timings: null, shard: null });

/** Every file under `dir` with its bytes (base64), by relative path. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = path.join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else out[path.relative(dir, p)] = readFileSync(p).toString('base64');
    }
  };
  walk(dir);
  return out;
}

describe('lobes attend as a job', () => {
  let root: string;
  let reference: string;
  let base: AttendOptions;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-attend-job-'));
    base = { model: TINY, data: 'builtin:social', limit: N, chunkUnits: 3, batch: 2, layers: 'all', bootstrap: 50,
      out: '' };
    reference = path.join(root, 'reference');
    await runAttend({ ...base, out: reference, quiet: true });
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('killed twice and rerun: the same items, byte for byte, as an uninterrupted run', async () => {
    const out = path.join(root, 'killed');
    const opts = { ...base, out } as Record<string, unknown>;
    const index = path.join(out, 'records/index.json');
    const first = await runKill(CHILD, opts, index, 2);
    expect(first.killed).toBe(true);
    expect(first.listed).toBeLessThan(N / 3);
    expect(readAttendManifest(out).complete).toBe(false);
    expect(() => readAttendResults(out)).toThrow(/attend is incomplete/);
    const second = await runKill(CHILD, opts, index, first.listed + 2);
    expect(second.killed).toBe(true);
    expect(second.listed).toBeGreaterThan(first.listed);
    const done = await runKill(CHILD, opts, index, Infinity);
    expect(done.killed).toBe(false);
    expect(readFileSync(path.join(out, 'items.jsonl'))).toEqual(readFileSync(path.join(reference, 'items.jsonl')));
    const r = readAttendResults(out);
    expect(numbers(r.summary)).toEqual(numbers(readAttendResults(reference).summary));
    expect(r.manifest.timings.attempts).toBe(3);
    expect(r.items.map((x) => x.index)).toEqual(Array.from({ length: N }, (_, i) => i));
    // The chunks are gone once joined; no temporary file or lock is left.
    expect(existsSync(path.join(out, 'records'))).toBe(false);
    expect(readdirSync(out).filter((f) => f.startsWith('.') && f !== '.lobes-output.json')).toEqual([]);
  }, 300_000);

  it('a damaged chunk is computed again on resume, and said so under --quiet', async () => {
    const out = path.join(root, 'damaged');
    const k = await runKill(CHILD, { ...base, out } as Record<string, unknown>, path.join(out, 'records/index.json'),
      4);
    expect(k.killed).toBe(true);
    const idx = JSON.parse(readFileSync(path.join(out, 'records/index.json'), 'utf8'));
    const victim = path.join(out, 'records', idx.chunks[1].items.path);
    writeFileSync(victim, readFileSync(victim).subarray(0, 50));
    const lines: string[] = [];
    await runAttend({ ...base, out, quiet: true, log: (l) => lines.push(l) });
    expect(
      lines.some((l) =>
        /record chunk has 50 bytes, the index records \d+ \(truncated or overwritten\); computing it again/.test(l)
      ),
    ).toBe(true);
    expect(readFileSync(path.join(out, 'items.jsonl'))).toEqual(readFileSync(path.join(reference, 'items.jsonl')));
  }, 300_000);

  it('three shards merged equal the single run; missing and foreign shards are refused', async () => {
    const dirs = [0, 1, 2].map((i) => path.join(root, `shard-${i}`));
    for (const [i, d] of dirs.entries())
      await runAttend({ ...base, out: d, shard: { index: i, count: 3 }, quiet: true });
    expect(readAttendResults(dirs[1]!).items.map((x) => x.index)).toEqual(Array.from({ length: 9 }, (_, i) => 9 + i));
    const merged = path.join(root, 'merged');
    await expect(mergeAttend(dirs.slice(0, 2), merged, { quiet: true })).rejects.toThrow(
      /chunks 6\.\.9 of 10 are in no shard/,
    );
    expect(existsSync(merged)).toBe(false);
    await mergeAttend([dirs[2]!, dirs[0]!, dirs[1]!], merged, { quiet: true });
    expect(readFileSync(path.join(merged, 'items.jsonl'))).toEqual(readFileSync(path.join(reference, 'items.jsonl')));
    expect(numbers(readAttendResults(merged).summary)).toEqual(numbers(readAttendResults(reference).summary));
    // The merged folder is the whole job: the unsharded command finds it complete.
    const before = readFileSync(path.join(merged, 'attend.json'), 'utf8');
    await runAttend({ ...base, out: merged, quiet: true });
    expect(readFileSync(path.join(merged, 'attend.json'), 'utf8')).toBe(before);
    const other = path.join(root, 'other-shard');
    await runAttend({ ...base, top: 5, out: other, shard: { index: 2, count: 3 }, quiet: true });
    await expect(mergeAttend([dirs[0]!, dirs[1]!, other], path.join(root, 'bad'), { quiet: true })).rejects.toThrow(
      /not shards of one attend job: --top is "30" in .* but "5" in/,
    );
  }, 300_000);

  it('refuses a foreign folder before a byte is written, even before the model is read', async () => {
    const out = path.join(root, 'thesis');
    mkdirSync(out);
    writeFileSync(path.join(out, 'thesis.tex'), '\\documentclass{article}');
    writeFileSync(path.join(out, 'summary.json'), '{"mine": true}');
    const before = tree(out);
    for (const model of [TINY, path.join(root, 'no-such-model')]) {
      const err = await runAttend({ ...base, model, out, quiet: true }).catch((e) => e);
      expect(err.message).toMatch(
        /thesis: folder exists and is not a lobes attend folder; lobes does not write into it/,
      );
      expect(tree(out)).toEqual(before);
    }
    // An evaluation's folder is not an attend folder either; nor is a place among a run's own files.
    const ev = path.join(root, 'ev');
    mkdirSync(ev);
    writeFileSync(path.join(ev, 'eval.json'), '{"format":"lobes-eval"}');
    await expect(runAttend({ ...base, out: ev, quiet: true })).rejects.toThrow(/not a lobes attend folder/);
    expect(readdirSync(ev)).toEqual(['eval.json']);
  });

  it(
    'a rerun with other settings is refused naming them, replaced with --force; a finished run is only checked; an edited item is refused',
    async () => {
      const out = path.join(root, 'rerun');
      await runAttend({ ...base, out, quiet: true });
      const before = readFileSync(path.join(out, 'attend.json'), 'utf8');
      await expect(runAttend({ ...base, out, top: 5, quiet: true })).rejects.toThrow(
        /made with different settings: --top is "30" in .* but "5" in this command \(pass overwrite to replace it/,
      );
      expect(readFileSync(path.join(out, 'attend.json'), 'utf8')).toBe(before);
      await runAttend({ ...base, out, quiet: true });
      expect(readFileSync(path.join(out, 'attend.json'), 'utf8')).toBe(before);
      // An item edited by hand: the reader and the rerun refuse it, naming the file.
      const file = path.join(out, 'items.jsonl');
      const text = readFileSync(file, 'utf8');
      const edited = text.replace('"correct":null', '"correct":true');
      expect(edited).not.toBe(text);
      writeFileSync(file, edited);
      expect(() => readAttendResults(out)).toThrow(
        /items\.jsonl: was changed after it was written \(size or sha256 differ from attend\.json\)/,
      );
      await expect(runAttend({ ...base, out, quiet: true })).rejects.toThrow(
        /items\.jsonl: was changed after it was written/,
      );
      // --force replaces the job's own files, and leaves the user's notes.
      writeFileSync(path.join(out, 'notes.md'), 'mine');
      await runAttend({ ...base, out, top: 5, overwrite: true, quiet: true });
      const r = readAttendResults(out);
      expect(r.summary.settings.top).toBe(5);
      expect(r.items.every((x) => x.top.length <= 5)).toBe(true);
      expect(readFileSync(path.join(out, 'notes.md'), 'utf8')).toBe('mine');
    },
    300_000,
  );
});
