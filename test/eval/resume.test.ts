/**
 * The evaluation directory survives kill -9: an evaluation killed twice mid-way and rerun
 * with the same command ends with the same records, episodes and summary, byte for byte, as
 * an uninterrupted one; shards merged equal the single evaluation; a rerun with other
 * settings is refused; a finished evaluation is only checked. Real model (tiny-llama-past,
 * KV cache), real SocialEval items and world trees.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runAndKill as runKill } from '../kill-child.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runEval, readEvalManifest, readEvalResults } from '../../src/eval/run.js';
import { mergeEvals } from '../../src/eval/merge.js';
import { openScorer as realOpenScorer } from '../../src/eval/engine.js';
import type { Scorer, ScorerOptions } from '../../src/runtime/scorer.js';
import { LobesError } from '../../src/util/errors.js';

const DATA = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const CHILD = path.resolve(__dirname, 'child.ts');
const have = existsSync(DATA);
if (!have) console.warn(`test/eval/resume: skipped: ${DATA} is absent`);

/** Run the job in a child process; SIGKILL it once its index lists `after` chunks. */
function runAndKill(opts: Record<string, unknown>, dir: string,
  after: number): Promise<{ killed: boolean; listed: number }>
{
  return runKill(CHILD, opts, path.join(dir, 'records/index.json'), after);
}

const FILES = ['records.jsonl', 'episodes.jsonl', 'summary.json'];

describe.skipIf(!have)('evaluation crash safety, shards and merge', () => {
  let root: string;
  let reference: string;
  let base: Record<string, unknown>;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-resume-'));
    base = { model: ensureGeneratedModel('tiny-llama-past'), data: `socialeval:${DATA}?lang=zh`, task: 'both', limit: 4,
      chunkUnits: 1, bootstrap: 200, maxTokens: 0 };
    reference = path.join(root, 'reference');
    await runEval({ ...(base as any), out: reference, quiet: true });
  }, 600_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('killed twice and rerun: the same bytes as an uninterrupted evaluation', async () => {
    const out = path.join(root, 'killed');
    const opts = { ...base, out };
    const first = await runAndKill(opts, out, 2);
    expect(first.killed).toBe(true);
    expect(first.listed).toBeLessThan(8);
    expect(readEvalManifest(out).complete).toBe(false);
    expect(() => readEvalResults(out)).toThrow(/evaluation is incomplete/);
    const second = await runAndKill(opts, out, first.listed + 2);
    expect(second.killed).toBe(true);
    expect(second.listed).toBeGreaterThan(first.listed);
    const done = await runAndKill(opts, out, Infinity);
    expect(done.killed).toBe(false);
    for (const f of FILES) expect(readFileSync(path.join(out, f)), f).toEqual(readFileSync(path.join(reference, f)));
    const m = readEvalManifest(out);
    expect(m.complete).toBe(true);
    expect(m.timings.attempts).toBe(3);
    expect(existsSync(path.join(out, 'records'))).toBe(false);
    expect(readdirSync(out).filter((f) => f.startsWith('.'))).toEqual([]);
    const r = readEvalResults(out);
    expect(r.records.filter((x) => x.task === 'iae').length).toBe(4);
    expect(r.episodes.length).toBe(4);
  }, 600_000);

  it(
    'aborted through its signal after the first chunk, then rerun without it: the same bytes as an uninterrupted evaluation',
    async () => {
      const out = path.join(root, 'aborted');
      const ac = new AbortController();
      // The scorer aborts the controller when first used: that chunk is scored and written, the check before the next stops the job.
      const openScorer = async (model: string, o: ScorerOptions): Promise<Scorer> => {
        const s = await realOpenScorer(model, o);
        const hit = () => ac.abort();
        return {
          info: s.info,
          hasPast: s.hasPast,
          multiTokenExtend: s.multiTokenExtend,
          score: (...a) => (hit(), s.score(...a)),
          prefill: (...a) => (hit(), s.prefill(...a)),
          extend: (...a) => (hit(), s.extend(...a)),
          close: () => s.close(),
        };
      };
      const err = await runEval({ ...(base as any), out, quiet: true, signal: ac.signal, deps: { openScorer } }).catch((
        x: unknown,
      ) => x);
      expect(err).toBeInstanceOf(LobesError);
      expect((err as LobesError).code).toBe('E_ABORTED');
      // Stopped before the chunk after the one that first scored; every chunk before it is listed.
      const at = Number(/lobes eval was cancelled before chunk (\d+) /.exec((err as LobesError).message)?.[1]);
      expect(at).toBeGreaterThanOrEqual(1);
      expect(at).toBeLessThan(8);
      const idx = JSON.parse(readFileSync(path.join(out, 'records/index.json'), 'utf8'));
      expect(idx.chunks.map((c: { chunk: number }) => c.chunk)).toEqual(Array.from({ length: at }, (_, c) => c));
      expect(readEvalManifest(out).complete).toBe(false);
      expect(existsSync(path.join(out, '.lobes-lock'))).toBe(false);
      await runEval({ ...(base as any), out, quiet: true });
      for (const f of FILES) expect(readFileSync(path.join(out, f)), f).toEqual(readFileSync(path.join(reference, f)));
      expect(readEvalManifest(out).timings.attempts).toBe(2);
      expect(existsSync(path.join(out, 'records'))).toBe(false);
    },
    600_000,
  );

  it('a damaged chunk is evaluated again on resume', async () => {
    const out = path.join(root, 'damaged');
    const k = await runAndKill({ ...base, out }, out, 3);
    expect(k.killed).toBe(true);
    const idx = JSON.parse(readFileSync(path.join(out, 'records/index.json'), 'utf8'));
    const victim = path.join(out, 'records', idx.chunks[1].records.path);
    writeFileSync(victim, readFileSync(victim).subarray(0, 100));
    const lines: string[] = [];
    await runEval({ ...(base as any), out, log: (l: string) => lines.push(l) });
    expect(
      lines.some((l) =>
        /record chunk has 100 bytes, the index records \d+ \(truncated or overwritten\); evaluating it again/.test(l)
      ),
    ).toBe(true);
    for (const f of FILES) expect(readFileSync(path.join(out, f)), f).toEqual(readFileSync(path.join(reference, f)));
  }, 600_000);

  it('three shards merged equal the single evaluation', async () => {
    const dirs = [0, 1, 2].map((i) => path.join(root, `shard-${i}`));
    for (const [i, d] of dirs.entries())
      await runEval({ ...(base as any), out: d, shard: { index: i, count: 3 }, quiet: true });
    const merged = path.join(root, 'merged');
    await expect(mergeEvals(dirs.slice(0, 2), merged, { quiet: true })).rejects.toThrow(
      /chunks 5\.\.7 of 8 are in no shard/,
    );
    await mergeEvals([dirs[2]!, dirs[0]!, dirs[1]!], merged, { quiet: true });
    for (const f of FILES) expect(readFileSync(path.join(merged, f)), f).toEqual(readFileSync(path.join(reference, f)));
    await expect(mergeEvals([dirs[0]!, reference], path.join(root, 'bad'), { quiet: true })).rejects.toThrow(
      /shards overlap|not shards of one evaluation/,
    );
  }, 600_000);

  it('a rerun with other settings is refused, naming them; a finished evaluation is only checked', async () => {
    const go = (o: Record<string, unknown>) => runEval({ ...(base as any), out: reference, quiet: true, ...o });
    await expect(go({ shuffles: 5 })).rejects.toThrow(
      /made with different settings: --shuffles is "3" in .* but "5" in this command/,
    );
    await expect(go({ seed: 9 })).rejects.toThrow(/dataset units sha256 is .*; --seed is "0"/);
    const before = readFileSync(path.join(reference, 'eval.json'), 'utf8');
    await go({});
    expect(readFileSync(path.join(reference, 'eval.json'), 'utf8')).toBe(before);
    const rec = path.join(reference, 'records.jsonl');
    const b = readFileSync(rec);
    b[b.length - 5] ^= 1;
    writeFileSync(rec, b);
    await expect(go({})).rejects.toThrow(
      /records\.jsonl: was changed after it was written \(size or sha256 differ from eval\.json\)/,
    );
    b[b.length - 5] ^= 1;
    writeFileSync(rec, b);
  }, 600_000);
});
