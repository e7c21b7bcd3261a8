/**
 * ClusterOptions grouped (src/cluster/options.ts): the flat form of earlier versions is refused
 * in one line naming each flat key's new place, and each new place reaches the stage option
 * the flat key was.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { encodeNpy } from '../../src/cluster/npy.js';
import { runCluster } from '../../src/cluster/index.js';
import { flatOptions, type ClusterOptions } from '../../src/cluster/options.js';
import { UsageError } from '../../src/util/errors.js';

/** Every key of the flat ClusterOptions before the grouping, and where the grouping put it. */
const OLD_FLAT: Record<string, string> = {
  labels: 'input.labels',
  point: 'input.point',
  by: 'input.by',
  group: 'input.group',
  pca: 'tsne.pca',
  perplexity: 'tsne.perplexity',
  theta: 'tsne.theta',
  tsneMethod: 'tsne.method',
  neighbours: 'tsne.neighbours',
  learningRate: 'tsne.learningRate',
  iterations: 'tsne.iterations',
  earlyExaggeration: 'tsne.earlyExaggeration',
  probePca: 'probe.pca',
  folds: 'probe.folds',
  probeRepeats: 'probe.repeats',
  probeC: 'probe.c',
  classWeight: 'probe.classWeight',
  sweep: 'probe.sweep',
  maxMetricPoints: 'metrics.points',
  knnK: 'metrics.knnK',
  bootstrap: 'metrics.bootstrap',
  permutations: 'metrics.permutations',
  probePermutations: 'metrics.probePermutations',
  sweepPermutations: 'metrics.sweepPermutations',
  baselines: 'baselines.tokens',
  lengthControl: 'baselines.lengthControl',
  model: 'baselines.model',
  out: 'output.dir',
  noWrite: 'output.noWrite',
  threads: 'execution.threads',
  quiet: 'execution.quiet',
  signal: 'execution.signal',
};

const refusal = (opts: unknown): string => {
  try {
    flatOptions(opts as ClusterOptions);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(opts)}`);
};

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

describe('ClusterOptions', () => {
  it('refuses each flat key alone, naming its new place', () => {
    for (const [key, place] of Object.entries(OLD_FLAT)) {
      const m = refusal({ [key]: key === 'baselines' ? false : 1 });
      expect(m, key).toBe(
        `cluster options: ${key} is now ${place} (ClusterOptions has seed, input, tsne, probe, metrics, baselines, output, execution) (see ClusterOptions in docs/cluster.md)`,
      );
    }
  });

  it('each new place is read as the stage option its flat key was', () => {
    for (const [key, place] of Object.entries(OLD_FLAT)) {
      const [group, sub] = place.split('.') as [string, string];
      const v = { sentinel: key };
      const flat = flatOptions({ [group]: { [sub]: v } } as ClusterOptions) as Record<string, unknown>;
      expect(flat[key], place).toBe(v);
      // and nothing else is set
      expect(Object.entries(flat).filter(([, x]) => x !== undefined).map(([k]) => k), place).toEqual([key]);
    }
    expect(flatOptions({ seed: 7 }).seed).toBe(7);
  });

  it('names every flat key of a call in one line, and misplaced or unknown keys inside a group', () => {
    const m = refusal({ by: 'aspect', perplexity: 20, out: '/tmp/x', quiet: true, seed: 3 });
    expect(m).toBe(
      'cluster options: by is now input.by; perplexity is now tsne.perplexity; out is now output.dir; quiet is now execution.quiet (ClusterOptions has seed, input, tsne, probe, metrics, baselines, output, execution) (see ClusterOptions in docs/cluster.md)',
    );
    expect(m).not.toContain('\n');
    expect(refusal({ tsne: { perplexity: 5, bootstrap: 10, tsneMethod: 'fft', seed: 1 } })).toMatch(
      /^cluster options: tsne\.bootstrap belongs at metrics\.bootstrap; tsne\.tsneMethod belongs at tsne\.method; tsne\.seed belongs at seed \(/,
    );
    expect(refusal({ probe: { foo: 1 } })).toMatch(
      /^cluster options: probe\.foo is unknown \(probe has pca, folds, repeats, c, classWeight, sweep\)/,
    );
    expect(refusal({ tsne: 5 })).toMatch(/^cluster options: tsne must be an object \(pca, perplexity/);
    expect(refusal({ toString: 1 })).toMatch(/^cluster options: toString is unknown \(/);
    // the boolean `baselines` of the flat form is not taken for the group
    expect(refusal({ baselines: false })).toMatch(/^cluster options: baselines is now baselines\.tokens /);
  });

  it('runCluster refuses the flat form before reading anything, and writes nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lobes-clopts-'));
    roots.push(dir);
    const n = 30;
    const X = Float32Array.from({ length: n * 3 }, (_, i) => (i % 7) + Math.floor(i / 3));
    const npy = path.join(dir, 'emb.npy');
    writeFileSync(npy, encodeNpy(X, [n, 3]));
    const lab = path.join(dir, 'labels.txt');
    writeFileSync(lab, Array.from({ length: n }, (_, i) => `c${i % 2}`).join('\n') + '\n');
    const out = path.join(dir, 'out');
    const old = { labels: lab, perplexity: 5, iterations: 50, bootstrap: 0, permutations: 0, out, quiet: true,
      threads: 1 };
    await expect(runCluster(npy, old as ClusterOptions)).rejects.toThrow(
      /^cluster options: labels is now input\.labels; perplexity is now tsne\.perplexity; iterations is now tsne\.iterations; bootstrap is now metrics\.bootstrap; permutations is now metrics\.permutations; out is now output\.dir; quiet is now execution\.quiet; threads is now execution\.threads \(/,
    );
    expect(existsSync(out)).toBe(false);
    // the same call grouped runs and writes there
    const r = await runCluster(npy, { input: { labels: lab }, tsne: { perplexity: 5, iterations: 50 },
      metrics: { bootstrap: 0, permutations: 0 }, output: { dir: out }, execution: { quiet: true, threads: 1 } });
    expect(r.outDir).toBe(out);
    expect(r.settings).toMatchObject({ perplexity: 5, iterations: 50, bootstrap: 0, permutations: 0,
      by: path.resolve(lab) });
    expect(existsSync(path.join(out, 'metrics.json'))).toBe(true);
  });
});
