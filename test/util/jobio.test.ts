/**
 * JobIO (src/util/jobio.ts): every run function reports through the `io` it is given, and
 * nothing of it reaches stderr. A capturing IO receives the job's progress events (one shape:
 * label, done, total, unit) and its log lines, with process.stderr.write spied on; warnings
 * (io.warn) arrive under `quiet` too, where log lines and progress do not. The jobs run on the
 * tiny generated fixtures the other tests use.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runExtract } from '../../src/extract/run.js';
import { runEval } from '../../src/eval/run.js';
import { runWanda } from '../../src/wanda/run.js';
import { runCluster } from '../../src/cluster/index.js';
import { swapAnalysis, type SwapInput } from '../../src/swap/swap.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { jobIO, silentIO, stderrIO, type JobIO, type ProgressEvent } from '../../src/util/jobio.js';
import { Rng } from '../../src/util/rng.js';

const TINY = path.resolve(import.meta.dirname, '../../models/tiny-llama');

interface Captured {
  io: JobIO;
  logs: string[];
  warns: string[];
  events: ProgressEvent[];
}
function capture(): Captured {
  const c: Captured = { logs: [], warns: [], events: [], io: null as unknown as JobIO };
  c.io = { log: (l) => c.logs.push(l), warn: (l) => c.warns.push(l), onProgress: (e) => c.events.push(e) };
  return c;
}

/** Spy on stderr for the length of `f`; returns what was written. */
async function stderrDuring(f: () => Promise<unknown>): Promise<string[]> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((
    s: string | Uint8Array,
  ) => (written.push(String(s)), true));
  try {
    await f();
  } finally {
    spy.mockRestore();
  }
  return written;
}

/** The labels of the bars that started, each with its last event (done of total). */
function bars(events: ProgressEvent[]): Map<string, ProgressEvent> {
  const out = new Map<string, ProgressEvent>();
  const started = new Set(events.filter((e) => e.kind === 'start').map((e) => e.id));
  for (const e of events) if (started.has(e.id)) out.set(e.label, e);
  return out;
}

let root: string;
let run: string;
beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'lobes-jobio-'));
  run = path.join(root, 'run');
  await runExtract({ model: TINY, data: 'builtin:social', out: run, capture: ['final', 'mlp'], dtype: 'fp32',
    io: silentIO() });
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

describe('the run functions report through their JobIO only', () => {
  it('extract: its progress events and log lines, nothing on stderr', async () => {
    const c = capture();
    const out = path.join(root, 'extract');
    const err = await stderrDuring(() =>
      runExtract({ model: TINY, data: 'builtin:social', out, capture: ['final'], dtype: 'fp32', io: c.io })
    );
    expect(err).toEqual([]);
    const last = bars(c.events).get('extract')!;
    expect(last.kind).toBe('finish');
    expect(last.unit).toBe('samples');
    expect(last.done).toBe(last.total);
    expect(last.total).toBeGreaterThan(0);
    expect(c.logs.some((l) => /^extract: \d+ samples, 1 capture point, fp32; expected run size/.test(l))).toBe(true);
    expect(c.logs.at(-1)).toMatch(
      new RegExp(
        `^extract: done, ${last.total} samples, \\d+ tokens in \\d+s -> ${out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
      ),
    );
  }, 120_000);

  it('eval: its progress events and log lines, nothing on stderr', async () => {
    const model = ensureGeneratedModel('tiny-llama-past');
    const file = path.join(root, 'items.jsonl');
    writeFileSync(file,
      Array.from({ length: 4 },
        (_, i) =>
          JSON.stringify({ id: `q${i}`, question: `Which one is number ${i}?`,
            options: ['the first', 'the second one', 'a third'], answer: i % 3 })).join('\n') + '\n');
    const c = capture();
    const err = await stderrDuring(() =>
      runEval({ model, data: `jsonl:${file}?question=question&options=options&answer=answer&id=id`,
        out: path.join(root, 'eval'), scoring: 'cloze', chatTemplate: 'off', bootstrap: 0, batch: 1, io: c.io })
    );
    expect(err).toEqual([]);
    const last = bars(c.events).get('eval')!;
    expect([last.kind, last.done, last.total, last.unit]).toEqual(['finish', 4, 4, 'units']);
    expect(last.counters.tokens).toBeGreaterThan(0);
    expect(c.logs[0]).toMatch(/^eval: 4 units /);
    expect(c.logs.at(-1)).toMatch(/^eval: done, 4 units, /);
  }, 120_000);

  it('wanda: its progress events and log lines, nothing on stderr; replacing its folder is a warning', async () => {
    const c = capture();
    const err = await stderrDuring(() => runWanda(run, { by: 'aspect', permutations: 19, threads: 1, io: c.io }));
    expect(err).toEqual([]);
    const b = bars(c.events);
    const pass = [...b.values()].find((e) => e.label.startsWith('wanda'))!;
    expect(pass.kind).toBe('finish');
    expect(c.logs.some((l) => l.startsWith('wanda: blocks '))).toBe(true);
    const again = capture();
    const err2 = await stderrDuring(() =>
      runWanda(run, { by: 'aspect', permutations: 19, seed: 1, threads: 1, io: again.io })
    );
    expect(err2).toEqual([]);
    expect(again.warns.some((l) => /^wanda: replacing .* \(/.test(l))).toBe(true);
  }, 180_000);

  it('cluster: its progress events and log lines, nothing on stderr', async () => {
    const c = capture();
    const err = await stderrDuring(() =>
      runCluster(run, { input: { by: 'aspect' }, tsne: { iterations: 100, perplexity: 10 },
        metrics: { bootstrap: 20, permutations: 5, probePermutations: 5 }, baselines: { tokens: false },
        output: { noWrite: true }, execution: { threads: 1, io: c.io } })
    );
    expect(err).toEqual([]);
    const tsne = bars(c.events).get('cluster t-SNE')!;
    expect([tsne.kind, tsne.done, tsne.total, tsne.unit]).toEqual(['finish', 100, 100, 'iterations']);
    expect(c.logs.some((l) => /^cluster: KL divergence \d/.test(l))).toBe(true);
  }, 180_000);

  it('swap: its progress events and log lines, nothing on stderr', async () => {
    const c = capture();
    const err = await stderrDuring(() =>
      swapAnalysis(plantedSwap(), { bootstrap: 20, permutations: 5, conditionalPermutations: 5, probeRepeats: 1,
        probeC: 1, io: c.io })
    );
    expect(err).toEqual([]);
    const pts = bars(c.events).get('swap points')!;
    expect([pts.kind, pts.done, pts.total, pts.unit]).toEqual(['finish', 2, 2, 'points']);
    expect(c.logs).toContain('swap: words: token-counts');
    expect(c.logs.some((l) => /^swap: final\.hidden: balanced accuracy question \d/.test(l))).toBe(true);
  }, 120_000);
});

describe('quiet', () => {
  it('warnings arrive under quiet; log lines and progress do not', async () => {
    await runWanda(run, { by: 'aspect', permutations: 19, seed: 3, threads: 1, io: silentIO() }); // a folder to replace
    const c = capture();
    // the deprecated quiet with io's warn only: jobIO fills log and progress from stderrIO({ quiet: true })
    const err = await stderrDuring(() =>
      runWanda(run, { by: 'aspect', permutations: 19, seed: 2, threads: 1, quiet: true, io: { warn: c.io.warn } })
    );
    expect(err).toEqual([]);
    expect(c.warns.some((l) => l.startsWith('wanda: replacing '))).toBe(true);
    expect(c.logs).toEqual([]);
  }, 180_000);

  it('stderrIO({ quiet }): a warning is written, a log line and a bar are not; unquiet, all three', async () => {
    const quiet = await stderrDuring(async () => {
      const io = stderrIO({ quiet: true });
      io.log('a line');
      io.warn('a warning');
      io.onProgress({ id: -1, kind: 'start', label: 'x', done: 0, total: 1, unit: 'items', counters: {} });
      io.onProgress({ id: -1, kind: 'finish', label: 'x', done: 1, total: 1, unit: 'items', counters: {} });
    });
    expect(quiet).toEqual(['a warning\n']);
    const loud = await stderrDuring(async () => {
      const io = jobIO({});
      io.log('a line');
      io.warn('a warning');
    });
    expect(loud).toEqual(['a line\n', 'a warning\n']);
  });

  it('the deprecated log gets warnings always and log lines unless quiet (eval and ablate: under quiet too)', () => {
    const got: string[] = [];
    const io = jobIO({ quiet: true, log: (l) => got.push(l) });
    io.log('dropped');
    io.warn('kept');
    const old = jobIO({ quiet: true, log: (l) => got.push(l) }, { logUnderQuiet: true });
    old.log('kept too');
    expect(got).toEqual(['kept', 'kept too']);
  });
});

/** Two points of planted states: the response's aspect at final.hidden, nothing at layer 0. */
function plantedSwap(): SwapInput {
  const K = 3;
  const n = 90;
  const rng = new Rng(5);
  const q: string[] = [];
  const r: string[] = [];
  const d = 6;
  const X0 = new Float32Array(n * d);
  const X1 = new Float32Array(n * d);
  const V = 2 * K;
  const W = new Float64Array(n * V);
  for (let i = 0; i < n; i++) {
    const a = i % K;
    const b = (a + 1 + (i % 2)) % K;
    r.push(`a${a}`);
    q.push(`a${b}`);
    for (let j = 0; j < d; j++) {
      X0[i * d + j] = rng.normal();
      X1[i * d + j] = rng.normal() + (j === a ? 3 : 0);
    }
    W[i * V + b] = 1;
    W[i * V + K + a] = rng.next() < 0.5 ? 1 : 0;
  }
  return {
    question: q,
    response: r,
    points: [
      { name: 'layers.0.resid_out', layer: 0, pool: 'last', dim: d, read: async () => X0 },
      { name: 'final.hidden', layer: null, pool: 'last', dim: d, read: async () => X1 },
    ],
    words: [{ name: 'token-counts', description: 'planted words', X: W, dim: V }],
    notes: [],
  };
}
