/**
 * `lobes wanda`: Wanda importance per group, block pooling, regions, set differences and
 * their metrics against a label-permutation null (the command is in src/wanda/run.ts).
 */
export { analyze, matrixInfo } from './analyze.js';
export type { MatrixRef, WeightSource, ByteRange } from './kernel.js';
export { columnBlockSums, dequantizeNBits } from './kernel.js';
export { weightPass } from './pass.js';
export { runWanda, locateWeights, chooseAxis, metricsCsv, DEFAULT_TOP, DEFAULT_PERMUTATIONS, type WandaOptions,
  type WandaResult } from './run.js';
export { memorySource, runSource, poolBlocks, type ActivationSource } from './stats.js';
