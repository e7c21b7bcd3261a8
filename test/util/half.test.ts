import { describe, it, expect } from 'vitest';
import { bf16AbsTable, bf16ArrayToFloat, floatArrayToHalf, floatToHalf, halfAbsTable,
  halfArrayToFloat } from '../../src/util/half.js';

/** IEEE 754 binary16 value of a bit pattern, from the definition. */
function fp16(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** bfloat16 value of a bit pattern: the top 16 bits of a float32. */
function bf16(bits: number): number {
  const dv = new DataView(new ArrayBuffer(4));
  dv.setUint32(0, bits << 16 >>> 0);
  return dv.getFloat32(0);
}

const ALL = Uint16Array.from({ length: 65536 }, (_, i) => i);

describe('fp16 and bf16 decoding', () => {
  it('every fp16 bit pattern decodes to its IEEE value; the abs table is the positive half', () => {
    const dec = halfArrayToFloat(ALL);
    const abs = halfAbsTable();
    expect(abs.length).toBe(0x8000);
    const bad: number[] = [];
    for (let i = 0; i < 65536; i++) {
      if (!Object.is(dec[i], Math.fround(fp16(i))) || !Object.is(abs[i & 0x7fff], Math.fround(Math.abs(fp16(i)))))
        bad.push(i);
    }
    expect(bad).toEqual([]);
  });

  it('every bf16 bit pattern decodes exactly; the abs table is the positive half', () => {
    const dec = bf16ArrayToFloat(ALL);
    const abs = bf16AbsTable();
    expect(abs.length).toBe(0x8000);
    const bad: number[] = [];
    for (let i = 0; i < 65536; i++) {
      if (!Object.is(dec[i], bf16(i)) || !Object.is(abs[i & 0x7fff], Math.abs(bf16(i)))) bad.push(i);
    }
    expect(bad).toEqual([]);
  });
});

/**
 * The fp16 bit pattern nearest x by the definition: the two finite halves around |x| from the
 * decoded table, the nearer one, a tie to the even mantissa; |x| ≥ 65520 (halfway from 65504 to
 * 2^16, which is even) overflows to Inf.
 */
const POS = Array.from({ length: 0x7c00 }, (_, i) => fp16(i)); // finite non-negative halves, increasing
function nearestHalf(x: number): number {
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  let lo = 0;
  let hi = POS.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (POS[mid]! <= a) lo = mid;
    else hi = mid - 1;
  }
  if (lo === POS.length - 1) return sign | lo;
  const dLo = a - POS[lo]!;
  const dHi = POS[lo + 1]! - a;
  return sign | (dLo < dHi ? lo : dHi < dLo ? lo + 1 : lo % 2 === 0 ? lo : lo + 1);
}

describe('fp16 encoding (round half to even)', () => {
  // Edge values: every half itself, the midpoints between neighbours (ties) and one float32 step
  // either side of them, the subnormal range and its underflow to zero, the overflow boundary,
  // zeros, infinities and NaN, with both signs.
  const edges: number[] = [0, -0, Infinity, -Infinity, NaN, 65504, 65519.99609375, 65520, 65536, 1e9, 2 ** -24,
    2 ** -25, 3 * 2 ** -26, 2 ** -26, 2 ** -14, 2 ** -14 - 2 ** -25, 1e-10];
  const up = (x: number) => {
    const f = new Float32Array([x]);
    const u = new Uint32Array(f.buffer);
    u[0]! += 1;
    return f[0]!;
  };
  const down = (x: number) => {
    const f = new Float32Array([x]);
    const u = new Uint32Array(f.buffer);
    u[0]! -= 1;
    return f[0]!;
  };
  for (let i = 0; i + 1 < POS.length; i++) {
    const m = Math.fround((POS[i]! + POS[i + 1]!) / 2);
    edges.push(POS[i]!, m, up(m), m > 0 ? down(m) : 0);
  }
  const all = Float32Array.from([...edges, ...edges.map((x) => -x)]);

  it('every edge value rounds to the nearest half by the definition (scalar and array paths)', () => {
    const fast = floatArrayToHalf(all);
    const general = floatArrayToHalf(Array.from(all));
    const bits = new Uint32Array(all.buffer);
    const bad: string[] = [];
    for (let i = 0; i < all.length; i++) {
      // a NaN keeps its sign bit, which a JS number does not show
      const want = Number.isNaN(all[i]!) ? ((bits[i]! >>> 16) & 0x8000) | 0x7e00 : nearestHalf(all[i]!);
      const got = [floatToHalf(all[i]!), fast[i]!, general[i]!];
      if (got.some((g) => g !== want))
        bad.push(`${all[i]}: want ${want.toString(16)}, got ${got.map((g) => g.toString(16)).join('/')}`);
    }
    expect(all.length).toBeGreaterThan(4 * 0x7c00);
    expect(bad.slice(0, 5)).toEqual([]);
  });

  it('the Float32Array fast path equals the general conversion on every exponent and sign with the rounding-relevant mantissa bits', () => {
    const lows = [0, 1, 0x0fff, 0x1000, 0x1001, 0x17ff, 0x1fff, 0x2000, 0x3000, 0x5a5a];
    const u = new Uint32Array(65536 * lows.length);
    for (let hi = 0; hi < 65536; hi++) lows.forEach((lo, j) => (u[hi * lows.length + j] = ((hi << 16) | lo) >>> 0));
    const f = new Float32Array(u.buffer);
    const fast = floatArrayToHalf(f);
    let bad = 0;
    for (let i = 0; i < f.length; i++) if (fast[i] !== floatToHalf(f[i]!)) bad++;
    expect(bad).toBe(0);
  });
});
