/**
 * Cancelling the analyses that write once, at the end (runCluster, runWanda, runSwap take an
 * AbortSignal; the CLI's Ctrl-C aborts it): the call fails with E_ABORTED at the next stage
 * boundary, and nothing of its output exists afterwards.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { encodeNpy } from '../../src/cluster/npy.js';
import { runCluster } from '../../src/cluster/index.js';
import { LobesError } from '../../src/util/errors.js';
import { Rng } from '../../src/util/rng.js';

const roots: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** 90 points in 3 planted blobs of 6 dimensions, as an .npy matrix and a labels file. */
function matrix(): { dir: string; npy: string; lab: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'lobes-abort-'));
  roots.push(dir);
  const n = 90;
  const d = 6;
  const rng = new Rng(3);
  const X = new Float32Array(n * d);
  const labels: string[] = [];
  for (let i = 0; i < n; i++) {
    const c = i % 3;
    labels.push(`c${c}`);
    for (let j = 0; j < d; j++) X[i * d + j] = rng.normal() + (j === c ? 4 : 0);
  }
  const npy = path.join(dir, 'emb.npy');
  writeFileSync(npy, encodeNpy(X, [n, d]));
  const lab = path.join(dir, 'labels.txt');
  writeFileSync(lab, labels.join('\n') + '\n');
  return { dir, npy, lab };
}

const FAST = { tsne: { iterations: 100, perplexity: 10 },
  metrics: { bootstrap: 20, permutations: 5, probePermutations: 5 } };

async function aborted(p: Promise<unknown>): Promise<LobesError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof LobesError) return e;
    throw e;
  }
  throw new Error('the call was not cancelled');
}

describe('runCluster with an AbortSignal', () => {
  it('a signal aborted before the call: E_ABORTED after loading, no output folder', async () => {
    const { dir, npy, lab } = matrix();
    const out = path.join(dir, 'out');
    const ctl = new AbortController();
    ctl.abort('stop');
    const e = await aborted(
      runCluster(npy, { ...FAST, input: { labels: lab }, output: { dir: out },
        execution: { threads: 1, quiet: true, signal: ctl.signal } }),
    );
    expect(e.code).toBe('E_ABORTED');
    expect(e.message).toMatch(/^lobes cluster was cancelled after its load stage \(stop\)/);
    expect(existsSync(out)).toBe(false);
  });

  it('aborted while it runs (when it reports the t-SNE done): stops before the writes, and nothing is left in the folder', async () => {
    const { dir, npy, lab } = matrix();
    const out = path.join(dir, 'out');
    const ctl = new AbortController();
    // its progress lines are read (and kept off the test's output): the t-SNE's last one aborts
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      if (String(chunk).startsWith('cluster: KL divergence')) ctl.abort('interrupted by SIGINT');
      return true;
    });
    const e = await aborted(
      runCluster(npy, { ...FAST, input: { labels: lab }, output: { dir: out },
        execution: { threads: 1, quiet: false, signal: ctl.signal } }),
    );
    expect(e.code).toBe('E_ABORTED');
    expect(e.message).toMatch(/^lobes cluster was cancelled before writing its outputs \(interrupted by SIGINT\)/);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
    // the same call without the signal completes and writes
    const r = await runCluster(npy, { ...FAST, input: { labels: lab }, output: { dir: out },
      execution: { threads: 1, quiet: true } });
    expect(existsSync(path.join(r.outDir!, 'metrics.json'))).toBe(true);
  });
});
