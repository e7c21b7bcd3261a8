/**
 * `lobes cluster`: seeded t-SNE of one capture point (or a plain matrix) and how well a
 * label separates (the command is in src/cluster/run.ts).
 */
export { type TsneOptions, exactGradient, exactKl, tsneGradient } from '../tsne/index.js';
export { silhouetteSamples, daviesBouldin, knnPredict, neighboursFromDistances, distanceMatrix } from './metrics.js';
export { parseNpy, readNpy, encodeNpy } from './npy.js';
export { bootstrapRepeated, pairedBootstrap } from './paired.js';
export { pca, type PcaResult } from './pca.js';
export { stratifiedFolds } from './probe.js';
export { crossValidatedPredictions, repeatedCv } from './probecv.js';
export { runCluster, readLabelsFile, stratifiedSample, metricsCsv, type ClusterOptions,
  type ClusterResult } from './run.js';
export { classScores, perClassRecall, majorityRate, nullSummary } from './scores.js';
export { spaceMetrics, scoreClassifier } from './space.js';
export { Tsne, tsnePcaScores } from './tsne-pca.js';
