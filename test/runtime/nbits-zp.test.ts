/**
 * MatMulNBits with float zero points, rewritten for the CPU session (src/runtime/nbits-zp.ts):
 * the session's product equals X · Wᵀ with W[n, k] = (q[n, k] − z[n, b])·s[n, b] computed here
 * in float64 from the codes, scales and zero points (4- and 8-bit, 3-D input), a block whose
 * scale is 0 (what ablation writes) contributes exactly nothing, and nodes the rewrite cannot
 * take (a bias, float16 scales, K not a multiple of the block) are left alone. The 8-bit case
 * also shows that the session runs the rewritten graph: ONNX Runtime's own CPU kernel refuses
 * 8-bit codes with float zero points ("Only 2b and 4b quantization is supported for unpacked
 * compute").
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { DataType, makeGraph, makeModel, makeNode, makeTensor, makeValueInfo,
  type ModelProto } from '../../src/onnx/index.js';
import { rewriteFloatZeroPoints } from '../../src/runtime/nbits-zp.js';
import { openEditedSession } from '../../src/runtime/providers.js';

/** A seeded generator in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

interface Case {
  K: number;
  N: number;
  bs: number;
  bits: 4 | 8;
  q: Uint8Array; // [N, K] codes
  s: Float32Array; // [N, nb]
  z: Float32Array; // [N, nb]
}

function makeCase(K: number, N: number, bs: number, bits: 4 | 8, seed: number): Case {
  const r = rng(seed);
  const nb = Math.ceil(K / bs);
  const q = Uint8Array.from({ length: N * K }, () => Math.floor(r() * (1 << bits)));
  const s = Float32Array.from({ length: N * nb }, () => 0.01 + 0.05 * r());
  // like GGUF's minima: z = −m/d, not an integer
  const z = Float32Array.from({ length: N * nb }, () => (bits === 4 ? 15 : 255) * r() - 2.3);
  return { K, N, bs, bits, q, s, z };
}

/** The packed codes B [N, nb, bs·bits/8] (low bits first), zero-padded past K. */
function packed(c: Case): Uint8Array {
  const nb = Math.ceil(c.K / c.bs);
  const per = (c.bs * c.bits) / 8;
  const out = new Uint8Array(c.N * nb * per);
  for (let n = 0; n < c.N; n++) {
    for (let k = 0; k < c.K; k++) {
      const b = Math.floor(k / c.bs);
      const j = k % c.bs;
      const v = c.q[n * c.K + k]!;
      if (c.bits === 8) out[(n * nb + b) * per + j] = v;
      else out[(n * nb + b) * per + (j >> 1)]! |= j & 1 ? v << 4 : v;
    }
  }
  return out;
}

function model(c: Case, opts: { bias?: boolean; fp16Scales?: boolean } = {}): ModelProto {
  const nb = Math.ceil(c.K / c.bs);
  const inputs = ['X', 'B', 'S', 'Z', ...(opts.bias ? ['', 'bias'] : [])];
  const inits = [
    makeTensor('B', DataType.UINT8, [c.N, nb, (c.bs * c.bits) / 8], packed(c)),
    opts.fp16Scales
      ? makeTensor('S', DataType.FLOAT16, [c.N * nb], new Uint16Array(c.N * nb).fill(0x2000))
      : makeTensor('S', DataType.FLOAT, [c.N * nb], c.s),
    makeTensor('Z', DataType.FLOAT, [c.N * nb], c.z),
    ...(opts.bias ? [makeTensor('bias', DataType.FLOAT, [c.N], new Float32Array(c.N).fill(0.5))] : []),
  ];
  const node = makeNode('MatMulNBits', inputs, ['Y'], { K: c.K, N: c.N, bits: c.bits, block_size: c.bs },
    'com.microsoft', 'proj');
  const g = makeGraph('g', [node], [makeValueInfo('X', DataType.FLOAT, ['a', 'b', c.K])], [
    makeValueInfo('Y', DataType.FLOAT, ['a', 'b', c.N]),
  ], inits);
  return makeModel(g, { opsets: { '': 17, 'com.microsoft': 1 } });
}

/** X · Wᵀ in float64 from the codes, scales and zero points. */
function reference(c: Case, x: Float32Array, rows: number): Float64Array {
  const nb = Math.ceil(c.K / c.bs);
  const y = new Float64Array(rows * c.N);
  for (let i = 0; i < rows; i++) {
    for (let n = 0; n < c.N; n++) {
      let acc = 0;
      for (let k = 0; k < c.K; k++) {
        const b = Math.floor(k / c.bs);
        acc += x[i * c.K + k]! * (c.q[n * c.K + k]! - c.z[n * nb + b]!) * c.s[n * nb + b]!;
      }
      y[i * c.N + n] = acc;
    }
  }
  return y;
}

async function run(m: ModelProto, c: Case, x: Float32Array, dir: string): Promise<Float32Array> {
  const session = await openEditedSession(m, dir, { device: 'cpu', threads: 1 }, 'test.onnx');
  try {
    const out = await session.run({ X: new ort.Tensor('float32', x, [2, x.length / (2 * c.K), c.K]) });
    return out['Y']!.data as Float32Array;
  } finally {
    await session.release();
  }
}

const maxRel = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(b[i]!));
    err = Math.max(err, Math.abs(a[i]! - b[i]!));
  }
  return err / scale;
};

describe('MatMulNBits with float zero points on the CPU', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lobes-nbits-zp-'));
  const xOf = (K: number, rows: number, seed: number) => {
    const r = rng(seed);
    return Float32Array.from({ length: rows * K }, () => 2 * r() - 1);
  };

  for (const [K, N, bs, bits] of [[96, 40, 32, 4], [64, 24, 16, 8], [160, 33, 32, 4]] as const) {
    it(`K=${K} N=${N} block ${bs}, ${bits}-bit: rewritten, and equal to the float64 product`, async () => {
      const c = makeCase(K, N, bs, bits, K + N);
      const m = model(c);
      const r = rewriteFloatZeroPoints(m, dir, 'test.onnx');
      expect(r.rewritten).toBe(1);
      expect(r.model.graph!.initializer.some((t) => t.name === 'Z')).toBe(false);
      expect(r.model.graph!.node.map((n) => n.opType)).toEqual(['MatMulNBits', 'MatMul', 'MatMul', 'Add']);
      const x = xOf(K, 6, 7);
      const ref = reference(c, x, 6);
      const got = await run(m, c, x, dir);
      expect(maxRel(got, ref)).toBeLessThan(2e-6);
      // the rewritten graph's input model is untouched
      expect(m.graph!.node.length).toBe(1);
    });
  }

  it('a block whose scale is 0 contributes exactly nothing', async () => {
    const c = makeCase(96, 8, 32, 4, 3);
    const nb = 3;
    // zero row 5's middle block, as ablation does for a whole quantisation block
    c.s[5 * nb + 1] = 0;
    const x = xOf(96, 4, 9);
    const got = await run(model(c), c, x, path.dirname(dir));
    // row 5 from the other two blocks only, in float64
    for (let i = 0; i < 4; i++) {
      let acc = 0;
      for (let k = 0; k < 96; k++)
        if (Math.floor(k / 32) !== 1)
          acc += x[i * 96 + k]! * (c.q[5 * 96 + k]! - c.z[5 * nb + Math.floor(k / 32)]!) *
            c.s[5 * nb + Math.floor(k / 32)]!;
      expect(Math.abs(got[i * 8 + 5]! - acc)).toBeLessThan(1e-5 * Math.max(1, Math.abs(acc)));
    }
    expect(maxRel(got, reference(c, x, 4))).toBeLessThan(2e-6);
  });

  it('leaves alone what it cannot take: a bias, float16 scales, K not a multiple of the block', () => {
    const c = makeCase(64, 8, 32, 4, 5);
    expect(rewriteFloatZeroPoints(model(c, { bias: true }), dir, 'test.onnx').rewritten).toBe(0);
    expect(rewriteFloatZeroPoints(model(c, { fp16Scales: true }), dir, 'test.onnx').rewritten).toBe(0);
    const odd = makeCase(70, 8, 32, 4, 6);
    expect(rewriteFloatZeroPoints(model(odd), dir, 'test.onnx').rewritten).toBe(0);
  });

  it('leaves the graph as it is, and says so, when the minima would be more than the graph can carry', () => {
    // the size comes from the node's N, K and block_size: claim 3.5e8 rows of one block (1.4 GB of minima)
    const m = model(makeCase(32, 4, 32, 4, 9));
    const node = m.graph!.node[0]!;
    for (const a of node.attribute) if (a.name === 'N') a.i = 350_000_000;
    const r = rewriteFloatZeroPoints(m, dir, 'big.onnx');
    expect(r.rewritten).toBe(0);
    expect(r.model).toBe(m);
    expect(r.tooLarge).toEqual({ nodes: 1, bytes: 4 * 350_000_000 });
    // just under the limit it is rewritten (and nothing is reported)
    for (const a of node.attribute) if (a.name === 'N') a.i = 4;
    const ok = rewriteFloatZeroPoints(m, dir, 'small.onnx');
    expect(ok.rewritten).toBe(1);
    expect(ok.tooLarge).toBeUndefined();
  });

  it('cleans up', () => rmSync(dir, { recursive: true, force: true }));
});
