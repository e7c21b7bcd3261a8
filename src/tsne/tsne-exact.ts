/**
 * Exact t-SNE quantities for small N and for tests: the O(N²) repulsion, Z, KL(P‖Q) and the
 * gradient, from the definitions (the fast paths in tsne.ts are checked against these).
 */

import type { SparseP } from './affinity.js';

/** Exact repulsive sums (O(N²)). */
export function exactRepulsion(Y: Float64Array, n: number, F: Float64Array, Zi: Float64Array): void {
  for (let i = 0; i < n; i++) {
    const xi = Y[2 * i];
    const yi = Y[2 * i + 1];
    let z = 0;
    let fx = 0;
    let fy = 0;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const dx = xi - Y[2 * j];
      const dy = yi - Y[2 * j + 1];
      const w = 1 / (1 + dx * dx + dy * dy);
      z += w;
      fx += w * w * dx;
      fy += w * w * dy;
    }
    Zi[i] = z;
    F[2 * i] = fx;
    F[2 * i + 1] = fy;
  }
}

/** Z = Σ_{i≠j} 1 / (1 + |y_i − y_j|²). */
export function exactZ(Y: Float64Array, n: number): number {
  let z = 0;
  for (let i = 0; i < n; i++) {
    const xi = Y[2 * i];
    const yi = Y[2 * i + 1];
    let zi = 0;
    for (let j = i + 1; j < n; j++) {
      const dx = xi - Y[2 * j];
      const dy = yi - Y[2 * j + 1];
      zi += 1 / (1 + dx * dx + dy * dy);
    }
    z += 2 * zi;
  }
  return z;
}

/** KL(P‖Q) = Σ p_ij log(p_ij / q_ij) over the nonzeros of P, q_ij = w_ij / Z. */
export function klWithZ(P: SparseP, Y: Float64Array, Z: number): number {
  let kl = 0;
  const { rowPtr, cols, vals } = P;
  const logZ = Math.log(Z);
  for (let i = 0; i < P.n; i++) {
    for (let t = rowPtr[i]; t < rowPtr[i + 1]; t++) {
      const p = vals[t];
      if (p <= 0) continue;
      const j = cols[t];
      const dx = Y[2 * i] - Y[2 * j];
      const dy = Y[2 * i + 1] - Y[2 * j + 1];
      // log q = -log(1 + d²) - log Z
      kl += p * (Math.log(p) + Math.log(1 + dx * dx + dy * dy) + logZ);
    }
  }
  return kl;
}

/** Exact gradient of KL(P‖Q) for a dense P [n, n] (for tests and small N). */
export function exactGradient(Pd: Float64Array, Y: Float64Array, n: number): Float64Array {
  let Z = 0;
  const W = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const dx = Y[2 * i] - Y[2 * j];
      const dy = Y[2 * i + 1] - Y[2 * j + 1];
      W[i * n + j] = 1 / (1 + dx * dx + dy * dy);
      Z += W[i * n + j];
    }
  const g = new Float64Array(2 * n);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const w = W[i * n + j];
      const m = 4 * (Pd[i * n + j] - w / Z) * w;
      g[2 * i] += m * (Y[2 * i] - Y[2 * j]);
      g[2 * i + 1] += m * (Y[2 * i + 1] - Y[2 * j + 1]);
    }
  return g;
}

/** KL(P‖Q) for a dense P (exact, for tests). */
export function exactKl(Pd: Float64Array, Y: Float64Array, n: number): number {
  const Z = exactZ(Y, n);
  let kl = 0;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      const p = Pd[i * n + j];
      if (i === j || p <= 0) continue;
      const dx = Y[2 * i] - Y[2 * j];
      const dy = Y[2 * i + 1] - Y[2 * j + 1];
      kl += p * Math.log(p / (1 / (1 + dx * dx + dy * dy) / Z));
    }
  return kl;
}
