/**
 * The t-SNE engine, stage by stage (docs/architecture.md): the kNN graph (neighbours.ts), the
 * affinities P (affinity.ts), the repulsion by Barnes–Hut (quadtree.ts) or FFT interpolation
 * (interp.ts), and the optimizer (tsne.ts, its step step.ts), with the worker threads that split
 * them (pool.ts). src/tsne imports only src/util and src/onnx; the cluster command (src/cluster)
 * imports it.
 */
export { checkPerplexity, conditionalP, jointP, neighboursFor, type SparseP } from './affinity.js';
export { InterpRepulsion } from './interp.js';
export { nearestNeighbours, neighbourSearch, APPROX_MIN_POINTS, type KnnResult, type NeighbourSearch,
  type NeighbourOptions } from './neighbours.js';
export { resolveOptions, MIXED_MIN_POINTS, type TsneOptions, type AffinityOptions, type OptimizerOptions,
  type ExecutionOptions, type TsneSettings, type TsneMethod, type PcaScores } from './options.js';
export { TsnePool, overlapSplit } from './pool.js';
export { QuadTree, repulsionAll } from './quadtree.js';
export { Tsne, tsneGradient, fftIteration, exactGradient, exactKl, FFT_GRID_PER_POINT,
  POLISH_ITERATIONS } from './tsne.js';
