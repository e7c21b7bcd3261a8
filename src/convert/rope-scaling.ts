/**
 * Llama-3 rope scaling from llama.cpp's `rope_freqs` tensor, and float32 hyperparameters as
 * their shortest decimals.
 */
import { ModelError } from '../util/errors.js';

/** The shortest decimal that rounds to the same float32 (1e-5 instead of 9.999999747e-6). */
export function shortFloat32(x: number): number {
  const f = Math.fround(x);
  for (let p = 1; p <= 9; p++) {
    const y = Number(f.toPrecision(p));
    if (Math.fround(y) === f) return y;
  }
  return f;
}

/**
 * Recover Hugging Face's llama3 `rope_scaling` from llama.cpp's `rope_freqs` factors.
 *
 * llama.cpp divides frequency i (θ^(-2i/D)) by factor f_i, where for wavelength w = 2π / freq:
 * f = 1 when w < L / high, f = factor when w > L / low, and in between
 * f = 1 / ((1 − s) / factor + s) with s = (L / w − low) / (high − low). The factors therefore
 * fix `factor` (the plateau) and, through the medium band, the line s = A / w + B with
 * A = L / (high − low), B = −low / (high − low); any L (original_max_position_embeddings) with
 * low = −B L / A, high = low + L / A gives the same factors. L is taken from
 * `llama.rope.scaling.original_context_length` when present, else Llama-3's 8192; the result is
 * recomputed in float64, rounded to float32 and compared with every stored factor.
 * Returns null when every factor is 1 (no scaling); throws when the factors do not follow the
 * llama3 rule.
 */
export function ropeScalingFromFreqFactors(factors: Float32Array, theta: number, headDim: number,
  originalContext: number | null, place: { file: string; where: string }): Record<string, unknown> | null
{
  const half = headDim / 2;
  if (factors.length !== half)
    throw new ModelError(`holds ${factors.length} factors but the head dim ${headDim} has ${half} rotary frequencies`,
      place);
  let factor = 1;
  for (const f of factors) {
    if (!(f >= 1) || !Number.isFinite(f))
      throw new ModelError(`factor ${f} is not a number >= 1: not llama3 rope scaling`, { ...place,
        hint: 'lobes converts llama3-style rope_freqs only' });
    factor = Math.max(factor, f);
  }
  if (factor === 1) return null;
  const wave = (i: number) => (2 * Math.PI) / Math.pow(theta, (-2 * i) / headDim);
  const L = originalContext ?? 8192;
  const candidates: Array<{ low: number; high: number }> = [{ low: 1, high: 4 }];
  // Fit the medium band: s_i = A / w_i + B.
  const pts: Array<[number, number]> = [];
  for (let i = 0; i < half; i++) {
    const f = factors[i];
    if (f > 1 && f < factor && Math.abs(f - factor) > 1e-6 * factor && Math.abs(f - 1) > 1e-6)
      pts.push([1 / wave(i), (1 / f - 1 / factor) / (1 - 1 / factor)]);
  }
  if (pts.length >= 2) {
    const n = pts.length;
    let sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const [x, y] of pts) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const A = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    const B = (sy - A * sx) / n;
    if (A > 0) {
      const low = (-B * L) / A;
      const high = low + L / A;
      // Prefer short decimals (Llama-3's 1 and 4) when they reproduce the factors as well.
      for (const p of [3, 4, 6, 8])
        candidates.push({ low: Number(low.toPrecision(p)), high: Number(high.toPrecision(p)) });
      candidates.push({ low, high });
    }
  }
  for (const c of candidates) {
    if (!(c.high > c.low && c.low > 0)) continue;
    if (llama3Matches(factors, theta, headDim, factor, c.low, c.high, L)) {
      return { rope_type: 'llama3', factor: shortFloat32(factor), low_freq_factor: c.low, high_freq_factor: c.high,
        original_max_position_embeddings: L };
    }
  }
  throw new ModelError(
    `the ${half} rope frequency factors do not follow llama3 rope scaling (plateau ${factor}, ${pts.length} factors in between)`,
    {
      ...place,
      hint: 'lobes recovers llama3 scaling only; convert the original Hugging Face checkpoint instead',
    },
  );
}

/** llama3 factors (computed as llama.cpp's converter does, in float64, stored as float32) equal the stored ones within 2 float32 ulps. */
function llama3Matches(factors: Float32Array, theta: number, d: number, factor: number, low: number, high: number,
  L: number): boolean
{
  const lowWave = L / low;
  const highWave = L / high;
  for (let i = 0; i < d / 2; i++) {
    const freq = 1 / Math.pow(theta, (2 * i) / d);
    const w = (2 * Math.PI) / freq;
    let f: number;
    if (w < highWave) f = 1;
    else if (w > lowWave) f = factor;
    else {
      const s = (L / w - low) / (high - low);
      f = 1 / ((1 - s) / factor + s);
    }
    if (Math.abs(Math.fround(f) - factors[i]) > 2.5e-7 * factors[i]) return false;
  }
  return true;
}
