/**
 * GGML types and dequantization against the gguf Python package: the type table equals
 * gguf.GGML_QUANT_SIZES, and every decoded type equals gguf.quants.dequantize bit for bit
 * (random blocks from test/goldens/make_gguf_goldens.py). Then the MatMulNBits forms,
 * checked against the dequantization and against ONNX Runtime's own MatMulNBits kernel.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { openGguf } from '../../src/formats/gguf.js';
import { GGML_TYPES, DEQUANTIZABLE, dequantizeBlocks, ggmlType, ggmlTypeByName,
  GgmlType } from '../../src/formats/ggml.js';
import { ggmlToMatMulNBits, nbitsToFloat32, NBITS_MAPPING, type NBitsWeight } from '../../src/formats/ggml-nbits.js';
import { DataType, makeGraph, makeModel, makeNode, makeTensor, makeValueInfo,
  writeModel } from '../../src/onnx/index.js';
import { floatToHalf } from '../../src/util/half.js';
import { existsSync, readFileSync } from 'node:fs';
import { GOLDEN_GGUF, SMOL, REF, sha256, goldens, goldenValues, firstBitDiff, firstValueDiff, lobesError, tmpDir,
  cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

const g = goldens();

describe('GGML type table', () => {
  it('has the id, block size and type size of every type the gguf package knows', () => {
    for (const [name, [id, block, size]] of Object.entries(g.quantSizes)) {
      const t = ggmlTypeByName(name);
      expect(t, name).toBeDefined();
      expect([t!.id, t!.blockSize, t!.typeSize], name).toEqual([id, block, size]);
      expect(ggmlType(id)!.name).toBe(name);
    }
    // Ids the gguf package does not list are the ones GGML removed (block size 0).
    for (const t of GGML_TYPES) if (!(t.name in g.quantSizes)) expect(t.blockSize, t.name).toBe(0);
    expect(DEQUANTIZABLE).toEqual(['F32', 'F16', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K',
      'Q6_K', 'BF16']);
  });
});

describe('dequantization equals gguf.quants.dequantize bit for bit', () => {
  const decoded = g.tensors.filter((t) => t.golden);

  it('covers every decodable type', () => {
    expect(new Set(decoded.map((t) => t.type))).toEqual(new Set(DEQUANTIZABLE));
  });

  for (const t of decoded) {
    it(`${t.type} (${t.name}, dims ${JSON.stringify(t.dims)})`, () => {
      const want = goldenValues(t);
      const f = openGguf(GOLDEN_GGUF);
      try {
        const got = f.dequantize(t.name);
        expect(firstBitDiff(got, want)).toBe(-1);
        // Row by row into a caller's buffer at an odd offset gives the same values.
        const info = f.tensor(t.name);
        const rowLen = info.dims[0];
        const out = new Float32Array(info.numel + 3);
        for (let r = 0; r < info.rows; r++) f.dequantize(info, r, r + 1, out.subarray(3 + r * rowLen));
        expect(firstBitDiff(out.subarray(3), want)).toBe(-1);
        // And straight from the raw bytes at an unaligned byte offset.
        const raw = f.readTensorBytes(info);
        const shifted = new Uint8Array(raw.byteLength + 1);
        shifted.set(raw, 1);
        expect(firstBitDiff(dequantizeBlocks(info.type, shifted.subarray(1)), want)).toBe(-1);
      } finally {
        f.close();
      }
    });
  }

  it('hand-made blocks: Q4_0, Q8_0 and Q4_K values from their formulas', () => {
    // Q4_0: d = 0.5, byte j = (j & 15) | (15 - (j & 15)) << 4: values j -> 0.5 * (j - 8), j + 16 -> 0.5 * (7 - j).
    const q40 = new Uint8Array(18);
    new DataView(q40.buffer).setUint16(0, floatToHalf(0.5), true);
    for (let j = 0; j < 16; j++) q40[2 + j] = j | ((15 - j) << 4);
    const v = dequantizeBlocks(GgmlType.Q4_0, q40);
    for (let j = 0; j < 16; j++) {
      expect(v[j]).toBe(0.5 * (j - 8));
      expect(v[j + 16]).toBe(0.5 * (7 - j));
    }
    // Q8_0: d = -0.25, codes -128..., x = d * q.
    const q80 = new Uint8Array(34);
    new DataView(q80.buffer).setUint16(0, floatToHalf(-0.25), true);
    for (let j = 0; j < 32; j++) q80[2 + j] = (j * 8 - 128) & 255;
    const w = dequantizeBlocks(GgmlType.Q8_0, q80);
    for (let j = 0; j < 32; j++) expect(w[j]).toBe(-0.25 * (j * 8 - 128));
    // Q4_K: d = 1, dmin = 0.5; sub-block 0 scale 3, min 2; sub-block 5 scale 60 (6 bits across bytes), min 33.
    const q4k = new Uint8Array(144);
    const dv = new DataView(q4k.buffer);
    dv.setUint16(0, floatToHalf(1), true);
    dv.setUint16(2, floatToHalf(0.5), true);
    q4k[4 + 0] = 3; // scale 0
    q4k[4 + 4] = 2; // min 0
    // pair 5: scale = (byte 9 & 15) | (byte 1 >> 6) << 4 = 12 | 3 << 4 = 60; min = (byte 9 >> 4) | (byte 5 >> 6) << 4 = 1 | 2 << 4 = 33
    q4k[4 + 9] = 12 | (1 << 4);
    q4k[4 + 1] = 3 << 6;
    q4k[4 + 5] = 2 << 6;
    for (let l = 0; l < 32; l++) q4k[16 + l] = l & 15; // sub-block 0: low nibbles of bytes 0..31
    for (let l = 0; l < 32; l++) q4k[16 + 64 + l] = (l % 16) << 4; // sub-block 5: high nibbles of bytes 64..95
    const k = dequantizeBlocks(GgmlType.Q4_K, q4k);
    for (let l = 0; l < 32; l++) {
      expect(k[l]).toBe(3 * (l & 15) - 0.5 * 2);
      expect(k[5 * 32 + l]).toBe(60 * (l % 16) - 0.5 * 33);
    }
  });

  it('refuses unsupported types naming the tensor and the type', () => {
    const f = openGguf(GOLDEN_GGUF);
    try {
      const e = lobesError(() => f.dequantize('iq2_xxs.unsupported'));
      expect(e.message).toMatch(
        /goldens.gguf: tensor "iq2_xxs.unsupported": cannot dequantize IQ2_XXS: lobes decodes F32, F16, Q4_0/,
      );
      expect(e.message).toMatch(/re-quantize the model with llama-quantize/);
      // Raw bytes are still readable.
      expect(f.readTensorBytes('iq2_xxs.unsupported').byteLength).toBe(66);
    } finally {
      f.close();
    }
    expect(lobesError(() => dequantizeBlocks(GgmlType.Q8_K, new Uint8Array(292))).message).toMatch(
      /cannot dequantize Q8_K/,
    );
    expect(lobesError(() => dequantizeBlocks(4, new Uint8Array(0))).message).toMatch(
      /cannot dequantize Q4_2, a type GGML has removed,/,
    );
    expect(lobesError(() => dequantizeBlocks(77, new Uint8Array(0))).message).toMatch(
      /cannot dequantize GGML type id 77/,
    );
    expect(lobesError(() => dequantizeBlocks(GgmlType.Q4_0, new Uint8Array(19))).message).toMatch(
      /19 bytes are not whole Q4_0 blocks of 18 bytes/,
    );
  });
});

/** Run com.microsoft MatMulNBits on the identity: Y[i, j] = W[j, i] as ONNX Runtime dequantizes it. */
async function ortWeights(w: NBitsWeight): Promise<Float32Array> {
  const { n, k, kBlocks, bits, blockSize } = w;
  const blob = (blockSize * bits) / 8;
  const graph = makeGraph(
    'nbits',
    [makeNode('MatMulNBits', ['A', 'B', 'scales', 'zp'], ['Y'], { K: k, N: n, bits, block_size: blockSize },
      'com.microsoft')],
    [makeValueInfo('A', DataType.FLOAT, [k, k])],
    [makeValueInfo('Y', DataType.FLOAT, [k, n])],
    [
      makeTensor('B', DataType.UINT8, [n, kBlocks, blob], w.packed),
      makeTensor('scales', DataType.FLOAT, [n, kBlocks], w.scales),
      makeTensor('zp', DataType.UINT8, [n, w.zeroPoints.length / n], w.zeroPoints),
    ],
  );
  const file = path.join(tmpDir(), 'nbits.onnx');
  writeModel(file, makeModel(graph, { opsets: { '': 17, 'com.microsoft': 1 } }));
  const sess = await ort.InferenceSession.create(file);
  try {
    const eye = new Float32Array(k * k);
    for (let i = 0; i < k; i++) eye[i * k + i] = 1;
    const y = (await sess.run({ A: new ort.Tensor('float32', eye, [k, k]) })).Y!.data as Float32Array;
    const out = new Float32Array(n * k); // back to W[n, k], adding the min terms when present
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < n; j++)
        out[j * k + i] = w.mins ? y[i * n + j] + w.mins[j * kBlocks + Math.floor(i / blockSize)] : y[i * n + j];
    }
    return out;
  } finally {
    await sess.release();
  }
}

describe('MatMulNBits forms of GGML weights', () => {
  const mappable = g.tensors.filter((t) => t.type in NBITS_MAPPING);

  it('covers every mappable type with a golden tensor', () => {
    expect(new Set(mappable.map((t) => t.type))).toEqual(new Set(Object.keys(NBITS_MAPPING)));
  });

  for (const t of mappable) {
    it(`${t.type}: (q - zp) * scale (+ min) equals the dequantization, in lobes and in ONNX Runtime`, async () => {
      const f = openGguf(GOLDEN_GGUF);
      let w: NBitsWeight;
      const info = f.tensor(t.name);
      try {
        w = ggmlToMatMulNBits(info.type, f.readTensorBytes(info), info.rows, info.dims[0]);
      } finally {
        f.close();
      }
      const map = NBITS_MAPPING[t.type];
      expect([w.bits, w.blockSize, w.n, w.k]).toEqual([map.bits, map.blockSize, info.rows, info.dims[0]]);
      // Random blocks: types with a fixed zero point map exactly; types with a min need the min term.
      expect(w.mins === null).toBe(map.zeroPoint !== null);
      const want = goldenValues(t);
      expect(firstBitDiff(nbitsToFloat32(w), want)).toBe(-1);
      // ONNX Runtime's matmul sums +0 products into a -0 weight, so compare as numbers.
      expect(firstValueDiff(await ortWeights(w), want)).toBe(-1);
    });
  }

  it('Q4_1 with min = -z * d maps exactly onto integer zero points (and a constant block too)', async () => {
    // Two rows of two blocks: (d, m) = (0.0625, -0.3125: z = 5), (2, 0: z = 0), (0.5, -7.5: z = 15), (0, 1.5: constant).
    const blocks: Array<[number, number]> = [[0.0625, -0.3125], [2, 0], [0.5, -7.5], [0, 1.5]];
    const src = new Uint8Array(4 * 20);
    const dv = new DataView(src.buffer);
    blocks.forEach(([d, m], b) => {
      dv.setUint16(b * 20, floatToHalf(d), true);
      dv.setUint16(b * 20 + 2, floatToHalf(m), true);
      for (let j = 0; j < 16; j++) src[b * 20 + 4 + j] = ((j + b) & 15) | (((j * 7 + b) & 15) << 4);
    });
    const w = ggmlToMatMulNBits(GgmlType.Q4_1, src, 2, 64);
    expect(w.mins).toBeNull();
    // zero points packed two per byte, low nibble first: row 0 = (5, 0), row 1 = (15, 0 for the constant block)
    expect(Array.from(w.zeroPoints)).toEqual([5, 15]);
    expect(Array.from(w.scales)).toEqual([0.0625, 2, 0.5, 1.5]);
    const want = dequantizeBlocks(GgmlType.Q4_1, src);
    expect(Array.from(want.subarray(96, 128))).toEqual(new Array(32).fill(1.5));
    expect(firstBitDiff(nbitsToFloat32(w), want)).toBe(-1);
    expect(firstValueDiff(await ortWeights(w), want)).toBe(-1);
    expect(w.fp16Exact).toBe(true);
    // One block off the integer grid (m = -0.3 is not a multiple of 0.0625) switches the tensor to mins.
    dv.setUint16(2, floatToHalf(-0.3), true);
    const w2 = ggmlToMatMulNBits(GgmlType.Q4_1, src, 2, 64);
    expect(w2.mins).not.toBeNull();
    expect(Array.from(w2.zeroPoints)).toEqual([0, 0]);
    expect(firstBitDiff(nbitsToFloat32(w2), dequantizeBlocks(GgmlType.Q4_1, src))).toBe(-1);
  });

  it('Q4_0 packs codes low nibble first along K with zero point 8', () => {
    // One block: value i has code i % 16; GGML stores value j in the low nibble of byte j, value j + 16 in its high nibble.
    const src = new Uint8Array(18);
    new DataView(src.buffer).setUint16(0, floatToHalf(1), true);
    for (let j = 0; j < 16; j++) src[2 + j] = j | (j << 4);
    const w = ggmlToMatMulNBits(GgmlType.Q4_0, src, 1, 32);
    // MatMulNBits: byte i holds values 2i (low) and 2i + 1 (high): codes (2i % 16, (2i + 1) % 16).
    expect(Array.from(w.packed)).toEqual(
      Array.from({ length: 16 }, (_, i) => ((2 * i) % 16) | (((2 * i + 1) % 16) << 4)),
    );
    expect(Array.from(w.zeroPoints)).toEqual([8]);
  });

  it('refuses types without a MatMulNBits form, and wrong sizes', () => {
    expect(lobesError(() => ggmlToMatMulNBits(GgmlType.F16, new Uint8Array(64), 1, 32)).message).toMatch(
      /GGML F16 has no MatMulNBits form .*expand it to float/,
    );
    expect(lobesError(() => ggmlToMatMulNBits(GgmlType.IQ2_XXS, new Uint8Array(66), 1, 256)).message).toMatch(
      /GGML IQ2_XXS has no MatMulNBits form/,
    );
    expect(lobesError(() => ggmlToMatMulNBits(GgmlType.Q4_0, new Uint8Array(17), 1, 32)).message).toMatch(
      /17 bytes given but \[1, 32\] of Q4_0 takes 18/,
    );
  });
});

const hasSmol = existsSync(SMOL);
if (!hasSmol) console.log(`skipping the SmolLM2 MatMulNBits test: ${SMOL} is absent`);

describe.skipIf(!hasSmol)('MatMulNBits forms of SmolLM2-135M-Instruct weights', () => {
  it("Q4_1 (mins: llama.cpp's block minima are not multiples of d) and Q8_0 (exact zero point 128) reproduce gguf.quants.dequantize", () => {
    const ref = JSON.parse(readFileSync(path.join(REF, 'smollm2.json'), 'utf8')).dequantized;
    const f = openGguf(SMOL);
    try {
      for (const name of ['blk.0.ffn_down.weight', 'token_embd.weight']) {
        const t = f.tensor(name);
        const w = ggmlToMatMulNBits(t.type, f.readTensorBytes(t), t.rows, t.dims[0], { file: SMOL, where: name });
        expect(w.mins === null, name).toBe(t.typeName === 'Q8_0');
        expect(w.fp16Exact, name).toBe(true);
        const back = nbitsToFloat32(w);
        expect(sha256(new Uint8Array(back.buffer)), name).toBe(ref[name].sha256);
      }
    } finally {
      f.close();
    }
  });
});
