/**
 * The synthetic matrix of bench/probe-cv.sh: 2,000 × 576, 5 classes of 400, written as
 * OUT/X.npy and OUT/labels.txt.
 *
 *   node --import tsx bench/probe-cv-data.ts OUT_DIR
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { encodeNpy } from '../src/cluster/npy.js';
import { Rng } from '../src/util/rng.js';

const out = process.argv[2] ?? 'bench/out/probe-cv';
const n = 2000;
const d = 576;
const K = 5;
const rng = new Rng(0);
// class means: 20 random directions, scaled so that the classes overlap
const means = Float64Array.from({ length: K * 20 }, () => 0.35 * rng.normal());
const X = new Float32Array(n * d);
const labels: string[] = [];
for (let i = 0; i < n; i++) {
  const c = i % K;
  labels.push(`c${c}`);
  for (let j = 0; j < d; j++)
    X[i * d + j] = rng.normal() / Math.sqrt(j + 1) + (j < 20 ? means[c * 20 + j] / Math.sqrt(j + 1) : 0);
}
mkdirSync(out, { recursive: true });
writeFileSync(path.join(out, 'X.npy'), encodeNpy(X, [n, d]));
writeFileSync(path.join(out, 'labels.txt'), labels.join('\n') + '\n');
