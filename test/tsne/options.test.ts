/**
 * The layered t-SNE options (src/tsne/options.ts): each layer's fields reach the settings in
 * effect, the defaults fill the rest, and the flat form is refused with each key's new place.
 */
import { describe, it, expect } from 'vitest';
import { resolveOptions, type TsneOptions } from '../../src/tsne/options.js';
import { Tsne as TsneEngine } from '../../src/tsne/tsne.js';
import { Tsne } from '../../src/cluster/tsne-pca.js';
import { blobs } from '../cluster/blobs.js';

describe('TsneOptions layers', () => {
  it('reads affinity, optimizer and execution fields into the settings', () => {
    const o: TsneOptions = {
      affinity: { perplexity: 7, neighbours: 'approximate' },
      optimizer: { iterations: 33, earlyExaggeration: 6, exaggerationIterations: 11, learningRate: 'per-phase',
        maxStepNorm: 2.5, momentum: [0.4, 0.7], rule: 'openTSNE', seed: 9, theta: 0.3, method: 'fft' },
      execution: { threads: 3, exactKlLimit: 17 },
    };
    expect(resolveOptions(o, 200)).toEqual({
      perplexity: 7,
      neighbours: 'approximate',
      iterations: 33,
      earlyExaggeration: 6,
      exaggerationIterations: 11,
      learningRate: Math.max(200 / 6 / 4, 50),
      learningRateAfter: 50,
      maxStepNorm: 2.5,
      momentum: [0.4, 0.7],
      rule: 'openTSNE',
      seed: 9,
      theta: 0.3,
      method: 'fft',
      threads: 3,
      exactKlLimit: 17,
    });
  });

  it('fills the defaults (scikit-learn rule, 1000 iterations, one thread) from an empty object', () => {
    expect(resolveOptions({}, 400)).toEqual({
      perplexity: 30,
      neighbours: 'exact',
      iterations: 1000,
      earlyExaggeration: 12,
      exaggerationIterations: 250,
      learningRate: 50,
      learningRateAfter: 50,
      maxStepNorm: Number.POSITIVE_INFINITY,
      momentum: [0.5, 0.8],
      rule: 'scikit-learn',
      seed: 0,
      theta: 0.5,
      method: 'bh',
      threads: 1,
      exactKlLimit: 5000,
    });
    // the openTSNE rule's momentum when none is given
    expect(resolveOptions({ optimizer: { rule: 'openTSNE' } }, 400).momentum).toEqual([0.8, 0.8]);
  });

  it('refuses the flat form, naming where each key went', () => {
    expect(() => resolveOptions({ perplexity: 8 } as never, 100)).toThrow(
      /t-SNE option perplexity is now affinity\.perplexity/,
    );
    expect(() => resolveOptions({ optimizer: 'openTSNE' } as never, 100)).toThrow(
      /t-SNE option optimizer is now optimizer\.rule/,
    );
    expect(() => resolveOptions({ poolMinPoints: 0 } as never, 100)).toThrow(
      /poolMinPoints is now execution\.workerMinPoints/,
    );
    expect(() => resolveOptions({ affinity: {}, speed: 1 } as never, 100)).toThrow(/unknown t-SNE option speed/);
  });

  it("the engine alone needs the PCA start handed in; src/cluster's Tsne gives it", async () => {
    const { X } = blobs(40, 5, 3, 3, 23);
    await expect(TsneEngine.create(X, 40, 5, { affinity: { perplexity: 8 } })).rejects.toThrow(
      /init 'pca' needs the principal components/,
    );
    const t = await Tsne.create(X, 40, 5, { affinity: { perplexity: 8 }, optimizer: { iterations: 1 } });
    t.step();
    expect(t.Y.some((v) => v !== 0)).toBe(true);
    // a random start needs no PCA
    await expect(TsneEngine.create(X, 40, 5, { affinity: { perplexity: 8 }, optimizer: { init: 'random' } })).resolves
      .toBeDefined();
  });
});
