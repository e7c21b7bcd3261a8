/**
 * One t-SNE optimizer step over a range of points, shared by src/tsne/tsne.ts and the worker
 * threads of src/tsne/pool.ts. Every coordinate's update depends on that coordinate alone
 * (and a point's clip on its two coordinates), so any split of the points gives the same numbers.
 */

/** The step's constants for one iteration. */
export interface StepParams {
  /** 1 / Z, the repulsion's normalization. */
  invZ: number;
  momentum: number;
  learningRate: number;
  /** Largest norm of one point's update (Infinity: no clipping). */
  maxStepNorm: number;
  /**
   * Gains rule: false is scikit-learn's (+0.2 where update · g < 0, else ×0.8, at least 0.01), true
   * openTSNE's (+0.2 where the signs of update and g differ, zero counted as a sign, else ×0.8 + 0.01).
   */
  additiveGain: boolean;
}

/**
 * Points [i0, i1): gradient g = 4 (A − F / Z) (A the attractive sums, F the repulsive ones), gains
 * (+0.2 where g turns against the update, shrunk otherwise), update = momentum · update − lr · gain · g,
 * clipped to maxStepNorm per point, and Y += update.
 */
export function stepRange(Y: Float64Array, update: Float64Array, gains: Float64Array, A: Float64Array, F: Float64Array,
  s: StepParams, i0: number, i1: number): void
{
  const { invZ, momentum: mom, learningRate: lr, additiveGain } = s;
  for (let t = 2 * i0; t < 2 * i1; t++) {
    const g = 4 * (A[t] - F[t] * invZ);
    let gain = gains[t];
    if (additiveGain) {
      // openTSNE compares np.sign(update) with np.sign(g): a zero update against a nonzero g counts as a change
      const u = update[t];
      gain = (u > 0 ? 1 : u < 0 ? -1 : 0) !== (g > 0 ? 1 : g < 0 ? -1 : 0) ? gain + 0.2 : gain * 0.8 + 0.01;
    } else {
      gain = update[t] * g < 0 ? gain + 0.2 : gain * 0.8;
      if (gain < 0.01) gain = 0.01;
    }
    gains[t] = gain;
    update[t] = mom * update[t] - lr * gain * g;
  }
  const maxStep = s.maxStepNorm;
  if (maxStep < Number.POSITIVE_INFINITY) {
    // Math.hypot is slow: only steps whose squared norm comes near the clip need it (the same clips)
    const near = 0.999 * maxStep * maxStep;
    for (let i = i0; i < i1; i++) {
      const ux = update[2 * i];
      const uy = update[2 * i + 1];
      if (!(ux * ux + uy * uy > near)) continue;
      const norm = Math.hypot(ux, uy);
      if (norm > maxStep) {
        update[2 * i] = ux * (maxStep / norm);
        update[2 * i + 1] = uy * (maxStep / norm);
      }
    }
  }
  for (let t = 2 * i0; t < 2 * i1; t++) Y[t] += update[t];
}
