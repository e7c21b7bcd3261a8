/**
 * The t-SNE engine (src/tsne) as `lobes cluster` and the library run it: its 'pca' start from
 * the command's seeded PCA (src/cluster/pca.ts). src/tsne imports only src/util (and the ONNX
 * graph builder below it), so the PCA, which the probes share, stays here and is handed in.
 */
import { Tsne as TsneEngine, type PcaScores, type TsneOptions } from '../tsne/index.js';
import { pca } from './pca.js';

/** The scores of the first two principal components of X, seeded (the 'pca' start's). */
export const tsnePcaScores: PcaScores = (X, n, d, seed) => pca(X, n, d, 2, { seed }).scores;

/** The t-SNE engine with the PCA start wired in (see src/tsne/tsne.ts for the API). */
export class Tsne extends TsneEngine {
  /** Resolve options, compute the kNN graph and the joint P (TsneEngine.create with optimizer.pcaScores given). */
  static override create(X: Float64Array | Float32Array, n: number, d: number, options: TsneOptions = {},
    onStage?: (stage: string) => void): Promise<TsneEngine>
  {
    return TsneEngine.create(X, n, d, { ...options,
      optimizer: { ...options.optimizer, pcaScores: options.optimizer?.pcaScores ?? tsnePcaScores } }, onStage);
  }
}
