/**
 * bf16 weight storage of a BF16 Hugging Face checkpoint: every matrix kept as ONNX BFLOAT16 (its
 * bits copied, only transposed) behind a Cast to fp32.
 *  - --weights auto chooses it (and lobes-convert.json says why); the data file is about half
 *    the fp32 one;
 *  - every capture point and the logits are bit for bit those of the fp32-stored conversion
 *    (the same values after the Cast), in both layouts, for the committed BF16 checkpoints
 *    (llama: sharded, untied; gemma3: tied embeddings) and a BF16 phi3 (fused qkv / gate_up
 *    split by rows; explicit only, its longrope has no genai form) written here from the committed F32 one;
 *  - the committed transformers goldens hold for it (test/convert/hf-checkpoint.test.ts and
 *    hf-gemma.test.ts run --weights auto, which is now bf16 for llama and gemma3);
 *  - --weights bf16 is refused, in one line, wherever it would round: a checkpoint with a
 *    non-BF16 matrix, an fp16 graph, a GGUF; the writer refuses a source value that is not a
 *    bfloat16 even without the checkpoint's check.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertGguf, convertHfCheckpoint } from '../../src/convert/convert.js';
import { DataType, loadModel } from '../../src/onnx/index.js';
import { openCaptureEngine } from '../../src/runtime/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { readSafetensorsHeader, readTensorFloat32, writeSafetensors } from '../../src/formats/safetensors.js';
import { floatToBf16 } from '../../src/util/half.js';
import { InlineSink } from '../../src/convert/llama-onnx/sink.js';
import { streamFloat } from '../../src/convert/llama-onnx/weights.js';
import type { LlamaWeightSource } from '../../src/convert/llama-onnx/types.js';
import { CKPTS, GoldenSet, META, batchLogits } from './hf-families.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-hf-bf16-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A BF16 copy of a single-file F32 checkpoint (every tensor rounded to bfloat16 once). */
function bf16Copy(src: string, out: string): string {
  mkdirSync(out);
  for (const f of readdirSync(src)) if (!f.endsWith('.safetensors')) copyFileSync(path.join(src, f), path.join(out, f));
  const h = readSafetensorsHeader(path.join(src, 'model.safetensors'));
  const tensors = [...h.tensors.entries()].map(([name, t]) => ({ name, dtype: 'BF16' as const, shape: [...t.shape],
    data: Uint16Array.from(readTensorFloat32(h, name), floatToBf16) })
  );
  writeSafetensors(path.join(out, 'model.safetensors'), tensors);
  return out;
}

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Every capture point and the logits of two converted folders, bit for bit. */
async function expectSameNumbers(a: string, b: string, ids: number[][], pad: number,
  side: 'left' | 'right'): Promise<number>
{
  const batch = padBatch(ids, pad, side);
  const outs: Map<string, Float32Array>[] = [];
  for (const dir of [a, b]) {
    const engine = await openCaptureEngine(dir, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
    try {
      outs.push(await engine.run(batch));
    } finally {
      await engine.close();
    }
  }
  const [x, y] = outs as [Map<string, Float32Array>, Map<string, Float32Array>];
  expect([...x.keys()].sort()).toEqual([...y.keys()].sort());
  expect(x.size).toBeGreaterThan(2);
  for (const [name, v] of x) expect(bits(y.get(name)!), name).toEqual(bits(v));
  const la = await batchLogits(a, ids, pad, side);
  const lb = await batchLogits(b, ids, pad, side);
  expect(bits(lb.logits)).toEqual(bits(la.logits));
  return x.size;
}

/**
 * 2-D float initializers of a converted graph by ONNX data type, and whether every bfloat16 one
 * reaches the computation only through a Cast (directly, or after the embedding Gather or the
 * tied lm_head's Transpose).
 */
function storageOf(dir: string): { matrices: Record<number, number>; allCast: boolean } {
  const g = loadModel(dir).model.graph!;
  const matrices: Record<number, number> = {};
  for (const t of g.initializer)
    if (t.dims.length === 2 && t.dataType !== DataType.INT64) matrices[t.dataType!] = (matrices[t.dataType!] ?? 0) + 1;
  const readers = (v: string) => g.node.filter((n) => n.input.includes(v));
  const casts = (v: string): boolean => {
    const r = readers(v);
    return r.length > 0 &&
      r.every((n) =>
        n.opType === 'Cast' ||
        ((n.opType === 'Gather' || n.opType === 'Transpose') && n.input[0] === v && casts(n.output[0]!))
      );
  };
  const allCast = g.initializer.filter((t) => t.dataType === DataType.BFLOAT16).every((t) => casts(t.name!));
  return { matrices, allCast };
}

const CASES = [
  { name: 'llama', src: () => path.join(CKPTS, 'llama'), set: () => META },
  { name: 'gemma3', src: () => path.join(CKPTS, 'gemma3'), set: () => new GoldenSet('goldens-gemma3').meta },
  { name: 'phi3', src: () => path.join(tmp, 'phi3-bf16'), set: () => new GoldenSet('goldens-phi3').meta },
] as const;

describe.each(CASES)('$name BF16 checkpoint', ({ name, src, set }) => {
  // phi3's committed checkpoint has longrope, which only the explicit layout expresses.
  for (const layout of name === 'phi3' ? (['explicit'] as const) : (['explicit', 'genai'] as const)) {
    it(`${layout}: auto stores bf16 (half the bytes), and every capture and the logits equal the fp32-stored conversion bit for bit`, async () => {
      if (name === 'phi3' && !readdirSync(tmp).includes('phi3-bf16')) bf16Copy(path.join(CKPTS, 'phi3'), src());
      const dir = src();
      const auto = await convertHfCheckpoint(dir, path.join(tmp, `${name}-${layout}-auto`), { layout });
      const f32 = await convertHfCheckpoint(dir, path.join(tmp, `${name}-${layout}-fp32`), { layout, weights: 'fp32' });
      expect(auto.options.weights).toBe('bf16');
      expect(auto.weightsReason).toMatch(/every matrix is BF16; bf16 storage keeps their bits exactly/);
      const rec = JSON.parse(readFileSync(path.join(auto.dir, 'lobes-convert.json'), 'utf8'));
      expect(rec.options).toMatchObject({ weights: 'bf16', weightsRequested: 'auto', dtype: 'fp32' });
      expect(rec.weightsReason).toBe(auto.weightsReason);
      // The matrices bf16, the norms (and biases) fp32 as before.
      expect(auto.storage.bf16).toBeGreaterThan(0);
      expect(auto.storage.bf16! + (auto.storage.fp32 ?? 0)).toBe(f32.storage.fp32);
      // Each matrix the fp32 graph streams from the checkpoint is bfloat16 here (the float32 ones left are tables the writer computes), read through a Cast.
      const st = storageOf(auto.dir);
      const fp = storageOf(f32.dir);
      expect(st.matrices[DataType.BFLOAT16]).toBeGreaterThan(0);
      expect(st.matrices[DataType.BFLOAT16]! + (st.matrices[DataType.FLOAT] ?? 0)).toBe(fp.matrices[DataType.FLOAT]);
      expect(fp.matrices[DataType.BFLOAT16]).toBeUndefined();
      expect(st.allCast).toBe(true);
      expect(auto.dataBytes).toBeLessThan(0.56 * f32.dataBytes);
      // explicit --weights bf16 is the same storage
      const named = await convertHfCheckpoint(dir, path.join(tmp, `${name}-${layout}-named`), { layout,
        weights: 'bf16' });
      expect(named.weightsReason).toBeNull();
      expect(
        readFileSync(path.join(named.dir, 'model.onnx.data')).equals(
          readFileSync(path.join(auto.dir, 'model.onnx.data')),
        ),
      ).toBe(true);
      const meta = set();
      const n = await expectSameNumbers(f32.dir, auto.dir, meta.ids, meta.pad, 'right');
      if (layout === 'explicit') await expectSameNumbers(f32.dir, auto.dir, meta.ids, meta.pad, 'left');
      console.log(
        `${name} ${layout}: ${n} capture points and the logits bit-identical; data ${auto.dataBytes} B bf16 vs ${f32.dataBytes} B fp32`,
      );
    });
  }
});

describe('--weights bf16 is refused where it would round, in one line', () => {
  it('a checkpoint with F32 matrices (mistral), naming how many', async () => {
    const out = path.join(tmp, 'mistral-bf16');
    await expect(convertHfCheckpoint(path.join(CKPTS, 'mistral'), out, { weights: 'bf16' })).rejects.toThrow(
      /^weights bf16 keeps BF16 weights bit for bit, but \d+ F32 of the matrices of .*mistral would be rounded/,
    );
    expect(readdirSync(tmp)).not.toContain('mistral-bf16');
    // auto keeps fp32 for it
    const r = await convertHfCheckpoint(path.join(CKPTS, 'mistral'), out, {});
    expect(r.options.weights).toBe('fp32');
  });

  it('an fp16 graph, and a GGUF', async () => {
    await expect(
      convertHfCheckpoint(path.join(CKPTS, 'llama'), path.join(tmp, 'x'), { weights: 'bf16', dtype: 'fp16' }),
    ).rejects.toThrow(/^weights bf16 needs dtype fp32/);
    await expect(convertGguf(path.join(CKPTS, 'tiny-qwen2.gguf'), path.join(tmp, 'y'), { weights: 'bf16' })).rejects
      .toThrow(/^weights bf16 is for a Hugging Face BF16 checkpoint/);
    // an fp16 graph of a BF16 checkpoint: auto rounds to fp16, as before
    const r = await convertHfCheckpoint(path.join(CKPTS, 'llama'), path.join(tmp, 'llama-fp16'), { dtype: 'fp16' });
    expect(r.options.weights).toBe('fp16');
  });
});

describe("the writer's bf16 stream", () => {
  /** A [rows, cols] source of float32 values, with or without the bit-pattern reader. */
  const source = (values: Float32Array, rows: number, cols: number, raw: boolean): LlamaWeightSource => ({
    shape: () => [rows, cols],
    rows: (_n, r0, r1) => values.slice(r0 * cols, r1 * cols),
    ...(raw
      ? {
        bf16RowsInto: (_n: string, r0: number, r1: number, out: Uint16Array) => {
          const u = bits(values);
          for (let i = r0 * cols; i < r1 * cols; i++) out[i - r0 * cols] = u[i]! >>> 16;
          return out.subarray(0, (r1 - r0) * cols);
        },
      }
      : {}),
  });

  it('copies the bits, transposed to [d_in, d_out], from bf16RowsInto or from float32 rows with zero low halves (chunked)', () => {
    const rows = 37;
    const cols = 70;
    const v = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 0.37) * 10 ** ((i % 7) - 3));
    for (let i = 0; i < v.length; i++) v[i] = new Float32Array(new Uint32Array([floatToBf16(v[i]!) << 16]).buffer)[0]!;
    const out: Uint16Array[] = [];
    for (const raw of [true, false]) {
      const sink = new InlineSink();
      const region = sink.reserve('w', 'bfloat16', [cols, rows]);
      // 1 KB chunks: several row chunks, each written as a column range of the transposed tensor
      streamFloat({ src: source(v, rows, cols, raw), sink, chunkBytes: 1024 }, region, ['w'], { transpose: true,
        dtype: 'bfloat16' });
      out.push(sink.initializers[0]!.data as Uint16Array);
    }
    const want = new Uint16Array(rows * cols);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) want[c * rows + r] = bits(v)[r * cols + c]! >>> 16;
    expect(out[0]).toEqual(want);
    expect(out[1]).toEqual(want);
  });

  it('refuses a float32 value that is not a bfloat16, naming the weight and the row', () => {
    const v = new Float32Array(4 * 8).fill(0.5);
    v[2 * 8 + 3] = 0.1;
    const sink = new InlineSink();
    const region = sink.reserve('w', 'bfloat16', [8, 4]);
    expect(() =>
      streamFloat({ src: source(v, 4, 8, false), sink, chunkBytes: 4096 }, region, ['w'], { transpose: true,
        dtype: 'bfloat16' })
    ).toThrow(/value 0\.1\d* \(row 2\) is not a bfloat16, so bf16 storage would round it/);
  });
});
