/**
 * Zeroing blocks in the stored weights (src/ablate/patch.ts): after the edits, the weight each
 * layout dequantises to is exactly 0 inside every block and unchanged outside, read back here with
 * this test's own decoders (float32 MatMul [d_in, d_out], float16, MatMulNBits 4-bit with zero
 * points); restoring gives the original bytes again. The blocks are the goldens' (48 × 48, with
 * partial blocks at the edges, which cut the 4-bit layout's quantisation blocks of 32).
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { blockEdits, copyModelFolder, storedMatrices, WeightPatcher,
  type StoredMatrix } from '../../src/ablate/patch.js';
import type { HfBlock } from '../../src/ablate/regions.js';
import { GOLD, tinyMatrices } from './fixture.js';

function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

/** W [d_out, d_in] as the session computes with it, decoded from the files under `dir`. */
function decode(sm: StoredMatrix, modelDir: string, dir: string): Float64Array {
  const { ref } = sm;
  const s = ref.source as any;
  const bytesOf = (r: { file: string; offset: number; byteLength: number }) => {
    const buf = readFileSync(path.join(dir, path.relative(modelDir, r.file)));
    return buf.subarray(r.offset, r.offset + r.byteLength);
  };
  const { dOut, dIn } = ref;
  const W = new Float64Array(dOut * dIn);
  if (s.kind === 'dense') {
    const b = bytesOf(s.data);
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    for (let r = 0; r < dOut; r++) {
      for (let c = 0; c < dIn; c++) {
        const e = s.layout === 'in_out' ? c * dOut + r : r * dIn + c;
        W[r * dIn + c] = s.dtype === 'F32' ? dv.getFloat32(e * 4, true) : half(dv.getUint16(e * 2, true));
      }
    }
    return W;
  }
  // MatMulNBits, 4 bits: B [N, nBlocks, bs/2], low nibble first; zero points packed [N, ceil(nBlocks/2)].
  expect(s.bits).toBe(4);
  const bs = s.blockSize;
  const nb = Math.ceil(dIn / bs);
  const B = bytesOf(s.data);
  const S = bytesOf(s.scales.data);
  const sv = new DataView(S.buffer, S.byteOffset, S.byteLength);
  const Z = s.zeroPoints ? bytesOf(s.zeroPoints.data) : null;
  const zRow = Math.ceil(nb / 2);
  for (let n = 0; n < dOut; n++) {
    for (let k = 0; k < dIn; k++) {
      const q = (B[n * nb * (bs / 2) + (k >> 1)]! >> ((k & 1) * 4)) & 15;
      const kb = Math.floor(k / bs);
      const zp = Z ? (Z[n * zRow + (kb >> 1)]! >> ((kb & 1) * 4)) & 15 : 8;
      const sc = s.scales.dtype === 'F32'
        ? sv.getFloat32((n * nb + kb) * 4, true)
        : half(sv.getUint16((n * nb + kb) * 2, true));
      W[n * dIn + k] = (q - zp) * sc;
    }
  }
  return W;
}

const sha = (dir: string) =>
  readdirSync(dir).sort().map((f) => createHash('sha256').update(readFileSync(path.join(dir, f))).digest('hex')).join(
    ',',
  );

function checkZeroed(model: string, blocks: HfBlock[], stored: StoredMatrix[], work: string) {
  const matrices = tinyMatrices(GOLD.block);
  stored.forEach((sm, k) => {
    const before = decode(sm, model, model);
    const after = decode(sm, model, work);
    const tensor = `model.${matrices[k]!.name}.weight`;
    const mine = blocks.filter((b) => b.tensor === tensor);
    const { dOut, dIn } = sm.ref;
    let inside = 0;
    let wasZero = 0;
    for (let r = 0; r < dOut; r++) {
      for (let c = 0; c < dIn; c++) {
        const z = mine.some((b) => r >= b.rows[0] && r < b.rows[1] && c >= b.cols[0] && c < b.cols[1]);
        const v = after[r * dIn + c]!;
        if (z) {
          inside++;
          if (before[r * dIn + c] === 0) wasZero++;
          if (v !== 0) throw new Error(`${tensor}[${r}, ${c}] is ${v} inside a zeroed block`);
        } else if (v !== before[r * dIn + c])
          throw new Error(`${tensor}[${r}, ${c}] changed outside the blocks: ${before[r * dIn + c]} -> ${v}`);
      }
    }
    // Most weights inside were not 0 before (4-bit codes equal to their zero point are), so the zeros are the edit's.
    expect(wasZero).toBeLessThan(0.2 * inside + 1);
    expect(inside).toBe(mine.reduce((a, b) => a + (b.rows[1] - b.rows[0]) * (b.cols[1] - b.cols[0]), 0));
  });
}

describe.each(['tiny-llama', 'tiny-llama-opaque', 'tiny-llama-fp16', 'tiny-llama-q4'])('zeroing blocks in %s',
  (name) => {
    let model: string;
    let stored: StoredMatrix[];
    beforeAll(() => {
      model = ensureGeneratedModel(name);
      stored = storedMatrices(model, tinyMatrices(GOLD.block));
    });

    it('gives exact zeros inside the blocks, nothing changed outside, and restores the original bytes', () => {
      // The goldens' blocks, and one with odd bounds (a 4-bit code's byte is shared with its neighbour).
      const blocks = [...GOLD.blocks.A!,
        { tensor: 'model.layers.1.mlp.up_proj.weight', rows: [7, 12], cols: [33, 41] } as HfBlock];
      const work = path.join(mkdtempSync(path.join(os.tmpdir(), 'lobes-patch-')), 'work');
      copyModelFolder(model, work);
      const p = new WeightPatcher(model, work);
      const matrices = tinyMatrices(GOLD.block);
      const byTensor = new Map(matrices.map((m, k) => [`model.${m.name}.weight`, stored[k]!]));
      p.apply(blocks.flatMap((b) => blockEdits(byTensor.get(b.tensor)!, b)));
      checkZeroed(model, blocks, stored, work);
      p.restore();
      p.close();
      expect(sha(work)).toBe(sha(model));
    });
  });

describe('MatMulNBits with float zero points (GGUF Q4_1 conversions)', () => {
  it('zeroes whole quantisation blocks through their scales and refuses a block that cuts one', () => {
    const model = ensureGeneratedModel('tiny-llama-q4');
    const stored = storedMatrices(model, tinyMatrices(GOLD.block)).map((sm) => ({ ...sm,
      zeros: sm.zeros!.map(() => NaN) })
    );
    const work = path.join(mkdtempSync(path.join(os.tmpdir(), 'lobes-patch-')), 'work');
    copyModelFolder(model, work);
    const p = new WeightPatcher(model, work);
    // gate_proj of layer 0: d_in 64 = two quantisation blocks of 32; cols [32, 64) is one whole.
    const ok: HfBlock = { tensor: 'model.layers.0.mlp.gate_proj.weight', rows: [5, 40], cols: [32, 64] };
    p.apply(blockEdits(stored[0]!, ok));
    checkZeroed(model, [ok], stored, work);
    p.restore();
    p.close();
    expect(sha(work)).toBe(sha(model));
    expect(() => blockEdits(stored[0]!, { ...ok, cols: [16, 64] })).toThrow(
      /whole quantisation blocks of 32 .* cut one/,
    );
  });
});
