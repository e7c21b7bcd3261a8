/**
 * Weight location in an ONNX model folder: where the bytes of an initializer are (its
 * external-data range, a range of the graph file, or an inline copy) and how a projection's
 * weight is stored (dense float in either layout, or MatMulNBits blocks with their scales and
 * zero points). `lobes wanda` scores the matrices found here (src/wanda/weights.ts names which);
 * `lobes lens` reads the final norm's weight and lm_head through the same functions
 * (src/lens/head.ts). Only headers and graph metadata are read here, never the weight bytes.
 */
import { LobesError } from '../util/errors.js';
import { DataType, type LoadedModel, type TensorProto } from '../onnx/index.js';
import type { ProjectionRef } from './types.js';

export type DenseDtype = 'F32' | 'F16' | 'BF16';

/** Bytes held in a file range, or in memory (inline ONNX initializers). */
export type ByteRange = { file: string; offset: number; byteLength: number } | { bytes: Uint8Array };

export interface DenseWeight {
  kind: 'dense';
  /** Tensor/initializer name (for messages). */
  tensor: string;
  dtype: DenseDtype;
  /** 'out_in': [d_out, d_in] row-major (HF, Gemm transB=1); 'in_out': [d_in, d_out] (ONNX MatMul). */
  layout: 'out_in' | 'in_out';
  data: ByteRange;
}

export interface NBitsWeight {
  kind: 'nbits';
  tensor: string;
  /** B: uint8 [N = d_out, nBlocks, blobSize], blobSize = blockSize * bits / 8. */
  data: ByteRange;
  /** scales: [N * nBlocks] (or [N, nBlocks]) in F32 or F16. */
  scales: { tensor: string; dtype: 'F32' | 'F16'; data: ByteRange };
  /** zero points: packed uint8 ([N, ceil(nBlocks * bits / 8)]) or unpacked float [N * nBlocks]. Absent: 2^(bits-1). */
  zeroPoints?: { tensor: string; dtype: 'U8' | 'F32' | 'F16'; data: ByteRange };
  bits: number;
  blockSize: number;
}

/** The ONNX-located weights (GGUF blocks are src/wanda/kernel.ts's GgmlWeight). */
export type OnnxWeightSource = DenseWeight | NBitsWeight;

const ONNX_FLOAT: Record<number, DenseDtype> = { 1: 'F32', 10: 'F16', 16: 'BF16' };

/** Where an initializer's bytes are: its external-data range, a range of the graph file, or a copy. */
export function initializerRange(m: LoadedModel, name: string): ByteRange {
  const ext = m.external.get(name);
  if (ext) return { file: ext.path, offset: ext.offset, byteLength: ext.length };
  const t = m.initializers.get(name);
  if (!t) throw new LobesError(`initializer ${JSON.stringify(name)} not found`, { file: m.file });
  const raw = t.rawData;
  if (raw && raw.buffer === m.bytes.buffer) {
    const offset = raw.byteOffset - m.bytes.byteOffset;
    if (offset >= 0 && offset + raw.byteLength <= m.bytes.byteLength)
      return { file: m.file, offset, byteLength: raw.byteLength };
  }
  if (raw) return { bytes: raw.slice() };
  if (t.floatData)
    return {
      bytes: new Uint8Array(
        t.floatData.buffer.slice(t.floatData.byteOffset, t.floatData.byteOffset + t.floatData.byteLength),
      ),
    };
  if (t.int32Data && (t.dataType === DataType.FLOAT16 || t.dataType === DataType.BFLOAT16)) {
    const u = new Uint16Array(t.int32Data.length);
    t.int32Data.forEach((v, i) => (u[i] = Number(v) & 0xffff));
    return { bytes: new Uint8Array(u.buffer) };
  }
  if (t.int32Data && t.dataType === DataType.UINT8)
    return { bytes: Uint8Array.from(t.int32Data, (v) => Number(v) & 0xff) };
  throw new LobesError(`initializer ${JSON.stringify(name)} has no data this reader understands`, { file: m.file });
}

export function initializer(m: LoadedModel, name: string, what: string): TensorProto {
  const t = m.initializers.get(name);
  if (!t)
    throw new LobesError(`${what} initializer ${JSON.stringify(name)} not found`, { file: m.file,
      hint: 'the graph does not hold this weight as an initializer' });
  return t;
}

/** Weight source of one ProjectionRef. */
export function onnxWeightSource(m: LoadedModel, p: ProjectionRef): OnnxWeightSource {
  const where = `initializer ${JSON.stringify(p.weight)}`;
  const t = initializer(m, p.weight, p.proj);
  if (p.layout === 'nbits') {
    if (t.dataType !== DataType.UINT8)
      throw new LobesError(`MatMulNBits weight has type ${t.dataType}, expected uint8`, { file: m.file, where });
    if (!p.scales) throw new LobesError('MatMulNBits weight without scales', { file: m.file, where });
    const st = initializer(m, p.scales, 'scales');
    const sdt = st.dataType === DataType.FLOAT ? 'F32' : st.dataType === DataType.FLOAT16 ? 'F16' : null;
    if (!sdt)
      throw new LobesError(`MatMulNBits scales of type ${st.dataType} are not supported (float32 or float16)`, {
        file: m.file,
        where: p.scales,
      });
    let zeroPoints: { tensor: string; dtype: 'U8' | 'F32' | 'F16'; data: ByteRange } | undefined;
    if (p.zeroPoints) {
      const zt = initializer(m, p.zeroPoints, 'zero points');
      const zdt = zt.dataType === DataType.UINT8
        ? 'U8'
        : zt.dataType === DataType.FLOAT
        ? 'F32'
        : zt.dataType === DataType.FLOAT16
        ? 'F16'
        : null;
      if (!zdt)
        throw new LobesError(`MatMulNBits zero points of type ${zt.dataType} are not supported`, { file: m.file,
          where: p.zeroPoints });
      zeroPoints = { tensor: p.zeroPoints, dtype: zdt, data: initializerRange(m, p.zeroPoints) };
    }
    return {
      kind: 'nbits',
      tensor: p.weight,
      data: initializerRange(m, p.weight),
      scales: { tensor: p.scales, dtype: sdt, data: initializerRange(m, p.scales) },
      zeroPoints,
      bits: p.bits ?? 4,
      blockSize: p.blockSize ?? 32,
    };
  }
  const dtype = ONNX_FLOAT[t.dataType ?? 0];
  if (!dtype)
    throw new LobesError(
      `weight of ONNX type ${t.dataType} is not supported (float32, float16, bfloat16, or MatMulNBits)`,
      { file: m.file, where },
    );
  const dims = t.dims.map(Number);
  const expect = p.layout === 'in_out' ? [p.dIn, p.dOut] : [p.dOut, p.dIn];
  if (dims.length !== 2 || dims[0] !== expect[0] || dims[1] !== expect[1]) {
    throw new LobesError(
      `initializer shape ${
        JSON.stringify(dims)
      } does not match the ${p.layout} layout of [d_out=${p.dOut}, d_in=${p.dIn}]`,
      { file: m.file, where },
    );
  }
  return { kind: 'dense', tensor: p.weight, dtype, layout: p.layout, data: initializerRange(m, p.weight) };
}
