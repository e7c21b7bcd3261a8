/**
 * The fast MatMulNBits paths (src/convert/nbits-fast.ts) against the general converter
 * (src/formats/ggml-nbits.ts, itself checked against the gguf package's dequantization): byte
 * for byte on seeded random blocks, including blocks whose min is an exact multiple of the
 * scale (integer zero points) and constant blocks (scale 0).
 */
import { describe, it, expect } from 'vitest';
import { ggmlToMatMulNBits } from '../../src/formats/ggml-nbits.js';
import { GgmlType, ggmlType } from '../../src/formats/ggml.js';
import { floatToHalf } from '../../src/util/half.js';
import { decodeInto, toMatMulNBits } from '../../src/convert/nbits-fast.js';

function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>>= 0) & 255;
  };
}

function setHalf(b: Uint8Array, at: number, v: number): void {
  const h = floatToHalf(v);
  b[at] = h & 255;
  b[at + 1] = h >> 8;
}

/** Random blocks of a type with sane half scales at the places the type keeps them. */
function blocks(type: number, n: number, k: number, seed: number): Uint8Array {
  const t = ggmlType(type)!;
  const next = rng(seed);
  const out = new Uint8Array((n * k * t.typeSize) / t.blockSize);
  for (let i = 0; i < out.length; i++) out[i] = next();
  const nb = out.length / t.typeSize;
  for (let b = 0; b < nb; b++) {
    const o = b * t.typeSize;
    if (t.name === 'Q6_K') setHalf(out, o + 208, 0.001 * (1 + (b % 5)));
    else {
      setHalf(out, o, 0.01 * (1 + (b % 7)));
      if (t.name === 'Q4_1') setHalf(out, o + 2, -0.03 * (b % 3));
      if (t.name === 'Q4_K') setHalf(out, o + 2, 0.002 * (b % 4));
    }
  }
  return out;
}

function same(type: number, src: Uint8Array, n: number, k: number): void {
  const a = ggmlToMatMulNBits(type, src.slice(), n, k);
  const b = toMatMulNBits(type, src.slice(), n, k);
  expect([b.bits, b.blockSize, b.n, b.k, b.kBlocks]).toEqual([a.bits, a.blockSize, a.n, a.k, a.kBlocks]);
  expect(Buffer.from(b.packed).equals(Buffer.from(a.packed))).toBe(true);
  expect(Buffer.from(b.scales.buffer).equals(Buffer.from(a.scales.buffer))).toBe(true);
  expect(Buffer.from(b.zeroPoints).equals(Buffer.from(a.zeroPoints))).toBe(true);
  expect(b.mins === null).toBe(a.mins === null);
  if (a.mins) expect(Buffer.from(b.mins!.buffer).equals(Buffer.from(a.mins.buffer))).toBe(true);
}

describe('fast MatMulNBits forms', () => {
  for (const name of ['Q4_0', 'Q4_1', 'Q8_0', 'Q4_K', 'Q6_K'] as const) {
    it(`${name} equals the general converter on random blocks`, () => {
      const type = GgmlType[name];
      for (const [n, k, seed] of [[3, 256, 1], [17, 512, 2], [64, 1024, 3]] as const)
        same(type, blocks(type, n, k, seed), n, k);
    });
  }

  it('Q4_1 with every min an integer multiple of its scale, and constant blocks, gives the same zero points', () => {
    const n = 4;
    const k = 64;
    const src = blocks(GgmlType.Q4_1, n, k, 9);
    for (let b = 0; b < (n * k) / 32; b++) {
      const o = b * 20;
      const d = 0.125 * (1 + (b % 3));
      setHalf(src, o, b === 5 ? 0 : d);
      setHalf(src, o + 2, b === 5 ? -0.75 : -d * (b % 16));
    }
    const w = toMatMulNBits(GgmlType.Q4_1, src, n, k);
    expect(w.mins).toBeNull();
    same(GgmlType.Q4_1, src, n, k);
  });

  it('Q4_K with integer zero points (dmin·m a multiple of d·s) gives the same zero points', () => {
    const n = 2;
    const k = 256;
    const src = blocks(GgmlType.Q4_K, n, k, 11);
    for (let b = 0; b < 2; b++) {
      const o = b * 144;
      setHalf(src, o, 0.5);
      setHalf(src, o + 2, 0.5);
      // scales = mins = 1 for every sub-block: dmin·m / (d·s) = 1.
      for (let j = 0; j < 12; j++) src[o + 4 + j] = j < 8 ? 1 : 0x11;
    }
    expect(toMatMulNBits(GgmlType.Q4_K, src, n, k).mins).toBeNull();
    same(GgmlType.Q4_K, src, n, k);
  });

  it('Q6_K decoded into an output that is not 4-byte aligned (byte by byte) gives the same codes and scales', () => {
    const n = 5;
    const k = 512;
    const src = blocks(GgmlType.Q6_K, n, k, 13);
    const ref = ggmlToMatMulNBits(GgmlType.Q6_K, src, n, k);
    const out = new Uint8Array(n * k + 1);
    const scales = new Float32Array((n * k) / 16);
    decodeInto('Q6_K', src, n, k, out.subarray(1), scales, null);
    expect(Buffer.from(out.subarray(1)).equals(Buffer.from(ref.packed))).toBe(true);
    expect(Buffer.from(scales.buffer).equals(Buffer.from(ref.scales.buffer))).toBe(true);
  });

  it('other types go to the general converter', () => {
    const src = blocks(GgmlType.Q5_0, 2, 64, 4);
    same(GgmlType.Q5_0, src, 2, 64);
  });
});
