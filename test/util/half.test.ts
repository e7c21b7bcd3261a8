import { describe, it, expect } from 'vitest';
import { bf16AbsTable, bf16ArrayToFloat, halfAbsTable, halfArrayToFloat } from '../../src/util/half.js';

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
      if (!Object.is(dec[i], Math.fround(fp16(i))) || !Object.is(abs[i & 0x7fff], Math.fround(Math.abs(fp16(i))))) bad.push(i);
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
