/**
 * ONNX weight sources: MatMulNBits dequantization against ONNX Runtime's own contrib kernel,
 * and fp16 MatMul initializers (stored [d_in, d_out]) read in the W[d_out, d_in] convention,
 * both inline and in external data.
 */
import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { writeFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { DataType, loadModel, makeGraph, makeModel, makeNode, makeTensor, makeValueInfo,
  writeModel } from '../../src/onnx/index.js';
import { onnxWeightSource } from '../../src/runtime/weights.js';
import { columnBlockSums, dequantizeNBits, type MatrixRef } from '../../src/wanda/kernel.js';
import { floatArrayToHalf, halfToFloat } from '../../src/util/half.js';
import { Rng } from '../../src/util/rng.js';
import { tmpDir, cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

describe('MatMulNBits initializers', () => {
  it('dequantize exactly as ONNX Runtime computes the op (Y = A · W^T)', async () => {
    const N = 6, K = 40, bs = 16, nb = Math.ceil(K / bs), blob = bs / 2;
    const rng = new Rng(4);
    const B = Uint8Array.from({ length: N * nb * blob }, () => rng.int(256));
    const scales = Float32Array.from({ length: N * nb }, () => 0.05 + rng.next());
    const zpPerRow = Math.ceil(nb / 2);
    const zp = Uint8Array.from({ length: N * zpPerRow }, () => rng.int(256));
    const graph = makeGraph(
      'nbits',
      [makeNode('MatMulNBits', ['A', 'B', 'scales', 'zp'], ['Y'], { K, N, bits: 4, block_size: bs }, 'com.microsoft',
        'q')],
      [makeValueInfo('A', DataType.FLOAT, [K, K])],
      [makeValueInfo('Y', DataType.FLOAT, [K, N])],
      [makeTensor('B', DataType.UINT8, [N, nb, blob], B), makeTensor('scales', DataType.FLOAT, [N * nb], scales),
        makeTensor('zp', DataType.UINT8, [N * zpPerRow], zp)],
    );
    const dir = tmpDir('lobes-wanda-nbits-');
    const file = path.join(dir, 'model.onnx');
    writeModel(file, makeModel(graph, { opsets: { '': 17, 'com.microsoft': 1 } }));
    const loaded = loadModel(file);
    const src = onnxWeightSource(loaded, { proj: 'gate_proj', op: 'MatMulNBits', weight: 'B', scales: 'scales',
      zeroPoints: 'zp', layout: 'nbits', dIn: K, dOut: N, bits: 4, blockSize: bs });
    expect(src.kind).toBe('nbits');
    const m: MatrixRef = { name: 'q', layer: 0, proj: 'gate_proj', input: 'h', dOut: N, dIn: K, source: src };
    const W = dequantizeNBits(m);
    // ONNX Runtime with A = identity gives Y[k, n] = W[n, k].
    const session = await ort.InferenceSession.create(file);
    const A = new Float32Array(K * K);
    for (let k = 0; k < K; k++) A[k * K + k] = 1;
    const { Y } = await session.run({ A: new ort.Tensor('float32', A, [K, K]) });
    const y = Y.data as Float32Array;
    for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) expect(W[n * K + k]).toBeCloseTo(y[k * N + n], 5);
    // Column sums of |W| in row blocks of 4 from the streamed kernel.
    const C = columnBlockSums(m, { rowBlock: 4, chunkBytes: 24 });
    for (let bi = 0; bi < 2; bi++)
      for (let k = 0; k < K; k++) {
        let s = 0;
        for (let n = bi * 4; n < Math.min(N, bi * 4 + 4); n++) s += Math.abs(W[n * K + k]);
        expect(C[bi * K + k]).toBeCloseTo(s, 5);
      }
    await session.release();
  });
});

describe('dense ONNX MatMul initializers', () => {
  for (const external of [false, true]) {
    it(`fp16 [d_in, d_out] ${external ? 'in external data' : 'inline'} reads as W[d_out, d_in]`, () => {
      const dIn = 24, dOut = 10;
      const rng = new Rng(8);
      const stored = Float32Array.from({ length: dIn * dOut }, () => rng.normal());
      const h = floatArrayToHalf(stored);
      const graph = makeGraph(
        'dense',
        [makeNode('MatMul', ['X', 'w'], ['Y'])],
        [makeValueInfo('X', DataType.FLOAT16, [1, dIn])],
        [makeValueInfo('Y', DataType.FLOAT16, [1, dOut])],
        [makeTensor('w', DataType.FLOAT16, [dIn, dOut], h)],
      );
      const dir = tmpDir('lobes-wanda-dense-');
      const file = path.join(dir, 'model.onnx');
      const model = makeModel(graph);
      if (external) {
        // Move the weight to external data by hand: 16 bytes of padding, then the tensor.
        const t = model.graph!.initializer[0];
        const bytes = t.rawData!;
        const data = new Uint8Array(16 + bytes.byteLength);
        data.set(bytes, 16);
        writeFileSync(path.join(dir, 'weights.bin'), data);
        delete t.rawData;
        t.dataLocation = 1;
        t.externalData = [{ key: 'location', value: 'weights.bin' }, { key: 'offset', value: '16' }, { key: 'length',
          value: String(bytes.byteLength) }];
      }
      writeModel(file, model);
      const loaded = loadModel(file);
      const src = onnxWeightSource(loaded, { proj: 'up_proj', op: 'MatMul', weight: 'w', layout: 'in_out', dIn, dOut });
      expect(src.kind === 'dense' && 'file' in src.data && path.basename(src.data.file)).toBe(
        external ? 'weights.bin' : 'model.onnx',
      );
      const C = columnBlockSums({ name: 'u', layer: 0, proj: 'up_proj', input: 'h', dOut, dIn, source: src }, {
        rowBlock: 3,
      });
      for (let bi = 0; bi < Math.ceil(dOut / 3); bi++)
        for (let j = 0; j < dIn; j++) {
          let s = 0;
          for (let i = bi * 3; i < Math.min(dOut, bi * 3 + 3); i++) s += Math.abs(halfToFloat(h[j * dOut + i]));
          expect(C[bi * dIn + j]).toBeCloseTo(s, 6);
        }
      expect(() =>
        onnxWeightSource(loaded, { proj: 'up_proj', op: 'MatMul', weight: 'w', layout: 'in_out', dIn: dOut, dOut: dIn })
      ).toThrow(
        /initializer "w": initializer shape \[24,10\] does not match the in_out layout of \[d_out=24, d_in=10\]/,
      );
      expect(() =>
        onnxWeightSource(loaded, { proj: 'up_proj', op: 'MatMul', weight: 'nope', layout: 'in_out', dIn, dOut })
      ).toThrow(/up_proj initializer "nope" not found/);
    });
  }
});
