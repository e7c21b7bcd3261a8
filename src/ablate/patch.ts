/**
 * Zeroing blocks of the MLP weights on disk, in every layout lobes reads, without rebuilding
 * the graph: the bytes of a block in the model's weight file are set so that the weight the
 * session computes with is exactly 0.
 *
 *   dense float32 / float16 / bfloat16: the elements are set to +0 (all bytes 0);
 *     ONNX MatMul [d_in, d_out]: W[r, c] is element c·d_out + r; Gemm / HF [d_out, d_in]: r·d_in + c;
 *   MatMulNBits (B: uint8 [N = d_out, ceil(K / bs), bs·bits/8], K = d_in, codes packed low bits
 *     first): W[n, k] = (q[n, k] − zp[n, k / bs]) · scale[n, k / bs]. A quantisation block that
 *     the zeroed block covers whole gets scale 0 (every weight in it is then exactly 0); in a
 *     quantisation block covered in part, each covered code q[n, k] is set to the block's zero
 *     point (2^(bits−1) when the node has none), so the weight is exactly 0 whatever the scale
 *     and the codes outside (sharing the quantisation block or the byte) are untouched. A float
 *     zero point that is not an integer code (GGUF Q4_1 / Q5_1 conversions store one) allows
 *     only the first: such a block must cover whole quantisation blocks, else it is refused.
 *
 * A WeightPatcher works on a copy of the model folder: it zeroes blocks in place, and restores
 * every byte range it touched from the original folder's files.
 */
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, readSync, statSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, opt } from '../util/errors.js';
import { analyseModel } from '../runtime/engine.js';
import { onnxMatrices } from '../wanda/weights.js';
import { DTYPE_SIZE, nbitsParams, type MatrixRef } from '../wanda/kernel.js';
import type { WandaMatrix } from '../wanda/types.js';
import type { HfBlock } from './regions.js';

/** One byte range of a weight file to rewrite: `apply` edits the range's current bytes in place. */
export interface Edit {
  /** Absolute path of the file (in the original model folder). */
  file: string;
  offset: number;
  length: number;
  apply(bytes: Uint8Array): void;
}

/** A matrix's weight as it is stored, with the zero points a quantized one needs. */
export interface StoredMatrix {
  ref: MatrixRef;
  /** The ONNX initializer holding the weight. */
  initializer: string;
  /** MatMulNBits: zero point per (row, quantisation block); NaN where it is not an integer code. */
  zeros?: Float32Array;
}

/** Locate the wanda matrices in an ONNX model folder (the projections the graph names). */
export function storedMatrices(modelDir: string, matrices: WandaMatrix[]): StoredMatrix[] {
  const a = analyseModel(modelDir);
  const refs = onnxMatrices(a.loaded, a.info.points,
    matrices.map((m) => ({ name: m.name, layer: m.layer, proj: m.proj, input: m.input, dIn: m.dIn })));
  return refs.map((ref, k) => {
    const m = matrices[k]!;
    if (ref.dOut !== m.dOut || ref.dIn !== m.dIn)
      throw new LobesError(
        `${m.name} is [${ref.dOut}, ${ref.dIn}] in the model but [${m.dOut}, ${m.dIn}] in the wanda results`,
        { file: a.loaded.file, hint: "the model is not the run's model" },
      );
    const s = ref.source;
    if (s.kind === 'ggml') throw new LobesError('GGML weights cannot be zeroed in place', { file: a.loaded.file });
    if ('bytes' in s.data)
      throw new LobesError(
        `initializer ${JSON.stringify(s.tensor)} is not stored as raw bytes in a file, which ablation edits`,
        { file: a.loaded.file, hint: 'convert the model with external weight data (lobes convert)' },
      );
    if (s.kind === 'dense') return { ref, initializer: s.tensor };
    const p = nbitsParams(ref, s);
    if ('bytes' in s.scales.data)
      throw new LobesError(
        `scales ${JSON.stringify(s.scales.tensor)} are not stored as raw bytes in a file, which ablation edits`,
        { file: a.loaded.file },
      );
    const max = (1 << s.bits) - 1;
    const zeros = p.zeros.map((z) => (Number.isInteger(z) && z >= 0 && z <= max ? z : NaN));
    return { ref, initializer: s.tensor, zeros };
  });
}

/** The byte edits that make W[rows, cols] exactly zero in a stored matrix. */
export function blockEdits(sm: StoredMatrix, b: HfBlock): Edit[] {
  const { ref } = sm;
  const s = ref.source;
  const [r0, r1] = b.rows;
  const [c0, c1] = b.cols;
  if (!(0 <= r0 && r0 < r1 && r1 <= ref.dOut && 0 <= c0 && c0 < c1 && c1 <= ref.dIn))
    throw new LobesError(
      `block rows [${r0}, ${r1}) cols [${c0}, ${c1}) is outside ${b.tensor} [${ref.dOut}, ${ref.dIn}]`,
    );
  if (s.kind === 'ggml' || 'bytes' in s.data) throw new LobesError(`weight ${s.tensor} cannot be edited in place`);
  const { file, offset } = s.data;
  const out: Edit[] = [];
  const zero = (bytes: Uint8Array) => void bytes.fill(0);
  if (s.kind === 'dense') {
    const es = DTYPE_SIZE[s.dtype];
    if (s.layout === 'out_in') {
      for (let r = r0; r < r1; r++)
        out.push({ file, offset: offset + (r * ref.dIn + c0) * es, length: (c1 - c0) * es, apply: zero });
    } else for (let c = c0; c < c1; c++)
        out.push({ file, offset: offset + (c * ref.dOut + r0) * es, length: (r1 - r0) * es, apply: zero });
    return out;
  }
  // MatMulNBits: row n's codes are contiguous, code k at bit k·bits of the row (blobSize = bs·bits/8);
  // its scales are contiguous too ([N, nBlocks]).
  const bits = s.bits;
  const bs = s.blockSize;
  const nBlocks = Math.ceil(ref.dIn / bs);
  const rowBytes = (nBlocks * bs * bits) / 8;
  const mask = (1 << bits) - 1;
  const ss = s.scales.dtype === 'F32' ? 4 : 2;
  const sdata = s.scales.data as { file: string; offset: number };
  // The quantisation blocks the cols touch: covered whole ([w0, w1), contiguous) or in part.
  let w0 = -1;
  let w1 = -1;
  const partial: [number, number][] = [];
  for (let q = Math.floor(c0 / bs); q <= Math.floor((c1 - 1) / bs); q++) {
    const k0 = Math.max(c0, q * bs);
    const k1 = Math.min(c1, (q + 1) * bs);
    if (k0 === q * bs && k1 === Math.min((q + 1) * bs, ref.dIn)) {
      if (w0 < 0) w0 = q;
      w1 = q + 1;
    } else partial.push([k0, k1]);
  }
  for (let n = r0; n < r1; n++) {
    if (w1 > w0)
      out.push({ file: sdata.file, offset: sdata.offset + (n * nBlocks + w0) * ss, length: (w1 - w0) * ss,
        apply: zero });
    for (const [k0, k1] of partial) {
      const zp = sm.zeros![n * nBlocks + Math.floor(k0 / bs)]!;
      if (Number.isNaN(zp))
        throw new LobesError(
          `${b.tensor} is stored as MatMulNBits with float zero points, so only whole quantisation blocks of ${bs} input features can be zeroed exactly, and the block cols [${c0}, ${c1}) cut one`,
          { where: `initializer ${JSON.stringify(s.tensor)}`,
            hint: `use wanda blocks whose column size is a multiple of ${bs}, or a model converted with ${
              opt('weights', 'fp32')
            } or fp16` },
        );
      const first = Math.floor((k0 * bits) / 8);
      const last = Math.floor(((k1 - 1) * bits) / 8);
      out.push({
        file,
        offset: offset + n * rowBytes + first,
        length: last - first + 1,
        apply: (bytes) => {
          for (let k = k0; k < k1; k++) {
            const bit = k * bits;
            const i = (bit >> 3) - first;
            const sh = bit & 7;
            bytes[i] = (bytes[i]! & ~(mask << sh)) | (zp << sh);
          }
        },
      });
    }
  }
  return out;
}

/** Copy the regular files of a model folder (graph, weight data, config, tokenizer) into `workDir`. */
export function copyModelFolder(modelDir: string, workDir: string): void {
  mkdirSync(workDir, { recursive: true });
  for (const f of readdirSync(modelDir)) {
    const src = path.join(modelDir, f);
    if (statSync(src).isFile()) copyFileSync(src, path.join(workDir, f));
  }
}

/** Zeroes blocks in a working copy of a model folder and restores them from the original. */
export class WeightPatcher {
  private readonly fds = new Map<string, { orig: number; work: number }>();
  private touched: { file: string; offset: number; length: number }[] = [];

  constructor(
    readonly modelDir: string,
    readonly workDir: string,
  ) {}

  private fd(file: string): { orig: number; work: number } {
    let f = this.fds.get(file);
    if (!f) {
      const rel = path.relative(this.modelDir, file);
      if (rel.startsWith('..') || path.isAbsolute(rel))
        throw new LobesError('weight file is outside the model folder, so its working copy cannot be made', { file });
      f = { orig: openSync(file, 'r'), work: openSync(path.join(this.workDir, rel), 'r+') };
      this.fds.set(file, f);
    }
    return f;
  }

  /** Apply edits to the working copy (each range read, edited, written back). */
  apply(edits: readonly Edit[]): void {
    for (const e of edits) {
      const { work } = this.fd(e.file);
      const buf = new Uint8Array(e.length);
      if (readSync(work, buf, 0, e.length, e.offset) !== e.length)
        throw new LobesError(`weight file is shorter than the range ${e.offset}+${e.length}`, { file: e.file });
      e.apply(buf);
      writeSync(work, buf, 0, e.length, e.offset);
      this.touched.push({ file: e.file, offset: e.offset, length: e.length });
    }
  }

  /** Copy every touched range back from the original files. */
  restore(): void {
    for (const t of this.touched) {
      const { orig, work } = this.fd(t.file);
      const buf = new Uint8Array(t.length);
      readSync(orig, buf, 0, t.length, t.offset);
      writeSync(work, buf, 0, t.length, t.offset);
    }
    this.touched = [];
  }

  close(): void {
    for (const f of this.fds.values()) {
      closeSync(f.orig);
      closeSync(f.work);
    }
    this.fds.clear();
  }
}
