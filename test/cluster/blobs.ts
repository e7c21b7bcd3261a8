import { Rng } from '../../src/util/rng.js';

/** C Gaussian blobs in d dims (centres N(0, sep²), unit spread); sample i is in class i mod C. Seeded. */
export function blobs(n: number, d: number, C: number, sep: number,
  seed: number): { X: Float64Array; lab: Int32Array }
{
  const rng = new Rng(seed);
  const cen = new Float64Array(C * d).map(() => rng.normal() * sep);
  const X = new Float64Array(n * d);
  const lab = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    lab[i] = i % C;
    for (let j = 0; j < d; j++) X[i * d + j] = cen[lab[i] * d + j] + rng.normal();
  }
  return { X, lab };
}
