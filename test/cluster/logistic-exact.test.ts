/**
 * The probe's logistic objective (src/cluster/logistic.ts) after its loop was shortened (the bias
 * gradient summed in the same pass, exp(+0) taken as 1 at a row's largest logit) gives the
 * losses, gradients and fits of its previous version (test/cluster/reference/logistic-before.ts)
 * bit for bit, through the kernel and the JavaScript products, with and without sample weights.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/util/rng.js';
import { logisticObjective } from '../../src/cluster/logistic.js';
import { lbfgs } from '../../src/cluster/probe.js';
import { logisticObjectiveBefore } from './reference/logistic-before.js';

const bits = (a: Float64Array) =>
  Array.from(new BigUint64Array(a.buffer, a.byteOffset, a.length), (v) => v.toString(16));

describe('the logistic objective against its previous version', () => {
  const rng = new Rng(11);
  for (const [n, d, K] of [[203, 37, 6], [150, 2, 10], [61, 5, 2]] as const) {
    const X = Float64Array.from({ length: n * d }, () => rng.normal());
    const y = Int32Array.from({ length: n }, () => rng.int(K));
    const w = Float64Array.from({ length: n }, () => 0.5 + rng.next());
    for (const kernel of [true, false]) {
      for (const weights of [undefined, w]) {
        it(`n ${n}, d ${d}, K ${K}, ${kernel ? 'kernel' : 'JavaScript'} products${weights ? ', weighted' : ''}: loss, gradient and fit bit for bit`, () => {
          // a start with tied logits in some rows (all zero: every class at the maximum)
          const Wt = Float64Array.from({ length: (d + 1) * K }, (_, t) => (t % 3 ? rng.normal() * 0.3 : 0));
          const a = logisticObjective(X, n, d, y, K, 0.7, kernel, weights);
          const b = logisticObjectiveBefore(X, n, d, y, K, 0.7, kernel, weights);
          for (const start of [Wt, new Float64Array(Wt.length)]) {
            const ga = new Float64Array(Wt.length);
            const gb = new Float64Array(Wt.length);
            expect(a(start, ga)).toBe(b(start, gb));
            expect(bits(ga)).toEqual(bits(gb));
          }
          const xa = new Float64Array(Wt.length);
          const xb = new Float64Array(Wt.length);
          expect(lbfgs(a, xa, 60, 10, 1e-8)).toBe(lbfgs(b, xb, 60, 10, 1e-8));
          expect(bits(xa)).toEqual(bits(xb));
          expect(xa.some((v) => Math.abs(v) > 0.01)).toBe(true);
        });
      }
    }
  }
});
