import { describe, it, expect, afterAll } from 'vitest';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { floatArrayToHalf, floatToHalf, halfToFloat } from '../../src/util/half.js';
import { writeSafetensors } from '../../src/formats/safetensors.js';
import { columnBlockSums, dequantizeNBits, type MatrixRef } from '../../src/wanda/kernel.js';
import { weightPass } from '../../src/wanda/pass.js';
import { poolBlocks, poolHook, groupSquareSums, memorySource, rmsScaler } from '../../src/wanda/stats.js';
import { selectTop, density, components, jaccard, minus, keepCount } from '../../src/wanda/regions.js';
import { nullTest, matrixInfo } from '../../src/wanda/analyze.js';
import { createSimd } from '../../src/wanda/simd.js';
import { kthLargest } from '../../src/wanda/weightres.js';
import { wantedMatrices } from '../../src/wanda/weights.js';
import { randn, toBf16, transpose, naivePooled, tmpDir, cleanupTmp } from './helpers.js';

afterAll(cleanupTmp);

function maxRelErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]) / Math.max(1e-12, Math.abs(b[i])));
  return m;
}

const SHAPES: [number, number, number, number][] = [
  // dOut, dIn, rowBlock, colBlock
  [300, 520, 256, 256],
  [37, 53, 8, 8],
  [29, 61, 7, 16],
];

describe('pooled maps equal the naive |W|·s then average pooling', () => {
  for (const [dOut, dIn, rb, cb] of SHAPES) {
    for (const dtype of ['F32', 'BF16', 'F16'] as const) {
      for (const layout of ['out_in', 'in_out'] as const) {
        it(`${dOut}x${dIn} blocks ${rb}x${cb} ${dtype} ${layout}`, () => {
          const rng = new Rng(dOut * 7 + dIn);
          const w0 = randn(rng, dOut * dIn, 0.05);
          // The stored values (after rounding to the dtype) are the truth for the naive computation.
          let values: Float32Array;
          let stored: Float32Array;
          let bytes: Uint8Array;
          const storedW = layout === 'out_in' ? w0 : transpose(w0, dOut, dIn);
          if (dtype === 'F32') {
            values = w0;
            bytes = new Uint8Array(storedW.buffer.slice(0));
          } else if (dtype === 'BF16') {
            const b = toBf16(storedW);
            bytes = new Uint8Array(b.bits.buffer);
            stored = b.values;
            values = layout === 'out_in' ? stored : transpose(stored, dIn, dOut);
          } else {
            const h = floatArrayToHalf(storedW);
            bytes = new Uint8Array(h.buffer);
            stored = new Float32Array(storedW.length);
            for (let i = 0; i < h.length; i++) stored[i] = halfToFloat(h[i]);
            values = layout === 'out_in' ? stored : transpose(stored, dIn, dOut);
          }
          const s = Float64Array.from(randn(rng, dIn), (x) => Math.abs(x) + 0.1);
          const m: MatrixRef = {
            name: 'm',
            layer: 0,
            proj: 'gate_proj',
            input: 'h',
            dOut,
            dIn,
            source: { kind: 'dense', tensor: 'w', dtype, layout, data: { bytes } },
          };
          // Small chunks force several reads per matrix.
          const C = columnBlockSums(m, { rowBlock: rb, chunkBytes: 1000 });
          const pooled = poolBlocks(C, s, dOut, dIn, rb, cb);
          const naive = naivePooled(values, dOut, dIn, s, rb, cb);
          expect(pooled.length).toBe(Math.ceil(dOut / rb) * Math.ceil(dIn / cb));
          // Block column sums accumulate in float32: agreement to float32 rounding.
          expect(maxRelErr(pooled, naive)).toBeLessThan(1e-5);
        });
      }
    }
  }
});

describe('weight pass over safetensors files', () => {
  it('worker threads give the same column sums as the calling thread', async () => {
    const dir = tmpDir();
    const rng = new Rng(5);
    const mats: MatrixRef[] = [];
    const tensors = [];
    for (let k = 0; k < 3; k++) {
      const dOut = 100 + 13 * k;
      const dIn = 70 + 5 * k;
      const w = randn(rng, dOut * dIn);
      tensors.push({ name: `w${k}`, dtype: 'BF16' as const, shape: [dOut, dIn], data: toBf16(w).bits });
      mats.push({ name: `m${k}`, layer: k, proj: 'up_proj', input: `h${k}`, dOut, dIn,
        source: { kind: 'dense', tensor: `w${k}`, dtype: 'BF16', layout: 'out_in',
          data: { file: '', offset: 0, byteLength: 0 } } });
    }
    const file = path.join(dir, 'model.safetensors');
    writeSafetensors(file, tensors);
    const { readSafetensorsHeader } = await import('../../src/formats/safetensors.js');
    const h = readSafetensorsHeader(file);
    for (const [k, m] of mats.entries()) {
      const t = h.tensors.get(`w${k}`)!;
      (m.source as any).data = { file, offset: t.offset, byteLength: t.byteLength };
    }
    const inline = await weightPass(mats, { rowBlock: 16, threads: 1 });
    const threaded = await weightPass(mats, { rowBlock: 16, threads: 2 });
    for (const m of mats) expect(Array.from(threaded.get(m.name)!)).toEqual(Array.from(inline.get(m.name)!));
    // The SIMD kernel and the plain loop add the same values in the same order.
    for (const m of mats) {
      const js = columnBlockSums(m, { rowBlock: 16, simd: false });
      const wasm = columnBlockSums(m, { rowBlock: 16, chunkBytes: 3000 });
      expect(Array.from(wasm)).toEqual(Array.from(js));
    }
  });

  it("row slices of MatMulNBits weights in worker threads give the whole matrix's sums", async () => {
    const rng = new Rng(6);
    const N = 40, K = 64, bs = 16, nb = 4;
    const mk = (zp: boolean): MatrixRef => ({
      name: `q${zp}`,
      layer: 0,
      proj: 'gate_proj',
      input: 'h',
      dOut: N,
      dIn: K,
      source: {
        kind: 'nbits',
        tensor: 'B',
        bits: 4,
        blockSize: bs,
        data: { bytes: Uint8Array.from({ length: N * nb * 8 }, () => rng.int(256)) },
        scales: { tensor: 's', dtype: 'F32',
          data: { bytes: new Uint8Array(Float32Array.from({ length: N * nb }, () => rng.next()).buffer) } },
        zeroPoints: zp
          ? { tensor: 'z', dtype: 'U8', data: { bytes: Uint8Array.from({ length: N * 2 }, () => rng.int(256)) } }
          : undefined,
      },
    });
    const mats = [mk(true), mk(false)];
    const threaded = await weightPass(mats, { rowBlock: 8, threads: 2 });
    for (const m of mats) {
      const whole = columnBlockSums(m, { rowBlock: 8 });
      expect(Array.from(threaded.get(m.name)!)).toEqual(Array.from(whole));
    }
  });
});

describe('MatMulNBits dequantization', () => {
  // N = 2 output rows, K = 20 inputs, block_size 16 -> 2 blocks per row, blob 8 bytes.
  // Row 0, block 0: byte 0 = 0x3a -> k=0 code 0xa=10, k=1 code 3. Block 1: byte 8 = 0xf0 -> k=16 code 0, k=17 code 15.
  // Row 1, block 0: byte 16 = 0x21 -> k=0 code 1, k=1 code 2. Block 1: byte 24 = 0x87 -> k=16 code 7, k=17 code 8.
  // scales [N * blocks] = [0.5, 0.25, 2, 1]; packed zero points one byte per row (2 blocks x 4 bits):
  // row 0 = 0x95 -> block 0 zp 5, block 1 zp 9; row 1 = 0x13 -> block 0 zp 3, block 1 zp 1.
  const B = new Uint8Array(2 * 2 * 8).fill(0x88);
  B[0] = 0x3a;
  B[8] = 0xf0;
  B[16] = 0x21;
  B[24] = 0x87;
  const mk = (scales: Uint8Array, sdt: 'F32' | 'F16', zp?: Uint8Array): MatrixRef => ({
    name: 'q',
    layer: 0,
    proj: 'gate_proj',
    input: 'h',
    dOut: 2,
    dIn: 20,
    source: {
      kind: 'nbits',
      tensor: 'B',
      data: { bytes: B },
      bits: 4,
      blockSize: 16,
      scales: { tensor: 'scales', dtype: sdt, data: { bytes: scales } },
      zeroPoints: zp ? { tensor: 'zp', dtype: 'U8', data: { bytes: zp } } : undefined,
    },
  });
  const scales32 = new Uint8Array(new Float32Array([0.5, 0.25, 2, 1]).buffer);
  it('with packed zero points (fp32 scales)', () => {
    const W = dequantizeNBits(mk(scales32, 'F32', Uint8Array.of(0x95, 0x13)));
    expect(W[0 * 20 + 0]).toBe((10 - 5) * 0.5); // 2.5
    expect(W[0 * 20 + 1]).toBe((3 - 5) * 0.5); // -1
    expect(W[0 * 20 + 2]).toBe((8 - 5) * 0.5); // filler code 8
    expect(W[0 * 20 + 16]).toBe((0 - 9) * 0.25); // -2.25
    expect(W[0 * 20 + 17]).toBe((15 - 9) * 0.25); // 1.5
    expect(W[1 * 20 + 0]).toBe((1 - 3) * 2); // -4
    expect(W[1 * 20 + 1]).toBe((2 - 3) * 2); // -2
    expect(W[1 * 20 + 16]).toBe((7 - 1) * 1); // 6
    expect(W[1 * 20 + 17]).toBe((8 - 1) * 1); // 7
    expect(W[1 * 20 + 19]).toBe((8 - 1) * 1); // last real column of the padded block
  });
  it('without zero points (default 8) and fp16 scales', () => {
    const s16 = new Uint8Array(Uint16Array.from([0.5, 0.25, 2, 1].map(floatToHalf)).buffer);
    const W = dequantizeNBits(mk(s16, 'F16'));
    expect(W[0]).toBe((10 - 8) * 0.5);
    expect(W[1]).toBe((3 - 8) * 0.5);
    expect(W[16]).toBe((0 - 8) * 0.25);
    expect(W[20 + 17]).toBe(0);
  });
  it('column sums of |W| from NBits match the dequantized matrix', () => {
    const m = mk(scales32, 'F32', Uint8Array.of(0x95, 0x13));
    const W = dequantizeNBits(m);
    const C = columnBlockSums(m, { rowBlock: 1 });
    for (let i = 0; i < 40; i++) expect(C[i]).toBe(Math.abs(W[i]));
  });
});

describe('group statistic', () => {
  it('sqrt(mean x^2) per group for several labellings at once, NaN rejected', async () => {
    const rng = new Rng(3);
    const n = 11, d = 5;
    const x = randn(rng, n * d);
    const src = memorySource(n, { h: { dim: d, data: x } });
    const L1 = Int32Array.from({ length: n }, (_, r) => r % 3 === 0 ? -1 : r % 2);
    const L2 = Int32Array.from({ length: n }, (_, r) => (r < 6 ? 0 : 1));
    const sums = await groupSquareSums(src, 'h', [L1, L2], 2);
    for (const [L, S] of [[L1, sums[0]], [L2, sums[1]]] as const) {
      for (let g = 0; g < 2; g++) {
        const rows = [...L.keys()].filter((r) => L[r] === g);
        const s = rmsScaler(S, g, d, rows.length);
        for (let j = 0; j < d; j++) {
          const ref = Math.sqrt(rows.reduce((a, r) => a + x[r * d + j] ** 2, 0) / rows.length);
          expect(s[j]).toBeCloseTo(ref, 10);
        }
      }
    }
    // The WebAssembly accumulation and the plain loop give identical sums.
    process.env.LOBES_NO_SIMD = '1';
    try {
      const plain = await groupSquareSums(src, 'h', [L1, L2], 2);
      expect(Array.from(plain[0])).toEqual(Array.from(sums[0]));
      expect(Array.from(plain[1])).toEqual(Array.from(sums[1]));
    } finally {
      delete process.env.LOBES_NO_SIMD;
    }
    const bad = x.slice();
    bad[7 * d + 2] = NaN;
    await expect(
      groupSquareSums(memorySource(n, { h: { dim: d, data: bad } }, Array.from({ length: n }, (_, i) => `id${i}`)), 'h',
        [L2], 2),
    ).rejects.toThrow(/h, row 7 \(sample "id7"\).*NaN at feature 2/);
  });
});

describe('addgroups', () => {
  it("adds each entry's rows in order into its destination, for every vector count (8-, 4- and 1-vector steps)", () => {
    const k = createSimd();
    if (!k) return;
    let x = 99;
    const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let nvec = 1; nvec <= 21; nvec++) {
      const rows = 5;
      const entries: [number, number[]][] = [[0, [0, 2, 4]], [1, [1]], [2, [3, 0, 1, 2]]];
      const vals = 2 * nvec;
      // Destinations (3 × vals), rows (5 × vals, 8 extra values so an offset is visible), then the list.
      const dstOff = 0;
      const rowOff = 3 * vals * 8;
      const listOff = rowOff + rows * (vals + 8) * 8;
      k.ensure(listOff + 64 * 4);
      const mem = k.memory.buffer;
      const dst = new Float64Array(mem, dstOff, 3 * vals);
      const src = new Float64Array(mem, rowOff, rows * (vals + 8));
      dst.set(Float64Array.from({ length: dst.length }, () => rnd()));
      src.set(Float64Array.from({ length: src.length }, () => rnd() * 1e3));
      const want = dst.slice();
      for (const [e, rs] of entries)
        for (const r of rs) for (let i = 0; i < vals; i++) want[e * vals + i] += src[r * (vals + 8) + i]!;
      const list = new Int32Array(mem, listOff, 64);
      let w = 0;
      for (const [e, rs] of entries) {
        list[w++] = dstOff + e * vals * 8;
        list[w++] = rs.length;
        for (const r of rs) list[w++] = rowOff + r * (vals + 8) * 8;
      }
      k.addgroups(listOff, entries.length, nvec, 0);
      expect(Buffer.from(dst.buffer, dst.byteOffset, dst.byteLength).equals(Buffer.from(want.buffer)), `nvec ${nvec}`)
        .toBe(true);
    }
  });
});

describe('poolHook', () => {
  it('pools through the SIMD kernel bit-identically to poolBlocks (a narrower last column block included) and to the plain path', () => {
    let x = 12345;
    const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (const [d, dOuts, rb, cb] of [[100, [37, 64], 16, 24], [64, [64], 8, 16], [50, [20], 8, 6], [54, [9, 30], 4,
      8]] as const)
    {
      const mats = dOuts.map((dOut) => ({ C: Float32Array.from({ length: Math.ceil(dOut / rb) * d }, () => rnd() * 3),
        dOut, dIn: d })
      );
      // Five groups: four pooled together (poolrow4), the fifth alone (poolrow).
      const counts = [3, 5, 2, 7, 4];
      const sums = [Float64Array.from({ length: 5 * d }, () => rnd() * 10),
        Float64Array.from({ length: 5 * d }, () => rnd())];
      const got = poolHook(sums, d, counts, mats, rb, cb);
      process.env.LOBES_NO_SIMD = '1';
      let plain;
      try {
        plain = poolHook(sums, d, counts, mats, rb, cb);
      } finally {
        delete process.env.LOBES_NO_SIMD;
      }
      sums.forEach((S, l) =>
        counts.forEach((c, g) => {
          const s = rmsScaler(S, g, d, c);
          mats.forEach((m, i) => {
            const want = poolBlocks(m.C, s, m.dOut, m.dIn, rb, cb);
            expect(Buffer.from(got.pooled[l]![g]![i]!.buffer).equals(Buffer.from(want.buffer)),
              `d ${d} cb ${cb} matrix ${i}`).toBe(true);
            expect(Buffer.from(plain.pooled[l]![g]![i]!.buffer).equals(Buffer.from(want.buffer))).toBe(true);
          });
        })
      );
    }
  });
});

describe('regions and metrics', () => {
  const info = matrixInfo('m', 0, 'gate_proj', 'h', 4 * 8, 4 * 8, [8, 8]); // 4x4 blocks
  it('top-k with deterministic ties, per matrix, layer and global', () => {
    const a = Float32Array.from([5, 1, 5, 2, 0, 0, 3, 3, 1, 1, 1, 1, 9, 0, 0, 0]);
    const b = Float32Array.from({ length: 16 }, (_, i) => i / 100);
    const info2 = { ...info, name: 'm2', proj: 'up_proj' };
    const per = selectTop([a, b], [info, info2], { kind: 'count', value: 3, scope: 'matrix' });
    expect([...per[0].keys()].filter((i) => per[0][i])).toEqual([0, 2, 12]);
    expect([...per[1].keys()].filter((i) => per[1][i])).toEqual([13, 14, 15]);
    const glob = selectTop([a, b], [info, info2], { kind: 'count', value: 5, scope: 'global' });
    expect([...glob[0].keys()].filter((i) => glob[0][i])).toEqual([0, 2, 6, 7, 12]);
    expect(glob[1].reduce((x, y) => x + y, 0)).toBe(0);
    const frac = selectTop([a], [info], { kind: 'fraction', value: 0.25, scope: 'layer' });
    expect(frac[0].reduce((x, y) => x + y, 0)).toBe(4); // round(0.25 * 16)
    expect(keepCount({ kind: 'fraction', value: 0.01, scope: 'matrix' }, 16)).toBe(1);
  });
  it('selection equals a stable sort (score descending, then matrix, then index) with many ties', () => {
    const rng = new Rng(12);
    const infos = [0, 0, 1, 1, 1].map((layer, k) => ({
      ...matrixInfo(`m${k}`, layer, ['gate_proj', 'up_proj', 'down_proj'][k % 3], 'h', 8 * (2 + k), 8 * 3, [8, 8]),
    }));
    const scores = infos.map((m) => Float32Array.from({ length: m.rowBlocks * m.colBlocks }, () => rng.int(6)));
    for (const scope of ['matrix', 'layer', 'global'] as const) {
      for (const top of [{ kind: 'count' as const, value: 4, scope }, { kind: 'fraction' as const, value: 0.3,
        scope }])
      {
        const got = selectTop(scores, infos, top);
        const pools = scope === 'matrix'
          ? infos.map((_, k) => [k])
          : scope === 'global'
          ? [infos.map((_, k) => k)]
          : [[0, 1], [2, 3, 4]];
        const want = scores.map((x) => new Uint8Array(x.length));
        for (const pool of pools) {
          const items = pool.flatMap((m) => Array.from(scores[m], (v, i) => ({ m, i, v })));
          items.sort((a, b) => b.v - a.v || a.m - b.m || a.i - b.i);
          for (const it of items.slice(0, keepCount(top, items.length))) want[it.m][it.i] = 1;
        }
        expect(got.map((x) => Array.from(x))).toEqual(want.map((x) => Array.from(x)));
      }
    }
  });
  it('density and connected components on hand-drawn sets', () => {
    // 4x4 map:
    //  X X . .
    //  X . . X
    //  . . . X
    //  X . . .
    const m = Uint8Array.from([1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0]);
    expect(components([m], [info])).toBe(3);
    // In-bounds neighbour slots: (0,0):2 (0,1):3 (1,0):3 (1,3):3 (2,3):3 (3,0):2 = 16.
    // Neighbours in the set: (0,0):2 (0,1):1 (1,0):1 (1,3):1 (2,3):1 (3,0):0 = 6.
    expect(density([m], [info])).toBeCloseTo(6 / 16, 12);
    const full = new Uint8Array(16).fill(1);
    expect(density([full], [info])).toBe(1);
    expect(components([full], [info])).toBe(1);
    expect(density([new Uint8Array(16)], [info])).toBe(0);
    const other = Uint8Array.from([1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
    // |A ∩ B| = 2 ((0,0),(1,3)); |A ∪ B| = 6 + 3 - 2 = 7.
    expect(jaccard([m], [other])).toBeCloseTo(2 / 7, 12);
    expect(Array.from(minus([m], [other])[0])).toEqual([0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0]);
  });
  it('null test: p with +1 correction, percentile, mean', () => {
    const t = nullTest(0.5, Float64Array.from([0.1, 0.2, 0.5, 0.9]));
    expect(t.p).toBeCloseTo((1 + 2) / 5, 12);
    expect(t.pLower).toBeCloseTo((1 + 3) / 5, 12);
    expect(t.percentile).toBeCloseTo((100 * (2 + 0.5)) / 4, 12);
    expect(t.nullMean).toBeCloseTo(0.425, 12);
    expect(nullTest(1, null)).toEqual({ value: 1, p: null, percentile: null, nullMean: null, pLower: null });
  });
  it('kth largest by selection equals sorting', () => {
    const rng = new Rng(9);
    const a = randn(rng, 1001);
    const sorted = Array.from(a).sort((x, y) => y - x);
    for (const k of [1, 2, 100, 500, 1001]) expect(kthLargest(a.slice(), k)).toBe(sorted[k - 1]);
  });
});

describe('matrices from capture points', () => {
  it('maps mlp inputs to their projections in layer order, skipping points no scored matrix reads', () => {
    const w = wantedMatrices([
      { name: 'final.hidden', dim: 8 },
      { name: 'layers.10.mlp.in', dim: 8 },
      { name: 'layers.2.mlp.down_in', dim: 32 },
      { name: 'layers.2.mlp.in', dim: 8 },
      { name: 'layers.2.attn.in', dim: 8 },
      { name: 'layers.2.attn.o_in', dim: 8 },
      { name: 'layers.2.resid_out', dim: 8 },
    ]);
    expect(w.map((m) => `${m.name}<-${m.input}:${m.dIn}`)).toEqual([
      'layers.2.mlp.gate_proj<-layers.2.mlp.in:8',
      'layers.2.mlp.up_proj<-layers.2.mlp.in:8',
      'layers.2.mlp.down_proj<-layers.2.mlp.down_in:32',
      'layers.10.mlp.gate_proj<-layers.10.mlp.in:8',
      'layers.10.mlp.up_proj<-layers.10.mlp.in:8',
    ]);
  });
});
