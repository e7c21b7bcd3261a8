/** IEEE half (fp16) and bfloat16 conversion to and from float32. */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** One fp16 bit pattern to a number. */
export function halfToFloat(h: number): number {
  const s = (h & 0x8000) >> 15;
  const e = (h & 0x7c00) >> 10;
  const f = h & 0x03ff;
  let v: number;
  if (e === 0) v = f * 5.960464477539063e-8; // 2^-24
  else if (e === 0x1f) v = f ? NaN : Infinity;
  else v = (1 + f / 1024) * Math.pow(2, e - 15);
  return s ? -v : v;
}

const HALF_TABLE = (() => {
  const t = new Float32Array(65536);
  for (let i = 0; i < 65536; i++) t[i] = halfToFloat(i);
  return t;
})();

/** Decode fp16 values (little-endian uint16 bit patterns) to float32. */
export function halfArrayToFloat(src: Uint16Array, out = new Float32Array(src.length)): Float32Array {
  for (let i = 0; i < src.length; i++) out[i] = HALF_TABLE[src[i]];
  return out;
}

/**
 * |x| for every fp16 bit pattern with the sign bit cleared (index = bits & 0x7fff): the
 * positive half of the decoding table, shared, not copied.
 */
export function halfAbsTable(): Float32Array {
  return HALF_TABLE.subarray(0, 0x8000);
}

let BF16_ABS: Float32Array | null = null;

/** |x| for every bfloat16 bit pattern with the sign bit cleared (index = bits & 0x7fff). */
export function bf16AbsTable(): Float32Array {
  if (!BF16_ABS) BF16_ABS = bf16ArrayToFloat(Uint16Array.from({ length: 0x8000 }, (_, i) => i));
  return BF16_ABS;
}

/** Decode bfloat16 values to float32 (exact: bf16 is the top half of a float32). */
export function bf16ArrayToFloat(src: Uint16Array, out = new Float32Array(src.length)): Float32Array {
  const o32 = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < src.length; i++) o32[i] = src[i] << 16;
  return out;
}

/**
 * The fp16 bit pattern nearest a float32 given by its bits (round half to even; magnitudes
 * from 65520 up overflow to ±Inf; NaN stays NaN, quiet).
 */
function halfFromBits(b: number): number {
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  // A carry out of the mantissa moves into the exponent, up to Inf (0x7bff + 1 = 0x7c00).
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

/** Round a number to the nearest fp16 bit pattern (round half to even). */
export function floatToHalf(x: number): number {
  f32[0] = x;
  return halfFromBits(u32[0]);
}

/**
 * Round values to fp16 bit patterns (round half to even), as floatToHalf does each. A
 * Float32Array takes a fast path for the normal range: |x| in [2^-14, 65520) is rounded on its
 * bits directly (mantissa to 10 bits, ties to even, a carry into the exponent right by
 * construction); the rest goes through the general conversion.
 */
export function floatArrayToHalf(src: ArrayLike<number>, out = new Uint16Array(src.length)): Uint16Array {
  if (!(src instanceof Float32Array)) {
    for (let i = 0; i < src.length; i++) out[i] = floatToHalf(src[i]!);
    return out;
  }
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) {
    const b = bits[i]!;
    const a = b & 0x7fffffff;
    if (a >= 0x38800000 && a < 0x477ff000)
      out[i] = ((b >>> 16) & 0x8000) | (((a + 0x0fff + ((a >>> 13) & 1)) >>> 13) - 0x1c000);
    else out[i] = halfFromBits(b);
  }
  return out;
}

/** Round to bfloat16 (round half to even). */
export function floatToBf16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff)) return (b >>> 16) | 0x40;
  const r = b + 0x7fff + ((b >>> 16) & 1);
  return (r >>> 16) & 0xffff;
}
